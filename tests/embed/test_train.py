"""Training quality, bucketed = unbucketed, swapping, and bit-for-bit resume after kill -9
(after an epoch, and with checkpoint_buckets in the middle of one)."""

from __future__ import annotations

import hashlib
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
from graphsys.embed import Embeddings, EmbedResult, evaluate, load_config, train
from graphsys.errors import ConfigError, GraphsysError
from graphsys.storage.triples import triples

EPOCHS = 40


def _mrr(kg, out, small, *extra, epochs=EPOCHS):
    cfg = load_config(None, small + [f"num_epochs={epochs}", *extra])
    emb = train(kg, cfg, edges="train", out=out).embeddings
    return evaluate(emb, open_graph(kg), "test", filtered=True)["mrr"], emb


@pytest.mark.device
def test_planted_kg_is_recovered_and_p4_matches_p1(kg1, kg4, small, tmp_path):
    """Both runs recover the planted KG (a random ranking's MRR is about 0.03), and four
    partitions train as well as one, within the spread of runs: over seeds 0-7 on the
    CPU P=1 reaches 0.943-0.954, P=4 0.935-0.953, P=4 - P=1 from -0.017 (80 epochs) to
    +0.005 (a random stream's, not the partitions': CUDA's device loop gave -0.021)."""
    mrr1, _emb1 = _mrr(kg1, tmp_path / "p1", small)
    assert mrr1 > 0.9
    mrr4, emb4 = _mrr(kg4, tmp_path / "p4", small, "bucket_order=\"inside_out\"")
    assert mrr4 > 0.9 and mrr4 >= mrr1 - 0.03
    # raw ranking is worse than filtered on a graph with several true tails per query
    raw = evaluate(emb4, open_graph(kg4), "test", filtered=False)
    assert raw["mrr"] < mrr4


@pytest.mark.device
def test_swapping_buffer_order_trains_as_well(kg4, small, tmp_path):
    mrr, _emb = _mrr(kg4, tmp_path / "b", small, "bucket_order=\"buffer\"",
                    "buffer_partitions=2", epochs=15)
    meta = json.loads((tmp_path / "b" / "checkpoint.json").read_text())
    stats = meta["stats"]
    assert len(stats) == 15 and all(s["swaps"] > 0 for s in stats)
    assert all(s["bytes_written"] > 0 and s["bytes_read"] > 0 for s in stats)
    assert mrr > 0.8
    # only the committed version is left on disk
    versions = {p.name.split(".v")[1] for p in (tmp_path / "b" / "embeddings").rglob("*.npy")}
    assert versions == {f"{15:06d}.npy"}


@pytest.mark.device
def test_hogwild_workers_and_degree_negatives(kg1, small, device, tmp_path):
    workers = 2 if device == "cpu" else 1   # the device loop refuses workers > 1
    mrr, _ = _mrr(kg1, tmp_path / "w", small, f"workers={workers}",
                  "degree_neg_fraction=0.5", epochs=15)
    assert mrr > 0.8


def test_workers_on_the_device_loop_are_refused(kg1, small, tmp_path, monkeypatch):
    # the device loop trains one stream of batches: workers=4 on a GPU was unused in silence
    from graphsys.embed.trainer import Trainer
    monkeypatch.setattr(Trainer, "resident", True)
    with pytest.raises(ConfigError, match="^workers: 4 HOGWILD threads train on the CPU; the "
                                          "cpu loop trains one stream"):
        Trainer(load_config(None, small + ["workers=4"]), open_graph(kg1), tmp_path / "w")


@pytest.mark.device
def test_memory_budget_too_small_is_an_error(kg4, small, tmp_path):
    cfg = load_config(None, small + ["memory_budget=100"])
    with pytest.raises(GraphsysError, match="^memory_budget"):
        train(kg4, cfg, out=tmp_path / "m")


def test_buffer_partitions_never_exceed_the_memory_budget(kg4, small, tmp_path):
    # with both keys, buffer_partitions won and the budget was ignored: 4 resident
    # partitions where the budget holds 2
    from graphsys.embed.trainer import Trainer
    per = 55 * (32 + 1) * 4          # the largest partition of kg4, d = 32, row Adagrad
    cfg = load_config(None, small + [f"memory_budget={2 * per + 10}", "buffer_partitions=4"])
    assert Trainer(cfg, open_graph(kg4), tmp_path / "b").capacity == 2
    cfg = load_config(None, small + ["memory_budget=\"1GB\"", "buffer_partitions=3"])
    assert Trainer(cfg, open_graph(kg4), tmp_path / "c").capacity == 3


