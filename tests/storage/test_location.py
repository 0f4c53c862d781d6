"""Graphs read through a pyarrow.fs filesystem: a ``file://`` URI (memory-mapped, as a
path) and an fsspec in-memory filesystem (read into buffers) give the same answers as the
local directory, with the same checks (paths, sizes, hashes, structure)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from graphsys import open_graph
from graphsys.bsp.algorithms.pagerank import pagerank
from graphsys.cli import main
from graphsys.errors import FormatError, GraphsysError
from graphsys.sampling import NeighborSampler
from graphsys.storage.adjacency_index import build_index, min_build_memory
from graphsys.storage.format import MANIFEST, bucket_file
from graphsys.storage.verify import verify_graph

fsspec = pytest.importorskip("fsspec")
pafs = pytest.importorskip("pyarrow.fs")


@pytest.fixture
def indexed_dir(graph_dir):
    build_index(open_graph(graph_dir), memory_limit=min_build_memory(10_000))
    return graph_dir


@pytest.fixture
def memory_fs(indexed_dir, tmp_path):
    """The indexed graph copied into a fresh fsspec memory filesystem at ``/<test>/g``;
    returns (pyarrow filesystem, root, fsspec filesystem)."""
    mem = fsspec.filesystem("memory")
    root = f"/{tmp_path.name}/g"
    for f in sorted(indexed_dir.rglob("*")):
        if f.is_file():
            mem.pipe(f"{root}/{f.relative_to(indexed_dir).as_posix()}", f.read_bytes())
    yield pafs.PyFileSystem(pafs.FSSpecHandler(mem)), root, mem
    mem.rm(f"/{tmp_path.name}", recursive=True)


def test_file_uri_is_memory_mapped_like_a_path(indexed_dir):
    g = open_graph(f"file://{indexed_dir}")
    assert g.location.local and g.path == indexed_dir
    assert isinstance(next(g.buckets())._mapping, pa.MemoryMappedFile)
    assert verify_graph(f"file://{indexed_dir}") == verify_graph(indexed_dir)
    same = open_graph(str(indexed_dir), filesystem=pafs.LocalFileSystem())
    assert same.location.local


def test_remote_graph_gives_the_local_answers(indexed_dir, memory_fs):
    fs, root, _ = memory_fs
    local, remote = open_graph(indexed_dir), open_graph(root, filesystem=fs)
    assert not remote.location.local and remote.path.endswith(root)
    assert verify_graph(root, filesystem=fs) == verify_graph(indexed_dir)
    np.testing.assert_array_equal(remote.node_ids(), local.node_ids())
    np.testing.assert_array_equal(remote.degrees(direction="both"),
                                  local.degrees(direction="both"))
    for transpose in (False, True):  # read from the stored index, into heap buffers
        a, b = remote.csr(transpose=transpose), local.csr(transpose=transpose)
        np.testing.assert_array_equal(a.indptr, b.indptr)
        np.testing.assert_array_equal(a.indices, b.indices)
    assert next(remote.buckets()).mapped_region == (0, 0)  # no paging advice on heap
    want = pagerank(local, mode="out-of-core", max_iters=30).values
    got = pagerank(remote, mode="out-of-core", max_iters=30).values
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=0, atol=1e-12)
    seeds = np.arange(0, local.num_nodes(), 7)
    for a, b in zip(NeighborSampler(remote, [4, 3]).sample_blocks(seeds, rng_seed=5),
                    NeighborSampler(local, [4, 3]).sample_blocks(seeds, rng_seed=5)):
        assert a.src_nodes.tolist() == b.src_nodes.tolist()


def _rewrite_manifest(mem, root, edit):
    data = json.loads(mem.cat(f"{root}/{MANIFEST}"))
    edit(data)
    mem.pipe(f"{root}/{MANIFEST}", json.dumps(data).encode())


def test_remote_path_outside_the_graph_is_refused(memory_fs):
    fs, root, mem = memory_fs
    mem.pipe(f"{root}/../secret", b"x")
    _rewrite_manifest(mem, root, lambda d: d["files"].update(
        {"../secret": {"bytes": 1, "sha256": "0" * 64}}))
    with pytest.raises(FormatError, match=r"files: path '\.\./secret' is absolute or leaves"):
        open_graph(root, filesystem=fs)


def test_remote_truncated_and_corrupted_files_are_named(memory_fs):
    fs, root, mem = memory_fs
    rel = bucket_file("default", 0, 1)
    bucket = f"{root}/{rel}"
    data = mem.cat(bucket)
    mem.pipe(bucket, data[:-8])
    with pytest.raises(FormatError, match=rf"{rel}: size .* \(truncated or modified\)"):
        open_graph(root, filesystem=fs)
    mem.pipe(bucket, data[:-9] + bytes([data[-9] ^ 1]) + data[-8:])
    with pytest.raises(FormatError, match=rf"{rel}: sha256 mismatch"):
        verify_graph(root, filesystem=fs)
    mem.rm(f"{root}/{MANIFEST}")
    with pytest.raises(FormatError, match="no manifest"):
        open_graph(root, filesystem=fs)


def test_remote_graph_is_read_only_and_bad_uris_are_one_line(memory_fs, tmp_path):
    fs, root, _ = memory_fs
    with pytest.raises(GraphsysError, match="building an index needs the graph on a local"):
        build_index(open_graph(root, filesystem=fs), force=True,
                    memory_limit=min_build_memory(10_000))
    with pytest.raises(GraphsysError, match="cannot open filesystem URI"):
        open_graph("nosuchscheme://bucket/g")
    with pytest.raises(FormatError, match="not a directory"):
        open_graph(f"{root}-absent", filesystem=fs)


def test_cli_takes_a_uri_where_it_takes_a_directory(indexed_dir, capsys):
    assert main(["verify", f"file://{indexed_dir}"]) == 0
    assert main(["info", f"file://{indexed_dir}", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["nodes"] == 100
