"""Issue 35, "Runs lost" and its messages: a signal to `l4slab emulate` in scenario mode keeps
the run directory, a SIGKILLed wrapper leaves no DIR/flows/ or /tmp/l4slab-emu-*, a COMMAND
that does not exist leaves no run directory, `crosscheck` refuses another command's -o and
exits 130 on Ctrl-C, an unbalanced quote in a command template is one line, `--set` with a
COMMAND says why."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_emulate import EMU_BIN, ROOT, l4slab, need_root  # noqa: E402
from test_emulate_signals import wait_for  # noqa: E402

SCEN = ROOT / "scenarios" / "prague_vs_cubic_12M_20ms.toml"
CLI = [sys.executable, "-m", "l4slab.cli"]


def _rows_until(out: Path, t_s: float) -> bool:
    """Both senders have written rows up to `t_s` (scenario mode is measuring)."""
    files = list((out / "flows").glob("flow-*.csv"))
    if len(files) < 2:
        return False
    try:
        return all(float(f.read_text().splitlines()[-2].split(",")[0]) >= t_s for f in files)
    except (OSError, IndexError, ValueError):
        return False


def _scenario_run(out: Path, duration: str = "8s") -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CLI, "emulate", str(SCEN), "--quiet", "--set", f"duration={duration}", "--set",
         "warmup=0.5s", "-o", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, stdin=subprocess.DEVNULL, start_new_session=True)


def test_a_senders_cut_short_last_row_is_not_read(tmp_path):
    # A sender stopped by the run's end or a signal leaves a partial last line; read as a row
    # it gave NaN counters ("cannot convert float NaN to integer": the run directory was lost).
    from l4slab.emulate import _flow_csvs

    d = tmp_path / "flows"
    d.mkdir()
    (d / "flow-7.csv").write_text(
        "t_s,flow,cc,delivered_bytes,tput_mbps,cwnd_pkts,srtt_ms,pacing_mbps,ce_acked\n"
        "0.016,udp a>b,prague,1428,0.7,10,20.5,5.0,0\n"
        "0.032,udp a>b,prague,2856,0.7,11,20.6,5.0,1\n"
        "0.048,")
    df = _flow_csvs(d)
    assert list(df["t_s"]) == [0.016, 0.032]
    assert not df.drop(columns="_pid").isna().any().any()
    assert list(df["_pid"]) == [7, 7]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP],
                         ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_in_scenario_mode_keeps_the_run_directory(tmp_path, sig):
    need_root()
    out = tmp_path / "run"
    p = _scenario_run(out)
    assert wait_for(lambda: _rows_until(out, 1.5), 60), "the senders did not start"
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 128 + sig, err
    assert "could not write" not in err and "Traceback" not in err, err
    assert f"stopped by {signal.Signals(sig).name}" in err, err
    s = json.loads((out / "summary.json").read_text())
    assert [f["cc"] for f in s["flows"]] == ["prague", "cubic"]
    assert all(f["tput_mbps"] > 0 for f in s["flows"]), s["flows"]
    assert pd.read_parquet(out / "flows.parquet")["delivered_bytes"].notna().all()


def test_sigkill_of_the_wrapper_in_scenario_mode_leaves_nothing(tmp_path):
    # The janitor (its own session) sees the wrapper's pipe close without "done", waits for
    # l4s-emu to die with the wrapper, and removes the unfinished run and the scratch dir.
    need_root()
    tmp = Path(tempfile.gettempdir())
    before = set(tmp.glob("l4slab-emu-*"))
    out = tmp_path / "run"
    p = _scenario_run(out)
    assert wait_for(lambda: _rows_until(out, 0.5), 60), "the senders did not start"
    assert set(tmp.glob("l4slab-emu-*")) - before, "no scratch directory while running"
    p.kill()
    p.wait(timeout=10)
    assert wait_for(lambda: not out.exists() and not set(tmp.glob("l4slab-emu-*")) - before,
                    15), (out.exists() and list(out.iterdir()),
                          set(tmp.glob("l4slab-emu-*")) - before)
    # The same -o runs again.
    r = l4slab("-o", str(out), "--quiet", "--", "true")
    assert r.returncode == 0, r.stderr


def test_a_command_that_does_not_exist_leaves_no_run_directory(tmp_path):
    need_root()
    out = tmp_path / "run"
    r = l4slab("-o", str(out), "--quiet", "--", "no-such-program-l4slab")
    assert r.returncode == 127, r.stderr
    assert r.stderr.strip() == "l4s-emu: error: cannot run the client command " \
        "`no-such-program-l4slab`: no such executable on PATH; nothing was run", r.stderr
    assert not out.exists()


def test_set_with_a_command_says_it_is_scenario_modes(tmp_path):
    if not EMU_BIN.exists():
        pytest.skip(f"needs {EMU_BIN}")
    r = l4slab(str(SCEN), "--set", "link.rate=10mbit", "-o", str(tmp_path / "r"), "--", "true")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "l4slab: error: --set: only in scenario mode (a scenario file with [[flows]], no "
        "COMMAND, no --server or --host); this run has a COMMAND after --: set the bottleneck "
        "with flags (--rate 20mbit, --delay 10ms, --aqm-arg step_thresh=5ms) or in the "
        "scenario file"]
    assert not (tmp_path / "r").exists()


QUOTE = "iperf3 -c '{server}"


def test_an_unbalanced_quote_in_a_command_template_is_one_line(tmp_path):
    scen = tmp_path / "s.toml"
    scen.write_text('duration = "3s"\n[link]\nrate = "10mbit"\n[[flows]]\ncc = "cubic"\n'
                    f'rtt = "20ms"\nstack = "command"\ncommand = "{QUOTE}"\n')
    r = l4slab(str(scen), "-o", str(tmp_path / "r"), "--quiet")
    assert r.returncode == 2, r.stderr
    # The scenario is refused while it is loaded, as `run` and `sweep` refuse it (l4s-sim's
    # stack check), before the emulator's own template check is reached.
    assert r.stderr.strip().splitlines() == [
        f"l4slab: error: {scen}: flows[0].command: has no closing ' quote; expected every "
        "quoted word to close"], r.stderr
    r = subprocess.run([*CLI, "crosscheck", str(SCEN), "-n", "2", "--stack", "command",
                        "--command", QUOTE, "-o", str(tmp_path / "x")], capture_output=True,
                       text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [
        f"l4slab: error: --command: \"{QUOTE}\" is not a command line (no closing quotation); "
        "expected a program and its arguments as shell words, e.g. \"iperf3 -c {server} -p "
        "{port}\""], r.stderr
    assert not (tmp_path / "x").exists()


def test_crosscheck_refuses_to_write_into_a_run_directory(tmp_path):
    rd = tmp_path / "run"
    rd.mkdir()
    (rd / "summary.json").write_text("{}")
    r = subprocess.run([*CLI, "crosscheck", str(SCEN), "-n", "2", "-o", str(rd)],
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == f"l4slab: error: -o: {rd} is not empty and holds a run " \
        "directory, not a crosscheck's runs; choose a new output directory (results are never " \
        "overwritten)"
    assert sorted(p.name for p in rd.iterdir()) == ["summary.json"]


def test_crosscheck_exits_130_on_ctrl_c(tmp_path):
    need_root()
    out = tmp_path / "xc"
    p = subprocess.Popen([*CLI, "crosscheck", str(SCEN), "-n", "2", "--set", "duration=20s",
                          "-o", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True, stdin=subprocess.DEVNULL, start_new_session=True)
    stage = out / "emu" / ".run-0.emulating"
    assert wait_for(lambda: _rows_until(stage, 1.0), 90), "the emulated run did not start"
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "Traceback" not in err and "Aborted" not in err, err
    assert err.strip().splitlines()[-1] == \
        f"crosscheck: interrupted; finished runs are kept in {out}", err
    assert (out / "sim" / "run-0" / "summary.json").exists()
