"""Fuzzing checkpoint, run and embedding directories as ``test_fuzz.py`` fuzzes graphs:
hostile files (a FIFO, a symlink to ``/dev/zero``, out of the directory or inside it, a
directory, a truncated or extended file, metadata with another shape or dtype), writers
killed with SIGKILL mid-save, and two writers at once.

Every case ends in success with a checked answer (the untouched directory's) or in a
one-line :class:`~graphsys.errors.GraphsysError`; nothing blocks (an alarm fails a read that
would wait on a FIFO), nothing outside the directory is read, and a killed or refused
writer leaves the directory whole. Example counts follow ``GRAPHSYS_FUZZ_EXAMPLES``."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphsys.embed import Embeddings, load_config
from graphsys.embed import train as embed_train
from graphsys.errors import GraphsysError
from graphsys.gnn import TrainConfig, embed_checkpoint, propagate, sign_features
from graphsys.gnn import train as gnn_train
from graphsys.gnn.checkpoint import load_checkpoint
from graphsys.storage import file_rules
from graphsys.storage.graph import open_graph
from graphsys.storage.ingest import EdgeSource, IngestOptions, NodeSource, ingest_sources

from .conftest import FUZZ, TALLY

GNN_CFG = dict(model="sage", fanouts=[3], hidden=4, epochs=2, seed=0)
EMB_CFG = ["dimension=4", "num_epochs=1", "batch_size=50", "num_uniform_negs=5",
           "num_batch_negs=5"]


def outcome(test: str, call) -> object:
    """Run ``call`` under an alarm: its result, or None after a one-line GraphsysError."""
    def stuck(*_):
        raise AssertionError(f"{test}: blocked (a FIFO or device read?)")

    old = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(30)
    try:
        result = call()
    except GraphsysError as exc:
        message = str(exc)
        assert message and "\n" not in message, f"multi-line error: {message!r}"
        TALLY[(test, type(exc).__name__)] += 1
        return None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    TALLY[(test, "ok")] += 1
    return result


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    """A small labelled graph and one directory of each kind: a GNN run (checkpoint, last
    state, run.json), an embedding checkpoint, a GNN embedding directory and propagated
    features."""
    root = tmp_path_factory.mktemp("fuzzdirs")
    rng = np.random.default_rng(0)
    n = 60
    edges = rng.integers(0, n, (300, 2))
    (root / "e.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in edges))
    nodes = pa.table({"id": pa.array(np.arange(n)),
                      "feat": pa.FixedSizeListArray.from_arrays(
                          pa.array(rng.normal(size=n * 4).astype(np.float32)), 4),
                      "label": pa.array(np.arange(n) % 3)})
    ingest_sources([EdgeSource([root / "e.tsv"])], root / "g", IngestOptions(partitions=2),
           nodes=[NodeSource(nodes)])
    g = open_graph(root / "g")
    gnn_train(g, TrainConfig(**GNN_CFG), out=root / "run")
    embed_train(g, load_config(None, EMB_CFG), out=root / "emb")
    embed_checkpoint(root / "run" / "checkpoint", root / "arrow")
    propagate(g, root / "prop", hops=2)
    return root


def _gnn_answer(run: Path):
    """Every file of a run directory a reader reads: the best and the last model, run.json."""
    best, last = load_checkpoint(run / "checkpoint"), load_checkpoint(run / "last")
    record = file_rules.read_json(run, "run.json")
    return ({k: v.numpy().tolist() for k, v in best[0].items()},
            {k: v.numpy().tolist() for k, v in last[0].items()}, record)


READERS = {
    "run": (lambda d, g: _gnn_answer(d)),
    "emb": (lambda d, g: Embeddings.load(d, graph=g).to_numpy().tolist()),
    "arrow": (lambda d, g: Embeddings.load(d, graph=g).to_numpy().tolist()),
    "prop": (lambda d, g: sign_features(d).tolist()),
}


def _files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.is_file() and not p.is_symlink()
                  and p.name != "metrics.jsonl")      # metrics.jsonl is written, not read


def _hostile(d: Path, target: Path, how: str, data) -> bool:
    """Make ``target`` (a file of the directory ``d``) hostile in the way ``how``; True
    when a reader must refuse it (a JSON file cut or extended may still read the same)."""
    raw = target.read_bytes()
    outside = d.parent / "outside"
    if how == "fifo":
        target.unlink()
        os.mkfifo(target)
    elif how == "dev-zero":
        target.unlink()
        os.symlink("/dev/zero", target)
    elif how == "symlink-out":            # a byte-identical copy, but outside: refused
        outside.write_bytes(raw)
        target.unlink()
        os.symlink(outside, target)
    elif how == "symlink-in":             # a copy inside the directory: read as the file
        twin = target.with_name(target.name + ".twin")
        twin.write_bytes(raw)
        target.unlink()
        os.symlink(twin.name, target)
        return False
    elif how == "directory":
        target.unlink()
        target.mkdir()
    elif how == "truncate":
        target.write_bytes(raw[:data.draw(st.integers(0, max(len(raw) - 1, 0)))])
    elif how == "extend":
        target.write_bytes(raw + data.draw(st.binary(min_size=1, max_size=64)))
    return True


@FUZZ
@given(data=st.data(), kind=st.sampled_from(sorted(READERS)),
       how=st.sampled_from(["fifo", "dev-zero", "symlink-out", "symlink-in", "directory",
                            "truncate", "extend"]))
def test_hostile_files_are_refused_in_one_line_and_never_block(dirs, data, kind, how):
    g = open_graph(dirs / "g")
    read = READERS[kind]
    want = read(dirs / kind, g)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(shutil.copytree(dirs / kind, Path(tmp) / "work" / kind, symlinks=True))
        target = data.draw(st.sampled_from(_files(d)), label="file")
        refuse = _hostile(d, target, how, data)
        got = outcome(f"hostile:{kind}:{how}", lambda: read(d, g))
        # JSON metadata carries no checksum: trailing white space added or cut reads the same
        lenient = target.suffix == ".json" and how in ("truncate", "extend")
        if refuse and not (lenient and got == want):
            assert got is None, f"{kind}: a {how} {target.relative_to(d)} was accepted"
        else:
            assert got == want
        if kind == "run":                   # its other readers, on the same directory
            outcome(f"hostile:{kind}:{how}:embed",
                    lambda: embed_checkpoint(d / "checkpoint", Path(tmp) / "out"))
        if kind in ("emb", "arrow"):
            def nearest():
                emb = Embeddings.load(d, graph=g)
                return emb.nearest(int(emb.original([0])[0]), k=3)
            outcome(f"hostile:{kind}:{how}:nearest", nearest)


def _resave(path: Path, arr: np.ndarray) -> str:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    path.write_bytes(buf.getvalue())
    return hashlib.sha256(buf.getvalue()).hexdigest()


@FUZZ
@given(data=st.data(), change=st.sampled_from(["shape", "dtype", "both", "header"]))
def test_metadata_of_another_shape_or_dtype_is_refused(dirs, data, change):
    """``model.json`` rewritten to match a tensor file of another shape or dtype (sha256
    included), or a tensor whose header disagrees with model.json: refused in one line by
    every reader, never a torch traceback."""
    g = open_graph(dirs / "g")
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(shutil.copytree(dirs / "run", Path(tmp) / "run"))
        ck = run / data.draw(st.sampled_from(["checkpoint", "last"]), label="which")
        header = json.loads((ck / "model.json").read_text())
        name = data.draw(st.sampled_from(sorted(header["tensors"])), label="tensor")
        entry = header["tensors"][name]
        arr = np.load(ck / entry["file"])
        if change in ("shape", "both"):
            arr = np.resize(arr, (arr.shape[0] + 1,) + arr.shape[1:]) if arr.ndim \
                else np.zeros(2, arr.dtype)
        if change in ("dtype", "both"):
            arr = arr.astype(np.float64 if arr.dtype != np.float64 else np.float32)
        if change == "header":       # the file changed, model.json did not: sizes disagree
            _resave(ck / entry["file"], np.resize(arr, (arr.size + 3,)))
        else:
            entry.update(shape=list(arr.shape), dtype=str(arr.dtype),
                         sha256=_resave(ck / entry["file"], arr))
            (ck / "model.json").write_text(json.dumps(header))
        got = outcome(f"meta:{change}:load", lambda: load_checkpoint(ck))
        if change == "header":
            assert got is None
        outcome(f"meta:{change}:embed",
                lambda: embed_checkpoint(run / "checkpoint", Path(tmp) / "out"))
        outcome(f"meta:{change}:resume",
                lambda: gnn_train(g, TrainConfig(**{**GNN_CFG, "epochs": 3}), out=run))


# -- writers killed mid-save -------------------------------------------------------------------

_SAVER = """
import sys, torch
from graphsys.gnn.checkpoint import save_checkpoint
cfg = {"model": "sage", "in_dim": 4, "hidden_dim": 8, "out_dim": 2, "num_layers": 2,
       "dropout": 0.5, "heads": 8}
