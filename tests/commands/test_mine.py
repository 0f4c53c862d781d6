"""``graphsys mine``: every sub-command's answer, its JSON and --out, and bad input."""

from __future__ import annotations

import itertools
import json

import networkx as nx
import numpy as np
import pyarrow.parquet as pq
import pytest

from graphsys import cli, from_numpy
from graphsys.storage.adjacency_index import build_index


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    """A directed graph with ids 10.., three triangles and a 4-clique, and its networkx
    twin; node column ``label`` (id parity)."""
    rng = np.random.default_rng(1)
    src, dst = rng.integers(0, 14, 40) + 10, rng.integers(0, 14, 40) + 10
    src = np.concatenate([src, [30, 30, 30, 31, 31, 32]])
    dst = np.concatenate([dst, [31, 32, 33, 32, 33, 33]])
    ids = np.unique(np.concatenate([src, dst]))
    path = tmp_path_factory.mktemp("mine") / "g"
    from_numpy(src, dst, path, partitions=2)
    n = int(ids.max()) + 1
    from_numpy(src, dst, path.parent / "lab", partitions=2, num_nodes=n,
               node_columns={"label": np.arange(n) % 2})
    G = nx.Graph((int(a), int(b)) for a, b in zip(src, dst) if a != b)
    D = nx.DiGraph((int(a), int(b)) for a, b in zip(src, dst) if a != b)
    return path, path.parent / "lab", G, D


def run(args, capsys) -> dict:
    assert cli.main(["mine", *args, "--json", "--quiet"]) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_triangles_and_clustering(graph, capsys, tmp_path):
    path, _, G, _ = graph
    got = run(["triangles", str(path)], capsys)
    assert got["triangles"] == sum(nx.triangles(G).values()) // 3
    assert got["transitivity"] == pytest.approx(nx.transitivity(G))
    out = tmp_path / "t.parquet"
    got = run(["clustering", str(path), "--out", str(out)], capsys)
    assert got["average_clustering"] == pytest.approx(
        sum(nx.clustering(G).values()) / got_nodes(path))
    t = pq.read_table(out)
    assert t.column_names == ["node", "clustering"]
    values = dict(zip(t.column("node").to_pylist(), t.column("clustering").to_pylist()))
    assert all(values[v] == pytest.approx(c) for v, c in nx.clustering(G).items())
    out2 = tmp_path / "t2.parquet"
    run(["triangles", str(path), "--out", str(out2)], capsys)
    t = pq.read_table(out2)
    assert dict(zip(t.column("node").to_pylist(),
                    t.column("triangles").to_pylist())) == {
        v: nx.triangles(G).get(v, 0) for v in t.column("node").to_pylist()}


def got_nodes(path) -> int:
    from graphsys import open_graph

    return open_graph(path).num_nodes()


def test_out_of_core_mode(graph, capsys, tmp_path):
    path, _, G, _ = graph
    copy = tmp_path / "g"
    import shutil

    shutil.copytree(path, copy)
    assert cli.main(["mine", "triangles", str(copy), "--mode", "out-of-core"]) == 2
    assert "graphsys index" in capsys.readouterr().err
    from graphsys import open_graph

    build_index(open_graph(copy), ("sym",))
    got = run(["triangles", str(copy), "--mode", "out-of-core"], capsys)
    assert got["triangles"] == sum(nx.triangles(G).values()) // 3


def test_triads_cliques_motifs(graph, capsys):
    path, _, G, D = graph
    census = run(["triads", str(path)], capsys)["census"]
    assert {k: v for k, v in census.items() if k != "003"} == {
        k: v for k, v in nx.triadic_census(D).items() if k != "003"}
    got = run(["cliques", str(path), "-k", "4", "--list", "2"], capsys)
    four = [c for c in nx.enumerate_all_cliques(G) if len(c) == 4]
    assert got["cliques"] == len(four) and len(got["listed"]) == min(2, len(four))
    motifs = run(["motifs", str(path), "--size", "4"], capsys)
    assert motifs["counts"]["4-clique"] == len(four) and motifs["method"] == "exact"
    sampled = run(["motifs", str(path), "--size", "4", "--samples", "500", "--seed", "3"],
                  capsys)
    assert sampled["method"] == "sampled" and sampled["samples"] == 500
    five = run(["motifs", str(path), "--size", "5"], capsys)
    assert five["counts"]["5-clique"] == sum(1 for c in nx.enumerate_all_cliques(G)
                                             if len(c) == 5)
    assert sum(five["counts"].values()) == sum(
        1 for nodes in itertools.combinations(G, 5) if nx.is_connected(G.subgraph(nodes)))


