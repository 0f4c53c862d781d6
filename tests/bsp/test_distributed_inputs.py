"""Ranks of one distributed run must read the same graph and run the same program: ranks
given graph directories with the same counts but another partitioning fail in one line
before the first superstep."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pyarrow as pa

from graphsys import open_graph
from graphsys.bsp.algorithms.pagerank import PAGERANK_SPEC
from graphsys.bsp.distributed import program_digest
from graphsys.distributed import graph_digest, local_store, rank_environment
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources


def _graph(path, seed):
    rng = np.random.default_rng(0)
    table = pa.table({"src": rng.integers(0, 60, 400), "dst": rng.integers(0, 60, 400)})
    ingest_sources([EdgeSource(table=table)], path, IngestOptions(partitions=2, seed=seed))
    return path


def _ranks(args_per_rank, timeout=120):
    store = local_store()  # held until both ranks have exited
    env = {**os.environ, "GRAPHSYS_DIST_TIMEOUT": "30", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [subprocess.Popen([sys.executable, "-m", "graphsys", *args],
                              env={**env, **rank_environment(store, r, 2)},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for r, args in enumerate(args_per_rank)]
    out = []
    for p in procs:
        try:
            out.append((p.wait(timeout=timeout), p.stderr.read()))
        finally:
            p.kill()
    return out


def test_digests_tell_partitionings_apart(tmp_path):
    a, b = open_graph(_graph(tmp_path / "a", 0)), open_graph(_graph(tmp_path / "b", 1))
    assert a.num_nodes() == b.num_nodes() and a.num_edges() == b.num_edges()
    assert graph_digest(a) != graph_digest(b)
    assert graph_digest(a) == graph_digest(open_graph(tmp_path / "a"))
    p1 = PAGERANK_SPEC.make(a, damping=0.85, tol=1e-6)
    p2 = PAGERANK_SPEC.make(a, damping=0.5, tol=1e-6)
    assert program_digest(p1) != program_digest(p2)


def test_digests_tell_sampled_sources_apart(tmp_path):
    """Two ranks running betweenness(k=6) with seeds 1 and 2 sampled other sources and
    summed the columns of both: rank 0 returned values equal to neither seed's run, as a
    success. The programs differ only in an array (the sources), which the digest left
    out; it hashes arrays now, so the ranks refuse in one line."""
    import torch

    from graphsys.bsp.algorithms.centrality import BETWEENNESS_SPEC

    g = open_graph(_graph(tmp_path / "a", 0))
    one, two = (BETWEENNESS_SPEC.make(g, k=6, seed=s) for s in (1, 2))
    assert not np.array_equal(one.sources, two.sources)
    assert program_digest(one) != program_digest(two)
    assert program_digest(one) == program_digest(BETWEENNESS_SPEC.make(g, k=6, seed=1))
    # tensors of the same values: the same digest
    two.sources, two.sampled = torch.from_numpy(one.sources), torch.from_numpy(one.sampled)
    assert program_digest(one) == program_digest(two)


class _Targets:
    """A program's settings as a user's VertexProgram holds them: a list and a dict."""

    def __init__(self, targets, weights):
        self.targets, self.weights = targets, weights


def test_digests_tell_list_and_dict_settings_apart():
    """A program holding its targets in a list (each rank's own draw, say) ran on ranks
    with other lists, as a success: the digest read numbers, strings and arrays only."""
    one = program_digest(_Targets([1, 2], {"a": 1.0}))
    assert one == program_digest(_Targets([1, 2], {"a": 1.0}))
    assert one != program_digest(_Targets([1, 3], {"a": 1.0}))
    assert one != program_digest(_Targets([1, 2], {"a": 2.0}))
    assert one != program_digest(_Targets((1, 2), {1: 1.0, "b": 2}))


def test_ranks_on_different_graphs_fail_in_one_line(tmp_path):
    a, b = _graph(tmp_path / "a", 0), _graph(tmp_path / "b", 1)
    results = _ranks([["run", "pagerank", str(a)], ["run", "pagerank", str(b)]])
    for code, err in results:
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1, err
        assert "rank 1 has another graph than rank 0" in lines[0], err


def test_ranks_with_different_settings_fail(tmp_path):
    a = _graph(tmp_path / "a", 0)
    results = _ranks([["run", "pagerank", str(a), "--damping", "0.85"],
                      ["run", "pagerank", str(a), "--damping", "0.5"]])
    for code, err in results:
        assert code == 2 and "another program" in err, err
