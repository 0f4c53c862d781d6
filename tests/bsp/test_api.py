"""The public face of graphsys.bsp: every algorithm takes the engine's options as explicit
keyword parameters (no ``**kwargs``) with :func:`graphsys.bsp.run`'s defaults, and
documents each of them in numpydoc sections."""

from __future__ import annotations

import inspect

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
