"""SGC/SIGN propagation against a SciPy sparse-matrix reference."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

import graphsys
from graphsys.errors import GraphsysError
from graphsys.gnn.propagate import INDEX, propagate, read_hop, sign_features


def _reference(g, x, hops, self_loops):
    """S = D_in^-1/2 (A^T + I) D_out^-1/2 on the graph's own node order, the stored
    self-loops replaced by I (PyG's add_remaining_self_loops) when ``self_loops``."""
    a = graphsys.to_scipy(g).astype(np.float64)  # edge counts; rows = ids 0..N-1 ascending
    n = a.shape[0]
    if self_loops:
        a = (a - sp.diags(a.diagonal())).tocsr()
    eye = sp.identity(n) if self_loops else sp.csr_matrix((n, n))
    dout = np.asarray(a.sum(1)).ravel() + (1 if self_loops else 0)
    din = np.asarray(a.sum(0)).ravel() + (1 if self_loops else 0)
    inv = lambda d: np.where(d > 0, 1 / np.sqrt(np.maximum(d, 1e-30)), 0)  # noqa: E731
    s = sp.diags(inv(din)) @ (a.T + eye) @ sp.diags(inv(dout))
    out = [x.astype(np.float64)]
    for _ in range(hops):
        out.append(s @ out[-1])
    return out


@pytest.mark.parametrize("partitions,self_loops,undirected", [
    (1, True, True), (3, True, False), (4, False, True)])
def test_propagation_matches_scipy(tmp_path, partitions, self_loops, undirected):
    rng = np.random.default_rng(0)
    n = 120
    src, dst = rng.integers(0, n, 700), rng.integers(0, n, 700)
    src[:4], dst[:4] = [3, 3, 50, 119], [3, 3, 50, 119]    # self-loops, one twice
    x = rng.normal(size=(n, 5)).astype(np.float32)
    g = graphsys.from_numpy(src, dst, tmp_path / "g", num_nodes=n, node_columns={"feat": x},
                            partitions=partitions, undirected=undirected)
    out = propagate(g, tmp_path / "p", hops=3, self_loops=self_loops, chunk_bytes=64)
    ref = _reference(g, x, 3, self_loops)
    order = np.argsort(g.node_ids())                      # internal rows of ids 0..N-1
    for k in range(4):
        np.testing.assert_allclose(read_hop(out, k)[order], ref[k], rtol=2e-4, atol=2e-5)
    assert sign_features(out).shape == (n, 20)
    header = json.loads((out / INDEX).read_text())
    assert header["hops"] == 3 and len(header["files"]["3"]) == partitions


def test_refusals(tmp_path):
    g = graphsys.from_numpy([0, 1], [1, 2], tmp_path / "g", num_nodes=3)
    with pytest.raises(GraphsysError, match="no feature column 'feat'"):
        propagate(g, tmp_path / "p")
    with pytest.raises(GraphsysError, match="hops must be >= 1"):
        propagate(g, tmp_path / "p", hops=0)
    assert not (tmp_path / "p").exists()


def test_progress_is_a_bool_or_a_callable(tmp_path):
    """The GNN side follows the engines' one ``progress`` rule: a callable gets a Step per
    partition propagated, True shows the display, the same features either way."""
    from graphsys.progress import Step

    rng = np.random.default_rng(1)
    x = rng.normal(size=(30, 2)).astype(np.float32)
    g = graphsys.from_numpy(rng.integers(0, 30, 90), rng.integers(0, 30, 90), tmp_path / "g",
                            num_nodes=30, node_columns={"feat": x}, partitions=2)
    steps = []
    called = propagate(g, tmp_path / "a", hops=2, progress=steps.append)
    assert steps[-1] == Step("propagate", 4, 4, "partition") and len(steps) == 4
    shown = propagate(g, tmp_path / "b", hops=2, progress=True)
    np.testing.assert_array_equal(read_hop(called, 2), read_hop(shown, 2))


def test_features_of_a_graph_grown_since_are_refused(tmp_path):
    """An append moves internal ids (partition 1's nodes shift by partition 0's new ones):
    the propagated rows, by the old order, are refused on the grown graph in one line."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    g = graphsys.from_numpy([0, 1, 2, 3], [1, 2, 3, 0], tmp_path / "g", num_nodes=4,
                            node_columns={"feat": x}, partitions=2)
    out = propagate(g, tmp_path / "p", hops=1)
    np.testing.assert_array_equal(read_hop(out, 0), g.node_column("feat"))
    pq.write_table(pa.table({"src": [0, 4], "dst": [4, 5]}), tmp_path / "d2.parquet")
    grown = graphsys.ingest(tmp_path / "d2.parquet", tmp_path / "g", append=True,
                            edge_set="day2")
    assert grown.partition_sizes().tolist() != g.partition_sizes().tolist()
    for read in (lambda: read_hop(out, 1), lambda: sign_features(out, grown)):
        with pytest.raises(GraphsysError, match="had 4 nodes in 2 partitions.*propagate again"):
            read()


def test_a_hop_file_of_another_width_or_a_negative_hop_count_is_refused(tmp_path):
    """A hop file whose feature column is 1 wide was reshaped into half as many rows of 2
    (read_hop returned 3 rows for 4 nodes), as was one whose values Arrow's child length
    cut short; a negative ``hops`` raised a raw ValueError from np.concatenate."""
    import pyarrow as pa
    import pyarrow.ipc as paipc

    from graphsys.errors import FormatError

    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    g = graphsys.from_numpy([0, 1, 2, 3], [1, 2, 3, 0], tmp_path / "g", num_nodes=4,
                            node_columns={"feat": x}, partitions=2)
    out = propagate(g, tmp_path / "p", hops=1)
    header = json.loads((out / INDEX).read_text())
    path = out / header["files"]["0"][0]
    table = paipc.open_file(pa.memory_map(str(path))).read_all()
    narrow = pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(len(table), np.float32)), 1)
    with paipc.new_file(str(path), pa.schema([table.schema.field("id"),
                                              pa.field("feat", narrow.type)])) as w:
        w.write_table(pa.table({"id": table.column("id"), "feat": narrow}))
    with pytest.raises(FormatError, match=r"cannot read hop 0 .*column feat is "
                                          r"fixed_size_list<item: float>\[1\], not"):
        read_hop(out, 0)
    (out / INDEX).write_text(json.dumps({**header, "dim": 2**63}))   # no raw OverflowError
    with pytest.raises(FormatError, match=r"cannot read hop 0 .*not fixed_size_list<float>"):
        read_hop(out, 0)
    (out / INDEX).write_text(json.dumps({**header, "hops": -1}))
    with pytest.raises(FormatError, match=r"hops \(an integer >= 0\)"):
        sign_features(out)
