"""verify and open_graph: corrupted, truncated and unknown-version graph directories."""

from __future__ import annotations

import json

import pytest

from graphsys import open_graph
from graphsys.errors import FormatError
from graphsys.storage.format import MANIFEST, bucket_file
from graphsys.storage.verify import verify_graph


def test_verify_ok(graph_dir):
    result = verify_graph(graph_dir)
    assert result["edges"] == 2000 and result["files"] == 2 + 4


def test_flipped_byte_is_named(graph_dir):
    f = graph_dir / bucket_file("default", 0, 1)
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0xFF
    f.write_bytes(bytes(data))
    open_graph(graph_dir)  # same size: opening is cheap and does not hash
    with pytest.raises(FormatError, match=r"bucket-00000-00001\.arrow: sha256 mismatch"):
        verify_graph(graph_dir)


def test_truncated_bucket_fails_open(graph_dir):
    f = graph_dir / bucket_file("default", 1, 1)
    f.write_bytes(f.read_bytes()[:100])
    with pytest.raises(FormatError, match=r"bucket-00001-00001\.arrow: size 100 bytes"):
        open_graph(graph_dir)


def test_missing_file(graph_dir):
    (graph_dir / bucket_file("default", 1, 0)).unlink()
    with pytest.raises(FormatError, match="missing"):
        open_graph(graph_dir)


def test_unknown_version(graph_dir):
    m = json.loads((graph_dir / MANIFEST).read_text())
    m["format_version"] = 99
    (graph_dir / MANIFEST).write_text(json.dumps(m))
    with pytest.raises(FormatError, match="unsupported format_version 99"):
        open_graph(graph_dir)


def test_manifest_field_errors_name_the_field(graph_dir):
    m = json.loads((graph_dir / MANIFEST).read_text())
    del m["edge_sets"]["default"]["num_edges"]
    (graph_dir / MANIFEST).write_text(json.dumps(m))
    with pytest.raises(FormatError, match="missing field 'edge_sets.default.num_edges'"):
        open_graph(graph_dir)
    (graph_dir / MANIFEST).write_text("{not json")
    with pytest.raises(FormatError, match="not valid JSON"):
        open_graph(graph_dir)


def test_no_manifest(tmp_path):
    (tmp_path / "x").mkdir()
    with pytest.raises(FormatError, match="no manifest"):
        open_graph(tmp_path / "x")
