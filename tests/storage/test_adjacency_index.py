"""Persistent CSR/CSC indexes: equal to the in-RAM build and to scipy, mapped with no copy,
listed and checked, and refused (one line naming the file) when stale, truncated or corrupt."""

from __future__ import annotations

import errno
import json
import shutil

import numpy as np
import pyarrow.feather as feather
import pytest
import scipy.sparse as sp

from graphsys import open_graph
from graphsys.cli import main
from graphsys.errors import FormatError, GraphsysError, ParameterError
from graphsys.memory import PeakMemory, current_memory
from graphsys.storage import adjacency_index
from graphsys.storage.adjacency_index import build_index, min_build_memory
from graphsys.storage.column_file import data_offset
from graphsys.storage.format import index_file, read_manifest
from graphsys.storage.graph import Graph
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources
from graphsys.storage.verify import verify_graph


def _edges(tmp_path, weighted: bool, n_edges: int = 6000, seed: int = 3):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 700, n_edges) * 5 + 2  # sparse original ids
    d = rng.integers(0, 700, n_edges) * 5 + 2
    w = rng.integers(1, 50, n_edges) / 8
    f = tmp_path / ("w.tsv" if weighted else "e.tsv")
    f.write_text("".join(f"{a}\t{b}\t{x}\n" if weighted else f"{a}\t{b}\n"
                         for a, b, x in zip(s, d, w)))
    return f, s, d, w


@pytest.fixture
def graph_dir(tmp_path):
    f, s, d, w = _edges(tmp_path, weighted=True)
    ingest_sources([EdgeSource([f], weight_col=2)], tmp_path / "g", IngestOptions(partitions=4))
    return tmp_path / "g", s, d, w


def _in_ram(path, transpose):
    g = Graph(path, read_manifest(path))
    g.manifest.indexes = {}
    return g.csr(transpose=transpose)


def test_index_equals_in_ram_build_and_scipy(graph_dir):
    path, s, d, w = graph_dir
    built = build_index(open_graph(path), memory_limit=min_build_memory(10_000))
    assert set(built["default"]) == {"csr", "csc"}
    g = open_graph(path)
    n = g.num_nodes()
    si, di = g.to_internal(s), g.to_internal(d)
    ref = sp.coo_matrix((w, (si, di)), shape=(n, n)).tocsr()
    for transpose in (False, True):
        mapped = g.csr(transpose=transpose)
        ram = _in_ram(path, transpose)
        assert mapped.indices.dtype == np.int32 and mapped.indptr.dtype == np.int64
        assert not mapped.indices.flags.writeable  # a view of the mapped file
        np.testing.assert_array_equal(mapped.indptr, ram.indptr)
        np.testing.assert_array_equal(mapped.indices, ram.indices)
        np.testing.assert_array_equal(mapped.weight, ram.weight)
        got = sp.csr_matrix((mapped.weight.astype(np.float64), mapped.indices, mapped.indptr),
                            shape=(n, n))
        assert abs(got - (ref.T if transpose else ref)).max() == 0
    # pyarrow reads the files as they are
    t = feather.read_table(path / index_file("default", "csr", "indices"))
    assert t.column_names == ["indices"] and t.num_rows == g.num_edges()


def test_scatter_into_the_mapping_when_no_buffer_fits(graph_dir):
    """At the minimum budget the rows are scattered straight into the mapped files."""
    path, *_ = graph_dir
    build_index(open_graph(path), memory_limit=min_build_memory(open_graph(path).num_nodes()))
    g = open_graph(path)
    for transpose in (False, True):
        ram = _in_ram(path, transpose)
        np.testing.assert_array_equal(g.csr(transpose=transpose).indices, ram.indices)
        np.testing.assert_array_equal(g.csr(transpose=transpose).weight, ram.weight)


def test_manifest_lists_index_with_sizes_and_hashes_and_verify_checks_it(graph_dir):
    path, *_ = graph_dir
    build_index(open_graph(path), ("csr",))
    data = json.loads((path / "manifest.json").read_text())
    assert data["format_version"] == 2
    assert set(data["indexes"]["default"]) == {"csr"}
    entry = data["files"][index_file("default", "csr", "indices")]
    assert entry["bytes"] == (path / index_file("default", "csr", "indices")).stat().st_size
    assert len(entry["sha256"]) == 64
    assert verify_graph(path)["indexes"] == 1
    assert build_index(open_graph(path), ("csr",)) == {}  # current: nothing to do


