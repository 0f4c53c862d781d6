"""The ``sym`` (undirected) adjacency index: equal to scipy's symmetrised, deduplicated
adjacency whatever the input multiplicity, direction, self-loops and partitioning, built in
several row regions under a tiny memory limit, listed with hashes, and checked by verify."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from graphsys import open_graph
from graphsys.cli import main
from graphsys.errors import FormatError
from graphsys.storage import adjacency_index, csr
from graphsys.storage.adjacency_index import build_index, min_build_memory
from graphsys.storage.column_file import data_offset
from graphsys.storage.format import index_file
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources
from graphsys.storage.verify import verify_graph


def _graph(tmp_path, seed: int, partitions: int, weighted: bool, n_nodes=300, n_edges=4000):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, n_nodes, n_edges)
    d = rng.integers(0, n_nodes, n_edges)
    d[:50] = s[:50]  # self-loops
    s, d = np.concatenate([s, d[:500]]), np.concatenate([d, s[:500]])  # both directions
    s, d = np.concatenate([s, s[:300]]), np.concatenate([d, d[:300]])  # duplicates
    w = rng.integers(1, 9, len(s)) / 4
    f = tmp_path / f"e{seed}.tsv"
    f.write_text("".join(f"{a}\t{b}\t{x}\n" if weighted else f"{a}\t{b}\n"
                         for a, b, x in zip(s, d, w)))
    out = tmp_path / f"g{seed}"
    ingest_sources([EdgeSource([f], weight_col=2 if weighted else None)], out,
                   IngestOptions(partitions=partitions))
    return out, s, d, w


def _reference(g, s, d, w, weighted):
    """scipy's symmetric adjacency: both directions, parallel entries summed (so a
    self-loop counts twice), as the samplers' in-RAM view."""
    n = g.num_nodes()
    si, di = g.to_internal(s), g.to_internal(d)
    data = np.concatenate([w, w]) if weighted else np.ones(2 * len(s))
    m = sp.csr_matrix((data, (np.concatenate([si, di]), np.concatenate([di, si]))),
                      shape=(n, n))
    m.sum_duplicates()
    m.sort_indices()
    return m


@pytest.mark.parametrize("seed,partitions,weighted", [(0, 1, False), (1, 3, True),
                                                      (2, 4, False), (3, 5, True)])
def test_sym_index_equals_scipy_symmetrised_in_several_row_regions(tmp_path, monkeypatch,
                                                                   seed, partitions, weighted):
    path, s, d, w = _graph(tmp_path, seed, partitions, weighted)
    g = open_graph(path)
    regions = []
    real = adjacency_index._region_end

    def spy(raw_ptr, r0, spare, entry_bytes):
        regions.append(r0)
        return real(raw_ptr, r0, spare, entry_bytes)

    monkeypatch.setattr(adjacency_index, "_region_end", spy)
    # 4 KiB past the minimum: a region holds a few hundred raw entries
    build_index(g, ("sym",), memory_limit=min_build_memory(g.num_nodes()) + 4096)
    assert len(regions) > 3
    ref = _reference(g, s, d, w, weighted)
    mapped = open_graph(path).adjacency_index(kind="sym")
    assert mapped.indices.dtype == np.int32 and not mapped.indices.flags.writeable
    np.testing.assert_array_equal(mapped.indptr, ref.indptr)
    np.testing.assert_array_equal(mapped.indices, ref.indices)
    if weighted:
        np.testing.assert_array_equal(mapped.weight, ref.data.astype(np.float32))
    else:
        assert mapped.weight is None
    # every self-loop once; every distinct pair once per direction
    rows = np.repeat(np.arange(g.num_nodes()), np.diff(mapped.indptr))
    pairs = set(zip(rows.tolist(), mapped.indices.tolist()))
    assert len(pairs) == mapped.info.num_edges
    assert all((b, a) in pairs for a, b in pairs)


def test_default_budget_builds_in_one_region_and_equals_small_budget(tmp_path):
    path, s, d, w = _graph(tmp_path, 7, 3, True)
    build_index(open_graph(path), ("sym",))
    big = open_graph(path).adjacency_index(kind="sym")
    ref = _reference(open_graph(path), s, d, w, True)
    np.testing.assert_array_equal(big.indices, ref.indices)
    np.testing.assert_array_equal(big.weight, ref.data.astype(np.float32))


