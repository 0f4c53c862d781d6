"""The temporal neighbour sampler against brute force: no edge at or after an event's time
ever reaches its sample, and the picks are the latest (or uniform distinct) earlier edges."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import torch

import graphsys
from graphsys.errors import GraphsysError
from graphsys.sampling import SamplerInput, TemporalBlock, TemporalNeighborSampler
from graphsys.sampling._util import derive_seed
from graphsys.sampling.temporal import temporal_adjacency
from graphsys.storage.adjacency_index import build_index
from graphsys.storage.temporal_index import map_temporal


def _graph(tmp_path, seed: int, float_time: bool = False, parts: int = 2):
    rng = np.random.default_rng(seed)
    n, m = 40, 900
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    ts = rng.integers(0, 60, m)                      # many ties, self-loops, repeats
    if float_time:
        ts = ts + rng.choice([0.0, 0.25, 0.5], m)
    from dataclasses import fields

    from graphsys.storage.ingest_inputs import IngestOptions

    key = "partitions" if "partitions" in {f.name for f in fields(IngestOptions)} \
        else "num_partitions"
    g = graphsys.from_arrow(pa.table({"src": src, "dst": dst, "timestamp": ts}),
                            tmp_path / f"g{seed}", edge_columns=["timestamp"], **{key: parts})
    # the edges in bucket-stream order: edge id -> (u, v, t), internal ids
    s, d, t = (np.concatenate(x) for x in zip(*[
        (a, b, c) for (a, b, _, _), c in zip(g.iter_edges(), g.edge_column("timestamp"))]))
    return g, s, d, t


def _brute(s, d, t, node, at):
    """Edge ids touching ``node`` strictly before ``at``, ordered by (time, edge id)."""
    ids = np.flatnonzero(((s == node) | (d == node)) & (t < at))
    return ids[np.lexsort((ids, t[ids]))]


@pytest.mark.parametrize("seed, float_time", [(0, False), (1, True)])
@pytest.mark.parametrize("strategy", ["recent", "uniform"])
def test_no_future_edge_ever(tmp_path, seed, float_time, strategy):
    g, s, d, t = _graph(tmp_path, seed, float_time)
    sampler = TemporalNeighborSampler(g, 7, strategy=strategy)
    rng = np.random.default_rng(seed + 10)
    nodes = rng.integers(0, g.num_nodes(), 3000)
    at = rng.integers(-1, 62, 3000).astype(float) + (0.5 if float_time else 0.0) * (
        rng.random(3000) < 0.3)
    # the event times also hit the stamps exactly: ties with the event are excluded
    hit = rng.integers(0, len(t), 1000)
    nodes[:1000], at[:1000] = s[hit], t[hit]
    for parallel in (True, False):
        hop = sampler.sample_hop(nodes, at, 7, rng_seed=5, parallel=parallel)
        for i in range(len(nodes)):
            want = _brute(s, d, t, nodes[i], at[i])
            c = hop.count[i]
            ids = hop.eid[i, :c]
            assert c == min(7, len(want))
            # no future edge: every picked edge is strictly before the event, touches it,
            # and its recorded neighbour and time are the stored edge's
            assert (t[ids] < at[i]).all()
            other = np.where(s[ids] == nodes[i], d[ids], s[ids])
            assert (hop.nbr[i, :c] == other).all() and (hop.time[i, :c] == t[ids]).all()
            assert (hop.nbr[i, c:] == -1).all() and (hop.eid[i, c:] == -1).all()
            if strategy == "recent":
                np.testing.assert_array_equal(ids, want[len(want) - c:])
            else:
                assert len(set(ids.tolist())) == c and set(ids.tolist()) <= set(want.tolist())
                assert (np.diff(t[ids]) >= 0).all()         # oldest first


def test_a_future_edge_would_be_caught(tmp_path):
    """The property above fails on a sampler that lets one edge at the event's time in."""
    g, s, d, t = _graph(tmp_path, 2)
    adj = temporal_adjacency(g)
    leaky = type(adj)(adj.indptr, adj.indices, adj.time - (adj.time == 30), adj.eid)
    hop = TemporalNeighborSampler(leaky, 50).sample_hop(np.arange(40), np.full(40, 30), 50)
    assert any((t[hop.eid[i, :hop.count[i]]] >= 30).any() for i in range(40))


