"""Scenario loading, `--set key=value` overrides and TOML output of the effective scenario.

Overrides use dotted keys; an integer part indexes a list (``flows.0.cc=dctcp``). Values are
parsed as TOML scalars (``3`` is an int, ``0.01`` a float, ``true`` a bool, ``"x"`` a string,
``[1, 2]`` an array); anything that is not valid TOML is taken as a bare string, so
``aqm.step_thresh=5ms`` and ``flows.0.cc=dctcp`` need no quotes. Validation of the keys
themselves (unknown keys, bad units) is the simulator's job: it names the field path.
"""

from __future__ import annotations

import copy
import math
import re
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from l4slab._core import ScenarioError

__all__ = [
    "ScenarioError",
    "ScenarioSource",
    "apply_overrides",
    "normalise_key",
    "unset_path",
    "dumps_toml",
    "load_scenario",
    "parse_override",
    "parse_value",
    "set_path",
]

_KEY_PART = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$|^\d+$")


class ScenarioSource:
    """A scenario dict plus the directory its relative paths (traces) resolve against."""

    def __init__(self, data: dict[str, Any], base_dir: Path, origin: str) -> None:
        self.data = data
        self.base_dir = base_dir
        self.origin = origin


def load_scenario(scenario: str | Path | Mapping[str, Any], base_dir: Path | None = None
                  ) -> ScenarioSource:
    """Read a scenario file (TOML) or take a dict; returns a deep copy safe to modify."""
    if isinstance(scenario, Mapping):
        return ScenarioSource(copy.deepcopy(dict(scenario)), Path(base_dir or Path.cwd()),
                              "<dict>")
    path = Path(scenario)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ScenarioError(f"scenario file not found: {path}") from None
    except OSError as e:
        raise ScenarioError(f"cannot read scenario file {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise ScenarioError(f"{path}: not a text file; a scenario is a TOML file") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{path}: not valid TOML: {e}") from None
    return ScenarioSource(data, Path(base_dir or path.resolve().parent), str(path))


