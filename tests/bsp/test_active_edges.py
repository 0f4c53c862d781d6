"""Active-edge supersteps out of core (graphsys.bsp.active_edges): with the graph's CSR and
CSC indexes, a frontier superstep with few senders reads only their index rows, and a BFS
level with few unreached vertices only their in-edges; the answers are the streamed
pass's, bit for bit, and the counters are the gathered edges."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphsys import bsp, open_graph
from graphsys.bsp import active_edges
from graphsys.bsp.launch import spawn
from graphsys.errors import FormatError
from graphsys.storage.adjacency_index import build_index
from graphsys.storage.changes import delete_edges

from .conftest import build, to_global

#: (algorithm, its arguments on the test graphs, whether it sends weights)
JOBS = [("bfs", {"schedule": "sync"}, False), ("sssp", {}, True), ("wcc", {}, False)]


@pytest.fixture(autouse=True)
def nothing_kept(monkeypatch):
    """On CUDA too the runs here stream their supersteps, as on the CPU: no device budget
    by default, so no batch is kept, no pass merged and no layout built on the device."""
    from graphsys.bsp import device_stream

    monkeypatch.setattr(device_stream, "RESIDENT_FRACTION", 0.0)


@pytest.fixture
def streamed(monkeypatch):
    """Run ``fn`` with the active-edge pass switched off: the streamed answer."""
    def run(fn, *args, **kwargs):
        monkeypatch.setattr(active_edges, "ACTIVE_EDGES", False)
        try:
            return fn(*args, **kwargs)
        finally:
            monkeypatch.setattr(active_edges, "ACTIVE_EDGES", True)
    return run


def _run(name, g, kwargs, backend, device="cpu", source=0):
    fn = getattr(bsp, name)
    args = (g,) if name == "wcc" else (g, source)
    return fn(*args, mode="out-of-core", backend=backend, device=device, **kwargs)


@pytest.mark.parametrize("key", ["directed-p3", "undirected-p3", "directed-p1"])
@pytest.mark.parametrize("backend", [pytest.param("numba", marks=pytest.mark.host), "torch"])
@pytest.mark.parametrize("name,kwargs,weighted", JOBS)
def test_same_answer_as_the_stream_and_memory(indexed, streamed, key, backend, name, kwargs,
                                              weighted, device):
    """On the test device for the torch rows (on CUDA: the gathered rows copied through
    the pinned staging buffer, the senders expanded there)."""
    g = indexed[key]
    res = _run(name, g, kwargs, backend, device)
    ref = streamed(_run, name, g, kwargs, backend, device)
    np.testing.assert_array_equal(res.values, ref.values)  # min: no order to differ in
    mem = getattr(bsp, name)(*((g,) if name == "wcc" else (g, 0)), mode="memory")
    np.testing.assert_array_equal(res.values, mem.values)
    assert not any(s.direction == "active" for s in ref.stats.supersteps)
    # the first superstep of a search has one sender: its row alone is read
    if name != "wcc":
        first = res.stats.supersteps[0]
        assert first.direction == "active"
        deg = int(np.diff(g.csr().indptr)[int(g.to_internal([0])[0])])  # its out-edges
        assert first.edges_scanned == first.messages_sent == deg
        assert first.bytes_read == deg * 4 * (1 + weighted) + active_edges.SENDER_BYTES


def test_chain_reads_one_row_a_level(tmp_path, streamed):
    """A path of 2,000 vertices over 4 partitions: the stream reads every bucket of the
    sender's partition each level; the active pass its one edge."""
    chain = np.arange(2000)
    tg = build(tmp_path, "chain", chain[:-1], chain[1:], num_nodes=2000, partitions=4)
    build_index(tg.graph, ("csr", "csc"))
    g = open_graph(tg.path)
    res = bsp.bfs(g, 0, mode="out-of-core", schedule="sync")
    ref = streamed(bsp.bfs, g, 0, mode="out-of-core", schedule="sync")
    steps = res.stats.supersteps
    assert len(steps) == 2000 and all(s.edges_scanned <= 1 for s in steps)
    # the senders' rows, but for the last level: every vertex reached, no row to pull
    assert {s.direction for s in steps[:-1]} == {"active"}
    assert steps[-1].direction == "active-pull" and steps[-1].bytes_read == 0
    read = sum(s.bytes_read for s in steps)
    assert read == 1999 * 4 + 1999 * active_edges.SENDER_BYTES
    assert read * 10 < sum(s.bytes_read for s in ref.stats.supersteps)
    np.testing.assert_array_equal(res.values, ref.values)