def test_old_version_1_graph_still_opens(graph_dir):
    path, *_ = graph_dir
    data = json.loads((path / "manifest.json").read_text())
    data["format_version"] = 1
    data.pop("indexes")
    (path / "manifest.json").write_text(json.dumps(data))
    g = open_graph(path)
    assert g.adjacency_index(kind="csr") is None
    assert g.csr().indices.dtype == np.int32  # built in RAM, ids as an index holds them
    verify_graph(path)


def _corrupt_indices(path, value):
    f = path / index_file("default", "csr", "indices")
    arr = np.memmap(f, dtype=np.int32, mode="r+",
                    offset=data_offset(f), shape=(1,))
    arr[0] = value
    arr.flush()
    del arr
    return f


def test_corrupted_index_refused_naming_the_file(graph_dir):
    path, *_ = graph_dir
    build_index(open_graph(path), ("csr",))
    f = _corrupt_indices(path, 2**30)
    with pytest.raises(FormatError, match=f"{f}.*out of range"):
        open_graph(path).csr()
    with pytest.raises(FormatError, match=str(f)):
        verify_graph(path)  # the sha256 differs too


def test_truncated_index_refused(graph_dir):
    path, *_ = graph_dir
    build_index(open_graph(path), ("csc",))
    f = path / index_file("default", "csc", "indptr")
    with open(f, "r+b") as fh:
        fh.truncate(f.stat().st_size - 64)
    with pytest.raises(FormatError, match=f"{f}.*truncated"):
        open_graph(path)


@pytest.mark.parametrize("kind, first", [("csr", "indptr"), ("push", "order")])
def test_stale_index_refused(graph_dir, kind, first):
    path, *_ = graph_dir
    build_index(open_graph(path), (kind,))
    data = json.loads((path / "manifest.json").read_text())
    data["indexes"]["default"][kind]["edges_digest"] = "0" * 64
    (path / "manifest.json").write_text(json.dumps(data))
    f = path / index_file("default", kind, first)
    with pytest.raises(FormatError, match=f"{f}: stale index"):
        open_graph(path).adjacency_index(kind=kind)
    with pytest.raises(FormatError, match="stale"):
        verify_graph(path)


def test_memory_limit_too_small_refused_with_the_minimum(graph_dir):
    path, *_ = graph_dir
    n = open_graph(path).num_nodes()
    with pytest.raises(GraphsysError, match=f"at least {min_build_memory(n):,} bytes"):
        build_index(open_graph(path), memory_limit=1000)


@pytest.mark.parametrize("limit", ["x", None, True, -1])
def test_memory_limit_is_checked_as_every_budget_is(graph_dir, limit):
    """None is the RAM available now, as every other memory_limit reads it ('x' and None
    raised TypeError; -1 and True were read as byte counts)."""
    g = open_graph(graph_dir[0])
    if limit is None:
        assert "csr" in build_index(g, ("csr",), memory_limit=None)["default"]
    else:
        with pytest.raises(ParameterError, match="memory_limit must be a positive integer"):
            build_index(g, ("csr",), memory_limit=limit)


def test_disk_full_leaves_no_index_in_the_manifest(graph_dir, monkeypatch):
    path, *_ = graph_dir
    before = (path / "manifest.json").read_bytes()

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(adjacency_index, "_scatter_rows", full)
    with pytest.raises(GraphsysError, match=f"^{path}: the disk is full: no space for the csr "
                                            f"index of edge set 'default'; the graph is intact"):
        build_index(open_graph(path), ("csr",))
    assert (path / "manifest.json").read_bytes() == before
    assert not list((path / "index").rglob("*.arrow"))
    open_graph(path)


def _short_write(*args, **kwargs):
    raise OSError("2999876 requested and 903168 written")  # numpy's tofile, no errno


def _efault(*args, **kwargs):
    raise OSError(errno.EFAULT, "Error writing bytes to file. Detail: [errno 14] Bad address")


def _enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("flag,builder", [("--csr", "_build_one"), ("--csc", "_build_one"),
                                          ("--undirected", "_build_sym"),
                                          ("--push", "_build_one")])
