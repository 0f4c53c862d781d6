"""feature_rows: a minibatch's rows of a (mapped) feature column, against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphsys.errors import GraphsysError
from graphsys.sampling.features import feature_rows


def test_float16_rows_widen_exactly_every_bit_pattern():
    """All 65,536 float16 values (zeros, subnormals, inf, NaN) come out as NumPy widens
    them, in the order of the ids, repeated ids included."""
    table = np.arange(1 << 16, dtype=np.uint16).view(np.float16).reshape(-1, 64)
    ids = np.random.default_rng(0).integers(0, len(table), 3000)
    got = feature_rows(table, ids)
    assert got.dtype == torch.float32 and got.shape == (3000, 64)
    want = table[ids].astype(np.float32)
    assert np.array_equal(got.numpy(), want, equal_nan=True)


def test_float32_rows_and_tensor_ids():
    table = np.random.default_rng(1).standard_normal((500, 7)).astype(np.float32)
    ids = torch.tensor([4, 0, 499, 4])
    assert np.array_equal(feature_rows(table, ids).numpy(), table[[4, 0, 499, 4]])
    assert feature_rows(table, np.zeros(0, np.int64)).shape == (0, 7)


def test_mapped_column(tmp_path):
    """A mapped float16 node column (what the billion-edge GNN reads) gives its rows."""
    from graphsys import open_graph
    from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources
    from graphsys.storage.node_columns import write_node_column

    f = tmp_path / "e.tsv"
    f.write_text("".join(f"{i}\t{(i * 7) % 50}\n" for i in range(50)))
    ingest_sources([EdgeSource([f])], tmp_path / "g", IngestOptions(partitions=2))
    feats = np.random.default_rng(2).standard_normal((50, 8)).astype(np.float16)
    write_node_column(tmp_path / "g", "x", "features", lambda lo, hi: feats[lo:hi], dim=8,
                      dtype="float16")
    col = open_graph(tmp_path / "g").mapped_node_column("x")
    ids = np.array([49, 3, 3, 0])
    assert np.array_equal(feature_rows(col, ids).numpy(), col[ids].astype(np.float32))


@pytest.mark.parametrize("bad", [[0, 10], [-1]])
def test_ids_outside_the_column_are_refused(bad):
    with pytest.raises(GraphsysError, match="outside the column's 10 rows"):
        feature_rows(np.zeros((10, 2), np.float16), np.array(bad))


def test_other_dtypes_are_refused():
    with pytest.raises(GraphsysError, match="float16/float32"):
        feature_rows(np.zeros((10, 2), np.float64), [1])
    with pytest.raises(GraphsysError, match="ids must be integers, got float64"):
        feature_rows(np.zeros((10, 2), np.float16), np.array([1.5]))
