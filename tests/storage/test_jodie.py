"""The JODIE input format (Wikipedia, Reddit, MOOC, LastFM files): the ingested edges and
columns equal the file parsed by the csv module, malformed lines are one-line errors, and
a TGN epoch trains on the graph."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from collections import Counter
from decimal import Decimal

import numpy as np
import pytest

import graphsys
from graphsys.errors import InputError, ParameterError
from graphsys.gnn import TrainConfig, train

HEADER = "user_id,item_id,timestamp,state_label,comma_separated_list_of_features\n"


def _write(path, n=48, dim=3, seed=0):
    """A small JODIE file: users 0..8, items 0..5, times rising (some fractional)."""
    rng = np.random.default_rng(seed)
    t, lines = 0.0, [HEADER]
    for _ in range(n):
        t += float(rng.choice([0, 1, 2.5, 36]))
        feats = ",".join(f"{x:.4f}" for x in rng.normal(size=dim))
        lines.append(f"{rng.integers(0, 9)},{rng.integers(0, 6)},{t},{int(rng.random() < .1)}"
                     + (f",{feats}" if dim else "") + "\n")
    path.write_text("".join(lines))
    return path


def _expected(path):
    """The file's interactions as the csv module reads them: a multiset of (user, item,
    time in microseconds, label, features)."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))[1:]
    offset = max(int(r[0]) for r in rows) + 1
    return offset, Counter(
        (int(r[0]), int(r[1]) + offset, int(Decimal(r[2]) * 10**6), int(r[3]),
         tuple(np.float32(x).item() for x in r[4:])) for r in rows)


def _stored(g, dim):
    """The graph's edges in original ids with their columns, as the same multiset."""
    src, dst = np.concatenate([s for s, *_ in g.iter_edges()]), np.concatenate(
        [d for _, d, *_ in g.iter_edges()])
    col = {c: np.concatenate(list(g.edge_column(c)))
           for c in ["timestamp_us", "state_label"] + [f"feature_{k}" for k in range(dim)]}
    users, items = g.to_original(src).tolist(), g.to_original(dst).tolist()
    return Counter(
        (int(users[e]), int(items[e]), int(col["timestamp_us"][e]), int(col["state_label"][e]),
         tuple(col[f"feature_{k}"][e].item() for k in range(dim))) for e in range(len(src)))


def test_ingest_equals_csv_module(tmp_path):
    path = _write(tmp_path / "wikipedia.csv")
    g = graphsys.ingest(path, tmp_path / "g", format="jodie", partitions=2)
    offset, expected = _expected(path)
    assert _stored(g, 3) == expected
    meta = g.manifest.metadata["jodie"]
    assert meta["items_from"] == offset and meta["feature_dim"] == 3
    ts = np.concatenate(list(g.edge_column("timestamp")))
    us = np.concatenate(list(g.edge_column("timestamp_us")))
    assert (ts == us // 10**6).all()
    cols = {c.name: c.dtype for c in g.edge_set(None).columns}
    assert cols["timestamp"] == "int64" and cols["feature_2"] == "float32"


def test_several_files_share_one_offset_and_no_features(tmp_path):
    a = _write(tmp_path / "a.csv", n=20, dim=0, seed=1)
    b = tmp_path / "b.csv"
    b.write_text(HEADER + "12,1,10000,0\n3,2,10001,1\n")
    g = graphsys.ingest([a, b], tmp_path / "g", format="jodie")
    stored = _stored(g, 0)
    assert (12, 1 + 13, 10**10, 0, ()) in stored and sum(stored.values()) == 22
    assert g.manifest.metadata["jodie"]["items_from"] == 13


@pytest.mark.parametrize("line, message", [
    ("1,2,40,0,0.5", r"wiki.csv:4: 5 fields, expected 6"),
    ("1,x,40,0,0.5,1", r"wiki.csv:4: user_id,item_id '1,x' is not an integer"),
    ("-1,2,40,0,0.5,1", r"wiki.csv:4: negative id"),
    ("1,2,4e1,0,0.5,1", r"wiki.csv:4: timestamp '4e1' is not a decimal"),
    ("1,2,40,0,0.5,abc", r"wiki.csv:4: feature '0.5,abc' is not a number"),
    ("1,2,40,0,0.5,nan", r"wiki.csv:4: a feature is not finite"),
    ("1,2,1,0,0.5,1", r"wiki.csv:4: timestamp goes back in time"),
])
def test_malformed_lines(tmp_path, line, message):
    path = tmp_path / "wiki.csv"
    path.write_text(HEADER + "0,0,0,0,1,2\n1,1,36.5,0,1,2\n" + line + "\n")
    with pytest.raises(InputError, match=message):
        graphsys.ingest(path, tmp_path / "g", format="jodie")
    assert not (tmp_path / "g").exists()


def test_refusals(tmp_path):
    path = _write(tmp_path / "w.csv")
    (tmp_path / "bad.csv").write_text("a,b,c,d\n1,2,3,4\n")
    with pytest.raises(InputError, match="not a JODIE file"):
        graphsys.ingest(tmp_path / "bad.csv", tmp_path / "g", format="jodie")
    with pytest.raises(ParameterError, match="edge_columns"):
        graphsys.ingest(path, tmp_path / "g", format="jodie", edge_columns=["x"])
    g = graphsys.ingest(path, tmp_path / "g", format="jodie")
    with pytest.raises(ParameterError, match="format"):
        graphsys.ingest(path, g.path, format="jodie", append=True, edge_set="later")


def test_cli_then_tgn_epoch(tmp_path):
    path = _write(tmp_path / "mooc.csv", n=60)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-m", "graphsys", "ingest", "--format", "jodie",
                           str(path), "--out", str(tmp_path / "g")], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    bad = tmp_path / "bad.csv"
    bad.write_text(HEADER + "0,0,5,0\n0,0,4,0\n")
    done = subprocess.run([sys.executable, "-m", "graphsys", "ingest", "--format", "jodie",
                           str(bad), "--out", str(tmp_path / "b")], env=env,
                          capture_output=True, text=True)
    assert done.returncode != 0 and len(done.stderr.strip().splitlines()) == 1
    assert "bad.csv:3: timestamp goes back in time" in done.stderr
    g = graphsys.open_graph(tmp_path / "g")
    res = train(g, TrainConfig(task="temporal-link", hidden=8, epochs=1, batch_size=10,
                               link_eval_negatives=5))
    assert np.isfinite(res.metrics["mrr"])
    assert len(res.extra["events"].src) == 60
