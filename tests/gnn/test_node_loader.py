"""NodeLoader: determinism across workers and epochs, coverage, gathers, valid blocks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import graphsys
from graphsys.errors import GraphsysError, ParameterError
from graphsys.gnn import NodeLoader
from graphsys.sampling import NeighborSampler, PinSAGESampler


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    rng = np.random.default_rng(3)
    n = 120
    src, dst = rng.integers(0, n, 600), rng.integers(0, n, 600)
    keep = src != dst
    cols = {"feat": rng.standard_normal((n, 5)).astype(np.float32),
            "label": rng.integers(0, 4, n)}
    g = graphsys.from_numpy(src[keep], dst[keep], tmp_path_factory.mktemp("nl") / "g",
                            num_nodes=n, node_columns=cols, undirected=True,
                            partitions=2)
    return g, src[keep], dst[keep]


def _same(a, b):
    assert torch.equal(a.seeds, b.seeds)
    assert torch.equal(a.x, b.x) and torch.equal(a.y, b.y)
    assert len(a.blocks) == len(b.blocks)
    for x, y in zip(a.blocks, b.blocks):
        assert torch.equal(x.src_nodes, y.src_nodes)
        assert torch.equal(x.edge_src, y.edge_src) and torch.equal(x.edge_dst, y.edge_dst)


def _loader(g, **kw):
    kw.setdefault("batch_size", 16)
    return NodeLoader(g, NeighborSampler(g, [4, 3]), np.arange(0, 120, 2), **kw)


def test_batches_identical_across_num_workers(graph):
    g = graph[0]
    ref = list(_loader(g, num_workers=0))
    for workers in (1, 2):
        got = list(_loader(g, num_workers=workers, prefetch=3))
        assert len(got) == len(ref) == 4
        for a, b in zip(ref, got):
            _same(a, b)


def _neighbourhoods(batch):
    """{seed: its sampled in-neighbour ids per layer}, layers from the output layer inwards,
    following each seed's own sources only."""
    out = {}
    for v in batch.seeds.tolist():
        ids, layers = [v], []
        for b in reversed(batch.blocks):
            dst = b.dst_nodes.tolist()
            local = torch.tensor([dst.index(u) for u in ids])
            m = torch.isin(b.edge_dst, local)
            layers.append(sorted(zip(b.dst_nodes[b.edge_dst[m]].tolist(),
                                     b.src_nodes[b.edge_src[m]].tolist())))
            ids = sorted(set(ids) | set(b.src_nodes[b.edge_src[m]].tolist()))
        out[v] = layers
    return out


def test_rank_shares_sample_what_the_whole_batch_samples(graph):
    # two ranks' shares of every global batch: each seed's sampled neighbourhood (every
    # layer), features and label are those of the one-rank batch
    g = graph[0]
    whole = list(_loader(g, batch_size=15))
    shares = [list(_loader(g, batch_size=15, rank=r, world_size=2)) for r in (0, 1)]
    for i, ref in enumerate(whole):
        parts = [shares[0][i], shares[1][i]]
        assert torch.equal(torch.cat([p.seeds for p in parts]), ref.seeds)
        want = _neighbourhoods(ref)
        for p in parts:
            got = _neighbourhoods(p)
            assert got == {v: want[v] for v in got}
            pos = [ref.blocks[0].src_nodes.tolist().index(u) for u in p.input_nodes.tolist()]
            assert torch.equal(p.x, ref.x[pos])


def test_each_epoch_reshuffles_deterministically(graph):
    g = graph[0]
    loader = _loader(g)
    e0, e1 = list(loader), list(loader)                  # epochs 0 and 1, counted
    assert not torch.equal(e0[0].seeds, e1[0].seeds)
    loader.set_epoch(1)
    again = list(loader)
    for a, b in zip(e1, again):
        _same(a, b)
    fresh = _loader(g)
    fresh.set_epoch(0)
    for a, b in zip(e0, fresh):
        _same(a, b)
    other_seed = list(_loader(g, seed=1))
    assert not torch.equal(other_seed[0].seeds, e0[0].seeds)
    fixed = _loader(g, shuffle=False)
    assert torch.equal(torch.cat([b.seeds for b in fixed]), torch.arange(0, 120, 2))


