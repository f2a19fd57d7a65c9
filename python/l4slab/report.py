"""Self-contained HTML reports (`report.html`) for a run and for a sweep: summary tables plus
the figures embedded as base64 PNG, so the file can be mailed or archived on its own."""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["run_report", "sweep_report", "merged_sweep_report"]

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2em auto;max-width:1100px;
color:#222;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3}td.l,th.l{text-align:left}
img{max-width:100%;margin:.5em 0;border:1px solid #eee}
pre{background:#f7f7f7;padding:.8em;overflow:auto;font-size:.85em}
th code{font-weight:normal;color:#555}
.fail{color:#b00}.muted{color:#777}
"""

#: A table wider than the page scrolls sideways in its own box (`scroll_box`) instead of
#: running past the page's max-width; run, sweep and suite reports share it.
SCROLL_CSS = ".wide{overflow-x:auto;max-width:100%}\n"


def scroll_box(table_html: str) -> str:
    """`table_html` inside the horizontally scrolling box of SCROLL_CSS."""
    return f'<div class="wide">{table_html}</div>'

_RUN_FIGURE_ORDER = ["throughput", "sojourn", "probability", "sojourn_cdf", "cwnd",
                     "frame_latency_cdf", "slowdown"]


def _esc(x: Any) -> str:
    return html.escape(str(x))


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if not np.isfinite(v):
            return str(v)
        return f"{v:.4g}"
    return str(v)


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]], left: int = 1) -> str:
    """An HTML table in a horizontally scrolling box (a wide sweep never overflows the page);
    a dotted metric key in the header shows its plain label with the key beneath it."""
    out = ["<table><tr>"]
    out += [f'<th class="{"l" if i < left else ""}">{_header_cell(h)}</th>'
            for i, h in enumerate(header)]
    out.append("</tr>")
    for r in rows:
        out.append("<tr>" + "".join(f'<td class="{"l" if i < left else ""}">{_esc(_fmt(v))}</td>'
                                    for i, v in enumerate(r)) + "</tr>")
    out.append("</table>")
    return scroll_box("".join(out))


def _header_cell(h: str) -> str:
    from l4slab.sweepgrid import SWEEP_METRICS

    labels = dict(SWEEP_METRICS)
    key, _, rest = h.partition(" (")
    if key in labels:
        suffix = f" ({rest}" if rest else ""
        return f"{_esc(labels[key] + suffix)}<br><code>{_esc(key)}</code>"
    return _esc(h)


def _img(path: Path) -> str:
    b64 = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{_esc(path.stem)}" src="data:image/png;base64,{b64}">'


def _page(title: str, body: list[str]) -> str:
    from l4slab import __version__

    return ("<!DOCTYPE html><html><head><meta charset=\"utf-8\">"
            f"<title>{_esc(title)}</title><style>{_CSS}{SCROLL_CSS}</style></head><body>"
            f"<h1>{_esc(title)}</h1>" + "\n".join(body) +
            f'<p class="muted">l4slab {__version__}</p></body></html>\n')


def _window_labels(summary: dict[str, Any]) -> tuple[str, str]:
    """("after warm-up, 5–30 s", "whole run, 0–30 s"): the two windows summary.json counts in
    (flows, queues, link: after warm-up; packets: the whole run)."""
    w = summary.get("windows") or {}
    a = w.get("after_warmup_s") or [summary.get("warmup_s"), summary.get("duration_s")]
    b = w.get("whole_run_s") or [0.0, summary.get("duration_s")]

    def span(x: list[Any]) -> str:
        return "–".join(f"{v:g}" for v in x if isinstance(v, (int, float))) + " s"

    return f"after warm-up, {span(a)}", f"whole run, {span(b)}"


def buffer_label(summary: dict[str, Any]) -> str | None:
    """ "2bdp = 417 pkts (BDP 312500 B at 100 Mb/s × 25 ms, 1500 B packets)" when the AQM limit
    was given in BDP units (summary.json `buffer`), else None."""
    b = summary.get("buffer")
    if not isinstance(b, dict):
        return None
    return (f"{b.get('given')} = {b.get('value')} {b.get('unit')} "
            f"(BDP {b.get('bdp_bytes'):.0f} B at {b.get('rate_mbps'):g} Mb/s × "
            f"{b.get('rtt_ms'):g} ms of flows[{b.get('rtt_flow')}], "
            f"{b.get('packet_bytes')} B packets)")


def summary_tables(summary: dict[str, Any]) -> list[str]:
    """HTML tables of summary.json: link, flows, queues; every counter says its window."""
    body = []
    after, whole = _window_labels(summary)
    link = summary.get("link") or {}
    top = [("seed", summary.get("seed")), ("duration [s]", summary.get("duration_s")),
           ("warm-up [s]", summary.get("warmup_s")),
           (f"capacity [Mb/s] ({after})", link.get("capacity_mbps")),
           (f"utilisation ({after})", link.get("utilisation")),
           (f"unused txops ({after})", link.get("unused_txops")),
           (f"Jain's index ({after})", summary.get("jain"))]
    buf = buffer_label(summary)
    if buf:
        top.append(("buffer (AQM limit)", buf))
    pk = summary.get("packets")
    if isinstance(pk, dict):  # bottleneck accounting over the whole run (incl. warm-up)
        top += [(f"packets {k.replace('_', ' ')} ({whole})", v) for k, v in pk.items()
                if isinstance(v, (int, float))]
    body.append(_table(["", "value"], [(k, v) for k, v in top if v is not None]))
    flows = summary.get("flows") or []
    if flows:
        keys = [k for k in ("id", "cc", "class", "tput_mbps", "srtt_ms", "ce_marks", "drops",
                            "retransmits") if any(k in f for f in flows)]
        nested = {k for f in flows for k, v in f.items() if isinstance(v, (dict, list))}
        extra = sorted({k for f in flows for k in f if k not in keys and k not in nested})
        if any(isinstance(f.get("host"), dict) for f in flows):
            extra.append("host")
        body.append(f"<h2>Flows <small>({_esc(after)})</small></h2>")
        body.append(_table(keys + extra, ([_host(f.get(k)) if k == "host" else f.get(k)
                                           for k in keys + extra] for f in flows), left=3))
    queues = summary.get("queues") or []
    if queues:
        body.append(f"<h2>Queues <small>({_esc(after)})</small></h2>")
        hdr = ["queue", "sojourn mean [ms]", "p50", "p95", "p99", "marks", "drops", "packets"]
        rows = []
        for q in queues:
            s = q.get("sojourn_ms") or {}
            rows.append([q.get("name"), s.get("mean"), s.get("p50"), s.get("p95"), s.get("p99"),
                         q.get("marks"), q.get("drops"), q.get("packets")])
        body.append(_table(hdr, rows))
    body += _app_tables(summary, after)
    return body


def _host(h: Any) -> str | None:
    """A flow's host block as words ("qdisc fq, GRO off, TSO off"), not a Python dict."""
    if not isinstance(h, dict):
        return h
    on = {True: "on", False: "off"}
    return ", ".join(f"{k.upper() if k in ('gro', 'tso', 'gso') else k} "
                     f"{on.get(v, v) if isinstance(v, bool) else v}" for k, v in h.items())


def _flat(d: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Dotted key → scalar rows of a nested block (lists of numbers left out: histograms)."""
    if not isinstance(d, dict):
        return [(prefix, d)]
    out = []
    for k, v in d.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, dict):
            out += _flat(v, key)
        elif not isinstance(v, list):
            out.append((key, v))
    return out


def _app_tables(summary: dict[str, Any], after: str) -> list[str]:
    """Video frames, responsiveness (RPM), workloads and slowdown, the Wi-Fi block and the
    hops of a path, each where the run has it."""
    body = []
    flows = summary.get("flows") or []
    video = [f for f in flows if isinstance(f.get("frames"), dict)]
    if video:
        body.append(f"<h2>Video frames <small>({_esc(after)})</small></h2>")
        hdr = ["flow", "cc", "frames", "delivered fps", "bitrate [Mb/s]", "latency p50 [ms]",
               "p95", "max", "deadline [ms]", "deadline misses", "incomplete"]
        rows = []
        for f in video:
            fr = f["frames"]
            lat = fr.get("latency_ms") or {}
            rows.append([f.get("id"), f.get("cc"), fr.get("frames"), fr.get("delivered_fps"),
                         fr.get("bitrate_mbps"), lat.get("p50"), lat.get("p95"), lat.get("max"),
                         fr.get("deadline_ms"), fr.get("deadline_misses"),
                         fr.get("incomplete")])
        body.append(_table(hdr, rows, left=2))
    probes = summary.get("probes") or []
    if probes:
        body.append(f"<h2>Responsiveness (RPM) <small>({_esc(after)})</small></h2>")
        hdr = ["probe", "class", "exchanges", "RPM", "RTT p50 [ms]", "p90", "p99"]
        body.append(_table(hdr, ([p.get("id"), p.get("class"), p.get("exchanges"), p.get("rpm"),
                                  *((p.get("rtt_ms") or {}).get(k) for k in ("p50", "p90", "p99"))]
                                 for p in probes), left=2))
    for i, w in enumerate(summary.get("workloads") or []):
        body.append(f"<h2>Workload {i}: flow completion and slowdown "
                    f"<small>({_esc(after)})</small></h2>")
        body.append(_table(["", "value"], [(k, v) for k, v in _flat(w) if v is not None]))
        buckets = w.get("buckets") or []
        if buckets:
            hdr = ["size bucket", "flows", "completed", "FCT p50 [ms]", "FCT p99 [ms]",
                   "slowdown p50", "slowdown p99"]
            body.append(_table(hdr, ([b.get("bucket"), b.get("flows"), b.get("completed"),
                                      (b.get("fct_ms") or {}).get("p50"),
                                      (b.get("fct_ms") or {}).get("p99"),
                                      (b.get("slowdown") or {}).get("p50"),
                                      (b.get("slowdown") or {}).get("p99")] for b in buckets)))
    wifi = summary.get("wifi")
    if isinstance(wifi, dict):
        body.append(f"<h2>Wi-Fi <small>({_esc(after)})</small></h2>")
        body.append(_table(["", "value"], [(k, v) for k, v in _flat(wifi) if v is not None]))
    hops = summary.get("hops") or []
    if hops:
        body.append(f"<h2>Hops <small>({_esc(after)})</small></h2>")
        hdr = ["hop", "name", "AQM", "capacity [Mb/s]", "delay [ms]", "utilisation", "marks",
               "drops", "packets", "queues"]
        body.append(_table(hdr, ([h.get("index"), h.get("name"), h.get("aqm"),
                                  h.get("capacity_mbps"), h.get("delay_ms"),
                                  h.get("utilisation"), h.get("marks"), h.get("drops"),
                                  h.get("packets"), ", ".join(h.get("queues") or [])]
                                 for h in hops), left=3))
    return body


def run_report(run: Any, out_dir: str | Path, embed_figures: bool = True) -> Path:
    """Write out_dir/report.html for one run (figures taken from out_dir/*.png if present)."""
    out = Path(out_dir)
    body = summary_tables(run.summary)
    if embed_figures:
        figs = [out / f"{n}.png" for n in _RUN_FIGURE_ORDER if (out / f"{n}.png").exists()]
        if figs:
            body.append("<h2>Figures</h2>")
            body += [_img(p) for p in figs]
    if run.scenario:
        from l4slab.scenario import dumps_toml

        body.append("<h2>Scenario</h2>")
        body.append(f"<pre>{_esc(dumps_toml(run.scenario))}</pre>")
    title = f"l4slab run — {out.resolve().name}"
    path = out / "report.html"
    path.write_text(_page(title, body))
    return path


def _grid_table(index: pd.DataFrame, params: list[str]
                ) -> tuple[list[str], list[list[Any]], list[tuple[Any, ...]]]:
    """Per grid point: runs and mean ± 95% CI of each metric; grid points whose runs are
    identical (copies) are returned too, so the page warns instead of showing ± 0."""
    from l4slab.sweepgrid import SWEEP_METRICS, group_table

    return group_table(index, params, [(m, f"{m} (mean ± 95% CI)") for m, _ in SWEEP_METRICS])


def _copies_warning(copies: list[tuple[Any, ...]], params: list[str]) -> str:
    """A warning paragraph naming the grid points whose replications are identical."""
    if not copies:
        return ""
    names = "; ".join(", ".join(f"{p}={v}" for p, v in zip(params, c, strict=False)) or "all runs"
                      for c in copies)
    return (f'<p class="fail">Warning: the replications of {len(copies)} grid point(s) are '
            f"identical runs (zero spread in every metric), so they are one run repeated, not "
            f"independent samples, and no confidence interval is shown: {_esc(names)}. Vary "
            "something per seed (flows' start_jitter, link loss or jitter).</p>")


def sweep_report(data: Any, out_dir: str | Path) -> Path:
    """Write out_dir/report.html for a sweep: plan, per-grid-point means with 95% CIs,
    failures, figures, and the run index."""
    out = Path(out_dir)
    idx: pd.DataFrame = data.index
    meta = data.meta
    body = []
    n_ok = int((idx["status"] == "ok").sum()) if "status" in idx else len(idx)
    n_fail = int((idx["status"] == "failed").sum()) if "status" in idx else 0
    body.append(_table(["", "value"], [
        ("base scenario", meta.get("base")), ("replications", meta.get("replications")),
        ("base seed", meta.get("seed")), ("seed derivation", meta.get("seed_derivation")),
        ("runs", len(idx)), ("ok", n_ok), ("failed", n_fail),
        ("grid", json.dumps(meta.get("grid", {}), default=str)),
        ("fixed overrides", json.dumps(meta.get("set", {}), default=str))]))
    if n_ok:
        header, rows, copies = _grid_table(idx, data.params)
        body.append("<h2>Results per grid point</h2>")
        body.append(_copies_warning(copies, data.params))
        body.append(_table(header, rows, left=len(data.params)))
    if n_fail:
        body.append('<h2 class="fail">Failed runs</h2>')
        failed = idx[idx["status"] == "failed"]
        body.append(_table(["run", "error"], failed[["run", "error"]].itertuples(index=False),
                           left=2))
    figs = sorted(out.glob("sweep_*.png"))
    if figs:
        body.append("<h2>Figures</h2>")
        body += [_img(p) for p in figs]
    body.append("<h2>Runs</h2>")
    cols = ["run"] + list(data.params) + ["seed", "status"]
    cols += [m for m in ("class.L4S.tput_mbps", "class.Classic.tput_mbps",
                         "queues.L.sojourn_ms.p99", "queues.C.sojourn_ms.p99",
                         "queues.single.sojourn_ms.p99", "link.utilisation", "jain") if m in idx]
    body.append(_table(cols, idx[cols].itertuples(index=False), left=1 + len(data.params)))
    path = out / "report.html"
    path.write_text(_page(f"l4slab sweep — {out.resolve().name}", body))
    return path


def merged_sweep_report(dirs: list[Path], out_file: str | Path) -> Path:
    """One report.html over several sweep directories: the merged index grouped by source
    directory and grid point (mean ± 95% CI), with the same warnings as a sweep's report."""
    from l4slab.sweepgrid import merged_index

    idx, params = merged_index(dirs)
    header, rows, copies = _grid_table(idx, params)
    body = [_table(["", "value"], [("sweeps", ", ".join(map(str, dirs))), ("runs", len(idx)),
                                   ("ok", int((idx["status"] == "ok").sum()))]),
            "<h2>Results per grid point</h2>", _copies_warning(copies, params),
            _table(header, rows, left=len(params))]
    path = Path(out_file)
    path.write_text(_page("l4slab sweeps — " + ", ".join(d.resolve().name for d in dirs), body))
    return path
