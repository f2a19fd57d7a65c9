"""Layout of figures and reports as a reader sees them: the Wi-Fi suite's delay-split labels
do not overlap, and wide tables of suite and run reports scroll inside the page instead of
running past its max-width."""

from __future__ import annotations

import re
from itertools import combinations

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg

from l4slab.suites.types import Analysis, Suite, Table

TRAFFIC = ["Prague", "Cubic", "Prague+Cubic"]
AQMS = ["DualPI2", "FQ-CoDel", "FIFO"]


def _delay_rows() -> pd.DataFrame:
    """The quick wifi suite's delay table at PER 1 %: 3 traffic mixes × 3 AQMs, a class
    without a flow NaN (Prague alone has no C row, Cubic alone no L row): 12 bars."""
    rows = []
    for t in TRAFFIC:
        for a in AQMS:
            rows.append({"traffic": t, "aqm": a,
                         "L_aqm_ms": np.nan if t == "Cubic" else 30.0,
                         "C_aqm_ms": np.nan if t == "Prague" else 120.0,
                         "driver_ms": 1.0, "mac_ms": 6.0})
    return pd.DataFrame(rows)


def test_delay_split_labels_do_not_overlap():
    from l4slab.suites.wifi import delay_split_plot

    fig = delay_split_plot(_delay_rows())
    FigureCanvasAgg(fig).draw()
    ax = fig.axes[0]
    labels = [t for t in ax.get_xticklabels() + ax.get_yticklabels() if t.get_text()]
    ylabels = [t.get_text() for t in ax.get_yticklabels()]
    assert len(ylabels) == 12 and ylabels[0] == "Prague · DualPI2 · L"
    boxes = [t.get_window_extent() for t in labels]
    overlaps = [(labels[i].get_text(), labels[j].get_text())
                for i, j in combinations(range(len(boxes)), 2) if boxes[i].overlaps(boxes[j])]
    assert overlaps == []
    # Every bar's total is written at its end, inside the figure.
    fig_box = fig.bbox
    totals = [t for t in ax.texts]
    assert [t.get_text() for t in totals[:3]] == ["37.0", "37.0", "37.0"]
    assert all(fig_box.contains(*t.get_window_extent().p1) for t in totals)


def _suite_report(tmp_path, ncols: int) -> str:
    from l4slab.suites.report import write_reports

    df = pd.DataFrame({"aqm": ["dualpi2", "fifo"],
                       **{f"metric_{i}_mbps": [1.0 + i, 2.0 + i] for i in range(ncols)}})
    analysis = Analysis([Table("wide", "A wide table", df, ["aqm"],
                               [c for c in df.columns if c != "aqm"])], [])
    prov = {"l4slab_version": "0", "run_versions": ["0"], "git_commit": None,
            "kernel_profile": None, "size": "quick", "engine": "simulator",
            "runs_finished": 2, "runs_planned": 2, "runs_ran_now": 2, "runs_resumed": 0,
            "runs_failed": 0, "ran": [], "seeds": [1], "wall_time_s": 1.0,
            "finished_at_utc": "2026-01-01 00:00:00"}
    suite = Suite(name="t", title="t", description="d", parts=[], quick={}, analyse=None)
    html_path, _ = write_reports(suite, analysis, prov, tmp_path)
    return html_path.read_text()


def test_suite_report_tables_scroll_inside_the_page(tmp_path):
    page = _suite_report(tmp_path, 30)
    css = re.search(r"<style>(.*)</style>", page, re.S).group(1)
    assert "max-width:1200px" in css and ".wide{overflow-x:auto;max-width:100%}" in css
    # The result table sits in the scrolling box; no result table outside one.
    assert re.search(r'<h2>A wide table</h2><div class="wide"><table><tr><th class="l">aqm',
                     page.replace("\n", ""))
    tables = page.count("<table>")
    boxed = page.count('<div class="wide"><table>')
    assert (tables, boxed) == (2, 1)  # the provenance table (two text columns) and the result


def test_run_and_sweep_report_tables_share_the_scroll_box():
    from l4slab.report import SCROLL_CSS, _table

    assert _table(["a", "b"], [[1, 2.5]]) == (
        '<div class="wide"><table><tr><th class="l">a</th><th class="">b</th></tr>'
        '<tr><td class="l">1</td><td class="">2.5</td></tr></table></div>')
    assert SCROLL_CSS.strip() == ".wide{overflow-x:auto;max-width:100%}"
