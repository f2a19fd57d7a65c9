"""Figures for runs and sweeps (matplotlib, Agg, PNG + SVG).

Run figures: throughput per flow over time (L4S blue, Classic orange, total black), sojourn per
queue over time, DualPI2 probabilities p'/p_C/p_CL over time, sojourn CDFs per queue (from
packets.parquet when recorded, else from the periodic samples) and cwnd per flow.
Sweep figures: each summary metric against each swept parameter, mean over replications with
a 95% Student-t confidence band. Figures use the object API (no pyplot state), so they can be
drawn from worker threads.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from l4slab.columnar import (  # noqa: E402
    Categorical,
    ColumnTable,
    chunk_slices,
    distinct_times,
    grouped_by_time,
    per_flow_mean,
    select_rows,
)
from l4slab.sweepgrid import SWEEP_METRICS  # noqa: E402

__all__ = ["plot_run", "render_run", "plot_sweep", "run_figures", "sweep_figures", "numeric_axis",
           "CLASS_COLORS", "QUEUE_COLORS", "series_colors", "plain_log_ticks"]

CLASS_COLORS = {"L4S": "#1f77b4", "Classic": "#ff7f0e"}
QUEUE_COLORS = {"L": "#1f77b4", "C": "#ff7f0e", "single": "#2ca02c", "fq": "#9467bd"}
_SHADES = {"L4S": ["#1f77b4", "#6baed6", "#08519c", "#9ecae1", "#3182bd"],
           "Classic": ["#ff7f0e", "#fdae6b", "#d94801", "#fdd0a2", "#f16913"]}
FORMATS = ("png", "svg")
#: Flows drawn one line each; above this, the busiest ones plus per-class aggregates.
MAX_FLOWS_DRAWN = 12


#: Colours for series without a fixed one (tab10 without the fixed ones' blue/orange first).
_SPARE = ["#d62728", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#2ca02c",
          "#9467bd", "#1f77b4", "#ff7f0e", "#393b79", "#637939", "#8c6d31", "#843c39"]


def series_colors(names: Sequence[str], fixed: dict[str, str] | None = None) -> list[str]:
    """One colour per series of one axes, no two alike: a name's fixed colour when no earlier
    series took it, else the first spare colour no series uses yet (e.g. the Wi-Fi driver
    queue beside L and C)."""
    fixed = fixed or {}
    used: set[str] = set()
    out = []
    for n in names:
        c = fixed.get(n)
        if c is None or c in used:
            c = next((s for s in _SPARE if s not in used and s not in fixed.values()),
                     None) or next(s for s in _SPARE + [f"C{i}" for i in range(10)]
                                   if s not in used)
        used.add(c)
        out.append(c)
    return out


def plain_log_ticks(ax: Any, axis: str = "y") -> None:
    """A log (or symlog) axis labelled at 1, 2 and 5 per decade in plain numbers: matplotlib's
    default labels only the decades, in powers ("2×10⁰" on a minor tick, or one label in all
    when the data span less than a decade)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    a = ax.xaxis if axis == "x" else ax.yaxis
    a.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    a.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    a.set_minor_formatter(NullFormatter())


def _figure(w: float = 8.0, h: float = 4.0) -> Figure:
    return Figure(figsize=(w, h), dpi=100, layout="constrained")


def _flow_meta(run: Any) -> dict[int, tuple[str, str]]:
    meta: dict[int, tuple[str, str]] = {}
    for f in run.summary.get("flows", []) or []:
        meta[int(f.get("id", len(meta)))] = (str(f.get("cc", "?")), str(f.get("class", "?")))
    if not meta:
        t = _flow_table(run)
        if t is not None and len(t) and "cc" in t and "class" in t:
            # First row of each flow (as a groupby's .iloc[0]), found a chunk at a time.
            fid = t.numeric("flow")
            cc, cls = t.categorical("cc"), t.categorical("class")
            for s in chunk_slices(len(t)):
                ids, first = np.unique(fid[s], return_index=True)
                for i, r in zip(ids.tolist(), (first + s.start).tolist(), strict=True):
                    if i not in meta:
                        meta[i] = (_category(cc, r), _category(cls, r))
    return meta