def test_the_default_buffer_holds_what_the_available_ram_does(kg4, small, tmp_path,
                                                              monkeypatch):
    # without memory_budget every partition stayed resident whatever the RAM available,
    # which was checked for a bucket's 2 only: 4 held where 3 fit
    from graphsys import memory
    from graphsys.embed.trainer import Trainer
    per = 55 * (32 + 1) * 4          # the largest partition of kg4, d = 32, row Adagrad
    cfg = load_config(None, small)
    graph = open_graph(kg4)
    negs = 0 if cfg.all_negs else 8 * cfg.num_uniform_negs * (
        cfg.dimension + min(cfg.batch_size, graph.num_edges()))
    monkeypatch.setattr(memory, "available_memory", lambda: negs + 3 * per + 10)
    assert Trainer(cfg, graph, tmp_path / "a").capacity == 3
    monkeypatch.setattr(memory, "available_memory", lambda: 1 << 30)
    assert Trainer(cfg, graph, tmp_path / "b").capacity == 4


def test_a_buffer_of_one_partition_is_refused_as_the_budget_of_one_is(kg1, kg4, small,
                                                                    tmp_path):
    # buffer_partitions=1 with 4 partitions was raised to 2 in silence, while a
    # memory_budget holding one partition is refused
    from graphsys.embed.trainer import Trainer
    cfg = load_config(None, small + ["buffer_partitions=1"])
    with pytest.raises(ConfigError, match="^buffer_partitions: 1 cannot hold a bucket's 2"):
        Trainer(cfg, open_graph(kg4), tmp_path / "b")
    assert Trainer(cfg, open_graph(kg1), tmp_path / "c").capacity == 1   # one partition


def test_cuda_without_gpu_is_a_clear_error(kg1, small, tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(GraphsysError, match="no CUDA device is available"):
        train(kg1, load_config(None, small + ["device=\"cuda\""]), out=tmp_path / "g")


@pytest.mark.device
def test_changed_config_refuses_to_resume(kg1, small, tmp_path):
    train(kg1, load_config(None, small + ["num_epochs=1"]), out=tmp_path / "c")
    with pytest.raises(GraphsysError, match="operator"):  # lr may change (see
        train(kg1, load_config(None, small + ["num_epochs=2", "operator=\"diagonal\""]),
              out=tmp_path / "c")  # test_resume_tuning.py), the model may not


def test_a_model_larger_than_memory_is_refused_before_any_allocation(kg1, tmp_path):
    # dimension or num_uniform_negs 10**12 raised the allocator's raw RuntimeError
    # ("can't allocate memory: you tried to allocate 12000000000000 bytes")
    for key in ("dimension", "num_uniform_negs"):
        with pytest.raises(ConfigError, match="^dimension: .* needs about .* of available RAM"):
            train(kg1, {"dimension": 4, key: 10 ** 12}, out=tmp_path / key)
        assert not (tmp_path / key).exists()
    # a batch larger than the edge set is not counted as such: it trains
    train(kg1, {"dimension": 4, "batch_size": 10 ** 15}, out=tmp_path / "b")


_CHILD = """
import os, sys, torch
torch.set_num_threads(int(os.environ.get("GRAPHSYS_TEST_THREADS", "1")))
from graphsys.embed import load_config, train
cfg = load_config(None, sys.argv[3:])
train(sys.argv[1], cfg, edges="train", out=sys.argv[2])
"""


def _arrays(path):
    """Every tensor of a checkpoint keyed by its name without the version (one version is
    left on disk)."""
    out, versions = {}, set()
    for sub in ("embeddings", "optim", "model"):
        for p in sorted((path / sub).rglob("*.npy")):
            name, version = str(p.relative_to(path)).split(".v")
            out[name] = np.load(p, allow_pickle=False)
            versions.add(version)
    assert len(versions) == 1, versions
    return out


@pytest.mark.parametrize("per_bucket", [False, True], ids=["epoch", "bucket"])
def test_resume_after_kill_is_bit_for_bit(kg4, small, tmp_path, per_bucket):
    """Killed after an epoch (or, with checkpoint_buckets, inside one), the resumed run
    (without per-bucket commits, a resumable key) ends with the tensors of an uninterrupted
    run."""
    epochs = 8
    args = small + [f"num_epochs={epochs}", "buffer_partitions=2", "bucket_order=\"buffer\"",
                    "seed=7"]
    result = train(kg4, load_config(None, args), out=tmp_path / "ref")
    assert isinstance(result, EmbedResult) and result.checkpoint == tmp_path / "ref"
    ref = result.embeddings
    assert isinstance(ref, Embeddings) and result.embeddings is ref  # loaded once
    out = tmp_path / "killed"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    child = args + ["checkpoint_buckets=true"] if per_bucket else args
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(kg4), str(out), *child], env=env)
    meta = out / "checkpoint.json"
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        try:
            m = json.loads(meta.read_text())
        except (OSError, ValueError):
            m = {}
        if m.get("epochs_done", 0) >= 1 and bool(m.get("progress")) == per_bucket:
            break
        time.sleep(0.005)
    assert proc.poll() is None, "the child finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    m = json.loads(meta.read_text())
    assert 1 <= m["epochs_done"] < epochs
    if per_bucket:
        assert m["progress"]["buckets_done"], "killed at an epoch boundary"
        assert m["version"] > m["epochs_done"]  # one commit per bucket
    resumed = train(kg4, load_config(None, args), out=out).embeddings
    assert resumed.meta["epochs_done"] == epochs and "progress" not in resumed.meta
    stats = resumed.meta["stats"]
    assert [s["edges"] for s in stats] == [s["edges"] for s in ref.meta["stats"]]
    a, b = _arrays(tmp_path / "ref"), _arrays(out)
    assert a.keys() == b.keys() and a
    for k in a:
        assert np.array_equal(a[k], b[k]), k