def test_uniform_is_uniform_and_keyed_by_event(tmp_path):
    g, s, d, t = _graph(tmp_path, 3)
    sampler = TemporalNeighborSampler(g, 2, strategy="uniform")
    node = int(np.bincount(np.r_[s, d]).argmax())
    want = _brute(s, d, t, node, 61)
    counts = np.zeros(len(t), int)
    for seed in range(600):
        hop = sampler.sample_hop([node], [61], 2, rng_seed=seed)
        counts[hop.eid[0]] += 1
        again = sampler.sample_hop([3, node, 7], [10, 61, 5], 2, rng_seed=seed)
        assert (again.eid[1] == hop.eid[0]).all()        # the batch does not matter
    freq = counts[want] / counts[want].sum()
    assert counts.sum() == 1200 and np.abs(freq - 1 / len(want)).max() < 0.06


def test_uniform_draws_of_float_times_differ_by_time(tmp_path):
    """A float time was cut to an integer for the stream key: every event of node 0 at
    times in [0, 1), over the same 100 earlier events, drew the same 5 of them."""
    g = graphsys.from_arrow(pa.table({"src": np.zeros(100, np.int64),
                                      "dst": np.arange(1, 101),
                                      "timestamp": -np.arange(1.0, 101.0)}),
                            tmp_path / "f", edge_columns=["timestamp"])
    sampler = TemporalNeighborSampler(g, 5, strategy="uniform")
    times = np.arange(1, 10) / 10
    hop = sampler.sample_hop(np.zeros(9, np.int64), times, 5, rng_seed=3)
    assert len({tuple(r) for r in hop.eid.tolist()}) == 9
    again = sampler.sample_hop([0, 0], [times[4], -0.0], 5, rng_seed=3)
    assert (again.eid[0] == hop.eid[4]).all()                 # keyed by the event alone
    zero = sampler.sample_hop([0], [0.0], 5, rng_seed=3)
    assert (again.eid[1] == zero.eid[0]).all()                # -0.0 is 0.0


def test_stored_index_equals_ram_build_and_is_checked(tmp_path):
    g, *_ = _graph(tmp_path, 4)
    ram = temporal_adjacency(g)
    assert not ram.mapped
    build_index(g, ("temporal",))
    stored = map_temporal(graphsys.open_graph(g.path))
    assert stored.mapped and stored.indices.dtype == np.int32
    for a, b in zip((ram.indptr, ram.indices, ram.time, ram.eid),
                    (stored.indptr, stored.indices, stored.time, stored.eid)):
        np.testing.assert_array_equal(a, b)
    from graphsys.storage.verify import verify_graph

    verify_graph(g.path)                  # the manifest lists the index's files
    # a corrupted time column (a row out of order) is refused in one line
    rel = g.path / "index" / "default" / "temporal-time.arrow"
    from graphsys.storage.column_file import data_offset

    raw = np.memmap(rel, np.int64, "r+", offset=data_offset(rel), shape=len(stored.time))
    row = int(np.argmax(np.diff(stored.indptr) > 2))
    lo = stored.indptr[row]
    raw[lo] = raw[lo + 1] + 5
    raw.flush()
    del raw
    from graphsys.errors import FormatError

    with pytest.raises(FormatError, match="not in time order"):
        map_temporal(graphsys.open_graph(g.path))


def test_undirected_edge_set_holds_each_event_once(tmp_path):
    """An undirected edge set stores 0-1 at 5 as 0 -> 1 and 1 -> 0: node 1's latest three
    events before 100 were [0, 2, 2] (0-1 once, 1-2 twice), its events 0 and 2 once each."""
    rng = np.random.default_rng(3)
    src, dst, ts = rng.integers(0, 9, 60), rng.integers(0, 9, 60), rng.integers(-5, 5, 60)
    path = tmp_path / "u"
    g = graphsys.from_arrow(pa.table({"src": src, "dst": dst, "timestamp": ts}), path,
                            edge_columns=["timestamp"], undirected=True, partitions=2)
    ids = g.to_internal(np.arange(9))
    for adj in (temporal_adjacency(g), None):
        if adj is None:
            build_index(g, ("temporal",))
            adj = map_temporal(graphsys.open_graph(path))
        for v in range(9):
            row = slice(adj.indptr[ids[v]], adj.indptr[ids[v] + 1])
            got = sorted(zip(adj.time[row].tolist(), ids.argsort()[adj.indices[row]].tolist()))
            want = sorted([(int(t), int(b)) for a, b, t in zip(src, dst, ts) if a == v]
                          + [(int(t), int(a)) for a, b, t in zip(src, dst, ts)
                             if b == v and a != b])
            assert got == want
    small = graphsys.from_arrow(pa.table({"src": [0, 1], "dst": [1, 2], "timestamp": [5, 7]}),
                                tmp_path / "s", edge_columns=["timestamp"], undirected=True)
    hop = TemporalNeighborSampler(small, 3).sample_hop([1], [100], 3)
    assert hop.nbr.tolist() == [[0, 2, -1]] and hop.time.tolist() == [[5, 7, 0]]
    # an index built with each edge twice a row is stale: refused, and built again
    import dataclasses

    from graphsys.errors import FormatError
    from graphsys.storage.format import write_manifest

    build_index(g, ("temporal",))
    m = graphsys.open_graph(path).manifest
    info = m.indexes["default"]["temporal"]
    m.indexes["default"]["temporal"] = dataclasses.replace(info, num_edges=2 * info.num_edges)
    write_manifest(path, m)
    with pytest.raises(FormatError, match="stale index"):
        map_temporal(graphsys.open_graph(path))
    assert build_index(graphsys.open_graph(path), ("temporal",))   # not kept as current
    assert map_temporal(graphsys.open_graph(path)).num_entries == info.num_edges


