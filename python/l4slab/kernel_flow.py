"""The kernel's own TCP as a scenario-mode sender/receiver: ordinary TCP sockets with
TCP_CONGESTION, TCP_MAXSEG and the namespace's net.ipv4.tcp_ecn, sampled with TCP_INFO.

Follows Linux `tcp_get_info()` (net/ipv4/tcp.c) and `struct tcp_info` (include/uapi/linux/
tcp.h) for the sampled fields. Standard library only: the emulator's launcher runs it as
`python3 kernel_flow.py client ...` in the client namespace and `... server ...` in the server
namespace. The client writes $L4SLAB_FLOW_DIR/flow-<pid>.csv with the columns of `l4slab
flow`'s rows (the simulator's names and units) plus the kernel's own counters:

- delivered_bytes = tcpi_bytes_acked − 1 (it counts the SYN's sequence number): payload
  acknowledged (the simulator's goodput count, headers excluded), cumulative;
- cwnd_pkts = tcpi_snd_cwnd (segments), srtt_ms = tcpi_rtt / 1000, pacing_mbps =
  tcpi_pacing_rate·8/1e6 (bytes/s in the kernel);
- ce_acked = tcpi_delivered_ce: packets delivered with ECE set on their ACK (classic ECN
  repeats ECE until the sender's CWR, so this counts more than the CE marks themselves);
- retransmits = tcpi_total_retrans, delivery_mbps = tcpi_delivery_rate·8/1e6, bytes_sent
  (payload incl. retransmissions), snd_mss, ecn_ok (TCPI_OPT_ECN negotiated), app_limited
  (tcpi_delivery_rate_app_limited), busy_us / rwnd_limited_us / sndbuf_limited_us (time the
  kernel spent sending / limited by the receive window / by the send buffer), realtime
  (SCHED_FIFO granted).
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import socket
import struct
import sys
import threading
import time
from pathlib import Path

#: struct tcp_info up to tcpi_delivered_ce (Linux ≥ 4.18): the fields read here.
_TCP_INFO_LEN = 232
_OFF = {"options": (5, "B"), "snd_mss": (16, "I"), "rtt_us": (68, "I"),
        "snd_cwnd": (80, "I"), "total_retrans": (100, "I"), "pacing_rate": (104, "Q"),
        "bytes_acked": (120, "Q"), "unacked": (24, "I"), "delivery_rate": (160, "Q"),
        "delivered": (192, "I"), "delivered_ce": (196, "I"), "bytes_sent": (200, "Q"),
        "app_limited": (7, "B"), "busy_us": (168, "Q"), "rwnd_limited_us": (176, "Q"),
        "sndbuf_limited_us": (184, "Q")}
#: tcpi_options bit: ECN was negotiated on this connection.
TCPI_OPT_ECN = 8
#: Linux's TCP_CONGESTION / TCP_MAXSEG / TCP_INFO option numbers (socket module names them
#: where it knows them).
TCP_CONGESTION = getattr(socket, "TCP_CONGESTION", 13)
TCP_INFO = getattr(socket, "TCP_INFO", 11)
#: TCP timestamps add 12 option bytes to every segment: TCP_MAXSEG counts them, the scenario's
#: `mss` (payload per segment) does not.
TS_OPTION_BYTES = 12
#: The client keeps trying to connect this long (the server may still be starting).
CONNECT_WAIT_S = 3.0
CSV_HEADER = ("t_s,flow,cc,delivered_bytes,tput_mbps,cwnd_pkts,srtt_ms,pacing_mbps,ce_acked,"
              "retransmits,delivery_mbps,bytes_sent,snd_mss,ecn_ok,app_limited,busy_us,"
              "rwnd_limited_us,sndbuf_limited_us,realtime")
#: SCHED_FIFO priority asked for (as `l4slab flow` and the emulator do when permitted): on a
#: busy host a descheduled sender leaves the socket empty, the flow turns application-limited
#: and Cubic/Reno stop growing cwnd (tcp_is_cwnd_limited), which no model does.
RT_PRIORITY = 10

_stop = False


def _on_signal(_sig: int, _frame: object) -> None:
    global _stop
    _stop = True


def tcp_info(sock: socket.socket) -> dict[str, int]:
    """The fields of `_OFF` from getsockopt(TCP_INFO)."""
    raw = sock.getsockopt(socket.IPPROTO_TCP, TCP_INFO, _TCP_INFO_LEN)
    raw = raw.ljust(_TCP_INFO_LEN, b"\0")
    return {k: struct.unpack_from("=" + f, raw, off)[0] for k, (off, f) in _OFF.items()}


def set_tcp_ecn(value: int) -> None:
    """net.ipv4.tcp_ecn of this network namespace (1: request ECN, 2: only accept it)."""
    p = Path("/proc/sys/net/ipv4/tcp_ecn")
    if p.read_text().strip() != str(value):
        p.write_text(f"{value}\n")


def realtime() -> bool:
    """Ask for SCHED_FIFO; True when granted."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(RT_PRIORITY))
        return True
    except (OSError, AttributeError):
        return False


def _now_s(t0_ns: int) -> float:
    return (time.clock_gettime_ns(time.CLOCK_MONOTONIC) - t0_ns) / 1e9


def _connect(host: str, port: int, cc: str, mss: int | None) -> socket.socket:
    deadline = time.monotonic() + CONNECT_WAIT_S
    while True:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, cc.encode())
        if mss is not None:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, mss + TS_OPTION_BYTES)
        try:
            s.connect((host, port))
            return s
        except (ConnectionRefusedError, TimeoutError):
            s.close()
            if time.monotonic() >= deadline or _stop:
                raise
            time.sleep(0.02)


