"""What the figures must show (the plotted series, labels, scales), not only that a file was
written: goodput vs wire-rate capacity labelled, the L queue readable beside the C queue,
categorical sweep axes without connecting lines, fraction CIs inside [0, 1], units on the
validation histograms."""

import numpy as np
import pandas as pd

from l4slab.plots import fig_sojourn, fig_throughput, sweep_figures
from l4slab.results import from_core
from l4slab.sweeps import SweepData
from test_front_results import synthetic_raw


def test_throughput_figure_plots_each_flow_and_labels_goodput_and_capacity():
    run = from_core(synthetic_raw())
    ax = fig_throughput(run).axes[0]
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    assert ax.get_ylabel() == "goodput [Mb/s]"
    # Flows at 24 and 25 Mb/s (constant, so the moving average is the same), total 49.
    assert np.allclose(lines["flow 0 prague (L4S)"].get_ydata(), 24.0)
    assert np.allclose(lines["flow 1 cubic (Classic)"].get_ydata(), 25.0)
    assert np.allclose(lines["total goodput (payload)"].get_ydata(), 49.0)
    cap = lines["capacity 50 Mb/s (wire rate, incl. headers)"]
    assert np.allclose(cap.get_ydata(), 50.0)


def test_sojourn_figure_gives_the_l_queue_its_own_scale():
    run = from_core(synthetic_raw())  # L at 0.5 ms, C at 15 ms: 30x apart
    fig = fig_sojourn(run)
    assert len(fig.axes) == 2
    (l_line,), (c_line,) = (ax.get_lines() for ax in fig.axes)
    assert l_line.get_label() == "queue L" and np.allclose(l_line.get_ydata(), 0.5)
    assert c_line.get_label() == "queue C" and np.allclose(c_line.get_ydata(), 15.0)
    # The L panel's y range fits the L queue (0.5 ms fills it, not 1/30 of it).
    assert fig.axes[0].get_ylim()[1] < 1.0
    assert "own y scale" in fig.axes[0].get_title()


def _sweep(values, metric, ys):
    rows = [{"run": f"p{i}-r{r}", "flows.0.cc": v, "seed": r, "status": "ok", metric: y}
            for i, (v, yy) in enumerate(zip(values, ys, strict=True))
            for r, y in enumerate(yy)]
    return SweepData(path=None, index=pd.DataFrame(rows), params=["flows.0.cc"],
                     meta={"grid": {"flows.0.cc": values}})


def test_categorical_sweep_axis_has_no_connecting_lines_and_ci_stays_in_0_1():
    # Jain's index near 1 with spread: mean + t·sd/√n exceeds 1 unless clipped.
    ys = [[0.99, 1.0, 0.96], [0.97, 1.0, 0.99], [0.9, 0.95, 1.0]]
    fig = sweep_figures(_sweep(["prague", "dctcp", "bbr3"], "jain", ys))["sweep_flows_0_cc"]
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["prague", "dctcp", "bbr3"]
    assert "(categories)" in ax.get_xlabel()
    markers = [ln for ln in ax.get_lines() if ln.get_marker() == "o"]
    assert markers and all(ln.get_linestyle() == "None" for ln in markers)
    np.testing.assert_allclose(markers[0].get_ydata(), [np.mean(y) for y in ys])
    # Error bar tops (the caps drawn at mean + half-width) never exceed 1.
    tops = [ln.get_ydata() for ln in ax.get_lines() if ln.get_marker() == "_"]
    assert tops and max(float(np.max(t)) for t in tops) <= 1.0


def test_validation_histogram_axis_has_the_metric_unit():
    from l4slab.validation.core import MetricResult
    from l4slab.validation.report import histogram_figure, metric_unit

    assert metric_unit("tput_total") == "Mb/s" and metric_unit("mean:sojourn_L") == "ms"
    z = np.array([0.1, 0.2, 0.3])
    r = MetricResult("sojourn_C", "dtw", 3, 3, z, z, z, eps_max=0.25, p_hat=0.5)
    ax = histogram_figure(r).axes[0]
    assert ax.get_xlabel() == "normalised DTW distance [ms]"
    eps = [ln for ln in ax.get_lines() if ln.get_label().startswith("ε_max")]
    assert np.allclose(eps[0].get_xdata(), 0.25)