def _category(c: Categorical, row: int) -> str:
    code = int(c.codes[row])
    return c.categories[code] if code >= 0 else "nan"


def _flow_table(run: Any) -> ColumnTable | None:
    """The per-flow table as columns: the run's own (fresh from the simulator), or a view of
    its DataFrame (loaded, or edited)."""
    cols = getattr(run, "flow_columns", None)
    if cols is not None:
        return cols
    df = run.flows
    if df is None:
        return None
    out: dict[str, Any] = {}
    for k in df.columns:
        if isinstance(df[k].dtype, pd.CategoricalDtype):
            out[k] = Categorical(df[k].cat.codes.to_numpy(), [str(c) for c in
                                                              df[k].cat.categories])
        else:
            out[k] = df[k].to_numpy()
    return ColumnTable(out)


def _flow_color(cls: str, k: int) -> str:
    shades = _SHADES.get(cls)
    return shades[k] if shades and k < len(shades) else "#7f7f7f"


def _warmup(ax: Any, run: Any) -> None:
    w = run.summary.get("warmup_s")
    if isinstance(w, (int, float)) and w > 0:
        ax.axvspan(0, w, color="0.9", zorder=0, label="_warmup")


def _smooth_samples(run: Any, window_s: float, t: np.ndarray) -> tuple[int, float]:
    """(samples in a ~`window_s` moving average (1 = raw), sample interval in s); `t` are the
    per-flow rows' times, used when the summary does not say the interval."""
    dt = run.summary.get("sample_interval_s")
    if not isinstance(dt, (int, float)) or dt <= 0:
        u = distinct_times(t)
        dt = float(np.median(np.diff(u))) if u.size > 1 else 0.0
    return (max(1, round(window_s / dt)) if dt > 0 else 1), float(dt)


