"""``init=PREV`` (``graphsys run --init PREV``) from every kind of previous result (issue
71): converged, stopped at max_iters, of another algorithm, source or graph, without
provenance, written before convergence was recorded, with a NaN value, and each of those
truncated or with a flipped bit. A run started from PREV after an append must equal the run
from scratch (PageRank to its tolerance) or be refused in one line; a result that cannot be
repaired from (not converged, not of this run) must be refused."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

import graphsys
from graphsys.plugins import ALGORITHMS
from graphsys.storage.previous import tagged

from .conftest import FUZZ
from .test_fuzz import outcome

ALGOS = ("pagerank", "ppr", "wcc", "bfs", "sssp")
SOURCED = ("ppr", "bfs", "sssp")
KINDS = ("converged", "unconverged", "other-algorithm", "other-source", "other-graph",
         "no-provenance", "unrecorded", "nan-value")
#: what must be refused whatever the algorithm (unconverged: all but PageRank's)
REFUSED = {"other-algorithm", "other-source", "other-graph", "no-provenance"}


def _edges(seed: int, n: int, m: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"src": rng.integers(0, n, m) * 3, "dst": rng.integers(0, n, m) * 3,
                     "w": rng.integers(1, 9, m).astype(np.float64)})


def _run(graph, algo: str, source, **kw):
    spec = ALGORITHMS.get(algo)
    if algo in ("pagerank", "ppr"):
        kw.setdefault("tol", 1e-10)
    with pytest.warns() if kw.get("max_iters") == 1 else _nothing():
        return spec.run(graph, source if spec.needs_source else None, **kw)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _write(table: pa.Table, path: Path, checksum: bool = True) -> Path:
    pq.write_table(table, path, write_page_checksum=checksum)
    return path


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    d = tmp_path_factory.mktemp("init")
    day1 = _edges(1, 70, 160)
    g = graphsys.from_arrow(day1, d / "g", weight_col="w", partitions=2)
    other = graphsys.from_arrow(_edges(9, 70, 160), d / "other", weight_col="w",
                                partitions=2)
    source = int(day1["src"][0].as_py())
    second = int(day1["src"][1].as_py())
    files: dict[tuple[str, str], Path] = {}
    for algo in ALGOS:
        done = _run(g, algo, source)
        files[(algo, "converged")] = _write(done.to_table(), d / f"{algo}.parquet")
        stopped = _run(g, algo, source, max_iters=1, schedule="sync")
        assert not stopped.stats.converged
        files[(algo, "unconverged")] = _write(stopped.to_table(), d / f"{algo}-u.parquet")
        files[(algo, "other-graph")] = _write(_run(other, algo, source).to_table(),
                                              d / f"{algo}-g.parquet")
        table = done.to_table()
        files[(algo, "no-provenance")] = _write(table.replace_schema_metadata({}),
                                                d / f"{algo}-n.parquet")
        meta = json.loads(table.schema.metadata[b"graphsys.result"])
        meta.pop("converged", None)
        files[(algo, "unrecorded")] = _write(tagged(table, meta), d / f"{algo}-o.parquet")
        values = np.asarray(table["value"]).copy()
        values[3] = np.nan
        files[(algo, "nan-value")] = _write(table.set_column(
            1, "value", pa.array(values)), d / f"{algo}-v.parquet")
        if algo in SOURCED:
            files[(algo, "other-source")] = _write(_run(g, algo, second).to_table(),
                                                   d / f"{algo}-s.parquet")
    for algo in ALGOS:  # another algorithm's result: the next one's
        files[(algo, "other-algorithm")] = files[(ALGOS[(ALGOS.index(algo) + 1) % 5],
                                                  "converged")]
    pq.write_table(_edges(2, 80, 25), d / "day2.parquet")
    graphsys.ingest(d / "day2.parquet", d / "g", append=True, edge_set="day2", weight_col="w")
    grown = graphsys.open_graph(d / "g")
    scratch = {algo: _run(grown, algo, source).values for algo in ALGOS}
    return grown, source, files, scratch


@FUZZ
@given(algo=st.sampled_from(ALGOS), kind=st.sampled_from(KINDS),
       damage=st.sampled_from(["none", "truncate", "flip"]), where=st.floats(0, 1),
       bit=st.integers(0, 7))
def test_init_from_every_kind_of_previous_result(world, algo, kind, damage, where, bit):
    grown, source, files, scratch = world
    if kind == "other-source" and algo not in SOURCED:
        kind = "converged"
    data = bytearray(files[(algo, kind)].read_bytes())
    at = min(int(where * len(data)), len(data) - 1)
    if damage == "truncate":
        data = data[:at]
    elif damage == "flip":
        data[at] ^= 1 << bit
    with tempfile.TemporaryDirectory() as tmp:
        prev = Path(tmp) / "prev.parquet"
        prev.write_bytes(bytes(data))
        res = outcome(f"init:{kind}", lambda: _run(grown, algo, source, init=prev))
    must_refuse = kind in REFUSED or (kind in ("unconverged", "unrecorded")
                                      and algo not in ("pagerank", "ppr"))
    if damage == "none":
        if must_refuse:
            assert res is None, f"{algo} started from a {kind} previous result"
        elif kind == "converged":
            assert res is not None, f"{algo} refused its own converged result"
    if res is None:
        return
    assert res.stats.converged
    if algo in ("pagerank", "ppr"):
        assert np.abs(res.values - scratch[algo]).sum() < 1e-8, (algo, kind, damage)
    else:
        np.testing.assert_array_equal(res.values, scratch[algo], err_msg=f"{kind} {damage}")
