"""CheckpointManager: version 0, commits, resume checks and history, seeds; what it writes is
what training, serving and the PBG import read."""

from __future__ import annotations

import json

import numpy as np
import pytest

from graphsys.embed import Embeddings, load_config, train
from graphsys.embed.checkpoint import (
    CheckpointManager,
    CheckpointStorage,
    stream_seed,
)
from graphsys.embed.relations import RelationModel
from graphsys.embed.stats import EpochStats, RankStats
from graphsys.errors import FormatError, GraphsysError
from graphsys.storage.graph import open_graph

from .conftest import SMALL


def _manager(graph, root, *extra, log=None):
    cfg = load_config(None, SMALL + list(extra))
    g = open_graph(graph)
    return CheckpointManager(root, cfg, g, g.edge_set(cfg.edges).name, log=log)


def _relmodel(m):
    return RelationModel(m.rel_ops, m.cfg.dimension)


def test_stream_seed_is_stable_and_distinct():
    assert stream_seed(0, 1, 0, 3) == stream_seed(0, 1, 0, 3)
    assert len({stream_seed(0, 1, 0, p) for p in range(64)}) == 64
    assert stream_seed(0, 2, 5) != stream_seed(1, 2, 5)
    assert stream_seed(-1) == stream_seed(2**32 - 1)  # coordinates are taken mod 2**32


def test_prepare_writes_version_0_that_embeddings_load(kg4, tmp_path):
    m = _manager(kg4, tmp_path / "ck")
    m.prepare(_relmodel(m))
    meta = json.loads((tmp_path / "ck" / "checkpoint.json").read_text())
    assert list(meta) == ["format", "format_version", "version", "epochs_done", "graph",
                          "edges", "dimension", "num_partitions", "entity_types", "relations",
                          "comparator", "stats", "history", "files"]
    assert (meta["version"], meta["epochs_done"], meta["num_partitions"]) == (0, 0, 4)
    assert json.loads((tmp_path / "ck" / "config.json").read_text()) == m.config_json()
    emb = Embeddings.load(tmp_path / "ck")
    sizes = m.sizes["node"]
    # partition p of type 0 holds exactly the seeded initialisation
    np.testing.assert_array_equal(emb.partitions("node")[2], m.initial_embeddings(0, 2,
                                                                               sizes[2]))
    state = m.load_state(_relmodel(m))
    assert (state.version, state.epochs_done, state.stats, state.progress) == (0, 0, [], None)


def test_commit_replaces_the_version_and_drops_the_old_one(kg1, tmp_path):
    m = _manager(kg1, tmp_path / "ck")
    rm = _relmodel(m)
    m.prepare(rm)
    st = m.storage
    for path_of in (st.emb_path, st.optim_path):  # version 1 = version 0's files, copied
        np.save(path_of("node", 0, 1), np.load(path_of("node", 0, 0)), allow_pickle=False)
    rm.save(st, 1)
    stats = EpochStats(1, ranks=[RankStats(0, edges=10)])
    stats.total()
    m.commit(1, 0, [], progress={"buckets_done": [[0, 0]], "stats": stats.to_json()})
    meta = st.read_meta()
    assert meta["version"] == 1 and meta["progress"]["buckets_done"] == [[0, 0]]
    assert {v for _, v in st.versioned_files()} == {1}
    state = m.load_state(rm)
    assert state.version == 1 and state.progress["stats"]["edges"] == 10


def test_embeddings_loaded_before_a_resumed_run_commits_say_so(kg1, tmp_path):
    # the loaded version's files are dropped at the next commit: a later lookup said
    # "embeddings/node/part-00000.v000001.npy: missing", as if the checkpoint were damaged
    out = tmp_path / "ck"
    train(kg1, load_config(None, SMALL + ["num_epochs=1"]), out=out)
    emb = Embeddings.load(out)
    meta = CheckpointStorage(out).read_meta(check_files=False)  # a load checking the files
    train(kg1, load_config(None, SMALL + ["num_epochs=2"]), out=out)
    with pytest.raises(GraphsysError, match=r"ck: changed by another writer since it was "
                                            r"loaded \(version 1, now 2\); load it again$"):
        emb.partitions("node")
    with pytest.raises(GraphsysError, match=r"changed by another writer .*version 1, now 2"):
        CheckpointStorage(out).verify_files(meta)
    assert Embeddings.load(out).partitions("node")[0].shape[1] == 32


