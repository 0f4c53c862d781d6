"""Integrity check of a graph directory: structure (``quick``) and, by default, hashes."""

from __future__ import annotations

from pathlib import Path

import pyarrow.fs as pafs

from graphsys.errors import FormatError
from graphsys.storage.adjacency_index import verify_indexes
from graphsys.storage.graph import open_graph
from graphsys.storage.structure import check_listed, check_structure


def verify_graph(path: str | Path, *, quick: bool = False,
                 filesystem: pafs.FileSystem | None = None) -> dict[str, int]:
    """Check every file of the graph at ``path``; raise :class:`FormatError` naming the first
    bad file (missing, truncated, wrong hash, wrong schema or count, offsets out of range,
    unsorted).

    ``quick`` skips the sha256 of every file (the cost that grows with the bytes stored):
    only the structure is checked (:func:`~graphsys.storage.structure.check_structure`),
    which is what keeps every engine's memory accesses in bounds. Returns counts of what was
    checked: ``files``, ``bytes``, ``nodes``, ``edges``,
    ``indexes`` (adjacency indexes: counts, offsets and neighbour ids; their hashes with the
    other files). ``path`` and ``filesystem`` as for
    :func:`~graphsys.storage.graph.open_graph` (a filesystem URI reads through pyarrow.fs).
    """
    graph = open_graph(path, filesystem=filesystem)
    m, loc = graph.manifest, graph.location
    check_listed(m, loc)
    if not quick:
        for rel, entry in sorted(m.files.items()):
            if loc.sha256(rel) != entry["sha256"]:
                raise FormatError(f"{loc.file(rel)}: sha256 mismatch (corrupted or modified "
                                  f"file)")
    counts = check_structure(graph)
    counts["indexes"] = verify_indexes(graph)
    return counts