def _per_flow(run: Any, column: str, ylabel: str, title: str, total: bool,
              smooth_s: float = 0.0) -> Figure | None:
    """Per-flow lines of `column` over time (the busiest MAX_FLOWS_DRAWN and per-class
    aggregates when there are more flows). Works on the columns with numpy, a chunk of rows
    at a time, so a 10 000-flow run is never copied into a DataFrame here."""
    tab = _flow_table(run)
    if tab is None or not len(tab) or column not in tab:
        return None
    y_all = tab.numeric(column)
    if bool(np.all([np.isnan(y_all[s]).all() for s in chunk_slices(len(tab))])):
        return None  # e.g. cwnd of CBR sources
    t_all, fid = tab.numeric("t_s"), tab.numeric("flow")
    fig = _figure()
    ax = fig.add_subplot()
    _warmup(ax, run)
    meta = _flow_meta(run)
    count = {"L4S": 0, "Classic": 0}
    win, dt = _smooth_samples(run, smooth_s, t_all) if smooth_s > 0 else (1, 0.0)
    if win > 1:
        title += f" ({win} × {dt * 1000:g} ms moving average)"

    def smooth(y: np.ndarray) -> np.ndarray:
        return (pd.Series(y).rolling(win, min_periods=1).mean().to_numpy() if win > 1
                else np.asarray(y))

    n_ids = int(fid.max()) + 1
    present = np.zeros(n_ids, dtype=bool)
    for s in chunk_slices(len(fid)):
        present[fid[s]] = True
    ids = np.flatnonzero(present)
    n_flows = int(ids.size)
    shown = ids
    if n_flows > MAX_FLOWS_DRAWN:
        # Thousands of lines take minutes to draw and show nothing: per-class aggregates
        # plus the busiest flows (largest mean of the column), said in the title.
        mean = per_flow_mean(fid, y_all, n_ids)[ids]
        ok = ~np.isnan(mean)
        # Largest first; equal means keep the lower flow id first (pandas' nlargest).
        order = np.argsort(-mean[ok], kind="stable")[:MAX_FLOWS_DRAWN]
        shown = ids[ok][order]
        how = "sum" if total else "mean"
        title += f"\n{MAX_FLOWS_DRAWN} busiest of {n_flows} flows, per-class {how} dashed"
        cls_of = [meta.get(int(f), ("?", "?"))[1] for f in range(n_ids)]
        names = sorted({cls_of[i] for i in ids.tolist()})
        code_of = np.asarray([names.index(c) if c in names else -1 for c in cls_of])
        for k, cls in enumerate(names):
            tt, agg = grouped_by_time(t_all, y_all, how,
                                      lambda s, k=k: code_of[fid[s]] == k)  # type: ignore[misc]
            n_cls = int(np.count_nonzero(code_of[ids] == k))
            ax.plot(tt, smooth(agg), lw=1.6, ls="--", color=CLASS_COLORS.get(str(cls), "0.5"),
                    label=f"{cls}: {how} of {n_cls} flows")
    sel = select_rows(fid, shown)
    sel_f = fid[sel]
    # Each flow its class's next shade, or a spare colour once the shades (or the dashed
    # aggregates' class colours) are taken: no two lines of the axes alike.
    taken = {ln.get_color() for ln in ax.get_lines()}
    for f in np.sort(shown).tolist():
        r = sel[sel_f == f]
        cc, cls = meta.get(int(f), ("?", "?"))
        k = count.get(cls, 0)
        count[cls] = k + 1
        color = _flow_color(cls, k)
        if color in taken:
            color = next(c for c in _SPARE + [f"C{i}" for i in range(10)] if c not in taken)
        taken.add(color)
        ax.plot(t_all[r], smooth(y_all[r]), lw=1.0,
                color=color, label=f"flow {f} {cc} ({cls})")
    if total:
        # Goodput (payload delivered in order) is below the wire rate by the headers and can
        # exceed it for a moment when a retransmission releases the bytes held behind a hole:
        # both lines say what they are.
        tt, tot = grouped_by_time(t_all, y_all, "sum")
        ax.plot(tt, smooth(tot), color="black", lw=1.2, label="total goodput (payload)")
        cap = (run.summary.get("link") or {}).get("capacity_mbps")
        hops = [h for h in run.summary.get("hops") or []
                if isinstance(h.get("capacity_mbps"), (int, float))]
        if len(hops) > 1:
            # A path of hops: each flow crosses its own hops, so no one capacity bounds the
            # total; each hop's capacity (mean over the run, rate steps included) is drawn.
            cap = None
            styles = ["--", "-.", ":", (0, (5, 1, 1, 1))]
            for i, h in enumerate(hops):
                grey = f"{0.2 + 0.55 * i / (len(hops) - 1):.3f}"
                ax.axhline(h["capacity_mbps"], color=grey, ls=styles[i % 4], lw=0.9,
                           label=f"hop {h.get('name', i)} capacity "
                                 f"{h['capacity_mbps']:.3g} Mb/s (mean, wire rate)")
        if isinstance(cap, (int, float)) and cap > 0:
            ax.axhline(cap, color="0.4", ls="--", lw=0.8,
                       label=f"capacity {cap:g} Mb/s (wire rate, incl. headers)")
            if np.nanmax(smooth(tot)) > cap:
                # Say on the figure what a spike above capacity is, not only in the code.
                ax.plot([], [], " ", label="spikes above capacity: a retransmission\n"
                        "releases the bytes held behind a loss\n(in-order delivery); the dip "
                        "before\na spike is that hole")
    ax.set_xlabel("time [s]")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.set_xlim(0, float(max(np.max(t_all[s]) for s in chunk_slices(len(t_all)))))
    ax.set_ylim(0, ax.get_ylim()[1] * 1.05)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def fig_throughput(run: Any) -> Figure | None:
    """Goodput per flow and in total over time (100 ms moving average); None without flows."""
    # Goodput per sample interval jumps when a retransmission fills a hole (the bytes behind
    # it are delivered at once); a 100 ms moving average keeps the picture readable.
    return _per_flow(run, "tput_mbps", "goodput [Mb/s]", "Goodput per flow", total=True,
                     smooth_s=0.1)


