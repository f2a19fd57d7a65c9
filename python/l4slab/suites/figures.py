"""Figures of the study suites: grouped bars with 95 % CIs, mean ± CI bands of time series over
seeds, CDFs, and l4slab beside a reference. L4S lines blue, Classic orange (as run figures)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure as MplFigure

from l4slab.plots import plain_log_ticks
from l4slab.suites.types import Figure, Table

L4S_BLUE = "#1f77b4"
CLASSIC_ORANGE = "#ff7f0e"
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf"]


def save(fig: MplFigure, path: Path, name: str, title: str) -> Figure:
    """Write `fig` as path/name.png (90 dpi) and describe it for the report."""
    path.mkdir(parents=True, exist_ok=True)
    p = path / f"{name}.png"
    fig.tight_layout()
    fig.savefig(p, dpi=90)
    return Figure(name=name, title=title, path=p)


def bars(df: pd.DataFrame, x: str, hue: str | None, metric: str, ylabel: str, title: str,
         out: Path, name: str) -> Figure:
    """Grouped bars of `metric` (with ``_lo``/``_hi`` error bars when present)."""
    fig = MplFigure(figsize=(max(6.0, 0.5 * len(df) + 3), 3.6))
    ax = fig.add_subplot()
    xs = list(dict.fromkeys(df[x].astype(str)))
    hues = list(dict.fromkeys(df[hue].astype(str))) if hue else [""]
    width = 0.8 / len(hues)
    for j, h in enumerate(hues):
        sub = df if not hue else df[df[hue].astype(str) == h]
        pos = {v: i for i, v in enumerate(xs)}
        xi = np.array([pos[str(v)] for v in sub[x]]) + (j - (len(hues) - 1) / 2) * width
        y = sub[metric].to_numpy(dtype=float)
        err = None
        if f"{metric}_lo" in sub:
            err = np.vstack([y - sub[f"{metric}_lo"].to_numpy(dtype=float),
                             sub[f"{metric}_hi"].to_numpy(dtype=float) - y])
        ax.bar(xi, y, width, yerr=err, capsize=2, label=h or None,
               color=PALETTE[j % len(PALETTE)])
    ax.set_xticks(range(len(xs)), xs, rotation=30 if len(xs) > 6 else 0, ha="right"
                  if len(xs) > 6 else "center", fontsize=8)
    ax.set_xlabel(x)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    if hue:
        ax.legend(fontsize=7, title=hue, title_fontsize=7)
    ax.grid(axis="y", alpha=0.3)
    return save(fig, out, name, title)


def band_stats(series: Sequence[pd.Series], bin_s: float = 0.1,
               domain: tuple[float, float] = (0.0, np.inf)) -> pd.DataFrame:
    """Mean and 95 % Student-t CI across runs of series indexed by t_s: each run is first
    averaged into `bin_s` bins (readable plots), then the runs are aligned on the bins. The
    band is cut to `domain` (default: non-negative quantities, see `core.aggregate`)."""
    from scipy import stats

    binned = [x.groupby(np.floor(x.index.to_numpy(dtype=float) / bin_s) * bin_s).mean()
              for x in series]
    frame = pd.concat(binned, axis=1).to_numpy(dtype=float)
    n = np.isfinite(frame).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # bins no run reached: NaN
        mean = np.nanmean(frame, axis=1)
        sd = np.nanstd(frame, axis=1, ddof=1)
        half = np.where(n >= 2, stats.t.ppf(0.975, np.maximum(n - 1, 1)) * sd / np.sqrt(n), 0.0)
    index = pd.concat(binned, axis=1).index
    lo = np.maximum(mean - half, domain[0])
    hi = np.minimum(mean + half, domain[1])
    return pd.DataFrame({"mean": mean, "lo": lo, "hi": hi}, index=index)


def bands(curves: Mapping[str, tuple[pd.DataFrame, str]], ylabel: str, title: str, out: Path,
          name: str, warmup_s: float | None = None) -> Figure:
    """One line per curve: mean over seeds with its 95 % CI as a shaded band. The numbers go
    to `name`.csv beside the PNG (t_s, then mean/lo/hi per curve)."""
    out.mkdir(parents=True, exist_ok=True)
    frame = pd.concat({label: st for label, (st, _) in curves.items()}, axis=1)
    frame.columns = [f"{a} {b}" for a, b in frame.columns]
    frame.rename_axis("t_s").to_csv(out / f"{name}.csv")
    fig = MplFigure(figsize=(8, 3.6))
    ax = fig.add_subplot()
    for label, (st, color) in curves.items():
        ax.plot(st.index, st["mean"], color=color, lw=1.2, label=label)
        ax.fill_between(st.index, st["lo"], st["hi"], color=color, alpha=0.25, lw=0)
    if warmup_s:
        ax.axvspan(0, warmup_s, color="#eee", zorder=0)
    ax.set_xlabel("time [s]")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return save(fig, out, name, title)


def cdfs(samples: Mapping[str, np.ndarray], xlabel: str, title: str, out: Path, name: str,
         colors: Mapping[str, str] | None = None, log_x: bool = False) -> Figure:
    """One empirical CDF per labelled sample set on shared axes, saved as `name`."""
    fig = MplFigure(figsize=(6.5, 3.6))
    ax = fig.add_subplot()
    for i, (label, x) in enumerate(samples.items()):
        x = np.sort(np.asarray(x, dtype=float))
        if not x.size:
            continue
        y = np.arange(1, x.size + 1) / x.size
        ax.step(x, y, where="post", label=label,
                color=(colors or {}).get(label, PALETTE[i % len(PALETTE)]), lw=1.1)
    if log_x:
        ax.set_xscale("symlog", linthresh=1.0)
        plain_log_ticks(ax, "x")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("CDF")
    ax.set_ylim(0, 1.01)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return save(fig, out, name, title)


#: Column-name suffixes -> units, and words spelled as a reader writes them.
_SUFFIX_UNITS = (("_mbps", "Mb/s"), ("_ms", "ms"), ("_pkts", "packets"), ("_s", "s"),
                 ("_bytes", "bytes"))
_WORDS = {"l4s": "L4S", "classic": "Classic", "tput": "throughput", "bdp": "BDP",
          "cc": "CC", "aqm": "AQM", "p99": "p99", "jain": "Jain's index"}


def column_label(name: str) -> str:
    """``l4s_mbps`` -> "L4S [Mb/s]", ``buffer_bdp`` -> "buffer BDP": a column name as an axis
    label (words spelled out, the unit from the suffix in brackets)."""
    unit = ""
    for suffix, u in _SUFFIX_UNITS:
        if name.endswith(suffix):
            name, unit = name[: -len(suffix)], u
            break
    words = " ".join(_WORDS.get(w, w) for w in name.split("_") if w)
    if unit == "Mb/s" and not {"throughput", "capacity", "rate"} & set(words.split()):
        words += " throughput"  # the suites' *_mbps columns are throughputs
    return f"{words} [{unit}]" if unit else words


def reference_bars(cmp: Table, out: Path) -> list[Figure]:
    """Per metric: l4slab (with its CI) beside the reference, one pair of bars per row. Tick
    labels hold the keys that vary between rows, the axis label names them; keys equal on
    every row go into the title."""
    figs = []
    df = cmp.df
    keys = [k for k in cmp.keys if k not in ("table", "metric")]
    for metric, g in df.groupby("metric", sort=False):
        varying = [k for k in keys if g[k].astype(str).nunique() > 1]
        fixed = [k for k in keys if k not in varying and pd.notna(g[k].iloc[0])]
        labels = ["\n".join(f"{column_label(k)} {r[k]}" for k in varying if pd.notna(r[k]))
                  for _, r in g.iterrows()]
        fig = MplFigure(figsize=(max(6.0, 1.1 * len(g) + 3), 4.2))
        ax = fig.add_subplot()
        x = np.arange(len(g))
        y = g["l4slab"].to_numpy(dtype=float)
        err = np.vstack([y - g["l4slab_lo"].to_numpy(dtype=float),
                         g["l4slab_hi"].to_numpy(dtype=float) - y])
        ax.bar(x - 0.2, y, 0.4, yerr=np.nan_to_num(err), capsize=2, label="l4slab",
               color=L4S_BLUE)
        ax.bar(x + 0.2, g["reference"].to_numpy(dtype=float), 0.4, label="reference",
               color="#999")
        ax.set_xticks(x, labels, fontsize=8)
        ax.set_ylabel(column_label(str(metric)))
        where = ", ".join(f"{column_label(k)} {g[k].iloc[0]}" for k in fixed)
        ax.set_title(f"{column_label(str(metric))}: l4slab (95 % CI) vs reference"
                     + (f"\n{where}" if where else ""), fontsize=10)
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        safe = "".join(c if c.isalnum() else "_" for c in str(metric))
        figs.append(save(fig, out, f"reference_{safe}", f"{metric}: l4slab vs reference"))
    return figs
