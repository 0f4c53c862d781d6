"""Renumbering an index into grown partitions and merging indexes, against brute force."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from graphsys.storage import index_merge


def _grown_layout(rng, parts: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    old = tuple(int(x) for x in rng.integers(0, 6, parts))
    return old, tuple(a + int(b) for a, b in zip(old, rng.integers(0, 4, parts)))


@pytest.mark.parametrize("seed", range(5))
def test_remap_moves_each_id_by_the_nodes_added_before_its_partition(seed):
    rng = np.random.default_rng(seed)
    old, new = _grown_layout(rng, 6)
    want = []
    for p, size in enumerate(old):  # node (p, local) keeps its local offset in partition p
        want += [sum(new[:p]) + local for local in range(size)]
    assert index_merge.remap_ids(np.arange(sum(old)), old, new).tolist() == want
    assert index_merge.grown_from(old, new) and not index_merge.grown_from(new[:-1], new)


def _random_csr(rng, n: int, m: int, weighted: bool):
    rows, cols = rng.integers(0, n, m), rng.integers(0, n, m)
    order = np.lexsort((cols, rows))
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    w = rng.random(m).astype(np.float32) if weighted else None
    return indptr, cols[order].astype(np.int32), None if w is None else w[order]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dedupe", [False, True])
def test_merge_equals_the_sorted_union_of_rows(weighted, dedupe):
    rng = np.random.default_rng(7)
    n = 40
    parts = [_random_csr(rng, n, m, weighted) for m in (150, 0, 60)]
    indptr, idx, w = index_merge.merge(parts, n, dedupe=dedupe)
    for r in range(n):
        entries = collections.defaultdict(float)
        count = collections.Counter()
        for p_indptr, p_idx, p_w in parts:
            for k in range(p_indptr[r], p_indptr[r + 1]):
                entries[int(p_idx[k])] += float(p_w[k]) if weighted else 1.0
                count[int(p_idx[k])] += 1
        got = idx[indptr[r]:indptr[r + 1]].tolist()
        want = sorted(count) if dedupe else sorted(count.elements())
        assert got == want
        if weighted and dedupe:
            np.testing.assert_allclose(w[indptr[r]:indptr[r + 1]],
                                       [entries[c] for c in want], rtol=1e-6)
    assert (w is None) == (not weighted)


def test_remapped_index_keeps_rows_and_order():
    rng = np.random.default_rng(3)
    old, new = (4, 0, 5), (6, 2, 5)
    indptr, idx, _ = _random_csr(rng, sum(old), 50, False)
    r_indptr, r_idx = index_merge.remap_index(indptr, idx, old, new)
    ids = index_merge.remap_ids(np.arange(sum(old)), old, new)
    for r in range(sum(old)):
        row = idx[indptr[r]:indptr[r + 1]]
        assert r_idx[r_indptr[ids[r]]:r_indptr[ids[r] + 1]].tolist() == ids[row].tolist()
    assert np.diff(r_indptr)[np.setdiff1d(np.arange(sum(new)), ids)].sum() == 0


def test_a_view_with_a_member_without_an_index_maps_none_of_them(tmp_path):
    """The view's index is merged only when every member has one; otherwise no member's
    index is mapped (renumbering the old one would be thrown away)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import graphsys
    from graphsys.storage.adjacency_index import build_index

    pq.write_table(pa.table({"src": [1, 2, 3], "dst": [2, 3, 1]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"src": [3, 7], "dst": [7, 1]}), tmp_path / "b.parquet")
    g = graphsys.ingest(tmp_path / "a.parquet", tmp_path / "g", partitions=2)
    build_index(g, ("csc",))
    g = graphsys.ingest(tmp_path / "b.parquet", tmp_path / "g", append=True, edge_set="b")
    assert g.adjacency_index(None, "csc") is None
    assert ("default", "csc") not in g._mapped_indexes
    build_index(g, ("csc",), edge_sets=["b"])
    g = graphsys.open_graph(tmp_path / "g")
    merged = g.adjacency_index(None, "csc")
    built = g.csc(weights=False, edge_ids=True)  # built from the buckets
    assert merged is not None and np.array_equal(merged.indptr, built.indptr)
    assert np.array_equal(merged.indices, built.indices)
