"""Integrity check of a graph directory: structure (``quick``) and, by default, hashes."""

from __future__ import annotations

from pathlib import Path

import pyarrow.fs as pafs

from graphsys.errors import FormatError
from graphsys.storage.adjacency_index import leftover_temps
from graphsys.storage.csr import verify_indexes
from graphsys.storage.graph import open_graph
from graphsys.storage.structure import check_listed, check_structure


def verify_graph(path: str | Path, *, quick: bool = False,
                 filesystem: pafs.FileSystem | None = None) -> dict[str, int]:
    """Check the integrity of a stored graph: every file, count, offset and hash.

    Raises on the first bad file (missing, truncated, wrong hash, wrong schema or count,
    offsets out of range, unsorted), or on a temporary file an interrupted index build
    left (the next ``graphsys index`` or append removes it). ``quick`` skips the sha256
    of every file (the cost that grows with the bytes stored) and checks the structure only
    (:func:`~graphsys.storage.structure.check_structure`): what keeps every engine's memory
    accesses in bounds, and what engines also check on first touch. ``graphsys verify`` runs
    this.

    Parameters
    ----------
    path : str or Path
        The graph directory or a filesystem URI, as for :func:`graphsys.open_graph`.
    quick : bool, default False
        Structure only, no hashes.
    filesystem : pyarrow.fs.FileSystem, optional
        As for :func:`graphsys.open_graph`.

    Returns
    -------
    dict
        Counts of what was checked: ``files``, ``bytes``, ``nodes``, ``edges`` and
        ``indexes`` (adjacency indexes: counts, offsets and neighbour ids; their hashes with
        the other files).

    Raises
    ------
    FormatError
        Naming the first bad file.

    Examples
    --------
    >>> import tempfile, graphsys
    >>> from graphsys.storage.verify import verify_graph
    >>> d = tempfile.mkdtemp() + "/g"
    >>> _ = graphsys.from_numpy([0, 1, 2], [1, 2, 0], d)
    >>> counts = verify_graph(d)
    >>> counts["nodes"], counts["edges"]
    (3, 3)
    """
    graph = open_graph(path, filesystem=filesystem)
    m, loc = graph.manifest, graph.location
    left = leftover_temps(graph.path) if loc.local else []
    if left:
        raise FormatError(f"{left[0]}: temporary file of an interrupted index build (the "
                          f"next graphsys index or append removes it)")
    check_listed(m, loc)
    if not quick:
        for rel, entry in sorted(m.files.items()):
            if loc.sha256(rel) != entry["sha256"]:
                raise FormatError(f"{loc.file(rel)}: sha256 mismatch (corrupted or modified "
                                  f"file)")
    counts = check_structure(graph)
    counts["indexes"] = verify_indexes(graph)
    return counts
