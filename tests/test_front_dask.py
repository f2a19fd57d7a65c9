"""The Dask executor gives the same sweep as the local process pool for the same seeds."""

import pandas as pd
import pytest

import l4slab
from l4slab.scenario import dumps_toml

distributed = pytest.importorskip("distributed")


def test_dask_local_cluster_equals_local_process_pool(tmp_path):
    scen = {"seed": 5, "duration": "1s", "warmup": "0.2s", "link": {"rate": "10mbit"},
            "aqm": {"kind": "dualpi2"},
            "flows": [{"cc": "prague", "rtt": "20ms"}, {"cc": "cubic", "rtt": "20ms"}]}
    (tmp_path / "base.toml").write_text(dumps_toml(scen))
    sweep = {"base": "base.toml", "replications": 2, "seed": 7,
             "grid": {"aqm.step_thresh": ["1ms", "5ms"]}}
    sw = tmp_path / "sw.toml"
    sw.write_text(dumps_toml(sweep))

    local = l4slab.sweep(sw, tmp_path / "local", jobs=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        remote = l4slab.sweep(sw, tmp_path / "dask", dask=client)
    assert local.ok and remote.ok and len(local.index) == 4
    drop = ["elapsed_s"]
    pd.testing.assert_frame_equal(local.index.drop(columns=drop),
                                  remote.index.drop(columns=drop))
    for run in local.index["run"]:
        a = l4slab.load(tmp_path / "local" / "runs" / run)
        b = l4slab.load(tmp_path / "dask" / "runs" / run)
        pd.testing.assert_frame_equal(a.samples, b.samples)
        pd.testing.assert_frame_equal(a.flows, b.flows)
        assert a.summary == b.summary
