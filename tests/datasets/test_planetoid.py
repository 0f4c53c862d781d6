"""The Planetoid public split: the restricted unpickler refuses anything but arrays, and
the assembled splits match the published counts."""

from __future__ import annotations

import os
import pickle
import shutil

import numpy as np
import pytest

from graphsys.datasets.loaders import plan_ingest
from graphsys.datasets.planetoid import PARTS, read_planetoid, restricted_load
from graphsys.errors import GraphsysError, InputError


class _Evil:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.mkdir, (self.marker,)


@pytest.mark.parametrize("payload", ["mkdir", "eval", "class"])
def test_malicious_pickle_runs_nothing(tmp_path, payload):
    marker = tmp_path / "pwned"
    obj = {"mkdir": _Evil(marker),
           "eval": type("E", (), {"__reduce__": lambda s: (eval, (f"open({str(marker)!r}, "
                                                                   f"'w')",))})(),
           "class": _Evil}[payload]
    path = tmp_path / "ind.cora.x"
    path.write_bytes(pickle.dumps(obj, protocol=2))
    with pytest.raises(InputError, match=r"ind\.cora\.x: refusing to unpickle") as info:
        restricted_load(path)
    assert "\n" not in str(info.value)
    assert not marker.exists()


def test_corrupt_pickle_is_one_line(tmp_path):
    path = tmp_path / "ind.cora.y"
    path.write_bytes(pickle.dumps(np.eye(3), protocol=2)[:40])
    with pytest.raises(InputError, match="not a readable Planetoid pickle"):
        restricted_load(path)


def _paths(mirror, name):
    d = mirror / name / "planetoid"
    return {p: d / f"ind.{name}.{p.replace('-', '.')}" for p in PARTS}


@pytest.mark.parametrize("name,nodes,edges,train,unlabelled", [
    ("cora", 2708, 5278, 140, 0), ("citeseer", 3327, 4552, 120, 15)])
def test_public_split_counts(mirror, name, nodes, edges, train, unlabelled):
    """The counts PyG's Planetoid reports (edge_index = 2 x these undirected edges)."""
    d = read_planetoid(_paths(mirror, name))
    assert d.num_nodes == nodes and len(d.src) == edges and (d.src < d.dst).all()
    assert (d.train_mask.sum(), d.val_mask.sum(), d.test_mask.sum()) == (train, 500, 1000)
    assert not (d.train_mask & d.test_mask).any() and not (d.val_mask & d.test_mask).any()
    assert (d.labels < 0).sum() == unlabelled
    assert (d.labels[d.train_mask | d.val_mask | d.test_mask] >= 0).all()
    assert np.array_equal(np.bincount(d.labels[d.train_mask]),
                          np.full(d.labels.max() + 1, 20))


def test_wrong_shapes_are_refused(mirror, tmp_path):
    paths = _paths(mirror, "cora")
    bad = dict(paths)
    bad["y"] = tmp_path / "ind.cora.y"
    shutil.copy(paths["ty"], bad["y"])                      # 1000 rows for 140 x rows
    with pytest.raises(InputError, match=r"ind\.cora\.y: 1000 rows, expected 140"):
        read_planetoid(bad)


def test_public_is_the_default_split_and_random_remains(fetched):
    result = fetched("cora")
    public = plan_ingest(result)
    assert public.metadata["split"]["method"] == "public"
    assert plan_ingest(result, "random").metadata["split"]["method"] == "per-class-random"
    with pytest.raises(GraphsysError, match="no public split"):
        plan_ingest(fetched("wiki-vote"), "public")
    with pytest.raises(GraphsysError, match="split must be one of"):
        plan_ingest(result, "fancy")
