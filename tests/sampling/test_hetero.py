"""Typed neighbour sampling vs brute force over the stored edges, and the typed views."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
import torch

from graphsys.errors import GraphsysError, ParameterError
from graphsys.sampling import HeteroNeighborSampler, TypedBlock
from graphsys.storage.format import RelationType
from graphsys.storage.graph import open_graph
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources

RELS = [RelationType("rates", "user", "item"), RelationType("follows", "user", "user"),
        RelationType("similar", "item", "item")]


def typed_graph(root, partitions=2, num_edges=300, seed=0):
    """users 0..19, items 0..14, three relations (one user->item, one per type)."""
    rng = np.random.default_rng(seed)
    r = rng.integers(0, 3, num_edges)
    src = np.where(r == 2, rng.integers(0, 15, num_edges), rng.integers(0, 20, num_edges))
    dst = np.where(r == 1, rng.integers(0, 20, num_edges), rng.integers(0, 15, num_edges))
    names = np.array([x.name for x in RELS])[r]
    t = pa.table({"src": pa.array(src), "dst": pa.array(dst), "rel": pa.array(names)})
    ingest_sources([EdgeSource(table=t, src_col="src", dst_col="dst", rel_col="rel")], root / "g",
                   IngestOptions(relation_types=RELS, partitions=partitions))
    return open_graph(root / "g")


def brute_in_neighbours(graph, reverse=True):
    """{(relation index, global dst): Counter of global srcs} from the stored edges."""
    out: dict = {}
    R = len(graph.relation_types)
    for s, d, rel, _ in graph.iter_edges():
        rel = np.zeros(len(s), np.int64) if rel is None else rel
        for a, b, k in zip(s.tolist(), d.tolist(), rel.tolist(), strict=True):
            out.setdefault((k, b), Counter())[a] += 1
            if reverse:
                out.setdefault((k + R, a), Counter())[b] += 1
    return out


@pytest.fixture
def graph(tmp_path):
    return typed_graph(tmp_path)


def test_relations_and_offsets(graph):
    s = HeteroNeighborSampler(graph, [2])
    assert s.relations[:3] == [("user", "rates", "item"), ("user", "follows", "user"),
                               ("item", "similar", "item")]
    assert s.relations[3:] == [("item", "rev_rates", "user"), ("user", "rev_follows", "user"),
                               ("item", "rev_similar", "item")]
    assert s.num_nodes == graph.num_nodes("user") + graph.num_nodes("item")
    assert s.num_relations == 6


@pytest.mark.parametrize("reverse", [True, False])
def test_full_fanout_is_the_typed_in_neighbourhood(graph, reverse):
    s = HeteroNeighborSampler(graph, [-1], reverse=reverse)
    brute = brute_in_neighbours(graph, reverse)
    seeds = np.arange(s.num_nodes)
    (b,) = s.sample_blocks(seeds)
    assert torch.equal(b.dst_nodes, torch.from_numpy(seeds))
    got: dict = {}
    src = b.src_nodes[b.edge_src].tolist()
    dst = b.src_nodes[b.edge_dst].tolist()
    for a, d, k in zip(src, dst, b.edge_type.tolist(), strict=True):
        got.setdefault((k, d), Counter())[a] += 1
    assert got == brute


def test_sampled_edges_exist_with_their_relation(graph):
    s = HeteroNeighborSampler(graph, [2, 3])
    brute = brute_in_neighbours(graph)
    toff = graph.type_offsets
    blocks = s.sample_blocks([0, 3, toff["item"] + 2], rng_seed=5)
    for b in blocks:
        assert isinstance(b, TypedBlock)
        src = b.src_nodes[b.edge_src].tolist()
        dst = b.src_nodes[b.edge_dst].tolist()
        per = Counter(zip(b.edge_type.tolist(), dst, strict=True))
        for a, d, k in zip(src, dst, b.edge_type.tolist(), strict=True):
            assert brute[(k, d)][a] > 0
            s_t, _, d_t = s.relations[k]
            assert toff[s_t] <= a < toff[s_t] + graph.num_nodes(s_t)
            assert toff[d_t] <= d < toff[d_t] + graph.num_nodes(d_t)
        fan = 2 if b is blocks[0] else 3
        assert all(c <= fan for c in per.values())
        # without replacement: a node draws each stored neighbour at most as often as stored
        for (k, d, a), c in Counter(zip(b.edge_type.tolist(), dst, src, strict=True)).items():
            assert c <= brute[(k, d)][a]
    # layer chaining and determinism
    assert torch.equal(blocks[0].dst_nodes, blocks[1].src_nodes)
    again = s.sample_blocks([0, 3, toff["item"] + 2], rng_seed=5)
    assert all(torch.equal(x.edge_src, y.edge_src) and torch.equal(x.edge_type, y.edge_type)
               for x, y in zip(blocks, again, strict=True))


def test_a_node_samples_the_same_whatever_its_batch(graph):
    s = HeteroNeighborSampler(graph, [2])
    toff = s.type_offsets
    seeds = [0, 3, 11, toff["item"] + 2, toff["item"] + 7]
    (whole,) = s.sample_blocks(seeds, rng_seed=5)

    def picks(b, v):
        m = b.edge_dst == b.dst_nodes.tolist().index(v)
        return sorted(zip(b.edge_type[m].tolist(), b.src_nodes[b.edge_src[m]].tolist()))

    for v in seeds:
        (alone,) = s.sample_blocks([v], rng_seed=5)
        assert picks(alone, v) == picks(whole, v)


def test_per_relation_fanouts(graph):
    fan = {"rates": [1], "follows": [0], "similar": [-1], "rev_rates": [0],
           "rev_follows": [2], ("item", "rev_similar", "item"): [0]}
    s = HeteroNeighborSampler(graph, fan)
    brute = brute_in_neighbours(graph)
    (b,) = s.sample_blocks(np.arange(s.num_nodes), rng_seed=1)
    per = Counter(zip(b.edge_type.tolist(), b.src_nodes[b.edge_dst].tolist(), strict=True))
    assert not any(k in (1, 3, 5) for k, _ in per)
    assert all(c <= 1 for (k, _), c in per.items() if k == 0)
    assert all(c <= 2 for (k, _), c in per.items() if k == 4)
    for (k, d), cnt in brute.items():   # 'similar' takes every in-neighbour
        if k == 2:
            assert per[(k, d)] == sum(cnt.values())
    with pytest.raises(GraphsysError, match="no fanouts for relation"):
        HeteroNeighborSampler(graph, {"rates": [1]})
    # 1.5 was cut to 1 and True read as 1; 'a', NaN and a bare 3 raised raw errors
    for bad in ([1.5], [True], ["a"], [float("nan")], 3, [2**64]):
        with pytest.raises(ParameterError, match="^fanouts relation .*rates"):
            HeteroNeighborSampler(graph, {**fan, "rates": bad})
    assert HeteroNeighborSampler(graph, {**fan, "rates": "2"}).fanouts[0] == [2]
    # a misspelt or foreign relation was ignored without a word
    for extra in ("rate", ("user", "rates", "user")):
        with pytest.raises(ParameterError, match=f"^fanouts {re.escape(repr(extra))} is no "
                                                 f"relation of the sampler"):
            HeteroNeighborSampler(graph, {**fan, extra: [3]})


def test_hetero_blocks(graph):
    s = HeteroNeighborSampler(graph, [3, 3])
    blocks = s.sample_hetero_blocks({"item": [4, 1], "user": [7]}, rng_seed=2)
    last = blocks[-1]
    assert last.dst_nodes("item").tolist() == [4, 1]
    assert last.dst_nodes("user").tolist() == [7]
    brute = brute_in_neighbours(graph)
    toff = graph.type_offsets
    rel_index = {r: k for k, r in enumerate(s.relations)}
    for hb in blocks:
        for rel, (es, ed) in hb.edges.items():
            st, _, dt = rel
            a = hb.src_nodes[st][es] + toff[st]
            d = hb.dst_nodes(dt)[ed] + toff[dt]
            for x, y in zip(a.tolist(), d.tolist(), strict=True):
                assert brute[(rel_index[rel], y)][x] > 0
    # the input layer's destinations are the next layer's sources, per type
    for t in blocks[1].src_nodes:
        assert torch.equal(blocks[0].dst_nodes(t), blocks[1].src_nodes[t])


def test_mapped_index_single_relation(tmp_path):
    """One relation between two types, served from the stored CSR/CSC index."""
    from graphsys.storage.adjacency_index import build_index

    rng = np.random.default_rng(3)
    t = pa.table({"src": pa.array(rng.integers(0, 12, 80)),
                  "dst": pa.array(rng.integers(0, 9, 80))})
    rel = [RelationType("rates", "user", "item")]
    ingest_sources([EdgeSource(table=t, src_col="src", dst_col="dst", relation="rates")],
                   tmp_path / "g", IngestOptions(relation_types=rel, partitions=2))
    g = open_graph(tmp_path / "g")
    ram = HeteroNeighborSampler(g, [-1])
    build_index(g, ("csr", "csc"))
    g = open_graph(tmp_path / "g")
    mapped = HeteroNeighborSampler(g, [-1])
    assert np.shares_memory(mapped._adj[0].indices, g.adjacency_index(kind="csc").indices)
    seeds = np.arange(ram.num_nodes)
    (a,), (b,) = ram.sample_blocks(seeds), mapped.sample_blocks(seeds)
    key = (lambda blk: sorted(zip(blk.edge_type.tolist(), blk.src_nodes[blk.edge_dst].tolist(),
                                  blk.src_nodes[blk.edge_src].tolist(), strict=True)))
    assert key(a) == key(b)
    assert key(a) == sorted((k, d, s) for (k, d), c in brute_in_neighbours(g).items()
                            for s, n in c.items() for _ in range(n))


def test_a_stored_relation_named_as_a_reverse_is_refused(tmp_path):
    # stored x: A -> B and rev_x: B -> A; x's reverse is ('B', 'rev_x', 'A') too, and the
    # HeteroBlock keyed by it held 3 of the 4 sampled edges
    from graphsys.storage.ingest import NodeSource

    e = pa.table({"src": [0, 1], "dst": [1, 0], "rel": ["x", "rev_x"]})
    ingest_sources([EdgeSource(table=e, rel_col="rel")], tmp_path / "g",
                   IngestOptions(relation_types=[RelationType("x", "A", "B"),
                                                 RelationType("rev_x", "B", "A")]),
                   nodes=[NodeSource(pa.table({"id": [0, 1]}), "A"),
                          NodeSource(pa.table({"id": [0, 1]}), "B")])
    g = open_graph(tmp_path / "g")
    with pytest.raises(GraphsysError, match="'rev_x', 'A'\\) is both a stored relation"):
        HeteroNeighborSampler(g, [-1])
    hb = HeteroNeighborSampler(g, [-1], reverse=False).sample_hetero_blocks(
        {"A": [0, 1], "B": [0, 1]})[0]
    assert hb.num_edges() == 2
