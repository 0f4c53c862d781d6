"""Fetching: mirror copies, the cache, and real HTTP downloads from a loopback server."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import shutil
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

import graphsys.datasets.fetch as fetch_mod
from graphsys.datasets.fetch import cache_dir, fetch, mirror_dir
from graphsys.datasets.loaders import plan_ingest
from graphsys.datasets.registry import get_dataset, load_entry
from graphsys.errors import GraphsysError, InputError

REPO = Path(__file__).resolve().parents[2]
EDGES = b"# a tiny graph\n1\t2\n2\t3\n3\t4\n"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tiny_entry(directory: Path, files: list[dict], name: str = "tiny") -> Path:
    """Write a minimal edge-list registry entry ``<directory>/<name>.toml``.

    Each file dict has ``name, path, data`` (the mirror bytes), ``url, unpack, dpath,
    ddata`` (the derived download bytes) and optionally ``member``, ``strip``,
    ``compression``.
    """
    blocks = []
    for f in files:
        member = f'member = "{f["member"]}"\n' if "member" in f else ""
        blocks.append(f'''
[[files]]
name = "{f["name"]}"
path = "{f["path"]}"
bytes = {len(f["data"])}
sha256 = "{sha(f["data"])}"
compression = "{f.get("compression", "none")}"
[files.download]
url = "{f["url"]}"
unpack = "{f["unpack"]}"
{member}strip = "{f.get("strip", "none")}"
path = "{f["dpath"]}"
bytes = {len(f["ddata"])}
sha256 = "{sha(f["ddata"])}"
[files.format]
delimiter = "\\t"
comment = "#"
header = false
columns = ["from", "to"]
line_ending = "lf"
encoding = "ascii"
''')
    text = f'''schema = 1
name = "{name}"
title = "Tiny"
description = "A four-node path, for tests."
homepage = "https://example.org/tiny"
loader = "edge_list"
kind = "homogeneous"
citation = ["Nobody. A tiny graph. 2024."]
[licence]
name = "test data"
terms = "none"
redistribute = true
[stats]
nodes = 4
edges = 3
{"".join(blocks)}
[graph]
edges = "{files[0]["name"]}"
src = "from"
dst = "to"
directed = true
both_directions = false
[split]
method = "none"
'''
    path = directory / f"{name}.toml"
    path.write_text(text)
    return path


def leftovers(root: Path) -> list[str]:
    """Files under ``root`` (partial downloads, temporaries, outputs)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


# -- mirror and cache -------------------------------------------------------------------------

def test_fetch_from_mirror_then_cache(mirror, tmp_path):
    ds = get_dataset("cora", REPO / "datasets")
    first = fetch(ds, cache=tmp_path, mirror=mirror)
    assert {f.source for f in first.files.values()} == {"mirror"}
    for f in ds.files:
        got = first.files[f.name]
        assert got.path == tmp_path / f.path and got.sha256 == f.sha256
        assert got.path.read_bytes() == (mirror / f.path).read_bytes()
    again = fetch(ds, cache=tmp_path, mirror=mirror)
    assert {f.source for f in again.files.values()} == {"cache"}
    assert leftovers(tmp_path) == sorted(f.path for f in ds.files)


def test_corrupt_cache_file_is_replaced(mirror, tmp_path):
    ds = get_dataset("cora", REPO / "datasets")
    fetch(ds, cache=tmp_path, mirror=mirror)
    (tmp_path / "cora/cora.cites").write_bytes(b"35\t1033\n")
    result = fetch(ds, cache=tmp_path, mirror=mirror)
    assert result.files["cites"].source == "mirror"
    assert sha((tmp_path / "cora/cora.cites").read_bytes()) == ds.file("cites").sha256


def test_mirror_sha_mismatch_is_one_line_and_leaves_nothing(mirror, tmp_path):
    ds = get_dataset("cora", REPO / "datasets")
    bad_mirror = tmp_path / "mirror"
    shutil.copytree(mirror / "cora", bad_mirror / "cora")
    cites = bad_mirror / "cora/cora.cites"
    cites.chmod(0o644)
    cites.write_bytes(cites.read_bytes().replace(b"35\t1033\n", b"35\t1034\n", 1))
    cache = tmp_path / "cache"
    with pytest.raises(GraphsysError) as exc:
        fetch(ds, cache=cache, mirror=bad_mirror)
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith(f"sha256 mismatch for cora/cora.cites (from {cites})")
    assert f"expected {ds.file('cites').sha256}, got {sha(cites.read_bytes())}" in msg
    assert "cora/cora.cites" not in leftovers(cache)
    assert not [p for p in leftovers(cache) if ".part" in p]


