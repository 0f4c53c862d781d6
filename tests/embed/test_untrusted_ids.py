"""Ids that reach native code or a text format are checked first: an int on a string-id
graph, a TSV export of an id holding a tab, and faiss parameters out of faiss's range are
one-line errors, not tracebacks, segfaults or rows with the wrong number of fields."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

import graphsys.embed
from graphsys.embed.index import IndexParams
from graphsys.errors import GraphsysError, ParameterError
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources


@pytest.fixture(scope="module")
def emb(tmp_path_factory):
    root = tmp_path_factory.mktemp("ids")
    t = pa.table({"src": ["a", "b", "c\td", "e"], "rel": ["r"] * 4,
                  "dst": ["b", "c\td", "e", "a"]})
    ingest_sources([EdgeSource(table=t, rel_col="rel")], root / "g", IngestOptions())
    res = graphsys.embed.train(root / "g", {"dimension": 8, "num_epochs": 1, "seed": 0},
                               out=root / "ck")
    return res.embeddings, root


def test_an_int_on_a_string_id_graph_is_one_line(emb):
    e, _ = emb
    with pytest.raises(GraphsysError, match="are strings; got 3"):
        e.nearest(3, 2)
    with pytest.raises(GraphsysError, match="are strings; got 3"):
        e.predict_tails(3, "r", k=2)
    assert len(e.nearest("a", np.int64(2))[0]) == 2


def test_tsv_export_refuses_an_id_holding_a_tab(emb, tmp_path):
    e, _ = emb
    with pytest.raises(GraphsysError, match="holds a tab or line break"):
        e.export_tsv(tmp_path / "x.tsv")
    assert not (tmp_path / "x.tsv").exists()


@pytest.mark.parametrize("name, value", [("hnsw_m", 1), ("hnsw_m", 0), ("ef_search", -3),
                                         ("seed", -1), ("nlist", 2**40), ("nprobe", True)])
def test_faiss_parameters_are_range_checked(name, value):
    with pytest.raises(ParameterError, match=f"^{name} must be an? ([a-z-]+ )?integer"):
        IndexParams(**{name: value}).check()


def test_hnsw_m_1_is_refused_by_the_cli_not_a_signal(emb):
    pytest.importorskip("faiss")
    _, root = emb
    r = subprocess.run([sys.executable, "-m", "graphsys", "embed", "index", str(root / "ck"),
                        "--kind", "hnsw", "--hnsw-m", "1"], capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert lines == ["error: --hnsw-m must be an integer >= 2, got 1"], lines


def test_numpy_k_reaches_faiss_as_an_int(tmp_path):
    pytest.importorskip("faiss")
    rng = np.random.default_rng(0)
    t = pa.table({"src": rng.integers(0, 100, 800), "rel": ["r"] * 800,
                  "dst": rng.integers(0, 100, 800)})
    ingest_sources([EdgeSource(table=t, rel_col="rel")], tmp_path / "g", IngestOptions())
    graphsys.embed.train(tmp_path / "g", {"dimension": 8, "num_epochs": 1, "seed": 0},
                         out=tmp_path / "ck")
    r = subprocess.run([sys.executable, "-m", "graphsys", "embed", "index", str(tmp_path / "ck"),
                        "--kind", "flat"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    e = graphsys.embed.Embeddings.load(tmp_path / "ck", graph=graphsys.open_graph(tmp_path / "g"))
    ids, scores = e.nearest(5, np.int64(3))
    assert len(ids) == 3
    with pytest.raises(ParameterError, match="k must be a positive integer"):
        e.nearest(5, 2.5)


def test_internal_rows_are_checked_never_cast(emb):
    """``rows`` cast its internal ids to int64: 0.5 read row 0, True row 1, -1 a row of
    another partition and an id past the end a NumPy IndexError. ``original`` cast too."""
    e, _ = emb
    n = e.num_entities()
    np.testing.assert_array_equal(e.rows([n - 1, 0]), e.to_numpy()[[n - 1, 0]])
    for bad, match in (([0.5], "integer internal ids"), ([True], "got True"),
                       ([-1], f"internal id -1, outside 0..{n - 1}"),
                       ([n], f"internal id {n}, outside")):
        with pytest.raises(ParameterError, match=f"^internal .*{match}"):
            e.rows(bad)
    with pytest.raises(GraphsysError, match="internal ids are integers; got 0.5"):
        e.original([0.5])
