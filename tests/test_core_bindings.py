"""The Rust core is reachable from Python and its unit parsing is the one scenario files use."""

import pytest

from l4slab import _core


def test_duration_and_rate_parsing_match_tc_units():
    assert _core.parse_duration_ns("15ms") == 15_000_000
    assert _core.parse_duration_ns("250us") == 250_000
    assert _core.parse_rate_bps("50mbit") == 50_000_000
    assert _core.parse_rate_bps("1.5gbit") == 1_500_000_000


def test_bad_units_raise_value_error_naming_the_input():
    with pytest.raises(ValueError, match='"15" missing unit'):
        _core.parse_duration_ns("15")
    with pytest.raises(ValueError, match="negative"):
        _core.parse_rate_bps("-3mbit")
