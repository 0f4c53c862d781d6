"""The sampler protocol: every built-in sampler takes bare seeds and a ``SamplerInput``
alike and returns blocks of the protocol's shape; seed times are honoured by the temporal
sampler and refused, in one line, by every other."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import torch

import graphsys
from graphsys.errors import GraphsysError
from graphsys.sampling import (
    DeviceNeighborSampler,
    HeteroNeighborSampler,
    NeighborSampler,
    PinSAGESampler,
    Sampler,
    SamplerInput,
    TemporalBlock,
    TemporalNeighborSampler,
)
from graphsys.sampling.hetero import TypedBlock

from .conftest import random_graph_edges, write_homogeneous


@pytest.fixture(scope="module")
def samplers(tmp_path_factory):
    """One of every built-in sampler, with the seeds it takes."""
    from .conftest import write_bipartite

    tmp = tmp_path_factory.mktemp("protocol")
    g = write_homogeneous(tmp, random_graph_edges(), 60)
    bip = write_bipartite(tmp)
    rng = np.random.default_rng(1)
    src, dst = rng.integers(0, 30, 200), rng.integers(0, 30, 200)
    tg = graphsys.from_arrow(pa.table({"src": src, "dst": dst,
                                       "timestamp": rng.integers(0, 50, 200)}),
                             tmp / "timed", edge_columns=["timestamp"])
    return {
        "neighbor": (NeighborSampler(g, [3, 2]), [5, 0, 17]),
        "device": (DeviceNeighborSampler(g, [3, 2], device="cpu"), [5, 0, 17]),
        "pinsage": (PinSAGESampler(bip, "item", "user", 2, 0.5, 20, [2, 2]), [1, 3]),
        "hetero": (HeteroNeighborSampler(bip, [2, 2]), [0, 6, 8]),
        "temporal": (TemporalNeighborSampler(tg, [3, 2], strategy="uniform"), [4, 4, 9]),
    }


NAMES = ["neighbor", "device", "pinsage", "hetero", "temporal"]


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert type(x) is type(y)
        assert torch.equal(x.src_nodes, y.src_nodes) and x.num_dst_nodes == y.num_dst_nodes
        assert torch.equal(x.edge_src, y.edge_src) and torch.equal(x.edge_dst, y.edge_dst)


@pytest.mark.parametrize("name", NAMES)
def test_every_builtin_sampler_keeps_the_protocol(samplers, name):
    sampler, seeds = samplers[name]
    assert isinstance(sampler, Sampler)
    assert sampler.temporal == (name == "temporal")
    blocks = sampler.sample_blocks(seeds, 11)
    assert len(blocks) == sampler.num_layers == 2
    assert blocks[-1].dst_nodes.tolist() == seeds
    for k, b in enumerate(blocks):
        assert torch.equal(b.src_nodes[:b.num_dst_nodes], b.dst_nodes)
        assert b.num_edges == 0 or (int(b.edge_src.max()) < b.num_src_nodes
                                    and int(b.edge_dst.max()) < b.num_dst_nodes)
        assert ((b.src_nodes >= 0) & (b.src_nodes < sampler.num_nodes)).all()
        if k + 1 < len(blocks):
            assert torch.equal(b.dst_nodes, blocks[k + 1].src_nodes)
    _same(blocks, sampler.sample_blocks(seeds, 11))                     # deterministic
    _same(blocks, sampler.sample_blocks(SamplerInput(seeds), 11))       # no time: the same
    _same(blocks, sampler.sample_blocks(SamplerInput(torch.tensor(seeds)), 11))


@pytest.mark.parametrize("name", [n for n in NAMES if n != "temporal"])
def test_samplers_without_time_refuse_times_in_one_line(samplers, name):
    sampler, seeds = samplers[name]
    with pytest.raises(GraphsysError) as err:
        sampler.sample_blocks(SamplerInput(seeds, np.arange(len(seeds))), 11)
    msg = str(err.value)
    assert "\n" not in msg and type(sampler).__name__ in msg and "time" in msg


def test_temporal_sampler_honours_times(samplers):
    sampler, seeds = samplers["temporal"]
    recent = TemporalNeighborSampler(sampler.adj, [3, 2])
    late = recent.sample_blocks(SamplerInput(seeds, [60, 60, 60]), 3)
    _same(late, recent.sample_blocks(seeds, 3))     # after every event: no time at all
    early = sampler.sample_blocks(SamplerInput(seeds, [0, 0, 0]), 3)
    assert all(b.num_edges == 0 for b in early)     # nothing is before the first stamp
    assert all(isinstance(b, TemporalBlock) for b in late)


def test_sampler_input_checks_its_times():
    with pytest.raises(GraphsysError, match="3 seeds but 2 seed times"):
        SamplerInput([1, 2, 3], [5, 6])


def test_block_copies_keep_a_subclass_s_tensors_and_groupings(samplers):
    for name, cls, attrs in (("hetero", TypedBlock, ["edge_type"]),
                             ("temporal", TemporalBlock, ["src_times", "edge_ids"])):
        sampler, seeds = samplers[name]
        b = sampler.sample_blocks(SamplerInput(seeds), 2)[0]
        offsets = b.dst_offsets
        c = b.to("cpu")
        assert type(c) is cls and "dst_offsets" in c.__dict__
        assert torch.equal(c.dst_offsets[0], offsets[0])
        for a in attrs:
            assert torch.equal(getattr(c, a), getattr(b, a))


def test_a_random_seed_that_is_not_an_integer_is_refused():
    """rng_seed=1.5 drew seed 1's sample (int() cut it) and True seed 1's; None raised a raw
    TypeError. Each is refused in one line; NumPy and torch integers are integers."""
    from graphsys.sampling import NeighborSampler, from_coo
    from graphsys.sampling._util import derive_seed

    s = NeighborSampler(from_coo(np.array([0, 1]), np.array([1, 0]), 2, 2), [1])
    for bad in (1.5, True, None, "3", 1 << 64, -(1 << 63) - 1):   # 2**64 drew seed 0's
        with pytest.raises(GraphsysError, match=r"random seed must be an integer in \[-2\*\*63"):
            s.sample_blocks([0], rng_seed=bad)
    assert derive_seed(np.uint64(5), torch.tensor(2)) == derive_seed(5, 2)
    assert derive_seed((1 << 64) - 1) != derive_seed(0)


def test_negative_samplers_and_presampling_take_the_samplers_seeds():
    """The negative samplers and presample_hot_nodes seeded NumPy with rng_seed as given:
    True drew seed 1's negatives, 2**64 was taken, None drew fresh entropy (another answer
    every call) and -1 raised NumPy's raw ValueError (presampling refused it, though the
    samplers take it). Seed -1 drew seed 2**64 - 1's sample. Now every sampler takes an
    integer in [-2**63, 2**64), each its own draws, and refuses the rest in one line."""
    from graphsys.sampling import (
        PPRHardNegativeSampler,
        UniformNegativeSampler,
        from_coo,
        presample_hot_nodes,
    )
    from graphsys.sampling._util import derive_seed

    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 50, 400), rng.integers(0, 50, 400)
    adj = from_coo(np.r_[src, dst], np.r_[dst, src], 50, 50)
    q, ns = torch.arange(20), NeighborSampler(adj, [3])
    draws = {"uniform": UniformNegativeSampler(50, 4).__call__,
             "ppr": PPRHardNegativeSampler(adj, adj, 2, 30, 4).__call__,
             "presample": lambda _, s: torch.as_tensor(presample_hot_nodes(
                 ns, np.arange(50), batch_size=5, num_batches=2, rng_seed=s)),
             "neighbor": lambda _, s: ns.sample_blocks(np.arange(20), s)[0].src_nodes}
    for name, draw in draws.items():
        for bad in (1.5, True, None, "3", 1 << 64, -(1 << 63) - 1):
            with pytest.raises(GraphsysError, match=r"random seed must be an integer in"):
                draw(q, bad)
        seen = [draw(q, s) for s in (0, 1, -1, (1 << 64) - 1, -(1 << 63))]
        assert torch.equal(draw(q, np.int64(-1)), seen[2]), name
        assert len({t.numpy().tobytes() for t in seen}) == len(seen), name
    assert derive_seed(-1) != derive_seed((1 << 64) - 1)
    assert derive_seed(-1, 5) != derive_seed(-1, 6) != derive_seed(0, 6)
