"""The storage commands end to end: ingest, info, verify, export; errors are one line."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq

from graphsys.cli import main


def _edges(tmp_path, n=3000, seed=0):
    rng = np.random.default_rng(seed)
    f = tmp_path / "e.tsv"
    pairs = rng.integers(0, 400, (n, 2))
    f.write_text("src\tdst\n" + "".join(f"{a}\t{b}\n" for a, b in pairs))
    return f, pairs


def test_ingest_info_verify_export(tmp_path, capsys):
    f, pairs = _edges(tmp_path)
    assert main(["ingest", str(f), "--out", str(tmp_path / "g"), "--partitions", "4",
                 "--partitioner", "fennel", "--json"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["edges"] == {"default": 3000}
    # the memory every command reports: total, anonymous and file peaks (one sampler)
    assert 0 < report["peak_rss_anon_bytes"] <= report["peak_rss_bytes"]
    assert report["peak_rss_file_bytes"] <= report["peak_rss_bytes"]
    assert main(["info", str(tmp_path / "g"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    es = info["edge_sets"]["default"]
    assert es["edges"] == 3000 and len(es["buckets"]) == 4
    assert 0 <= es["edge_cut"] <= 1 and es["edge_balance"] >= 1
    assert main(["verify", str(tmp_path / "g")]) == 0
    assert "ok:" in capsys.readouterr().out
    assert main(["export", str(tmp_path / "g"), "--out", str(tmp_path / "o.parquet")]) == 0
    back = pq.read_table(tmp_path / "o.parquet")
    assert sorted(zip(back["src"].to_pylist(), back["dst"].to_pylist())) == sorted(
        map(tuple, pairs.tolist()))


def test_partitioners_compared_by_info(tmp_path, capsys):
    """fennel cuts fewer edges than hash on a graph with planted communities."""
    rng = np.random.default_rng(1)
    block = rng.integers(0, 4, 2000)
    src = rng.integers(0, 2000, 40000)
    # 95% of edges stay within the source's block
    same = rng.random(40000) < 0.95
    dst_same = np.array([rng.choice(np.flatnonzero(block == block[s])) for s in src[:2000]])
    dst = np.where(same[:2000], dst_same, rng.integers(0, 2000, 2000))
    f = tmp_path / "sbm.tsv"
    f.write_text("".join(f"{a}\t{b}\n" for a, b in zip(src[:2000], dst)))
    cuts = {}
    for name in ("hash", "fennel"):
        out = tmp_path / name
        assert main(["ingest", str(f), "--out", str(out), "--partitions", "4",
                     "--partitioner", name, "--undirected"]) == 0
        capsys.readouterr()
        main(["info", str(out), "--json"])
        cuts[name] = json.loads(capsys.readouterr().out)["edge_sets"]["default"]["edge_cut"]
    assert cuts["fennel"] < 0.6 * cuts["hash"]


def test_cli_errors_are_one_line(tmp_path, capsys):
    f = tmp_path / "bad.tsv"
    f.write_text("1\t2\n3\n")
    assert main(["ingest", str(f), "--out", str(tmp_path / "g")]) != 0
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "bad.tsv:2" in err and "\n" not in err
    assert not (tmp_path / "g").exists()
    assert main(["info", str(tmp_path / "nothing")]) != 0
    assert "not a directory" in capsys.readouterr().err
    assert main(["ingest", str(f), "--out", str(tmp_path / "g"), "--memory-limit", "lots"]) != 0
    assert "--memory-limit" in capsys.readouterr().err
    assert main(["ingest", str(f), "--out", str(tmp_path / "g"), "--delimiter", ""]) != 0
    assert capsys.readouterr().err.startswith("error: --delimiter must be one ASCII character")


def test_ingest_reads_a_backslash_t_delimiter_as_a_tab(tmp_path, capsys):
    f = tmp_path / "e.txt"
    f.write_text("1\t2\n2\t3\n")
    assert main(["ingest", str(f), "--format", "csv", "--delimiter", "\\t", "--out",
                 str(tmp_path / "g"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["edges"] == {"default": 2}


def test_ingest_of_parquet_takes_over_the_read_begun_before_its_imports(tmp_path, capsys,
                                                                         monkeypatch):
    """The command begins decoding a Parquet input before the ingest imports; the ingest's
    read takes that read over (the same edges stored), and a command that fails leaves no
    read running."""
    import threading

    import pyarrow as pa

    from graphsys.storage import readers

    taken = []
    take = readers._take_early
    monkeypatch.setattr(readers, "_take_early", lambda *a: taken.append(take(*a)) or taken[-1])
    rng = np.random.default_rng(1)
    pairs = rng.integers(0, 300, (2000, 2))
    f = tmp_path / "e.parquet"
    pq.write_table(pa.table({"w": np.ones(2000), "dst": pairs[:, 1], "src": pairs[:, 0]}), f)
    assert main(["ingest", str(f), "--out", str(tmp_path / "g"), "--partitions", "2"]) == 0
    assert [t is not None for t in taken] == [True]
    assert main(["export", str(tmp_path / "g"), "--out", str(tmp_path / "o.parquet")]) == 0
    back = pq.read_table(tmp_path / "o.parquet")
    assert sorted(zip(back["src"].to_pylist(), back["dst"].to_pylist())) == sorted(
        map(tuple, pairs.tolist()))
    assert main(["ingest", str(f), "--out", str(tmp_path / "h"), "--partitions", "0"]) != 0
    assert "--partitions" in capsys.readouterr().err
    assert not readers._early
    assert not any(t.name == "graphsys-read-ahead" for t in threading.enumerate())


def test_export_nodes_out_then_ingest_nodes_keeps_isolated_nodes(tmp_path, capsys):
    """'graphsys export --nodes-out' writes the node table 'graphsys ingest --nodes' reads:
    a node with no edge left survives the round trip."""
    (tmp_path / "e.tsv").write_text("1\t2\n2\t3\n")
    assert main(["ingest", str(tmp_path / "e.tsv"), "--out", str(tmp_path / "g")]) == 0
    assert main(["delete", str(tmp_path / "g"), "--node", "3"]) == 0
    assert main(["export", str(tmp_path / "g"), "--out", str(tmp_path / "o.tsv"),
                 "--nodes-out", str(tmp_path / "n.parquet")]) == 0
    assert main(["ingest", str(tmp_path / "o.tsv"), "--out", str(tmp_path / "h"),
                 "--nodes", str(tmp_path / "n.parquet")]) == 0
    assert sorted(pq.read_table(tmp_path / "n.parquet").column("id").to_pylist()) == [1, 2, 3]
    from graphsys import open_graph
    assert open_graph(tmp_path / "h").num_nodes() == 3
