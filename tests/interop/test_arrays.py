"""from_numpy / from_arrow: in-memory edges through the ingest passes."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import graphsys
from graphsys.errors import InputError, ParameterError
from graphsys.storage.verify import verify_graph


def _edges(g):
    return sorted(zip(*(np.concatenate(c).tolist() for c in
                        zip(*[(s, d) for s, d, _, _ in g.iter_edges()]))))


@pytest.mark.parametrize("partitions", [1, 3])
def test_from_numpy_keeps_edges_isolated_nodes_and_columns(tmp_path, partitions):
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 40, 200), rng.integers(0, 40, 200)
    x = rng.normal(size=(45, 4)).astype(np.float32)
    y = rng.integers(0, 3, 45)
    g = graphsys.from_numpy(src, dst, tmp_path / "g", num_nodes=45,
                            node_columns={"feat": x, "label": y, "m": y > 0},
                            partitions=partitions)
    assert g.num_nodes() == 45 and g.num_edges() == 200       # nodes 40..44 are isolated
    assert g.manifest.metadata["source"] == "numpy"
    order = np.argsort(g.node_ids())                           # internal -> original rows
    ids = g.node_ids()
    assert np.array_equal(g.node_column("feat")[order], x)
    assert np.array_equal(g.node_column("label")[order], y)
    got = sorted((int(ids[s]), int(ids[d])) for s, d in _edges(g))
    assert got == sorted(zip(src.tolist(), dst.tolist()))
    verify_graph(g.path)                                       # hashes and bucket order


def test_from_numpy_refuses_ids_outside_num_nodes(tmp_path):
    with pytest.raises(InputError, match="outside 0..9"):
        graphsys.from_numpy([0, 12], [1, 2], tmp_path / "g", num_nodes=10)
    assert not (tmp_path / "g").exists()



@pytest.mark.parametrize("convert", ["numpy", "arrow"])
def test_a_guessed_or_unknown_option_is_one_line_naming_the_option(tmp_path, convert):
    """``num_partitions=`` (what ``partitions=`` is called elsewhere) names the option meant;
    an unknown option lists them; neither is a TypeError, and nothing is written."""
    def call(**options):
        if convert == "numpy":
            return graphsys.from_numpy([0, 1], [1, 0], tmp_path / "g", **options)
        return graphsys.from_arrow(pa.table({"src": [0, 1], "dst": [1, 0]}), tmp_path / "g",
                                   **options)

    with pytest.raises(ParameterError, match=r"^num_partitions is not an ingest option: pass "
                                             r"partitions=2$"):
        call(num_partitions=2)
    with pytest.raises(ParameterError, match=r"^parts is not an ingest option \(options: "
                                             r"partitions, partitioner, "):
        call(parts=2)
    assert not (tmp_path / "g").exists()
    assert call(partitions=2).num_partitions == 2


def test_from_numpy_refuses_bad_node_column(tmp_path):
    with pytest.raises(InputError, match="node column 'feat'"):
        graphsys.from_numpy([0], [1], tmp_path / "g", num_nodes=2,
                            node_columns={"feat": np.zeros(3, np.float32)})


@pytest.mark.parametrize("columns,match", [
    ({"id": np.array([7, 8])}, "node column 'id' would replace the node ids"),
    ({"x": np.zeros((2, 0))}, r"'x': dtype float64 and shape \(2, 0\)")])
def test_from_numpy_refuses_node_columns_it_would_misstore(tmp_path, columns, match):
    """A column named ``id`` replaced the node ids (node 1 was then not in the graph); a
    float column with no value per node failed in pyarrow."""
    with pytest.raises(InputError, match=match):
        graphsys.from_numpy([0], [1], tmp_path / "g", num_nodes=2, node_columns=columns)
    assert not (tmp_path / "g").exists()


@pytest.mark.parametrize("src,match", [
    (np.array([1, "b"], dtype=object), r"^src: values of dtype object are not ids"),
    (np.array([1j, 2j]), r"^src: values of dtype complex128 are not ids"),
    ([True, 2], r"^src must hold ids or numbers, got a bool")])  # NumPy read it as [1, 2]
def test_from_numpy_refuses_ids_arrow_cannot_hold_in_one_line(tmp_path, src, match):
    with pytest.raises(InputError, match=match):
        graphsys.from_numpy(src, [1, 2], tmp_path / "g")


def test_ingest_flags_and_num_nodes_are_checked_before_anything_is_written(tmp_path):
    """``undirected="yes"`` was written into the manifest, which then failed to open."""
    with pytest.raises(ParameterError, match=r"^undirected must be True or False, got 'yes'"):
        graphsys.from_numpy([0], [1], tmp_path / "g", undirected="yes")
    with pytest.raises(ParameterError, match=r"^num_nodes must be a non-negative integer"):
        graphsys.from_numpy([0], [1], tmp_path / "g", num_nodes=-1)
    assert not (tmp_path / "g").exists()


def test_from_arrow_string_ids_weights_and_row_errors(tmp_path):
    t = pa.table({"a": ["x", "y", "z"], "b": ["y", "z", "x"], "w": [1.5, 2.0, 0.5]})
    g = graphsys.from_arrow(t, tmp_path / "g", src_col="a", dst_col="b", weight_col="w")
    assert g.num_edges() == 3 and g.edge_set().has_weight
    assert sorted(g.node_ids().to_pylist()) == ["x", "y", "z"]
    bad = pa.table({"src": ["x", None], "dst": ["y", "z"]})
    with pytest.raises(InputError, match=r"<in-memory edges default>:2: empty src id"):
        graphsys.from_arrow(bad, tmp_path / "bad")
    assert not (tmp_path / "bad").exists()


def test_from_arrow_record_batches_and_options(tmp_path):
    batches = [pa.record_batch({"src": [0, 1], "dst": [1, 0]}),
               pa.record_batch({"src": [1, 2], "dst": [0, 2]})]
    g = graphsys.from_arrow(batches, tmp_path / "g", dedupe=True, drop_self_loops=True)
    assert g.num_edges() == 2
    with pytest.raises(ParameterError, match="^no_such_option is not an ingest option"):
        graphsys.from_arrow(batches, tmp_path / "g2", no_such_option=1)
    # batches of int ids then string ids raised Arrow's multi-line "Schema at index 1 was
    # different" traceback
    strings = pa.record_batch({"src": ["a", "01"], "dst": ["1", "b"]})
    with pytest.raises(InputError, match=r"record batch 2 has another schema than batch 0 "
                                         r"\(src: string, dst: string vs src: int64"):
        graphsys.from_arrow([*batches, strings], tmp_path / "g3")
    assert not (tmp_path / "g3").exists()
