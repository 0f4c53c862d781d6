"""One writer at a time per graph directory, and no lost update
(:mod:`graphsys.storage.lock`): a second writer is refused at once in one line naming the
holder, a writer whose manifest went stale is refused naming the other writer's change,
neither leaves anything behind, and a killed holder never leaves a stale lock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from graphsys import cli, open_graph
from graphsys.errors import GraphsysError
from graphsys.storage.adjacency_index import build_index
from graphsys.storage.append import append_edges
from graphsys.storage.format import MANIFEST
from graphsys.storage.ingest import EdgeSource
from graphsys.storage.lock import LOCK_FILE, manifest_digest, writer_lock
from graphsys.storage.node_columns import write_node_column
from graphsys.storage.verify import verify_graph

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}

#: A CLI run whose append holds the writer lock until the file ``argv[1]`` exists (it
#: prints ``holding`` once it has the lock; it gives up waiting after 300 s), then finishes
#: normally: the test decides when the lock is released, whatever the machine's speed.
SLOW_CLI = textwrap.dedent("""
    import os, sys, time
    from graphsys.storage import ingest_job
    read_all = ingest_job.IngestJob.read_all
    def slow(self):
        print("holding", flush=True)
        deadline = time.monotonic() + 300
        while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
            time.sleep(0.05)
        read_all(self)
    ingest_job.IngestJob.read_all = slow
    from graphsys import cli
    sys.exit(cli.main(sys.argv[2:]))
""")

#: Takes the writer lock of ``argv[1]``, says so, and sleeps (to be killed).
HOLD = textwrap.dedent("""
    import sys, time
    from graphsys.storage.lock import writer_lock
    with writer_lock(sys.argv[1]):
        print("locked", flush=True)
        time.sleep(600)