@pytest.mark.parametrize("failure", [_enospc, _efault, _short_write])
def test_a_full_disk_is_one_line_saying_so(graph_dir, monkeypatch, capsys, flag, builder,
                                           failure):
    """A full disk fails a build with ENOSPC, with EFAULT (a write from a mapped sparse file
    tmpfs cannot back: "Bad address") or with NumPy's short write (no errno): every form is
    one line saying the disk is full and the graph is intact."""
    from graphsys.storage import atomic

    path, *_ = graph_dir
    before = (path / "manifest.json").read_bytes()

    def partial(graph, name, *args, **kwargs):
        tmp = next(a for a in args if hasattr(a, "mkdir"))
        (tmp / "partial.arrow").write_bytes(b"x" * 100)
        failure()

    monkeypatch.setattr(adjacency_index, builder, partial)
    monkeypatch.setattr(atomic.shutil, "disk_usage",  # what a full disk reports
                        lambda p: shutil._ntuple_diskusage(10 << 30, 10 << 30, 4096))
    assert main(["index", str(path), flag]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    kind = {"--undirected": "sym", "--push": "csc"}.get(flag, flag[2:])
    assert err == [f"error: {path}: the disk is full: no space for the {kind} index of edge "
                   f"set 'default'; the graph is intact (that index is not added)"]
    assert (path / "manifest.json").read_bytes() == before
    assert not (path / "index").exists() or not any((path / "index").iterdir())
    assert verify_graph(path)["leftovers"] == []


def test_efault_with_space_left_is_not_called_a_full_disk(graph_dir, monkeypatch, capsys):
    from graphsys.storage import atomic
    from graphsys.storage.atomic import disk_full

    path, *_ = graph_dir
    monkeypatch.setattr(adjacency_index, "_build_one", _efault)
    monkeypatch.setattr(atomic.shutil, "disk_usage",
                        lambda p: shutil._ntuple_diskusage(10 << 30, 1 << 30, 9 << 30))
    assert main(["index", str(path), "--csr"]) == 1
    assert capsys.readouterr().err == ("error: Error writing bytes to file. Detail: [errno "
                                       "14] Bad address\n")
    assert disk_full(OSError(errno.ENOSPC, "x"), path)
    assert not disk_full(OSError(errno.EACCES, "x"), path)


def test_unweighted_multi_partition_int32_and_engines_map_it(tmp_path):
    from graphsys import bsp
    from graphsys.sampling import NeighborSampler

    f, *_ = _edges(tmp_path, weighted=False)
    assert main(["ingest", str(f), "--out", str(tmp_path / "g"), "--partitions", "3",
                 "--index", "csr,csc"]) == 0
    g = open_graph(tmp_path / "g")
    ram_pr = bsp.pagerank(Graph(g.path, _no_index(g)), mode="memory", max_iters=30)
    res = bsp.pagerank(g, mode="memory", max_iters=30)
    np.testing.assert_allclose(res.values, ram_pr.values, rtol=1e-12, atol=1e-15)
    sampler = NeighborSampler(g, [5, 3], symmetric=False)
    csc = g.csc()
    assert sampler.adj.indices is csc.indices or np.shares_memory(sampler.adj.indices,
                                                                  csc.indices)
    blocks = sampler.sample_blocks(np.arange(10), rng_seed=1)
    # every sampled edge is a stored in-edge
    dst = blocks[-1].dst_nodes.numpy()[blocks[-1].edge_dst.numpy()]
    src = blocks[-1].src_nodes.numpy()[blocks[-1].edge_src.numpy()]
    for a, b in zip(src, dst):
        assert a in csc.indices[csc.indptr[b]:csc.indptr[b + 1]]


def _no_index(g):
    m = read_manifest(g.path)
    m.indexes = {}
    return m


def test_index_cli_and_bad_kind(tmp_path, capsys):
    f, *_ = _edges(tmp_path, weighted=False, n_edges=500)
    assert main(["ingest", str(f), "--out", str(tmp_path / "g")]) == 0
    assert main(["index", str(tmp_path / "g"), "--csc", "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["built"] == ["default/csc"]
    # the anonymous peak (what --memory-limit bounds) beside the total, which counts the
    # mapped files' pages too
    assert 0 < out["peak_rss_anon_bytes"] <= out["peak_rss_bytes"]
    assert main(["ingest", str(f), "--out", str(tmp_path / "h"), "--index", "csx"]) == 2
    assert "--index" in capsys.readouterr().err
    assert not (tmp_path / "h").exists()
    assert main(["index", str(tmp_path / "g"), "--memory-limit", "1KB"]) == 2
    assert "at least" in capsys.readouterr().err


def test_build_memory_is_page_cache_not_heap(tmp_path):
    """A 2M-edge index build adds well under its 8 MB of indices to anonymous memory."""
    rng = np.random.default_rng(0)
    f = tmp_path / "e.parquet"
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"src": rng.integers(0, 1 << 16, 2_000_000),
                             "dst": rng.integers(0, 1 << 16, 2_000_000)}), f)
    ingest_sources([EdgeSource([f])], tmp_path / "g", IngestOptions(partitions=4))
    build_index(open_graph(tmp_path / "g"), ("csr",))  # compile the kernels
    shutil.rmtree(tmp_path / "g" / "index")
    m = read_manifest(tmp_path / "g")
    before = current_memory().anon
    with PeakMemory(interval=0.005) as pm:
        g = Graph(tmp_path / "g", m)
        m.indexes = {}
        csr = adjacency_index._build_one(g, "default", "csr", tmp_path, False, 2_000_000_000)
    assert csr.num_edges == 2_000_000
    # the cursor (0.5 MB) and one partition's rows (~2 MB of int32), not the 8 MB of indices
    assert pm.peak_anon - before < 6_000_000