def test_seed_set_covered_once_per_epoch(graph):
    g = graph[0]
    seeds = np.arange(0, 120, 2)
    loader = _loader(g, batch_size=7)
    assert len(loader) == 9
    for _ in range(2):
        got = torch.cat([b.seeds for b in loader])
        assert sorted(got.tolist()) == seeds.tolist()
    dropped = _loader(g, batch_size=7, drop_last=True)
    assert len(dropped) == 8
    batches = list(dropped)
    assert len(batches) == 8 and all(len(b.seeds) == 7 for b in batches)
    mask = np.zeros(120, bool)
    mask[seeds] = True
    by_mask = NodeLoader(g, NeighborSampler(g, [2]), mask, batch_size=100, shuffle=False)
    assert torch.equal(torch.cat([b.seeds for b in by_mask]), torch.from_numpy(seeds))


def test_features_and_labels_equal_a_direct_gather(graph, device):
    g = graph[0]
    feat = torch.from_numpy(np.asarray(g.node_column("feat")))
    label = torch.from_numpy(np.asarray(g.node_column("label")))
    kind = torch.device(device).type
    for batch in _loader(g, device=device):  # delivered on the test device
        assert batch.x.device.type == kind and batch.blocks[0].device.type == kind
        src = batch.blocks[0].src_nodes.cpu()
        assert torch.equal(batch.x.cpu(), feat[src])
        assert torch.equal(batch.y.cpu(), label[batch.seeds.cpu()])
    doubled = _loader(g, features=2 * feat.numpy().astype(np.float64), labels=label + 1,
                      num_workers=2)
    for batch in doubled:
        assert torch.equal(batch.x, 2 * feat[batch.input_nodes].double())
        assert torch.equal(batch.y, label[batch.seeds] + 1)
    for batch in _loader(g, features=None, labels=None):
        assert batch.x is None and batch.y is None


def test_block_edges_exist_in_the_graph(graph):
    g, src, dst = graph
    ids = np.asarray(g.node_ids())                       # internal id -> original id
    edges = set(zip(src.tolist(), dst.tolist())) | set(zip(dst.tolist(), src.tolist()))
    for batch in _loader(g, num_workers=2):
        assert torch.equal(batch.blocks[-1].dst_nodes, batch.seeds)
        for b, nxt in zip(batch.blocks, batch.blocks[1:] + [None]):
            u = ids[b.src_nodes[b.edge_src].numpy()]
            v = ids[b.dst_nodes[b.edge_dst].numpy()]
            assert all((a, c) in edges for a, c in zip(u.tolist(), v.tolist()))
            assert len(np.unique(b.src_nodes.numpy())) == b.num_src_nodes
            if nxt is not None:
                assert torch.equal(b.dst_nodes, nxt.src_nodes)


def test_any_sampler_of_the_protocol(graph):
    g = graph[0]
    et = g.entity_types[0]
    sampler = PinSAGESampler(g, et, et, 2, 0.5, 20, [3, 3])
    loader = NodeLoader(g, sampler, torch.arange(30), batch_size=10, num_workers=2)
    batches = list(loader)
    assert len(batches) == 3
    assert all(b.blocks[0].edge_weight is not None for b in batches)
    assert all(b.x.shape == (b.blocks[0].num_src_nodes, 5) for b in batches)