def fig_cwnd(run: Any) -> Figure | None:
    """Congestion window per flow over time, in packets; None where no flow has one (CBR)."""
    return _per_flow(run, "cwnd_pkts", "cwnd [packets]", "Congestion window per flow",
                     total=False)


def fig_sojourn(run: Any) -> Figure | None:
    """Head-packet sojourn per queue over time. When the queues' delays differ by more than
    10× (DualPI2's L vs C), each queue gets its own panel and y scale, so the L queue is not a
    flat line at 0 under the C queue's sawtooth."""
    df = run.samples
    if df is None or not len(df):
        return None
    groups = [(str(q), g) for q, g in df.groupby("queue", observed=True, sort=False)]
    p99 = [float(np.nanquantile(g["sojourn_ms"].to_numpy(), 0.99)) for _, g in groups]
    split = len(groups) > 1 and min(p99) > 0 and max(p99) / min(p99) > 10
    fig = _figure(8.0, 2.6 * len(groups) if split else 4.0)
    axes = ([fig.add_subplot(len(groups), 1, i + 1) for i in range(len(groups))] if split
            else [fig.add_subplot()])
    for ax in axes:
        _warmup(ax, run)
    colors = series_colors([q for q, _ in groups], QUEUE_COLORS)
    for i, (q, g) in enumerate(groups):
        ax = axes[i if split else 0]
        ax.plot(g["t_s"].to_numpy(), g["sojourn_ms"].to_numpy(), lw=1.0,
                color=colors[i], label=f"queue {q}")
    for ax in axes:
        ax.set_ylabel("head sojourn [ms]")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small", loc="upper right")
    axes[-1].set_xlabel("time [s]")
    axes[0].set_title("Queue delay per queue" + (" (own y scale per queue)" if split else ""))
    return fig


def fig_probability(run: Any) -> Figure | None:
    """The AQM's probabilities (p', p_C, p_CL) over time; None where it has none or they stay 0."""
    df = run.samples
    if df is None or not len(df):
        return None
    cols = [c for c in ("p_prime", "p_c", "p_cl") if c in df]
    per_t = df.groupby("t_s", sort=True)[cols].max()
    per_t = per_t.loc[:, [c for c in cols if per_t[c].notna().any()]]
    if per_t.empty or not np.nanmax(per_t.to_numpy(), initial=0.0) > 0:
        return None
    fig = _figure()
    ax = fig.add_subplot()
    _warmup(ax, run)
    style = {"p_prime": ("p'", "0.2"), "p_c": ("p_C = p'²", CLASS_COLORS["Classic"]),
             "p_cl": ("p_CL = k·p'", CLASS_COLORS["L4S"])}
    for c in per_t:
        label, color = style[c]
        ax.plot(per_t.index.to_numpy(), per_t[c].to_numpy(), lw=1.0, color=color, label=label)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("probability")
    ax.set_title("Marking / dropping probabilities")
    ax.set_xlim(left=0)
    ax.set_ylim(0, min(1.05, max(0.05, float(np.nanmax(per_t.to_numpy())) * 1.1)))
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="upper right")
    return fig


