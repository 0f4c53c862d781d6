"""``graphsys info --degrees --diameter``: the measures of graphsys.measures, in text and
JSON (NaN, undefined, as null)."""

from __future__ import annotations

import json

import networkx as nx

import graphsys
from graphsys.cli import main


def test_degrees_and_diameter(tmp_path, capsys):
    G = nx.gnm_random_graph(60, 150, seed=2, directed=True)
    G.add_edge(3, 3)
    g = graphsys.from_networkx(G, tmp_path / "g")
    assert main(["info", str(tmp_path / "g"), "--degrees", "--diameter", "exact",
                 "--json"]) == 0
    m = json.loads(capsys.readouterr().out)["edge_sets"]["default"]["measures"]
    both, out, inn = m["degrees"]
    assert (both["direction"], out["direction"], inn["direction"]) == ("both", "out", "in")
    assert both["max"] == max(d for _, d in G.degree()) and out["self_loops"] == 1
    assert dict(map(tuple, out["distribution"])) == _hist(G.out_degree())
    assert abs(m["reciprocity"] - nx.overall_reciprocity(G)) < 1e-12
    assert abs(m["assortativity"]["out-in"] - nx.degree_assortativity_coefficient(G)) < 1e-9
    U = G.to_undirected()
    diam = max(max(nx.eccentricity(U.subgraph(c)).values())
               for c in nx.connected_components(U))
    assert m["diameter"]["diameter"] == diam and m["diameter"]["exact"]
    assert main(["info", str(tmp_path / "g"), "--degrees", "--diameter", "estimate"]) == 0
    text = capsys.readouterr().out
    assert "out-degree: min" in text and "nodes by degree:" in text and "diameter" in text
    assert g.num_nodes() == 60


def _hist(view) -> dict:
    out: dict = {}
    for _, d in view:
        out[d] = out.get(d, 0) + 1
    return out


def test_undefined_values_are_null(tmp_path, capsys):
    graphsys.from_numpy([0, 1], [1, 0], tmp_path / "g", num_nodes=3)
    assert main(["info", str(tmp_path / "g"), "--degrees", "--json"]) == 0
    m = json.loads(capsys.readouterr().out)["edge_sets"]["default"]["measures"]
    assert m["assortativity"]["out-in"] is None  # every degree is 1: no variance
    assert main(["info", str(tmp_path / "g"), "--degrees"]) == 0
    assert "undefined" in capsys.readouterr().out


def test_degrees_describe_the_view_the_engines_read(tmp_path, capsys):
    """Issue 71: after an append, --degrees described each stored edge set only; the default
    view (the edge sets read together) is described first, against networkx on all edges."""
    G1 = nx.gnm_random_graph(30, 60, seed=4, directed=True)
    G2 = nx.gnm_random_graph(40, 50, seed=5, directed=True)
    graphsys.from_networkx(G1, tmp_path / "g")
    (tmp_path / "day2.tsv").write_text("".join(f"{u}\t{v}\n" for u, v in G2.edges()))
    assert main(["ingest", str(tmp_path / "day2.tsv"), "--append-to", str(tmp_path / "g"),
                 "--edge-set", "day2", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["info", str(tmp_path / "g"), "--degrees", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    both, out, _ = info["default_view_measures"]["degrees"]
    all_edges = nx.MultiDiGraph()
    all_edges.add_nodes_from(G1)            # day2 adds the nodes its edges name
    all_edges.add_edges_from(list(G1.edges()) + list(G2.edges()))
    assert dict(map(tuple, both["distribution"])) == _hist(all_edges.degree())
    assert dict(map(tuple, out["distribution"])) == _hist(all_edges.out_degree())
    per_set = info["edge_sets"]["day2"]["measures"]["degrees"][0]
    assert per_set["max"] == max(d for _, d in G2.degree())
    assert main(["info", str(tmp_path / "g"), "--degrees"]) == 0
    text = capsys.readouterr().out
    assert text.index("measures of the default view (default, day2):") < text.index(
        "measures of edge set default:") < text.index("measures of edge set day2:")


def test_info_of_a_changed_graph_lists_its_change_sets(tmp_path, capsys):
    """A change set is listed by its own record and buckets (info read it through
    Graph.edge_set, which refuses a change set named alone as edges)."""
    from graphsys.storage.changes import delete_edges

    g = graphsys.from_numpy([0, 1, 2, 0], [1, 2, 0, 2], tmp_path / "g")
    delete_edges(g.path, [0], [1])
    assert main(["info", str(g.path), "--degrees", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["edge_sets"]["delete-1"]["edges"] == 1 and info["edges"] == 3
    assert [b.num_edges for b in graphsys.open_graph(g.path).buckets(edge_set="delete-1")] == [1]