""")


def _edge_file(path, seed, new_ids=False):
    rng = np.random.default_rng(seed)
    hi = 150 if new_ids else 100
    path.write_text("".join(f"{a}\t{b}\n" for a, b in rng.integers(0, hi, (300, 2))))
    return path


def _leftovers(graph_dir):
    """Staging directories beside the graph and temporary index directories inside it."""
    beside = [p.name for p in graph_dir.parent.iterdir() if ".staging-" in p.name]
    inside = [str(p) for p in graph_dir.rglob(".tmp-*")]
    return beside + inside


def test_second_append_is_refused_while_the_first_holds_the_lock(graph_dir, tmp_path):
    a = _edge_file(tmp_path / "a.tsv", 1, new_ids=True)
    b = _edge_file(tmp_path / "b.tsv", 2, new_ids=True)
    release = tmp_path / "release"
    first = subprocess.Popen(
        [sys.executable, "-c", SLOW_CLI, str(release), "ingest", str(a), "--append-to",
         str(graph_dir), "--edge-set", "a"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        assert first.stdout.readline().strip() == "holding"
        second = subprocess.run(
            [sys.executable, "-m", "graphsys", "ingest", str(b), "--append-to",
             str(graph_dir), "--edge-set", "b"],
            capture_output=True, text=True, timeout=300, env=ENV)
        release.touch()
        out, err = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, err[-2000:]
    assert "appended to" in out
    assert second.returncode == 2, second.stderr[-2000:]
    lines = second.stderr.strip().splitlines()
    assert lines == [f"error: another writer holds {graph_dir.absolute()} (pid {first.pid}); "
                     f"nothing written: retry when it has finished"]
    assert "appended" not in second.stdout
    g = open_graph(graph_dir)
    assert sorted(g.edge_sets) == ["a", "default"]
    verify_graph(graph_dir)
    assert _leftovers(graph_dir) == []
    # once the first has finished, the second goes through and both edge sets remain
    assert cli.main(["ingest", str(b), "--append-to", str(graph_dir), "--edge-set", "b"]) == 0
    assert sorted(open_graph(graph_dir).edge_sets) == ["a", "b", "default"]
    verify_graph(graph_dir)


def test_two_appends_at_once_never_lose_an_edge_set(graph_dir, tmp_path):
    """The reproducer: two ``ingest --append-to`` started together. Whatever the timing,
    every one that exits 0 has its edge set in the graph, a refused one says so in one line,
    and the graph verifies."""
    procs = {name: subprocess.Popen(
        [sys.executable, "-m", "graphsys", "ingest",
         str(_edge_file(tmp_path / f"{name}.tsv", seed, new_ids=True)), "--append-to",
         str(graph_dir), "--edge-set", name],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
        for seed, name in enumerate(("p", "q"))}
    results = {}
    for name, p in procs.items():
        out, err = p.communicate(timeout=300)
        results[name] = (p.returncode, out, err)
    edge_sets = set(open_graph(graph_dir).edge_sets)
    for name, (rc, out, err) in results.items():
        if rc == 0:
            assert name in edge_sets and "appended to" in out
        else:
            assert rc == 2 and name not in edge_sets, err[-2000:]
            assert len(err.strip().splitlines()) == 1
            assert "another writer holds" in err or "changed by another writer" in err
    assert any(rc == 0 for rc, _, _ in results.values())
    verify_graph(graph_dir)
    assert _leftovers(graph_dir) == []


def test_index_of_a_graph_opened_before_an_append_is_refused(graph_dir, tmp_path):
    """``graphsys index`` reads the manifest when it opens the graph: an append landing
    before it commits would be overwritten (its edge set lost, the grown partitions no
    longer matching the manifest)."""
    g = open_graph(graph_dir)
    append_edges(graph_dir, [EdgeSource([_edge_file(tmp_path / "x.tsv", 3, True)],
                                        edge_set="extra")])
    with pytest.raises(GraphsysError, match=r"changed by another writer since it was read "
                                            r"\(edge set 'extra' added, nodes of 'node' "
                                            r"added\); nothing written"):
        build_index(g, ("csr",))
    fresh = open_graph(graph_dir)
    assert sorted(fresh.edge_sets) == ["default", "extra"]
    assert fresh.manifest.indexes == {}
    assert not (graph_dir / "index").exists()
    verify_graph(graph_dir)
    assert build_index(fresh, ("csr",))  # opened again: goes through
    verify_graph(graph_dir)


def test_a_reader_opened_before_a_commit_is_told_the_graph_changed(graph_dir, tmp_path):
    """A graph opened before an append (grown node partitions) or a compaction (change
    sets' files gone) once failed its next read with what looked like damage ('part-00000.
    arrow: 51 nodes, manifest says 50', 'cannot open bucket (No such file)'); it now says
    that the graph changed and to open it again."""
    from graphsys.storage.compact import compact

    before = open_graph(graph_dir)
    append_edges(graph_dir, [EdgeSource([_edge_file(tmp_path / "x.tsv", 3, True)],
                                        edge_set="extra")])
    with pytest.raises(GraphsysError, match=r"^\S+: changed by another writer since it was "
                                            r"opened \(edge set 'extra' added, nodes of "
                                            r"'node' added\); open it again$"):
        before.to_original(np.arange(before.num_nodes()))
    changed = open_graph(graph_dir)
    compact(graph_dir)  # folds 'extra' into 'default': its files are gone
    with pytest.raises(GraphsysError, match="changed by another writer since it was opened"):
        changed.degrees()


def test_a_reader_never_mixes_buckets_of_two_versions_of_one_size(tmp_path):
    """Folding an update set rewrites the buckets with the same sizes: a graph opened
    before read bucket (0, 0) with the old weight and bucket (1, 1), first read after the
    compaction, with the new one (2 and 30, a version that never existed), as success."""
    import graphsys
    from graphsys.storage.changes import update_weights
    from graphsys.storage.compact import compact

    path = tmp_path / "g"
    graphsys.from_numpy(np.array([0, 2]), np.array([1, 3]), path,
                        weight=np.array([2.0, 3.0], np.float32), partitions=2,
                        partitioner="range")
    before = open_graph(path)
    assert before.bucket(0, 0).num_edges == before.bucket(1, 1).num_edges == 1
    assert next(before.bucket(0, 0).batches()).weight.tolist() == [2.0]
    update_weights(path, [0, 2], [1, 3], [20.0, 30.0])
    compact(path)
    with pytest.raises(GraphsysError, match=r"changed by another writer since it was opened "
                                            r"\(the manifest was rewritten\); open it again"):
        next(before.bucket(1, 1).batches())
    after = open_graph(path)
    assert sorted(after.csr().to_scipy().data.tolist()) == [20.0, 30.0]


def test_node_column_write_refused_after_another_commit(graph_dir, monkeypatch):
    """A column writer that opened the graph before another writer's commit is refused."""
    import graphsys.storage.graph as graph_module

    real_open = graph_module.open_graph

    def open_then_index(path):
        g = real_open(path)
        build_index(real_open(path), ("csr",))  # another writer commits in between
        return g

    monkeypatch.setattr(graph_module, "open_graph", open_then_index)
    n = open_graph(graph_dir).entity_type().num_nodes
    with pytest.raises(GraphsysError, match=r"\(indexes rebuilt\); nothing written"):
        write_node_column(graph_dir, "f", "features", lambda a, b: np.ones((b - a, 4)), dim=4)
    monkeypatch.undo()
    fresh = open_graph(graph_dir)
    assert "csr" in fresh.manifest.indexes["default"]
    assert not fresh.entity_type().columns
    assert not list((graph_dir / "nodes").rglob("*column-f*"))
    write_node_column(graph_dir, "f", "features", lambda a, b: np.ones((b - a, 4)), dim=4)
    assert open_graph(graph_dir).mapped_node_column("f").shape == (n, 4)
    verify_graph(graph_dir)


def test_concurrent_index_is_refused_in_one_line(graph_dir, capsys):
    before = (graph_dir / MANIFEST).read_bytes()
    with writer_lock(graph_dir):
        assert cli.main(["index", str(graph_dir)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: another writer holds {graph_dir.absolute()} (pid {os.getpid()}); "
                   f"nothing written: retry when it has finished"]
    assert (graph_dir / MANIFEST).read_bytes() == before
    assert not (graph_dir / "index").exists() or not any((graph_dir / "index").rglob("*"))


def test_killed_holder_leaves_no_stale_lock(graph_dir):
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(graph_dir)],
                              stdout=subprocess.PIPE, text=True, env=ENV)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(GraphsysError, match=f"another writer holds .* \\(pid {holder.pid}\\)"):
            build_index(open_graph(graph_dir), ("csr",))
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=60)
    finally:
        if holder.poll() is None:
            holder.kill()
    assert (graph_dir / LOCK_FILE).exists()  # left behind, but not locked
    assert holder.returncode == -signal.SIGKILL
    assert build_index(open_graph(graph_dir), ("csr",))
    verify_graph(graph_dir)


