"""`[[flows]] stack` in the emulator's scenario mode: "model" (`l4slab flow`), "kernel" (the
kernel's TCP, `kernel_flow.py`) or "command" (an external program from templates).

Standard library only (the launcher imports it from its own directory). The plan side checks
what this host's kernel offers (`/proc/sys/net/ipv4/tcp_available_congestion_control`) and the
templates' programs; the launcher side builds each sender's argv; the server side is one shell
line starting every receiver the plan needs in the server namespace (the emulator ends all of
them with the namespace).
"""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

#: The kernel's receiver listens here (every kernel flow connects to it; the client's
#: ephemeral port tells the flows apart).
KERNEL_PORT = 5202
#: A command flow gets port COMMAND_PORT_BASE + its flow index as `{port}`.
COMMAND_PORT_BASE = 5300
#: The scenario's cc -> the kernel's TCP_CONGESTION name, where they differ.
KERNEL_CC = {"bbr1": "bbr"}
#: The file listing the congestion controls this kernel can load.
AVAILABLE_CC = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
KERNEL_FLOW = Path(__file__).resolve().with_name("kernel_flow.py")


class StackError(ValueError):
    """A flow's stack cannot run here; the message names the field."""


def kernel_ccs() -> list[str]:
    """The congestion controls this kernel offers (empty when it cannot be read)."""
    try:
        return AVAILABLE_CC.read_text().split()
    except OSError:
        return []


def kernel_cc(cc: str) -> str:
    """The kernel's name for the scenario's cc."""
    return KERNEL_CC.get(cc, cc)


def check_kernel_cc(field: str, cc: str) -> None:
    """Refuse a cc the kernel does not offer, naming what it does."""
    have = kernel_ccs()
    if kernel_cc(cc) not in have:
        raise StackError(
            f"{field}: \"{cc}\" is not a congestion control of this kernel (net.ipv4."
            f"tcp_available_congestion_control: {' '.join(have) or 'unreadable'}); use "
            "stack = \"model\" or \"command\" for it")


def tcp_ecn_of(field: str, ecn: str | None) -> int:
    """net.ipv4.tcp_ecn for a kernel flow's `ecn` (classic ECN only on a stock kernel)."""
    if ecn in (None, "none"):
        return 2  # the kernel's default: accept ECN, never ask for it
    if ecn == "classic":
        return 1
    raise StackError(f"{field}: \"{ecn}\" cannot be sent by the kernel's TCP here (no AccECN "
                     "or ECT(1) on TCP sockets); expected \"classic\" or \"none\" with "
                     "stack = \"kernel\"")


def check_template(field: str, template: str) -> None:
    """A command template that splits into shell words and whose program exists (else a
    StackError naming `field`)."""
    try:
        argv = shlex.split(template.replace("{{", "{").replace("}}", "}"))
    except ValueError as e:
        # shlex's "No closing quotation" / "No escaped character": the template is not
        # shell words; say which template, not a traceback.
        raise StackError(f"{field}: {template!r} is not a command line ({str(e).lower()}); "
                         "expected a program and its arguments as shell words, e.g. "
                         "\"iperf3 -c {server} -p {port}\"") from None
    if not argv:
        raise StackError(f"{field}: is empty; expected a program and its arguments")
    prog = argv[0]
    if "{" in prog:
        return  # named by a placeholder: known only at run time
    found = shutil.which(prog) if "/" not in prog else (prog if Path(prog).is_file() else None)
    if found is None:
        raise StackError(f"{field}: program \"{prog}\" not found (not on PATH, not a file)")


def plan_stacks(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Per [[flows]] entry: the stack fields the plan carries ({} for model flows); refuses
    what this host cannot run (StackError naming the field)."""
    out: list[dict[str, Any]] = []
    ecn_seen: tuple[int, int] | None = None
    for i, fl in enumerate(doc.get("flows", [])):
        p = f"flows[{i}]"
        stack = fl.get("stack", "model")
        if stack == "kernel":
            check_kernel_cc(f"{p}.cc", fl["cc"])
            e = tcp_ecn_of(f"{p}.ecn", fl.get("ecn"))
            if ecn_seen is not None and ecn_seen[1] != e:
                raise StackError(
                    f"{p}.ecn: kernel flows share the client namespace's net.ipv4.tcp_ecn, "
                    f"and flows[{ecn_seen[0]}] asks for another value; give every kernel "
                    "flow the same ecn")
            ecn_seen = (i, e)
            out.append({"stack": "kernel", "kernel_cc": kernel_cc(fl["cc"]), "tcp_ecn": e})
        elif stack == "command":
            for key in ("bytes", "mss"):
                if key in fl:
                    raise StackError(
                        f"{p}.{key}: stack = \"command\" cannot hand it to the program (its "
                        "templates know only {server}, {port}, {duration}); put the program's "
                        "own option in `command` and remove the key")
            check_template(f"{p}.command", fl["command"])
            if fl.get("server_command"):
                check_template(f"{p}.server_command", fl["server_command"])
            out.append({"stack": "command", "command": fl["command"],
                        "server_command": fl.get("server_command")})
        else:
            out.append({})
    return out


def _fill(template: str, server: str, port: int, duration_s: float) -> list[str]:
    text = template.format(server=server, port=port, duration=f"{duration_s:g}")
    return shlex.split(text)


def client_argv(f: dict[str, Any], server: str, secs: float) -> list[str]:
    """The argv of a kernel or command flow's sender (launcher side)."""
    if f["stack"] == "kernel":
        argv = [sys.executable, str(KERNEL_FLOW), "client", "--server", server,
                "--port", str(KERNEL_PORT), "--cc", f["kernel_cc"], "--model-cc", f["cc"],
                "--tcp-ecn", str(f["tcp_ecn"])]
        if f.get("mss") is not None:
            argv += ["--mss", str(f["mss"])]
        if f.get("bytes") is not None:
            argv += ["--bytes", str(f["bytes"])]
        else:
            argv += ["--time", f"{max(secs, 0.001):.6f}"]
        if f.get("end_s") is not None:
            argv += ["--end-s", f"{f['end_s']:.6f}"]
        return argv
    return _fill(f["command"], server, int(f["port"]), max(secs, 0.001))


def server_shell(flows: list[dict[str, Any]], model_server: str, duration_s: float) -> str:
    """One shell line starting every receiver: `model_server` (for model flows), the kernel
    receiver, each command flow's server_command; it waits for all of them."""
    parts = []
    stacks = {f.get("stack", "model") for f in flows}
    if "model" in stacks:
        parts.append(model_server)
    if "kernel" in stacks:
        parts.append(shlex.join([sys.executable, str(KERNEL_FLOW), "server", "--port",
                                 str(KERNEL_PORT)]))
    for f in flows:
        if f.get("stack") == "command" and f.get("server_command"):
            parts.append(shlex.join(_fill(f["server_command"], "0.0.0.0", int(f["port"]),
                                          duration_s)))
    return " & ".join(parts) + " & wait"
