"""Prefetch loader: order, determinism with several workers, bounded read-ahead."""

from __future__ import annotations

import threading

import pytest
import torch

from graphsys.errors import GraphsysError
from graphsys.gnn.checkpoint import load_checkpoint, save_checkpoint
from graphsys.gnn.loader import PrefetchLoader
from graphsys.sampling import MiniBatch, NeighborSampler, from_coo
from graphsys.sampling._util import derive_seed


def _sampler():
    g = torch.Generator().manual_seed(0)
    s = torch.randint(0, 200, (2000,), generator=g)
    d = torch.randint(0, 200, (2000,), generator=g)
    adj = from_coo(torch.cat([s, d]).numpy(), torch.cat([d, s]).numpy(), 200, 200)
    return NeighborSampler(adj, [5, 3])


def _batches(num_workers):
    sampler = _sampler()

    def make(i):
        seeds = torch.arange(i * 20, i * 20 + 20)
        return MiniBatch(seeds, sampler.sample_blocks(seeds, derive_seed(9, i), parallel=False))

    return list(PrefetchLoader(10, make, num_workers=num_workers, prefetch=3))


def test_same_batches_with_any_number_of_workers():
    ref = _batches(0)
    for workers in (1, 3):
        got = _batches(workers)
        assert len(got) == len(ref) == 10
        for a, b in zip(ref, got):
            assert torch.equal(a.seeds, b.seeds)
            for x, y in zip(a.blocks, b.blocks):
                assert torch.equal(x.src_nodes, y.src_nodes)
                assert torch.equal(x.edge_src, y.edge_src)
                assert torch.equal(x.edge_dst, y.edge_dst)


def test_prefetch_is_bounded():
    made, consumed = [], []
    lock = threading.Lock()

    def make(i):
        with lock:
            made.append(i)
            assert len(made) - len(consumed) <= 3      # prefetch 2 + the one being handed over
        return MiniBatch(torch.tensor([i]), [])

    for b in PrefetchLoader(8, make, num_workers=2, prefetch=2):
        consumed.append(int(b.seeds[0]))
    assert consumed == list(range(8))


def test_bad_loader_options():
    with pytest.raises(GraphsysError):
        PrefetchLoader(3, lambda i: None, prefetch=0)


def test_checkpoint_roundtrip_without_pickle(tmp_path):
    state = {"a.weight": torch.randn(3, 4), "b": torch.arange(5)}
    config = {"model": "sage", "in_dim": 4, "hidden_dim": 8, "out_dim": 2, "num_layers": 2,
              "dropout": 0.5, "heads": 8}  # as GNN.config() writes it: checked on load
    save_checkpoint(tmp_path / "ck", state, config, {"note": 1})
    got, cfg, meta = load_checkpoint(tmp_path / "ck")
    assert cfg == config and meta == {"note": 1}
    for k in state:
        assert torch.equal(got[k], state[k])
    # files are plain .npy + JSON: no pickle opcodes in any file
    for f in (tmp_path / "ck").rglob("*"):
        if f.is_file():
            assert b"\x80\x04\x95" not in f.read_bytes()[:16]
    with pytest.raises(GraphsysError, match="not a GNN checkpoint"):
        load_checkpoint(tmp_path)


def _events(tmp_path):
    """A timestamped graph and 70 events (nodes recur, at several times)."""
    import numpy as np
    import pyarrow as pa

    import graphsys
    from graphsys.sampling import TemporalNeighborSampler

    rng = np.random.default_rng(4)
    edges = pa.table({"src": rng.integers(0, 30, 300), "dst": rng.integers(0, 30, 300),
                      "timestamp": rng.integers(0, 100, 300)})
    g = graphsys.from_arrow(edges, tmp_path / "timed", edge_columns=["timestamp"])
    return (g, TemporalNeighborSampler(g, [4, 2], strategy="uniform"),
            rng.integers(0, 30, 70), rng.integers(0, 110, 70))


