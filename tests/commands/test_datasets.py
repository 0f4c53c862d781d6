"""``graphsys datasets list|fetch|ingest`` through the CLI entry point."""

from __future__ import annotations

import functools
import gzip
import hashlib
import http.server
import json
import os
import threading
from pathlib import Path

import pytest

from graphsys import cli, open_graph

REPO = Path(__file__).resolve().parents[2]
EDGES = b"# tiny\n1\t2\n2\t3\n3\t1\n"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    """Only the datasets command is registered; no env overrides, no writes to ~/.cache."""
    monkeypatch.setattr(cli, "COMMANDS", ("datasets",))
    for var in ("GRAPHSYS_REGISTRY", "GRAPHSYS_MIRROR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GRAPHSYS_DATA", str(tmp_path / "default-cache"))


#: The local dataset mirror, located before any test clears ``GRAPHSYS_MIRROR``.
MIRROR = Path(os.environ.get("GRAPHSYS_MIRROR") or REPO.parent / "shared" / "datasets")


@pytest.fixture
def mirror() -> Path:
    if not MIRROR.is_dir():
        pytest.skip(f"dataset mirror not found: set GRAPHSYS_MIRROR or provide {MIRROR}")
    return MIRROR


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(["datasets", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_list(capsys):
    code, out, _ = run(capsys, "list")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["NAME", "KIND", "NODES", "EDGES"]
    assert len(lines) == 17
    assert any(line.startswith("movielens-100k") and "[no redistribution]" in line
               for line in lines)


def test_list_json(capsys):
    code, out, _ = run(capsys, "list", "--json")
    entries = {e["name"]: e for e in json.loads(out)}
    assert code == 0 and len(entries) == 16
    assert entries["movielens-100k"]["licence"]["redistribute"] is False
    cora_url = entries["cora"]["files"][0]["url"]
    assert cora_url == "https://linqs-data.soe.ucsc.edu/public/lbc/cora.tgz"
    assert entries["fb15k-237"]["stats"]["relations"] == 237


def test_unknown_dataset(capsys, tmp_path):
    code, out, err = run(capsys, "fetch", "kora", "--cache", str(tmp_path))
    assert code == 2 and out == ""
    assert err.startswith("error: unknown dataset 'kora'; known datasets: bitcoin-alpha, ")
    assert err.count("\n") == 1


def test_fetch_mirror_json(capsys, tmp_path, mirror):
    code, out, _ = run(capsys, "fetch", "email-eu-core", "--mirror", str(mirror),
                       "--cache", str(tmp_path), "--json")
    result = json.loads(out)
    assert code == 0 and result["dataset"] == "email-eu-core"
    assert {f["source"] for f in result["files"].values()} == {"mirror"}
    assert Path(result["files"]["labels"]["path"]).is_file()
    code, out, _ = run(capsys, "fetch", "email-eu-core", "--cache", str(tmp_path))
    assert code == 0 and out.count(", cache, sha256 ") == 2


def test_fetch_env_mirror_and_cache(capsys, tmp_path, mirror, monkeypatch):
    monkeypatch.setenv("GRAPHSYS_MIRROR", str(mirror))
    monkeypatch.setenv("GRAPHSYS_DATA", str(tmp_path / "env-cache"))
    code, _, err = run(capsys, "fetch", "movielens-100k")
    assert code == 0
    assert "may not be redistributed" in err
    assert (tmp_path / "env-cache/movielens-100k/u.data").is_file()


def test_fetch_sha_mismatch_is_one_line(capsys, tmp_path, mirror):
    bad = tmp_path / "mirror/snap"
    bad.mkdir(parents=True)
    data = (mirror / "snap/ca-GrQc.txt.gz").read_bytes()
    (bad / "ca-GrQc.txt.gz").write_bytes(data[:-8] + bytes(8))
    code, out, err = run(capsys, "fetch", "ca-grqc", "--mirror", str(tmp_path / "mirror"),
                         "--cache", str(tmp_path / "cache"))
    assert code == 2
    assert err.startswith("error: sha256 mismatch for snap/ca-GrQc.txt.gz (from ")
    assert err.count("\n") == 1 and err.count("1b03c9b09c49b1074577101b49df341f7db8013b5e870") == 1
    assert not (tmp_path / "cache/snap/ca-GrQc.txt.gz").exists()


def test_ingest_cora_json(capsys, tmp_path, mirror):
    out_dir = tmp_path / "cora-graph"
    code, out, _ = run(capsys, "ingest", "cora", "--out", str(out_dir), "--partitions", "2",
                       "--partitioner", "range", "--mirror", str(mirror), "--split", "random",
                       "--cache", str(tmp_path / "cache"), "--memory-limit", "256MiB", "--json")
    result = json.loads(out)
    assert code == 0
    assert result["ingest"]["nodes"] == {"node": 2708}
    assert result["ingest"]["edges"] == {"default": 5429}
    assert result["metadata"]["labels"]["label"][-1] == "Theory"
    g = open_graph(out_dir)
    assert g.num_partitions == 2 and g.manifest.partitioner["name"] == "range"
    assert g.node_column("feat").shape == (2708, 1433)
    # the default split is the public one: the Planetoid graph, both directions stored
    code, out, _ = run(capsys, "ingest", "cora", "--out", str(tmp_path / "public"),
                       "--mirror", str(mirror), "--cache", str(tmp_path / "cache"), "--json")
    result = json.loads(out)
    assert code == 0 and result["ingest"]["edges"] == {"default": 10556}
    assert result["metadata"]["split"]["method"] == "public"


@pytest.mark.parametrize("quiet", [False, True])
def test_ingest_quiet_turns_progress_off(capsys, tmp_path, mirror, monkeypatch, quiet):
    """--quiet, as on graphsys ingest: no progress lines on a stderr that is no terminal."""
    from graphsys.datasets import loaders

    seen = {}

    def fake_ingest(fetched, out, opts, split):
        seen["progress"] = opts.progress
        raise SystemExit(0)

    monkeypatch.setattr(loaders, "ingest_dataset", fake_ingest)
    with pytest.raises(SystemExit):
        cli.main(["datasets", "ingest", "ca-grqc", "--out", str(tmp_path / "g"), "--mirror",
                  str(mirror), "--cache", str(tmp_path / "cache"),
                  *(["--quiet"] if quiet else [])])
    assert seen["progress"] is not quiet


def test_ingest_text_and_bad_options(capsys, tmp_path, mirror):
    cache = ["--mirror", str(mirror), "--cache", str(tmp_path / "cache")]
    code, out, _ = run(capsys, "ingest", "wiki-vote", "--out", str(tmp_path / "g"), *cache)
    assert code == 0
    assert "ingested wiki-vote into" in out and "edges (default: 103,689)" in out
    code, _, err = run(capsys, "ingest", "wiki-vote", "--out", str(tmp_path / "h"),
                       "--partitioner", "nope", "--partitions", "2", *cache)
    assert code == 2 and err.startswith("error: partitioner: unknown partitioner 'nope'")
    code, _, err = run(capsys, "ingest", "wiki-vote", "--out", str(tmp_path / "h"),
                       "--memory-limit", "lots", *cache)
    assert code == 2 and err.startswith("error: --memory-limit: cannot parse size 'lots'")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def test_download_over_http_with_custom_registry(capsys, tmp_path, monkeypatch):
    """A registry from GRAPHSYS_REGISTRY whose file is served by a loopback HTTP server."""
    www = tmp_path / "www"
    www.mkdir()
    (www / "tiny.txt.gz").write_bytes(gzip.compress(EDGES))
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(www)))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/tiny.txt.gz"
        registry = tmp_path / "registry"
        registry.mkdir()
        text = (REPO / "datasets" / "ca-grqc.toml").read_text()
        mirror_gz = gzip.compress(EDGES, mtime=0)
        for old, new in [
            ('name = "ca-grqc"', 'name = "tiny"'),
            ("https://snap.stanford.edu/data/ca-GrQc.txt.gz", url),
            ("1b03c9b09c49b1074577101b49df341f7db8013b5e870ddd673542b49182e770",
             hashlib.sha256(mirror_gz).hexdigest()),
            ("bytes = 109040", f"bytes = {len(mirror_gz)}"),
            ("f8ce6e931e068b878044b783da99ef603f566c87bcbce7991cd53720879f1660",
             hashlib.sha256(EDGES).hexdigest()),
            ("bytes = 351704", f"bytes = {len(EDGES)}"),
            ('line_ending = "crlf"', 'line_ending = "lf"'),
        ]:
            assert old in text
            text = text.replace(old, new)
        (registry / "tiny.toml").write_text(text)
        monkeypatch.setenv("GRAPHSYS_REGISTRY", str(registry))
        code, out, err = run(capsys, "ingest", "tiny", "--out", str(tmp_path / "g"),
                             "--cache", str(tmp_path / "cache"), "--json")
        assert code == 0, err
        result = json.loads(out)
        assert result["fetch"]["files"]["edges"]["source"] == "download"
        assert result["ingest"]["nodes"] == {"node": 3}
        assert result["ingest"]["edges"] == {"default": 6}  # undirected: both directions
        (www / "tiny.txt.gz").write_bytes(gzip.compress(EDGES + b"3\t4\n"))
        code, _, err = run(capsys, "fetch", "tiny", "--cache", str(tmp_path / "cache2"))
        assert err.splitlines()[0] == f"downloading {url}"
        assert code == 2 and err.splitlines()[1].startswith(
            "error: sha256 mismatch for snap/ca-GrQc.txt (from ")
        assert len(err.splitlines()) == 2
        assert not (tmp_path / "cache2/snap/ca-GrQc.txt").exists()
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