def test_symmetric_sampler_view_maps_undirected_deduped_graph(tmp_path):
    from graphsys.sampling import homogeneous_adjacency, mapped_adjacency

    f, *_ = _edges(tmp_path, weighted=False)
    ingest_sources([EdgeSource([f])], tmp_path / "g",
                   IngestOptions(partitions=2, undirected=True, dedupe=True))
    g = open_graph(tmp_path / "g")
    ram = homogeneous_adjacency(g, symmetric=True)
    assert mapped_adjacency(g, symmetric=True) is None  # no index yet
    build_index(open_graph(tmp_path / "g"), ("csr",))
    g = open_graph(tmp_path / "g")
    mapped = homogeneous_adjacency(g, symmetric=True)
    assert mapped.indices.dtype == np.int32
    np.testing.assert_array_equal(mapped.indptr, ram.indptr)
    np.testing.assert_array_equal(mapped.indices, ram.indices)


@pytest.mark.parametrize("rel, name", [(index_file("default", "csc", "indices"), b"indices"),
                                       ("edges/default/bucket-00000-00001.arrow", b"dst")])
def test_non_utf8_column_name_refused_naming_the_file(graph_dir, rel, name):
    """A field name that is not UTF-8 (found by fuzzing: pyarrow raised UnicodeDecodeError,
    a traceback) is refused like any other unreadable file."""
    path, *_ = graph_dir
    if rel.startswith("index/"):
        build_index(open_graph(path), ("csc",))
    f = path / rel  # without an index, csc() reads the buckets
    raw = f.read_bytes()
    assert name in raw
    f.write_bytes(raw.replace(name, b"\x9e" + name[1:]))
    with pytest.raises(FormatError, match=str(f)):
        open_graph(path).csc()


def test_index_offsets_checks_only_the_offsets(graph_dir):
    """The degrees need the offsets alone: mapped and checked in O(N), equal to the full
    index's; a bad neighbour id is left to the readers of the ids, bad offsets are not."""
    path, *_ = graph_dir
    build_index(open_graph(path), ("csr",))
    offsets = open_graph(path).index_offsets(kind="csr")
    np.testing.assert_array_equal(offsets, open_graph(path).adjacency_index(kind="csr").indptr)
    assert open_graph(path).index_offsets(kind="csc") is None
    f = _corrupt_indices(path, 2**30)
    np.testing.assert_array_equal(open_graph(path).index_offsets(kind="csr"), offsets)
    with pytest.raises(FormatError, match=f"{f}.*out of range"):
        open_graph(path).adjacency_index(kind="csr")
    ptr = path / index_file("default", "csr", "indptr")
    arr = np.memmap(ptr, dtype=np.int64, mode="r+", offset=data_offset(ptr), shape=(3,))
    arr[2] = -7
    arr.flush()
    del arr
    with pytest.raises(FormatError, match=f"{ptr}: offsets corrupted at entry 2"):
        open_graph(path).index_offsets(kind="csr")