def test_manifest_lists_sym_with_hashes_version_4_and_verify_checks_it(tmp_path):
    path, *_ = _graph(tmp_path, 4, 2, False)
    assert main(["index", str(path), "--undirected"]) == 0
    data = json.loads((path / "manifest.json").read_text())
    assert data["format_version"] == 4 and set(data["indexes"]["default"]) == {"sym"}
    for column in ("indptr", "indices"):
        entry = data["files"][index_file("default", "sym", column)]
        assert len(entry["sha256"]) == 64
    assert verify_graph(path)["indexes"] == 1
    assert build_index(open_graph(path), ("sym",)) == {}  # current: nothing to do
    # a version 3 reader does not know sym indexes
    data["format_version"] = 3
    (path / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(FormatError, match="sym index, which needs format_version 4"):
        open_graph(path)


def test_corrupted_sym_index_refused(tmp_path):
    path, *_ = _graph(tmp_path, 5, 2, False)
    build_index(open_graph(path), ("sym",))
    f = path / index_file("default", "sym", "indices")
    arr = np.memmap(f, dtype=np.int32, mode="r+", offset=data_offset(f), shape=(2,))
    arr[1] = arr[0]  # a repeated neighbour: still in range, no longer deduplicated
    arr.flush()
    del arr
    with pytest.raises(FormatError, match=f"{f}"):
        verify_graph(path)  # the sha256 differs
    # the structural check alone (hashes not consulted) refuses it too
    with pytest.raises(FormatError, match=f"{f}: row 0 is not sorted and deduplicated"):
        csr.map_index(open_graph(path), "default", "sym")


def test_sym_index_of_two_entity_types_over_global_ids(tmp_path):
    import pyarrow as pa

    from graphsys.storage.format import RelationType
    from graphsys.storage.ingest import NodeSource

    rng = np.random.default_rng(11)
    users, items = rng.integers(0, 40, 600), rng.integers(0, 25, 600)
    f = tmp_path / "bip.tsv"
    f.write_text("".join(f"u{u}\ti{i}\n" for u, i in zip(users, items)))
    ingest_sources([EdgeSource([f], relation="rated", header=False)], tmp_path / "g",
                   IngestOptions(partitions=3,
                                 relation_types=[RelationType("rated", "user", "item")]),
                   nodes=[NodeSource(pa.table({"id": [f"u{k}" for k in range(40)]}), "user"),
                          NodeSource(pa.table({"id": [f"i{k}" for k in range(25)]}), "item")])
    g = open_graph(tmp_path / "g")
    build_index(g, ("sym",), memory_limit=min_build_memory(g.num_nodes()) + 512)
    s, d = (np.concatenate(x) for x in zip(*[(a, b) for a, b, _, _ in g.iter_edges()]))
    n = g.num_nodes()
    ref = sp.csr_matrix((np.ones(2 * len(s)), (np.concatenate([s, d]), np.concatenate([d, s]))),
                        shape=(n, n))
    ref.sum_duplicates()
    ref.sort_indices()
    mapped = open_graph(tmp_path / "g").adjacency_index(kind="sym")
    np.testing.assert_array_equal(mapped.indptr, ref.indptr)
    np.testing.assert_array_equal(mapped.indices, ref.indices)


_BOUNDED_PROBE = """
import sys
from pathlib import Path
from graphsys import open_graph
from graphsys.memory import PeakMemory, current_memory
from graphsys.storage.adjacency_index import _build_sym, build_index, min_build_memory

build_index(open_graph(sys.argv[2]), ("sym",))  # compile the kernels on small arrays
g = open_graph(sys.argv[1])
limit = min_build_memory(g.num_nodes()) + (2 << 20)
before = current_memory().anon
with PeakMemory(interval=0.002) as pm:
    _build_sym(g, "default", Path(sys.argv[3]), False, limit)
print(pm.peak_anon - before)
"""


def test_sym_build_memory_is_bounded_by_the_budget(tmp_path):
    """A 1M-edge sym build under a 2 MiB buffer budget adds the raw row offsets and that
    buffer to anonymous memory, not its 8 MB of raw entries (measured in a fresh process:
    this one's heap keeps the pages of the ingest; without the hashing of the files, which
    reads them in fixed chunks)."""
    import subprocess
    import sys

    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    f = tmp_path / "e.parquet"
    pq.write_table(pa.table({"src": rng.integers(0, 1 << 16, 1_000_000),
                             "dst": rng.integers(0, 1 << 16, 1_000_000)}), f)
    ingest_sources([EdgeSource([f])], tmp_path / "g", IngestOptions(partitions=4))
    small, *_ = _graph(tmp_path, 9, 2, False, n_edges=100)
    (tmp_path / "out").mkdir()
    out = subprocess.run([sys.executable, "-c", _BOUNDED_PROBE, str(tmp_path / "g"),
                          str(small), str(tmp_path / "out")], capture_output=True, text=True,
                         check=True)
    grown = int(out.stdout.split()[-1])
    # raw offsets (0.5 MB) and the 2 MiB region, not the 8 MB of raw entries
    assert 500_000 < grown < 4_000_000, grown
