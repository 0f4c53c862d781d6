"""``warmup`` compiles what a default first call of every algorithm needs: afterwards the
front-ends add no kernel signature, on graphs unlike the warm-up's own."""

from __future__ import annotations

import numpy as np
import pytest

from graphsys import bsp, from_numpy, jit
from graphsys.bsp.warmup import warmup
from graphsys.errors import GraphsysError


def _signatures() -> int:
    return sum(len(d.signatures) for d in jit.kernels())


def _calls(g) -> dict:
    s = int(g.node_ids()[0])
    return {"bfs": lambda: bsp.bfs(g, s), "sssp": lambda: bsp.sssp(g, s),
            "wcc": lambda: bsp.wcc(g), "kcore": lambda: bsp.kcore(g),
            "pagerank": lambda: bsp.pagerank(g), "hits": lambda: bsp.hits(g),
            "lpa": lambda: bsp.label_propagation(g),
            "ppr": lambda: bsp.personalized_pagerank(g, [s])}


def test_first_calls_after_warmup_compile_nothing(tmp_path):
    # the everyday algorithms (the whole-graph analyses compile for minutes on a cold cache)
    everyday = ["bfs", "sssp", "wcc", "kcore", "pagerank", "hits", "lpa", "ppr"]
    report = warmup(everyday)
    assert set(report["algorithms"]) == set(everyday)
    # the kernels were compiled or loaded here, or by an earlier test in this process
    # (then both counts are 0): the calls below check that nothing is left to compile
    assert report["cache"]
    rng = np.random.default_rng(7)
    src, dst = rng.integers(0, 3000, 40_000), rng.integers(0, 3000, 40_000)
    graphs = [from_numpy(src, dst, tmp_path / "directed", partitions=3,
                         weight=rng.random(40_000)),
              from_numpy(src, dst, tmp_path / "undirected", undirected=True)]
    before = _signatures()
    for g in graphs:
        for name, call in _calls(g).items():
            call()
            assert _signatures() == before, f"{name} compiled a kernel after warmup"
    again = warmup(["wcc"])  # everything is compiled in this process already
    assert again["compiled"] == 0


def test_bad_input_is_refused_in_one_line():
    with pytest.raises(GraphsysError, match="nosuch"):
        warmup(["nosuch"])
    with pytest.raises(GraphsysError, match="seed"):
        warmup(["wcc"], seed=-1)


def test_sampled_centralities_search_from_a_few_sources(monkeypatch):
    """Betweenness, closeness and harmonic warm up from SAMPLED_SOURCES sampled sources (the
    same kernels as every source, without a search per node); the others take no ``k``."""
    from graphsys.bsp import warmup as wu
    from graphsys.plugins import ALGORITHMS

    seen = {}
    spec_class = type(ALGORITHMS.get("betweenness"))
    monkeypatch.setattr(spec_class, "run",
                        lambda self, *a, **kw: seen.setdefault(self.name, set()).add(
                            kw.get("k")))
    wu.warmup(["betweenness", "closeness", "harmonic", "wcc"])
    assert seen == {"betweenness": {wu.SAMPLED_SOURCES}, "closeness": {wu.SAMPLED_SOURCES},
                    "harmonic": {wu.SAMPLED_SOURCES}, "wcc": {None}}


def test_workers_fill_the_cache_and_fail_with_a_workers_error(tmp_path, monkeypatch):
    """``jobs=2`` warms two groups in two fresh processes, which inherit the environment:
    their kernels land in the one cache, which a second run loads; an error in a worker
    fails the call with its first line, naming the group."""
    from graphsys.bsp import warmup as wu

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    lines: list[str] = []
    report = warmup(["wcc", "kcore"], jobs=2, progress=lines.append)
    assert sorted(report["algorithms"]) == ["kcore", "wcc"] and report["compiled"] > 0
    assert sorted(line.split(":")[0] for line in lines) == ["kcore", "wcc"]
    assert report["cache"] == str(tmp_path / "graphsys") and any(tmp_path.rglob("*.nbc"))
    again = warmup(["wcc", "kcore"], jobs=2)
    assert again["compiled"] == 0 and again["loaded"] > 0
    with pytest.raises(GraphsysError, match=r"^warm-up of nosuch: UnknownPluginError: .*nosuch"):
        wu.in_workers(warmup, [["wcc"], ["nosuch"]], None, seed=0)
    with pytest.raises(GraphsysError, match="jobs"):
        warmup(["wcc"], jobs=0)