def test_a_killed_fetchs_partial_copy_is_removed_by_the_next(mirror, tmp_path):
    # a fetch killed mid-copy (kill -9) left cora/.cora.cites.part-PID-HEX for good, one
    # more per kill; the downloads' artifacts were already cleaned up this way
    import subprocess
    import sys

    ds = get_dataset("cora", REPO / "datasets")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    stale = tmp_path / "cora" / f".cora.cites.part-{dead}-0123abcd"
    stale.parent.mkdir()
    stale.write_bytes(b"35\t10")                      # cut short by the kill
    fetch(ds, cache=tmp_path, mirror=mirror)
    assert leftovers(tmp_path) == sorted(f.path for f in ds.files)


def test_mirror_file_of_another_size_is_refused_before_copying(mirror, tmp_path,
                                                               monkeypatch):
    """A mirror file of another size than the registry's (a wrong, grown or foreign file)
    was copied whole into the cache and only then refused by its digest; now its size is
    compared first and not a byte is read."""
    from graphsys.datasets import fetch as fetch_module

    ds = get_dataset("cora", REPO / "datasets")
    bad_mirror = tmp_path / "mirror"
    shutil.copytree(mirror / "cora", bad_mirror / "cora")
    cites = bad_mirror / "cora/cora.cites"
    cites.chmod(0o644)
    with open(cites, "ab") as fh:
        fh.write(b"1\t2\n")
    written = []
    real = fetch_module._write_verified
    monkeypatch.setattr(fetch_module, "_write_verified",
                        lambda dest, *a, **k: written.append(dest.name) or real(dest, *a, **k))
    with pytest.raises(GraphsysError, match=r"size mismatch for cora/cora\.cites \(from .*"
                                            r"expected [\d,]+ bytes, got [\d,]+ \(not copied\)"):
        fetch(ds, cache=tmp_path / "cache", mirror=bad_mirror)
    assert "cora.cites" not in written


def test_file_missing_from_mirror(tmp_path):
    ds = get_dataset("cora", REPO / "datasets")
    (tmp_path / "mirror").mkdir()
    with pytest.raises(InputError, match=r"cora\.content\.gz: not in the mirror"):
        fetch(ds, cache=tmp_path / "cache", mirror=tmp_path / "mirror")


def test_cache_and_mirror_locations(monkeypatch, tmp_path):
    monkeypatch.setenv("GRAPHSYS_DATA", str(tmp_path / "env-cache"))
    assert cache_dir() == tmp_path / "env-cache"
    assert cache_dir(tmp_path / "opt") == tmp_path / "opt"
    monkeypatch.delenv("GRAPHSYS_DATA")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_dir() == tmp_path / ".cache/graphsys/datasets"
    monkeypatch.delenv("GRAPHSYS_MIRROR", raising=False)
    assert mirror_dir() is None
    monkeypatch.setenv("GRAPHSYS_MIRROR", str(tmp_path))
    assert mirror_dir() == tmp_path
    with pytest.raises(GraphsysError, match="not a directory"):
        mirror_dir(tmp_path / "nope")


# -- downloads from a loopback HTTP server -----------------------------------------------------

def test_download_gzip_verified(http_root, tmp_path):
    base, www = http_root
    (www / "tiny.txt.gz").write_bytes(gzip.compress(EDGES))
    ds = load_entry(tiny_entry(tmp_path, [dict(
        name="edges", path="tiny/tiny.txt.gz", data=gzip.compress(EDGES, mtime=0),
        compression="gzip", url=f"{base}/tiny.txt.gz", unpack="gzip", dpath="tiny/tiny.txt",
        ddata=EDGES)]))
    cache = tmp_path / "cache"
    result = fetch(ds, cache=cache, mirror=None)
    got = result.files["edges"]
    assert (got.source, got.derived, got.path) == ("download", True, cache / "tiny/tiny.txt")
    assert got.path.read_bytes() == EDGES
    assert leftovers(cache) == ["tiny/tiny.txt"]
    assert fetch(ds, cache=cache).files["edges"].source == "cache"