def test_hops_and_views(tmp_path):
    g, s, d, t = _graph(tmp_path, 5)
    block = TemporalNeighborSampler(g, [4, 3]).sample_blocks(
        SamplerInput(np.arange(40), np.full(40, 50)))[0]
    # every row's picks: its own edges before the edge (or the seed time) that reached it
    assert (t[block.edge_ids.numpy()] < block.src_times[block.edge_dst].numpy()).all()
    # on a view until 20 no edge after 20 exists, whatever the event time
    view = graphsys.open_graph(g.path, until=20)
    hop = TemporalNeighborSampler(view, 50).sample_hop(np.arange(40), np.full(40, 99), 50)
    assert hop.time[hop.mask].max() <= 20
    assert hop.num_edges == 2 * (t <= 20).sum() - ((s == d) & (t <= 20)).sum()


def test_refusals(tmp_path):
    g, *_ = _graph(tmp_path, 6)
    with pytest.raises(GraphsysError, match="strategy"):
        TemporalNeighborSampler(g, 3, strategy="last")
    with pytest.raises(GraphsysError, match="outside the graph"):
        TemporalNeighborSampler(g, 3).sample_hop([99], [1], 3)
    for bad in ([1.5], [True], 2.5, ["a"], [float("nan")], [2**64], 0):  # cut or raw errors
        with pytest.raises(GraphsysError, match="^fanouts must be (a )?positive integer"):
            TemporalNeighborSampler(g, bad)
    for bad in (0, -1, 1.5, True):          # -1 and 1.5 raised raw errors, 0 sampled nothing
        with pytest.raises(GraphsysError, match="^fanout must be a positive integer"):
            TemporalNeighborSampler(g, 3).sample_hop([1], [1], bad)
    plain = graphsys.from_numpy([0, 1], [1, 0], tmp_path / "plain")
    with pytest.raises(GraphsysError, match="no 'timestamp' edge column"):
        TemporalNeighborSampler(plain, 3)
    with pytest.raises(GraphsysError, match="graphsys index .* --temporal"):
        temporal_adjacency(g, memory_limit=10)


def test_times_beyond_the_column_type_keep_their_order(tmp_path):
    """A query time is read as the least column value at or above it: 1e30 or a uint64
    past int64 used to wrap to a time before every stamp (no past at all), and a float64
    time against float32 stamps was rounded down past a stamp before it."""
    def counts(stamps, times):
        g = graphsys.from_arrow(pa.table({"src": [0, 1], "dst": [1, 2], "timestamp": stamps}),
                                tmp_path / f"g{len(list(tmp_path.iterdir()))}",
                                edge_columns=["timestamp"])
        return TemporalNeighborSampler(g, 5).sample_hop([1] * len(times), times, 5).count
    ints = pa.array([10, 20], pa.int64())
    assert counts(ints, [1e30, 2.0**63, 19.5, 20.0, -1e30]).tolist() == [2, 2, 1, 1, 0]
    assert counts(ints, np.array([2**64 - 1, 20], np.uint64)).tolist() == [2, 1]
    assert counts(ints, np.array([2**70, -2**70], object)).tolist() == [2, 0]
    f32 = pa.array([1.1, 16777216.0], pa.float32())
    assert counts(f32, [16777217, 16777216.5, 1.10000005, float(np.float32(1.1)),
                        1e300]).tolist() == [2, 2, 1, 0, 2]
    with pytest.raises(GraphsysError, match="finite"):
        counts(ints, np.array(["x"], object))
    # against float stamps: an integer past the float range is infinite (it raised a raw
    # OverflowError), and NaN, None or a string is refused (NaN sampled nothing, "5" was
    # parsed), as against integer stamps
    f64 = pa.array([1.0, 2.0], pa.float64())
    assert counts(f64, np.array([10**400, -10**400], object)).tolist() == [2, 0]
    assert counts(f32, [10**400]).tolist() == [2]
    for bad in ([np.nan], [None], ["5"], np.array([np.nan], np.float32)):
        with pytest.raises(GraphsysError, match="numbers, not NaN"):
            counts(f32, bad)


