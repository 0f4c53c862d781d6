"""``graphsys profile --workload mining``: the profiled triangle count, its work per vertex
and the split of that work over threads."""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest

from graphsys import cli, from_numpy, mining
from graphsys.analysis.mining_workload import split_balance
from graphsys.analysis.profile import profile_graph


@pytest.fixture(scope="module")
def skewed(tmp_path_factory):
    G = nx.barabasi_albert_graph(300, 4, seed=2)
    src, dst = np.array(G.edges).T
    return from_numpy(src, dst, tmp_path_factory.mktemp("m") / "g", partitions=3), G


def brute_work(g, G: nx.Graph, kernel: str) -> dict:
    """Per node, the entries the kernel reads (as graphsys.mining.triangle_work counts):
    orientation by (degree, internal id)."""
    internal = dict(zip(G, g.to_internal(list(G)).tolist()))
    rank = {v: (G.degree(v), internal[v]) for v in G}
    out = {v: sorted((w for w in G[v] if rank[w] > rank[v]), key=rank.get) for v in G}
    work = {v: len(out[v]) for v in G}
    for u in G:
        for j, v in enumerate(out[u]):
            if kernel == "middle":
                work[v] += len(out[u]) - j - 1
            else:
                work[u] += len(out[v])
    return work


@pytest.mark.parametrize("kernel", ["lowest", "middle"])
def test_triangle_work_is_the_kernels_reads(skewed, kernel, monkeypatch):
    from graphsys.mining import outofcore

    monkeypatch.setattr(outofcore, "from_middle", lambda *a: kernel == "middle")
    g, G = skewed
    work, chosen = mining.triangle_work(g)
    assert chosen == kernel
    assert work.to_dict() == brute_work(g, G, kernel)


def test_split_balance():
    work = np.array([1, 1, 1, 1, 1, 1, 1, 100], np.int64)
    b = split_balance(work, 2)
    assert b["total"] == 107
    assert b["per_vertex"]["heaviest_share"] == pytest.approx(100 / 107)
    assert b["static_split"]["work"] == [4, 103]
    # the heaviest vertex is a task of its own; no split can do better than it alone
    assert b["task_split"]["max_over_mean"] == pytest.approx(b["task_split"]["bound"])
    even = split_balance(np.full(64, 5, np.int64), 4)
    assert even["static_split"]["max_over_mean"] == pytest.approx(1.0)
    assert even["task_split"]["max_over_mean"] == pytest.approx(1.0)


def test_profile_mining(skewed):
    g, G = skewed
    prof = profile_graph(g, workload="mining", threads=2, mappings=["thread-per-vertex"],
                         dense=False)
    w = prof["workload"]
    assert w["kind"] == "mining" and w["triangles"] == sum(nx.triangles(G).values()) // 3
    assert w["balance"]["total"] == int(mining.triangle_work(g)[0].values.sum())
    assert w["balance"]["task_split"]["max_over_mean"] >= 1.0
    assert 0 < prof["simt"]["mean_utilization"] <= 1
    assert prof["time"]["attributed_share"] > 0


def test_cli(skewed, capsys):
    g, _ = skewed
    assert cli.main(["profile", "--workload", "mining", str(g.path), "--threads", "1",
                     "--no-dense", "--json"]) == 0
    prof = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert prof["workload"]["kind"] == "mining"
    assert cli.main(["profile", "--workload", "mining", str(g.path), "--set", "x=1"]) == 2
    assert "--set applies" in capsys.readouterr().err