def test_lock_file_is_not_part_of_the_graph(graph_dir, capsys):
    (graph_dir / LOCK_FILE).write_text("12345\n")  # as a killed writer leaves it
    g = open_graph(graph_dir)
    assert LOCK_FILE not in g.manifest.files
    verify_graph(graph_dir)
    verify_graph(graph_dir, quick=True)
    assert cli.main(["verify", str(graph_dir)]) == 0
    # readers never wait: a held lock does not stop opening, verifying or reading the graph
    with writer_lock(graph_dir):
        assert (graph_dir / LOCK_FILE).read_text() == f"{os.getpid()}\n"
        assert open_graph(graph_dir).num_edges() == g.num_edges()
        verify_graph(graph_dir)
        assert cli.main(["verify", str(graph_dir)]) == 0
    assert not (graph_dir / LOCK_FILE).exists()  # removed by its holder when done
    assert build_index(open_graph(graph_dir), ("csr",))
    assert not (graph_dir / LOCK_FILE).exists()


def test_stale_manifest_is_refused_at_the_lock(graph_dir, tmp_path):
    g = open_graph(graph_dir)
    digest = manifest_digest(g.manifest)
    assert digest == manifest_digest(open_graph(graph_dir).manifest)
    build_index(open_graph(graph_dir), ("csc",))
    with pytest.raises(GraphsysError, match="indexes rebuilt"):
        with writer_lock(graph_dir, g.manifest):
            pass