def test_node_loader_batches_events(tmp_path):
    """With ``times``, each batch is the sampler's blocks of its seeds at their times, the
    times shuffled with the seeds, whatever the workers or the ranks."""
    import numpy as np

    from graphsys.gnn import NodeLoader
    from graphsys.sampling import SamplerInput

    g, sampler, nodes, times = _events(tmp_path)
    runs = {}
    for workers in (0, 2):
        loader = NodeLoader(g, sampler, nodes, times=times, batch_size=16, seed=3,
                            num_workers=workers, features=None, labels=None)
        loader.set_epoch(1)
        runs[workers] = list(loader)
    assert len(runs[0]) == 5
    got = sorted(zip(torch.cat([b.seeds for b in runs[0]]).tolist(),
                     torch.cat([b.extra["time"] for b in runs[0]]).tolist()))
    assert got == sorted(zip(nodes.tolist(), times.tolist()))         # every event once
    for i, (a, b) in enumerate(zip(runs[0], runs[2])):
        want = sampler.sample_blocks(SamplerInput(a.seeds, a.extra["time"]),
                                     derive_seed(3, 1, i))
        for x, y, z in zip(a.blocks, b.blocks, want):
            for name in ("src_nodes", "edge_src", "edge_dst", "src_times", "edge_ids"):
                assert torch.equal(getattr(x, name), getattr(z, name))
                assert torch.equal(getattr(y, name), getattr(z, name))
        assert (a.blocks[0].edge_times < a.blocks[0].src_times[a.blocks[0].edge_dst]).all()
    # two ranks: disjoint shares of each batch, the times with their seeds
    shares = [list(NodeLoader(g, sampler, nodes, times=times, batch_size=16, seed=3, rank=r,
                              world_size=2, features=None, labels=None)) for r in (0, 1)]
    ranked = sorted((int(n), int(t)) for share in shares for b in share
                    for n, t in zip(b.seeds, b.extra["time"]))
    assert ranked == sorted(zip(nodes.tolist(), times.tolist()))
    assert np.all([len(b.seeds) for b in shares[0]] == np.array([8, 8, 8, 8, 3]))


def test_node_loader_refuses_times_without_a_temporal_sampler(tmp_path):
    from graphsys.errors import ParameterError
    from graphsys.gnn import NodeLoader

    g, sampler, nodes, times = _events(tmp_path)
    with pytest.raises(GraphsysError, match="NeighborSampler samples without time") as err:
        NodeLoader(g, NeighborSampler(g, [2]), [1, 2], times=[5, 6], features=None,
                   labels=None)
    assert "\n" not in str(err.value)
    with pytest.raises(ParameterError, match="one time per seed"):
        NodeLoader(g, sampler, nodes, times=times[:5], features=None, labels=None)
    with pytest.raises(ParameterError, match="repeat a node"):
        NodeLoader(g, sampler, nodes, features=None, labels=None)   # no times: nodes


def test_node_loader_batches_links(tmp_path):
    """With ``links``: each batch's seeds are its pairs' ends and negatives (distinct, in id
    order), ``extra`` maps them back, and the blocks are the sampler's of those seeds."""
    import numpy as np

    from graphsys.gnn import NodeLoader

    sampler = _sampler()
    rng = np.random.default_rng(2)
    links = rng.integers(0, 200, (90, 2))
    runs = [list(NodeLoader(None, sampler, None, links=links, negatives=4, batch_size=32,
                            seed=5, num_workers=w, features=None, labels=None))
            for w in (0, 2)]
    assert [len(b.extra["head"]) for b in runs[0]] == [32, 32, 26]
    seen = []
    for i, (a, b) in enumerate(zip(*runs)):
        assert torch.equal(a.seeds, b.seeds) and torch.equal(a.extra["neg"], b.extra["neg"])
        assert torch.equal(a.seeds, torch.unique(a.seeds))
        assert a.extra["neg"].shape == (len(a.extra["head"]), 4)
        seen += list(zip(a.seeds[a.extra["head"]].tolist(), a.seeds[a.extra["pos"]].tolist()))
        want = sampler.sample_blocks(a.seeds, derive_seed(5, 0, i))
        for x, y in zip(a.blocks, want):
            assert torch.equal(x.src_nodes, y.src_nodes) and torch.equal(x.edge_src, y.edge_src)
    assert sorted(seen) == sorted(map(tuple, links.tolist()))
    # two ranks share each batch's pairs, negatives included
    ranks = [list(NodeLoader(None, sampler, None, links=links, negatives=4, batch_size=32,
                             seed=5, rank=r, world_size=2, features=None, labels=None))
             for r in (0, 1)]
    for whole, r0, r1 in zip(runs[0], *ranks):
        negs = torch.cat([r0.seeds[r0.extra["neg"]], r1.seeds[r1.extra["neg"]]])
        assert torch.equal(negs, whole.seeds[whole.extra["neg"]])


def test_node_loader_batches_timed_links(tmp_path):
    """Links with times: every end and negative is an event at its link's time."""
    import numpy as np

    from graphsys.gnn import NodeLoader

    g, sampler, nodes, times = _events(tmp_path)
    links = np.stack([nodes, np.roll(nodes, 1)], 1)
    loader = NodeLoader(g, sampler, None, links=links, times=times, negatives=2,
                        batch_size=16, features=None, labels=None)
    for batch in loader:
        ex, b = batch.extra, len(batch.extra["head"])
        assert len(batch.seeds) == 4 * b                       # heads, tails, 2 negatives
        row_t = batch.blocks[-1].dst_times
        assert torch.equal(row_t[ex["head"]], ex["time"]) and torch.equal(row_t[ex["pos"]],
                                                                        ex["time"])
        assert torch.equal(row_t[ex["neg"]], ex["time"][:, None].expand(b, 2))
        top = batch.blocks[0]
        assert (top.edge_times < top.src_times[top.edge_dst]).all()