def test_a_real_full_disk(tmp_path, capsys):
    """On a tmpfs just larger than the graph (Linux, where this process may mount one):
    every kind of build fails in one line and the graph verifies."""
    import subprocess
    import sys

    import graphsys

    if not sys.platform.startswith("linux") or shutil.which("mount") is None:
        pytest.skip("needs Linux mount")
    rng = np.random.default_rng(0)
    g0 = tmp_path / "g0"
    graphsys.from_numpy(rng.integers(0, 20_000, 150_000), rng.integers(0, 20_000, 150_000), g0,
                        partitions=2)
    size = sum(f.stat().st_size for f in g0.rglob("*") if f.is_file()) + (64 << 10)
    mnt = tmp_path / "fs"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        shutil.copytree(g0, mnt / "g")
        for flag, kind in (("--csr", "csr"), ("--undirected", "sym"), ("--push", "csc")):
            assert main(["index", str(mnt / "g"), flag, "--quiet"]) == 2
            err = capsys.readouterr().err.strip().splitlines()
            assert err == [f"error: {mnt / 'g'}: the disk is full: no space for the {kind} "
                           f"index of edge set 'default'; the graph is intact (that index is "
                           f"not added)"], err
            assert verify_graph(mnt / "g") == verify_graph(g0)
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_scipy_matrix_of_a_mapped_index_can_be_summed_and_changed(tmp_path):
    """``csr().to_scipy()`` of an indexed weighted graph with parallel edges raised
    'ValueError: WRITEBACKIFCOPY base is read-only' on ``.sum()`` (scipy merges duplicates
    in place, into the mapped read-only weights); without the index it summed."""
    import graphsys

    g = graphsys.from_numpy([0, 0, 1, 2], [1, 1, 2, 0], tmp_path / "g",
                            weight=np.array([1, 2, 3, 4], np.float32))
    build_index(g, ("csr",))
    g = open_graph(g.path)
    m = g.csr().to_scipy()
    assert m.sum() == 10.0 and m[0, 1] == 3.0
    m.data *= 2  # a copy: the mapped index is unchanged
    assert open_graph(g.path).csr().weight.tolist() == [1, 2, 3, 4]


def test_a_rebuild_never_shows_a_reader_new_files_against_the_old_manifest(tmp_path,
                                                                          monkeypatch):
    # an index rebuilt after an append replaced its files in the live directory before the
    # manifest: a graph opened meanwhile failed with "csr-indptr.arrow: size 522 bytes,
    # manifest says 506 (truncated or modified)"; now the rebuild swaps in a new tree
    from graphsys.storage.append import append_edges
    from graphsys.storage.lock import writer_lock

    path = tmp_path / "g"
    f = tmp_path / "e.tsv"
    f.write_text("0\t1\n1\t2\n2\t0\n")
    ingest_sources([EdgeSource([f])], path)
    build_index(open_graph(path), ("csr",))
    (tmp_path / "more.tsv").write_text("3\t4\n4\t0\n")
    append_edges(path, [EdgeSource([tmp_path / "more.tsv"], edge_set="more")])
    before = open_graph(path)
    old = before.csr("default").to_scipy().toarray()
    assert before.manifest.indexes["default"]["csr"].num_nodes == 3  # grown: rebuilt below
    seen = []
    write = adjacency_index.write_manifest

    def meanwhile(directory, manifest):
        reader = open_graph(path)              # opened while the rebuild commits
        seen.append((reader.manifest.indexes["default"]["csr"].num_nodes,
                     reader.csr("default").to_scipy().toarray()))
        with pytest.raises(GraphsysError, match="another writer holds"):
            with writer_lock(path):            # the lock holds until the swap is done
                pass
        write(directory, manifest)

    monkeypatch.setattr(adjacency_index, "write_manifest", meanwhile)
    build_index(open_graph(path), ("csr",), edge_sets=["default"], force=True)
    assert [n for n, _ in seen] == [3] and np.array_equal(seen[0][1], old)
    assert np.array_equal(before.csr("default").to_scipy().toarray(), old)
    after = open_graph(path)
    assert after.manifest.indexes["default"]["csr"].num_nodes == 5
    np.testing.assert_array_equal(after.csr("default").to_scipy().toarray(), old)
    assert verify_graph(path)["leftovers"] == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.tsv", "g", "more.tsv"]


def test_the_refusals_index_command_runs_for_a_path_with_a_space(tmp_path):
    """A build refused over memory_limit names the command that builds the index on disk;
    for a graph at ``my graph`` it read ``graphsys index .../my graph --undirected``, which
    a shell splits into two paths (``graphsys index: error: unrecognized arguments``). The
    path is now quoted, and the command, run as a shell splits it, builds the index that
    serves the view."""
    import shlex

    import graphsys
    from graphsys.sampling.adjacency import homogeneous_adjacency

    g = graphsys.from_numpy(np.array([0, 1, 2]), np.array([1, 2, 0]), tmp_path / "my graph")
    with pytest.raises(GraphsysError, match="graphsys index") as info:
        homogeneous_adjacency(g, memory_limit=1)
    command = str(info.value).rsplit(": ", 1)[1]
    argv = shlex.split(command)
    assert argv[:3] == ["graphsys", "index", str(tmp_path / "my graph")]
    assert main(argv[1:] + ["--quiet"]) == 0
    adj = homogeneous_adjacency(open_graph(tmp_path / "my graph"), memory_limit=1)
    assert adj.indptr.tolist() == [0, 2, 4, 6]