print("ready", flush=True)
for k in range(1, 10**6):
    save_checkpoint(sys.argv[1], {f"t{i}": torch.full((64, 64), float(k)) for i in range(8)},
                    cfg, {"save": k})
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def test_a_checkpoint_writer_killed_mid_save_leaves_one_whole_save(tmp_path):
    """kill -9 a process saving a GNN checkpoint over and over, at several moments: the
    checkpoint is always one whole save (every tensor from the same one), and the next save
    clears the torn version."""
    ck = tmp_path / "ck"
    proc = subprocess.Popen([sys.executable, "-c", _SAVER, str(ck)], env=_env(),
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    seen = []
    try:
        for delay in (0.05, 0.13, 0.21, 0.34):
            time.sleep(delay)
            os.kill(proc.pid, signal.SIGSTOP)            # a snapshot of a writer mid-way
            snap = Path(shutil.copytree(ck, tmp_path / f"snap{len(seen)}")) \
                if (ck / "model.json").exists() else None
            os.kill(proc.pid, signal.SIGCONT)
            if snap is not None:
                state, _, meta = load_checkpoint(snap)
                values = {float(t.flatten()[0]) for t in state.values()}
                assert values == {float(meta["save"])}
                seen.append(meta["save"])
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    state, _, meta = load_checkpoint(ck)                # after the kill: one whole save
    assert {float(t.flatten()[0]) for t in state.values()} == {float(meta["save"])}
    from graphsys.gnn.checkpoint import save_checkpoint
    save_checkpoint(ck, {"t0": state["t0"]}, load_checkpoint(ck)[1], {"save": 0})
    assert len(list(ck.glob("tensors.v*"))) == 1


_EMBED = """
import sys
from graphsys.embed import load_config, train
train(sys.argv[1], load_config(None, sys.argv[3:]), out=sys.argv[2])
print("done", flush=True)
"""


def test_an_embedding_run_killed_mid_epoch_resumes_to_the_uninterrupted_answer(dirs,
                                                                               tmp_path):
    """kill -9 an embedding run mid-way: the checkpoint loads (a committed version) or is
    refused in one line, never read half-written; resuming it ends where a run never
    killed ends, bit for bit (one worker)."""
    cfg = [*EMB_CFG[:1], "num_epochs=6", *EMB_CFG[2:], "checkpoint_buckets=true", "workers=1"]
    straight = embed_train(dirs / "g", load_config(None, cfg), out=tmp_path / "straight")
    want = straight.embeddings.to_numpy()
    ck = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-c", _EMBED, str(dirs / "g"), str(ck), *cfg],
                            env=_env(), stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (ck / "checkpoint.json").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)
    finally:
        proc.kill()
        proc.wait()
    g = open_graph(dirs / "g")
    loaded = outcome("killed:emb:load", lambda: Embeddings.load(ck, graph=g).to_numpy())
    if loaded is not None:
        assert np.isfinite(loaded).all()
    again = embed_train(dirs / "g", load_config(None, cfg), out=ck)
    np.testing.assert_array_equal(again.embeddings.to_numpy(), want)