def test_node_loader_wants_seeds_or_links():
    from graphsys.errors import ParameterError
    from graphsys.gnn import NodeLoader

    with pytest.raises(ParameterError, match="one of the two"):
        NodeLoader(None, _sampler(), [1, 2], links=[[1, 2]], features=None, labels=None)
    with pytest.raises(ParameterError, match="one of the two"):
        NodeLoader(None, _sampler(), features=None, labels=None)
    with pytest.raises(ParameterError, match="negatives"):
        NodeLoader(None, _sampler(), [1, 2], negatives=3, features=None, labels=None)
    with pytest.raises(ParameterError, match=r"\(P, 2\)"):
        NodeLoader(None, _sampler(), None, links=[1, 2, 3], features=None, labels=None)
    with pytest.raises(GraphsysError, match="link node id 500"):
        NodeLoader(None, _sampler(), None, links=[[1, 500]], features=None, labels=None)


def test_link_batches_record_no_graphs_for_pair_counts(monkeypatch):
    """A link batch's seed count is not its pair count: no CUDA graph is recorded ahead
    for it, and the batches are the eager sampler's."""
    from graphsys.gnn import NodeLoader
    from graphsys.sampling import DeviceNeighborSampler

    sampler = DeviceNeighborSampler(_sampler(), device="cpu", cuda_graphs=True)
    recorded = []
    monkeypatch.setattr(DeviceNeighborSampler, "record_graphs",
                        lambda self, sizes: recorded.append(sizes))
    links = torch.randint(0, 200, (40, 2), generator=torch.Generator().manual_seed(1))
    batches = list(NodeLoader(None, sampler, None, links=links, negatives=2, batch_size=16,
                              features=None, labels=None, num_workers=0))
    assert recorded == [] and len(batches) == 3
    eager = DeviceNeighborSampler(_sampler(), device="cpu")
    for i, b in enumerate(batches):
        for x, y in zip(b.blocks, eager.sample_blocks(b.seeds, derive_seed(0, 0, i))):
            assert torch.equal(x.src_nodes, y.src_nodes) and torch.equal(x.edge_src, y.edge_src)


@pytest.mark.parametrize("side", [True, False], ids=["side-stream", "shared-stream"])
def test_cuda_workers_enqueue_on_a_side_stream(monkeypatch, side):
    """On CUDA (emulated: the stream API replaced by fakes that log), each worker makes
    its batch with a side stream of the pass current, an event recorded after it; the
    consumer's stream waits for that event before the batch is yielded, and every tensor
    of the batch is marked as read by the consumer's stream. With ``SIDE_STREAM`` off the
    workers enqueue on their current stream, and nothing is waited for or marked."""
    from graphsys.gnn import loader as loader_mod

    monkeypatch.setattr(loader_mod, "SIDE_STREAM", side)

    log, local = [], threading.local()

    class Stream:
        def __init__(self, name="side"):
            self.name = name

        def wait_event(self, ev):
            log.append(("wait", self.name, ev.batch))

    class Event:
        def record(self, stream):
            self.batch = local.batch
            log.append(("record", stream.name, self.batch))

    class Ctx:
        def __init__(self, stream):
            self.stream = stream

        def __enter__(self):
            local.stream = self.stream

        def __exit__(self, *exc):
            local.stream = None

    consumer = Stream("consumer")
    monkeypatch.setattr(torch.cuda, "Stream", lambda device=None: Stream())
    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "stream", Ctx)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: consumer)
    monkeypatch.setattr(loader_mod.PrefetchLoader, "_produce", lambda self, i: self.make_batch(i))
    monkeypatch.setattr(MiniBatch, "to", lambda self, device, non_blocking=False: self)
    marked = []
    monkeypatch.setattr(loader_mod, "_used_by",
                        lambda t, stream: marked.append((int(t[0]), stream.name)) or t)

    def make(i):
        local.batch = i
        log.append(("make", getattr(local, "stream", None) and local.stream.name, i))
        return MiniBatch(torch.tensor([i]), [], x=torch.tensor([10 + i]))

    got = []
    for b in PrefetchLoader(5, make, num_workers=2, prefetch=2, device="cuda"):
        i = int(b.seeds[0])
        assert (("wait", "consumer", i) in log) == side
        got.append(i)
    assert got == list(range(5))
    if not side:
        assert sorted(log) == [("make", None, i) for i in range(5)] and not marked
        return
    for i in range(5):
        made, recorded = log.index(("make", "side", i)), log.index(("record", "side", i))
        assert made < recorded < log.index(("wait", "consumer", i))
    assert sorted(marked) == sorted([(i, "consumer") for i in range(5)]
                                    + [(10 + i, "consumer") for i in range(5)])
