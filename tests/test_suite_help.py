"""`l4slab suite --help` names every registered suite, and the README's suite table lists
each one (the help and README once said six where seven are registered)."""

import re
from pathlib import Path

from click.testing import CliRunner

from l4slab.cli import main
from l4slab.suites import NAMES

README = Path(__file__).resolve().parents[1] / "README.md"


def test_suite_help_lists_every_registered_suite():
    r = CliRunner().invoke(main, ["suite", "--help"])
    assert r.exit_code == 0
    text = " ".join(r.output.split())  # click wraps the help text
    for name in NAMES:
        assert re.search(rf"\b{re.escape(name)}\b", text), name
    assert "wifi" in text


def test_readme_suite_table_and_count_match_the_registry():
    text = README.read_text()
    table = re.findall(r"^\| `([a-z-]+)` \|", text.split("## Study suites", 1)[1], re.M)
    assert sorted(table) == sorted(NAMES)
    words = {5: "Five", 6: "Six", 7: "Seven", 8: "Eight"}
    assert f"{words[len(NAMES)]} L4S experiment designs ship as suites" in text
    assert "all six" not in text
