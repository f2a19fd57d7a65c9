"""New-user audit (issues 35, 32): results that were silently wrong, runs that could be lost,
and what a run says about itself (grid labels, per-hop verdicts, slowdown, CIs, workloads)."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

from l4slab.scenario import dumps_toml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_helpers import SHORT_BASE, invoke_wide, one_error  # noqa: E402

# --- a [[grid.aqm]] variant that sets a key the grid also sweeps --------------------------------


def test_variant_key_also_swept_is_refused_naming_both(tmp_path):
    # The grid's "aqm.limit" lands inside every variant, so a variant's limit = 7 never runs;
    # labelling the runs "aqm.limit = 7" merged a 50-packet and a 500-packet run into one row.
    (tmp_path / "base.toml").write_text(dumps_toml(SHORT_BASE))
    sw = tmp_path / "sw.toml"
    sw.write_text('base = "base.toml"\n[grid]\n"aqm.limit" = [50, 500]\n'
                  '[[grid.aqm]]\nkind = "fifo"\nlimit = 7\n')
    one_error(invoke_wide("sweep", sw, "-o", tmp_path / "o", "-j", "1"),
              "[[grid.aqm]] variant 0 sets limit = 7", 'grid."aqm.limit"')
    assert not (tmp_path / "o").exists()


def test_a_deeper_grid_key_labels_the_run_over_its_table():
    from l4slab.sweepgrid import expand_params

    # Whatever the key order, the index shows what ran: the deeper key lands inside the table.
    params = {"aqm.limit": 50, "aqm": {"kind": "fifo", "limit": 7}}
    assert expand_params(params)["aqm.limit"] == 50
    assert expand_params(dict(reversed(params.items())))["aqm.limit"] == 50
