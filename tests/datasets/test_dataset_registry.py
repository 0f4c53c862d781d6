"""The registry TOML files: parsing, validation errors, location, and checksums vs the mirror."""

from __future__ import annotations

import gzip
import hashlib
import os
from pathlib import Path

import pytest

from graphsys.datasets import registry as reg
from graphsys.datasets.registry import get_dataset, load_entry, load_registry, registry_dir
from graphsys.errors import GraphsysError, InputError

REPO = Path(__file__).resolve().parents[2]
EXPECTED = {"cora", "citeseer", "fb15k-237", "movielens-100k", "ca-grqc", "ca-hepth",
            "email-enron", "email-eu-core", "ego-facebook", "soc-slashdot0902", "wiki-vote",
            "luxembourg-osm", "pubmed", "collegemsg", "bitcoin-alpha", "bitcoin-otc"}
#: Registry entries whose files the local mirror does not hold (checked by download only).
NOT_IN_MIRROR = {"pubmed"}
#: Mirror files whose copy added one header line to the publisher's headerless file: the
#: download is the mirror's lines after it.
MIRROR_ADDED_HEADER = {"snap-temporal/soc-sign-bitcoinalpha.csv",
                       "snap-temporal/soc-sign-bitcoinotc.csv"}


def test_registry_has_every_dataset(registry):
    assert set(registry) == EXPECTED
    assert list(registry) == sorted(registry)


def test_registry_is_data_only():
    directory = REPO / "datasets"
    assert sorted(p.stem for p in directory.glob("*.toml")) == sorted(EXPECTED)
    assert not list(directory.glob("*.py")), "the registry is data: no Python files"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_entry_validates(registry, name):
    ds = registry[name]
    assert ds.name == name and ds.source.name == f"{name}.toml"
    assert ds.description and ds.citation and ds.licence.terms
    assert ds.stats["nodes"] > 0 and ds.stats["edges"] > 0
    assert ds.licence.redistribute is (name != "movielens-100k")
    for f in ds.files:
        assert f.download.url.startswith("https://")
        assert (f.compression == "gzip") == f.path.endswith(".gz")
        if f.download.unpack in ("tar", "zip"):
            assert f.download.member
        if (f.compression == "none" and f.download.strip == "none"
                and f.path not in MIRROR_ADDED_HEADER):
            # a plain file downloaded as-is is the same file as in the mirror
            assert (f.download.sha256, f.download.bytes) == (f.sha256, f.bytes)


def test_graph_kinds(registry):
    assert registry["fb15k-237"].kind == "knowledge_graph"
    assert set(registry["fb15k-237"].graph["edge_sets"]) == {"train", "valid", "test"}
    ml = registry["movielens-100k"]
    assert ml.kind == "bipartite"
    assert (ml.graph["relation"], ml.graph["user_type"], ml.graph["item_type"]) == (
        "rated", "user", "item")
    assert registry["luxembourg-osm"].graph["index_base"] == 1
    assert registry["cora"].graph["classes"] == sorted(registry["cora"].graph["classes"])
    assert registry["cora"].split == {
        "method": "per-class-random", "seed": 0, "train_per_class": 20, "val": 500,
        "test": 1000, "note": registry["cora"].split["note"], "public": "planetoid"}


def test_registry_dir_default_is_repo_datasets(monkeypatch):
    monkeypatch.delenv(reg.ENV_REGISTRY, raising=False)
    assert registry_dir() == REPO / "datasets"


def test_registry_dir_installed_prefix(monkeypatch, tmp_path):
    """An installed package (no pyproject.toml beside it) uses <prefix>/share/graphsys."""
    site = tmp_path / "lib" / "site-packages"
    (site / "datasets").mkdir(parents=True)  # an unrelated top-level package
    (site / "datasets" / "x.toml").write_text("")
    share = tmp_path / "prefix" / "share" / "graphsys" / "datasets"
    share.mkdir(parents=True)
    (share / "cora.toml").write_text((REPO / "datasets" / "cora.toml").read_text())
    monkeypatch.delenv(reg.ENV_REGISTRY, raising=False)
    monkeypatch.setattr(reg, "__file__", str(site / "graphsys" / "datasets" / "registry.py"))
    monkeypatch.setattr(reg.sys, "prefix", str(tmp_path / "prefix"))
    assert registry_dir() == share
    share.joinpath("cora.toml").unlink()
    with pytest.raises(GraphsysError, match="no dataset registry found .* set GRAPHSYS_REGISTRY"):
        registry_dir()


def test_registry_dir_from_env(monkeypatch, tmp_path):
    (tmp_path / "cora.toml").write_text((REPO / "datasets" / "cora.toml").read_text())
    monkeypatch.setenv(reg.ENV_REGISTRY, str(tmp_path))
    assert registry_dir() == tmp_path
    assert list(load_registry()) == ["cora"]
    monkeypatch.setenv(reg.ENV_REGISTRY, str(tmp_path / "missing"))
    with pytest.raises(GraphsysError, match="GRAPHSYS_REGISTRY=.*not a directory"):
        registry_dir()


def test_unknown_dataset_lists_known_names():
    with pytest.raises(GraphsysError) as exc:
        get_dataset("cora2", REPO / "datasets")
    msg = str(exc.value)
    assert "unknown dataset 'cora2'" in msg and "cora, " in msg and "wiki-vote" in msg


