"""Every series of one axes has its own colour (and a legend entry), in the figures of the
shipped scenarios as drawn: e.g. the Wi-Fi run's sojourn figure has queues L, C and the
driver queue, three colours."""

from pathlib import Path

import pytest
from matplotlib.colors import to_hex

from l4slab.plots import QUEUE_COLORS, run_figures, series_colors
from l4slab.runner import run

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
#: Shipped scenarios short enough at 2 s to run here (all of them, at this duration).
SHIPPED = sorted(p.name for p in SCENARIOS.glob("*.toml"))


def test_series_colors_are_distinct_and_keep_the_fixed_ones():
    # The driver queue has no fixed colour; before, it fell to matplotlib's C0 = L's blue.
    got = series_colors(["L", "C", "driver"], QUEUE_COLORS)
    assert got[:2] == [QUEUE_COLORS["L"], QUEUE_COLORS["C"]]
    assert len(set(got)) == 3
    # Two series asking for one fixed colour: the second gets another.
    assert len(set(series_colors(["a", "b"], {"a": "#1f77b4", "b": "#1f77b4"}))) == 2


@pytest.mark.parametrize("name", SHIPPED)
def test_no_two_lines_of_one_axes_share_a_colour(name):
    res = run(SCENARIOS / name, overrides={"duration": "2s", "warmup": "0.5s"})
    figs = run_figures(res)
    assert figs
    for fig_name, fig in figs.items():
        for ax in fig.axes:
            lines = [ln for ln in ax.get_lines()
                     if not ln.get_label().startswith("_") and len(ln.get_xdata())]
            colours = [to_hex(ln.get_color()) for ln in lines]
            assert len(colours) == len(set(colours)), (
                fig_name, [(ln.get_label(), c) for ln, c in zip(lines, colours, strict=True)])
            legend = ax.get_legend()
            if len(lines) > 1:
                assert legend is not None, fig_name
                shown = {t.get_text() for t in legend.get_texts()}
                assert {ln.get_label() for ln in lines} <= shown, fig_name


def test_parking_lot_throughput_draws_each_hops_capacity_not_hop_0s_alone():
    res = run(SCENARIOS / "parking_lot.toml", overrides={"duration": "2s", "warmup": "0.5s"})
    ax = run_figures(res)["throughput"].axes[0]
    caps = {ln.get_label(): float(ln.get_ydata()[0]) for ln in ax.get_lines()
            if "capacity" in ln.get_label()}
    hops = res.summary["hops"]
    assert len(caps) == len(hops) == 3
    for h in hops:
        (label,) = [k for k in caps if k.startswith(f"hop {h['name']} capacity")]
        assert caps[label] == h["capacity_mbps"]


def _visible_tick_labels(ax, axis):
    lo, hi = ax.get_xlim() if axis == "x" else ax.get_ylim()
    ticks = ax.get_xticks() if axis == "x" else ax.get_yticks()
    fmt = (ax.xaxis if axis == "x" else ax.yaxis).get_major_formatter()
    return [fmt(t) for t in ticks if lo <= t <= hi]


def test_log_axes_carry_plain_labels_at_1_2_5_per_decade(tmp_path, monkeypatch):
    import numpy as np
    import pandas as pd

    import l4slab.suites.figures as sf
    from l4slab.interactive import fig_slowdown

    drawn = []
    monkeypatch.setattr(sf, "save", lambda fig, *a: drawn.append(fig))

    class Run:  # the two attributes fig_slowdown reads
        summary = {"warmup_s": 0.0}
        app = {"fct": pd.DataFrame({"start_s": [1.0, 2.0, 3.0, 4.0],
                                    "size_bytes": [1e3, 2e4, 3e5, 4e5],
                                    "slowdown": [1.2, 1.6, 2.4, 3.1]})}

    ax = fig_slowdown(Run()).axes[0]
    ax.figure.canvas.draw()
    labels = _visible_tick_labels(ax, "y")
    # Slowdowns 1.2–3.1: a plain "2" among the labels, never "2×10⁰" / "10^0".
    assert "2" in labels and not any("10^" in s or "×" in s for s in labels)
    # A frame-latency CDF within one decade (20–80 ms) is labelled 20 and 50, not once.
    sf.cdfs({"dualpi2": np.array([20.0, 35.0, 80.0])}, "frame latency [ms]", "t",
            tmp_path, "frame_cdf_x", log_x=True)
    ax = drawn[0].axes[0]
    ax.figure.canvas.draw()  # lets the locators settle on the final limits
    assert {"20", "50"} <= set(_visible_tick_labels(ax, "x"))