def test_bad_input(graph):
    g = graph[0]
    s = NeighborSampler(g, [2])
    with pytest.raises(ParameterError, match="repeat"):
        NodeLoader(g, s, [1, 2, 1])
    with pytest.raises(GraphsysError, match="outside the graph"):
        NodeLoader(g, s, [500])
    with pytest.raises(ParameterError, match="no node column 'emb'"):
        NodeLoader(g, s, [1], features="emb")
    with pytest.raises(ParameterError, match="no graph"):
        NodeLoader(None, s, [1])
    with pytest.raises(ParameterError, match="shape"):
        NodeLoader(g, s, [1], features=np.zeros((3, 2), np.float32))
    with pytest.raises(ParameterError, match="batch_size"):
        NodeLoader(g, s, [1], batch_size=0)
    with pytest.raises(ParameterError, match="batch_size"):      # was a batch of 1
        NodeLoader(g, s, [1], batch_size=True)
    for seed in (2.5, "2", True, float("nan")):  # 2.5 was seed 2; NaN a raw ValueError
        with pytest.raises(ParameterError, match=r"^seed must be an integer in \[-2\*\*63"):
            NodeLoader(g, s, [1], seed=seed)
    assert NodeLoader(g, s, [1], seed=np.int32(3)).seed == 3
    with pytest.raises(ParameterError, match="^either_end swaps the ends of links"):
        NodeLoader(g, s, [1], either_end=True)                    # was silently ignored
    with pytest.raises(ParameterError, match="Sampler"):
        NodeLoader(g, object(), [1])


def test_a_loader_seed_that_is_not_an_integer_is_refused(graph):
    """NodeLoader read its seed with int(): seed=1.5 shuffled and sampled as seed 1 and
    True as 1, silently. It takes the samplers' seeds, integers in [-2**63, 2**64)."""
    for bad in (1.5, True, None, 1 << 64):
        with pytest.raises(ParameterError, match=r"^seed must be an integer in \[-2"):
            _loader(graph[0], seed=bad)
    first = [next(iter(_loader(graph[0], seed=s))).seeds for s in (np.int64(-1), -1, 1)]
    assert torch.equal(first[0], first[1]) and not torch.equal(first[1], first[2])


def test_input_dropout_in_the_loader(graph):
    """``input_dropout``: x is the gathered rows with the row-keyed mask of
    ``feature_dropout`` under the per-batch key ``derive_seed(key, i)``, the key one draw of
    torch's generator per pass (fixed by ``torch.manual_seed``, whatever the workers)."""
    from graphsys.gnn.dropout import feature_dropout
    from graphsys.sampling._util import derive_seed

    g = graph[0]
    feat = torch.from_numpy(np.asarray(g.node_column("feat")))
    runs = []
    for workers in (0, 2):
        torch.manual_seed(11)
        runs.append(list(_loader(g, num_workers=workers, input_dropout=0.5)))
    torch.manual_seed(11)
    key = int(torch.empty((), dtype=torch.int64).random_())
    for i, (a, b) in enumerate(zip(*runs, strict=True)):
        _same(a, b)
        want = feature_dropout(feat, a.input_nodes, 0.5, derive_seed(key, i))
        torch.testing.assert_close(a.x, want)
        kept = a.x != 0
        torch.testing.assert_close(a.x[kept], 2 * feat[a.input_nodes][kept])
    plain = list(_loader(g))
    assert all(torch.equal(a.seeds, b.seeds) for a, b in zip(plain, runs[0], strict=True))
    assert not torch.equal(plain[0].x, runs[0][0].x)
    with pytest.raises(ParameterError, match="input_dropout"):
        _loader(g, input_dropout=1.0)
    with pytest.raises(ParameterError, match="input_dropout"):
        _loader(g, input_dropout=0.5, features=None)


def test_model_skips_the_input_dropout_the_loader_applied(graph):
    """``GNN(...)(blocks, x, input_dropout=False)`` with the loader's dropout equals the
    model's hidden-layer dropout alone (ReLU and dropout fused between the layers): the
    first layer's input is used as given."""
    from graphsys.gnn import GNN
    from graphsys.gnn.dropout import relu_dropout

    g = graph[0]
    torch.manual_seed(0)
    model = GNN("sage", 5, 8, 4, num_layers=2, dropout=0.5)
    batch = next(iter(_loader(g, input_dropout=0.5)))
    torch.manual_seed(1)
    got = model(batch.blocks, batch.x, input_dropout=False)
    torch.manual_seed(1)
    h = relu_dropout(model.convs[0](batch.x, batch.blocks[0]), 0.5, True)
    torch.testing.assert_close(got, model.convs[1](h, batch.blocks[1]))
    model.eval()
    torch.testing.assert_close(model(batch.blocks, batch.x, input_dropout=False),
                               model(batch.blocks, batch.x))