@pytest.mark.parametrize("backend", ["numba", "torch"])
def test_a_wide_frontier_streams(indexed, backend):
    """WCC's first supersteps send from every vertex (no frontier pass at all); a BFS
    level whose senders' edges cost more than a quarter of the buckets streams them."""
    g = indexed["directed-p1"]
    res = bsp.wcc(g, mode="out-of-core", backend=backend)
    assert res.stats.supersteps[0].direction == "stream"
    bfs = bsp.bfs(g, 0, mode="out-of-core", backend=backend, schedule="sync")
    m = g.num_edges()
    for s in bfs.stats.supersteps:
        if s.direction == "stream":  # the rule chose the buckets
            assert s.edges_scanned == m
        else:
            assert s.bytes_read * active_edges.RATIO <= m * 8


@pytest.mark.parametrize("backend", ["numba", "torch"])
def test_no_index_or_a_sum_streams(graphs, indexed, backend):
    """Without the index the buckets are streamed; so are a sum's messages (another order
    would round them otherwise), and the path is off where the switch is."""
    plain = graphs["directed-p3"].graph
    res = bsp.bfs(plain, 0, mode="out-of-core", backend=backend, schedule="sync")
    assert {s.direction for s in res.stats.supersteps} == {"stream"}

    class Sum(bsp.BFS):
        combiner = "sum"

    g = indexed["directed-p3"]
    res = bsp.run(g, Sum(0), mode="out-of-core", backend=backend, max_iters=3)
    assert "active" not in {s.direction for s in res.stats.supersteps}


def test_a_view_streams(tmp_path):
    """After a deletion the default edge set is a view (the stored edges less a delete
    set), whose index is merged in memory, not stored: its supersteps stream, with the
    deleted edge gone."""
    chain = np.arange(400)  # a path and one shortcut, 0 -> 399
    src, dst = np.append(chain[:-1], 0), np.append(chain[1:], 399)
    tg = build(tmp_path, "g", src, dst, num_nodes=400, partitions=2)
    build_index(tg.graph, ("csr", "csc"))
    g = open_graph(tg.path)
    res = bsp.bfs(g, 0, mode="out-of-core", schedule="sync")
    assert res.stats.supersteps[0].direction == "active"
    assert res.values[to_global(tg, 399)] == 1.0
    delete_edges(tg.path, [0], [399])
    g = open_graph(tg.path)
    res = bsp.bfs(g, 0, mode="out-of-core", schedule="sync")
    assert "active" not in {s.direction for s in res.stats.supersteps}
    assert res.values[to_global(tg, 399)] == 399.0


def test_gather_rows_against_slicing():
    """The kernel's rows are the index's slices, senders in order, weights beside them."""
    rng = np.random.default_rng(3)
    deg = rng.integers(0, 6, 50)
    indptr = np.concatenate([[0], np.cumsum(deg)]).astype(np.int64)
    indices = rng.integers(0, 50, int(indptr[-1])).astype(np.int32)
    weight = rng.random(len(indices)).astype(np.float32)

    class Mapped:
        pass

    mapped = Mapped()
    mapped.indptr, mapped.indices, mapped.weight = indptr, indices, weight
    lo = 10
    index = active_edges.ActiveEdges(mapped, lo)
    senders = np.array([0, 3, 4, 17, 39], np.int64)
    counts = index.counts(senders)
    got = index.gather(senders, counts, True, True)
    rows = [np.arange(indptr[s + lo], indptr[s + lo + 1]) for s in senders]
    want = np.concatenate(rows)
    np.testing.assert_array_equal(got.dst, indices[want])
    np.testing.assert_array_equal(got.weight, weight[want])
    np.testing.assert_array_equal(got.src, np.repeat(senders, counts))
    mapped.weight = None  # unweighted: weight 1 each
    assert (index.gather(senders, counts, False, True).weight == 1).all()
    # the ids are checked as they are read: one past the nodes is refused in one line
    mapped.indices = indices.copy()
    mapped.indices[indptr[lo + 17]] = 50
    with pytest.raises(FormatError, match=r"^index: neighbour id out of range \[0, 50\) "):
        index.gather(senders, counts, False, False)


