"""`l4slab flow` from the Python CLI: finds the l4s-flow binary and hands it the arguments."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from l4slab.flow import ENV_VAR, find_binary

CLI = [sys.executable, "-m", "l4slab.cli", "flow"]

needs_binary = pytest.mark.skipif(find_binary() is None,
                                  reason="l4s-flow is not built (make develop builds it)")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
    env.update(extra)
    return env


@needs_binary
def test_flow_transfers_over_loopback(tmp_path: Path) -> None:
    srv = subprocess.Popen([*CLI, "-s", "-1", "-p", "0", "-B", "127.0.0.1", "-i", "0"],
                           stdout=subprocess.PIPE, text=True, env=_env())
    try:
        assert srv.stdout is not None
        first = srv.stdout.readline()
        port = first.strip().rsplit(":", 1)[1].split()[0]
        out = tmp_path / "r.json"
        res = subprocess.run([*CLI, "-c", "127.0.0.1", "-p", port, "-n", "200000", "-q",
                              "--json", str(out)], capture_output=True, text=True,
                             env=_env(), timeout=30)
        assert res.returncode == 0, res.stderr
        r = json.loads(out.read_text())
        s = r["streams"][0]
        assert r["cc"] == "prague"
        assert s["bytes_acked"] == 200000
        assert s["receiver"]["delivered_bytes"] == 200000
        assert s["receiver"]["ect1_pkts"] == s["receiver"]["data_pkts"] > 0
        assert srv.wait(timeout=10) == 0
    finally:
        srv.kill()
        srv.wait()


@needs_binary
def test_flow_bad_flag_is_one_line_and_exit_2() -> None:
    res = subprocess.run([*CLI, "-c", "127.0.0.1", "--cc", "vegas"], capture_output=True,
                         text=True, env=_env(), timeout=30)
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert "--cc" in res.stderr and "prague" in res.stderr


def test_flow_missing_binary_is_one_clear_error(tmp_path: Path) -> None:
    res = subprocess.run([*CLI, "-s"], capture_output=True, text=True,
                         env=_env(**{ENV_VAR: str(tmp_path / "nope")}), timeout=30)
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    assert ENV_VAR in res.stderr


def test_flow_binary_from_env_is_used(tmp_path: Path) -> None:
    fake = tmp_path / "fake-flow"
    fake.write_text("#!/bin/sh\necho \"fake $@\"\nexit 7\n")
    fake.chmod(0o755)
    res = subprocess.run([*CLI, "-c", "h", "-t", "1"], capture_output=True, text=True,
                         env=_env(**{ENV_VAR: str(fake)}), timeout=30)
    assert res.returncode == 7
    assert res.stdout.strip() == "fake -c h -t 1"
