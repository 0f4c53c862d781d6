"""``graphsys links``: pair scores and top-k candidates against networkx's link predictors,
as TSV, JSON and Parquet, and its one-line errors."""

from __future__ import annotations

import json

import networkx as nx
import pyarrow.parquet as pq
import pytest

import graphsys
from graphsys.cli import main


@pytest.fixture
def stored(tmp_path):
    G = nx.gnm_random_graph(30, 80, seed=5)
    graphsys.from_networkx(G, tmp_path / "g")
    return G, tmp_path


def test_pairs_and_top(stored, capsys):
    G, tmp = stored
    pairs = [(0, 1), (2, 9), (4, 4), (7, 20)]
    (tmp / "pairs.txt").write_text("# u v\n" + "".join(f"{u}\t{v}\n" for u, v in pairs))
    assert main(["links", str(tmp / "g"), "--pairs", str(tmp / "pairs.txt")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "source\ttarget\tscore"
    got = {(int(u), int(v)): float(s) for u, v, s in (ln.split("\t") for ln in lines[1:])}
    assert got == {(u, v): s for u, v, s in nx.jaccard_coefficient(G, pairs)}

    assert main(["links", str(tmp / "g"), "--pairs", str(tmp / "pairs.txt"), "--method",
                 "adamic_adar", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    want = list(nx.adamic_adar_index(G, pairs))
    assert out["rows"] == 4 and [r[:2] for r in out["links"]] == [list(p) for p in pairs]
    assert all(abs(r[2] - s) < 1e-12 for r, (_, _, s) in zip(out["links"], want))

    # --out FILE.tsv: the rows of stdout under the same header, unquoted
    assert main(["links", str(tmp / "g"), "--pairs", str(tmp / "pairs.txt"), "--out",
                 str(tmp / "scores.tsv")]) == 0
    capsys.readouterr()
    written = (tmp / "scores.tsv").read_text().splitlines()
    assert written[0] == "source\ttarget\tscore"
    assert [[float(x) for x in ln.split("\t")] for ln in written[1:]] == \
        [[float(x) for x in ln.split("\t")] for ln in lines[1:]]

    (tmp / "nodes.txt").write_text("3\n8\n")
    assert main(["links", str(tmp / "g"), "--top", "3", "--nodes", str(tmp / "nodes.txt"),
                 "--method", "common", "--out", str(tmp / "top.parquet")]) == 0
    assert "wrote" in capsys.readouterr().out
    rows = pq.read_table(tmp / "top.parquet").to_pylist()
    for u in (3, 8):
        mine = [(r["target"], r["score"]) for r in rows if r["source"] == u]
        cands = sorted(((len(list(nx.common_neighbors(G, u, v))), -v) for v in G
                        if v != u and not G.has_edge(u, v)
                        and list(nx.common_neighbors(G, u, v))), reverse=True)[:3]
        assert mine == [(-v, float(c)) for c, v in cands]


def test_pairs_of_ids_with_spaces(tmp_path, capsys):
    # a TSV edge list holds ids with spaces ("ann lee"); --pairs split every line on
    # whitespace, so such a pair was refused ("a line holds 4 fields, not 2")
    (tmp_path / "e.tsv").write_text("ann lee\tbo\nbo\tcy\nann lee\tcy\ncy\tdee dee\n")
    graphsys.ingest(tmp_path / "e.tsv", tmp_path / "g", undirected=True)
    (tmp_path / "pairs.txt").write_text("ann lee\tdee dee\nbo cy\n")
    assert main(["links", str(tmp_path / "g"), "--pairs", str(tmp_path / "pairs.txt"),
                 "--method", "common"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == ["ann lee\tdee dee\t1.0",
                                                         "bo\tcy\t1.0"]
    (tmp_path / "nodes.txt").write_text("ann lee\n")  # one id per line: the whole line
    assert main(["links", str(tmp_path / "g"), "--top", "2", "--nodes",
                 str(tmp_path / "nodes.txt"), "--method", "common"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == ["ann lee\tdee dee\t1.0"]


@pytest.mark.parametrize("argv, message", [
    ([], "give --pairs FILE or --top K"),
    (["--top", "2", "--pairs", "pairs.txt"], "give --pairs FILE or --top K"),
    (["--pairs", "missing.txt"], "--pairs: missing.txt is not a file"),
    (["--pairs", "{bad}"], "a line holds 3 fields, not 2"),
    (["--top", "-1"], "--top must be a non-negative integer"),
    (["--top", "2", "--out", "x.csv"], "must end in .parquet or .tsv"),
])
def test_errors_are_one_line(stored, capsys, monkeypatch, argv, message):
    _, tmp = stored
    (tmp / "bad.txt").write_text("1 2\n1 2 3\n")
    monkeypatch.chdir(tmp)
    argv = [a.replace("{bad}", str(tmp / "bad.txt")) for a in argv]
    assert main(["links", str(tmp / "g"), *argv]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
