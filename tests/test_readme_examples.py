"""The README's examples run as written: the Python API block as a script (sweep workers
re-import it) and the Quick tour's simulator commands, in a scratch directory whose
`scenarios/` holds the shipped files shortened (1 s runs, 3 replications) so the test is cheap;
the example text itself is not changed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from l4slab.scenario import dumps_toml

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _block(after: str, lang: str) -> str:
    """The first ```lang block after the heading or sentence `after`."""
    start = README.index(after)
    m = re.compile(rf"```{lang}\n(.*?)```", re.S).search(README, start)
    assert m, f"no ```{lang} block after {after!r}"
    return m.group(1)


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A working directory with the shipped scenarios, shortened."""
    shutil.copytree(ROOT / "scenarios", tmp_path / "scenarios", symlinks=False)
    pc = tmp_path / "scenarios" / "prague_vs_cubic_50M_40ms.toml"
    data = tomllib.loads(pc.read_text())
    pc.write_text(dumps_toml({**data, "duration": "1s", "warmup": "0.2s"}))
    st = tmp_path / "scenarios" / "sweeps" / "step_thresh_1ms_vs_5ms.toml"
    data = tomllib.loads(st.read_text())
    st.write_text(dumps_toml({**data, "replications": 3}))
    return tmp_path


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["COLUMNS"] = "160"
    return env


def test_quick_tour_simulator_commands_run_as_written(scratch):
    text = _block("## Quick tour", "sh")
    # `make demo` and activating the virtualenv are set-up (test_front_demo.py runs the demo);
    # every other line is an l4slab command, continuation lines included.
    script = "\n".join(ln for ln in text.replace("\\\n", " ").splitlines()
                       if ln.strip().startswith("l4slab "))
    assert script.count("l4slab ") == 6, script
    res = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=scratch, env=_env(),
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    assert (scratch / "results" / "pc5" / "summary.json").exists()
    assert len(list((scratch / "results" / "st" / "runs").iterdir())) == 6
    assert "tput_total" in res.stdout and "sojourn_L" in res.stdout


def test_python_api_example_runs_as_a_script(scratch):
    code = _block("From Python", "python")
    (scratch / "example.py").write_text(code)
    res = subprocess.run([sys.executable, "example.py"], cwd=scratch, env=_env(),
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "aqm.step_thresh" in res.stdout and res.stdout.count(" ok") >= 6, res.stdout
    assert "Traceback" not in res.stderr, res.stderr


def test_an_unguarded_sweep_script_fails_loudly_with_the_guard_advice(scratch):
    """Without the __main__ guard each spawned worker reran the script; the sweep returned
    normally with every run "failed". Now the workers refuse at once and sweep() raises."""
    code = ("import l4slab\n"
            's = l4slab.sweep("scenarios/sweeps/step_thresh_1ms_vs_5ms.toml", '
            'out_dir="results/st", jobs=2)\n'
            'print("returned normally")\n')
    (scratch / "unguarded.py").write_text(code)
    res = subprocess.run([sys.executable, "unguarded.py"], cwd=scratch, env=_env(),
                         capture_output=True, text=True, timeout=600)
    assert res.returncode != 0 and "returned normally" not in res.stdout
    assert "SweepFailed" in res.stderr and 'if __name__ == "__main__":' in res.stderr, \
        res.stderr[-3000:]


def test_readme_run_lines_of_multihop_interactive_and_wifi_run_as_written(tmp_path):
    """Every `l4slab run scenarios/…` line of the README outside the Quick tour (multi-hop,
    video, web, Wi-Fi) runs as written, on the shipped scenarios shortened to 3 s, and writes
    the block its section promises."""
    rest = README[README.index("## Scenario format"):]
    lines = re.findall(r"^l4slab run scenarios/\S+ -o results/\S+", rest, re.M)
    lines += re.findall(r"`(l4slab run scenarios/\S+ -o results/[^`\s]+)`", rest)
    assert len(lines) == 4, lines
    shutil.copytree(ROOT / "scenarios", tmp_path / "scenarios", symlinks=False)
    promised = {"parking": "hops", "video": "rpm", "web": "workloads", "wifi": "wifi"}
    for line in lines:
        argv = line.split()
        scen = tmp_path / argv[2]
        data = tomllib.loads(scen.read_text())
        scen.write_text(dumps_toml({**data, "duration": "3s", "warmup": "0.5s"}))
        res = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=_env(),
                             capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, line + "\n" + res.stdout + res.stderr
        out = tmp_path / argv[4]
        summary = json.loads((out / "summary.json").read_text())
        assert promised[out.name] in summary, (line, sorted(summary))


def _printed(pattern: str) -> list[str]:
    """The numbers the README prints in its Interactive-traffic paragraph, as written."""
    text = " ".join(README[README.index("The video run ("):README.index("Models, keys, closed")]
                    .split())
    m = re.search(pattern, text)
    assert m, f"README no longer prints {pattern!r}"
    return list(m.groups())


def _close(actual: float, printed: str, what: str) -> None:
    """`actual` rounds to `printed` at the precision the README states (half its last digit)."""
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    assert abs(actual - float(printed)) <= 0.5 * 10 ** -decimals + 1e-12, \
        f"{what}: README prints {printed}, the run gives {actual}"


def test_readme_video_and_web_figures_are_what_the_shipped_scenarios_give(tmp_path):
    """The figures the README prints beside the video and web run lines are parsed from
    README.md and compared with a rerun of the shipped scenarios, full length (the video run
    needs ~3 s of CPU, the web run ~4 s), so the README and the code cannot drift apart."""
    video, web = tmp_path / "video", tmp_path / "web"
    for scen, out in (("video_next_to_download.toml", video), ("web_workload.toml", web)):
        res = subprocess.run(["l4slab", "run", str(ROOT / "scenarios" / scen),
                              "-o", str(out)], env=_env(), capture_output=True, text=True,
                             timeout=600)
        assert res.returncode == 0, res.stdout + res.stderr
        assert "warning" not in res.stdout + res.stderr, res.stdout + res.stderr
    v = json.loads((video / "summary.json").read_text())
    fr = v["flows"][0]["frames"]
    mbps, p50, p99, miss, rpm_l, rpm_c, rtt_l, rtt_c = _printed(
        r"`flows\[0\]\.frames`: ([\d.]+) Mb/s, frame latency p50 ([\d.]+) ms / p99 ([\d.]+) ms, "
        r"([\d.]+) % deadline misses, and `rpm`: L4S (\d+), Classic (\d+) "
        r"\(probe RTT p50 ([\d.]+) vs ([\d.]+) ms\)")
    _close(fr["bitrate_mbps"], mbps, "video Mb/s")
    _close(fr["latency_ms"]["p50"], p50, "frame latency p50")
    _close(fr["latency_ms"]["p99"], p99, "frame latency p99")
    _close(100 * fr["miss_ratio"], miss, "deadline misses %")
    _close(v["rpm"]["L4S"], rpm_l, "L4S RPM")
    _close(v["rpm"]["Classic"], rpm_c, "Classic RPM")
    probe = {p["class"]: p["rtt_ms"]["p50"] for p in v["probes"]}
    _close(probe["L4S"], rtt_l, "L4S probe RTT p50")
    _close(probe["Classic"], rtt_c, "Classic probe RTT p50")
    w = json.loads((web / "summary.json").read_text())["workloads"][0]
    dur, load, lo, hi, n, s50, s99 = _printed(
        r"The web run \((\d+) s, offered load ([\d.]+), 95 % CI ([\d.]+)–([\d.]+)\) reports "
        r"`workloads\[0\]`: (\d+) transfers, slowdown p50 ([\d.]+) / p99 ([\d.]+)")
    assert tomllib.loads((ROOT / "scenarios" / "web_workload.toml").read_text())["duration"] \
        == f"{dur}s"
    _close(w["offered_load"], load, "offered load")
    _close(w["offered_load_ci95"][0], lo, "offered load CI low")
    _close(w["offered_load_ci95"][1], hi, "offered load CI high")
    assert w["offered_load_ci95"][0] <= w["target_load"] <= w["offered_load_ci95"][1]
    assert w["flows"] == int(n)
    _close(w["slowdown"]["p50"], s50, "slowdown p50")
    _close(w["slowdown"]["p99"], s99, "slowdown p99")
