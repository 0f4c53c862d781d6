"""Graphs for the measures' tests: small random ones with their NetworkX references, and the
real graphs of the dataset mirror (email-Enron undirected, soc-Slashdot0902 directed with
self-loops, luxembourg-osm's road network), ingested once per session."""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np
import pyarrow as pa
import pytest
import scipy.sparse as sp

from graphsys import open_graph
from graphsys.storage.ingest import EdgeSource, IngestOptions, NodeSource, ingest_sources


@dataclass
class Small:
    """A stored random graph and the NetworkX graph of its undirected view (``U``) and of
    itself (``G``, a DiGraph when directed); node keys are original ids."""

    graph: object
    G: object
    U: object
    directed: bool


def small_graph(tmp, seed: int, directed: bool, *, partitions: int = 2, dedupe: bool = True,
                n: int | None = None, m: int | None = None) -> Small:
    rng = np.random.default_rng(seed)
    n = n or int(rng.integers(2, 40))
    m = m or int(rng.integers(1, 3 * n))
    s = rng.integers(0, n, m) * 7 + 3  # sparse original ids: internal order differs
    d = rng.integers(0, n, m) * 7 + 3
    ids = np.arange(n) * 7 + 3
    g = _ingest(tmp / f"g{seed}-{directed}", s, d, ids, directed, partitions, dedupe)
    G = nx.DiGraph() if directed else nx.Graph()
    G.add_nodes_from(ids.tolist())
    G.add_edges_from(zip(s.tolist(), d.tolist()))
    return Small(g, G, G.to_undirected() if directed else G, directed)


def _ingest(path, s, d, ids, directed, partitions, dedupe):
    ingest_sources([EdgeSource(table=pa.table({"src": s, "dst": d}))], path,
                   IngestOptions(partitions=min(partitions, len(ids)), undirected=not directed,
                                 dedupe=dedupe),
                   nodes=[NodeSource(pa.table({"id": ids}))])
    return open_graph(path)


@dataclass
class Real:
    """A real graph: stored, and its undirected view as a binary symmetric scipy CSR by
    internal id (``sym``; self-loops on the diagonal) and the directed binary CSR
    (``adj``)."""

    graph: object
    adj: sp.csr_matrix
    sym: sp.csr_matrix


REAL = {
    "email-enron": ("snap/email-Enron.txt.gz", dict(undirected=True, dedupe=True), None),
    "soc-slashdot0902": ("snap/soc-Slashdot0902.txt.gz", {}, None),
    "luxembourg-osm": ("luxembourg-osm/luxembourg_osm.txt.gz", dict(undirected=True), " "),
}


@pytest.fixture(scope="session")
def real(tmp_path_factory):
    """name -> :class:`Real` for the graphs of :data:`REAL` (skipped without the mirror)."""
    from tests.conftest import mirror_dir

    mirror = mirror_dir()
    if mirror is None or not all((mirror / f).exists() for f, _, _ in REAL.values()):
        pytest.skip("dataset mirror not found (set GRAPHSYS_MIRROR)")
    tmp = tmp_path_factory.mktemp("measures-real")
    out = {}
    for name, (file, opts, delim) in REAL.items():
        ingest_sources([EdgeSource([mirror / file], delimiter=delim)], tmp / name,
                       IngestOptions(partitions=2, **opts))
        g = open_graph(tmp / name)
        c = g.csr(weights=False)
        n = g.num_nodes()
        adj = sp.csr_matrix((np.ones(len(c.indices)), c.indices, c.indptr), shape=(n, n))
        adj.sum_duplicates()
        adj.data[:] = 1
        sym = (adj + adj.T).tocsr()
        sym.data[:] = 1
        out[name] = Real(g, adj, sym)
    return out