def test_download_archive_members_once_per_url(http_root, tmp_path, monkeypatch):
    base, www = http_root
    labels = b"1\t0\n2\t1\n"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("Release/edges.txt", EDGES)
        zf.writestr("Release/labels.txt", labels)
    (www / "tiny.zip").write_bytes(buf.getvalue())
    url = f"{base}/tiny.zip"
    ds = load_entry(tiny_entry(tmp_path, [
        dict(name="edges", path="tiny/edges.txt", data=EDGES, url=url, unpack="zip",
             member="Release/edges.txt", dpath="tiny/edges.txt", ddata=EDGES),
        dict(name="labels", path="tiny/labels.txt", data=labels, url=url, unpack="zip",
             member="Release/labels.txt", dpath="tiny/labels.txt", ddata=labels)]))
    calls = []
    real = fetch_mod._download
    monkeypatch.setattr(fetch_mod, "_download",
                        lambda u, d, **kw: (calls.append(u), real(u, d, **kw)))
    result = fetch(ds, cache=tmp_path / "cache")
    assert calls == [url]
    assert result.path("labels").read_bytes() == labels
    assert leftovers(tmp_path / "cache") == ["tiny/edges.txt", "tiny/labels.txt"]


def test_download_sha_mismatch_leaves_no_file(http_root, tmp_path):
    base, www = http_root
    corrupted = EDGES.replace(b"3\t4", b"3\t5")
    (www / "tiny.txt").write_bytes(corrupted)
    ds = load_entry(tiny_entry(tmp_path, [dict(
        name="edges", path="tiny/tiny.txt", data=EDGES, url=f"{base}/tiny.txt", unpack="none",
        dpath="tiny/tiny.txt", ddata=EDGES)]))
    cache = tmp_path / "cache"
    with pytest.raises(GraphsysError) as exc:
        fetch(ds, cache=cache)
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg == (f"sha256 mismatch for tiny/tiny.txt (from {base}/tiny.txt): "
                   f"expected {sha(EDGES)}, got {sha(corrupted)}")
    assert leftovers(cache) == []


def test_download_http_error(http_root, tmp_path):
    base, _ = http_root
    ds = load_entry(tiny_entry(tmp_path, [dict(
        name="edges", path="tiny/tiny.txt", data=EDGES, url=f"{base}/missing.txt",
        unpack="none", dpath="tiny/tiny.txt", ddata=EDGES)]))
    with pytest.raises(GraphsysError, match=rf"^download of {base}/missing\.txt failed: HTTP 404"):
        fetch(ds, cache=tmp_path / "cache")
    assert leftovers(tmp_path / "cache") == []


def test_download_larger_than_expected_is_cut_short(http_root, tmp_path):
    base, www = http_root
    (www / "big.txt").write_bytes(EDGES * 1000)
    ds = load_entry(tiny_entry(tmp_path, [dict(
        name="edges", path="tiny/tiny.txt", data=EDGES, url=f"{base}/big.txt", unpack="none",
        dpath="tiny/tiny.txt", ddata=EDGES)]))
    n = len(EDGES)
    with pytest.raises(GraphsysError, match=rf"^sha256 mismatch for tiny/tiny.txt \(from "
                       rf"{base}/big\.txt\): expected {sha(EDGES)} \({n} bytes\), got more "
                       rf"than {n} bytes"):
        fetch(ds, cache=tmp_path / "cache")
    assert leftovers(tmp_path / "cache") == []


