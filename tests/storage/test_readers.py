"""The read-ahead of edge batches (:func:`graphsys.storage.readers.read_ahead`): order,
errors in place, bounded look-ahead, early close."""

from __future__ import annotations

import threading
import time

import pyarrow as pa
import pytest

from graphsys.storage.readers import RawEdgeBatch, read_ahead


def batches(n: int, log: list, fail_at: int | None = None):
    try:
        for k in range(n):
            if k == fail_at:
                raise ValueError(f"bad batch {k}")
            log.append(k)
            yield RawEdgeBatch({"src": pa.array([k] * 1000, pa.int64())}, None, k)
    finally:
        log.append("closed")


def test_yields_every_batch_in_order():
    log: list = []
    got = [b.columns["src"][0].as_py() for b in read_ahead(batches(20, log), 1 << 20)]
    assert got == list(range(20))
    assert log[-1] == "closed"


def test_an_error_of_the_reader_is_raised_in_its_place():
    log: list = []
    got = []
    with pytest.raises(ValueError, match="bad batch 5"):
        for b in read_ahead(batches(20, log, fail_at=5), 1 << 20):
            got.append(b.columns["src"][0].as_py())
    assert got == [0, 1, 2, 3, 4]


def test_reads_ahead_within_its_byte_budget_and_stops_when_closed():
    log: list = []
    it = read_ahead(batches(100, log), 3 * 8000)  # 8,000 bytes per batch
    next(it)
    deadline = time.monotonic() + 10
    while len(log) < 5 and time.monotonic() < deadline:  # 0 taken, 1-3 held, 4 decoded
        time.sleep(0.01)
    time.sleep(0.2)
    assert log == [0, 1, 2, 3, 4]  # batch 4 is decoded and waits for room
    it.close()
    assert log[-1] == "closed"
    assert not any(t.name == "graphsys-read-ahead" for t in threading.enumerate())