@pytest.mark.parametrize("strategy", ["recent", "uniform"])
def test_blocks_hold_the_past_of_every_row(tmp_path, strategy):
    """``sample_blocks`` against brute force: every row's picks are edges touching it
    strictly before its time (the latest ``k`` for ``recent``), and the rows of each depth
    are the used picks of the depth before."""
    g, s, d, t = _graph(tmp_path, 7)
    fanouts = [4, 3]
    sampler = TemporalNeighborSampler(g, fanouts, strategy=strategy)
    rng = np.random.default_rng(8)
    nodes = rng.integers(0, g.num_nodes(), 60)
    at = rng.integers(0, 62, 60)
    hit = rng.integers(0, len(t), 20)
    nodes[:20], at[:20] = s[hit], t[hit]                  # times equal to stamps: ties
    blocks = sampler.sample_blocks(SamplerInput(nodes, at), rng_seed=4)
    assert all(isinstance(b, TemporalBlock) for b in blocks) and len(blocks) == 2
    top, inner = blocks
    assert inner.dst_nodes.tolist() == nodes.tolist()
    assert inner.dst_times.tolist() == at.tolist()
    rows, times = top.src_nodes.numpy(), top.src_times.numpy()
    es, ed, eid = top.edge_src.numpy(), top.edge_dst.numpy(), top.edge_ids.numpy()
    assert (top.edge_times.numpy() < times[ed]).all()   # no neighbour at or after its row
    np.testing.assert_array_equal(t[eid], times[es])
    for r in range(top.num_dst_nodes):
        ids = eid[ed == r]
        want = _brute(s, d, t, rows[r], times[r])
        depth = 0 if r < len(nodes) else 1
        assert len(ids) == min(fanouts[depth], len(want))
        other = np.where(s[ids] == rows[r], d[ids], s[ids])
        np.testing.assert_array_equal(rows[es[ed == r]], other)
        if strategy == "recent":
            np.testing.assert_array_equal(ids, want[len(want) - len(ids):])
        else:
            assert len(set(ids.tolist())) == len(ids) and set(ids.tolist()) <= set(want.tolist())
    # the inner (last) block is the first hop alone, a prefix of the top one
    m = inner.num_edges
    assert torch.equal(inner.edge_ids, top.edge_ids[:m]) and inner.num_dst_nodes == len(nodes)
    hop = sampler.sample_hop(nodes, at, fanouts[0], derive_seed(4, 0))
    np.testing.assert_array_equal(rows[len(nodes):len(nodes) + m], hop.nbr[hop.mask])


def test_block_picks_are_uniform(tmp_path):
    """A node with six earlier edges, two uniform picks per event: each edge is picked with
    probability 1/3 and each of the 15 pairs with 1/15 (chi-square, p = 0.001 bounds)."""
    edges = pa.table({"src": [0] * 6 + [3], "dst": [1, 2, 3, 4, 5, 6, 4],
                      "timestamp": [1, 2, 3, 4, 5, 6, 9000]})
    g = graphsys.from_arrow(edges, tmp_path / "star", edge_columns=["timestamp"])
    sampler = TemporalNeighborSampler(g, 2, strategy="uniform")
    n = 4500
    block = sampler.sample_blocks(SamplerInput(np.zeros(n, np.int64), np.arange(7, 7 + n)),
                                  rng_seed=1)[0]
    assert block.num_edges == 2 * n and (block.edge_times < 7).all()
    picks = block.src_nodes[n:].numpy().reshape(n, 2)
    assert (picks[:, 0] != picks[:, 1]).all()
    single = np.bincount(picks.ravel(), minlength=7)[1:]
    expect = 2 * n / 6
    assert ((single - expect) ** 2 / expect).sum() < 20.5            # 5 df
    pair = np.bincount((np.sort(picks, 1) - 1) @ [6, 1], minlength=36)
    pair = pair[[a * 6 + b for a in range(6) for b in range(a + 1, 6)]]
    assert pair.sum() == n and ((pair - n / 15) ** 2 / (n / 15)).sum() < 36.1   # 14 df


