"""graphsys.units: counts and sizes as users type them (the CLI's flags and the benchmarks
read both through here)."""

from __future__ import annotations

import pytest

from graphsys.errors import GraphsysError
from graphsys.units import parse_count, parse_size


@pytest.mark.parametrize("text, want", [
    ("1000", 1000), ("1_000", 1000), ("10M", 10_000_000), ("2.5k", 2500), ("1e6", 10**6),
    ("4Mi", 1 << 22), ("32mi", 1 << 25), ("1B", 10**9), ("1G", 10**9), (" 7 ", 7), (0, 0),
    (12, 12)])
def test_parse_count(text, want):
    assert parse_count(text) == want


@pytest.mark.parametrize("text, message", [
    ("1.5", "edges must be a whole number"), ("-1", "non-negative integer"),
    ("ten", "non-negative integer"), ("1Bi", "non-negative integer"), ("", "non-negative"),
    (-3, "non-negative integer")])
def test_parse_count_refuses_in_one_line_naming_the_field(text, message):
    with pytest.raises(GraphsysError, match=message) as err:
        parse_count(text, "edges")
    assert str(err.value).startswith("edges ") and "\n" not in str(err.value)


def test_parse_size():
    assert parse_size("2GB") == 2 * 10**9 and parse_size("512MiB") == 512 << 20
    with pytest.raises(GraphsysError, match="memory_limit: cannot parse size"):
        parse_size("lots", field="memory_limit")
