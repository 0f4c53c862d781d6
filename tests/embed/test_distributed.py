"""Distributed training (2 gloo ranks on localhost): rounds, partition lock, quality, and a
run killed mid-epoch that torchrun resumes bit for bit."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from graphsys import open_graph
from graphsys.distributed import local_store, rank_environment
from graphsys.embed import Embeddings, evaluate, load_config, train
from graphsys.embed.distributed import DistributedTrainer
from graphsys.embed.schedule import bucket_order, plan_rounds
from graphsys.errors import GraphsysError

from .conftest import SMALL

EPOCHS = 10
ARGS = [*SMALL, f"num_epochs={EPOCHS}", "seed=3"]
TIMEOUT = 300


def _cli(kg, out, args):
    sets = [x for a in args for x in ("--set", a)]
    return ["-m", "graphsys", "embed", "train", "--graph", str(kg), "--edges", "train",
            "--out", str(out), "--json", *sets]


def _launch(kg, out, args, world_size=2):
    """Start ``world_size`` ranks of ``graphsys embed train`` with the environment torchrun
    gives its workers, their rendezvous a store hosted here); ``(store, processes)``: keep
    the store until the processes have exited."""
    store = local_store()
    procs = []
    for rank in range(world_size):
        env = dict(os.environ, OMP_NUM_THREADS="1", **rank_environment(store, rank, world_size))
        procs.append(subprocess.Popen([sys.executable, *_cli(kg, out, args)], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    return store, procs


def _finish(launched):
    """Wait for every rank of ``_launch``'s (killing them all on a timeout); returns their
    stdouts."""
    _, procs = launched
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=TIMEOUT)
            assert p.returncode == 0, err[-2000:]
            outs.append(out)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return outs


def _arrays(path):
    """Every tensor of a checkpoint keyed by its name without the version."""
    out = {}
    for sub in ("embeddings", "optim", "model"):
        for p in sorted((path / sub).rglob("*.npy")):
            out[str(p.relative_to(path)).split(".v")[0]] = np.load(p, allow_pickle=False)
    return out


@pytest.fixture(scope="module")
def two_ranks(kg4, tmp_path_factory):
    """Checkpoint of a 2-rank run on the planted KG with P = 4."""
    out = tmp_path_factory.mktemp("dist") / "ref"
    (line,), empty = (o.splitlines() for o in _finish(_launch(kg4, out, ARGS)))
    assert empty == []  # only rank 0 prints
    assert json.loads(line)["epochs"] == EPOCHS
    return out


@pytest.mark.parametrize("p", [1, 2, 4, 5, 8])
@pytest.mark.parametrize("ranks", [1, 2, 3])
@pytest.mark.parametrize("name", ["inside_out", "random", "buffer"])
def test_rounds_are_disjoint_and_cover_every_bucket(p, ranks, name):
    order = bucket_order(name, p, seed=1, buffer=2)
    rounds = plan_rounds(order, ranks)
    assert rounds == plan_rounds(order, ranks)
    assert sorted(b for r in rounds for b in r if b is not None) == sorted(order)
    for assign in rounds:
        assert len(assign) == ranks and any(b is not None for b in assign)
        parts = [q for b in assign if b is not None for q in set(b)]
        assert len(parts) == len(set(parts))
    if ranks == 1:
        assert [r[0] for r in rounds] == order


def test_two_ranks_train_as_well_as_one_and_never_share_a_partition(two_ranks, kg4, tmp_path):
    graph = open_graph(kg4)
    single = train(kg4, load_config(None, ARGS), edges="train",
                   out=tmp_path / "one").embeddings
    mrr1 = evaluate(single, graph, "test", filtered=True)["mrr"]
    dist = Embeddings.load(two_ranks, graph=graph)
    mrr2 = evaluate(dist, graph, "test", filtered=True)["mrr"]
    assert mrr1 > 0.85
    assert mrr2 >= mrr1 - 0.02, (mrr1, mrr2)

    counts = graph.bucket_counts("train")
    stats = dist.meta["stats"]
    assert len(stats) == EPOCHS and "progress" not in dist.meta
    for st in stats:
        assert st["world_size"] == 2 and len(st["ranks"]) == 2
        rounds = len(st["held"])
        assert rounds >= (counts > 0).sum() / 2
        for held in st["held"]:  # the lock: no partition held by two ranks in one round
            flat = [p for h in held for p in h]
            assert len(flat) == len(set(flat)) and all(len(h) <= 2 for h in held)
        ranks = st["ranks"]
        assert sum(r["edges"] for r in ranks) == st["edges"] == counts.sum()
        assert sum(r["buckets"] for r in ranks) == (counts > 0).sum()
        for r in ranks:
            assert r["edges"] > 0 and r["buckets"] + r["idle_rounds"] == rounds
            assert r["idle_rounds"] == sum(1 for held in st["held"] if not held[r["rank"]])
        assert st["loads"] == sum(r["loads"] for r in ranks) > 0


@pytest.mark.multi_gpu
def test_two_gpus_over_nccl_train_as_well_as_one(kg4, tmp_path, multi_gpu):
    """2 ranks, each on its GPU (cuda:LOCAL_RANK), exchanging over NCCL: the planted KG is
    learned as by one process on the CPU."""
    graph = open_graph(kg4)
    out = tmp_path / "nccl"
    (line,), _ = (o.splitlines() for o in _finish(_launch(kg4, out, ARGS + ['device="cuda"'])))
    assert json.loads(line)["epochs"] == EPOCHS
    mrr = evaluate(Embeddings.load(out, graph=graph), graph, "test", filtered=True)["mrr"]
    single = train(kg4, load_config(None, ARGS), edges="train", out=tmp_path / "one")
    mrr1 = evaluate(single.embeddings, graph, "test", filtered=True)["mrr"]
    assert mrr >= mrr1 - 0.02, (mrr1, mrr)


def test_killed_run_resumes_bit_for_bit_under_torchrun(two_ranks, kg4, tmp_path):
    out = tmp_path / "killed"
    args = [*ARGS, "checkpoint_buckets=true"]
    store, procs = _launch(kg4, out, args)
    meta = out / "checkpoint.json"
    deadline = time.time() + TIMEOUT
    progress = None
    try:
        while time.time() < deadline and all(p.poll() is None for p in procs):
            try:
                m = json.loads(meta.read_text())
            except (OSError, ValueError):
                m = {}
            if m.get("epochs_done", 0) >= 1 and m.get("progress"):
                progress = m["progress"]
                break
            time.sleep(0.005)
        assert progress is not None, "no mid-epoch commit seen before the run ended"
    finally:
        for p in procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
            p.communicate()
    m = json.loads(meta.read_text())
    assert m["progress"] and m["epochs_done"] < EPOCHS

    # resumed in the middle of the epoch, without further per-round commits (a resumable key)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
           "2", *_cli(kg4, out, ARGS)]
    res = subprocess.run(cmd, env=dict(os.environ, OMP_NUM_THREADS="1"), capture_output=True,
                         text=True, timeout=TIMEOUT, check=False)
    # the ranks' own errors come first, torchrun's summary of the failed ranks last
    assert res.returncode == 0, res.stderr[:3000] + "\n...\n" + res.stderr[-1000:]
    lines = res.stdout.splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["epochs"] == EPOCHS
    a, b = _arrays(two_ranks), _arrays(out)
    assert a.keys() == b.keys() and a
    for k in a:
        assert np.array_equal(a[k], b[k]), k


def test_a_group_the_caller_initialised_is_left_to_it(kg1, tmp_path):
    """``train(distributed=None)`` in ranks whose group the caller had initialised trained
    as its ranks, then destroyed that group (GNN training leaves it): the caller's next
    collective failed with "Default process group has not been initialized"."""
    code = ("import sys, torch, torch.distributed as dist; "
            "from graphsys.distributed import init_from_env; "
            "from graphsys.embed import load_config, train; "
            "init_from_env(torch.device('cpu')); "
            "train(sys.argv[1], load_config(None, sys.argv[3:]), edges='train', "
            "out=sys.argv[2], distributed=None); "
            "dist.barrier(); print(dist.is_initialized()); dist.destroy_process_group()")
    store = local_store()
    procs = [subprocess.Popen([sys.executable, "-c", code, str(kg1), str(tmp_path / "out"),
                               *SMALL, "num_epochs=1", "dimension=8"],
                              env=dict(os.environ, OMP_NUM_THREADS="1",
                                       **rank_environment(store, rank, 2)),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for rank in range(2)]
    assert [o.strip() for o in _finish((store, procs))] == ["True", "True"]
    assert json.loads((tmp_path / "out" / "checkpoint.json").read_text())["epochs_done"] == 1


class _TwoRanks:
    """A stand-in for torch.distributed whose other rank claims ``other``."""

    def __init__(self, other):
        self.other = other

    def all_gather(self, parts, t):
        parts[0].copy_(t)
        parts[1].copy_(torch.tensor(self.other))


def test_partition_lock_refuses_a_partition_claimed_twice():
    trainer = DistributedTrainer.__new__(DistributedTrainer)  # the lock only, no group
    trainer.world_size, trainer.comm_device = 2, torch.device("cpu")
    trainer.dist = _TwoRanks([3, -1])
    assert trainer._acquire([0, 1]) == [[0, 1], [3]]
    trainer.dist = _TwoRanks([2, 3])
    with pytest.raises(GraphsysError, match=r"partition lock: partitions \[2\] claimed"):
        trainer._acquire([1, 2])


def test_distributed_needs_a_process_group(kg4, tmp_path):
    with pytest.raises(GraphsysError, match="not initialised"):
        train(kg4, load_config(None, ARGS), out=tmp_path / "x", distributed=True)
