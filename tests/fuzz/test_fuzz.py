"""Fuzzing (issue 13): random and mutated text inputs to ingest, random byte flips and
truncations of every file kind of a small graph and of both checkpoint kinds, run through
verify, open_graph, the BSP engine, GNN and embedding training and loading.

Every case must end in success with a checked answer, or in a one-line
:class:`~graphsys.errors.GraphsysError`: never a signal (it would kill pytest), a
traceback (any other exception fails the test) or a wrong answer reported as success."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphsys import bsp, open_graph
from graphsys.embed import Embeddings, load_config
from graphsys.embed import train as embed_train
from graphsys.errors import GraphsysError
from graphsys.gnn import TrainConfig
from graphsys.gnn import train as gnn_train
from graphsys.gnn.checkpoint import load_checkpoint
from graphsys.storage.adjacency_index import build_index
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources
from graphsys.storage.verify import verify_graph

from .conftest import FUZZ, TALLY


def outcome(test: str, call) -> object:
    """Run ``call``: its result, or None after a one-line GraphsysError (tallied)."""
    try:
        result = call()
    except GraphsysError as exc:
        message = str(exc)
        assert message and "\n" not in message, f"multi-line error: {message!r}"
        TALLY[(test, type(exc).__name__)] += 1
        return None
    TALLY[(test, "ok")] += 1
    return result


# -- text inputs to ingest ----------------------------------------------------------------------

TOKENS = st.one_of(st.integers(-5, 60).map(str), st.sampled_from(
    ["a", "b", "node_1", "01", "+3", "x y", "", "nan", "1.5", "src", "dst", "\x00", "é", '"q"',
     "9" * 25, "-0"]))
CLEAN = st.one_of(st.integers(-5, 60).map(str), st.sampled_from(
    ["a", "b", "node_1", "01", "+3", "-0", "é", "9" * 25, "x.y"]))
CLEAN_LINE = st.one_of(st.tuples(CLEAN, CLEAN).map("\t".join),
                       st.sampled_from(["# comment", "", "%x"]))
LINE = st.one_of(
    st.lists(TOKENS, min_size=1, max_size=4).map("\t".join),
    st.sampled_from(["# comment", "", "   ", "%x", "src\tdst"]),
    st.binary(max_size=12).map(lambda b: b.decode("latin-1")),
)


def _canonical(token: str) -> str:
    t = token[1:] if token.startswith("+") and token[1:2].isdigit() else token
    try:
        return str(int(t)) if len(t.lstrip("-").lstrip("0")) <= 18 else token
    except ValueError:
        return token


@FUZZ
@given(lines=st.one_of(st.lists(CLEAN_LINE, max_size=12), st.lists(LINE, max_size=12)),
       header=st.sampled_from([None, True, False]),
       partitions=st.integers(1, 3), trailing_newline=st.booleans())
def test_ingest_text(lines, header, partitions, trailing_newline):
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "in.tsv"
        f.write_bytes(("\n".join(lines) + ("\n" if trailing_newline else "")).encode(
            "utf-8", "surrogateescape"))
        out = Path(tmp) / "g"
        done = outcome("ingest_text", lambda: ingest_sources(
            [EdgeSource([f], header=header, delimiter="\t")], out,
            IngestOptions(partitions=partitions)))
        if done is None:
            assert not out.exists()  # nothing half-written
            return
        g = open_graph(out)
        verify_graph(out)
        # the answer: every data line is one edge between its first two fields
        text = f.read_bytes().decode("utf-8")
        rows = [x for x in text.split("\n") if x.strip() and x.strip()[0] not in "#%"]
        if header is True or (header is None and len(rows) >= 1 and rows[0] in (
                "src\tdst",) or header is None and _looks_like_header(rows)):
            rows = rows[1:]
        want = sorted((_canonical(r.split("\t")[0]), _canonical(r.split("\t")[1]))
                      for r in rows)
        ids = g.node_ids()
        ids = [str(x) for x in (ids.tolist() if isinstance(ids, np.ndarray) else
                                ids.to_pylist())]
        got = sorted((ids[s], ids[d]) for src, dst, _, _ in g.iter_edges()
                     for s, d in zip(src.tolist(), dst.tolist()))
        assert got == want


def _looks_like_header(rows: list[str]) -> bool:
    """The documented auto rule: every field of the first line non-numeric, every field of
    the second numeric (same count); or the names src and dst."""
    if not rows:
        return False
    first = rows[0].split("\t")
    if {"src", "dst"} <= {t.strip() for t in first}:
        return True
    if len(rows) < 2:
        return False
    second = rows[1].split("\t")

    def num(t):
        try:
            float(t)
            return True
        except ValueError:
            return False
    return len(first) == len(second) and not any(num(t) for t in first) and all(
        num(t) for t in second)


# -- mutated graph files ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small_graph(tmp_path_factory):
    """A 3-partition graph with weights, node features and labels, and CSR, CSC and push
    indexes (every file kind)."""
    import pyarrow as pa

    from graphsys.storage.ingest import NodeSource

    root = tmp_path_factory.mktemp("fuzzgraph")
    rng = np.random.default_rng(0)
    n = 60
    edges = rng.integers(0, n, (400, 2))
    (root / "e.tsv").write_text("".join(f"{a}\t{b}\t{rng.random():.3f}\n" for a, b in edges))
    nodes = pa.table({"id": pa.array(np.arange(n)),
                      "feat": pa.FixedSizeListArray.from_arrays(
                          pa.array(rng.normal(size=n * 4).astype(np.float32)), 4),
                      "label": pa.array(np.arange(n) % 3),
                      "train_mask": pa.array(np.arange(n) % 2 == 0),
                      "val_mask": pa.array(np.arange(n) % 4 == 1),
                      "test_mask": pa.array(np.arange(n) % 4 == 3)})
    ingest_sources([EdgeSource([root / "e.tsv"], weight_col=2)], root / "g",
                   IngestOptions(partitions=3), nodes=[NodeSource(nodes)])
    build_index(open_graph(root / "g"), ("csr", "csc", "push"))
    return root / "g"


def _files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.is_file())


def mutate(path: Path, data: st.DataObject) -> None:
    """Flip random bytes of ``path``, or truncate it, or extend it."""
    raw = bytearray(path.read_bytes())
    kind = data.draw(st.sampled_from(["flip", "flip", "truncate", "append", "int32"]))
    if kind == "truncate":
        raw = raw[:data.draw(st.integers(0, max(len(raw) - 1, 0)))]
    elif kind == "append":
        raw += data.draw(st.binary(min_size=1, max_size=16))
    elif kind == "int32" and len(raw) >= 4:  # a plausible bad offset or count
        at = data.draw(st.integers(0, len(raw) - 4))
        value = data.draw(st.sampled_from([-1, 0x7FFFFFFF, 60, 61, 1 << 20]))
        raw[at:at + 4] = np.int32(value).tobytes()
    elif raw:
        for _ in range(data.draw(st.integers(1, 4))):
            at = data.draw(st.integers(0, len(raw) - 1))
            raw[at] ^= data.draw(st.integers(1, 255))
    path.write_bytes(bytes(raw))


@FUZZ
@given(data=st.data())
def test_mutated_graph(small_graph, data):
    with tempfile.TemporaryDirectory() as tmp:
        g_dir = Path(shutil.copytree(small_graph, Path(tmp) / "g"))
        files = _files(g_dir)
        target = data.draw(st.sampled_from(files), label="file")
        before = target.read_bytes()
        mutate(target, data)
        changed = target.read_bytes() != before
        full = outcome("mutated_graph:verify", lambda: verify_graph(g_dir))
        if changed and target.name != "manifest.json":
            assert full is None, f"verify passed a changed {target.name}"
        quick = outcome("mutated_graph:verify_quick", lambda: verify_graph(g_dir, quick=True))
        graph = outcome("mutated_graph:open", lambda: open_graph(g_dir))
        if graph is None:
            return
        csr = outcome("mutated_graph:csr", graph.csr)
        if quick is not None:  # structurally sound: every reader succeeds, consistently
            assert csr is not None
            assert int(csr.indptr[-1]) == graph.num_edges()
        for mode in ("memory", "out-of-core"):
            res = outcome(f"mutated_graph:pagerank-{mode}",
                          lambda mode=mode: bsp.pagerank(open_graph(g_dir), mode=mode,
                                                         max_iters=5))
            if res is not None:
                assert np.isfinite(res.values).all()
        cfg = load_config(None, ["dimension=4", "num_epochs=1", "batch_size=50",
                                 "num_uniform_negs=5", "num_batch_negs=5"])
        outcome("mutated_graph:embed", lambda: embed_train(g_dir, cfg,
                                                           out=Path(tmp) / "emb").embeddings)
        outcome("mutated_graph:gnn", lambda: gnn_train(open_graph(g_dir), TrainConfig(
            model="sage", fanouts=[3], hidden=4, epochs=1, seed=0)))


# -- mutated checkpoints ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def checkpoints(small_graph, tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzzckpt")
    cfg = load_config(None, ["dimension=4", "num_epochs=1", "batch_size=50",
                             "num_uniform_negs=5", "num_batch_negs=5"])
    embed_train(small_graph, cfg, out=root / "emb")
    gnn_train(open_graph(small_graph), TrainConfig(model="sage", fanouts=[3], hidden=4,
                                                   epochs=2, seed=0), out=root / "gnn")
    return root


@FUZZ
@given(data=st.data(), kind=st.sampled_from(["emb", "gnn"]))
def test_mutated_checkpoint(checkpoints, small_graph, data, kind):
    with tempfile.TemporaryDirectory() as tmp:
        ck = Path(shutil.copytree(checkpoints / kind, Path(tmp) / kind))
        base = ck if kind == "emb" else ck / "checkpoint"
        target = data.draw(st.sampled_from(_files(base)), label="file")
        before = target.read_bytes()
        mutate(target, data)
        changed = target.read_bytes() != before
        hashed = target.suffix == ".npy"  # covered by a sha256 in the metadata
        if kind == "gnn":
            loaded = outcome("mutated_checkpoint:gnn", lambda: load_checkpoint(base))
            if loaded is not None:
                assert all(np.isfinite(t.numpy()).all() for t in loaded[0].values()
                           if t.is_floating_point())
        else:
            def use():
                emb = Embeddings.load(ck, graph=small_graph)
                vecs = emb.to_numpy()
                assert np.isfinite(vecs).all()
                emb.nearest(int(emb.original([0])[0]), k=3)
                return emb
            loaded = outcome("mutated_checkpoint:emb", use)
            cfg = load_config(None, ["dimension=4", "num_epochs=2", "batch_size=50",
                                     "num_uniform_negs=5", "num_batch_negs=5"])
            outcome("mutated_checkpoint:emb-resume",
                    lambda: embed_train(small_graph, cfg, out=ck).embeddings)
        if changed and hashed:
            assert loaded is None, f"a changed {target.name} was accepted"
