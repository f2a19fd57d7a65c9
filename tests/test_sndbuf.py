"""`[[flows]] tcp_wmem`: the send-buffer cap of the TCP model (Linux `tcp_sndbuf_expand`), its
range check, and the emulator's refusal where it cannot be honoured."""

from __future__ import annotations

import pytest

from l4slab.emuflows import _check_tcp_wmem, host_tcp_wmem_max
from l4slab.scenario import ScenarioError


def doc(**flow) -> dict:
    return {"seed": 1, "duration": "1s", "link": {"rate": "10mbit"}, "aqm": {"kind": "fifo"},
            "flows": [{"cc": "cubic", "rtt": "20ms", **flow}]}


def test_tcp_wmem_range_is_checked_by_the_simulator():
    from l4slab.runner import validate

    validate(doc(tcp_wmem=4194304))
    # One page (4096) is the sysctl's floor: below it, one line naming the field and range.
    with pytest.raises(Exception, match=r"flows\[0\]\.tcp_wmem.*4096"):
        validate(doc(tcp_wmem=4095))


def test_emulator_refuses_tcp_wmem_it_cannot_honour():
    with pytest.raises(ScenarioError, match=r"flows\[0\]\.tcp_wmem: .*l4slab flow"):
        _check_tcp_wmem(4194304, "flows[0].tcp_wmem", kernel=False)
    host = host_tcp_wmem_max()
    if host is not None:
        _check_tcp_wmem(host, "flows[0].tcp_wmem", kernel=True)
        with pytest.raises(ScenarioError, match=f"host's net.ipv4.tcp_wmem max {host}"):
            _check_tcp_wmem(host + 1, "flows[0].tcp_wmem", kernel=True)
