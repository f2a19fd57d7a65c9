"""report.md and report.html of a suite: provenance (version, commit, kernel profile, seeds, run
count, wall time), every result table and every figure. The HTML embeds the figures (base64
PNG) so it stands alone; the Markdown links to figures/."""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from l4slab.report import SCROLL_CSS, scroll_box
from l4slab.suites.types import Analysis, Suite, Table

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0;font-size:.85em}
th,td{border:1px solid #ccc;padding:2px 7px;text-align:right}th{background:#f3f3f3}
td.l,th.l{text-align:left}img{max-width:100%;margin:.5em 0;border:1px solid #eee}
.muted{color:#777}
"""

MAX_ROWS = 400  # the CSV holds everything; the report shows the first rows of huge tables


def fmt(v: Any) -> str:
    """A table cell: "–" for missing; floats to 4 significant digits (3 when very large or
    small, one decimal from 100)."""
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "–"
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
            return f"{v:.3g}"
        return f"{v:.4g}" if abs(v) < 100 else f"{v:.1f}"
    return str(v)


def _mean_ci_cell(mean: Any, lo: Any, hi: Any, n: Any) -> str:
    """"mean [lo, hi]"; a single run says "n = 1" and runs that all gave the same value say
    "identical runs" instead of an interval of zero width."""
    if mean is None or (isinstance(mean, float) and np.isnan(mean)):
        return "–"
    if n is not None and not pd.isna(n) and int(n) == 1:
        return f"{fmt(mean)} (n = 1)"
    if lo == hi:
        return f"{fmt(mean)} (identical runs)"
    return f"{fmt(mean)} [{fmt(lo)}, {fmt(hi)}]"


def display_frame(t: Table) -> pd.DataFrame:
    """What the report shows: `t.display`, else keys + "mean [lo, hi]" per metric + n."""
    if t.display is not None:
        return t.display
    df = t.df
    out = df[t.keys].copy()
    n = df["n"] if "n" in df else pd.Series([None] * len(df), index=df.index)
    for m in t.values:
        if f"{m}_lo" in df:
            out[m] = [_mean_ci_cell(a, b, c, k)
                      for a, b, c, k in zip(df[m], df[f"{m}_lo"], df[f"{m}_hi"], n, strict=True)]
        else:
            out[m] = df[m].map(fmt)
    if "n" in df and "n" not in out:
        out["n"] = df["n"]
    return out


def _md_table(df: pd.DataFrame) -> str:
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, r in df.head(MAX_ROWS).iterrows():
        lines.append("| " + " | ".join(fmt(v).replace("|", "\\|") for v in r) + " |")
    if len(df) > MAX_ROWS:
        lines.append(f"\n({len(df) - MAX_ROWS} more rows in the CSV)")
    return "\n".join(lines)


def _html_table(df: pd.DataFrame, nkeys: int) -> str:
    e = html.escape
    out = ["<table><tr>"]
    out += [f'<th class="{"l" if i < nkeys else ""}">{e(str(c))}</th>'
            for i, c in enumerate(df.columns)]
    out.append("</tr>")
    for _, r in df.head(MAX_ROWS).iterrows():
        out.append("<tr>" + "".join(f'<td class="{"l" if i < nkeys else ""}">{e(fmt(v))}</td>'
                                    for i, v in enumerate(r)) + "</tr>")
    out.append("</table>")
    box = scroll_box("".join(out))
    if len(df) > MAX_ROWS:
        box += f'<p class="muted">{len(df) - MAX_ROWS} more rows in the CSV</p>'
    return box


def provenance_lines(prov: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, text) rows of the report's provenance block: version, commit, profile, seeds,
    runs, time."""
    seeds = prov.get("seeds") or []
    seed_txt = (", ".join(map(str, seeds)) if len(seeds) <= 6
                else f"{len(seeds)} seeds: {', '.join(map(str, seeds[:3]))}, … "
                     "(splitmix64(seed, replication) >> 1, the sweep's derivation)")
    return [("l4slab version", f"{prov['l4slab_version']} (runs: "
                                f"{', '.join(prov.get('run_versions') or ['–'])})"),
            ("git commit", str(prov.get("git_commit") or "not a git checkout")),
            ("kernel profile (aqm.profile)", str(prov.get("kernel_profile"))),
            ("size", str(prov.get("size"))),
            ("engine", "emulator (real time, l4slab flow senders)"
             if prov.get("engine") == "emulator" else "simulator"),
            ("runs", f"{prov['runs_finished']} finished of {prov['runs_planned']} planned "
                     f"({prov['runs_ran_now']} ran now, {prov['runs_resumed']} resumed, "
                     f"{prov['runs_failed']} failed)"),
            ("what ran", ran_text(prov)),
            ("seeds", seed_txt),
            ("wall time", f"{prov['wall_time_s']:.1f} s (this invocation)"),
            ("finished", f"{prov['finished_at_utc']} UTC")]


def ran_text(prov: dict[str, Any]) -> str:
    """"runs of 8 s (2 s warm-up), 1 seed per grid point", from the runs' own summaries."""
    ran = prov.get("ran") or []
    if not ran:
        return "no finished run"
    return "; ".join(f"runs of {r['duration_s']:g} s ({r['warmup_s']:g} s warm-up), "
                     f"{r['seeds_per_point']} seed{'s' if r['seeds_per_point'] != 1 else ''} "
                     "per grid point" for r in ran)


def _size_note(prov: dict[str, Any]) -> str | None:
    """For the quick form: what ran instead of the full size the description states."""
    if prov.get("size") != "quick":
        return None
    return (f"This is the quick form (--quick): {ran_text(prov)}. The description gives the "
            "full-size study; its run length and seed count do not apply to these numbers.")


def write_reports(suite: Suite, analysis: Analysis, prov: dict[str, Any],
                  out: Path) -> tuple[Path, Path]:
    """Write report.md and report.html of a suite; returns both paths."""
    title = f"l4slab suite {suite.name}: {suite.title}"
    md = [f"# {title}", "", suite.description, ""]
    note = _size_note(prov)
    if note:
        md += [f"**{note}**", ""]
    md += [f"- **{k}**: {v}" for k, v in provenance_lines(prov)]
    for n in analysis.notes:
        md += ["", f"> {n}"]
    body = [f"<p>{html.escape(suite.description)}</p>"]
    if note:
        body.append(f"<p><strong>{html.escape(note)}</strong></p>")
    body.append("<table>")
    body += [f'<tr><th class="l">{html.escape(k)}</th><td class="l">{html.escape(v)}</td></tr>'
             for k, v in provenance_lines(prov)]
    body.append("</table>")
    body += [f'<p class="muted">{html.escape(n)}</p>' for n in analysis.notes]
    for t in analysis.tables:
        d = display_frame(t)
        md += ["", f"## {t.title}", "", f"`tables/{t.name}.csv`" if t.name != "reference"
               else "`reference.csv`", ""]
        if t.note:
            md += [t.note, ""]
        md.append(_md_table(d))
        body.append(f"<h2>{html.escape(t.title)}</h2>")
        if t.note:
            body.append(f"<p>{html.escape(t.note)}</p>")
        body.append(_html_table(d, len(t.keys)))
    if analysis.figures:
        md += ["", "## Figures", ""]
        body.append("<h2>Figures</h2>")
    for f in analysis.figures:
        rel = f.path.relative_to(out)
        md += [f"### {f.title}", "", f"![{f.title}]({rel.as_posix()})", ""]
        b64 = base64.b64encode(f.path.read_bytes()).decode("ascii")
        body.append(f"<h3>{html.escape(f.title)}</h3>"
                    f'<img alt="{html.escape(f.name)}" src="data:image/png;base64,{b64}">')
    md_path = out / "report.md"
    md_path.write_text("\n".join(md) + "\n")
    html_path = out / "report.html"
    html_path.write_text("<!DOCTYPE html><html><head><meta charset=\"utf-8\">"
                         f"<title>{html.escape(title)}</title>"
                         f"<style>{_CSS}{SCROLL_CSS}</style></head>"
                         f"<body><h1>{html.escape(title)}</h1>" + "\n".join(body) +
                         "</body></html>\n")
    return html_path, md_path