def test_node_table_features_are_gathered_mapped_with_the_same_dropout(tmp_path):
    """Features in a node table of several partitions stay mapped (``PartitionedRows``):
    the workers' gather + input dropout gives what the in-memory column gives."""
    import graphsys
    from graphsys.sampling import NeighborSampler
    from graphsys.storage.partitioned_rows import PartitionedRows

    rng = np.random.default_rng(0)
    feat = rng.random((60, 7), dtype=np.float32)
    src, dst = rng.integers(0, 60, 300), rng.integers(0, 60, 300)
    g = graphsys.from_numpy(src, dst, tmp_path / "g", num_nodes=60, partitions=3,
                            node_columns={"feat": feat})
    sampler = NeighborSampler(g, [4, 4])
    kw = dict(batch_size=16, labels=None, input_dropout=0.5, num_workers=2)
    mapped = NodeLoader(g, sampler, np.arange(60), **kw)
    memory = NodeLoader(g, sampler, np.arange(60), features=g.node_column("feat"), **kw)
    assert isinstance(mapped.features, PartitionedRows)
    torch.manual_seed(3)
    a = [(b.blocks[0].src_nodes, b.x) for b in mapped]
    torch.manual_seed(3)
    b = [(b.blocks[0].src_nodes, b.x) for b in memory]
    for (na, xa), (nb, xb) in zip(a, b, strict=True):
        assert torch.equal(na, nb) and torch.equal(xa, xb)
    assert any((x == 0).any() for _, x in a)          # the dropout ran


def test_row_buffers_reuse_only_what_nothing_refers_to():
    """A loader's gathered rows go to reused arrays; one is handed out again only once
    every tensor and view made from it is gone, so a batch kept by the caller is never
    overwritten."""
    from graphsys.gnn.loader import RowBuffers

    pool = RowBuffers(keep=2)
    a = pool.take(100, 8)
    held = torch.from_numpy(a)[10:20]         # a torch view keeps the array in use
    del a
    b = pool.take(90, 8)
    assert not np.shares_memory(b, held.numpy())
    address = b.__array_interface__["data"][0]
    del b
    c = pool.take(100, 8)                     # b's array is free again: reused
    assert c.__array_interface__["data"][0] == address
    assert c.shape == (100, 8) and c.flags.c_contiguous
    del c
    d = pool.take(500, 8)                      # larger than any kept array: a new one
    assert d.shape == (500, 8)
    del held
    e = pool.take(100, 8)
    assert not np.shares_memory(d, e)


def test_kept_batches_stay_intact_across_epochs(graph):
    """Every batch of two passes kept at once still holds its own rows (the reused
    buffers never overwrite a batch that is referred to)."""
    g = graph[0]
    feat = torch.from_numpy(np.asarray(g.node_column("feat")))
    loader = _loader(g, num_workers=2, prefetch=1)
    kept = [b for _ in range(2) for b in loader]
    for b in kept:
        assert torch.equal(b.x, feat[b.input_nodes])


def test_link_batches_with_a_negative_sampler_either_end_and_a_transform(graph):
    """Unordered pairs swap ends per batch (the same pairs, some reversed, the same every
    run), a callable draws each batch's negatives for its heads from the batch's seed, and
    the transform sees each sampled batch before the loader delivers it."""
    g = graph[0]
    links = np.stack([np.arange(0, 60), np.arange(60, 120)], 1)
    seen = []

    def negatives(heads, key):
        return torch.stack([heads, (heads + key) % 120], 1)

    def transform(batch):
        seen.append(len(batch.seeds))
        return batch

    def pairs(**kw):
        loader = NodeLoader(g, NeighborSampler(g, [3]), None, links=links,
                            negatives=negatives, batch_size=16, shuffle=False,
                            features=None, labels=None, **kw)
        out = []
        for b in loader:
            h, p, n = (b.seeds[b.extra[k]] for k in ("head", "pos", "neg"))
            assert torch.equal(n[:, 0], h)
            out.append(torch.stack([h, p], 1))
        return torch.cat(out)

    plain = pairs(transform=transform)
    assert torch.equal(plain, torch.from_numpy(links)) and len(seen) == 4
    swapped = pairs(either_end=True)
    assert torch.equal(swapped, pairs(either_end=True))
    flip = swapped[:, 0] != plain[:, 0]
    assert 0 < int(flip.sum()) < 60 and torch.equal(swapped[flip], plain[flip].flip(1))


