"""The ``temporal_edges`` dataset family: SNAP temporal graphs (CollegeMsg, bitcoin-alpha,
bitcoin-otc), one timestamped edge per line, every line kept (a repeated pair is a separate
event), the time as the int64 edge column ``timestamp`` (whole Unix seconds, rounded down;
fractional seconds also exactly as ``timestamp_us``), an optional weight column as the edge
weight. Registered in :data:`graphsys.plugins.DATASET_LOADERS`; the parsing options come from
the registry entry (:mod:`graphsys.datasets.loaders` holds the other families).
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa

from graphsys.datasets.fetch import FetchResult
from graphsys.datasets.loaders import IngestPlan, read_text_table
from graphsys.datasets.registry import DatasetLoader
from graphsys.errors import InputError
from graphsys.storage.ingest import EdgeSource

#: The edge column of whole Unix seconds, and the one of exact microseconds that a file
#: with fractional seconds also gets (:func:`parse_seconds`).
TIMESTAMP_COLUMN = "timestamp"
TIMESTAMP_US_COLUMN = "timestamp_us"


def parse_seconds(text: pa.Array) -> tuple[np.ndarray, np.ndarray | None]:
    """Decimal Unix-second strings to int64 whole seconds (rounded down) and, when any has
    a fractional part, int64 microseconds, both exact (never through a float).

    Parameters
    ----------
    text : pyarrow.Array
        Strings ``"1289241911.72836"``, ``"1082040961"``, ``"-5.5"``; at most 6 decimals.

    Returns
    -------
    seconds : numpy.ndarray
        int64 ``floor(t)``.
    micros : numpy.ndarray or None
        int64 ``t * 10**6`` exactly, or None when every stamp is whole seconds.

    Raises
    ------
    InputError
        A stamp that is not a decimal number with at most 6 decimals.

    Examples
    --------
    >>> import pyarrow as pa
    >>> s, us = parse_seconds(pa.array(["1289241911.72836", "10", "-5.5"]))
    >>> s.tolist(), us.tolist()
    ([1289241911, 10, -6], [1289241911728360, 10000000, -5500000])
    >>> parse_seconds(pa.array(["7", "8"]))[1] is None
    True
    """
    strings = [str(v) for v in text.to_pylist()]
    whole = np.empty(len(strings), np.int64)
    micros = np.empty(len(strings), np.int64)
    fractional = False
    for k, v in enumerate(strings):
        m = _DECIMAL.fullmatch(v.strip())
        if m is None:
            raise InputError(f"timestamp {v!r} (row {k}) is not a decimal number of seconds "
                             f"with at most 6 decimals")
        sign = -1 if m.group(1) == "-" else 1
        frac = (m.group(3) or "").ljust(6, "0")
        fractional |= any(c != "0" for c in frac)
        us = sign * (int(m.group(2)) * 1_000_000 + int(frac))
        micros[k] = us
        whole[k] = us // 1_000_000
    return whole, (micros if fractional else None)


_DECIMAL = re.compile(r"([+-]?)(\d+)(?:\.(\d{0,6}))?")


def load_temporal_edges(fetched: FetchResult) -> IngestPlan:
    """A timestamped edge list: one edge set ``default``, every line an edge (a pair seen
    several times is several events), directed as ``graph.directed`` says.

    The ``graph.time`` column becomes the int64 edge column ``timestamp`` (whole Unix
    seconds, rounded down); where the file has fractional seconds (bitcoin-otc) the exact
    time also becomes ``timestamp_us`` (int64 microseconds), so no ordering the file holds
    is lost. ``graph.weight``, when named, is the float32 edge weight (bitcoin's trust,
    -10..+10) and is also kept as the int64 edge column ``weight_value`` when it is
    integral. Rows keep any order the file has (bitcoin-alpha's is not by time): engines
    read times from the column.
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
