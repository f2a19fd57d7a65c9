"""l4slab: an L4S lab — a deterministic simulator, a user-space emulator and a statistical
validation toolkit sharing one Rust core (DualPI2, CoDel, PIE, FQ-CoDel, Prague, DCTCP, ...).

Python API (mirrors the `l4slab` command line)::

    import l4slab
    r = l4slab.run("scenarios/prague_vs_cubic_50M_40ms.toml", out_dir="out/x",
                   overrides={"aqm.step_thresh": "5ms"})
    r.samples, r.flows, r.summary            # DataFrames and the summary.json dict
    s = l4slab.sweep("sweep.toml", "out/sweep", jobs=2)   # or dask="tcp://...", dask_local=True
    s.index                                  # one row per run (sweep.parquet)
    l4slab.load("out/sweep").flows(["run", "flow", "tput_mbps"])  # one row per run and flow
    l4slab.load("out/x")                     # a run (RunData) or sweep (SweepData) directory
    l4slab.compare("out/a", "out/b")         # validation of two groups of runs (list of
                                             # MetricResult); l4slab.validate_groups on Runs
    l4slab.validate("s.toml")                # check a scenario file without running it
"""

# First: in the `l4slab` program, Ctrl-C during the imports below is one line, not a traceback.
from l4slab import interrupt as _interrupt

_interrupt.hold_during_import()

from importlib.metadata import PackageNotFoundError, version  # noqa: E402

try:
    __version__ = version("l4slab")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.1.0"

from l4slab._core import ScenarioError  # noqa: E402
from l4slab.results import RunData, load, load_run  # noqa: E402
from l4slab.runner import run, validate  # noqa: E402
from l4slab.sweeps import (  # noqa: E402
    SweepData,
    SweepFailed,
    SweepResult,
    derive_seed,
    load_sweep,
    sweep,
)
from l4slab.validation import compare_runs as compare  # noqa: E402
from l4slab.validation import validate_groups  # noqa: E402

__all__ = ["__version__", "ScenarioError", "RunData", "SweepData", "SweepResult", "SweepFailed",
           "run",
           "sweep", "load", "load_run", "load_sweep", "validate", "derive_seed", "compare",
           "validate_groups"]