# -- two writers at once ---------------------------------------------------------------------

def _two_at_once(argvs: list[list[str]]) -> list[tuple[int, str]]:
    """Start the commands together; ``(exit status, stderr)`` of each."""
    procs = [subprocess.Popen([sys.executable, "-m", "graphsys", *argv], env=_env(),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for argv in argvs]
    return [(p.wait(timeout=300), p.stderr.read()) for p in procs]


def test_two_gnn_runs_on_one_directory_leave_the_winners_run_whole(dirs, tmp_path):
    """Two ``gnn train --out RUN`` at once with other seeds: one ends 0, the other is
    refused in one line (the lock, or the other run's record); RUN holds the winner's run
    whole: its record, its checkpoints, and every epoch once in metrics.jsonl."""
    run = tmp_path / "run"
    results = _two_at_once([["gnn", "train", "--graph", str(dirs / "g"), "--fanouts", "3",
                             "--hidden", "4", "--epochs", "3", "--seed", str(seed), "--out",
                             str(run), "--quiet"] for seed in (1, 2)])
    ok = [k for k, (code, _) in enumerate(results) if code == 0]
    assert len(ok) == 1, results
    loser = results[1 - ok[0]][1].strip().splitlines()
    assert len(loser) == 1 and ("another writer holds" in loser[0]
                                or "holds another run" in loser[0]), loser
    seed = (1, 2)[ok[0]]
    assert json.loads((run / "run.json").read_text())["train_config"]["seed"] == seed
    for ck in ("checkpoint", "last"):
        assert load_checkpoint(run / ck)[2]["train_config"]["seed"] == seed
    epochs = [json.loads(x)["epoch"] for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert epochs == [1, 2, 3]
    assert not (run / ".lock").exists()


def _one_line_or_result(call):
    try:
        return call()
    except GraphsysError as exc:
        assert str(exc) and "\n" not in str(exc), str(exc)
        return None


def test_two_embedding_writers_at_once_leave_one_whole_directory(dirs, tmp_path):
    """Two ``embed train`` on one checkpoint directory (other seeds) and two ``gnn
    embed`` into one output directory, each pair at once (threads: the lock is per open
    file, so they exclude each other as processes do): one of each ends, the other is
    refused in one line, and the directory loads as the winner wrote it."""
    from concurrent.futures import ThreadPoolExecutor

    g = open_graph(dirs / "g")
    ck, out = tmp_path / "ck", tmp_path / "emb"
    pairs = ([lambda seed=seed: embed_train(g, load_config(None, [*EMB_CFG, f"seed={seed}"]),
                                            out=ck).embeddings.to_numpy()
              for seed in (1, 2)],
             [lambda: embed_checkpoint(dirs / "run" / "checkpoint", out)] * 2)
    for calls, directory in zip(pairs, (ck, out)):
        with ThreadPoolExecutor(2) as pool:
            results = outcome("concurrent:embed",
                              lambda calls=calls: list(pool.map(_one_line_or_result, calls)))
        assert sum(r is not None for r in results) == 1, results
        vectors = Embeddings.load(directory, graph=g).to_numpy()
        assert np.isfinite(vectors).all()
        if directory == ck:
            assert np.array_equal(vectors, next(r for r in results if r is not None))
        assert not (directory / ".lock").exists()