def fig_sojourn_cdf(run: Any) -> Figure | None:
    """Empirical CDF per queue after warm-up; a second, log-scaled panel when the queues'
    delays differ by more than 10× (L vs C), so the L queue is not a vertical line at 0."""
    warm = run.summary.get("warmup_s") or 0.0
    pk = getattr(run, "packet_columns", None)
    by_queue: list[tuple[str, np.ndarray]] = []
    if pk is not None and len(pk):
        # Columns fresh from the simulator: no DataFrame of every packet.
        q, v = pk.categorical("queue"), pk.categorical("verdict")
        keep = (pk.numeric("t_s") >= warm) & (v.codes != v.categories.index("drop"))
        codes = q.codes[keep]
        soj = pk.numeric("sojourn_ms")[keep]
        # Queues in order of first appearance (as groupby(sort=False)).
        _, first = np.unique(codes[codes >= 0], return_index=True)
        for c in codes[codes >= 0][np.sort(first)].tolist():
            by_queue.append((q.categories[c], soj[codes == c]))
        source = "per packet"
    else:
        if run.packets is not None and len(run.packets):
            df = run.packets[(run.packets["t_s"] >= warm) & (run.packets["verdict"] != "drop")]
            source = "per packet"
        elif run.samples is not None and len(run.samples):
            df = run.samples[run.samples["t_s"] >= warm]
            source = "sampled"
        else:
            return None
        by_queue = [(str(q), g["sojourn_ms"].to_numpy())
                    for q, g in df.groupby("queue", observed=True, sort=False)]
    curves = []
    for q, x in by_queue:
        x = np.sort(x)
        x = x[np.isfinite(x)]
        if x.size:
            curves.append((q, x, np.arange(1, x.size + 1) / x.size))
    if not curves:
        return None
    p99 = [float(np.quantile(x, 0.99)) for _, x, _ in curves]
    log_panel = len(curves) > 1 and min(p99) > 0 and max(p99) / min(p99) > 10
    fig = _figure(11.0 if log_panel else 6.0, 4.0)
    axes = [fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)] if log_panel else [
        fig.add_subplot()]
    colors = series_colors([q for q, _, _ in curves], QUEUE_COLORS)
    for i, ax in enumerate(axes):
        for (q, x, y), color in zip(curves, colors, strict=True):
            if i == 1:
                keep = x > 0
                x, y = x[keep], y[keep]
            ax.step(x, y, where="post", color=color, label=f"queue {q}")
        ax.set_ylabel("CDF")
        ax.set_ylim(0, 1.0)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize="small", loc="lower right")
        if i == 0:
            ax.set_xlabel("sojourn [ms]")
            ax.set_xlim(left=0)
        else:
            ax.set_xscale("log")
            plain_log_ticks(ax, "x")
            ax.set_xlabel("sojourn [ms] (log scale, zeros left out)")
    fig.suptitle(f"Sojourn CDF per queue ({source}, after warm-up)", fontsize="medium")
    return fig


RUN_FIGURES = {
    "throughput": fig_throughput,
    "sojourn": fig_sojourn,
    "probability": fig_probability,
    "sojourn_cdf": fig_sojourn_cdf,
    "cwnd": fig_cwnd,
}


def run_figures(run: Any) -> dict[str, Figure]:
    """Every run figure that has data, by name."""
    from l4slab.interactive import APP_FIGURES

    out = {}
    for name, make in {**RUN_FIGURES, **APP_FIGURES}.items():
        fig = make(run)
        if fig is not None:
            out[name] = fig
    return out


def _save(figs: dict[str, Figure], out_dir: Path, formats: Sequence[str]) -> list[Path]:
    paths = []
    for name, fig in figs.items():
        for ext in formats:
            p = out_dir / f"{name}.{ext}"
            fig.savefig(p, format=ext)
            paths.append(p)
    return paths


def render_run(run: Any, formats: Sequence[str] = FORMATS) -> dict[str, bytes]:
    """The run figures as file bytes by file name (for drawing in a sweep worker)."""
    import io

    out = {}
    for name, fig in run_figures(run).items():
        for ext in formats:
            buf = io.BytesIO()
            fig.savefig(buf, format=ext)
            out[f"{name}.{ext}"] = buf.getvalue()
    return out