@pytest.mark.device
@pytest.mark.parametrize("per_bucket", [False, True], ids=["epoch", "bucket"])
def test_stopped_and_resumed_run_ends_as_an_uninterrupted_one(kg4, small, tmp_path, per_bucket,
                                                             deterministic):
    """In process, on the test device: a run stopped after 2 of 4 epochs (or, with
    checkpoint_buckets, inside epoch 3) and resumed ends with the tensors of an
    uninterrupted run, bit for bit (deterministic kernels on CUDA)."""
    from graphsys.embed.trainer import Trainer

    args = small + ["buffer_partitions=2", "bucket_order=\"buffer\"", "seed=7", "num_epochs=4"]
    calls = [0]

    def count() -> None:
        calls[0] += 1

    Trainer(load_config(None, args), open_graph(kg4), tmp_path / "ref", on_batch=count).run()
    batches, calls[0] = calls[0] // 4, 0  # per epoch
    out = tmp_path / "resumed"
    if per_bucket:
        cfg = load_config(None, args + ["checkpoint_buckets=true"])

        class Stop(Exception):
            pass

        def stop_in_epoch_three() -> None:
            calls[0] += 1
            if calls[0] > 2 * batches + batches // 2:
                raise Stop

        with pytest.raises(Stop):
            Trainer(cfg, open_graph(kg4), out, on_batch=stop_in_epoch_three).run()
        meta = json.loads((out / "checkpoint.json").read_text())
        assert meta["epochs_done"] == 2 and meta["progress"]["buckets_done"]
    else:
        train(kg4, load_config(None, args[:-1] + ["num_epochs=2"]), out=out)
    resumed = train(kg4, load_config(None, args), out=out).embeddings
    assert resumed.meta["epochs_done"] == 4 and "progress" not in resumed.meta
    a, b = _arrays(tmp_path / "ref"), _arrays(out)
    assert a.keys() == b.keys() and a
    for k in a:
        assert np.array_equal(a[k], b[k]), k