def test_timed_links_without_a_sampler_with_fixed_negatives_and_one_time_a_batch(tmp_path):
    """Timed links batch without a sampler (no blocks) against fixed negatives, row ``p``
    for link ``p`` whatever the shuffle; with ``batch_time`` a batch's seeds are its
    distinct nodes, sampled once at its earliest link's time; bad combinations are refused."""
    import pyarrow as pa

    from graphsys.sampling import SamplerInput, TemporalNeighborSampler

    rng = np.random.default_rng(4)
    src, dst = rng.integers(0, 30, 200), rng.integers(0, 30, 200)
    tg = graphsys.from_arrow(pa.table({"src": src, "dst": dst,
                                       "timestamp": np.sort(rng.integers(0, 1000, 200))}),
                             str(tmp_path / "t"), edge_columns=["timestamp"])
    links, times = np.stack([src[:50], dst[:50]], 1), np.arange(50) * 20
    fixed = rng.integers(0, 30, (50, 3))
    loader = NodeLoader(tg, None, links=links, times=times, negatives=fixed, batch_size=8,
                        seed=1, features=None, labels=None, batch_time=True)
    got = []
    for b in loader:
        at = b.extra["link"].numpy()
        assert b.blocks == [] and torch.equal(b.seeds, b.seeds.unique())
        assert np.array_equal(b.seeds[b.extra["head"]].numpy(), links[at, 0])
        assert np.array_equal(b.seeds[b.extra["pos"]].numpy(), links[at, 1])
        assert np.array_equal(b.seeds[b.extra["neg"]].numpy(), fixed[at])
        assert np.array_equal(b.extra["time"].numpy(), times[at])
        got.append(at)
    assert sorted(np.concatenate(got).tolist()) == list(range(50))
    sampler = TemporalNeighborSampler(tg, [4])
    stream = NodeLoader(tg, sampler, links=links, times=times, batch_size=8, shuffle=False,
                        features=None, labels=None, batch_time=True)
    for b in stream:
        t0 = times[b.extra["link"][0]]
        want = sampler.sample_blocks(SamplerInput(b.seeds, np.full(len(b.seeds), t0)))[0]
        assert torch.equal(b.blocks[0].src_nodes, want.src_nodes)
        assert torch.equal(b.blocks[0].edge_times, want.edge_times)
    # shuffled, a batch's first link need not be its earliest: every seed is read as of the
    # earliest (link (0, 1) at 15 after one at 40 was sampled at 40: edges 20 and 30 seen)
    small = graphsys.from_arrow(pa.table({"src": [0, 0, 1], "dst": [1, 2, 2],
                                          "timestamp": [10, 20, 30]}), str(tmp_path / "s"),
                                edge_columns=["timestamp"])
    for shuffle in (False, True):
        b = next(iter(NodeLoader(small, TemporalNeighborSampler(small, [5]),
                                 links=[[0, 2], [0, 1]], times=[40, 15], batch_time=True,
                                 shuffle=shuffle, features=None, labels=None)))
        assert b.blocks[0].dst_times.tolist() == [15, 15, 15]
        assert b.blocks[0].edge_times.tolist() == [10, 10]
    for kw in ({"graph": None}, {"negatives": fixed[:10]}, {"times": None}):
        args = {"graph": tg, "links": links, "times": times, "negatives": fixed,
                "batch_time": True, "features": None, "labels": None, **kw}
        with pytest.raises(ParameterError):
            NodeLoader(args.pop("graph"), None, **args)