def parse_value(text: str) -> Any:
    """A TOML scalar (or array/inline table); a bare word that is not TOML stays a string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def parse_override(item: str) -> tuple[str, Any]:
    """``"flows.0.cc=dctcp"`` → ``("flows.0.cc", "dctcp")``; bad syntax raises ScenarioError."""
    key, sep, value = item.partition("=")
    key = normalise_key(key)
    if not sep:
        raise ScenarioError(f"--set {item!r}: expected key=value (e.g. aqm.target=5ms)")
    if not key:
        raise ScenarioError(f"--set {item!r}: the key before '=' is empty")
    for part in key.split("."):
        if not _KEY_PART.match(part):
            raise ScenarioError(
                f"--set {item!r}: bad key part {part!r} (dotted names and list indices, "
                "e.g. flows.0.cc)")
    value = value.strip()
    if not value:
        raise ScenarioError(f"--set {item!r}: the value after '=' is empty")
    return key, parse_value(value)


def set_path(data: dict[str, Any], key: str, value: Any) -> None:
    """Set a dotted key in a nested dict/list; missing tables are created, list indices
    must exist. Errors name the key. A table or list value is stored as a copy: the caller's
    object (a sweep grid's value, shared by every grid point) must never be changed by a
    later key under it (``aqm`` then ``aqm.limit``)."""
    value = copy.deepcopy(value)
    parts = key.split(".")
    node: Any = data
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        where = ".".join(parts[:depth]) or "<scenario>"
        if isinstance(node, list):
            if not part.isdigit():
                raise ScenarioError(f"{key}: {where} is a list; expected an index, got {part!r}")
            idx = int(part)
            if idx >= len(node):
                raise ScenarioError(
                    f"{key}: index {idx} out of range ({where} has {len(node)} entries)")
            if last:
                node[idx] = value
            else:
                node = node[idx]
        elif isinstance(node, dict):
            if part.isdigit():
                raise ScenarioError(f"{key}: {where} is a table; {part!r} is not a key of it")
            if last:
                node[part] = value
            else:
                if part not in node:
                    nxt = parts[depth + 1]
                    if nxt.isdigit():
                        raise ScenarioError(f"{key}: {'.'.join(parts[:depth + 1])} does not "
                                            "exist, so it cannot be indexed")
                    node[part] = {}
                node = node[part]
        else:
            raise ScenarioError(f"{key}: {where} is a value ({node!r}), not a table or list")


def normalise_key(key: str) -> str:
    """``flows[0].cc`` (the form error messages use) → ``flows.0.cc`` (the --set form)."""
    return re.sub(r"\[(\d+)\]", r".\1", key.strip())


def unset_path(data: dict[str, Any], key: str) -> None:
    """Remove a dotted key (``--unset aqm.step_thresh``) so the simulator's default applies;
    a key that is not there is an error naming it."""
    parts = normalise_key(key).split(".")
    node: Any = data
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            if last:
                del node[int(part)]
                return
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            if last:
                del node[part]
                return
            node = node[part]
        else:
            raise ScenarioError(f"--unset {key}: {'.'.join(parts[:depth + 1])} is not set in "
                                "the scenario")


def apply_overrides(data: dict[str, Any],
                    overrides: Mapping[str, Any] | Iterable[str] | None,
                    unset: Iterable[str] = ()) -> dict[str, Any]:
    """Remove the `unset` keys, then apply ``{"a.b": v}`` or ``["a.b=v", ...]`` in order to a
    copy of ``data``. A changed ``aqm.kind`` is applied first and starts the ``[aqm]`` table
    from that AQM's defaults (the old AQM's parameters mean nothing to the new one), so
    ``--set aqm.kind=fifo`` works from a DualPI2 base and a sweep can grid over AQM kinds;
    ``links.N.aqm.kind`` does the same for hop N of a [[links]] chain."""
    out = copy.deepcopy(data)
    for k in unset:
        unset_path(out, k)
    if not overrides:
        return out
    if isinstance(overrides, Mapping):
        pairs = [(normalise_key(k), v) for k, v in overrides.items()]
    else:
        pairs = [parse_override(s) for s in overrides]
    # stable: the rest keep their order; a hop's links.N.aqm.kind as aqm.kind
    pairs.sort(key=lambda kv: _AQM_KIND.match(kv[0]) is None)
    for k, v in pairs:
        m = _AQM_KIND.match(k)
        if m:
            holder = out
            if m.group(1) is not None:
                hops = out.get("links")
                i = int(m.group(1))
                holder = hops[i] if isinstance(hops, list) and i < len(hops) else None
            old = holder.get("aqm") if isinstance(holder, dict) else None
            if isinstance(holder, dict) and (not isinstance(old, dict) or old.get("kind") != v):
                holder["aqm"] = {"kind": v}
                continue
        set_path(out, k, v)
    return out


#: ``aqm.kind`` or a [[links]] hop's ``links.N.aqm.kind`` (group 1: the hop index).
_AQM_KIND = re.compile(r"^(?:links\.(\d+)\.)?aqm\.kind$")


# --- TOML output (the effective scenario written to scenario.toml) ---------------------------

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE.match(k) else _str(k)


def _str(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return _str(v)
    if isinstance(v, list):
        return "[" + ", ".join(_scalar(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{_key(str(k))} = {_scalar(x)}" for k, x in v.items()) + "}"
    raise ScenarioError(f"cannot write {type(v).__name__} value {v!r} to TOML")


def _is_table_array(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, Mapping) for x in v)


def _emit(lines: list[str], table: Mapping[str, Any], prefix: str) -> None:
    simple = [(k, v) for k, v in table.items()
              if not isinstance(v, Mapping) and not _is_table_array(v)]
    for k, v in simple:
        lines.append(f"{_key(k)} = {_scalar(v)}")
    for k, v in table.items():
        name = f"{prefix}{_key(k)}"
        if isinstance(v, Mapping):
            lines.append("")
            lines.append(f"[{name}]")
            _emit(lines, v, name + ".")
        elif _is_table_array(v):
            for item in v:
                lines.append("")
                lines.append(f"[[{name}]]")
                _emit(lines, item, name + ".")


def dumps_toml(data: Mapping[str, Any], header: str | None = None) -> str:
    """Serialise a scenario dict (tables, arrays of tables, scalars, arrays) as TOML."""
    lines: list[str] = []
    if header:
        lines.extend(f"# {h}" for h in header.splitlines())
    _emit(lines, data, "")
    return "\n".join(lines).lstrip("\n") + "\n"