#: A run that SIGKILLs itself on the ``n``-th call of ``Class.method`` (argv[3], argv[4]).
_KILLED_AT = """
import os, signal, sys, torch
torch.set_num_threads(1)
from graphsys.embed import load_config, train
from graphsys.embed.buffer import PartitionBuffer
from graphsys.embed.checkpoint_files import CheckpointStorage
from graphsys.embed.trainer import Trainer
cls, name = sys.argv[3].split(".")
cls, calls = {c.__name__: c for c in (PartitionBuffer, CheckpointStorage, Trainer)}[cls], [0]
method = getattr(cls, name)
def killer(*args, **kwargs):
    calls[0] += 1
    if calls[0] == int(sys.argv[4]):
        os.kill(os.getpid(), signal.SIGKILL)
    return method(*args, **kwargs)
setattr(cls, name, killer)
train(sys.argv[1], load_config(None, sys.argv[5:]), edges="train", out=sys.argv[2])
"""
_KILL_EPOCHS = 3
_KILL_ARGS = ["buffer_partitions=2", "bucket_order=\"buffer\"", "seed=11",
              f"num_epochs={_KILL_EPOCHS}"]


@pytest.fixture(scope="module")
def kill_reference(kg4, tmp_path_factory):
    """Tensors of the uninterrupted run that the runs killed at chosen points resume to."""
    from .conftest import SMALL

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        out = tmp_path_factory.mktemp("kill") / "ref"
        train(kg4, load_config(None, SMALL + _KILL_ARGS), out=out)
    finally:
        torch.set_num_threads(old)
    return _arrays(out)


@pytest.mark.parametrize("where,n,per_bucket,committed", [
    ("Trainer._train_bucket", 3, False, (0, 0)),  # inside epoch 1: resumes from the init
    ("Trainer._train_bucket", 18, False, (1, 1)),  # epoch 2, after a commit: reloads all
    ("CheckpointStorage.write_meta", 2, False, (0, 0)),  # v1 complete, no checkpoint.json
    ("CheckpointStorage.drop_versions", 1, False, (1, 1)),  # v1 committed, v0 still there
    ("PartitionBuffer._write", 4, True, None),  # writing a partition back mid-epoch
    ("PartitionBuffer.commit_files", 3, True, (2, 0)),  # inside the third bucket commit
], ids=["bucket", "next-epoch", "before-meta", "before-drop", "write-back", "bucket-commit"])
def test_killed_at_chosen_points_resumes_bit_for_bit(kg4, small, tmp_path, kill_reference,
                                                     where, n, per_bucket, committed):
    """A run killed at a chosen point (in training, in a write-back, between a version's
    files and its ``checkpoint.json``, between that and the deletion of the older version)
    resumes from its last commit to the tensors of the uninterrupted run. Killed in epoch 2,
    the process compiles the numba kernels into a cache of its own, while the resuming one
    (this one) has them already: both round alike."""
    out = tmp_path / "killed"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if n == 18:
        env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba")
    args = small + _KILL_ARGS
    child = args + ["checkpoint_buckets=true"] if per_bucket else args
    proc = subprocess.run([sys.executable, "-c", _KILLED_AT, str(kg4), str(out), where, str(n),
                           *child], env=env, timeout=600)
    assert proc.returncode == -signal.SIGKILL, "the run was not killed where chosen"
    m = json.loads((out / "checkpoint.json").read_text())
    if committed is not None:
        assert (m["version"], m["epochs_done"]) == committed
    resumed = train(kg4, load_config(None, args), out=out).embeddings
    assert resumed.meta["epochs_done"] == _KILL_EPOCHS and "progress" not in resumed.meta
    b = _arrays(out)
    assert b.keys() == kill_reference.keys() and b
    for k in b:
        assert np.array_equal(kill_reference[k], b[k]), k


