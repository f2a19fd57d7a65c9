"""Override parsing, dotted-key setting, TOML output and sweep seed derivation (pure Python)."""

import tomllib

import pytest

from l4slab import ScenarioError
from l4slab.scenario import apply_overrides, dumps_toml, parse_override, parse_value, set_path
from l4slab.sweeps import derive_seed, load_sweep_spec, plan

BASE = {
    "seed": 1,
    "duration": "30s",
    "link": {"rate": "50mbit", "steps": [{"at": "10s", "rate": "20mbit"}]},
    "aqm": {"kind": "dualpi2"},
    "flows": [{"cc": "prague", "rtt": "40ms"}, {"cc": "cubic", "rtt": "40ms"}],
}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("3", 3),  # TOML integer
        ("0.01", 0.01),  # TOML float
        ("true", True),
        ("false", False),
        ('"quoted"', "quoted"),
        ("[1, 2]", [1, 2]),
        ("5ms", "5ms"),  # not TOML: a bare string
        ("dctcp", "dctcp"),
        ("1e3", 1000.0),
        ("tcp://10.0.0.1:8786", "tcp://10.0.0.1:8786"),
    ],
)
def test_values_are_toml_scalars_or_bare_strings(text, value):
    got = parse_value(text)
    assert got == value and type(got) is type(value)


def test_parse_override_splits_on_first_equals():
    assert parse_override("flows.0.cc=dctcp") == ("flows.0.cc", "dctcp")
    assert parse_override(" aqm.step_thresh = 5ms ") == ("aqm.step_thresh", "5ms")
    assert parse_override('name="a=b"') == ("name", "a=b")


@pytest.mark.parametrize(
    ("item", "match"),
    [
        ("aqm.target", "expected key=value"),
        ("=5ms", "key before '=' is empty"),
        ("aqm.target=", "value after '=' is empty"),
        ("aqm..target=5ms", "bad key part ''"),
        ("aqm.ta rget=5ms", "bad key part"),
    ],
)
def test_bad_override_syntax_names_the_item(item, match):
    with pytest.raises(ScenarioError, match=match):
        parse_override(item)


def test_apply_overrides_sets_nested_and_indexed_keys_without_touching_the_input():
    out = apply_overrides(BASE, ["flows.1.cc=dctcp", "aqm.step_thresh=5ms", "link.loss=0.01",
                                 "link.steps.0.rate=10mbit", "seed=7", "aqm.new.sub=1"])
    assert out["flows"][1]["cc"] == "dctcp"
    assert out["aqm"] == {"kind": "dualpi2", "step_thresh": "5ms", "new": {"sub": 1}}
    assert out["link"]["loss"] == 0.01
    assert out["link"]["steps"][0]["rate"] == "10mbit"
    assert out["seed"] == 7
    assert BASE["flows"][1]["cc"] == "cubic"  # deep copy
    assert apply_overrides(BASE, {"flows.0.rtt": "10ms"})["flows"][0]["rtt"] == "10ms"


@pytest.mark.parametrize(
    ("key", "match"),
    [
        ("flows.2.cc", r"index 2 out of range \(flows has 2 entries\)"),
        ("flows.x.cc", "flows is a list; expected an index"),
        ("aqm.0", "aqm is a table"),
        ("duration.x", "duration is a value"),
        ("missing.0.x", "missing does not exist"),
    ],
)
def test_bad_paths_name_the_key(key, match):
    with pytest.raises(ScenarioError, match=match):
        set_path(apply_overrides(BASE, None), key, 1)


def test_dumps_toml_round_trips_a_scenario():
    data = apply_overrides(BASE, ["link.gilbert.p=0.01", 'aqm.ecn_mask="l4s"', "x.y=[1, 2]",
                                  'flows.0.note="a \\"quoted\\" \\\\ name"'])
    text = dumps_toml(data, header="hello\nworld")
    assert text.startswith("# hello\n# world\n")
    assert tomllib.loads(text) == data


def test_seed_derivation_is_splitmix64():
    # SplitMix64 seeded with 0: first output 0xE220A8397B1DCDAF (the published reference value
    # of Vigna's splitmix64.c); >> 1 = 8147104208329303767.
    assert derive_seed(0, 0) == 0xE220A8397B1DCDAF >> 1 == 8147104208329303767
    seeds = [derive_seed(1, r) for r in range(100)]
    assert len(set(seeds)) == 100 and all(0 <= s < 2**63 for s in seeds)
    assert derive_seed(1, 3) == derive_seed(1, 3)
    assert derive_seed(2, 0) != derive_seed(1, 0)


def test_plan_is_grid_times_replications_with_common_seeds(tmp_path):
    (tmp_path / "base.toml").write_text(dumps_toml(BASE))
    spec = load_sweep_spec({"base": "base.toml", "replications": 3, "seed": 5,
                            "grid": {"aqm.step_thresh": ["1ms", "5ms"],
                                     "flows.0.cc": ["prague", "dctcp"]},
                            "set": {"duration": "2s"}}, base_dir=tmp_path)
    tasks = plan(spec)
    assert len(tasks) == 2 * 2 * 3
    assert [t.name for t in tasks[:4]] == ["p000-r00", "p000-r01", "p000-r02", "p001-r00"]
    # first key varies slowest
    assert [(t.params["aqm.step_thresh"], t.params["flows.0.cc"]) for t in tasks[::3]] == [
        ("1ms", "prague"), ("1ms", "dctcp"), ("5ms", "prague"), ("5ms", "dctcp")]
    for t in tasks:
        assert t.seed == derive_seed(5, t.rep) == t.scenario["seed"]
        assert t.scenario["duration"] == "2s"
        assert t.scenario["aqm"]["step_thresh"] == t.params["aqm.step_thresh"]
        assert t.scenario["flows"][0]["cc"] == t.params["flows.0.cc"]


@pytest.mark.parametrize(
    ("sweep", "match"),
    [
        ({"base": "base.toml", "grid": {"aqm.step_thresh": []}}, "empty list: the sweep grid"),
        ({"base": "base.toml", "grid": {}}, "sweep grid is empty"),
        ({"base": "base.toml", "grid": {"aqm.step_thresh": "1ms"}}, "must be a list"),
        ({"base": "base.toml", "replications": 0}, "replications must be"),
        ({"base": "base.toml", "grid": {"seed": [1, 2]}}, "grid.seed"),
        ({"base": "nope.toml"}, "scenario file not found"),
        ({"grid": {"a": [1]}}, "missing 'base'"),
        ({"base": "base.toml", "grdi": {}}, "unknown sweep key 'grdi'"),
    ],
)
def test_bad_sweep_files_name_the_problem(tmp_path, sweep, match):
    (tmp_path / "base.toml").write_text(dumps_toml(BASE))
    with pytest.raises(ScenarioError, match=match):
        load_sweep_spec(sweep, base_dir=tmp_path)


def test_bad_grid_index_names_the_grid_point(tmp_path):
    (tmp_path / "base.toml").write_text(dumps_toml(BASE))
    spec = load_sweep_spec({"base": "base.toml", "grid": {"flows.5.cc": ["dctcp"]}},
                           base_dir=tmp_path)
    with pytest.raises(ScenarioError, match=r"grid point dctcp: .*out of range"):
        plan(spec)
