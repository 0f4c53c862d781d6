"""The one per-node result (graphsys.storage.node_values.NodeValues): the BSP run's Result,
the mining counts and the measures' eccentricities are all one, with one set of rules (``k``
checked, ties by internal id, NaN last, one id for ``value``), and the eccentricities'
former bare array still reads as one, with a DeprecationWarning."""

from __future__ import annotations

import numpy as np
import pytest

import graphsys
from graphsys import bsp, measures, mining
from graphsys.errors import ParameterError
from graphsys.storage.node_values import NodeValues


@pytest.fixture
def graph(tmp_path):
    # a triangle 10-20-30 and a path 30-40-50
    return graphsys.from_numpy(np.array([10, 20, 30, 30, 40]), np.array([20, 30, 10, 40, 50]),
                               tmp_path / "g")


def test_every_engine_returns_the_one_type(graph):
    results = [bsp.bfs(graph, 10), mining.triangles(graph), measures.eccentricity(graph)]
    assert all(isinstance(r, NodeValues) for r in results)
    assert [r.to_table().column_names for r in results] == [
        ["node", "value"], ["node", "triangles"], ["node", "eccentricity"]]


@pytest.mark.parametrize("k", [-1, 1.5, "2", True])
def test_top_checks_k_everywhere(graph, k):
    for r in (bsp.bfs(graph, 10), mining.triangles(graph), measures.eccentricity(graph)):
        with pytest.raises(ParameterError, match="k"):
            r.top(k)


def test_top_ties_by_internal_id_nan_last(graph):
    values = np.array([1.0, np.nan, 3.0, 3.0, 0.5])
    nv = NodeValues(values, graph, "score")
    ids = graph.to_original(np.arange(5)).tolist()
    top = nv.top(5)
    assert top[:4] == [(ids[2], 3.0), (ids[3], 3.0), (ids[0], 1.0), (ids[4], 0.5)]
    assert top[4][0] == ids[1]
    assert np.isnan(nv.top(5)[-1][1]) and np.isnan(nv.top(5, largest=False)[-1][1])
    assert nv.top(0) == [] and len(nv.top(99)) == 5


def test_value_takes_one_id(graph):
    t = mining.triangles(graph)
    assert t.value(10) == 1 and t.value(50) == 0
    with pytest.raises(ParameterError, match="original_id"):
        t.value([10, 20])


def test_eccentricity_reads_as_its_former_array_with_a_warning(graph):
    ecc = measures.eccentricity(graph)
    assert ecc.to_dict() == {10: 3, 20: 3, 30: 2, 40: 2, 50: 3}
    assert ecc.top(1, largest=False)[0][1] == 2 and ecc.value(50) == 3
    np.testing.assert_array_equal(np.asarray(ecc), ecc.values)
    with pytest.warns(DeprecationWarning, match=r"\.values"):
        assert ecc.tolist() == ecc.values.tolist()
    with pytest.warns(DeprecationWarning, match=r"\.values"):
        assert ecc[0] == ecc.values[0]
    with pytest.raises(AttributeError):
        ecc.no_such_attribute  # noqa: B018
