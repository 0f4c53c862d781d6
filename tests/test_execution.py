"""graphsys.execution: one frozen options object, each field checked in one place with a
one-line error; :meth:`Execution.of` takes it or a front-end's keywords, never both; the one
docstring template."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from graphsys import Execution
from graphsys.errors import ParameterError
from graphsys.execution import fill_doc


def test_defaults_and_frozen():
    run = Execution()
    assert (run.mode, run.device, run.backend, run.threads, run.memory_limit,
            run.distributed, run.progress) == ("auto", "cpu", "auto", None, None, False, False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.threads = 2
    assert Execution(device="cuda:1", threads=2, memory_limit=1 << 20).device == "cuda:1"
    assert Execution(progress=None).progress is False
    assert Execution(progress=print).progress is print


@pytest.mark.parametrize("field, value", [
    ("mode", "disk"), ("device", "tpu"), ("device", "cuda:x"), ("backend", "cupy"),
    ("threads", 0), ("threads", True), ("threads", 1.5), ("memory_limit", -1),
    ("memory_limit", "1GB"), ("distributed", 1), ("progress", 3), ("progress", "yes")])
def test_every_field_is_checked_in_one_line(field, value):
    with pytest.raises(ParameterError, match=f"^{field} ") as err:
        Execution(**{field: value})
    assert "\n" not in str(err.value) and err.value.parameter == field


def test_of_takes_the_object_or_the_keywords_not_both():
    run = Execution(mode="memory", threads=2)
    assert Execution.of(run, mode="auto", threads=None, progress=None) is run
    assert Execution.of(None, mode="memory", threads=2) == run
    with pytest.raises(ParameterError, match="execution given with threads"):
        Execution.of(run, threads=4)
    with pytest.raises(ParameterError, match="must be an Execution, got dict"):
        Execution.of({"mode": "memory"})


def test_on_cpu_refuses_a_gpu_run():
    assert Execution(device="auto").on_cpu("mining").device == "auto"
    with pytest.raises(ParameterError, match="mining runs on the CPU"):
        Execution(device="cuda").on_cpu("mining")
    with pytest.raises(ParameterError, match="mining runs on the CPU"):
        Execution(backend="torch").on_cpu("mining")


def test_fill_doc_indents_each_section_like_its_line():
    @fill_doc(opts="a : int\n    The a.\n\nb : int")
    def f():
        """Doc.

        Parameters
        ----------
        %(opts)s
        %(other)s
        """

    assert f.__doc__.splitlines()[4:8] == ["        a : int", "            The a.", "",
                                           "        b : int"]
    assert "%(other)s" in f.__doc__  # a name it was not given is left alone


def _plain(answer):
    """An answer as comparable plain data (arrays, the results' values, iterators listed)."""
    if hasattr(answer, "values") and not isinstance(answer, dict):
        return _plain(answer.values)
    if isinstance(answer, np.ndarray):
        return answer.tolist()
    if isinstance(answer, (tuple, list)) or hasattr(answer, "__next__"):
        return [_plain(a) for a in answer]
    if hasattr(answer, "__dict__"):  # a result's fields (its graph compared as itself)
        return {k: v if hasattr(v, "node_ids") else _plain(v) for k, v in vars(answer).items()}
    return answer


#: Every front-end of mining and measures with an option of :class:`Execution`: (function,
#: its arguments, its keywords equal to ``Execution(threads=1, mode="memory")``, a keyword
#: given with ``execution=`` to be refused)
FRONT_ENDS = [
    *[(f"mining.{name}", (), {"mode": "memory", "threads": 1}, {"mode": "auto", "threads": 2})
      for name in ("triangle_stats", "triangle_count", "triangles", "clustering",
                   "average_clustering", "transitivity")],
    *[(f"mining.{name}", args, {"threads": 1}, {"threads": 2}) for name, args in (
        ("triad_census", ()), ("clique_count", (3,)), ("clique_counts", (3,)),
        ("motifs", (4,)), ("count", ("triangle",)))],
    *[(f"mining.{name}", args, {}, {"memory_limit": 1 << 30}) for name, args in (
        ("triangle_work", ()), ("cliques", (3,)), ("matches", ("wedge",)),
        ("iter_matches", ("triangle",)), ("frequent_subgraphs", ([0, 1, 0, 1, 0, 1], 2)))],
    *[(f"measures.{name}", (), {}, {"progress": True})
      for name in ("diameter", "eccentricity", "top_links")],
]


@pytest.mark.parametrize("name, args, keywords, refused", FRONT_ENDS,
                         ids=[f[0] for f in FRONT_ENDS])
def test_one_execution_runs_every_front_end(tmp_path, name, args, keywords, refused):
    """``execution=Execution(threads=1, mode="memory")`` gives the keywords' answer on every
    front-end of mining and measures; given with one of those keywords it is refused in
    one line."""
    import graphsys
    from graphsys import measures, mining

    module, func = name.split(".")
    fn = getattr({"mining": mining, "measures": measures}[module], func)
    g = graphsys.from_numpy(np.array([0, 1, 2, 0, 3, 3, 4]), np.array([1, 2, 0, 3, 1, 4, 5]),
                            tmp_path / "g")
    run = Execution(threads=1, mode="memory")
    assert _plain(fn(g, *args, execution=run)) == _plain(fn(g, *args, **keywords))
    with pytest.raises(ParameterError, match="^execution given with ") as err:
        fn(g, *args, execution=run, **refused)
    assert "\n" not in str(err.value)


def test_in_memory_refuses_what_it_cannot_run():
    """A front-end that runs in memory on the CPU refuses an Execution out of core, on
    CUDA, or setting an option it has none of, in one line."""
    run = Execution(mode="memory", threads=2)
    assert run.in_memory("listing", "distributed", "progress") is run
    for bad, match in ((Execution(mode="out-of-core"), "^mode listing runs in memory"),
                       (Execution(device="cuda"), "^device listing runs on the CPU"),
                       (Execution(distributed=True), "^distributed is not an option of"),
                       (Execution(progress=True), "^progress is not an option of")):
        with pytest.raises(ParameterError, match=match):
            bad.in_memory("listing", "distributed", "progress")


def _spy_threads(monkeypatch):
    """The numba thread counts seen each time a call opens an edge set (every front-end
    does, from within the call)."""
    import numba

    from graphsys.storage.graph import Graph

    seen, edge_set = [], Graph.edge_set

    def spy(self, *args, **kwargs):
        seen.append(numba.get_num_threads())
        return edge_set(self, *args, **kwargs)

    monkeypatch.setattr(Graph, "edge_set", spy)
    return seen


@pytest.mark.parametrize("name, args", [(f[0], f[1]) for f in FRONT_ENDS] + [
    ("bsp.run", ()), ("bsp.spec", ())], ids=[f[0] for f in FRONT_ENDS] + ["bsp.run", "bsp.spec"])
def test_threads_hold_inside_every_call_and_are_restored(tmp_path, monkeypatch, name, args):
    """``Execution(threads=1)`` is numba's thread count inside every front-end taking
    ``execution=`` (one this many threads asks for no ``threads`` keyword of its own),
    and the count before the call is back after it."""
    import numba

    import graphsys
    from graphsys import bsp, measures, mining
    from graphsys.plugins import ALGORITHMS

    most = numba.config.NUMBA_NUM_THREADS
    if most < 2:
        pytest.skip("numba runs one thread here: threads=1 changes nothing")
    g = graphsys.from_numpy(np.array([0, 1, 2, 0, 3, 3, 4]), np.array([1, 2, 0, 3, 1, 4, 5]),
                            tmp_path / "g")
    run = Execution(threads=1, mode="memory")
    fn = {"bsp.run": lambda g, execution: bsp.run(g, bsp.PageRank(), execution=execution),
          "bsp.spec": lambda g, execution: ALGORITHMS.get("wcc").run(g, execution=execution)
          }.get(name)
    if fn is None:
        module, func = name.split(".")
        fn = getattr({"mining": mining, "measures": measures}[module], func)
    seen = _spy_threads(monkeypatch)
    numba.set_num_threads(most)
    try:
        answer = fn(g, *args, execution=run)
        if hasattr(answer, "__next__"):
            list(answer)
        assert seen and set(seen) == {1}
        assert numba.get_num_threads() == most
    finally:
        numba.set_num_threads(most)


@pytest.mark.parametrize("name", ["measures.diameter", "measures.eccentricity",
                                  "measures.top_links", "mining.triangle_work",
                                  "mining.cliques"])
def test_a_tiny_memory_limit_is_refused_by_a_call_that_builds_a_view(tmp_path, name):
    """``memory_limit`` bounds the view a call builds in RAM: a build over it is refused in
    one line, whichever front-end asked for it."""
    import graphsys
    from graphsys import measures, mining
    from graphsys.errors import GraphsysError

    module, func = name.split(".")
    fn = getattr({"mining": mining, "measures": measures}[module], func)
    g = graphsys.from_numpy(np.array([0, 1, 2, 0]), np.array([1, 2, 0, 3]), tmp_path / "g")
    args = (3,) if func == "cliques" else ()
    with pytest.raises(GraphsysError, match="more than the 16 bytes of memory_limit") as err:
        fn(g, *args, execution=Execution(memory_limit=16))
    assert "\n" not in str(err.value)