def test_a_corrupt_index_is_refused_by_the_run(graphs, tmp_path):
    """A stored index whose id in the source's row was overwritten past the nodes (its
    hash not verified): the first active superstep, which reads that row, refuses it in
    one line naming the file."""
    import shutil

    from graphsys.storage.column_file import data_offset
    from graphsys.storage.format import index_file

    path = tmp_path / "g"
    shutil.copytree(graphs["directed-p3"].path, path)
    build_index(open_graph(path), ("csr", "csc"))
    g = open_graph(path)
    at = int(g.index_offsets(None, "csr")[int(g.to_internal([0])[0])])
    f = path / index_file(g.edge_set(None).name, "csr", "indices")
    arr = np.memmap(f, dtype=np.int32, mode="r+", offset=data_offset(f), shape=(at + 1,))
    arr[at] = 2**30
    arr.flush()
    del arr
    with pytest.raises(FormatError, match=f"^{f}: neighbour id out of range"):
        bsp.bfs(open_graph(path), 0, mode="out-of-core", schedule="sync")


def test_device_copies_expand_the_senders():
    """:func:`to_device` (CPU: no copies) gives each edge its sender and target."""
    g = active_edges.Gathered(np.array([2, 5]), np.array([2, 1]), np.zeros(0, np.int32),
                              np.array([7, 8, 9], np.int32), None)
    staging = active_edges.Staging(torch.device("cpu"))
    staging.begin(active_edges.words(3, 2, False))
    [(src, dst, w)] = active_edges.to_device([g], torch.device("cpu"), staging)
    staging.end()
    assert src.tolist() == [2, 2, 5] and dst.tolist() == [7, 8, 9] and w is None
    assert staging.moved == 0


@pytest.mark.slow("ci")  # a 2-process gloo run
def test_two_processes_same_answer(indexed):
    """Each rank reads its own senders' rows; the exchange is the stream's."""
    g = indexed["directed-p3"]
    jobs = [("bfs", (0,), {}), ("sssp", (2,), {}), ("wcc", (), {})]
    for (name, args, _), (values, _stats) in zip(jobs, spawn(g.path, jobs, world_size=2)):
        ref = getattr(bsp, name)(g, *args)
        np.testing.assert_array_equal(values, ref.values, err_msg=name)


def test_staging_protocol_with_a_fake_cuda(monkeypatch):
    """The CUDA branch of :class:`Staging` on the CPU: every array goes through the one
    page-locked buffer (here a plain one), the bytes are counted, and a superstep's writes
    wait for the event of the previous one's copies."""
    from graphsys.bsp import device_stream

    log = []

    class Event:
        def record(self):
            log.append("record")

        def synchronize(self):
            log.append("synchronize")

    monkeypatch.setattr(device_stream, "host_buffer", lambda n, pin: (
        log.append(("buffer", n, pin)), torch.empty(n, dtype=torch.int32))[1])
    monkeypatch.setattr(torch.cuda, "Event", Event)
    staging = active_edges.Staging(torch.device("cpu"))
    staging.cuda = True  # the CUDA branch, copying to the CPU
    for _ in range(2):
        g = active_edges.Gathered(np.array([1, 4]), np.array([1, 2]), np.zeros(0, np.int32),
                                  np.array([5, 6, 7], np.int32),
                                  np.array([0.5, 1.5, 2.5], np.float32))
        staging.begin(active_edges.words(3, 2, True))
        [(src, dst, w)] = active_edges.to_device([g], torch.device("cpu"), staging)
        staging.end()
        assert src.tolist() == [1, 4, 4] and dst.tolist() == [5, 6, 7]
        assert w.dtype == torch.float32 and w.tolist() == [0.5, 1.5, 2.5]
    assert staging.moved == 2 * (3 * 4 + 3 * 4 + 2 * 4 + 2 * 4)
    assert log == [("buffer", 1 << 16, True), "record", "synchronize", "record"]


@pytest.fixture(scope="module")
def rmat(tmp_path_factory):
    """A seeded R-MAT graph (4,096 ids, 65,536 edges, 4 partitions) with its CSR and CSC
    indexes, and the highest out-degree vertex: a BFS from it reaches most vertices in
    two levels, leaving few unreached."""
    import graphsys
    from graphsys.generators import rmat_edges

    chunks = list(rmat_edges(1 << 12, 1 << 16, seed=3))
    src = np.concatenate([c["src"] for c in chunks])
    dst = np.concatenate([c["dst"] for c in chunks])
    g = graphsys.from_numpy(src, dst, tmp_path_factory.mktemp("rmat") / "g", partitions=4)
    build_index(g, ("csr", "csc"))
    g = open_graph(g.path)
    hub = int(g.to_original([int(np.argmax(g.degrees(None, "out")))])[0])
    return g, hub


