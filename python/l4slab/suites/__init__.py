"""Study suites: the published L4S experiment designs as one command each
(`l4slab suite NAME [--quick] -o DIR`); see `l4slab.suites.core` for the directory layout."""

from __future__ import annotations

from l4slab.suites.core import Suite, SuiteError, SuiteResult, run_suite

__all__ = ["NAMES", "get_suite", "run_suite", "Suite", "SuiteError", "SuiteResult"]

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
    import importlib

    if name not in _MODULES:
        raise SuiteError(f"unknown suite {name!r}; expected one of {', '.join(NAMES)}")
    return importlib.import_module(f"l4slab.suites.{_MODULES[name]}").SUITE