def client(a: argparse.Namespace) -> int:
    """Send for `a.time` seconds or `a.bytes` bytes; one CSV row per sample interval."""
    t0_ns = int(os.environ.get("L4SLAB_T0_NS") or time.clock_gettime_ns(time.CLOCK_MONOTONIC))
    si_s = int(os.environ.get("L4SLAB_SAMPLE_INTERVAL_NS") or 16_000_000) / 1e9
    flow_dir = Path(os.environ.get("L4SLAB_FLOW_DIR") or ".")
    rt = realtime()
    if a.tcp_ecn is not None:
        set_tcp_ecn(a.tcp_ecn)
    s = _connect(a.server, a.port, a.cc, a.mss)
    local, lport = s.getsockname()[:2]
    key = f"tcp {local}:{lport}>{a.server}:{a.port}"
    s.setblocking(False)
    buf = bytes(256 * 1024)
    start = _now_s(t0_ns)
    end = start + a.time if a.bytes is None else float("inf")
    if a.end_s is not None:
        # The flow's `stop` on the emulator's clock: a sender that started late (interpreter
        # start-up, connect) still stops when the scenario says, as the simulator's does.
        end = min(end, a.end_s)
    left = a.bytes
    out = (flow_dir / f"flow-{os.getpid()}.csv").open("x")
    out.write(CSV_HEADER + "\n")
    prev_t, prev_b = start, 0
    nxt = (int(start / si_s) + 1) * si_s
    closed = False
    try:
        while not _stop:
            now = _now_s(t0_ns)
            if now >= nxt:
                i = tcp_info(s)
                # tcpi_bytes_acked counts sequence space (tcp_snd_una_update): the SYN's
                # number, and the FIN's once the closed sender has nothing unacknowledged.
                fin = 1 if closed and i["unacked"] == 0 else 0
                acked = max(0, i["bytes_acked"] - 1 - fin)
                dt = now - prev_t
                tput = (acked - prev_b) * 8 / dt / 1e6 if dt > 0 else 0.0
                out.write(f"{now:.6f},{key},{a.model_cc},{acked},{tput:.6f},"
                          f"{i['snd_cwnd']},{i['rtt_us'] / 1e3:.3f},"
                          f"{i['pacing_rate'] * 8 / 1e6:.6f},{i['delivered_ce']},"
                          f"{i['total_retrans']},{i['delivery_rate'] * 8 / 1e6:.6f},"
                          f"{i['bytes_sent']},{i['snd_mss']},"
                          f"{int(bool(i['options'] & TCPI_OPT_ECN))},{i['app_limited'] & 1},"
                          f"{i['busy_us']},{i['rwnd_limited_us']},{i['sndbuf_limited_us']},"
                          f"{int(rt)}\n")
                prev_t, prev_b = now, acked
                nxt = (int(now / si_s) + 1) * si_s
                if closed and i["unacked"] == 0:
                    break
            if not closed and (now >= end or left == 0):
                s.shutdown(socket.SHUT_WR)  # FIN after the queued data
                closed = True
            wait = max(0.0, nxt - _now_s(t0_ns))
            if closed:
                time.sleep(wait)
                continue
            _, w, _ = select.select([], [s], [], min(wait, max(0.0, end - now)))
            if w:
                n = len(buf) if left is None else min(len(buf), left)
                try:
                    sent = s.send(buf[:n] if n < len(buf) else buf)
                except BlockingIOError:
                    continue
                if left is not None:
                    left -= sent
    finally:
        out.flush()
        out.close()
        s.close()
    return 0


def _drain(c: socket.socket) -> None:
    with c:
        while c.recv(1 << 20):
            pass


def server(a: argparse.Namespace) -> int:
    """Accept connections on `a.port` and discard what they send, until signalled."""
    realtime()  # the receiver's threads too: a late reader shrinks the receive window
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", a.port))
    ls.listen(128)
    ls.settimeout(0.2)
    while not _stop:
        try:
            c, _ = ls.accept()
        except TimeoutError:
            continue
        except OSError:
            if _stop:
                break
            raise
        threading.Thread(target=_drain, args=(c,), daemon=True).start()
    return 0


def main(argv: list[str]) -> int:
    """`kernel_flow.py client ...` or `kernel_flow.py server --port P`; the exit status."""
    ap = argparse.ArgumentParser(prog="kernel_flow.py")
    sub = ap.add_subparsers(dest="mode", required=True)
    c = sub.add_parser("client")
    c.add_argument("--server", required=True)
    c.add_argument("--port", type=int, required=True)
    c.add_argument("--cc", required=True, help="the kernel's TCP_CONGESTION name")
    c.add_argument("--model-cc", required=True, help="the scenario's cc (the rows' cc)")
    c.add_argument("--mss", type=int)
    c.add_argument("--bytes", type=int)
    c.add_argument("--time", type=float, default=10.0)
    c.add_argument("--end-s", type=float,
                   help="stop sending at this time on the emulator's clock (L4SLAB_T0_NS)")
    c.add_argument("--tcp-ecn", type=int, choices=(0, 1, 2))
    s = sub.add_parser("server")
    s.add_argument("--port", type=int, required=True)
    a = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    try:
        return client(a) if a.mode == "client" else server(a)
    except OSError as e:
        print(f"kernel_flow: {a.mode}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
