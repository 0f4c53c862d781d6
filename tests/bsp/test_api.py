"""The public face of graphsys.bsp: every algorithm takes the engine's options as explicit
keyword parameters (no ``**kwargs``) with :func:`graphsys.bsp.run`'s defaults, and
documents each of them in numpydoc sections."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

from graphsys import bsp
from graphsys.bsp.docstrings import ENGINE_OPTIONS

ALGORITHMS = [bsp.pagerank, bsp.personalized_pagerank, bsp.bfs, bsp.sssp, bsp.wcc, bsp.kcore,
              bsp.hits, bsp.label_propagation, bsp.scc, bsp.betweenness, bsp.closeness,
              bsp.harmonic, bsp.louvain, bsp.leiden]


@pytest.mark.parametrize("func", ALGORITHMS, ids=lambda f: f.__name__)
def test_engine_options_are_explicit_keywords(func):
    params = inspect.signature(func).parameters
    run = inspect.signature(bsp.run).parameters
    assert not any(p.kind is p.VAR_KEYWORD for p in params.values())
    for name in (*ENGINE_OPTIONS, "max_iters"):
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY, name
        if name != "max_iters":  # None: the algorithm's own default
            assert params[name].default == run[name].default, name
    if "schedule" in params:  # the algorithms with a whole-graph method or a work list
        assert func not in (bsp.pagerank, bsp.personalized_pagerank)


@pytest.mark.parametrize("func", [*ALGORITHMS, bsp.run], ids=lambda f: f.__name__)
def test_docstring_documents_every_parameter(func):
    doc = inspect.getdoc(func)
    for section in ("Parameters\n----------", "Returns\n-------", "Examples\n--------",
                    "References\n----------"):
        assert section in doc, section
    assert "%(" not in doc and "Args:" not in doc
    for name in inspect.signature(func).parameters:
        assert f"\n{name} : " in doc or f"\n{name}, " in doc, name


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    import numpy as np

    import graphsys

    src, dst = np.array([1, 2, 3, 3, 4, 5]), np.array([2, 3, 1, 4, 5, 4])
    return graphsys.from_numpy(src, dst, tmp_path_factory.mktemp("api") / "g")


@pytest.mark.parametrize("func", ALGORITHMS, ids=lambda f: f.__name__)
def test_front_ends_pass_one_execution_to_the_engine(func, small, monkeypatch):
    """Each front-end builds one Execution of its keywords, and the engine runs with it:
    the threads, the mode and the progress callable (called with each superstep's stats)."""
    from graphsys.bsp import engine
    from graphsys.execution import Execution

    seen, calls = [], []

    def of(execution, **given):
        seen.append(Execution.of(execution, **given))
        return seen[-1]

    def report(stats):
        calls.append(stats)

    monkeypatch.setattr(engine, "Execution", type("Spy", (), {"of": staticmethod(of)}))
    first = {bsp.bfs: (1,), bsp.sssp: (1,), bsp.personalized_pagerank: ([1],)}.get(func, ())
    result = func(small, *first, mode="memory", threads=1, progress=report)
    assert [(e.mode, e.threads, e.progress) for e in seen] == [("memory", 1, report)]
    assert calls == result.stats.supersteps and calls


def test_progress_true_shows_the_supersteps(small, monkeypatch, capsys):
    """``progress=True`` on a BSP call: graphsys's display (a line off a terminal), the same
    ranks as a quiet run."""
    from graphsys import progress

    monkeypatch.setattr(progress, "interval", lambda: 0.0)
    shown = bsp.pagerank(small, progress=True, fuse=False)
    n = shown.stats.num_supersteps
    assert f"pagerank: {n}/100 superstep" in capsys.readouterr().err
    assert shown.to_dict() == bsp.pagerank(small, fuse=False).to_dict()


def test_an_execution_with_a_memory_limit_is_refused_not_ignored(small):
    """The BSP engine has no memory limit: an Execution carrying one (built for mining, say)
    is refused in one line rather than run without it."""
    from graphsys.bsp.algorithms.pagerank import PageRank
    from graphsys.errors import ParameterError
    from graphsys.execution import Execution

    with pytest.raises(ParameterError, match="memory_limit is not an option of the BSP engine"):
        bsp.run(small, PageRank(), execution=Execution(memory_limit=1 << 30))


def test_in_memory_cpu_runs_import_no_torch(tmp_path):
    """The built-ins with a whole-graph numba method keep NumPy state on the CPU in memory:
    a process that runs them never imports torch (its import is most of a first call)."""
    code = ("import sys, numpy as np, graphsys\nfrom graphsys import bsp\n"
            "rng = np.random.default_rng(0)\n"
            f"g = graphsys.from_numpy(rng.integers(0, 60, 400), rng.integers(0, 60, 400), "
            f"{str(tmp_path / 'g')!r})\n"
            "for run in (bsp.pagerank, bsp.wcc, bsp.scc, bsp.kcore, bsp.hits, bsp.louvain, "
            "bsp.leiden, lambda g: bsp.bfs(g, 0)):\n"
            "    run(g)\n"
            "print('torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["False"]


@pytest.mark.parametrize(("func", "args", "kwargs", "message"), [
    (bsp.bfs, ([1, 2],), {}, "source must be one node id, got \\[1, 2\\]"),
    (bsp.sssp, ([1],), {}, "source must be one node id, got \\[1\\]"),
    (bsp.personalized_pagerank, ([[1, 2]],), {}, "source must be one node id, got \\[1, 2\\]"),
    (bsp.betweenness, (), {"sources": [[1, 2]]}, "one per item; got nested values"),
    (bsp.closeness, (), {"sources": [[1], [2]]}, "one per item; got nested values"),
])
def test_a_source_that_is_not_one_id_is_refused_in_one_line(small, func, args, kwargs,
                                                             message):
    """A list where one source is meant, or a nested list of sources, is a one-line
    ParameterError or GraphsysError (it was NumPy's ValueError from the id lookup)."""
    from graphsys.errors import GraphsysError

    with pytest.raises(GraphsysError, match=message):
        func(small, *args, **kwargs)


@pytest.mark.parametrize(("func", "kwargs"), [
    (bsp.louvain, {}), (bsp.leiden, {}), (bsp.betweenness, {"k": 2}),
    (bsp.closeness, {"k": 2}), (bsp.harmonic, {"k": 2}),
])
def test_a_negative_seed_is_refused_in_one_line(small, func, kwargs):
    """numpy.random.default_rng takes no negative seed: the front-ends refuse one as a
    ParameterError naming ``seed`` (it was NumPy's 'expected non-negative integer')."""
    from graphsys.errors import ParameterError

    with pytest.raises(ParameterError, match="seed must be a non-negative integer, got -1"):
        func(small, seed=-1, **kwargs)


def test_a_change_set_named_alone_is_refused_not_read_as_edges(tmp_path):
    """A delete set's pairs are what goes, not edges: edge_set="delete-1" (or a list of it
    alone) is refused in one line by the front-ends, bsp.run and modularity (each ran on
    the deleted pair 0 -> 1 as the graph's one edge); with its target it reads the
    changed graph."""
    import numpy as np

    import graphsys
    from graphsys.errors import GraphsysError
    from graphsys.storage.changes import delete_edges

    g = graphsys.from_numpy(np.array([0, 1, 2]), np.array([1, 2, 0]), tmp_path / "g",
                            num_nodes=4)
    name = delete_edges(g.path, [0], [1]).edge_set
    g = graphsys.open_graph(g.path)
    for run in (lambda es: bsp.wcc(g, edge_set=es), lambda es: bsp.pagerank(g, edge_set=es),
                lambda es: bsp.modularity(g, np.zeros(4), edge_set=es),
                lambda es: bsp.bfs(g, 0, edge_set=es, mode="out-of-core")):
        for alone in (name, [name]):
            with pytest.raises(GraphsysError, match=f"edge set '{name}' changes 'default'"):
                run(alone)
    assert bsp.bfs(g, 0, edge_set=f"default,{name}").to_dict() == {
        0: 0.0, 1: np.inf, 2: np.inf, 3: np.inf}


def test_every_reader_of_edges_refuses_a_change_set_named_alone(tmp_path):
    """Graph.edge_set is where the rule lives, so mining, measures, samplers and the Graph
    API's edge readers refuse it too (each read the deleted pair as an edge); the pairs
    stay readable as stored through Graph.bucket, which the readers of changes use."""

    import graphsys
    from graphsys import measures, mining
    from graphsys.errors import GraphsysError
    from graphsys.sampling import NeighborSampler
    from graphsys.storage.changes import delete_edges

    g = graphsys.from_numpy([0, 1, 2, 0, 3], [1, 2, 0, 2, 0], tmp_path / "g", undirected=True)
    name = delete_edges(g.path, [0], [1]).edge_set
    g = graphsys.open_graph(g.path)
    for read in (lambda: mining.triangles(g, edge_set=name), lambda: g.degrees(edge_set=name),
                 lambda: measures.density(g, edge_set=name), lambda: g.csr(edge_set=name),
                 lambda: list(g.iter_edges(edge_set=name)),
                 lambda: NeighborSampler(g, [2], edge_set=name)):
        with pytest.raises(GraphsysError, match=f"edge set '{name}' changes 'default'"):
            read()
    assert g.bucket(0, 0, name).num_edges == 2               # 0 -> 1 and its reverse
    assert mining.transitivity(g) == 0.0                      # the changed graph: no triangle


def test_a_refused_source_is_named_on_one_line(small, tmp_path):
    """An Arrow array where one source is meant (what ``to_original`` returns for a
    graph with string ids) is refused in one line, its multi-line repr folded; so is an
    id lookup of one on a graph with string ids."""
    import pyarrow as pa

    import graphsys
    from graphsys.errors import GraphsysError

    with pytest.raises(GraphsysError) as caught:
        bsp.bfs(small, pa.array([1]))
    assert "\n" not in str(caught.value) and "source must be one node id" in str(caught.value)
    named = graphsys.from_arrow(pa.table({"src": ["a", "b"], "dst": ["b", "c"]}),
                                tmp_path / "s")
    with pytest.raises(GraphsysError) as caught:
        named.to_internal([named.to_original(0)])
    assert "\n" not in str(caught.value) and "are strings" in str(caught.value)


def test_a_typed_graph_is_refused_before_its_source_is_looked_up(tmp_path):
    # bfs(g, 0) and profile bfs said "graph has entity types [...]: name one", though no
    # algorithm takes a type
    import pyarrow as pa

    from graphsys.analysis.workloads import make_program
    from graphsys.errors import GraphsysError
    from graphsys.storage.format import RelationType
    from graphsys.storage.graph import open_graph
    from graphsys.storage.ingest import EdgeSource, IngestOptions, NodeSource, ingest_sources

    ingest_sources([EdgeSource(table=pa.table({"src": [0], "dst": [1]}), relation="r")],
                   tmp_path / "g", IngestOptions(relation_types=[RelationType("r", "u", "i")]),
                   nodes=[NodeSource(pa.table({"id": [0]}), "u"),
                          NodeSource(pa.table({"id": [0, 1]}), "i")])
    g = open_graph(tmp_path / "g")
    for call in (lambda: bsp.bfs(g, 0), lambda: bsp.personalized_pagerank(g, [0, 1]),
                 lambda: bsp.betweenness(g, sources=[0]), lambda: bsp.pagerank(tmp_path / "g"),
                 lambda: make_program(g, "bfs", source=0)):   # what graphsys profile runs
        with pytest.raises(GraphsysError, match="^the BSP engine needs a graph of one entity "
                                                "type; .* has 2 \\(u, i\\)$"):
            call()
