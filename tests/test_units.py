"""graphsys.units: counts and sizes as users type them (the CLI's flags and the benchmarks
read both through here): sizes in every unit up to EiB, one ceiling (8 EiB) however a size
is written, and a floor named by the caller."""

from __future__ import annotations

import pytest

from graphsys.errors import GraphsysError
from graphsys.units import MAX_SIZE, parse_count, parse_size


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


@pytest.mark.parametrize("text,want", [
    ("2GB", 2 * 10**9), ("512MiB", 512 << 20), (4096, 4096), ("1e9", 10**9), ("1.5kb", 1500),
    ("3PB", 3 * 10**15), ("2PiB", 2 << 50), ("1EiB", 1 << 60), (" 7 tib ", 7 << 40),
    ("8EiB", None), (str(MAX_SIZE), MAX_SIZE),
])
def test_sizes(text, want):
    if want is None:  # 8 EiB is one byte more than an int64 holds
        with pytest.raises(GraphsysError, match="more than 8 EiB"):
            parse_size(text)
        return
    assert parse_size(text) == want


@pytest.mark.parametrize("text,match", [
    ("1e99", r"^memory_limit: size '1e99' is more than 8 EiB \(9,223,372,036,854,775,807 "
             r"bytes\)$"),
    ("100000PB", "more than 8 EiB"), (2**70, "more than 8 EiB"),
    ("0", "size must be positive"), ("0.4", "size must be positive"), ("-1", "cannot parse"),
    ("lots", "cannot parse size 'lots'"), ("nan", "cannot parse"), (True, "cannot parse"),
    (1.5, "cannot parse"),
])
def test_refused_sizes_are_one_line(text, match):
    with pytest.raises(GraphsysError, match=match):
        parse_size(text, field="memory_limit")


def test_minimum_is_named():
    assert parse_size("64MiB", minimum=64 << 20) == 64 << 20
    with pytest.raises(GraphsysError, match=r"^x: size '1' is less than 1,000,000 bytes, the "
                                            r"least that can work$"):
        parse_size("1", field="x", minimum=1_000_000)


def test_a_numpy_integer_is_a_byte_count():
    """``ingest(memory_limit=np.int64(10**9))`` was refused ("cannot parse size
    np.int64(1000000000)") while every int is a byte count; a bool and a float stay
    refused."""
    import numpy as np

    assert parse_size(np.int64(10**9)) == 10**9 and type(parse_size(np.uint32(4096))) is int
    for bad in (True, np.float64(1e9), 1.5e9):
        with pytest.raises(GraphsysError, match="cannot parse size"):
            parse_size(bad)