def test_resume_records_tunable_changes_and_refuses_others(kg1, tmp_path):
    out = tmp_path / "ck"
    train(kg1, load_config(None, SMALL + ["num_epochs=1"]), out=out)
    notes: list[str] = []
    m = _manager(kg1, out, "num_epochs=2", "lr=0.05", log=notes.append)
    m.prepare(_relmodel(m))
    meta = CheckpointStorage(out).read_meta()
    assert meta["history"] == [{"epochs_done": 1, "version": 1,
                                "changed": {"lr": [0.1, 0.05]}}]
    assert json.loads((out / "config.json").read_text())["lr"] == 0.05
    assert any("lr=0.05 (was 0.1)" in n for n in notes)
    with pytest.raises(GraphsysError, match=r"trained with dimension=32, this run has "
                                            r"dimension=16 .*another checkpoint directory"):
        m = _manager(kg1, out, "dimension=16")
        m.prepare(_relmodel(m))


def test_refuses_a_directory_that_is_not_a_checkpoint_and_checks_files(kg1, tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "notes.txt").write_text("mine")
    m = _manager(kg1, tmp_path / "x")
    with pytest.raises(GraphsysError, match="not an embedding checkpoint"):
        m.prepare(_relmodel(m))
    m = _manager(kg1, tmp_path / "ck")
    m.prepare(_relmodel(m))
    path = m.storage.emb_path("node", 0, 0)
    arr = np.load(path)
    arr[0, 0] += 1
    np.save(path, arr, allow_pickle=False)
    with pytest.raises(FormatError, match="sha256 mismatch"):
        m.load_state(_relmodel(m))


def test_partition_writes_are_fsynced_file_by_file_before_the_commit(kg4, tmp_path,
                                                                      fsynced, monkeypatch):
    """The partitions training writes without an fsync (evictions, flushes) are fsynced one
    by one before ``checkpoint.json`` names them; the filesystem is not synced whole (that
    waits for other processes' writes too)."""
    def whole(*a):
        raise AssertionError("a filesystem-wide sync")

    monkeypatch.setattr("os.sync", whole)
    out = tmp_path / "ck"
    train(kg4, load_config(None, SMALL + ["num_epochs=1", "buffer_partitions=2",
                                          "bucket_order=\"buffer\""]), out=out)
    meta = CheckpointStorage(out).read_meta()
    assert meta["version"] == 1
    partitions = {rel for rel in meta["files"] if rel.startswith(("embeddings/", "optim/"))}
    assert len(partitions) == 8  # one embedding and one Adagrad file per partition
    root = out.resolve()
    synced = [p.relative_to(root).as_posix() for p in fsynced if root in p.parents]
    commit = max(k for k, rel in enumerate(synced) if rel.startswith(".checkpoint.json.tmp"))
    assert partitions <= set(synced[:commit]), partitions - set(synced[:commit])


def test_a_failure_after_a_commit_keeps_the_version_it_committed(kg1, tmp_path, monkeypatch):
    """An error after checkpoint.json was renamed (here: removing the older version's files
    fails) made the failed run's cleanup delete the files of the version it had just
    committed: the checkpoint then failed every load ('part-00000.v000002.npy: missing')."""
    from graphsys.embed.checkpoint_files import CheckpointStorage

    out = tmp_path / "ck"
    train(kg1, load_config(None, SMALL + ["num_epochs=1"]), out=out)
    real = CheckpointStorage.drop_versions

    def fail_after_the_commit(self, keep, *, above=True, below=True):
        if not above:
            raise OSError(5, "Input/output error")
        real(self, keep, above=above, below=below)

    monkeypatch.setattr(CheckpointStorage, "drop_versions", fail_after_the_commit)
    with pytest.raises(OSError):
        train(kg1, load_config(None, SMALL + ["num_epochs=2"]), out=out)
    monkeypatch.undo()
    assert CheckpointStorage(out).read_meta()["epochs_done"] == 2  # its files are checked
    assert Embeddings.load(out, kg1).vectors(["e0"]).shape == (1, 32)
    train(kg1, load_config(None, SMALL + ["num_epochs=2"]), out=out)  # finished: resumes
