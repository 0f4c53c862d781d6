"""The ``push`` index: PageRank's destination-blocked push layout stored in the graph
directory, equal to the layout built in RAM, listed under format version 7 (its source
steps), mapped by the fused loop with the same ranks as the engine's supersteps, refused (one
line naming the file) when corrupted, before any kernel indexes an array with it (stale: with
the CSR's case in test_adjacency_index.py), and an index in the layout before it (uint32
source ids) not read but built again."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from graphsys import bsp, open_graph
from graphsys.bsp.algorithms import pagerank_krylov
from graphsys.cli import main
from graphsys.errors import FormatError, GraphsysError
from graphsys.storage.adjacency_index import build_index, min_build_memory
from graphsys.storage.column_file import data_offset
from graphsys.storage.format import PUSH_COLUMNS, index_file
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources
from graphsys.storage.push_layout import (
    PUSH_MIN_BLOCKS,
    PUSH_PARALLEL_MIN_NODES,
    degree_order,
    push_layout,
)
from graphsys.storage.verify import verify_graph


@pytest.fixture(autouse=True)
def power_iteration(monkeypatch):
    """The push layout is the power iteration's: these graphs stay off the linear solve
    that graphs without a push index under the L2 get
    (:mod:`graphsys.bsp.algorithms.pagerank_krylov`)."""
    monkeypatch.setattr(pagerank_krylov, "KRYLOV_MIN_NODES", 1 << 62)


@pytest.fixture(scope="module")
def skewed_dir(tmp_path_factory):
    """A directed graph over more than PUSH_PARALLEL_MIN_NODES ids (so the layout has
    about PUSH_MIN_BLOCKS blocks and heavy sources): Zipf sources, uniform targets, a ring
    through every id, 3 partitions."""
    rng = np.random.default_rng(11)
    n, m = PUSH_PARALLEL_MIN_NODES + 4_000, 400_000
    src = np.minimum(rng.zipf(1.3, m) - 1, n - 1) * 3 + 1  # sparse original ids
    dst = rng.integers(0, n, m) * 3 + 1
    src[:n], dst[:n] = np.arange(n) * 3 + 1, np.roll(np.arange(n), 7) * 3 + 1  # every id
    table = pa.table({"src": src, "dst": dst})
    out = tmp_path_factory.mktemp("push") / "g"
    ingest_sources([EdgeSource(table=table)], out, IngestOptions(partitions=3))
    return out


def _copy(src, tmp_path):
    import shutil

    path = tmp_path / "g"
    shutil.copytree(src, path)
    return path


def test_stored_layout_equals_the_in_ram_build(skewed_dir, tmp_path):
    path = _copy(skewed_dir, tmp_path)
    built = build_index(open_graph(path), ("push",))
    assert set(built["default"]) == {"csc", "push"}  # its input is built first
    g = open_graph(path)
    stored = g.adjacency_index(kind="push")
    csc = g.csc(weights=False)
    out_degree = np.bincount(csc.indices, minlength=g.num_nodes())
    order = degree_order(out_degree)
    want = push_layout(csc.indptr, csc.indices, order, out_degree, PUSH_MIN_BLOCKS)
    np.testing.assert_array_equal(stored.order, order)
    for got, exp in zip(stored.layout(), want):
        np.testing.assert_array_equal(got, exp)
    assert stored.info.num_blocks == len(want[0]) - 1 >= PUSH_MIN_BLOCKS // 2
    assert stored.heavy == want[5] > 0
    assert stored.receivers == int(np.count_nonzero(np.diff(csc.indptr)))
    assert not stored.step.flags.writeable  # a view of the mapped file
    assert stored.step.dtype == np.uint8 and stored.dst.dtype == np.uint16


def test_pagerank_pushes_over_the_index_with_the_supersteps_ranks(skewed_dir, tmp_path):
    path = _copy(skewed_dir, tmp_path)
    build_index(open_graph(path), ("push",))
    g, plain = open_graph(path), open_graph(skewed_dir)
    for kwargs in ({"tol": 1e-10}, {"tol": 1e-30, "max_iters": 4}):
        res = bsp.pagerank(g, **kwargs)
        loop = bsp.pagerank(plain, fuse=False, **kwargs)
        assert res.stats.method == "fused-pagerank (push index, degree order)"
        assert all(s.direction == "push" for s in res.stats.supersteps)
        assert res.stats.num_supersteps == loop.stats.num_supersteps
        np.testing.assert_allclose(res.values, loop.values, rtol=1e-12, atol=1e-15)
    ids = plain.node_ids()[:3]
    np.testing.assert_allclose(bsp.personalized_pagerank(g, ids, tol=1e-10).values,
                               bsp.personalized_pagerank(plain, ids, tol=1e-10).values,
                               rtol=1e-12, atol=1e-15)
    f32 = bsp.pagerank(g, tol=1e-10, sum_dtype="float32")
    assert f32.stats.method == "fused-pagerank (push index, degree order), float32 sends"
    np.testing.assert_allclose(f32.values, bsp.pagerank(plain, tol=1e-10).values, rtol=1e-4)


def test_sparse_graph_keeps_its_ell_pull(tmp_path):
    """Under LOCALITY_MAX_DEGREE edges per vertex (a ring: one) the stored push index is not
    used: the breadth-first ELL pull is faster there."""
    n = 5000
    ring = pa.table({"src": np.arange(n), "dst": np.roll(np.arange(n), 1)})
    ingest_sources([EdgeSource(table=ring)], tmp_path / "g", IngestOptions(partitions=2))
    build_index(open_graph(tmp_path / "g"), ("push",))
    res = bsp.pagerank(open_graph(tmp_path / "g"), tol=1e-12)
    assert res.stats.method == "fused-pagerank (bfs order, ell)"
    np.testing.assert_allclose(res.values, 1 / n)


def test_push_index_needs_the_sent_values_in_half_the_cache(skewed_dir, tmp_path,
                                                            monkeypatch):
    """As the layout built in memory: sent values over PUSH_MAX_BYTES are pulled (a push
    sweeps them once per block), the index or not."""
    import importlib

    pagerank_module = importlib.import_module("graphsys.bsp.algorithms.pagerank")
    path = _copy(skewed_dir, tmp_path)
    build_index(open_graph(path), ("push",))
    sent_bytes = 8 * open_graph(path).num_nodes()
    monkeypatch.setattr(pagerank_module, "PUSH_MAX_BYTES", sent_bytes - 1)
    assert bsp.pagerank(open_graph(path), tol=1e-10).stats.method == "fused-pagerank"
    monkeypatch.setattr(pagerank_module, "PUSH_MAX_BYTES", sent_bytes)
    assert "push index" in bsp.pagerank(open_graph(path), tol=1e-10).stats.method


def test_manifest_version_7_only_with_a_push_index(skewed_dir, tmp_path):
    path = _copy(skewed_dir, tmp_path)
    build_index(open_graph(path), ("csr",))
    assert json.loads((path / "manifest.json").read_text())["format_version"] == 2
    build_index(open_graph(path), ("push",))
    data = json.loads((path / "manifest.json").read_text())
    assert data["format_version"] == 7
    entry = data["indexes"]["default"]["push"]
    assert entry["index_dtype"] == "uint8" and entry["num_blocks"] > 1
    for column in PUSH_COLUMNS:
        assert len(data["files"][index_file("default", "push", column)]["sha256"]) == 64
    assert verify_graph(path)["indexes"] == 3
    assert build_index(open_graph(path), ("push",)) == {}  # current: nothing to do
    data["format_version"] = 6  # a version 6 reader does not know source steps
    (path / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(FormatError, match="push index in source steps, which needs "
                                          "format_version 7"):
        open_graph(path)


def _as_old_layout(path):
    """Relist the graph's push index as the layout before format version 7 (uint32 source
    ids in ``push-src.arrow``; the bytes are never read) under format version 6."""
    data = json.loads((path / "manifest.json").read_text())
    data["format_version"] = 6
    data["indexes"]["default"]["push"]["index_dtype"] = "uint32"
    step, src = index_file("default", "push", "step"), index_file("default", "push", "src")
    (path / step).rename(path / src)
    data["files"][src] = data["files"].pop(step)
    (path / "manifest.json").write_text(json.dumps(data))


@pytest.mark.filterwarnings("ignore::graphsys.errors.ConvergenceWarning")
def test_old_push_layout_is_not_read_but_built_again(skewed_dir, tmp_path, monkeypatch):
    """A push index of format version 6 and before (uint32 source ids, 6 bytes per edge) is
    listed but not read: PageRank says so in one line and, where it stores push indexes,
    stores the current one (the old column's file removed); ``build_index`` rebuilds it."""
    import importlib

    pagerank_module = importlib.import_module("graphsys.bsp.algorithms.pagerank")
    path = _copy(skewed_dir, tmp_path)
    build_index(open_graph(path), ("push",))
    want = bsp.pagerank(open_graph(path), tol=1e-10).values
    _as_old_layout(path)
    assert verify_graph(path)["indexes"] == 2  # hashes still checked
    monkeypatch.setattr(pagerank_module, "PUSH_STORE_MIN_BYTES", float("inf"))
    with pytest.warns(UserWarning, match="push-order.arrow: a push index in the layout "
                                         "before format version 7 .* graphsys index .*--push"):
        pulled = bsp.pagerank(open_graph(path), tol=1e-10)
    assert "push" not in pulled.stats.method
    np.testing.assert_allclose(pulled.values, want, rtol=1e-9)
    monkeypatch.setattr(pagerank_module, "PUSH_STORE_MIN_BYTES", 0)
    with pytest.warns(UserWarning, match="not read"):
        res = bsp.pagerank(open_graph(path), tol=1e-10)
    assert res.stats.method == "fused-pagerank (push index, stored by this run, degree order)"
    np.testing.assert_array_equal(res.values, want)
    data = json.loads((path / "manifest.json").read_text())
    assert data["format_version"] == 7
    assert data["indexes"]["default"]["push"]["index_dtype"] == "uint8"
    assert not (path / index_file("default", "push", "src")).exists()
    assert index_file("default", "push", "src") not in data["files"]
    assert verify_graph(path)["indexes"] == 2
    _as_old_layout(path)
    assert set(build_index(open_graph(path), ("push",))["default"]) == {"push"}
    assert open_graph(path).adjacency_index(kind="push").step.dtype == np.uint8


def _poke(path, column, dtype, at, value, count=1):
    f = path / index_file("default", "push", column)
    arr = np.memmap(f, dtype=dtype, mode="r+", offset=data_offset(f), shape=(at + count,))
    arr[at:at + count] = value
    arr.flush()
    del arr
    return f


@pytest.mark.parametrize("column, dtype, at, value, count", [
    ("order", np.int64, 1, 0, 1),             # a duplicate: not a permutation
    ("order", np.int64, 0, -5, 1),
    ("bounds", np.int64, 1, 1 << 40, 1),
    ("edge_ptr", np.int64, 1, -1, 1),
    ("edge_ptr", np.int64, -1, 1 << 40, 1),   # the last: more slots than the file holds
    ("runs", np.int64, 0, 7, 1),              # block 0's runs start past its edges
    ("dst", np.uint16, 3, 65_535, 1),         # past every block's size and spare sum
])
def test_corrupted_push_index_refused_naming_the_file(skewed_dir, tmp_path, column, dtype,
                                                      at, value, count):
    path = _copy(skewed_dir, tmp_path)
    build_index(open_graph(path), ("push",))
    if at < 0:  # the last entries: counted from the end of the column
        at += len(getattr(open_graph(path).adjacency_index(kind="push"), column)) - count + 1
    f = _poke(path, column, dtype, at, value, count)
    with pytest.raises(FormatError, match=f"{f}: push index {column} out of range"):
        bsp.pagerank(open_graph(path))
    with pytest.raises(FormatError, match=str(f)):
        verify_graph(path)


def test_steps_past_the_last_vertex_refused(skewed_dir, tmp_path):
    """Light sources are a running sum of steps: steps that carry it past N are refused."""
    path = _copy(skewed_dir, tmp_path)
    build_index(open_graph(path), ("push",))
    stored = open_graph(path).adjacency_index(kind="push")
    light = int(stored.runs[stored.heavy])  # block 0's light slots
    count = int(stored.edge_ptr[1]) - light
    assert count * 255 > stored.info.num_nodes
    del stored
    f = _poke(path, "step", np.uint8, light, 255, count)
    with pytest.raises(FormatError, match=f"{f}: push index step out of range"):
        bsp.pagerank(open_graph(path))


def test_push_build_refuses_a_corrupted_csc_and_a_full_disk_lists_no_push(skewed_dir,
                                                                         tmp_path,
                                                                         monkeypatch):
    """The CSC a push index is built from is checked first (its ids index the build's
    arrays); a build that fails (no space left) leaves the CSC listed, the push not."""
    import errno

    from graphsys.storage import adjacency_index

    path = _copy(skewed_dir, tmp_path)
    build_index(open_graph(path), ("csc",))
    f = path / index_file("default", "csc", "indices")
    arr = np.memmap(f, dtype=np.int32, mode="r+", offset=data_offset(f), shape=(3,))
    saved, arr[2] = int(arr[2]), 2**30
    arr.flush()
    with pytest.raises(FormatError, match=f"{f}: neighbour id out of range"):
        build_index(open_graph(path), ("push",))
    arr[2] = saved
    arr.flush()
    del arr

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(adjacency_index, "fill_blocks", full)
    with pytest.raises(GraphsysError, match="the disk is full: no space for the push index"):
        build_index(open_graph(path), ("push",))
    assert set(open_graph(path).manifest.indexes["default"]) == {"csc"}
    assert not list((path / "index").rglob("push-*.arrow"))
    assert verify_graph(path)["indexes"] == 1


def test_push_build_memory_refused_up_front(skewed_dir, tmp_path):
    path = _copy(skewed_dir, tmp_path)
    n = open_graph(path).num_nodes()
    need = min_build_memory(n, ("csc", "push"))
    assert need > min_build_memory(n)
    with pytest.raises(GraphsysError, match=f"at least {need:,} bytes"):
        build_index(open_graph(path), ("push",), memory_limit=min_build_memory(n))
    assert not open_graph(path).manifest.indexes


def test_index_and_ingest_cli_build_a_push_index(tmp_path, capsys):
    f = tmp_path / "e.tsv"
    rng = np.random.default_rng(2)
    f.write_text("".join(f"{a}\t{b}\n" for a, b in rng.integers(0, 300, (3000, 2))))
    assert main(["ingest", str(f), "--out", str(tmp_path / "g")]) == 0
    assert main(["index", str(tmp_path / "g"), "--push", "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["built"] == ["default/csc", "default/push"]
    assert main(["info", str(tmp_path / "g"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    listed = info["edge_sets"]["default"]["indexes"]
    assert info["format_version"] == 7 and set(listed) == {"csc", "push"}
    assert listed["push"]["bytes"] == sum(
        (tmp_path / "g" / index_file("default", "push", c)).stat().st_size for c in PUSH_COLUMNS)
    assert main(["info", str(tmp_path / "g")]) == 0
    assert "indexes: csc (" in capsys.readouterr().out
    assert main(["ingest", str(f), "--out", str(tmp_path / "h"), "--index", "push"]) == 0
    g, h = open_graph(tmp_path / "g"), open_graph(tmp_path / "h")
    assert set(h.manifest.indexes["default"]) == {"csc", "push"}
    np.testing.assert_array_equal(bsp.pagerank(g).values, bsp.pagerank(h).values)
    assert main(["ingest", str(f), "--out", str(tmp_path / "k"), "--index", "pull"]) == 2
    assert "csr, csc, push" in capsys.readouterr().err
