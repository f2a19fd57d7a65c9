"""`l4slab emulate`: errors before the emulator runs, and (as root) real runs through it that
end in a standard run directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EMU_BIN = ROOT / "target" / "release" / "l4s-emu"


def l4slab(*args: str, env: dict[str, str] | None = None,
           timeout: float = 60) -> subprocess.CompletedProcess[str]:
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "l4slab.cli", "emulate", *args],
                          capture_output=True, text=True, env=e, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def need_root(*tools: str) -> None:
    """Skip (or, with L4SLAB_REQUIRE_ROOT_TESTS=1, fail) without root, TUN, the binary or tools."""
    import shutil

    missing = []
    if os.geteuid() != 0:
        missing.append("root")
    if not Path("/dev/net/tun").exists():
        missing.append("/dev/net/tun")
    if not EMU_BIN.exists():
        missing.append(f"{EMU_BIN} (cargo build --release -p l4s-emu)")
    missing += [t for t in tools if shutil.which(t) is None]
    if missing:
        msg = "needs " + ", ".join(missing)
        if os.environ.get("L4SLAB_REQUIRE_ROOT_TESTS") == "1":
            pytest.fail(msg + " (L4SLAB_REQUIRE_ROOT_TESTS=1 turns this skip into a failure)")
        pytest.skip(msg)


def test_missing_binary_is_one_line_and_exit_2():
    r = l4slab("--", "true", env={"L4SLAB_EMU_BIN": "/nonexistent/l4s-emu"})
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0, r.stderr
    assert "L4SLAB_EMU_BIN=/nonexistent/l4s-emu is not an executable file" in r.stderr
    assert "Traceback" not in r.stderr


def test_existing_output_is_never_overwritten(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "summary.json").write_text("{}")
    r = l4slab("-o", str(out), "--", "true",
               env={"L4SLAB_EMU_BIN": str(EMU_BIN)} if EMU_BIN.exists() else None)
    assert r.returncode == 2, r.stderr
    assert "exists and is not empty" in r.stderr
    assert (out / "summary.json").read_text() == "{}"


def test_bad_flag_names_the_flag(tmp_path):
    if not EMU_BIN.exists():
        pytest.skip(f"needs {EMU_BIN}")
    r = l4slab("--rate", "fast", "-o", str(tmp_path / "x"), "--", "true")
    assert r.returncode == 2
    assert "--rate" in r.stderr and "Traceback" not in r.stderr


def test_a_root_run_ends_in_a_standard_run_directory(tmp_path):
    need_root("iperf3")
    out = tmp_path / "run"
    # The client also writes one row as an `l4slab flow` sender would ($L4SLAB_FLOW_DIR).
    flow_row = ("printf 't_s,flow,cc,delivered_bytes,tput_mbps,cwnd_pkts,srtt_ms,pacing_mbps,"
                "ce_acked\\n0.5,udp 10.77.0.1:40000>10.77.0.2:5201,prague,1000,8.0,10,"
                "21.0,8.5,3\\n0.5,udp 10.77.0.1:40001>10.77.0.2:5201,dctcp,1000,8.0,10,"
                "21.0,8.5,3\\n' > $L4SLAB_FLOW_DIR/flow-1.csv")
    r = l4slab("-o", str(out), "--quiet", "--rate", "20mbit", "--delay", "10ms", "--aqm",
               "dualpi2", "--server", "exec iperf3 -s -1 >/dev/null", "--", "sh", "-c",
               f"iperf3 -c $L4SLAB_SERVER -t 2 >/dev/null && {flow_row}")
    assert r.returncode == 0, r.stderr
    assert f"run directory {out}" in r.stderr
    for f in ("samples.parquet", "flows.parquet", "summary.json", "scenario.toml",
              "report.html", "throughput.png"):
        assert (out / f).exists(), f
    s = json.loads((out / "summary.json").read_text())
    assert s["emulator"]["primary_direction"] == "uplink"
    assert s["emulator"]["offload"] is True  # TUN offloads are on unless --no-offload
    assert [q["name"] for q in s["queues"]] == ["L", "C"]
    assert s["lateness_us"]["p99"] is not None and s["lateness_us"]["p50"] >= 0
    tput = sum(f["tput_mbps"] for f in s["flows"])
    assert 0.8 * 20 <= tput <= 20.0, tput
    import pandas as pd

    flows = pd.read_parquet(out / "flows.parquet")
    row = flows[flows["cc"] == "prague"]
    assert len(row) == 1 and row["class"].iloc[0] == "L4S" and row["srtt_ms"].iloc[0] == 21.0
    # DCTCP asks for classic ECN (ECT(0)) unless told otherwise: Classic, as the simulator
    # classifies it.
    row = flows[flows["cc"] == "dctcp"]
    assert len(row) == 1 and row["class"].iloc[0] == "Classic"
    samples = pd.read_parquet(out / "samples.parquet")
    assert set(samples["queue"].astype(str)) == {"L", "C"}
    # The front end's own readers work on it unchanged.
    r2 = subprocess.run([sys.executable, "-m", "l4slab.cli", "summary", str(out)],
                        capture_output=True, text=True, timeout=60)
    assert r2.returncode == 0, r2.stderr
    assert "dualpi2" in r2.stdout


def test_exit_status_and_refusal_pass_through(tmp_path):
    need_root("setpriv")
    r = l4slab("-o", str(tmp_path / "a"), "--quiet", "--", "sh", "-c", "exit 5")
    assert r.returncode == 5, r.stderr
    assert (tmp_path / "a" / "summary.json").exists()
    # Unprivileged: the emulator's one-line refusal, exit 2, no traceback.
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        str(EMU_BIN), "--", "true"], capture_output=True, text=True, timeout=30)
    if oct(Path("/dev/net/tun").stat().st_mode & 0o006) != oct(0o006):
        assert r.returncode == 2 and "Traceback" not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_sweep_runs_each_grid_point_on_the_emulator(tmp_path):
    need_root("ping")
    base = tmp_path / "base.toml"
    base.write_text('[link]\nrate = "10mbit"\n[aqm]\nkind = "fifo"\n[emulator]\ndelay = "5ms"\n')
    sweep = tmp_path / "sw.toml"
    sweep.write_text('base = "base.toml"\nreplications = 1\n[grid]\n'
                     '"emulator.delay" = ["5ms", "15ms"]\n')
    out = tmp_path / "out"
    r = l4slab("--sweep", str(sweep), "-o", str(out), "--quiet", "--", "sh", "-c",
               "ping -n -q -c 3 -i 0.05 $L4SLAB_SERVER >/dev/null || true")
    assert r.returncode == 0, r.stderr
    # Each run is named with its grid point as the sweep reports label it (point_label).
    assert "p000-r00: 5ms\n" in r.stderr and "p001-r00: 15ms\n" in r.stderr, r.stderr
    runs = sorted(p.name for p in (out / "runs").iterdir())
    assert runs == ["p000-r00", "p001-r00"]
    delays = []
    for name in runs:
        s = json.loads((out / "runs" / name / "summary.json").read_text())
        delays.append(s["scenario"]["emulator"]["delay"])
        params = json.loads((out / "runs" / name / "params.json").read_text())
        assert params["params"]["emulator.delay"] == s["scenario"]["emulator"]["delay"]
    assert delays == ["5ms", "15ms"]
    # Rerun: both finished, both kept (the simulator sweep's resume rule).
    r = l4slab("--sweep", str(sweep), "-o", str(out), "--quiet", "--", "sh", "-c",
               "ping -n -q -c 3 -i 0.05 $L4SLAB_SERVER >/dev/null || true")
    assert r.returncode == 0 and "resuming: all 2 runs already finished in" in r.stderr, \
        r.stderr
    assert (out / "sweep.parquet").exists()
    assert json.loads((out / "sweep.json").read_text())["engine"] == "emulator"


def test_dashboard_shows_each_direction_and_queue():
    from rich.console import Console

    from l4slab.emulate import dashboard_table

    line = {"t_s": 2.5, "dirs": [
        {"name": "uplink", "l4s_mbps": 24.5, "classic_mbps": 23.25,
         "queues": [{"name": "L", "sojourn_ms": 0.4, "backlog_pkts": 1},
                    {"name": "C", "sojourn_ms": 15.2, "backlog_pkts": 60}],
         "p_prime": 0.125, "marks_per_s": 310.0, "drops_per_s": 12.0}]}
    con = Console(record=True, width=120)
    con.print(dashboard_table(line))
    text = con.export_text()
    for needle in ("t=2.5s", "uplink", "24.50", "23.25", "L 0.40", "C 15.20", "0.125", "310",
                   "12"):
        assert needle in text, (needle, text)


def test_pcap_holds_every_verdict_of_both_directions_with_ecn_bits(tmp_path):
    """`--pcap`: tshark reads the trace; one frame per AQM verdict of each direction (the
    emulator's own per-packet rows, in the same order and at the same instants), the IP ECN
    field as the packet left the AQM (CE exactly on the marks), and an existing file refused."""
    need_root("iperf3", "tshark")
    scen = tmp_path / "s.toml"
    scen.write_text("[output]\npackets = true\n")
    pcap, out = tmp_path / "t.pcapng", tmp_path / "run"
    # Classic ECN on the client (a namespace starts with tcp_ecn = 2, server side only) so the
    # data carries ECT(0) and DualPI2's classic queue can mark it.
    r = l4slab(str(scen), "-o", str(out), "--quiet", "--rate", "20mbit", "--delay", "5ms",
               "--aqm", "dualpi2", "--pcap", str(pcap), "--server",
               "exec iperf3 -s -1 >/dev/null", "--", "sh", "-c",
               "sysctl -qw net.ipv4.tcp_ecn=1; iperf3 -c $L4SLAB_SERVER -t 1 >/dev/null")
    assert r.returncode == 0, r.stderr
    rows = subprocess.run(
        ["tshark", "-r", str(pcap), "-T", "fields", "-e", "frame.interface_id", "-e",
         "frame.time_epoch", "-e", "ip.dsfield.ecn", "-e", "frame.comment"],
        capture_output=True, text=True, check=True, timeout=120).stdout.splitlines()
    frames = [x.split("\t") for x in rows]
    total = 0
    for iface, name in enumerate(("uplink", "downlink")):
        pk = json.loads((out / "raw" / f"{name}.json").read_text())["packets"]
        mine = [f for f in frames if int(f[0]) == iface]
        assert len(mine) == len(pk["t_s"]), name
        total += len(mine)
        # Wall-clock timestamps: the run's start plus the packet's own time, for every frame.
        offs = [float(f[1]) - t for f, t in zip(mine, pk["t_s"], strict=True)]
        assert max(offs) - min(offs) < 5e-6, name
        for f, code in zip(mine, pk["verdict"], strict=True):
            ecn, comment, v = int(f[2]), f[3], ("pass", "mark", "drop")[int(code)]
            assert comment.startswith(f"verdict={v} "), (comment, v)
            # CE exactly on the marks (senders never send CE; a drop keeps its arrival codepoint).
            assert (ecn == 3) == (v == "mark"), (ecn, v)
    assert total == len(frames) and total > 100
    up = [int(f[2]) for f in frames if int(f[0]) == 0]
    assert up.count(2) > 0.9 * len(up)  # the data went out ECT(0)
    r = l4slab("-o", str(tmp_path / "run2"), "--quiet", "--pcap", str(pcap), "--", "true")
    assert r.returncode == 2 and "exists" in r.stderr, r.stderr


def test_a_wifi_run_has_the_wifi_block_and_driver_rows(tmp_path):
    need_root("iperf3")
    scen = tmp_path / "s.toml"
    scen.write_text('warmup = "1s"\n[link]\nmodel = "wifi"\n[link.wifi]\nstandard = "ac"\n'
                    'mcs = 3\nwidth = 20\n[aqm]\nkind = "fifo"\nlimit = 1000\n'
                    '[emulator]\ndelay = "5ms"\n')
    out = tmp_path / "run"
    # Cubic from the server (the access point) for 2 s: the downlink is the busier direction.
    r = l4slab("-o", str(out), "--quiet", str(scen), "--server",
               "exec iperf3 -s -1 >/dev/null", "--", "sh", "-c",
               "iperf3 -c $L4SLAB_SERVER -R -t 2 >/dev/null")
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["emulator"]["primary_direction"] == "downlink"
    # The default access point is mac80211's (as the simulator's): the TXQ row beside the driver's.
    assert s["wifi"]["ap"] == "mac80211"
    assert [q["name"] for q in s["queues"]] == ["single", "txq/0", "driver"]
    w = s["wifi"]
    assert 0.0 < w["airtime"]["utilisation"] <= 1.0
    assert w["driver"]["limit"] == {"airtime_ms": 12.0}  # mac80211's AQL default here
    assert w["downlink"]["txops"] > 0 and w["downlink"]["delivered"] > 0
    import pandas as pd

    d = pd.read_parquet(out / "samples.parquet")
    drv = d[d["queue"] == "driver"]
    assert len(drv) > 10 and drv["backlog_pkts"].max() > 0
    # The summary's after-warmup maximum is one of the rows' backlogs.
    after = drv[drv["t_s"] >= 1.0]["backlog_pkts"]
    assert w["driver"]["stats"]["backlog_pkts"]["max"] == after.max()