def plot_run(run: Any, out_dir: str | Path, formats: Sequence[str] = FORMATS) -> list[Path]:
    """Draw the run figures into `out_dir` (name.png and name.svg); returns the files."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return _save(run_figures(run), out, formats)


# --- sweeps -----------------------------------------------------------------------------------

# SWEEP_METRICS (the metrics a sweep figure draws) lives in l4slab.sweepgrid, which reports
# import without matplotlib.


#: Metrics that are fractions in [0, 1] (their confidence bands are clipped to it).
BOUNDED_METRICS = {"link.utilisation", "jain"}


def numeric_axis(values: Sequence[Any]) -> tuple[np.ndarray, str, list[str] | None]:
    """Parameter values → x positions: durations in ms, rates in Mb/s, numbers as they are,
    anything else categorical (positions 0..n-1 with tick labels)."""
    from l4slab import _core

    vals = list(values)
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
        return np.asarray(vals, dtype=float), "", None
    if all(isinstance(v, str) for v in vals):
        for parse, scale, unit in ((_core.parse_duration_ns, 1e-6, "ms"),
                                   (_core.parse_rate_bps, 1e-6, "Mb/s")):
            try:
                return np.asarray([parse(v) * scale for v in vals]), f" [{unit}]", None
            except ValueError:
                pass
    return np.arange(len(vals), dtype=float), "", [str(v) for v in vals]


def _ci95(x: np.ndarray) -> tuple[float, float]:
    from scipy import stats

    x = x[np.isfinite(x)]
    if not x.size:
        return float("nan"), float("nan")
    m = float(x.mean())
    if x.size < 2:
        return m, 0.0
    half = float(stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size))
    return m, half


def mean_ci_text(x: np.ndarray, mean_fmt: str = ".4g", half_fmt: str = ".2g") -> str:
    """"mean ± half-width" of the 95 % CI over runs, or what stands in for a CI that cannot
    be one: "(n = 1)" for a single run, "(identical runs)" when every run gave the same value
    (deterministic replications); "" without finite values."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    if not x.size:
        return ""
    mean, half = _ci95(x)
    if x.size == 1:
        return f"{mean:{mean_fmt}} (n = 1)"
    if half == 0:
        return f"{mean:{mean_fmt}} (identical runs)"
    return f"{mean:{mean_fmt}} ± {half:{half_fmt}}"


