"""verify and open_graph: corrupted, truncated and unknown-version graph directories."""

from __future__ import annotations

import json
import re

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


@pytest.mark.parametrize("claim", ["undirected", "dedupe", "drop_self_loops"])
def test_an_edge_set_rule_the_edges_break_is_named(tmp_path, claim):
    """A manifest edited to say ``undirected`` (or ``dedupe``, ``drop_self_loops``) of
    edges that are not: ``verify`` said the graph was sound, and ``degree_stats`` then
    counted 60 edges where 120 are stored (it halves an undirected set's rows). verify now
    checks each rule against the edges."""
    import numpy as np

    import graphsys
    from graphsys import measures

    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 30, 120), rng.integers(0, 30, 120)
    assert (src == dst).any() and len(set(zip(src, dst))) < 120  # a loop and a repeat
    graphsys.from_numpy(src, dst, tmp_path / "g", partitions=2)
    verify_graph(tmp_path / "g")
    m = json.loads((tmp_path / "g" / MANIFEST).read_text())
    m["edge_sets"]["default"][claim] = True
    (tmp_path / "g" / MANIFEST).write_text(json.dumps(m))
    with pytest.raises(FormatError, match=rf"bucket-0000\d-0000\d\.arrow: edge set 'default' "
                                          rf"breaks its manifest rule {claim} "):
        verify_graph(tmp_path / "g", quick=True)
    if claim == "undirected":
        assert measures.degree_stats(open_graph(tmp_path / "g")).num_edges == 60  # trusted


def _rewrite_first_weight(graph_dir, rel, value):
    """Set the first value of the one column of ``rel`` whose name is ``weight`` (a bucket
    or an index file) to ``value`` and record the file's new size and sha256 in the
    manifest: a consistent but hostile directory."""
    import hashlib

    import pyarrow as pa
    import pyarrow.ipc as paipc

    path = graph_dir / rel
    table = paipc.open_file(path).read_all()
    k = table.schema.get_field_index("weight")
    weights = table.column(k).to_numpy().copy()
    weights[0] = value
    table = table.set_column(k, "weight", pa.array(weights, pa.float32()))
    with paipc.new_file(path, table.schema) as w:
        w.write_table(table)
    m = json.loads((graph_dir / MANIFEST).read_text())
    data = path.read_bytes()
    m["files"][rel] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    (graph_dir / MANIFEST).write_text(json.dumps(m))


@pytest.mark.parametrize("rel", [bucket_file("default", 0, 0),
                                 "index/default/csr-weight.arrow"])
def test_a_weight_that_is_not_finite_is_named(tmp_path, rel):
    """Ingest refuses NaN and infinite weights; a bucket or CSR index file rewritten with
    one (its size and hash in the manifest updated) passed verify, and to_scipy summed to
    nan."""
    import numpy as np

    import graphsys

    g = graphsys.from_numpy([0, 1, 2], [1, 2, 0], tmp_path / "g",
                            weight=np.array([1.0, 2.0, 3.0]))
    from graphsys.storage.adjacency_index import build_index

    build_index(g, ["csr"])
    verify_graph(tmp_path / "g")
    _rewrite_first_weight(tmp_path / "g", rel, np.nan)
    with pytest.raises(FormatError, match=rf"{re.escape(rel)}: a weight is not finite"):
        verify_graph(tmp_path / "g")
