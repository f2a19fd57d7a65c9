"""New-user audit (issues 35, 32): every refusal names the field the user wrote and the range
it allows in words (not a Rust type), once, without repeating the key; sweep errors say
whether the base scenario or one grid point (labelled as reports label it) is at fault."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest

from l4slab.flow import find_binary
from l4slab.scenario import dumps_toml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_helpers import SHORT_BASE, invoke_wide, one_error  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _run(tmp_path: Path, scen: dict, *args: str) -> str:
    (tmp_path / "s.toml").write_text(dumps_toml(scen))
    return one_error(invoke_wide("run", tmp_path / "s.toml", "-o", tmp_path / "r", *args))


@pytest.mark.parametrize(("setting", "needle"), [
    ("aqm.limit=2.5", "aqm.limit: invalid type: floating point 2.5; expected a whole number ≥ 0"),
    ("aqm.limit=-3", "aqm.limit: invalid value: integer -3; expected a whole number ≥ 0"),
    ("seed=-1", "seed: invalid value: integer -1; expected a whole number ≥ 0"),
    ("link.loss=\"x\"", 'link.loss: invalid type: string "x"; expected a number'),
    ("flows.0.path=[-1,0]", "flows[0].path[0]: invalid value: integer -1; expected a hop index"),
])
def test_serde_type_errors_name_the_range_in_words(tmp_path, setting, needle):
    line = _run(tmp_path, SHORT_BASE, "--set", setting)
    assert needle in line
    assert " u64" not in line and " u32" not in line and " f64" not in line


def test_a_workload_cc_of_the_wrong_type_says_what_it_may_be(tmp_path):
    scen = copy.deepcopy(SHORT_BASE)
    scen["workloads"] = [{"load": 0.5, "sizes": "web-search", "rtt": "20ms", "cc": 5}]
    line = _run(tmp_path, scen)
    assert "workloads[0].cc: expected a congestion control name" in line
    assert "untagged" not in line and "CcChoice" not in line


def test_a_workload_rate_too_high_blames_rate(tmp_path):
    scen = copy.deepcopy(SHORT_BASE)
    scen["workloads"] = [{"rate": 1e12, "sizes": "web-search", "rtt": "20ms"}]
    line = _run(tmp_path, scen)
    assert "workloads[0].rate: gives about" in line and "lower the rate" in line


def test_a_wifi_range_error_names_the_key_once(tmp_path):
    line = one_error(invoke_wide("run", ROOT / "scenarios" / "wifi_prague_cubic.toml",
                                 "-o", tmp_path / "r", "--set", "link.wifi.per=1"))
    assert "link.wifi.per: 1 is not a probability in [0, 1)" in line
    assert "per: per:" not in line


def test_force_is_named_as_the_flag(tmp_path):
    (tmp_path / "s.toml").write_text(dumps_toml(SHORT_BASE))
    assert invoke_wide("run", tmp_path / "s.toml", "-o", tmp_path / "r").exit_code == 0
    line = _run(tmp_path, {**SHORT_BASE, "seed": 9})
    assert "pass --force (Python: force=True)" in line


@pytest.mark.skipif(find_binary() is None, reason="l4s-flow is not built (make develop)")
def test_flow_negative_time_names_t():
    p = subprocess.run([sys.executable, "-m", "l4slab.cli", "flow", "-c", "127.0.0.1",
                        "-t", "-5"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert '-t: "-5" must be a duration ≥ 0' in p.stderr + p.stdout


# --- sweeps: the base scenario's error once; grid points labelled -----------------------------

def test_a_base_scenario_error_is_reported_once_as_such():
    res = invoke_wide("sweep", ROOT / "scenarios" / "sweeps" / "coexistence_bdp.toml",
                      "--set", "duration=5s", "-o", "/nonexistent/never")
    line = one_error(res, "the base scenario (with [set] and --set), before any grid value: "
                          'warmup: "5s" is not shorter than duration "5s"')
    assert "grid point" not in line and "{" not in line


def test_an_unknown_key_in_set_is_the_base_scenarios(tmp_path):
    (tmp_path / "base.toml").write_text(dumps_toml(SHORT_BASE))
    (tmp_path / "sw.toml").write_text('base = "base.toml"\n[grid]\n"aqm.limit" = [10, 20]\n'
                                      '[set]\nbogus = 1\n')
    line = one_error(invoke_wide("sweep", tmp_path / "sw.toml", "-o", tmp_path / "o"),
                     "the base scenario (with [set] and --set)", "bogus: unknown field")
    assert "grid point" not in line


def test_a_grid_point_error_is_labelled_as_reports_label_it(tmp_path):
    (tmp_path / "base.toml").write_text(dumps_toml(SHORT_BASE))
    (tmp_path / "sw.toml").write_text('base = "base.toml"\n[grid]\n'
                                      'aqm = [{ kind = "fifo" }, { kind = "codel", ecn = true }]\n'
                                      '"aqm.limit" = ["0.5bdp", -1]\n')
    one_error(invoke_wide("sweep", tmp_path / "sw.toml", "-o", tmp_path / "o"),
              "grid point fifo · -1: aqm.limit")


# --- one scenario document, refused the same way by run and sweep -----------------------------

@pytest.mark.parametrize(("flow", "needle"), [
    ({"stack": "command", "command": "iperf3 -c {server}", "bytes": 1000},
     'flows[0].bytes: stack = "command" cannot hand it to the program'),
    ({"stack": "command", "command": "iperf3 -c '{server}"},
     "flows[0].command: has no closing ' quote"),
    ({"stack": "kernel", "cc": "rt-prague"},
     'flows[0].stack: "kernel" runs the kernel\'s TCP; cc = "rt-prague"'),
])
def test_combinations_the_emulator_cannot_run_are_refused_by_run_and_sweep(tmp_path, flow,
                                                                          needle):
    scen = copy.deepcopy(SHORT_BASE)
    scen["flows"][0].update(flow)
    assert needle in _run(tmp_path, scen)
    (tmp_path / "sw.toml").write_text('base = "s.toml"\nreplications = 2\n')
    one_error(invoke_wide("sweep", tmp_path / "sw.toml", "-o", tmp_path / "o"), needle)