def test_blocks_refuse_bad_seeds_in_one_line(tmp_path):
    g, *_ = _graph(tmp_path, 9)
    sampler = TemporalNeighborSampler(g, [2, 2])
    with pytest.raises(GraphsysError, match="outside the graph"):
        sampler.sample_blocks(SamplerInput([99], [5]))
    with pytest.raises(GraphsysError, match="finite"):
        sampler.sample_blocks(SamplerInput([1], [np.nan]))


def test_padded_sample_is_deprecated_and_agrees_with_blocks(tmp_path):
    """``sample`` (the padded hops, deprecated for one release) warns and picks what
    ``sample_blocks`` picks at depth 1."""
    g, s, d, t = _graph(tmp_path, 7)
    sampler = TemporalNeighborSampler(g, [4, 3])
    nodes, at = np.arange(30), np.full(30, 60)
    with pytest.warns(DeprecationWarning, match="sample_blocks"):
        hops = sampler.sample(nodes, at, rng_seed=4)
    top = sampler.sample_blocks(SamplerInput(nodes, at), rng_seed=4)[0]
    rows = top.src_nodes.numpy()
    m = int(hops[0].mask.sum())
    np.testing.assert_array_equal(rows[len(nodes):len(nodes) + m], hops[0].nbr[hops[0].mask])


def test_a_stale_temporal_index_names_the_command_that_builds_it_again(tmp_path):
    """After an append, the default edge set's temporal index (not read renumbered) is
    stale; the refusal said 'run graphsys index again', and ``graphsys index DIR`` built
    the new edge set's CSR/CSC, leaving it stale. It now names
    ``graphsys index DIR --temporal --edge-set default``, which builds it again."""
    import shlex

    from graphsys.cli import main
    from graphsys.errors import FormatError
    from graphsys.storage.append import append_edges
    from graphsys.storage.ingest import EdgeSource, IngestOptions

    first, more = tmp_path / "a.tsv", tmp_path / "b.tsv"
    first.write_text("0\t1\t5\n1\t2\t6\n2\t0\t7\n")
    more.write_text("3\t0\t9\n")
    path = tmp_path / "g"
    graphsys.ingest(first, path, edge_columns={"timestamp": 2}, index="temporal")
    append_edges(path, [EdgeSource([more], edge_set="more", edge_columns={"timestamp": 2})],
                 IngestOptions())
    with pytest.raises(FormatError, match="stale index") as info:
        graphsys.open_graph(path).view("temporal", edge_set="default")
    argv = shlex.split(str(info.value).rsplit("build it again: ", 1)[1].rstrip(")"))
    assert argv[:3] == ["graphsys", "index", str(path)] and "--temporal" in argv
    assert main(argv[1:] + ["--quiet"]) == 0
    view = graphsys.open_graph(path).view("temporal", edge_set="default")
    assert view.mapped and sorted(view.time.tolist()) == [5, 5, 6, 6, 7, 7]


def test_a_hop_seed_outside_the_kernels_range_is_refused(tmp_path):
    """sample_hop seeded its kernel with ``rng_seed & (2**63 - 1)``: True drew seed 1's
    picks, 2**63 seed 0's and -1 seed 2**63 - 1's; 1.5 raised a raw TypeError. It takes
    an integer in [0, 2**63), as sample_neighbors, and refuses the rest in one line."""
    from graphsys.errors import ParameterError

    g, s, d, t = _graph(tmp_path, 3)
    sampler = TemporalNeighborSampler(g, 2, strategy="uniform")
    for bad in (True, 1.5, None, -1, 1 << 63):
        with pytest.raises(ParameterError, match="rng_seed"):
            sampler.sample_hop([1, 2], [61, 61], 2, rng_seed=bad)
    a = sampler.sample_hop([1, 2], [61, 61], 2, rng_seed=np.int64(7))
    assert (a.eid == sampler.sample_hop([1, 2], [61, 61], 2, rng_seed=7).eid).all()
