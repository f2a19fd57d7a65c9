"""report.html of one run shows what the run has: video frames and RPM, workloads and
slowdown, the Wi-Fi block, the hops of a path, and each flow's host in words."""

from pathlib import Path

import pytest

from l4slab.runner import run

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
SHORT = {"duration": "3s", "warmup": "1s"}


@pytest.mark.parametrize(("name", "sections", "figures"), [
    ("video_next_to_download.toml", ["<h2>Video frames", "<h2>Responsiveness (RPM)"],
     ["frame_latency_cdf"]),
    ("web_workload.toml", ["<h2>Workload 0: flow completion and slowdown"], []),
    ("wifi_prague_cubic.toml", ["<h2>Wi-Fi", "airtime.utilisation"], []),
    ("parking_lot.toml", ["<h2>Hops", "metro/fq"], []),
])
def test_run_report_has_the_sections_of_what_the_run_has(tmp_path, name, sections, figures):
    out = tmp_path / "run"
    run(SCENARIOS / name, out, overrides=SHORT)
    html = (out / "report.html").read_text()
    for s in sections:
        assert s in html, s
    for f in figures:
        assert (out / f"{f}.png").exists() and f'alt="{f}"' in html, f
    # The host block in words, never a Python dict's repr.
    assert "{&#x27;" not in html and "{'" not in html
    if name == "wifi_prague_cubic.toml":
        assert "GRO off, qdisc fq, TSO off" in html


def test_a_plain_run_report_has_none_of_the_optional_sections(tmp_path):
    out = tmp_path / "run"
    run(SCENARIOS / "prague_vs_cubic_12M_20ms.toml", out, overrides=SHORT)
    html = (out / "report.html").read_text()
    for s in ("<h2>Video frames", "<h2>Responsiveness", "<h2>Workload", "<h2>Wi-Fi",
              "<h2>Hops"):
        assert s not in html, s
