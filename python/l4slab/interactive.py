"""Interactive traffic in a run directory: frames.parquet (real-time video frames),
fct.parquet (workload transfers) and probes.parquet (latency probes), and their figures:
frame-latency CDF per video flow and FCT slowdown against transfer size.

The simulator produces the columns (crates/l4s-sim/src/app_results.rs); this module moves
them into DataFrames, writes and reads the files and draws the figures (docs/interactive.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from l4slab.columnar import read_parquet

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["APP_TABLES", "APP_FIGURES", "app_tables", "write_app_tables", "load_app_tables",
           "fig_frame_latency_cdf", "fig_slowdown"]

#: Tables a run may carry, by file stem.
APP_TABLES = ("frames", "fct", "probes")


def app_tables(raw: dict[str, Any]) -> dict[str, pd.DataFrame]:
    """The application tables of a `_core.run_scenario` result, by name (absent ones left out)."""
    out = {}
    for name in APP_TABLES:
        cols = raw.get(name)
        if cols is not None:
            out[name] = pd.DataFrame({k: np.asarray(v) for k, v in cols.items()})
    return out


def write_app_tables(tables: dict[str, pd.DataFrame], out: Path) -> None:
    """Write each table as NAME.parquet; remove those of an earlier run that this one lacks."""
    for name in APP_TABLES:
        path = out / f"{name}.parquet"
        if name in tables:
            tables[name].to_parquet(path, index=False)
        else:
            path.unlink(missing_ok=True)


def load_app_tables(run_dir: Path) -> dict[str, pd.DataFrame]:
    """The application tables present in a run directory."""
    return {n: read_parquet(run_dir / f"{n}.parquet") for n in APP_TABLES
            if (run_dir / f"{n}.parquet").exists()}


def _figure(w: float = 7.0, h: float = 4.0) -> Figure:
    # matplotlib is imported when a figure is drawn, not by every `import l4slab` (a run
    # without figures and a sweep worker never draw one).
    from matplotlib.figure import Figure

    return Figure(figsize=(w, h), dpi=100, layout="constrained")


def fig_frame_latency_cdf(run: Any) -> Figure | None:
    """CDF of frame latency (capture to last byte) per video flow after warm-up; frames that
    never completed sit at +inf (the curve ends below 1 by the incomplete share)."""
    fr = getattr(run, "app", {}).get("frames")
    if fr is None or not len(fr):
        return None
    from l4slab.plots import CLASS_COLORS, series_colors

    warm = run.summary.get("warmup_s") or 0.0
    flows = {int(f["id"]): f for f in run.summary.get("flows", [])}
    fig = _figure()
    ax = fig.add_subplot()
    groups = list(fr[fr["capture_s"] >= warm].groupby("flow"))
    # The class colour for the first flow of each class, a colour of its own for the rest.
    cls = [str(flows.get(int(fid), {}).get("class", "")) for fid, _ in groups]
    colors = series_colors([f"{c}#{i}" for i, c in enumerate(cls)],
                           {f"{c}#{i}": CLASS_COLORS.get(c, "black") for i, c in enumerate(cls)})
    for (fid, g), color in zip(groups, colors, strict=True):
        lat = np.sort(g["latency_ms"].to_numpy())
        n = len(lat)
        done = lat[np.isfinite(lat)]
        meta = flows.get(int(fid), {})
        ax.step(done, np.arange(1, len(done) + 1) / max(n, 1), where="post",
                color=color,
                label=f"flow {fid} {meta.get('cc', '')} ({meta.get('class', '')})")
        dl = (meta.get("frames") or {}).get("deadline_ms")
        if dl:
            ax.axvline(dl, color="grey", ls=":", lw=1)
    ax.set_xlabel("frame latency, capture to last byte [ms]")
    ax.set_ylabel("CDF")
    ax.set_ylim(0, 1.01)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def fig_slowdown(run: Any) -> Figure | None:
    """FCT slowdown (FCT over the transfer alone on the empty link) against size, log-log,
    with the median and 99th percentile per size decade."""
    fct = getattr(run, "app", {}).get("fct")
    if fct is None or not len(fct):
        return None
    warm = run.summary.get("warmup_s") or 0.0
    d = fct[(fct["start_s"] >= warm) & np.isfinite(fct["slowdown"])]
    if not len(d):
        return None
    fig = _figure()
    ax = fig.add_subplot()
    ax.scatter(d["size_bytes"], d["slowdown"], s=4, alpha=0.3, color="grey", label="transfer")
    dec = np.floor(np.log10(d["size_bytes"].to_numpy()))
    xs, p50, p99 = [], [], []
    for k in np.unique(dec):
        s = d["slowdown"].to_numpy()[dec == k]
        xs.append(10 ** (k + 0.5))
        p50.append(np.percentile(s, 50))
        p99.append(np.percentile(s, 99))
    ax.plot(xs, p50, "o-", color="#1f77b4", label="median")
    ax.plot(xs, p99, "s--", color="#d62728", label="p99")
    ax.set_xscale("log")
    ax.set_yscale("log")
    from l4slab.plots import plain_log_ticks

    plain_log_ticks(ax, "y")
    ax.set_xlabel("transfer size [bytes]")
    ax.set_ylabel("FCT slowdown")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return fig


#: Run figures of interactive traffic, by name (drawn when the tables exist).
APP_FIGURES = {"frame_latency_cdf": fig_frame_latency_cdf, "slowdown": fig_slowdown}
