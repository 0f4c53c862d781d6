"""`graphsys demo` runs every step on its embedded default and reports their figures."""

from __future__ import annotations

import json

from graphsys.cli import main


def test_demo_json(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--edges", "20000", "--nodes", "2048", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert doc["ingest"]["edges"] == {"default": 20000}
    assert doc["verify"]["verify"]["edges"] == 20000
    ranks = doc["pagerank"]["top5"]
    assert len(ranks) == 5 and ranks[0]["rank"] >= ranks[-1]["rank"] > 0
    assert doc["embed"]["metrics"]["mrr"] > 0.5  # planted relations are recovered
    near = doc["embed"]["nearest"]
    # ids as the query and `embed nearest --json` give them (they were strings: "163")
    assert len(near["ids"]) == 5 and all(type(i) is type(near["query"]) is int
                                         for i in near["ids"])
    assert doc["gnn"]["metrics"]["test_accuracy"] > 0.8  # 4 well-separated blocks
    assert (out / "profile" / "profile.html").is_file()
    assert main(["demo", "--out", str(out)]) != 0  # refuses an existing directory
    assert "already exists" in capsys.readouterr().err


def test_demo_refuses_bad_sizes_in_one_line_before_any_work(tmp_path, capsys):
    for flags, word in ((["--partitions", "0"], "--partitions"), (["--edges", "-5"], "--edges"),
                        (["--seed", "-1"], "--seed")):
        assert main(["demo", "--out", str(tmp_path / "d"), *flags]) != 0
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1].startswith(f"error: {word} must be") and len(err) == 1
        assert not (tmp_path / "d").exists()  # nothing was started or written
