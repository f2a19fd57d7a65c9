"""[[links]] chains from the front end: per-hop queues in samples.parquet and summary.json, one
clear error naming the field for bad chain keys, and the emulator's refusal of a chain it
cannot run (one hop is run as [link] + [aqm])."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pandas as pd
import pytest

from l4slab import ScenarioError
from l4slab.emuflows import plan_scenario
from l4slab.runner import simulate
from l4slab.scenario import dumps_toml

#: Two hops, 20 then 10 Mb/s; one flow across both and one on the second hop only.
CHAIN = """
duration = "3s"
warmup = "1s"
[[links]]
name = "access"
rate = "20mbit"
delay = "2ms"
[[links]]
name = "core"
rate = "10mbit"
delay = "3ms"
[links.aqm]
kind = "dualpi2"
[[flows]]
cc = "prague"
rtt = "20ms"
[[flows]]
cc = "cubic"
rtt = "20ms"
path = [1, 1]
"""


def chain() -> dict:
    return tomllib.loads(CHAIN)


def l4slab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "l4slab.cli", *args], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_every_hops_queues_are_sampled_and_summarised_by_name():
    run = simulate(chain(), Path.cwd())
    names = ["access/single", "core/L", "core/C"]
    assert list(run.samples["queue"].cat.categories) == names
    # The hop column follows the queue: each sampling instant has one row per queue.
    rows = run.samples.drop_duplicates(["queue", "hop"])[["queue", "hop"]]
    assert {(q, h) for q, h in rows.itertuples(index=False)} == {
        ("access/single", "access"), ("core/L", "core"), ("core/C", "core")}
    per_t = run.samples.groupby("t_s", observed=True).size()
    assert (per_t == 3).all()
    s = run.summary
    assert [q["name"] for q in s["queues"]] == names
    assert [q["hop"] for q in s["queues"]] == ["access", "core", "core"]
    hops = s["hops"]
    assert [h["name"] for h in hops] == ["access", "core"]
    assert hops[1]["queues"] == ["core/L", "core/C"]
    assert hops[1]["aqm"] == "dualpi2" and hops[0]["aqm"] == "fifo"
    # The core hop is the bottleneck of both flows: busy; the access hop carries one flow
    # whose share of the core hop is below 20 Mb/s.
    assert hops[1]["utilisation"] > 0.95
    assert hops[0]["utilisation"] < 0.75
    assert hops[1]["packets"] == sum(q["packets"] for q in s["queues"][1:])


def test_one_link_samples_have_no_hop_column():
    d = chain()
    del d["links"]
    d["link"] = {"rate": "10mbit"}
    d["flows"][1].pop("path")
    run = simulate(d, Path.cwd())
    assert "hop" not in run.samples.columns
    assert "hops" not in run.summary


@pytest.mark.parametrize(("edit", "field", "what"), [
    (lambda d: d["links"][1]["aqm"].update(taget="5ms"), "links[1].aqm.taget",
     "unknown field"),
    (lambda d: d["links"][0].update(rate="fast"), "links[0].rate", ""),
    (lambda d: d["flows"][1].update(path=[1, 2]), "flows[1].path", "0 ≤ first ≤ last ≤ 1"),
    (lambda d: d["flows"][0].update(rtt="8ms"), "flows[0].rtt", "expected rtt ≥ 10ms"),
    (lambda d: d.update(link={"rate": "10mbit"}), "links", "set together with [link]"),
    (lambda d: d["links"][1].update(name="access"), "links[1].name", "already the name"),
])
def test_bad_chain_keys_get_one_error_naming_the_field(tmp_path, edit, field, what):
    d = chain()
    edit(d)
    with pytest.raises(ScenarioError) as e:
        simulate(d, Path.cwd())
    msg = str(e.value)
    assert msg.startswith(f"{field}:") and what in msg, msg
    # The CLI: the same line, exit 2, no traceback, nothing written.
    scen = tmp_path / "s.toml"
    scen.write_text(dumps_toml(d))
    out = tmp_path / "out"
    r = l4slab("run", str(scen), "-o", str(out))
    assert r.returncode == 2, r.stderr
    assert field in r.stderr and "Traceback" not in r.stderr
    assert r.stderr.strip().count("\n") == 0, r.stderr
    assert not (out / "summary.json").exists()


def test_the_emulator_refuses_a_chain_of_two_hops_naming_the_key(tmp_path):
    with pytest.raises(ScenarioError) as e:
        plan_scenario(chain(), tmp_path)
    assert str(e.value).startswith("links: a chain of 2 hops runs in the simulator only")
    scen = tmp_path / "s.toml"
    scen.write_text(CHAIN)
    out = tmp_path / "out"
    r = l4slab("emulate", str(scen), "-o", str(out))
    assert r.returncode == 2, r.stderr
    assert "links: a chain of 2 hops" in r.stderr and "Traceback" not in r.stderr
    assert r.stderr.strip().count("\n") == 0, r.stderr
    assert not out.exists()


def test_the_emulator_runs_a_one_hop_chain_as_link_and_aqm(tmp_path):
    d = chain()
    d["links"] = d["links"][1:]
    d["flows"][1]["path"] = [0, 0]
    plan = plan_scenario(d, tmp_path)
    assert "links" not in plan.doc
    assert plan.doc["link"] == {"rate": "10mbit"}
    assert plan.doc["aqm"] == {"kind": "dualpi2"}
    assert all("path" not in f for f in plan.doc["flows"])
    # The hop's delay is part of each flow's rtt: the emulator's path delay is rtt/2.
    assert plan.doc["emulator"]["delay"] == "10ms"


def test_the_shipped_parking_lot_runs(tmp_path):
    scen = Path(__file__).resolve().parent.parent / "scenarios" / "parking_lot.toml"
    d = tomllib.loads(scen.read_text())
    d["duration"] = "2s"
    d["warmup"] = "0.5s"
    run = simulate(d, Path.cwd())
    assert [h["name"] for h in run.summary["hops"]] == ["access", "metro", "core"]
    assert isinstance(run.samples, pd.DataFrame) and "hop" in run.samples.columns
    json.dumps(run.summary)


def test_a_hops_aqm_kind_override_starts_its_table_afresh():
    from l4slab.scenario import apply_overrides

    d = chain()
    d["links"][1]["aqm"]["target"] = "5ms"
    out = apply_overrides(d, ["links.1.aqm.kind=fifo", "links.1.aqm.limit=50"])
    assert out["links"][1]["aqm"] == {"kind": "fifo", "limit": 50}
    assert d["links"][1]["aqm"]["kind"] == "dualpi2"  # the input is untouched
    # The run takes it: hop 1 is now a FIFO.
    assert simulate(out, Path.cwd()).summary["hops"][1]["aqm"] == "fifo"


def test_the_cli_run_names_every_hops_aqm_and_writes_the_hop_column(tmp_path):
    scen = tmp_path / "chain.toml"
    scen.write_text(CHAIN)
    out = tmp_path / "out"
    r = l4slab("run", str(scen), "-o", str(out), "--no-figures")
    assert r.returncode == 0, r.stderr
    assert "fifo > dualpi2" in r.stdout + r.stderr
    samples = pd.read_parquet(out / "samples.parquet")
    assert list(samples["hop"].cat.categories) == ["access", "core"]
    assert json.loads((out / "summary.json").read_text())["hops"][0]["name"] == "access"