def sweep_figures(data: Any) -> dict[str, Figure]:
    """One figure per swept parameter: each available metric against it, a line per
    combination of the other parameters, mean ± 95% CI over replications."""
    df: pd.DataFrame = data.index
    df = df[df["status"] == "ok"] if "status" in df else df
    metrics = [(m, label) for m, label in SWEEP_METRICS
               if m in df and pd.to_numeric(df[m], errors="coerce").notna().any()]
    params = [p for p in data.params if p in df]
    if df.empty or not metrics:
        return {}
    figs: dict[str, Figure] = {}
    if not params:  # replications only: one box of points per metric
        fig = _figure(3.0 * len(metrics), 3.2)
        for i, (m, label) in enumerate(metrics):
            ax = fig.add_subplot(1, len(metrics), i + 1)
            y = pd.to_numeric(df[m], errors="coerce").to_numpy(dtype=float)
            mean, half = _ci95(y)
            ax.plot(np.zeros_like(y), y, "o", alpha=0.5)
            ax.errorbar([0], [mean], yerr=[half], fmt="s", color="black", capsize=4)
            ax.set_title(label, fontsize="small")
            _plain_y(ax)
            ax.set_xticks([])
        figs["sweep_replications"] = fig
        return figs
    for p in params:
        from l4slab.sweeps import param_label  # grid values as the index labels them

        order = list(dict.fromkeys(param_label(v) for v in
                                   data.meta.get("grid", {}).get(p, list(df[p].unique()))))
        x_of, unit, ticks = numeric_axis(order)
        x_map = {str(v): x for v, x in zip(order, x_of, strict=True)}
        others = [o for o in params if o != p]
        ncols = min(3, len(metrics))
        nrows = -(-len(metrics) // ncols)
        fig = _figure(4.2 * ncols, 3.2 * nrows)
        groups = list(df.groupby(others, sort=False, dropna=False)) if others else [((), df)]
        for i, (m, label) in enumerate(metrics):
            ax = fig.add_subplot(nrows, ncols, i + 1)
            for gi, (gkey, g) in enumerate(groups):
                rows = []
                for v, gg in g.groupby(p, sort=False):
                    y = pd.to_numeric(gg[m], errors="coerce").to_numpy(dtype=float)
                    mean, half = _ci95(y)
                    rows.append((x_map.get(str(v), np.nan), mean, half))
                rows.sort()
                xs, ms, hs = (np.asarray(c, dtype=float) for c in zip(*rows, strict=True))
                gk = gkey if isinstance(gkey, tuple) else (gkey,)
                lab = ", ".join(f"{o}={val}" for o, val in zip(others, gk, strict=True))
                color = f"C{gi % 10}"
                # Every sweep metric is a rate, delay, fraction or index: its CI cannot go
                # below 0, and a fraction's cannot go above 1.
                lo, hi = np.maximum(ms - hs, 0.0), ms + hs
                if m in BOUNDED_METRICS:
                    lo, hi = np.clip(lo, 0.0, 1.0), np.clip(hi, 0.0, 1.0)
                if ticks is not None:
                    # Categories (prague, dctcp, ...) have no order: points with error bars,
                    # no connecting line, a small offset per group so bars do not overlap.
                    off = (gi - (len(groups) - 1) / 2) * 0.08
                    # A mean a hair above 1 (float sums) or a one-run CI (NaN) draws no bar.
                    err = [np.nan_to_num(np.maximum(ms - lo, 0.0)),
                           np.nan_to_num(np.maximum(hi - ms, 0.0))]
                    ax.errorbar(xs + off, ms, yerr=err, fmt="o", ls="none",
                                color=color, ms=4, capsize=3, label=lab or None)
                else:
                    ax.plot(xs, ms, "o-", color=color, lw=1.2, ms=4, label=lab or None)
                    ax.fill_between(xs, lo, hi, color=color, alpha=0.2, lw=0)
            ax.set_title(label, fontsize="small")
            _plain_y(ax)
            ax.set_xlabel(p + unit + (" (categories)" if ticks is not None else ""),
                          fontsize="small")
            if ticks is not None:
                ax.set_xticks(x_of, ticks)
            ax.grid(alpha=0.3)
            if others and i == 0:
                ax.legend(fontsize="x-small")
        fig.suptitle(f"Metrics vs {p} (mean, 95% CI over replications)", fontsize="medium")
        figs[f"sweep_{_safe(p)}"] = fig
    return figs


def _plain_y(ax: Any) -> None:
    """Tick labels a reader can read: no offset notation ("1e−5+9.999e−1"), and a metric that
    barely moves (utilisation 0.99999 at every point) drawn on a ±1 % range around its value
    instead of magnifying float noise."""
    ax.ticklabel_format(axis="y", style="plain", useOffset=False)
    y0, y1 = ax.dataLim.y0, ax.dataLim.y1
    if np.isfinite(y0) and np.isfinite(y1):
        mid = (y0 + y1) / 2
        if y1 - y0 < 1e-3 * max(abs(mid), 1e-12):
            pad = 0.01 * abs(mid) if mid != 0 else 1.0
            ax.set_ylim(mid - pad, mid + pad)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def plot_sweep(data: Any, out_dir: str | Path, formats: Sequence[str] = FORMATS) -> list[Path]:
    """Write the sweep figures into ``out_dir`` in each of ``formats``; return the files."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return _save(sweep_figures(data), out, formats)