def test_same_seed_in_fresh_processes_is_bit_for_bit(kg1, tmp_path):
    """Two processes with the same seed, 2 intra-op threads each, write identical tensors.

    The relation gradients here have 500 x 128 >= 32768 elements (one partition: whole
    batches), the size from which the
    backward of ``param[idx]`` (a CPU ``index_put_(accumulate=True)``) adds with atomic float
    adds from several threads, in an order that differs between runs; the operators'
    :func:`~graphsys.embed.model.gather` (``index_select``) accumulates in index order."""
    args = ["dimension=128", "operator=\"diagonal\"", "comparator=\"dot\"",
            "loss_fn=\"softmax\"", "lr=0.1", "batch_size=500", "num_uniform_negs=50",
            "num_batch_negs=10", "num_epochs=2", "seed=5"]
    env = dict(os.environ, GRAPHSYS_TEST_THREADS="2", OMP_NUM_THREADS="2")
    outs = [tmp_path / "a", tmp_path / "b"]
    for out in outs:
        subprocess.run([sys.executable, "-c", _CHILD, str(kg1), str(out), *args], env=env,
                       check=True, timeout=300)
    a, b = _arrays(outs[0]), _arrays(outs[1])
    assert a.keys() == b.keys() and any(k.startswith("model/") for k in a)
    for k in a:
        assert np.array_equal(a[k], b[k]), k


def test_checkpoint_buckets_must_be_a_boolean(small):
    with pytest.raises(ConfigError, match="^checkpoint_buckets: must be true or false"):
        load_config(None, small + ["checkpoint_buckets=1"])


@pytest.mark.device
def test_prefetch_loads_in_the_background_and_changes_nothing(kg4, small, tmp_path,
                                                               monkeypatch, deterministic):
    """With 3 of 4 partitions resident, the next bucket's loads run on the prefetch thread
    while the current bucket trains (the plan keeps one slot free for them: more loads than
    without prefetch, never more than 3 resident); the tensors are those of a run without
    prefetch."""
    import threading

    from graphsys.embed.buffer import PartitionBuffer

    threads: list[str] = []
    most = [0]

    def spy(self, evict, load):
        threads.append(threading.current_thread().name)
        for p in evict:
            self.evict(p)
        for p in load:
            self.load(p)
            most[0] = max(most[0], len(self.resident))

    monkeypatch.setattr(PartitionBuffer, "execute", spy)
    args = small + ["num_epochs=3", "buffer_partitions=3", "bucket_order=\"inside_out\"",
                    "seed=2"]
    on = train(kg4, load_config(None, args), out=tmp_path / "on").embeddings
    assert any(t.startswith("graphsys-prefetch") for t in threads), threads
    assert sum(s["swaps"] for s in on.meta["stats"]) > 0
    threads.clear()
    off = train(kg4, load_config(None, args + ["prefetch=false"]),
                out=tmp_path / "off").embeddings
    assert threads and not any(t.startswith("graphsys-prefetch") for t in threads)
    assert most[0] == 3
    loads_on = [s["loads"] for s in on.meta["stats"]]
    assert all(a >= b for a, b in zip(loads_on, [s["loads"] for s in off.meta["stats"]]))
    a, b = _arrays(tmp_path / "on"), _arrays(tmp_path / "off")
    assert a.keys() == b.keys() and a
    for k in a:
        assert np.array_equal(a[k], b[k]), k


