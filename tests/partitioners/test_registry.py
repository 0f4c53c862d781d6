"""Tests of the partitioner registry and the shared parameter checks."""

from __future__ import annotations

import json

import numpy as np
import pytest

import partitioners
from partitioners import PARTITIONERS, get_partitioner


def test_registry_names():
    assert sorted(PARTITIONERS) == ["degree", "fennel", "hash", "range"]
    assert partitioners.DEFAULT_PARTITIONER == "hash"
    for name, cls in PARTITIONERS.items():
        assert cls.name == name
        assert isinstance(get_partitioner(name, 3), cls)


def test_unknown_name():
    with pytest.raises(ValueError, match=r"unknown partitioner 'metis' "
                                         r"\(known: degree, fennel, hash, range\)$"):
        get_partitioner("metis", 4)


@pytest.mark.parametrize("name", sorted(PARTITIONERS))
def test_bad_common_params(name):
    for bad in (-1, 0, 2.0, True):
        with pytest.raises(ValueError, match="num_partitions"):
            get_partitioner(name, bad)
    for bad in (1.5, True, 1 << 64, -(1 << 63) - 1):   # 2**64 placed nodes as seed 0
        with pytest.raises(ValueError, match=r"seed must be an integer in \[-2\*\*63"):
            get_partitioner(name, 2, seed=bad)
    get_partitioner(name, 2, seed=np.uint64((1 << 64) - 1))
    with pytest.raises(ValueError, match="nonsense"):
        get_partitioner(name, 2, nonsense=1)


@pytest.mark.parametrize("name", sorted(PARTITIONERS))
def test_a_negative_seed_is_recorded_as_the_seed_it_places_nodes_as(name, make_ctx):
    """Strategies use the seed modulo 2**64 (seed -1 places nodes as 2**64 - 1), but the
    manifest recorded -1: two records for one placement. The recorded seed is the one
    used, in [0, 2**64), and places nodes where the seed given did."""
    ctx = make_ctx(60, src=np.arange(59), dst=np.arange(1, 60))
    for s in (-1, -(1 << 63), 5):
        given = get_partitioner(name, 3, seed=s)
        same = get_partitioner(name, 3, seed=s + (1 << 64) if s < 0 else s)
        assert given.params() == same.params() and given.params()["seed"] == s % (1 << 64)
        again = get_partitioner(name, 3, **json.loads(json.dumps(given.params())))
        assert given.assign(ctx).tolist() == same.assign(ctx).tolist() == \
            again.assign(ctx).tolist()


@pytest.mark.parametrize("name", sorted(PARTITIONERS))
def test_params_round_trip_through_json(name, make_ctx, check):
    part = get_partitioner(name, 3, seed=np.int64(11))
    params = json.loads(json.dumps(part.params()))
    assert params["seed"] == 11
    again = get_partitioner(name, 3, **params)
    assert again.params() == params
    ctx = make_ctx(50, src=np.arange(49), dst=np.arange(1, 50))
    parts = again.assign(ctx)
    check(parts, 50, 3)
    assert np.array_equal(parts, part.assign(ctx))