def _broken(tmp_path: Path, old: str, new: str, name: str = "cora") -> Path:
    text = (REPO / "datasets" / f"{name}.toml").read_text()
    assert old in text
    path = tmp_path / f"{name}.toml"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize("old, new, message", [
    ('sha256 = "f952664e', 'sha256 = "F952664e', r"files\[0\]\.sha256: must be 64 lowercase hex"),
    ('bytes = 109653\n', '', r"files\[0\]\.bytes: missing"),
    ('redistribute = true', 'redistribute = "yes"', r"licence\.redistribute: must be a boolean"),
    ('member = "cora/cora.cites"', 'member = "../cora.cites"',
     r"files\[1\]\.download\.member: '\.\./cora\.cites' must be a plain relative path"),
    ('path = "cora/README"', 'path = "/etc/README"', r"files\[2\]\.path: .* plain relative"),
    ('unpack = "tar"', 'unpack = "rar"', r"files\[0\]\.download\.unpack: 'rar' is not one of"),
    ('unpack = "tar"', 'unpack = "gzip"', r"files\[0\]\.download\.member: only allowed with"),
    ('src = "citing"', 'src = "citer"', r"graph\.src: 'citer' is not a column of file 'cites'"),
    ('cites = "cites"', 'cites = "links"', r"graph\.cites: no file named 'links'"),
    ('content = "content"', 'content = "readme"', r"graph\.content: file 'readme' has no "),
    ('classes = ["Case_Based", "Genetic_Algorithms"',
     'classes = ["Genetic_Algorithms", "Case_Based"', r"graph\.classes: must be sorted"),
    ('feature_dim = 1433\n# Class', 'feature_dims = 1433\n# Class',
     r"graph\.feature_dims: unknown key"),
    ('name = "cora"', 'name = "kora"', r"name: 'kora' differs from the file name 'cora\.toml'"),
    ('schema = 1', 'schema = 2', r"schema: unsupported schema 2"),
    ('url = "https://linqs', 'url = "ftp://linqs', r"files\[0\]\.download\.url: .* not an http"),
    ('method = "per-class-random"', 'method = "random"', r"split\.method: 'random' is not one of"),
    ('delimiter = "\\t"', 'delimiter = "\\t\\t"', r"files\[0\]\.format\.delimiter: must be one"),
    ('loader = "linqs"', 'loader = "edge_list"', r"graph\.content: unknown key"),
    ('[stats]\n', '[stats]\nbad = -1\n', r"stats\.bad: must be a non-negative integer"),
    # NumPy's raw ValueError when the split was drawn at ingest
    ('seed = 0', 'seed = -1', r"split\.seed: must be a non-negative integer, got -1"),
])
def test_validation_errors_name_file_and_key(tmp_path, old, new, message):
    path = _broken(tmp_path, old, new)
    with pytest.raises(InputError, match=f"^{path}: {message}") as exc:
        load_entry(path)
    assert "\n" not in str(exc.value)


def test_invalid_toml_names_file(tmp_path):
    path = _broken(tmp_path, 'name = "cora"', 'name = cora')
    with pytest.raises(InputError, match=f"^{path}: not valid TOML"):
        load_entry(path)


def test_a_fifo_entry_is_refused_not_waited_on(tmp_path):
    # GRAPHSYS_REGISTRY=DIR holding a FIFO x.toml: 'graphsys datasets list' hung forever
    import os

    os.mkfifo(tmp_path / "x.toml")
    with pytest.raises(InputError, match=f"^{tmp_path / 'x.toml'}: cannot read .not a "
                                         f"regular file"):
        load_registry(tmp_path)


def test_empty_registry_dir_is_an_error(tmp_path):
    with pytest.raises(GraphsysError, match="no dataset entries"):
        load_registry(tmp_path)


# -- checksums against the local mirror -----------------------------------------------------

def _derived_from_mirror(data: bytes, compression: str, strip: str,
                         added_header: bool = False) -> bytes:
    """What a download yields after unpacking/stripping, reproduced from the mirror bytes
    (``added_header``: without the mirror copy's first line)."""
    if added_header:
        data = data[data.index(b"\n") + 1:]
    if compression == "gzip":
        data = gzip.decompress(data)
    if strip == "none":
        return data
    lines = data.splitlines(keepends=True)
    prefix = b"#" if strip == "snap-header" else b"%"
    k = 0
    while k < len(lines) and lines[k].startswith(prefix):
        k += 1
    if strip == "matrixmarket-header" and k:
        k += 1  # the size line after the comments (absent in the mirror body)
    return b"".join(lines[k:])


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sha256_matches_mirror(registry, mirror, name):
    if name in NOT_IN_MIRROR:
        assert not (mirror / registry[name].files[0].path).exists(), "move it out of the set"
        pytest.skip(f"{name}: no copy in the mirror (see datasets/{name}.toml)")
    for f in registry[name].files:
        data = (mirror / f.path).read_bytes()
        assert len(data) == f.bytes, f.path
        assert hashlib.sha256(data).hexdigest() == f.sha256, f.path
        derived = _derived_from_mirror(data, f.compression, f.download.strip,
                                       f.path in MIRROR_ADDED_HEADER)
        assert len(derived) == f.download.bytes, f.download.path
        assert hashlib.sha256(derived).hexdigest() == f.download.sha256, f.download.path


def test_repository_holds_no_dataset_copies(registry):
    """The repository never contains the data files (MovieLens may not be redistributed)."""
    digests = {f.sha256 for d in registry.values() for f in d.files}
    digests |= {f.download.sha256 for d in registry.values() for f in d.files}
    sizes = {f.bytes for d in registry.values() for f in d.files}
    sizes |= {f.download.bytes for d in registry.values() for f in d.files}
    skip = {".git", "__pycache__", ".pytest_cache", "venv", ".venv", "build", "dist"}
    for root, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if d not in skip and not d.endswith(".egg-info")]
        for name in files:
            path = Path(root, name)
            if path.is_file() and path.stat().st_size in sizes:
                assert hashlib.sha256(path.read_bytes()).hexdigest() not in digests, path
