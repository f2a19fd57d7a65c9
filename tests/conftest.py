"""Shared fixtures of the Python tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from l4slab.scenario import dumps_toml


@pytest.fixture
def scen(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """The requesting test module's SHORT scenario, written to a TOML file."""
    p = tmp_path / "short.toml"
    p.write_text(dumps_toml(request.module.SHORT))
    return p
