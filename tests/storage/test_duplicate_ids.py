"""A node partition holding one original id twice (its manifest sha256 updated, as a
hostile edit would) is refused by verify and by every engine's first touch, in one line."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pyarrow as pa
import pyarrow.ipc as paipc
import pytest

from graphsys import cli, open_graph
from graphsys.errors import FormatError
from graphsys.storage.format import MANIFEST, node_file
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources
from graphsys.storage.verify import verify_graph


def _graph(tmp_path, ids):
    src = np.array(ids)
    table = pa.table({"src": src, "dst": np.roll(src, 1)})
    ingest_sources([EdgeSource(table=table)], tmp_path / "g", IngestOptions(partitions=2))
    return tmp_path / "g"


def _rewrite_ids(graph_dir, partition, edit):
    """Rewrite the ``id`` column of a node partition with ``edit(ids)`` and update the
    manifest's sha256 and size, as a hostile edit would."""
    rel = node_file("node", partition)
    path = graph_dir / rel
    table = paipc.open_file(pa.memory_map(str(path))).read_all()
    ids = edit(table.column("id").to_pylist())
    table = table.set_column(table.schema.get_field_index("id"), "id",
                             pa.array(ids, table.schema.field("id").type))
    with pa.OSFile(str(path), "wb") as f, paipc.new_file(f, table.schema) as w:
        w.write_table(table)
    data = json.loads((graph_dir / MANIFEST).read_text())
    data["files"][rel] = {"sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                          "bytes": path.stat().st_size}
    (graph_dir / MANIFEST).write_text(json.dumps(data))


@pytest.mark.parametrize("ids", [list(range(10, 30)), [f"n{k}" for k in range(20)]])
def test_a_repeated_id_in_a_partition_is_refused(tmp_path, ids, capsys):
    g = _graph(tmp_path, ids)
    _rewrite_ids(g, 0, lambda xs: [xs[0], xs[0]] + xs[2:])
    with pytest.raises(FormatError, match="node id .* appears more than once"):
        verify_graph(g)
    with pytest.raises(FormatError, match="appears more than once"):
        open_graph(g).to_internal([ids[0]])
    rc = cli.main(["run", "pagerank", str(g), "--no-verify", "--out", str(tmp_path / "o.parquet")])
    err = capsys.readouterr().err.strip()
    assert rc != 0 and len(err.splitlines()) == 1 and "appears more than once" in err, err
    assert not (tmp_path / "o.parquet").exists()


def test_one_id_in_two_partitions_is_refused_by_verify(tmp_path):
    g = _graph(tmp_path, list(range(10, 30)))
    other = open_graph(g).node_ids(partition=1)[0]
    _rewrite_ids(g, 0, lambda xs: [int(other)] + xs[1:])
    with pytest.raises(FormatError, match="one node id in two partitions"):
        verify_graph(g, quick=True)
