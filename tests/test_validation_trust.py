"""Validation answers a researcher can trust: no verdict the run counts cannot support, inputs
that break the documented layout are refused with the file and row named."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from l4slab.validation import Run, validate_groups
from l4slab.validation.cli import validate_cmd
from l4slab.validation.core import min_attainable_p_hat, runs_needed

ALPHA = 0.05


def _runs(n: int, level: float, seed: int) -> list[Run]:
    rng = np.random.default_rng(seed)
    return [Run(Path(f"r{seed}_{i}"), {"m": level + rng.normal(size=50)}) for i in range(n)]


def test_min_attainable_p_hat_and_runs_needed():
    # p_hat_max = (k + 1) / (n_cross + 1) with k >= 0: the smallest value is 1 / (n_a n_b + 1).
    assert min_attainable_p_hat(3, 3) == pytest.approx(1 / 10)
    assert min_attainable_p_hat(4, 4) == pytest.approx(1 / 17)  # 0.0588 >= 0.05
    assert min_attainable_p_hat(5, 5) == pytest.approx(1 / 26)  # 0.0385 < 0.05
    # Equal groups: need n^2 + 1 > 1/alpha = 20, i.e. n >= 5.
    assert runs_needed(ALPHA) == 5
    assert runs_needed(0.01) == 10  # n^2 + 1 > 100 -> n = 10


@pytest.mark.parametrize("n", [2, 3, 4])
def test_too_few_runs_is_undecidable_not_a_verdict(n):
    a, b = _runs(n, 10.0, 1), _runs(n, 10.0, 2)
    r = validate_groups(a, b, ["m"], bootstrap=50, seed=1)[0]
    assert r.min_p_hat == pytest.approx(1 / (n * n + 1))
    assert r.undecidable and r.similar is None and r.significant is None
    row = r.row()
    assert row["similar"] == "undecidable" and row["significant"] == "undecidable"
    assert row["runs_needed_per_group"] == 5
    # p_hat itself is still reported (it is a valid statistic, just not a test at this n).
    assert row["p_hat_max"] == r.p_hat >= r.min_p_hat


def test_enough_runs_gives_a_verdict():
    a, c = _runs(5, 10.0, 1), _runs(5, 30.0, 2)
    r = validate_groups(a, c, ["m"], bootstrap=50, seed=1)[0]
    assert not r.undecidable and r.similar is False
    assert r.row()["similar"] is False


def test_cli_says_undecidable_and_explains_columns(tmp_path):
    for g, lvl in (("a", 1.0), ("b", 1.0)):
        (tmp_path / g).mkdir()
        for i in range(3):
            t = np.arange(20) * 0.1
            pd.DataFrame({"t_s": t, "m": lvl + 0.1 * np.sin(t + i)}).to_csv(
                tmp_path / g / f"r{i}.csv", index=False)
    out = tmp_path / "out"
    res = CliRunner().invoke(validate_cmd, [str(tmp_path / "a"), str(tmp_path / "b"),
                                            "--bootstrap", "20", "-o", str(out)],
                             terminal_width=200)
    assert res.exit_code == 0, res.output
    assert "undecidable" in res.output and "need ≥ 5 runs per group" in res.output
    assert "signif." in res.output and "upper end" in res.output
    table = pd.read_csv(out / "validation.csv")
    assert table["similar"].tolist() == ["undecidable"]
    assert table["runs_needed_per_group"].tolist() == [5]
    md = (out / "validation.md").read_text()
    assert "undecidable" in md


# --- item 2: inputs that break the documented layout ------------------------------------------

from l4slab.validation import mahimahi_to_frame, read_run  # noqa: E402
from l4slab.validation.io import ValidationInputError  # noqa: E402


@pytest.mark.parametrize(
    "body, needle",
    [
        ("t_s,m\n0,1\n0.2,2\n0.1,3\n", r"line 4: t_s decreases \(0.2 then 0.1\)"),
        ("t_s,m\n0,1\n0.1,2\n0.1,3\n", r"line 4: t_s repeats \(0.1 then 0.1\)"),
        ("t_s,m\n0,1\nnan,2\n", r"line 3: column t_s has non-finite value nan"),
        ("t_s,m\n0,1\n0.1,inf\n", r"line 3: column m has non-finite value inf"),
        ("t_s,m_cum\n0,1\n0.1,-inf\n", r"line 3: column m_cum has non-finite value -inf"),
    ],
)
def test_csv_trace_must_be_finite_and_strictly_increasing(tmp_path, body, needle):
    p = tmp_path / "trace.csv"
    p.write_text(body)
    with pytest.raises(ValidationInputError, match=needle) as e:
        read_run(p)
    assert str(p) in str(e.value)


MM_HEAD = "# base timestamp: 1000\n1000 # 1504\n"


@pytest.mark.parametrize(
    "line, needle",
    [
        ("1005 + nan", "non-finite"),
        ("nan + 1500", "non-finite"),
        ("1005 + 1e20", "packet size 1e\\+20 bytes is out of range"),
        ("1005 - 1500 -3", "negative queueing delay"),
        ("1005 d 1 1e20", "out of range"),
        ("999 + 1500", "before the previous line"),
    ],
)
def test_mahimahi_log_rejects_nan_absurd_sizes_and_disorder(tmp_path, line, needle):
    log = tmp_path / "mm.log"
    log.write_text(MM_HEAD + "1002 + 1500\n" + line + "\n")
    with pytest.raises(ValidationInputError, match=needle) as e:
        mahimahi_to_frame(log)
    assert f"{log}:4:" in str(e.value)  # the file and line of the bad event


def test_mahimahi_interval_is_checked_against_the_span(tmp_path):
    log = tmp_path / "mm.log"
    log.write_text(MM_HEAD + "1002 + 1500\n4000 + 1500\n")
    # 3000 ms span at 1e-9 ms per bin = 3e12 bins (tens of TiB): refused before allocating.
    with pytest.raises(ValidationInputError, match=r"interval_ms = 1e-09: gives \d+ bins over "
                       r"the log's span of 3000 ms; at most 10000000, i.e. interval_ms ≥ 0.0003"):
        mahimahi_to_frame(log, 1e-9)
    assert len(mahimahi_to_frame(log, 1.0)) == 3001


def test_mahimahi_binary_file_is_refused(tmp_path):
    log = tmp_path / "mm.bin"
    log.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(ValidationInputError, match="not a text file"):
        mahimahi_to_frame(log)


# --- item 12: sweep directories, --by, warm-up from the runs, no silent overwrite -------------

def _fake_sweep(root: Path, values: list[str], reps: int, warmup: float) -> Path:
    """A sweep directory: runs/pNNN-rMM with params.json, summary.json and flows.parquet
    (t_s from 0 to 2 s; throughput 10 before the warm-up and 20 + value index after)."""
    import json

    t = np.arange(0, 2.0, 0.1)
    for p, v in enumerate(values):
        for r in range(reps):
            rd = root / "runs" / f"p{p:03d}-r{r:02d}"
            rd.mkdir(parents=True)
            (rd / "params.json").write_text(json.dumps({"params": {"aqm.step_thresh": v}}))
            (rd / "summary.json").write_text(json.dumps({"warmup_s": warmup}))
            tput = np.where(t < warmup, 10.0, 20.0 + p) + 0.01 * np.sin(t * (r + 1))
            pd.DataFrame({"t_s": t, "flow": 0, "tput_mbps": tput}).to_parquet(
                rd / "flows.parquet")
    (root / "sweep.json").write_text("{}")
    return root


def test_validate_by_grid_key_of_one_sweep(tmp_path):
    sw = _fake_sweep(tmp_path / "sw", ["1ms", "5ms"], reps=5, warmup=0.5)
    out = tmp_path / "v"
    res = CliRunner().invoke(validate_cmd, [str(sw), "--by", "aqm.step_thresh", "-m",
                                            "tput_total", "--bootstrap", "50", "-o", str(out)],
                             terminal_width=200)
    assert res.exit_code == 0, res.output
    assert "aqm.step_thresh=1ms vs aqm.step_thresh=5ms" in " ".join(res.output.split())
    row = pd.read_csv(out / "validation.csv").iloc[0]
    assert row["n_a"] == 5 and row["n_b"] == 5 and row["similar"] in (False, "False")
    # A sweep directory as a plain group: all its runs.
    from l4slab.validation.io import resolve_group

    assert len(resolve_group(sw)) == 10
    # Refuses to overwrite without --force.
    res = CliRunner().invoke(validate_cmd, [str(sw), "--by", "aqm.step_thresh", "-o", str(out)])
    assert res.exit_code == 2 and "--force" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(validate_cmd, [str(sw), "--by", "bogus", "-o", str(tmp_path / "w")])
    assert res.exit_code == 2 and "aqm.step_thresh" in res.output


def test_warmup_defaults_to_the_runs_own(tmp_path):
    from l4slab.validation.io import load_group, scenario_warmup_s

    sw = _fake_sweep(tmp_path / "sw", ["1ms"], reps=2, warmup=0.5)
    runs = sorted((sw / "runs").iterdir())
    assert scenario_warmup_s(runs) == 0.5
    # With the runs' warm-up the pre-warm-up level (10) is cut: every sample is about 20.
    g = load_group("A", runs, scenario_warmup_s(runs))
    assert g[0].metrics["tput_total"].min() > 19.9 and g[0].metrics["tput_total"].size == 15


def test_group_test_is_exported_at_the_top():
    import l4slab

    assert l4slab.validate_groups is validate_groups
    assert callable(l4slab.compare)
