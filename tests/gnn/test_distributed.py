"""Data-parallel node training (2 gloo ranks on localhost, the environment torchrun gives
its workers): the same parameters as one rank with the same global batch, with full and
with sampled neighbourhoods, bit-repeatable runs, the per-rank record, and a dead peer
ending the run with one line.

The 1-vs-2-rank comparisons run with dropout 0: the samplers key their random streams by
node id (:mod:`graphsys.sampling._kernels`) and every rank samples with the global batch's
seed, so a rank's seeds get the neighbourhoods they have in the whole batch; dropout draws
its masks per rank over the rank's own batch tensors."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from graphsys.distributed import local_store, rank_environment
from graphsys.gnn import TrainConfig, train

from .conftest import write_sbm

SCRIPT = Path(__file__).with_name("ddp_script.py")
TIMEOUT = 180
# 40 training seeds in global batches of 15, 15 and 10: unequal rank shares (7/8, 5/5)
CFG = dict(model="sage", fanouts=[-1, -1], hidden=8, epochs=3, batch_size=15, dropout=0.0,
           seed=5, num_workers=1)


def _env(world_size: int, rank: int, store, **extra) -> dict:
    """The torchrun environment of a rank whose rendezvous is ``store``, hosted by the test
    (:func:`graphsys.distributed.local_store`: no port is released between picking and use)."""
    return dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join(sys.path),
                **rank_environment(store, rank, world_size), **extra)


def _run(graph: Path, cfg: dict, dest: Path, world_size: int = 2, out: Path | str | None = None,
         device: str = "cpu", errors: list | None = None):
    """Launch ``world_size`` ranks of ddp_script.py (gloo on the CPU, NCCL with one GPU per
    rank for ``device="cuda"``); rank 0's parameters and result. Given ``errors``, ranks may
    fail: their return codes and stderr are appended to it, and None is returned."""
    store = local_store()  # held until every rank has exited
    extra = [str(out)] if out is not None else []
    procs = [subprocess.Popen([sys.executable, str(SCRIPT), str(graph), json.dumps(cfg),
                               str(dest), *extra],
                              env=_env(world_size, r, store, GRAPHSYS_TEST_DDP_DEVICE=device),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for r in range(world_size)]
    try:
        for p in procs:
            _, err = p.communicate(timeout=TIMEOUT)
            if errors is not None:
                errors.append((p.returncode, err))
            else:
                assert p.returncode == 0, err[-3000:]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    if errors is not None:
        return None
    params = dict(np.load(f"{dest}.npz"))
    return params, json.loads(Path(f"{dest}.json").read_text())


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    return write_sbm(tmp_path_factory.mktemp("ddp") / "sbm", partitions=2)


def test_two_ranks_follow_one_rank_with_the_same_global_batch(graph, tmp_path):
    one = train(graph, TrainConfig(**CFG), distributed=False)
    two, info = _run(graph, CFG, tmp_path / "two")
    ref = {k: v.numpy() for k, v in one.model.state_dict().items()}
    assert sorted(ref) == sorted(two)
    for k in ref:
        np.testing.assert_allclose(two[k], ref[k], rtol=1e-4, atol=1e-5, err_msg=k)
    assert [h["epoch"] for h in info["history"]] == [h["epoch"] for h in one.history]
    for h1, h2 in zip(one.history, info["history"]):
        assert h2["loss"] == pytest.approx(h1["loss"], rel=1e-4)
        assert h2["val_accuracy"] == h1["val_accuracy"]
    assert info["metrics"] == pytest.approx(one.metrics)
    # the record: world size, each rank's seeds (40 per epoch between them) and seconds
    assert info["world_size"] == 2 and [r["rank"] for r in info["ranks"]] == [0, 1]
    assert [r["seeds"] for r in info["ranks"]] == [3 * (7 + 7 + 5), 3 * (8 + 8 + 5)]
    assert all(r["seconds"] > 0 for r in info["ranks"])


@pytest.mark.multi_gpu
def test_two_gpus_over_nccl_follow_one_gpu(graph, tmp_path, multi_gpu):
    """The same comparison on 2 GPUs exchanging gradients over NCCL, against one GPU."""
    one = train(graph, TrainConfig(**CFG), distributed=False, device="cuda")
    two, info = _run(graph, CFG, tmp_path / "two", device="cuda")
    ref = {k: v.cpu().numpy() for k, v in one.model.state_dict().items()}
    assert sorted(ref) == sorted(two)
    for k in ref:
        np.testing.assert_allclose(two[k], ref[k], rtol=1e-4, atol=1e-5, err_msg=k)
    for h1, h2 in zip(one.history, info["history"]):
        assert h2["loss"] == pytest.approx(h1["loss"], rel=1e-4)
    assert info["world_size"] == 2 and info["metrics"] == pytest.approx(one.metrics)


@pytest.fixture(scope="module")
def mapped_graph(tmp_path_factory):
    """``graph`` with its features in a memory-mapped column file of their own."""
    return write_sbm(tmp_path_factory.mktemp("ddp") / "sbm", partitions=2,
                     mapped_features=True)


def test_mapped_features_train_as_the_same_features_in_memory(graph, mapped_graph):
    from graphsys.gnn.inputs import MappedFeatures, node_task_data
    from graphsys.storage.graph import open_graph

    data = node_task_data(open_graph(mapped_graph), mapped=True)
    assert isinstance(data["x"], MappedFeatures)         # gathered per batch, not read
    ref = node_task_data(open_graph(graph))["x"]
    assert torch.equal(data["x"].rows(torch.arange(len(ref))), ref)
    cfg = TrainConfig(**{**CFG, "fanouts": [5, 5]})
    a, b = train(graph, cfg, distributed=False), train(mapped_graph, cfg, distributed=False)
    for (k, x), y in zip(a.model.state_dict().items(), b.model.state_dict().values()):
        assert torch.equal(x, y), k


def test_two_ranks_follow_one_rank_with_sampled_fanouts(graph, mapped_graph, tmp_path):
    from graphsys.sampling import homogeneous_adjacency
    from graphsys.storage.graph import open_graph

    deg = np.diff(homogeneous_adjacency(open_graph(graph), symmetric=True).indptr)
    assert (deg > 5).mean() > 0.5            # fanout 5 subsamples most neighbourhoods
    cfg = {**CFG, "fanouts": [5, 5]}
    one = train(graph, TrainConfig(**cfg), distributed=False)
    two, info = _run(mapped_graph, cfg, tmp_path / "two")    # features shared by mapping
    ref = {k: v.numpy() for k, v in one.model.state_dict().items()}
    assert sorted(ref) == sorted(two)
    for k in ref:
        np.testing.assert_allclose(two[k], ref[k], rtol=1e-4, atol=1e-5, err_msg=k)
    for h1, h2 in zip(one.history, info["history"], strict=True):
        assert h2["loss"] == pytest.approx(h1["loss"], rel=1e-4)
    # the same run with full neighbourhoods ends elsewhere: the sampling mattered
    full = train(graph, TrainConfig(**CFG), distributed=False)
    assert any(not np.allclose(full.model.state_dict()[k].numpy(), ref[k], atol=1e-4)
               for k in ref)


def test_two_rank_runs_are_bit_repeatable_with_sampling_and_dropout(graph, tmp_path):
    cfg = {**CFG, "fanouts": [3, 3], "dropout": 0.5, "epochs": 2}
    a, ia = _run(graph, cfg, tmp_path / "a")
    b, ib = _run(graph, cfg, tmp_path / "b")
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert [h["loss"] for h in ia["history"]] == [h["loss"] for h in ib["history"]]


def test_two_ranks_resume_where_they_stopped_bit_for_bit(graph, tmp_path):
    cfg = {**CFG, "fanouts": [3, 3], "dropout": 0.5}
    straight, info = _run(graph, cfg, tmp_path / "straight", out=tmp_path / "a")
    _run(graph, {**cfg, "epochs": 2}, tmp_path / "first", out=tmp_path / "b")
    resumed, rinfo = _run(graph, cfg, tmp_path / "resumed", out=tmp_path / "b")
    assert all(np.array_equal(straight[k], resumed[k]) for k in straight)
    assert rinfo["history"] == [{**h, **{k: r[k] for k in h if "seconds" in k}}
                                for h, r in zip(info["history"], rinfo["history"])]
    assert [r["seeds"] for r in rinfo["ranks"]] == [7 + 7 + 5, 8 + 8 + 5]  # one epoch run
    lines = (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["epoch"] for x in lines] == [1, 2, 3]
    # out on a disk of each host's own: rank 0 finds this run, rank 1 none. Rank 0 went on
    # from epoch 3, rank 1 from 0, and rank 0 aborted (gloo: "Received data size doesn't
    # match expected size", SIGABRT); both stop in one line now
    errors = []
    _run(graph, cfg, tmp_path / "other", out=f"{tmp_path / 'b'}|{tmp_path / 'c'}",
         errors=errors)
    for code, err in errors:
        lines = [x for x in err.strip().splitlines() if not re.match(r"\[[EW]\d{4} ", x)]
        assert code == 2 and len(lines) == 1, err[-3000:]
        assert lines[0].endswith(": the ranks found other runs to resume (out must be a "
                                 "directory that every rank sees, on a shared filesystem)")


def test_one_process_resumes_and_refuses_other_settings(graph, tmp_path):
    from graphsys.errors import GraphsysError

    cfg = {**CFG, "fanouts": [3, 3], "dropout": 0.5}
    a = train(graph, TrainConfig(**cfg), out=tmp_path / "a", distributed=False)
    train(graph, TrainConfig(**{**cfg, "epochs": 1}), out=tmp_path / "b", distributed=False)
    b = train(graph, TrainConfig(**cfg), out=tmp_path / "b", distributed=False)
    for (k, x), y in zip(a.model.state_dict().items(), b.model.state_dict().values()):
        assert torch.equal(x, y), k
    assert a.metrics == b.metrics
    with pytest.raises(GraphsysError, match="other settings"):
        train(graph, TrainConfig(**{**cfg, "lr": 0.1}), out=tmp_path / "b", distributed=False)


def test_a_dead_peer_ends_the_run_with_one_line(graph, tmp_path):
    store = local_store()
    env = dict(GRAPHSYS_DIST_TIMEOUT="5")
    dead = ("import os, torch; from graphsys.distributed import init_from_env; "
            "init_from_env(torch.device('cpu')); os._exit(1)")
    procs = [subprocess.Popen([sys.executable, "-m", "graphsys", "gnn", "train", "--graph",
                               str(graph), "--epochs", "2", "--json"],
                              env=_env(2, 0, store, **env), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True),
             subprocess.Popen([sys.executable, "-c", dead], env=_env(2, 1, store, **env))]
    try:
        _, err = procs[0].communicate(timeout=TIMEOUT)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
    # torch's C++ backend may log its own line first ("[E1128 ...] Gloo connectFullMesh
    # failed": the peer died while the ranks connected); graphsys's error is one line
    lines = [x for x in err.strip().splitlines() if not re.match(r"\[[EW]\d{4} ", x)]
    assert procs[0].returncode != 0 and len(lines) == 1, err[-3000:]
    assert lines[0].startswith("error: rank 0: a peer rank died"), err


def test_ranks_given_other_features_fail_in_one_line(graph, tmp_path):
    """Ranks given feature arrays of one shape but other values (each rank's own random
    projection, say) trained one model on both, as a success: only the shape was compared.
    The values are now part of the inputs every rank checks."""
    code = ("import sys, os, json, numpy as np; from graphsys.gnn import TrainConfig, train; "
            "from graphsys.errors import GraphsysError\n"
            "try:\n"
            "    train(sys.argv[1], TrainConfig(**json.loads(sys.argv[2])), distributed=None, "
            "features=np.full((200, 8), float(os.environ['RANK']), np.float32))\n"
            "except GraphsysError as exc:\n"
            "    print(f'error: {exc}', file=sys.stderr); sys.stdout.flush(); os._exit(2)\n"
            "os._exit(0)")
    store = local_store()
    procs = [subprocess.Popen([sys.executable, "-c", code, str(graph),
                               json.dumps({**CFG, "epochs": 1})],
                              env=_env(2, r, store), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for r in range(2)]
    try:
        errors = [(p.wait(timeout=TIMEOUT), p.stderr.read()) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for code, err in errors:
        lines = [x for x in err.strip().splitlines() if not re.match(r"\[[EW]\d{4} ", x)]
        assert code == 2 and len(lines) == 1, err[-3000:]
        assert "rank 1 has another features than rank 0" in lines[0], err


def test_distributed_needs_a_process_group(graph):
    from graphsys.errors import ParameterError

    if torch.distributed.is_initialized():
        pytest.skip("a process group is initialised in this process")
    with pytest.raises(ParameterError, match="not initialised"):
        train(graph, TrainConfig(**CFG), distributed=True)
