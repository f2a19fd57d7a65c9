"""The suite names and where each suite is defined: `get_suite(name)` imports the module that
defines `SUITE` only when that suite is asked for."""

from __future__ import annotations

import importlib

from l4slab.suites.types import Suite, SuiteError

__all__ = ["NAMES", "get_suite"]

#: Suite name -> module defining `SUITE`.
_MODULES = {
    "bdp-regimes": "bdp_regimes",
    "prague-vs-cubic": "prague_vs_cubic",
    "robustness": "robustness",
    "coexistence": "coexistence",
    "cellular": "cellular",
    "wifi": "wifi",
    "interactive": "interactive",
}
NAMES = list(_MODULES)


def get_suite(name: str) -> Suite:
    """The suite called `name` (raises SuiteError naming the known suites)."""
    if name not in _MODULES:
        raise SuiteError(f"unknown suite {name!r}; expected one of {', '.join(NAMES)}")
    return importlib.import_module(f"l4slab.suites.{_MODULES[name]}").SUITE