@pytest.mark.parametrize("backend", [pytest.param("numba", marks=pytest.mark.host), "torch"])
def test_unreached_targets_pull_their_in_edges(rmat, streamed, backend, device):
    """Once the unreached vertices' in-edges cost less than the senders' out-edges and the
    stream, a BFS level gathers those in-edges (``active-pull``): exactly theirs, the
    in-neighbours on the frontier sending; the levels of the stream and of memory."""
    g, hub = rmat
    res = bsp.bfs(g, hub, mode="out-of-core", schedule="sync", backend=backend,
                  device=device)
    ref = streamed(bsp.bfs, g, hub, mode="out-of-core", schedule="sync", backend=backend,
                   device=device)
    np.testing.assert_array_equal(res.values, ref.values)
    np.testing.assert_array_equal(res.values, bsp.bfs(g, hub).values)
    indeg = g.degrees(None, "in")
    pulls = [s for s in res.stats.supersteps if s.direction == "active-pull"]
    assert pulls
    for s in pulls:  # before level s.superstep + 1: the vertices past level s.superstep
        unreached = ~(res.values <= s.superstep)
        assert s.edges_scanned == int(indeg[unreached].sum())
        assert s.bytes_read == active_edges.read_bytes(s.edges_scanned,
                                                       int(unreached.sum()), False)
    assert sum(s.bytes_read for s in res.stats.supersteps) * 2 < sum(
        s.bytes_read for s in ref.stats.supersteps)


def test_a_pull_needs_forward_messages_and_one_process(rmat, monkeypatch):
    """Without targets to accept (SSSP) or with its index missing, no level pulls."""
    g, hub = rmat
    res = bsp.sssp(g, hub, mode="out-of-core")
    assert "active-pull" not in {s.direction for s in res.stats.supersteps}
    real = active_edges.Passes.index
    monkeypatch.setattr(active_edges.Passes, "index",
                        lambda self, reverse: None if reverse else real(self, reverse))
    res = bsp.bfs(g, hub, mode="out-of-core", schedule="sync")
    assert {s.direction for s in res.stats.supersteps} <= {"active", "stream"}
    assert "active" in {s.direction for s in res.stats.supersteps}


def test_an_active_superstep_moves_its_rows_once(rmat):
    """Counted with the device emulated on the CPU: a BFS level of one sender reads the
    frontier back once (the one synchronisation), uploads its gathered rows in three
    copies (targets, the sender's id, its count) and launches 9 ops; a pulled level also
    reads the accepted targets back, sends the in-edges of senders off the frontier to a
    spare target rather than compacting them out (two synchronisations a pass before),
    and reads its count of messages sent once."""
    from graphsys.analysis.device_counts import DeviceWorkCounter
    from graphsys.bsp.algorithms.traversal import BFS
    from graphsys.bsp.engine import open_edges

    g, hub = rmat
    source = int(g.to_internal([hub])[0])
    edges = open_edges(g, g.edge_set(None).name, BFS(source), torch.device("cpu"), "torch",
                       mode="out-of-core")
    n = g.num_nodes()
    x = torch.full((n,), torch.inf, dtype=torch.float64)
    x[source] = 1.0
    active = torch.zeros(n, dtype=torch.bool)
    active[source] = True
    try:
        with DeviceWorkCounter(device_tensors=[x, active]) as c:
            res = edges.run(x, active, 1, None)
        assert res.direction == "active"
        assert [k for k, _ in c.records] == ["d2h", "h2d", "h2d", "h2d"] and c.syncs == 1
        assert c.launches == 9
        accept = torch.zeros(n, dtype=torch.bool)
        accept[:5] = True  # five unreached targets: their in-edges are the cheaper pass
        active[:] = True
        active[0] = False  # a frontier of every vertex but one: no push is cheap
        with DeviceWorkCounter(device_tensors=[x, active, accept]) as c:
            res = edges.run(x, active, n - 1, accept)
        assert res.direction == "active-pull"
        assert [k for k, _ in c.records] == ["d2h", "d2h", "h2d", "h2d", "h2d", "d2h"]
        assert c.syncs == 3
    finally:
        edges.close()
