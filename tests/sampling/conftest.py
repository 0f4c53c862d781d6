"""Tiny graphs for the sampler tests: stored through ingest, or as Adjacency objects."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pyarrow as pa
import pytest
import torch

from graphsys.storage.format import RelationType
from graphsys.storage.graph import open_graph
from graphsys.storage.ingest import EdgeSource, IngestOptions, NodeSource, ingest_sources

#: user -> item interactions of a tiny bipartite graph (4 users, 5 items; item 4 isolated
#: from user 3's side so that degrees differ).
BIPARTITE = [(0, 0), (0, 1), (1, 1), (1, 2), (1, 3), (2, 0), (2, 3), (3, 2), (3, 4)]


def write_bipartite(tmp_path, edges=BIPARTITE, partitions=2):
    path = tmp_path / "bip.tsv"
    path.write_text("".join(f"u{u}\ti{i}\n" for u, i in edges))
    users = sorted({f"u{u}" for u, _ in edges})
    items = sorted({f"i{i}" for _, i in edges})
    out = tmp_path / "bipartite"
    ingest_sources([EdgeSource([path], relation="rated", header=False)], out,
                   IngestOptions(partitions=partitions,
                                 relation_types=[RelationType("rated", "user", "item")]),
                   nodes=[NodeSource(pa.table({"id": pa.array(users)}), "user"),
                          NodeSource(pa.table({"id": pa.array(items)}), "item")])
    return open_graph(out)


def write_homogeneous(tmp_path, edges, num_nodes, partitions=2, name="g"):
    path = tmp_path / f"{name}.tsv"
    path.write_text("".join(f"{s}\t{d}\n" for s, d in edges))
    out = tmp_path / name
    ingest_sources([EdgeSource([path], header=False)], out,
                   IngestOptions(partitions=partitions, undirected=False),
                   nodes=[NodeSource(pa.table({"id": np.arange(num_nodes, dtype=np.int64)}))])
    return open_graph(out)


@pytest.fixture
def bipartite_graph(tmp_path):
    return write_bipartite(tmp_path)


def random_graph_edges(num_nodes=60, num_edges=300, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, num_nodes, num_edges)
    d = rng.integers(0, num_nodes, num_edges)
    keep = s != d
    return list(zip(s[keep].tolist(), d[keep].tolist()))


_HOST_READS = ("item", "tolist", "cpu", "numpy", "__bool__", "__int__", "__float__",
               "__index__", "nonzero", "unique")


@contextmanager
def count_host_reads():
    """Count calls of the tensor methods that read a device value on the host (or that
    synchronise for a data-dependent size), and of boolean-mask indexing."""
    counts = {"n": 0}
    saved = {name: getattr(torch.Tensor, name) for name in _HOST_READS}
    getitem = torch.Tensor.__getitem__

    def counting(fn):
        def wrapper(*args, **kwargs):
            counts["n"] += 1
            return fn(*args, **kwargs)
        return wrapper

    def checked_getitem(self, idx):
        parts = idx if isinstance(idx, tuple) else (idx,)
        if any(torch.is_tensor(p) and p.dtype == torch.bool for p in parts):
            counts["n"] += 1
        return getitem(self, idx)

    try:
        for name, fn in saved.items():
            setattr(torch.Tensor, name, counting(fn))
        torch.Tensor.__getitem__ = checked_getitem
        yield counts
    finally:
        for name, fn in saved.items():
            setattr(torch.Tensor, name, fn)
        torch.Tensor.__getitem__ = getitem
