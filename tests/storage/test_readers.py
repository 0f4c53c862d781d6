"""The read-ahead of edge batches (:func:`graphsys.storage.read_ahead.read_ahead`): order,
errors in place, bounded look-ahead, early close."""

from __future__ import annotations

import threading
import time

import pyarrow as pa
import pytest

from graphsys.storage.read_ahead import read_ahead
from graphsys.storage.readers import RawEdgeBatch


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


def test_an_ended_or_closed_read_ends_again():
    """Asked again after its end, after an error or once closed, the iterator ends at once
    (a generator's behaviour) rather than waiting for a helper that has stopped."""
    log: list = []
    done = read_ahead(batches(3, log), 1 << 20)
    assert len(list(done)) == 3
    assert next(done, "end") == "end" and next(done, "end") == "end"
    failed = read_ahead(batches(3, log, fail_at=1), 1 << 20)
    next(failed)
    with pytest.raises(ValueError, match="bad batch 1"):
        next(failed)
    assert next(failed, "end") == "end"
    closed = read_ahead(batches(100, log), 1 << 20)
    next(closed)
    closed.close()
    assert next(closed, "end") == "end"


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


def _parquet(path, n: int = 10_000):
    import pyarrow.parquet as pq

    table = pa.table({"a": pa.array(range(n), pa.int64()), "src": pa.array(range(n), pa.int64()),
                      "dst": pa.array(range(1, n + 1), pa.int64())})
    pq.write_table(table, path, row_group_size=1000)
    return table


def _rows(batches) -> list[tuple[int, int]]:
    return [(s, d) for b in batches for s, d in zip(b.columns["src"].to_pylist(),
                                                     b.columns["dst"].to_pylist())]


def test_a_table_read_begun_early_is_taken_over_by_the_same_read(tmp_path, monkeypatch):
    """read_table of the file and roles start_table_read began takes its batches (the same
    rows, progress reported to the new callback); another read cancels it."""
    from graphsys.storage import readers

    monkeypatch.setattr(readers, "TABLE_BATCH_ROWS", 1000)
    path = tmp_path / "e.parquet"
    table = _parquet(path)
    roles = {"src": None, "dst": None, "rel": None, "weight": None}
    expected = list(zip(table["src"].to_pylist(), table["dst"].to_pylist()))
    full = readers.default_table_roles(roles, table.column_names)
    assert readers.start_table_read(path, roles, 1 << 20)
    seen: list[int] = []
    batches = readers.read_table(path, "parquet", full, seen.append)
    assert readers.read_ahead(batches, 1 << 20) is batches  # decoded ahead already
    assert _rows(batches) == expected
    assert seen and seen[-1] == path.stat().st_size
    # another roles: the early read is dropped, its helper stopped, the read is its own
    assert readers.start_table_read(path, roles, 1 << 20)
    other = {**full, "src": "a"}
    got = _rows(readers.read_table(path, "parquet", other, lambda pos: None))
    assert got == list(zip(table["a"].to_pylist(), table["dst"].to_pylist()))
    assert not readers._early
    assert readers.start_table_read(path, roles, 1 << 20)
    readers.cancel_table_reads()
    assert not any(t.name == "graphsys-read-ahead" for t in threading.enumerate())
    assert not readers.start_table_read(tmp_path / "missing.parquet", roles, 1 << 20)


def test_table_ids_read_as_int32_where_a_batch_fits_and_ingest_the_same(tmp_path, monkeypatch):
    """A batch's int64 id columns come as int32 where every id fits, else as read; an
    ingest of batches of both kinds has the input's edges."""
    import pyarrow.parquet as pq

    import graphsys
    from graphsys.storage import readers

    small = pa.array([1, -5, 2**31 - 1], pa.int64())
    assert readers.narrow_ids(small).type == pa.int32()
    assert readers.narrow_ids(small).to_pylist() == small.to_pylist()
    big = pa.array([1, 2**31], pa.int64())
    assert readers.narrow_ids(big) is big
    assert readers.narrow_ids(pa.array(["a"])).type == pa.string()
    monkeypatch.setattr(readers, "TABLE_BATCH_ROWS", 3)
    src = [1, 2, 3, 2**40, 7, -2, 4, 5, 6, 2**31, 1, 3]
    dst = [2, 3, 1, 1, 2**40, 7, 5, 6, 4, 2, -2, 2**31]
    path = tmp_path / "e.parquet"
    pq.write_table(pa.table({"src": pa.array(src, pa.int64()),
                             "dst": pa.array(dst, pa.int64())}), path)
    rows = readers.read_table(path, "parquet", {"src": "src", "dst": "dst", "rel": None,
                                                "weight": None}, lambda pos: None)
    assert [b.columns["src"].type for b in rows] == [pa.int32(), pa.int64(), pa.int32(),
                                                      pa.int64()]
    g = graphsys.ingest(path, tmp_path / "g", partitions=2)
    got = sorted((int(g.to_original([s])[0]), int(g.to_original([d])[0]))
                 for s, d, _, _ in g.iter_edges() for s, d in zip(s.tolist(), d.tolist()))
    assert got == sorted(zip(src, dst))


def test_an_early_read_of_a_fifo_is_not_begun(tmp_path, capsys):
    """'graphsys ingest F --format parquet' with F a FIFO hung for good (SIGTERM could not
    end it): the read begun ahead opened the FIFO, which waits for a writer, before the
    ingest's own check of its inputs. It is not begun; the ingest refuses in one line."""
    import os

    from graphsys import cli
    from graphsys.storage import readers

    fifo = tmp_path / "e.parquet"
    os.mkfifo(fifo)
    done = []
    t = threading.Thread(target=lambda: done.append(readers.start_table_read(
        fifo, {"src": None, "dst": None, "rel": None, "weight": None}, 1 << 20)),
        daemon=True)
    t.start()
    t.join(30)
    assert done == [False]
    assert cli.main(["ingest", str(fifo), "--out", str(tmp_path / "g")]) == 2
    assert "not a regular file (a FIFO)" in capsys.readouterr().err


@pytest.mark.parametrize("ids", ["int", "str"])
def test_an_ingest_reads_text_in_blocks_its_memory_limit_sizes(tmp_path, monkeypatch, ids):
    """A text file is read in blocks of a 32nd of ``memory_limit`` (at least 1 MiB, at most
    16 MiB): Arrow's reader holds several at once, and a fixed 16 MiB block had an ingest
    of 8M edges with ``memory_limit='100MB'`` peak at 464 MiB of anonymous memory (315
    with 3 MiB blocks). Fast path (integer ids) and careful path (string ids) alike."""
    import numpy as np

    import graphsys
    from graphsys.storage import readers

    assert readers.text_block_bytes(32 << 20) == 1 << 20
    assert readers.text_block_bytes(1 << 30) == readers.TEXT_BLOCK_BYTES
    sizes = []
    open_csv = readers.pacsv.open_csv

    def spy(source, read_options=None, **kw):
        sizes.append(read_options.block_size)
        return open_csv(source, read_options=read_options, **kw)

    monkeypatch.setattr(readers.pacsv, "open_csv", spy)
    rng = np.random.default_rng(0)
    edges = rng.integers(0, 10**9, size=(60_000, 2))
    prefix = "" if ids == "int" else "n"
    path = tmp_path / "e.tsv"
    path.write_text("".join(f"{prefix}{s}\t{prefix}{d}\n" for s, d in edges.tolist()))
    g = graphsys.ingest(path, tmp_path / "g", memory_limit=32 << 20, progress=False)
    assert g.num_edges() == len(edges)
    assert sizes and all(size == 1 << 20 for size in sizes)
