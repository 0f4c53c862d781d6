"""Integrity check of a graph directory: structure (``quick``) and, by default, hashes."""

from __future__ import annotations

from pathlib import Path

from graphsys.errors import FormatError
from graphsys.storage.adjacency_index import verify_indexes
from graphsys.storage.atomic import sha256_file
from graphsys.storage.graph import open_graph
from graphsys.storage.structure import check_listed, check_structure


def verify_graph(path: str | Path, *, quick: bool = False) -> dict[str, int]:
    """Check every file of the graph at ``path``; raise :class:`FormatError` naming the first
    bad file (missing, truncated, wrong hash, wrong schema or count, offsets out of range,
    unsorted).

    ``quick`` skips the sha256 of every file (the cost that grows with the bytes stored):
    only the structure is checked (:func:`~graphsys.storage.structure.check_structure`),
    which is what keeps every engine's memory accesses in bounds. Returns counts of what was
    checked: ``files``, ``bytes``, ``nodes``, ``edges``,
    ``indexes`` (adjacency indexes: counts, offsets and neighbour ids; their hashes with the
    other files).
    """
    graph = open_graph(path)
    m = graph.manifest
    check_listed(m, graph.path)
    if not quick:
        for rel, entry in sorted(m.files.items()):
            f = graph.path / rel
            if sha256_file(f) != entry["sha256"]:
                raise FormatError(f"{f}: sha256 mismatch (corrupted or modified file)")
    counts = check_structure(graph)
    counts["indexes"] = verify_indexes(graph)
    return counts
