"""Statistical validation toolkit: normalised DTW distances, the exceedance test (ε_max, p̂_max)
and its bootstrap CI, for l4slab run directories and imported traces (DESIGN.md "Validation")."""

from l4slab.validation.compare import compare_runs
from l4slab.validation.core import (
    MetricResult,
    distance_sets,
    improved,
    validate_groups,
)
from l4slab.validation.io import (
    Run,
    ValidationInputError,
    load_group,
    mahimahi_to_csv,
    mahimahi_to_frame,
    read_run,
)

__all__ = [
    "MetricResult",
    "Run",
    "ValidationInputError",
    "compare_runs",
    "distance_sets",
    "improved",
    "load_group",
    "mahimahi_to_csv",
    "mahimahi_to_frame",
    "read_run",
    "validate_groups",
]