def test_append_swaps_the_directory_and_the_next_writer_locks_the_new_one(graph_dir,
                                                                          tmp_path):
    """An append replaces the directory (and with it the lock file): later writers lock the
    new file, and a writer never holds a lock on a file the path no longer names."""
    append_edges(graph_dir, [EdgeSource([_edge_file(tmp_path / "y.tsv", 4)], edge_set="y")])
    assert not (graph_dir / LOCK_FILE).exists()
    with writer_lock(graph_dir):
        with pytest.raises(GraphsysError, match="another writer holds"):
            with writer_lock(graph_dir):
                pass


def test_a_lock_on_a_file_the_path_no_longer_names_is_taken_again(graph_dir, monkeypatch):
    """A writer can open ``.lock`` just before its holder removes it (or swaps the whole
    directory): once locked, that file guards nothing, so the writer locks the path again."""
    import graphsys.storage.lock as lock

    real = lock.fcntl.flock
    calls = []

    def flock(fd, op):
        real(fd, op)
        calls.append(fd)
        if len(calls) == 1:  # the path is replaced between open and lock
            os.unlink(graph_dir / LOCK_FILE)
            (graph_dir / LOCK_FILE).write_text("")

    monkeypatch.setattr(lock.fcntl, "flock", flock)
    with writer_lock(graph_dir):
        assert len(calls) == 2
        assert (graph_dir / LOCK_FILE).read_text() == f"{os.getpid()}\n"
    assert not (graph_dir / LOCK_FILE).exists()


def test_current_indexes_need_no_lock(graph_dir):
    """Nothing to build writes nothing, so it takes no lock: it works while another writer
    holds one (and on a graph directory the user may not write to)."""
    build_index(open_graph(graph_dir), ("csr",))
    with writer_lock(graph_dir):
        assert build_index(open_graph(graph_dir), ("csr",)) == {}
        with pytest.raises(GraphsysError, match="another writer holds"):
            build_index(open_graph(graph_dir), ("csr",), force=True)


def test_a_ctrl_c_while_releasing_still_releases_the_lock(graph_dir, monkeypatch):
    """A KeyboardInterrupt landing in the release's unlink once left the lock's descriptor
    open: every later write of the process (a notebook's) was refused naming itself."""
    real_unlink = os.unlink

    def interrupted(path, *a, **kw):
        if str(path).endswith(LOCK_FILE):
            raise KeyboardInterrupt
        return real_unlink(path, *a, **kw)

    monkeypatch.setattr(os, "unlink", interrupted)
    with pytest.raises(KeyboardInterrupt):
        with writer_lock(graph_dir):
            pass
    monkeypatch.setattr(os, "unlink", real_unlink)
    with writer_lock(graph_dir):  # refused "another writer holds ... (pid <this one>)"
        pass


@pytest.mark.parametrize("make, says", [
    (lambda p, victim: p.symlink_to(victim), "a symlink"),
    (lambda p, victim: os.mkfifo(p), "is a FIFO, not a regular file"),
])
def test_a_lock_file_that_is_no_regular_file_is_refused_untouched(graph_dir, tmp_path,
                                                                  make, says):
    # a hostile directory's .lock, a symlink to a file of the user's: the writer truncated
    # it and wrote its pid there; a FIFO gave "error: Invalid argument"
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    make(graph_dir / LOCK_FILE, victim)
    with pytest.raises(GraphsysError, match=f"cannot take the writer lock .*{says}"):
        with writer_lock(graph_dir):
            pass
    assert victim.read_text() == "keep me\n"
    assert os.path.lexists(graph_dir / LOCK_FILE)
