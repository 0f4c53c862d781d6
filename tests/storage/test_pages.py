"""Paging advice on mapped bucket columns: release drops resident pages, never data."""

from __future__ import annotations

import os
import re

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pytest

from graphsys import open_graph
from graphsys.storage import pages
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources

linux_only = pytest.mark.skipif(pages._madvise is None, reason="needs Linux madvise")


def rss_file_kib() -> int:
    with open(f"/proc/{os.getpid()}/status") as f:
        return int(re.search(r"RssFile:\s+(\d+)", f.read()).group(1))


@pytest.fixture(scope="module")
def big_bucket(tmp_path_factory):
    """One bucket of 4M edges (32 MiB of src + dst), opened."""
    tmp = tmp_path_factory.mktemp("pages")
    rng = np.random.default_rng(3)
    n = 4_000_000
    f = tmp / "e.arrow"
    feather.write_feather(pa.table({"src": rng.integers(0, 50_000, n),
                                    "dst": rng.integers(0, 50_000, n)}), f,
                          compression="uncompressed")
    ingest_sources([EdgeSource([f])], tmp / "g", IngestOptions(partitions=1))
    return open_graph(tmp / "g").bucket(0, 0)


@linux_only
def test_release_drops_resident_pages_and_keeps_the_data(big_bucket):
    region = big_bucket.mapped_region
    eb = next(big_bucket.batches())
    checksum = int(eb.src.sum()) + int(eb.dst.sum())  # faults every page in
    before = rss_file_kib()
    pages.release(region, eb.src, eb.dst)
    after = rss_file_kib()
    assert before - after > 24 * 1024  # most of the 32 MiB left the resident set
    pages.will_need(region, eb.src, eb.dst)
    assert int(eb.src.sum()) + int(eb.dst.sum()) == checksum  # read back from the file


@linux_only
def test_advice_outside_the_mapping_does_nothing(big_bucket):
    heap = np.arange(1 << 20, dtype=np.int64)  # 8 MiB of anonymous memory
    start, end = big_bucket.mapped_region
    pages.release((start, end), heap)  # heap lies outside the bucket's mapping
    assert np.array_equal(heap, np.arange(1 << 20, dtype=np.int64))


def test_mapped_region_holds_the_columns(big_bucket):
    start, end = big_bucket.mapped_region
    eb = next(big_bucket.batches())
    for col in (eb.src, eb.dst):
        addr = col.__array_interface__["data"][0]
        assert start <= addr and addr + col.nbytes <= end


@linux_only
def test_checking_passes_leave_no_resident_pages(big_bucket, monkeypatch):
    """The reads that only check or count (an index's value check when it is mapped, the
    bounds check when an out-of-core pass opens a bucket, a degree count over the other
    index) release the pages they read: the pass, not the check, sets the resident set."""
    from graphsys import bsp
    from graphsys.bsp.algorithms.pagerank import PageRank
    from graphsys.storage.adjacency_index import build_index

    path = big_bucket.graph.location.root
    build_index(open_graph(path), ("csc",))
    g = open_graph(path)
    before = rss_file_kib()
    mapped = g.adjacency_index(kind="csc")  # checks 16 MiB of neighbour ids
    assert int(mapped.indices[-1]) >= 0
    assert rss_file_kib() - before < 8 * 1024  # the check alone would leave 16 MiB
    monkeypatch.setattr(bsp.stream, "RESIDENT_EDGE_BYTES", 0)  # page advice on
    edges = bsp.stream.StreamEdges(g, None, PageRank(), None,
                                   "numba")
    before = rss_file_kib()
    deg = edges.degrees("out")  # no CSR: counted over the CSC's 16 MiB of ids
    edges._bucket(0, 0)  # bounds-checks 32 MiB of offsets
    assert rss_file_kib() - before < 16 * 1024  # 48 MiB without the releases
    assert deg.sum() == g.num_edges()


def _vm_flags(address: int) -> list[str]:
    """The VmFlags of this process's mapping holding ``address`` (/proc/self/smaps)."""
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = re.match(r"^([0-9a-f]+)-([0-9a-f]+) ", line)
            if head:
                inside = int(head.group(1), 16) <= address < int(head.group(2), 16)
            elif inside and line.startswith("VmFlags:"):
                return line.split()[1:]
    raise AssertionError("no mapping holds the address")


@linux_only
@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="needs /proc smaps")
def test_scratch_arrays_ask_for_small_pages():
    # NumPy asks for huge pages on its large arrays ("hg"); ingest's routing scratch, written
    # and read in order, asks for none ("nh") so its first writes never wait on compaction
    arr = pages.scratch_array(8 << 20, np.uint64)
    assert arr.shape == (8 << 20,) and arr.dtype == np.uint64
    middle = arr.__array_interface__["data"][0] + arr.nbytes // 2
    flags = _vm_flags(middle)
    assert "nh" in flags and "hg" not in flags
    assert pages.scratch_array(0, np.int32).shape == (0,)
