"""BSP workload profiling: frontiers recorded during the profiled run itself."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphsys.analysis import workloads as W
from graphsys.analysis.kernels import profile_call
from graphsys.analysis.simt import GPUS
from graphsys.bsp import run as bsp_run
from graphsys.bsp.algorithms.common import source_index
from graphsys.storage.graph import open_graph
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("workloads")
    rng = np.random.default_rng(3)
    src = np.concatenate([rng.integers(0, 4, 300), rng.integers(0, 300, 700)])
    dst = rng.integers(0, 300, len(src))
    f = tmp / "e.tsv"
    f.write_text("".join(f"{s}\t{d}\n" for s, d in zip(src, dst)))
    ingest([EdgeSource([f])], tmp / "g", IngestOptions(num_partitions=3))
    return open_graph(tmp / "g")


def test_recording_dispatches_no_operator():
    log = W.FrontierLog()
    masks = [torch.ones(50, dtype=torch.bool), torch.arange(50) % 3 == 0, None]

    def work(marker):
        marker.step()
        refs = [log._store(m) for m in masks]
        marker.finish()
        return refs

    refs, st = profile_call(work)
    log.close()
    assert st.invocations == 0 and st.syncs == 0 and not st.transfers
    assert refs[0] == W.ALL and refs[2] is None and refs[1] != W.ALL


def test_masks_round_trip_in_chunks(monkeypatch):
    monkeypatch.setattr(W, "FRONTIER_CHUNK", 16)
    rng = np.random.default_rng(0)
    log = W.FrontierLog()
    masks = [rng.random(n) < 0.3 for n in (45, 45, 7)]
    refs = [log._store(torch.as_tensor(m)) for m in masks]
    deg = np.arange(45, dtype=np.int64)
    for m, ref in zip(masks[:2], refs[:2]):
        got = np.concatenate(list(W._chunks_of(deg, log.mask(ref))()))
        assert got.tolist() == deg[m].tolist()
    sel = log.mask(refs[2])
    assert sel(0, 7).tolist() == masks[2].tolist()
    log.close()


def _recorder():
    maps = ["thread-per-vertex", "edge-balanced"]
    return W.SimtRecorder(maps, 64, 4, GPUS["h100"])


@pytest.mark.parametrize("mode", ["memory", "out-of-core"])
def test_single_run_counts_match_unhooked_run(graph, mode, device):
    """The hooks add no invocation to the profiled run (on the test device, whose kernels
    or operators are counted); the SIMT model gets the frontier."""
    if device == "lazy":
        pytest.skip("torch's lazy tensors cannot run views under a TorchDispatchMode (the "
                    "transfer counter)")
    out_rec = _recorder()
    out = W.profile_bsp(graph, "bfs", recorder=out_rec, source=150, mode=mode,
                        backend="torch", schedule="sync", device=device)
    prog, limit = W.make_program(graph, "bfs", source=150)

    def work(marker):
        inner = prog.init

        def init(ctx):
            res = inner(ctx)
            marker.step()
            return res

        prog.init = init
        res = bsp_run(graph, prog, device=device, backend="torch", mode=mode,
                      max_iters=limit, progress=lambda ss: marker.step())
        marker.finish()
        return res

    res, st = profile_call(work, device=device, count_transfers=device != "cpu")
    n = res.stats.num_supersteps
    assert out["steps"] == n and out["stats"].per_step == st.per_step[:n]
    assert out["stats"].invocations == st.invocations
    assert out["workload"]["model_run_seconds"] == 0.0
    # the first superstep pushes from the source (a leaf) alone: one item, its out-degree
    first = out_rec.steps["thread-per-vertex"][0]
    assert first["direction"] != "pull" and first["active"] == first["items"] == 1
    deg = graph.degrees(direction="out")
    assert first["edges"] == int(deg[source_index(graph, 150)])
    assert len(out_rec.steps["edge-balanced"]) == n


def test_gnn_reads_block_degrees_after_the_profiled_run(graph, monkeypatch):
    """``Tensor.numpy()`` dispatches operators (detach, resolve_conj, ...): the block
    degrees the SIMT model needs are read after the profiled steps, not inside them."""
    inside = {"now": False, "reads": [], "blocks": 0}
    real_call, real_degrees = W.profile_call, W.block_in_degrees

    def profiled(fn, **kw):
        def wrapped(marker):
            inside["now"] = True
            try:
                return fn(marker)
            finally:
                inside["now"] = False
        return real_call(wrapped, **kw)

    def degrees(edge_dst, num_dst):
        inside["reads"].append(inside["now"])
        return real_degrees(edge_dst, num_dst)

    monkeypatch.setattr(W, "profile_call", profiled)
    monkeypatch.setattr(W, "block_in_degrees", degrees)
    rec = _recorder()
    W.profile_gnn(graph, recorder=rec, steps=2, batch_size=16)
    assert inside["reads"] == [False] * 4  # 2 steps x 2 blocks, all after the run
    assert rec.totals["thread-per-vertex"].kernels == 4


def test_rank_work_follows_the_frontier(graph):
    """Every superstep's work items are charged to the ranks owning them: per superstep the
    ranks' work adds up to the SIMT model's edges, and ids map to ranks as the engine
    splits partitions."""
    from graphsys.analysis.balance import RankWork, rank_bounds

    bounds = rank_bounds(graph, 2)
    off = graph.partition_offsets()
    assert bounds.tolist() == [0, int(off[1]), int(off[3])]  # 3 partitions: [0, 1), [1, 3)
    rec, ranked = _recorder(), RankWork(bounds)
    W.profile_bsp(graph, "bfs", recorder=rec, source=150, rank_work=ranked)
    steps = rec.steps["thread-per-vertex"]
    assert len(ranked.per_step) == len(steps) > 2
    assert [sum(w) for w in ranked.per_step] == [s["edges"] for s in steps]
    # the first superstep pushes from the source alone, on the rank that owns it
    src = source_index(graph, 150)
    owner = int(np.searchsorted(bounds, src, side="right")) - 1
    first = ranked.per_step[0]
    assert first[owner] == steps[0]["edges"] and first[1 - owner] == 0


def test_every_cli_algorithm_has_its_program(graph):
    """make_program builds the program the CLI runs (HITS is no k-core), and HITS, whose
    direction switches every superstep, profiles."""
    from graphsys.bsp import algorithms as A

    prog, _ = W.make_program(graph, "hits")
    assert isinstance(prog, A.HITS)
    out = W.profile_bsp(graph, "hits", recorder=_recorder(), max_iters=4)
    assert out["steps"] == 4


def test_gnn_profiles_a_factory_model_from_the_config(graph, tmp_path, monkeypatch):
    """A ``module:Factory`` model is built as the trainer builds it (the factory gets the
    config's hidden width and dropout, the graph's layers) and is the model profiled."""
    import sys

    from graphsys.gnn.overrides import train_config_from_overrides

    (tmp_path / "prof_models.py").write_text(
        "from graphsys.gnn import GNN\n"
        "SEEN = []\n"
        "def Gin(**dims):\n    SEEN.append(dims)\n    return GNN('gin', **dims)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = train_config_from_overrides(["model=prof_models:Gin", "hidden=24", "dropout=0.1"],
                                      W.GNN_DEFAULTS)
    out = W.profile_gnn(graph, recorder=_recorder(), steps=1, batch_size=8, config=cfg)
    import prof_models

    assert [(d["hidden_dim"], d["dropout"], d["num_layers"]) for d in prof_models.SEEN] == \
        [(24, 0.1, 2)]
    assert out["workload"]["model"] == "prof_models:Gin"
    assert any(24 in shape for shape in out["workload"]["parameters"].values())
    sys.modules.pop("prof_models", None)


@pytest.mark.parametrize("item, message", [
    ("lr=-1", "lr must be a finite number > 0"), ("heads=0", "heads must be an integer >= 1"),
    ("batch_size=2.5", "batch_size: must be an integer"), ("fanouts", "expected key=value"),
    ("task=link", "task: the GNN profile runs the node task"),
])
def test_gnn_config_errors_name_the_key_not_a_flag(graph, item, message):
    from graphsys.errors import GraphsysError
    from graphsys.gnn.overrides import train_config_from_overrides

    with pytest.raises(GraphsysError, match=message) as err:
        cfg = train_config_from_overrides([item], W.GNN_DEFAULTS)
        W.profile_gnn(graph, recorder=_recorder(), steps=1, config=cfg)
    assert "--" not in str(err.value) and "\n" not in str(err.value)
