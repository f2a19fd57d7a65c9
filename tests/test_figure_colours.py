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
