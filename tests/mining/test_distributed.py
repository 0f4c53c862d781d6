"""Two gloo ranks, each owning a range of oriented vertices, give the single-process
counts on every rank."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphsys import mining
from graphsys.distributed import rank_share
from graphsys.errors import GraphsysError
from graphsys.mining.parallel import tasks_by_work
from graphsys.storage.adjacency_index import build_index
from tests.mining.conftest import random_edges


def test_two_ranks(graph_of, tmp_path, monkeypatch):
    import torch.multiprocessing as mp

    # the spawned ranks unpickle ``tests.mining.dist_worker.worker`` with this process's
    # sys.path, which pytest's importlib mode leaves without the repository root
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2]))

    from graphsys.distributed import local_store
    from tests.mining.dist_worker import worker

    src, dst = random_edges(60, 500, 4)
    g = graph_of(src, dst, 60)
    build_index(g, ("sym",))
    store = local_store()  # the ranks' rendezvous, held until they have exited
    mp.spawn(worker, args=(2, store.port, str(g.path), str(tmp_path)), nprocs=2, join=True)
    ranks = [json.loads((tmp_path / f"{r}.json").read_text()) for r in range(2)]
    assert ranks[0] == ranks[1]
    got = ranks[0]
    stats = mining.triangle_stats(g, per_node=True)
    assert got["count"] == got["ooc_count"] == stats.count > 0
    assert got["triangles"] == got["ooc_triangles"] == stats.triangles.values.tolist()
    assert got["cliques4"] == mining.clique_count(g, 4)
    assert got["clique_counts4"] == mining.clique_counts(g, 4).values.tolist()
    assert got["motifs4"] == mining.motifs(g, 4).counts
    assert got["motifs5"] == mining.motifs(g, 5).counts
    sampled = mining.motifs(g, 4, method="sampled", samples=500, seed=1).counts
    assert got["sampled4"] == pytest.approx(sampled)  # the same draws, split over ranks
    assert got["triads"] == mining.triad_census(g)
    assert got["pattern"] == mining.count(g, "4-cycle", induced=True)
    # 2 ranks given 71MB and 200MB counted 2,065,092 of an R-MAT's 4,006,096 triangles out
    # of core (each cut its own row blocks) and said nothing; 3-cliques on one rank and
    # 4-cliques on the other summed 7 where there are 19
    assert got["budget"] == 3 << 20
    assert got["other_call"] == ("distributed run: rank 1 has another call than rank 0 "
                                 "(every rank must open the same graph and run the same "
                                 "program and settings)")


def test_rank_ranges_cover_the_roots():
    work = np.array([5, 0, 0, 9, 1, 1, 1, 1, 30, 2])
    for w in (1, 2, 3, 4):
        spans = [rank_share(len(work), r, w, work) for r in range(w)]
        assert spans[0].start == 0 and spans[-1].stop == len(work)
        assert all(a.stop == b.start for a, b in zip(spans, spans[1:]))
    bounds = tasks_by_work(work, 2, 10, 4)
    assert bounds[0] == 2 and bounds[-1] == 10 and (np.diff(bounds) > 0).all()
    assert 8 in bounds and 9 in bounds  # the heaviest root is a task of its own


def test_distributed_needs_a_process_group(graph_of):
    g = graph_of([0, 1, 2], [1, 2, 0], 3)
    with pytest.raises(GraphsysError, match="not initialised"):
        mining.triangle_count(g, distributed=True)
