"""``graphsys subgraph``: node files, ``--where`` and ``--ego`` against networkx's
``subgraph`` / ``ego_graph``, and its one-line errors."""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest

import graphsys
from graphsys.cli import main
from graphsys.commands.subgraph import parse_where


@pytest.fixture
def stored(tmp_path):
    G = nx.gnm_random_graph(40, 90, seed=3, directed=True)
    label = np.arange(40) % 4
    nx.set_node_attributes(G, {i: int(label[i]) for i in G}, "label")
    G.add_node(40, label=1)  # isolated
    g = graphsys.from_networkx(G, tmp_path / "g", node_attrs=["label"])
    return G, g, tmp_path


def _edges(h) -> set:
    """The stored edges in original ids."""
    ids = h.node_ids()
    return {(int(ids[u]), int(ids[v])) for src, dst, *_ in h.iter_edges()
            for u, v in zip(src.tolist(), dst.tolist())}


def test_node_file_where_and_ego(stored, capsys):
    G, g, tmp = stored
    (tmp / "ids.txt").write_text("# kept\n1\n5\n7\n40\n12\n")
    assert main(["subgraph", str(tmp / "g"), str(tmp / "a"), "--nodes", str(tmp / "ids.txt"),
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    h = graphsys.open_graph(tmp / "a")
    S = G.subgraph([1, 5, 7, 40, 12])
    assert sorted(h.node_ids().tolist()) == sorted(S) and out["nodes"] == 5
    assert _edges(h) == set(S.edges()) and out["edges"]["default"] == S.number_of_edges()
    assert 0 < out["peak_rss_anon_bytes"] <= out["peak_rss_bytes"]

    assert main(["subgraph", str(tmp / "g"), str(tmp / "b"), "--where", "label >= 2"]) == 0
    assert "wrote" in capsys.readouterr().out
    h = graphsys.open_graph(tmp / "b")
    keep = [n for n, d in G.nodes(data=True) if d["label"] >= 2]
    assert sorted(h.node_ids().tolist()) == sorted(keep)
    assert _edges(h) == set(G.subgraph(keep).edges())

    assert main(["subgraph", str(tmp / "g"), str(tmp / "c"), "--ego", "0", "--radius", "2",
                 "--undirected"]) == 0
    E = nx.ego_graph(G, 0, radius=2, undirected=True)
    h = graphsys.open_graph(tmp / "c")
    assert sorted(h.node_ids().tolist()) == sorted(E) and _edges(h) == set(E.edges())

    assert main(["subgraph", str(tmp / "g"), str(tmp / "d"), "--ego", "0", "--ego", "3",
                 "--where", "label != 0"]) == 0
    keep = [n for n in set(nx.ego_graph(G, 0)) | set(nx.ego_graph(G, 3))
            if G.nodes[n]["label"] != 0]
    h = graphsys.open_graph(tmp / "d")
    assert sorted(h.node_ids().tolist()) == sorted(keep)
    assert _edges(h) == set(G.subgraph(keep).edges())


@pytest.mark.parametrize("argv, message", [
    ([], "give --nodes, --where or --ego"),
    (["--nodes", "ids.txt", "--ego", "1"], "--nodes and --ego choose the nodes two ways"),
    (["--where", "label ~ 2"], "--where must read 'COLUMN OP VALUE'"),
    (["--where", "nope == 2"], "--where cannot be evaluated"),
    (["--ego", "x"], "--ego: 'x' is not an integer node id"),
    (["--ego", "999"], "999"),
])
def test_errors_are_one_line(stored, capsys, argv, message):
    _, _, tmp = stored
    assert main(["subgraph", str(tmp / "g"), str(tmp / "e"), *argv]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
    assert not (tmp / "e").exists()


def test_parse_where():
    import pyarrow as pa

    t = pa.table({"label": [1, 2, 3], "name": ["a", "b", "12"], "w": [0.5, 1.5, 2.5],
                  "m": [True, False, True]})

    def kept(text):
        return t.filter(parse_where(text)(t)).column("label").to_pylist()

    assert kept("label<=2") == [1, 2] and kept("name == 'b'") == [2] and kept("w > 1.0") == [2, 3]
    # the value is read as the column's type: digits in a string column, a mask's true
    assert kept("name == 12") == [3] and kept("m == true") == [1, 3] and kept("m == 0") == [2]
    assert kept("name != a==b") == [1, 2, 3]  # the first operator compares
    assert kept("label < 300") == [1, 2, 3] and kept("label != nan") == [1, 2, 3]


@pytest.mark.parametrize("text, message", [
    ("label == 99999999999999999999999", "out of the range of column label"),
    ("label == x", "'x' is not a value of column label"),
    ("m == yes", "'yes' is not a value of column m"),
])
def test_parse_where_refuses_a_value_of_another_type(text, message):
    import pyarrow as pa

    from graphsys.errors import ParameterError

    t = pa.table({"label": [1, 2, 3], "m": [True, False, True]})
    with pytest.raises(ParameterError, match=message):
        parse_where(text)(t)


def test_where_over_string_ids_and_a_huge_integer(stored, capsys):
    """Digits compare with string ids as text; an integer beyond Arrow's is one line."""
    _, _, tmp = stored
    graphsys.from_numpy(np.array(["1", "x"]), np.array(["x", "2"]), tmp / "s")
    assert main(["subgraph", str(tmp / "s"), str(tmp / "a"), "--where", "id != 2"]) == 0
    assert graphsys.open_graph(tmp / "a").node_ids().to_pylist() == ["1", "x"]
    capsys.readouterr()
    assert main(["subgraph", str(tmp / "g"), str(tmp / "b"),
                 "--where", "label == 99999999999999999999999"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("error: --where 99999999999999999999999 is out of the range of column "
                   "label (int64)") and not (tmp / "b").exists()


def test_out_inside_the_graph_is_refused(stored, capsys):
    """'graphsys subgraph G G/sub' wrote the subgraph inside G, and the next compact or
    append of G (which replace its directory) dropped it without a word."""
    _, _, tmp = stored
    assert main(["subgraph", str(tmp / "g"), str(tmp / "g" / "sub"), "--ego", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "inside the graph directory" in err, err
    assert not (tmp / "g" / "sub").exists()