def test_pattern(graph, capsys, tmp_path):
    _, lab, G, _ = graph
    got = run(["pattern", str(lab), "0-1,1-2,2-0"], capsys)
    assert got["matches"] == sum(nx.triangles(G).values()) // 3
    out = tmp_path / "m.parquet"
    got = run(["pattern", str(lab), "wedge", "--induced", "--labels", "label",
               "--pattern-labels", "0,*,0", "--out", str(out)], capsys)
    rows = pq.read_table(out).to_pylist()
    assert len(rows) == got["matches"]
    for r in rows:
        a, b, c = r["node0"], r["node1"], r["node2"]
        assert G.has_edge(a, b) and G.has_edge(b, c) and not G.has_edge(a, c)
        assert a % 2 == 0 and c % 2 == 0
    # no match: the columns still hold the graph's ids (they were of Arrow's null type)
    k = max(len(c) for c in nx.find_cliques(G)) + 1
    got = run(["pattern", str(lab), f"{k}-clique", "--out", str(out), "--overwrite"], capsys)
    empty = pq.read_table(out)
    assert got["matches"] == 0 and empty.num_rows == 0
    assert [str(t) for t in empty.schema.types] == ["int64"] * k


def test_pattern_anti_edges(graph, capsys):
    """--anti-edges keeps the named pairs apart: a wedge with its ends apart is the induced
    wedge, a 4-path whose ends are apart counts what the API counts."""
    from graphsys import mining, open_graph
    from graphsys.mining import Pattern

    path, _, G, _ = graph
    got = run(["pattern", str(path), "wedge", "--anti-edges", "0-2"], capsys)
    assert got["matches"] == run(["pattern", str(path), "wedge", "--induced"],
                                 capsys)["matches"]
    assert got["anti_edges"] == [[0, 2]]
    got = run(["pattern", str(path), "0-1,1-2,2-3", "--anti-edges", "3-0"], capsys)
    assert got["matches"] == mining.count(open_graph(path), Pattern(
        [(0, 1), (1, 2), (2, 3)], anti_edges=[(0, 3)]))


def test_pattern_directed(graph, capsys):
    """--directed reads a-b as a -> b: the directed 3-cycles and feed-forward triangles
    are networkx's triad census 030C and 030T counts (each 030C triad is one cycle), with
    the edges as stored."""
    path, _, _, D = graph
    census = nx.triadic_census(D)
    cycles = run(["pattern", str(path), "0-1,1-2,2-0", "--directed", "--induced"], capsys)
    assert cycles["matches"] == census["030C"] and cycles["directed"]
    ffl = run(["pattern", str(path), "0-1,1-2,0-2", "--directed", "--induced"], capsys)
    assert ffl["matches"] == census["030T"] and ffl["pattern"] == [[0, 1], [0, 2], [1, 2]]
    named = run(["pattern", str(path), "triangle", "--directed", "--induced"], capsys)
    assert named["matches"] == census["030T"]     # 0-1, 1-2, 0-2 as listed: feed-forward


def test_fsm(graph, capsys):
    """``mine fsm`` prints what ``frequent_subgraphs`` finds (tests/mining/test_fsm.py
    checks that against a brute force); --early-exit the same patterns."""
    from graphsys import mining, open_graph

    _, lab, _, _ = graph
    got = run(["fsm", str(lab), "--labels", "label", "--support", "3", "--max-edges", "2"],
              capsys)
    want = mining.frequent_subgraphs(open_graph(lab), "label", 3, max_edges=2)
    assert got["patterns"] == [f.to_dict() for f in want] and len(want) >= 3
    early = run(["fsm", str(lab), "--labels", "label", "--support", "3", "--max-edges", "2",
                 "--early-exit"], capsys)
    assert sorted((p["edges"], p["labels"]) for p in early["patterns"]) == sorted(
        (p["edges"], p["labels"]) for p in got["patterns"])


