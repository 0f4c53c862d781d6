"""Small test graphs for the BSP engine, built once per session, with their references.

Every graph has isolated vertices (ids only in a node table) and dangling vertices (no
out-edges); ``directed`` graphs keep edge direction, ``undirected`` ones are ingested with
both directions stored.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import scipy.sparse as sp
from hypothesis import strategies as st

from graphsys import open_graph
from graphsys.storage.ingest import EdgeSource, IngestOptions, NodeSource, ingest_sources


@dataclass
class TestGraph:
    """A stored graph plus its adjacency in global ids: ``adj`` scipy CSR float64 (N, N) of
    edge weights (1.0 unweighted; multi-edges summed in ``count``)."""

    path: Path
    graph: object
    adj: sp.csr_matrix
    count: sp.csr_matrix
    undirected: bool
    weighted: bool

    @property
    def n(self) -> int:
        return self.graph.num_nodes()


def build(tmp: Path, name: str, src, dst, *, num_nodes: int, partitions: int,
          undirected: bool = False, weights=None, dedupe: bool = True) -> TestGraph:
    """Ingest ``src -> dst`` (original ids, int) into ``tmp/name`` with every id in
    ``range(num_nodes)`` present (isolated ones through a node table)."""
    f = tmp / f"{name}.tsv"
    cols = [np.asarray(src), np.asarray(dst)] + ([np.asarray(weights)] if weights is not None
                                                 else [])
    f.write_text("".join("\t".join(str(c) for c in row) + "\n" for row in zip(*cols)))
    out = tmp / name
    ingest_sources([EdgeSource([f], weight_col=2 if weights is not None else None)], out,
                   IngestOptions(partitions=partitions, undirected=undirected, dedupe=dedupe,
                                 drop_self_loops=True),
                   nodes=[NodeSource(pa.table({"id": pa.array(np.arange(num_nodes), pa.int64())}))])
    g = open_graph(out)
    n = g.num_nodes()
    rows, cols_, ws = [], [], []
    for s, d, _, w in g.iter_edges():
        rows.append(s)
        cols_.append(d)
        ws.append(w.astype(np.float64) if w is not None else np.ones(len(s)))
    r, c, w = (np.concatenate(x) if x else np.zeros(0) for x in (rows, cols_, ws))
    adj = sp.csr_matrix((w, (r, c)), shape=(n, n))
    count = sp.csr_matrix((np.ones(len(r)), (r, c)), shape=(n, n))
    return TestGraph(out, g, adj, count, undirected, weights is not None)


def random_edges(seed: int, n: int, m: int):
    """Edges among ids [0, n-12): ids n-12..n-1 stay isolated; sources avoid the top 25
    ids so those are dangling (no out-edges)."""
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n - 25, m)
    dst = rng.integers(0, n - 12, m)
    w = np.round(rng.uniform(0.1, 5.0, m), 3)
    return src, dst, w


@pytest.fixture(scope="session")
def graphs(tmp_path_factory) -> dict[str, TestGraph]:
    """``{kind}-p{P}`` for kind in directed/undirected and P in 1/3 (weighted, 240 nodes,
    ~900 edges), plus ``chain`` (a long path, many BFS levels)."""
    tmp = tmp_path_factory.mktemp("bsp-graphs")
    out = {}
    src, dst, w = random_edges(7, 240, 900)
    for p in (1, 3):
        out[f"directed-p{p}"] = build(tmp, f"directed-p{p}", src, dst, num_nodes=240,
                                      partitions=p, weights=w)
        out[f"undirected-p{p}"] = build(tmp, f"undirected-p{p}", src, dst, num_nodes=240,
                                        partitions=p, undirected=True, weights=w)
    chain = np.arange(60)
    out["chain"] = build(tmp, "chain", chain[:-1], chain[1:], num_nodes=64, partitions=4)
    return out


@pytest.fixture(scope="session")
def indexed(graphs, tmp_path_factory) -> dict:
    """``directed-p1``, ``directed-p3`` and ``undirected-p3`` copies (opened graphs) with
    their stored CSR and CSC indexes."""
    import shutil

    from graphsys.storage.adjacency_index import build_index

    out = {}
    for key in ("directed-p1", "directed-p3", "undirected-p3"):
        path = tmp_path_factory.mktemp("indexed") / key
        shutil.copytree(graphs[key].path, path)
        build_index(open_graph(path), ("csr", "csc"))
        out[key] = open_graph(path)
    return out


GRAPH_KEYS = ["directed-p1", "directed-p3", "undirected-p1", "undirected-p3"]
#: (mode, backend) combinations every algorithm is checked in: the numba rows run on the CPU
#: (marked ``host``), the torch rows on the test device of a test taking ``device``
MODES = [pytest.param("memory", "numba", marks=pytest.mark.host),
         pytest.param("out-of-core", "numba", marks=pytest.mark.host),
         ("memory", "torch"), ("out-of-core", "torch")]


def to_global(tg: TestGraph, original_id: int) -> int:
    return int(tg.graph.to_internal([original_id])[0])


def torchrun(script: Path, *args) -> None:
    """Run ``script`` with ``args`` as 2 local gloo processes (one OpenMP thread each);
    torchrun's agent hosts their rendezvous on a port it binds itself (``--standalone``)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                    "--standalone", str(script), *map(str, args)],
                   check=True, env=env, timeout=300, capture_output=True)


@st.composite
def random_digraphs(draw, max_nodes: int, max_edges: int):
    """Hypothesis strategy: a random directed multigraph as scipy CSR float64 (n, n), n >= 1
    (duplicate edges summed)."""
    n = draw(st.integers(1, max_nodes))
    m = draw(st.integers(0, max_edges))
    src = draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
    dst = draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
    a = sp.csr_matrix((np.ones(m), (src, dst)), shape=(n, n))
    a.sum_duplicates()
    return a


def nx_graph(g, undirected: bool, weights: bool = True):
    """A stored graph in networkx (``Graph`` or ``DiGraph``), nodes by original id in
    internal id order, weights as ``weight`` (unless ``weights`` is False)."""
    import networkx as nx

    G = nx.Graph() if undirected else nx.DiGraph()
    G.add_nodes_from(g.node_ids().tolist())
    for s, d, _, w in g.iter_edges():
        s, d = g.to_original(s).tolist(), g.to_original(d).tolist()
        if w is not None and weights:
            G.add_weighted_edges_from(zip(s, d, w.astype(np.float64).tolist()))
        else:
            G.add_edges_from(zip(s, d))
    return G


def keeps_numba_generator(run) -> bool:
    """Whether ``run()`` leaves the calling thread's numba generator (the one a user's own
    jitted code draws from) where it was: a kernel that seeds it resets it."""
    import numba

    reseed = numba.njit(lambda s: np.random.seed(s))
    draw = numba.njit(lambda: np.random.random())
    reseed(5)
    want = draw()
    reseed(5)
    run()
    return draw() == want
