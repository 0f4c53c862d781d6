"""The direct write of in-memory edges over nodes 0..N-1 (graphsys.interop._dense): the same
files, digests and manifest as the ingest's passes, and the ingest's errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

import graphsys
from graphsys.errors import GraphsysError, InputError
from graphsys.interop import _common, _dense
from graphsys.storage.verify import verify_graph


@pytest.fixture
def direct(monkeypatch):
    """Counts the graphs written directly; ``direct.off()`` sends every input through the
    ingest instead."""
    class Counter:
        writes = 0

        def off(self):
            monkeypatch.setattr(_common, "write_dense", lambda *a, **k: False)

        def on(self):
            monkeypatch.setattr(_common, "write_dense", _dense.write_dense)

    counter = Counter()
    real = _dense._write

    def counted(*args, **kwargs):
        counter.writes += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(_dense, "_write", counted)
    return counter


def _manifest(path):
    return json.loads((path / "manifest.json").read_text())


def _inputs(n=500, m=4000, seed=1):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    src[:40] = dst[:40]                                        # self-loops
    src[40:80], dst[40:80] = src[80:120], dst[80:120]          # repeated edges
    src[120:160], dst[120:160] = dst[160:200], src[160:200]    # reversed edges
    cols = {"feat": rng.random((n, 3), dtype=np.float32), "label": rng.integers(-1, 4, n),
            "train_mask": rng.random(n) < 0.3}
    return src, dst, rng.random(m).astype(np.float32), cols


@pytest.mark.parametrize("options", [
    {"partitions": 1},
    {"partitions": 4},
    {"partitions": 3, "weighted": True},
    {"partitions": 4, "weighted": True, "undirected": True, "dedupe": True},
    {"partitions": 2, "undirected": True, "drop_self_loops": True},
    {"partitions": 3, "weighted": True, "dedupe": True, "drop_self_loops": True},
    {"partitions": 3, "partitioner": "range", "max_batch_rows": 100},
    {"partitions": 5, "partitioner": "degree", "seed": 3, "weighted": True},
])
def test_the_direct_write_gives_the_ingests_files_and_manifest(tmp_path, direct, monkeypatch,
                                                               options):
    """Byte for byte (every file's sha256, the manifest whole), features gathered in
    several pieces; the graph verifies and reads back the input."""
    monkeypatch.setattr(_dense, "_GATHER_BYTES", 100)        # 8 rows of 3 floats a piece
    options = dict(options)
    src, dst, w, cols = _inputs()
    weight = w if options.pop("weighted", False) else None
    kwargs = dict(num_nodes=500, weight=weight, node_columns=cols, **options)
    g = graphsys.from_numpy(src, dst, tmp_path / "direct", **kwargs)
    assert direct.writes == 1
    direct.off()
    graphsys.from_numpy(src, dst, tmp_path / "ingest", **kwargs)
    assert _manifest(tmp_path / "direct") == _manifest(tmp_path / "ingest")
    verify_graph(g.path)
    assert np.array_equal(g.node_column("feat")[np.argsort(g.node_ids())], cols["feat"])


def test_from_pyg_and_from_scipy_write_directly(tmp_path, direct):
    torch = pytest.importorskip("torch")
    pyg = pytest.importorskip("torch_geometric.data")
    sp = pytest.importorskip("scipy.sparse")
    src, dst, w, cols = _inputs()
    data = pyg.Data(x=torch.from_numpy(cols["feat"]), y=torch.from_numpy(cols["label"]),
                    edge_index=torch.from_numpy(np.stack([src, dst])))
    a = sp.coo_matrix((w, (src, dst)), shape=(500, 500))
    graphsys.from_pyg(data, tmp_path / "pyg", partitions=3)
    graphsys.from_scipy(a, tmp_path / "scipy", partitions=2)
    assert direct.writes == 2
    direct.off()
    graphsys.from_pyg(data, tmp_path / "pyg-ingest", partitions=3)
    graphsys.from_scipy(a, tmp_path / "scipy-ingest", partitions=2)
    assert _manifest(tmp_path / "pyg") == _manifest(tmp_path / "pyg-ingest")
    assert _manifest(tmp_path / "scipy") == _manifest(tmp_path / "scipy-ingest")


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_non_finite_feature_is_the_ingests_error_and_nothing_is_left(tmp_path, direct, bad):
    src, dst, _, cols = _inputs()
    cols["feat"][123, 1] = bad
    with pytest.raises(InputError, match="column 'feat' has feature .* for node 123"):
        graphsys.from_numpy(src, dst, tmp_path / "g", num_nodes=500, node_columns=cols,
                            partitions=3)
    assert direct.writes == 1                                  # met while writing
    assert list(tmp_path.iterdir()) == []                     # no graph, no staging


def test_inputs_it_does_not_take_go_through_the_ingest(tmp_path, direct):
    src, dst, _, cols = _inputs(n=60, m=300)
    names = np.array([f"n{i}" for i in range(60)], dtype=object)
    g = graphsys.from_numpy(src, dst, tmp_path / "s", num_nodes=60,
                            node_columns={"name": names}, partitions=2)
    assert list(np.asarray(g.node_column("name"))[np.argsort(g.node_ids())]) == list(names)
    graphsys.from_numpy(src, dst, tmp_path / "f", num_nodes=60, partitions=2,
                        partitioner="fennel")
    graphsys.from_numpy(src, dst, tmp_path / "u", partitions=2)   # ids that occur
    assert direct.writes == 0
    with pytest.raises(GraphsysError, match="partitions"):
        graphsys.from_numpy(src, dst, tmp_path / "p", num_nodes=60, partitions=61)


def test_a_feature_column_arrow_writes_otherwise_goes_through_the_ingest(tmp_path, direct,
                                                                          monkeypatch):
    src, dst, _, cols = _inputs()
    monkeypatch.setattr(_dense._StandInFile, "write", _dense.HashingFile.write)  # never met
    g = graphsys.from_numpy(src, dst, tmp_path / "g", num_nodes=500, node_columns=cols,
                            partitions=3)
    assert direct.writes == 1 and not list(tmp_path.glob(".*"))   # tried, nothing left over
    direct.off()
    graphsys.from_numpy(src, dst, tmp_path / "i", num_nodes=500, node_columns=cols,
                        partitions=3)
    assert _manifest(tmp_path / "g")["files"] == _manifest(tmp_path / "i")["files"]
    verify_graph(g.path)


def test_a_progress_bar_goes_through_the_ingest(tmp_path, direct):
    src, dst, _, cols = _inputs(n=60, m=300)
    graphsys.from_numpy(src, dst, tmp_path / "g", num_nodes=60, partitions=2, progress=True)
    assert direct.writes == 0


def test_a_failed_write_leaves_nothing(tmp_path, direct, monkeypatch):
    src, dst, _, cols = _inputs()

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_dense, "_write_bucket", full_disk)
    with pytest.raises(GraphsysError, match="No space left on device.*nothing written"):
        graphsys.from_numpy(src, dst, tmp_path / "g", num_nodes=500, node_columns=cols,
                            partitions=2)
    assert list(tmp_path.iterdir()) == []


def test_every_file_and_directory_is_synced_before_the_manifest(tmp_path, direct, monkeypatch):
    synced, seen = [], {}
    real_fsync, real_write = _dense.fsync_path, _dense.write_manifest
    monkeypatch.setattr(_dense, "fsync_path", lambda p: synced.append(p) or real_fsync(p))

    def manifest_last(staging, manifest):
        seen["files"] = {str(p.relative_to(staging)) for p in staging.rglob("*")}
        seen["synced"] = {str(p.relative_to(staging)) for p in synced}
        real_write(staging, manifest)

    monkeypatch.setattr(_dense, "write_manifest", manifest_last)
    src, dst, w, cols = _inputs()
    graphsys.from_numpy(src, dst, tmp_path / "g", num_nodes=500, weight=w, node_columns=cols,
                        partitions=3)
    assert direct.writes == 1 and len(seen["files"]) == 3 + 9 + 4   # node, bucket files; dirs
    assert seen["synced"] == seen["files"]


def test_edges_that_are_all_dropped_self_loops_leave_a_graph_of_isolated_nodes(tmp_path,
                                                                               direct):
    """drop_self_loops can leave no edge to write: the direct write commits the nodes and
    an empty edge set, as the ingest's passes do (it failed with 'cannot write (No such
    file or directory: .../edges)', fsyncing a directory no bucket had made)."""
    src = dst = np.array([0, 0, 3])
    g = graphsys.from_numpy(src, dst, tmp_path / "direct", num_nodes=5, partitions=2,
                            drop_self_loops=True)
    assert direct.writes == 1
    assert (g.num_nodes(), g.num_edges()) == (5, 0)
    verify_graph(g.path)
    direct.off()
    ref = graphsys.from_numpy(src, dst, tmp_path / "ingest", num_nodes=5, partitions=2,
                              drop_self_loops=True)
    assert _manifest(g.path)["edge_sets"] == _manifest(ref.path)["edge_sets"]
