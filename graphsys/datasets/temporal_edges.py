"""The ``temporal_edges`` dataset family: SNAP temporal graphs (CollegeMsg, bitcoin-alpha,
bitcoin-otc), one timestamped edge per line, every line kept (a repeated pair is a separate
event), the time as the int64 edge column ``timestamp`` (whole Unix seconds, rounded down;
fractional seconds also exactly as ``timestamp_us``), an optional weight column as the edge
weight. Registered in :data:`graphsys.plugins.DATASET_LOADERS`; the parsing options come from
the registry entry (:mod:`graphsys.datasets.loaders` holds the other families).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from graphsys.datasets.fetch import FetchResult
from graphsys.datasets.loaders import IngestPlan, read_text_table
from graphsys.datasets.registry import DatasetLoader
from graphsys.errors import InputError
from graphsys.storage.ingest import EdgeSource
from graphsys.units import parse_seconds

__all__ = ["TEMPORAL_EDGES", "load_temporal_edges", "parse_seconds"]

#: The edge column of whole Unix seconds, and the one of exact microseconds that a file
#: with fractional seconds also gets (:func:`parse_seconds`).
TIMESTAMP_COLUMN = "timestamp"
TIMESTAMP_US_COLUMN = "timestamp_us"


def load_temporal_edges(fetched: FetchResult) -> IngestPlan:
    """A timestamped edge list: one edge set ``default``, every line an edge (a pair seen
    several times is several events), directed as ``graph.directed`` says.

    The ``graph.time`` column becomes the int64 edge column ``timestamp`` (whole Unix
    seconds, rounded down); where the file has fractional seconds (bitcoin-otc) the exact
    time also becomes ``timestamp_us`` (int64 microseconds), so no ordering the file holds
    is lost. ``graph.weight``, when named, is the float32 edge weight (bitcoin's trust:
    integers -10..+10, which float32 holds exactly). Rows keep any order the file has
    (bitcoin-alpha's is not by time): engines read times from the column.
    """
    ds, g = fetched.dataset, fetched.dataset.graph
    f = ds.file(g["edges"])
    types = {g["src"]: pa.int64(), g["dst"]: pa.int64(), g["time"]: pa.string()}
    if "weight" in g:
        types[g["weight"]] = pa.float64()
    table = read_text_table(fetched.path(g["edges"]), f, types)
    seconds, micros = parse_seconds(table.column(g["time"]))
    columns = {"src": table.column(g["src"]), "dst": table.column(g["dst"]),
               TIMESTAMP_COLUMN: seconds}
    kept = [TIMESTAMP_COLUMN]
    if micros is not None:
        columns[TIMESTAMP_US_COLUMN] = micros
        kept.append(TIMESTAMP_US_COLUMN)
    weight_col = None
    if "weight" in g:
        w = table.column(g["weight"]).to_numpy()
        if not np.isfinite(w).all():
            raise InputError(f"non-finite {g['weight']!r} value", path=fetched.path(g["edges"]))
        columns["weight"] = w.astype(np.float32)
        weight_col = "weight"
    plan = IngestPlan(edges=[EdgeSource(table=pa.table(columns), weight_col=weight_col,
                                        edge_columns=kept)],
                      undirected=not g["directed"])
    plan.metadata.update({
        "directed": g["directed"],
        "time": {TIMESTAMP_COLUMN: f"{g['edges']} column {g['time']!r}: whole Unix seconds "
                                   f"(UTC), rounded down",
                 **({TIMESTAMP_US_COLUMN: "the same time in exact microseconds"}
                    if micros is not None else {})},
        **({"weight": f"{g['edges']} column {g['weight']!r}"} if "weight" in g else {}),
    })
    return plan


TEMPORAL_EDGES = DatasetLoader(load_temporal_edges, {
    "edges": ("file", True),
    "src": ("column:edges", True),
    "dst": ("column:edges", True),
    "time": ("column:edges", True),
    "weight": ("column:edges", False),
    "directed": ("bool", True),
})
