"""Study suites: the published L4S experiment designs as one command each
(`l4slab suite NAME [--quick] -o DIR`); see `l4slab.suites.core` for the directory layout,
`l4slab.suites.types` for what a suite is made of and `l4slab.suites.registry` for the names."""

from __future__ import annotations

from l4slab.suites.core import SuiteResult, run_suite
from l4slab.suites.registry import NAMES, get_suite
from l4slab.suites.types import Suite, SuiteError

__all__ = ["NAMES", "get_suite", "run_suite", "Suite", "SuiteError", "SuiteResult"]