def test_fsm_runs_on_the_threads_asked(graph, capsys, monkeypatch):
    """``mine fsm --threads 1`` runs the search on one numba thread (--threads was accepted
    and not passed on)."""
    import numba

    from graphsys.mining import fsm

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba runs one thread here: --threads 1 changes nothing")
    seen, support = [], fsm.mni_support

    def spy(*args, **kwargs):
        seen.append(numba.get_num_threads())
        return support(*args, **kwargs)

    monkeypatch.setattr(fsm, "mni_support", spy)
    run(["fsm", str(graph[1]), "--labels", "label", "--support", "3", "--max-edges", "1",
         "--threads", "1"], capsys)
    assert seen and set(seen) == {1}


@pytest.mark.parametrize("args, message", [
    (["pattern", "{g}", "wedge", "--anti-edges", "0-1"], "both an edge and an anti-edge"),
    (["pattern", "{g}", "wedge", "--anti-edges", "0-x"], "--anti-edges '0-x'"),
    (["fsm", "{g}", "--labels", "label", "--support", "0"], "--support must be a positive"),
    (["fsm", "{g}", "--labels", "nope", "--support", "2"], "nope"),
    (["cliques", "{g}", "-k", "9"], "-k must be an integer from 3 to 8, got 9"),
    # refused before the count, without "or None" (a Python value, not a flag's)
    (["cliques", "{g}", "-k", "3", "--list", "-1"],
     "--list must be a non-negative integer, got -1"),
    (["motifs", "{g}", "--size", "6"], "--size must be 3, 4 or 5"),
    (["motifs", "{g}", "--size", "3", "--samples", "100"], "--samples applies"),
    (["triangles", "{g}", "--mode", "gpu"], "--mode must be one of"),
    (["triangles", "{g}", "--threads", "0"], "--threads must be a positive integer"),
    (["pattern", "{g}", "0-1,2-3"], "pattern must be connected"),
    (["pattern", "{g}", "0-1-2"], "each edge is two node numbers"),
    (["pattern", "{g}", "wedge", "--pattern-labels", "1,2,3"], "needs --labels"),
    (["triangles", "{g}", "--memory-limit", "1kB"], "graphsys index"),
])
def test_bad_input_is_one_line(graph, capsys, args, message):
    path = graph[0]
    assert cli.main(["mine", *[a.format(g=path) for a in args]]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and message in err, err


def _documented_names() -> list[str]:
    """The pattern names docs/mining.md lists (``K-clique`` as 2..8), checked against the
    names the library's own refusal lists."""
    import re
    from pathlib import Path

    from graphsys.mining.pattern import MAX_NODES, NAMED

    text = (Path(__file__).resolve().parents[2] / "docs" / "mining.md").read_text()
    para = text[text.index("A pattern is an edge list"):]
    para = para[:para.index("\n\n")]
    names = re.findall(r"`([a-zK0-9-]+)`", para.split("or a name:", 1)[1])
    assert set(names) == {*NAMED, "K-clique"}
    return [n for n in names if n != "K-clique"] + [f"{k}-clique"
                                                    for k in range(2, MAX_NODES + 1)]


@pytest.mark.parametrize("name", _documented_names())
def test_every_documented_pattern_name(graph, capsys, name):
    """Each name works on the command line (4-cycle, 4-path, 3-star and 5-cycle were read
    as edge lists and refused) and counts what the Python API and networkx's subgraph
    monomorphisms (over the pattern's automorphisms) count."""
    from networkx.algorithms.isomorphism import GraphMatcher

    from graphsys import mining, open_graph
    from graphsys.mining import Pattern

    path, _, G, _ = graph
    got = run(["pattern", str(path), name], capsys)["matches"]
    p = Pattern.named(name)
    P = nx.Graph(list(p.edges))
    copies = sum(1 for _ in GraphMatcher(G, P).subgraph_monomorphisms_iter())
    assert got == mining.count(open_graph(path), name) == copies // p.automorphisms()