def _tar(entries: list[tuple[str, bytes | str]]) -> bytes:
    """A .tar.gz; a ``str`` payload makes a symlink to that target."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
        for name, payload in entries:
            info = tarfile.TarInfo(name)
            if isinstance(payload, str):
                info.type, info.linkname = tarfile.SYMTYPE, payload
                tar.addfile(info)
            else:
                info.size = len(payload)
                tar.addfile(info, io.BytesIO(payload))
    return buf.getvalue()


def test_tar_member_with_header_strip_and_no_traversal(http_root, tmp_path):
    """Only the named member is written, at the registry's path; a traversal member
    in the same archive is never extracted."""
    base, www = http_root
    body = b"2 1\n3 2\n4 3\n"
    mtx = b"%%MatrixMarket matrix coordinate pattern symmetric\n%comment\n4 4 3\n" + body
    (www / "tiny.tar.gz").write_bytes(_tar([("../../evil.txt", b"owned"),
                                            ("tiny/tiny.mtx", mtx)]))
    ds = load_entry(tiny_entry(tmp_path, [dict(
        name="edges", path="tiny/tiny.txt.gz", data=gzip.compress(body), compression="gzip",
        url=f"{base}/tiny.tar.gz", unpack="tar", member="tiny/tiny.mtx",
        strip="matrixmarket-header", dpath="tiny/tiny.txt", ddata=body)]))
    cache = tmp_path / "deep" / "cache"
    result = fetch(ds, cache=cache)
    assert result.path("edges").read_bytes() == body
    assert leftovers(tmp_path / "deep") == ["cache/tiny/tiny.txt"]
    assert not list(tmp_path.rglob("evil.txt"))


def test_tar_symlink_member_is_refused(http_root, tmp_path):
    base, www = http_root
    (www / "link.tar.gz").write_bytes(_tar([("tiny/tiny.txt", "/etc/passwd")]))
    ds = load_entry(tiny_entry(tmp_path, [dict(
        name="edges", path="tiny/tiny.txt", data=EDGES, url=f"{base}/link.tar.gz",
        unpack="tar", member="tiny/tiny.txt", dpath="tiny/tiny.txt", ddata=EDGES)]))
    with pytest.raises(GraphsysError, match="is not a regular file"):
        fetch(ds, cache=tmp_path / "cache")
    assert leftovers(tmp_path / "cache") == []


def test_snap_header_strip(http_root, tmp_path):
    base, www = http_root
    body = b"30\t1412\r\n30\t3352\r\n"
    (www / "wiki.txt.gz").write_bytes(gzip.compress(b"# one\r\n# two\r\n" + body))
    ds = load_entry(tiny_entry(tmp_path, [dict(
        name="edges", path="tiny/wiki.txt.gz", data=gzip.compress(b"# one\r\n" + body),
        compression="gzip", url=f"{base}/wiki.txt.gz", unpack="gzip", strip="snap-header",
        dpath="tiny/wiki.edges.txt", ddata=body)]))
    assert fetch(ds, cache=tmp_path / "cache").path("edges").read_bytes() == body


def test_real_cora_entry_downloads_from_publisher_layout(http_root, tmp_path, mirror):
    """The registry's cora entry, with its URLs pointed at a loopback copy of the LINQS
    cora.tgz layout and of the Planetoid files, built from the mirror: members are
    verified and loadable, for the random and the public split."""
    base, www = http_root
    content = gzip.decompress((mirror / "cora/cora.content.gz").read_bytes())
    (www / "cora.tgz").write_bytes(_tar([
        ("cora/README", (mirror / "cora/README").read_bytes()),
        ("cora/cora.cites", (mirror / "cora/cora.cites").read_bytes()),
        ("cora/cora.content", content)]))
    for f in (mirror / "cora/planetoid").iterdir():
        (www / f.name).write_bytes(f.read_bytes())
    ds = get_dataset("cora", REPO / "datasets")
    files = tuple(dataclasses.replace(f, download=dataclasses.replace(
        f.download, url=f"{base}/cora.tgz" if f.download.url.endswith("cora.tgz")
        else f"{base}/{f.download.url.rsplit('/', 1)[1]}")) for f in ds.files)
    ds = dataclasses.replace(ds, files=files)
    cache = tmp_path / "cache"
    result = fetch(ds, cache=cache)
    assert {f.source for f in result.files.values()} == {"download"}
    assert result.path("content") == cache / "cora/cora.content"
    assert result.path("content").read_bytes() == content
    planetoid = sorted(f"cora/planetoid/{f.name}" for f in (mirror / "cora/planetoid").iterdir())
    assert leftovers(cache) == ["cora/README", "cora/cora.cites", "cora/cora.content",
                                *planetoid]
    plan = plan_ingest(result, "random")
    assert plan.nodes[0].table.num_rows == 2708
    public = plan_ingest(result)
    assert public.nodes[0].table.num_rows == 2708
    assert public.metadata["split"]["train"] == 140


def _planetoid_like(rng, feature_dim: int, num_classes: int) -> dict[str, bytes]:
    """Planetoid-format files (pickles of what the publishers wrote: csr features, one-hot
    labels, a defaultdict of adjacency lists, a test.index text) of a small random graph:
    20 training nodes per class, 500 validation, 40 more labelled, 30 test nodes."""
    import collections
    import pickle

    import scipy.sparse as sp

    n_all, n_test = 20 * num_classes + 540, 30
    onehot = np.eye(num_classes)[rng.integers(0, num_classes, n_all + n_test)]
    onehot[:20 * num_classes] = np.eye(num_classes)[np.repeat(np.arange(num_classes), 20)]
    feats = sp.random(n_all + n_test, feature_dim, density=0.05, format="csr", random_state=1)
    graph = collections.defaultdict(list)
    for u, v in rng.integers(0, n_all + n_test, (2000, 2)):
        graph[int(u)].append(int(v))
    test_ids = rng.permutation(np.arange(n_all, n_all + n_test))
    order = np.argsort(test_ids)  # tx / ty row k is node test_ids[k]
    dump = lambda obj: pickle.dumps(obj, protocol=4)  # noqa: E731
    return {"x": dump(feats[:20 * num_classes]), "y": dump(onehot[:20 * num_classes]),
            "allx": dump(feats[:n_all]), "ally": dump(onehot[:n_all]),
            "tx": dump(feats[n_all:][order]), "ty": dump(onehot[n_all:][order]),
            "graph": dump(dict(graph)),
            "test.index": "".join(f"{t}\n" for t in np.sort(test_ids)).encode()}


def test_pubmed_entry_downloads_and_loads_both_splits(http_root, tmp_path):
    """The registry's pubmed entry (loader planetoid; its files are not in the mirror) with
    its URLs pointed at a loopback server holding Planetoid-format files of a small graph,
    and the checksums of those files: every file is downloaded and verified, the public
    split is the files' and the random split is drawn over the same nodes; a graph whose
    features are not the entry's 500 columns is refused naming the file."""
    base, www = http_root
    files = _planetoid_like(np.random.default_rng(0), 500, 3)
    for part, data in files.items():
        (www / f"ind.pubmed.{part}").write_bytes(data)
    ds = get_dataset("pubmed", REPO / "datasets")
    assert {f.download.url.rsplit("/", 1)[1] for f in ds.files} == {
        f"ind.pubmed.{p}" for p in files}

    def served(f):
        data = files[f.name.removeprefix("planetoid-").replace("-", ".")]
        dl = dataclasses.replace(f.download, url=f"{base}/{f.download.url.rsplit('/', 1)[1]}",
                                 sha256=sha(data), bytes=len(data))
        return dataclasses.replace(f, download=dl, sha256=sha(data), bytes=len(data))

    ds = dataclasses.replace(ds, files=tuple(served(f) for f in ds.files))
    result = fetch(ds, cache=tmp_path / "cache")
    assert {f.source for f in result.files.values()} == {"download"}
    public = plan_ingest(result)
    nodes = public.nodes[0].table
    assert nodes.num_rows == 630 and public.undirected
    assert public.metadata["split"] == {"method": "public", "reader": "planetoid",
                                        "train": 60, "val": 500, "test": 30}
    assert nodes["test_mask"].to_numpy(zero_copy_only=False)[600:].all()
    small = dataclasses.replace(ds, split={**ds.split, "val": 100, "test": 200})
    rand = plan_ingest(dataclasses.replace(result, dataset=small), "random")
    masks = [rand.nodes[0].table[k].to_numpy(zero_copy_only=False)
             for k in ("train_mask", "val_mask", "test_mask")]
    assert [int(m.sum()) for m in masks] == [60, 100, 200]
    assert not (masks[0] & masks[1]).any() and not (masks[1] & masks[2]).any()
    assert rand.metadata["split"]["method"] == "per-class-random"
    wide = dataclasses.replace(ds, graph={**ds.graph, "feature_dim": 499})
    with pytest.raises(InputError, match=r"ind\.pubmed\.allx: 500 feature columns, expected "
                                         r"graph\.feature_dim = 499"):
        plan_ingest(dataclasses.replace(result, dataset=wide))