@pytest.mark.device
def test_on_batch_hook_sees_every_batch_and_can_stop_the_run(kg1, small, tmp_path):
    """The trainer's public per-batch hook (what ``graphsys profile`` bounds an epoch with):
    called once per batch of ``batch_size`` edges; raising from it fails the run, which
    keeps only its committed version."""
    from graphsys.embed.checkpoint import CheckpointStorage
    from graphsys.embed.trainer import Trainer

    g = open_graph(kg1)
    calls: list[int] = []
    cfg = load_config(None, small + ["num_epochs=1"])
    Trainer(cfg, g, tmp_path / "a", on_batch=lambda: calls.append(1)).run()
    assert len(calls) == -(-g.num_edges("train") // cfg.batch_size)  # one bucket (P = 1)

    class Stop(Exception):
        pass

    def stop_after_three() -> None:
        calls.append(1)
        if len(calls) > 3:
            raise Stop

    calls.clear()
    with pytest.raises(Stop):
        Trainer(cfg, g, tmp_path / "b", on_batch=stop_after_three).run()
    st = CheckpointStorage(tmp_path / "b")
    assert st.read_meta()["version"] == 0 and {v for _, v in st.versioned_files()} == {0}


def test_graph_comes_first_as_in_gnn_train(kg1, small, tmp_path):
    """train(graph, config) as graphsys.gnn.train(graph, config); graph None is the
    config's graph; a config where the graph goes is a one-line ParameterError."""
    from graphsys.errors import ParameterError

    cfg = load_config(None, small + ["num_epochs=1", "dimension=8"])
    for wrong in (cfg, {"dimension": 8}, tmp_path / "c.toml"):
        with pytest.raises(ParameterError, match=r"^graph got a config .*the graph comes "
                                                 r"first: train\(graph, config\)"):
            train(wrong, out=tmp_path / "x")
    cfg.graph = str(kg1)
    from_config = train(None, cfg, out=tmp_path / "a").embeddings
    given = train(kg1, load_config(None, small + ["num_epochs=1", "dimension=8"]),
                  out=tmp_path / "b").embeddings
    np.testing.assert_array_equal(from_config.to_numpy(), given.to_numpy())


def test_missing_graph_or_out_name_the_parameter_and_the_flag(kg1, small, tmp_path, capsys):
    """graphsys.embed.train is the one training path: the library names the parameter,
    the CLI its flag."""
    from graphsys.cli import main
    from graphsys.errors import ParameterError

    cfg = load_config(None, small)
    with pytest.raises(ParameterError, match="^graph not given, and the config has no graph"):
        train(None, cfg, out=tmp_path / "a")
    with pytest.raises(ParameterError, match="^out not given, and the config has no "
                                             "checkpoint_path"):
        train(kg1, cfg)
    assert main(["embed", "train", "--out", str(tmp_path / "b"), "--set", "dimension=8"]) == 2
    assert "error: --graph not given, and the config has no graph" in capsys.readouterr().err
    assert main(["embed", "train", "--graph", str(kg1), "--set", "dimension=8"]) == 2
    assert "error: --out not given" in capsys.readouterr().err
    assert main(["embed", "train", "--graph", str(kg1), "--set", "lr"]) == 2
    assert "error: --set 'lr': expected key=value" in capsys.readouterr().err


ONE_VS_ALL_N3 = ["all_negs=true", "regularization_coef=0.01", "num_uniform_negs=0",
                 "num_batch_negs=0"]


def _hits4(emb, graph, side):
    """Raw Hits@4 of one direction on the test triples (the planted KG has 4 true answers
    per query): ``rhs`` ranks tails of ``(h, r, ?)``, ``lhs`` tails of ``(t, r^-1, ?)``."""
    test = triples(graph, "test")
    anchor, answer = (test.h, test.t) if side == "rhs" else (test.t, test.h)
    E = torch.from_numpy(emb.to_numpy())
    with torch.no_grad():
        q = emb.relmodel.apply(side, E[anchor], torch.from_numpy(test.r))
    s = q @ E.T
    true = s[torch.arange(len(answer)), torch.from_numpy(answer)]
    return float(((s > true[:, None]).sum(1) < 4).double().mean())


@pytest.mark.device
def test_reciprocal_relations_train_both_directions(kg1, small, tmp_path):
    """Each edge (h, r, t) also trains (t, r^-1, h): r^-1 is the lhs operator, trained, not
    tied to r, and head prediction is tail prediction with it."""
    _, emb = _mrr(kg1, tmp_path / "ck", small, *ONE_VS_ALL_N3, epochs=20)
    graph = open_graph(kg1)
    lhs, rhs = (emb.relmodel.params[s][0] for s in ("lhs", "rhs"))
    for side in (lhs, rhs):  # both moved from the (1, 0) init
        assert float((side["real"] - 1).abs().mean()) > 0.05
        assert float(side["imag"].abs().mean()) > 0.05
    assert float((lhs["imag"] - rhs["imag"]).abs().mean()) > 0.05
    assert _hits4(emb, graph, "rhs") > 0.9 and _hits4(emb, graph, "lhs") > 0.9
    for k, v in lhs.items():  # r^-1 back at its init: head prediction is lost
        v.copy_(torch.ones_like(v) if k == "real" else torch.zeros_like(v))
    assert _hits4(emb, graph, "lhs") < 0.5


@pytest.mark.device
def test_one_vs_all_n3_same_seed_same_result(kg1, small, tmp_path, deterministic):
    for name in ("a", "b"):
        train(kg1, load_config(None, small + ONE_VS_ALL_N3 + ["num_epochs=2", "seed=3"]),
              edges="train", out=tmp_path / name)
    a, b = _arrays(tmp_path / "a"), _arrays(tmp_path / "b")
    assert a.keys() == b.keys() and a
    for k in a:
        assert np.array_equal(a[k], b[k]), k


def _relation_cross_entropy(emb, graph):
    """Mean cross-entropy of relation prediction on the test triples, both directions."""
    test = triples(graph, "test")
    E = torch.from_numpy(emb.to_numpy())
    h, r, t = (torch.from_numpy(a) for a in (test.h, test.r, test.t))
    with torch.no_grad():
        logits = emb.relmodel.relation_logits(torch.cat([E[h], E[t]]), torch.cat([E[t], E[h]]))
    target = torch.cat([r, r + len(emb.relmodel.operators)])
    return float(torch.nn.functional.cross_entropy(logits, target))


@pytest.mark.device
@pytest.mark.parametrize("negatives", [[], ONE_VS_ALL_N3], ids=["sampled", "1-vs-all+N3"])
def test_relation_prediction_learns_relations(kg1, small, tmp_path, negatives, device):
    """``relation_prediction_weight`` trains the relation of each test triple to be
    predictable from its two entities, without costing link prediction. The planted KG's
    relation is a function of the two clusters, so a model trained without it predicts
    relations too (cross-entropy 0.05-0.10); with it the cross-entropy is 2-10x lower."""
    if device == "lazy":  # the same torch path passes on the CPU (the numba kernels off)
        pytest.skip("torch's lazy backend mistypes a float32 gradient copy as float64")
    mrr_on, on = _mrr(kg1, tmp_path / "on", small, *negatives, "relation_prediction_weight=1",
                      epochs=10)
    _, off = _mrr(kg1, tmp_path / "off", small, *negatives, epochs=10)
    graph = open_graph(kg1)
    assert mrr_on > 0.85
    ce_on, ce_off = _relation_cross_entropy(on, graph), _relation_cross_entropy(off, graph)
    assert ce_on < 0.6 * ce_off, (ce_on, ce_off)


@pytest.mark.device
def test_element_adagrad_trains_resumes_and_checks_its_state(kg1, small, tmp_path):
    """``embedding_adagrad = "element"``: (n, d) state files, a planted KG learned, resume
    continues, a resume with row-wise state is refused, and a state file of the wrong shape
    is one error naming it (the kernel indexes rows without bounds checks)."""
    out = tmp_path / "e"
    mrr, _ = _mrr(kg1, out, small, 'embedding_adagrad="element"', epochs=15)
    assert mrr > 0.85
    d = load_config(None, small).dimension
    (state,) = (out / "optim").rglob("*.npy")
    assert np.load(state).shape[1:] == (d,)
    cfg = load_config(None, small + ['embedding_adagrad="element"', "num_epochs=16"])
    train(kg1, cfg, edges="train", out=out)
    with pytest.raises(GraphsysError, match="embedding_adagrad"):
        train(kg1, load_config(None, small + ["num_epochs=17"]), edges="train", out=out)
    (state,) = (out / "optim").rglob("*.npy")
    np.save(state, np.zeros((3, d), np.float32))  # and its checksum forged to match
    meta = json.loads((out / "checkpoint.json").read_text())
    meta["files"][state.relative_to(out).as_posix()] = hashlib.sha256(
        state.read_bytes()).hexdigest()
    (out / "checkpoint.json").write_text(json.dumps(meta))
    cfg = load_config(None, small + ['embedding_adagrad="element"', "num_epochs=17"])
    with pytest.raises(GraphsysError, match=rf"{state.name}: float32 \(3, {d}\), expected"):
        train(kg1, cfg, edges="train", out=out)


def test_train_edges_leave_the_callers_config_unchanged(kg1, tmp_path):
    # train(g, cfg, edges="test") set cfg.edges = "test" on the caller's object, so a later
    # train(g, cfg) trained on the test edges instead of the default train set
    cfg = load_config(None, ["dimension=8", "batch_size=500"])
    train(kg1, cfg, edges="test", out=tmp_path / "a")
    assert cfg.edges is None
    res = train(kg1, cfg, out=tmp_path / "b")
    assert res.embeddings.meta["edges"] == "train"
