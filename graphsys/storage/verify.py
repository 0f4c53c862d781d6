"""Integrity check of a graph directory: structure (``quick``) and, by default, hashes."""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path

import pyarrow.fs as pafs

from graphsys.errors import FormatError
from graphsys.storage.adjacency_index import leftover_temps
from graphsys.storage.atomic import STAGING_MARK
from graphsys.storage.csr import verify_indexes
from graphsys.storage.edge_changes import verify_changes
from graphsys.storage.graph import open_graph
from graphsys.storage.structure import check_listed, check_structure
from graphsys.temp_files import pid_alive


def verify_graph(path: str | Path, *, quick: bool = False,
                 filesystem: pafs.FileSystem | None = None) -> dict[str, int]:
    """Check the integrity of a stored graph: every file, count, offset and hash.

    Raises on the first bad file (missing, truncated, wrong hash, wrong schema or count,
    offsets out of range, unsorted). What an interrupted writer left is not damage: the
    manifest never names it, so the graph is intact; it is listed under ``leftovers``
    (:func:`leftovers`: safe to delete; the next index build removes index build
    directories, the next ingest or append to the same path staging directories).
    ``quick`` skips the sha256
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
        the other files); ``changes``: change sets, whose recorded counts are recounted;
        ``leftovers``: the paths (str) of :func:`leftovers`.

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
    left = leftovers(graph.path) if loc.local else []
    check_listed(m, loc)
    if not quick:
        for rel, entry in sorted(m.files.items()):
            if loc.sha256(rel) != entry["sha256"]:
                raise FormatError(f"{loc.file(rel)}: sha256 mismatch (corrupted or modified "
                                  f"file)")
    counts = check_structure(graph)
    counts["indexes"] = verify_indexes(graph)
    counts["changes"] = verify_changes(graph)
    counts["leftovers"] = [str(p) for p in left]
    return counts


#: A temporary file of :mod:`graphsys.storage.atomic` or a node column being written:
#: ``.NAME.tmp`` or ``.NAME.tmp-PID-HEX``.
_TEMP_NAME = re.compile(r"^\..+\.tmp(-\d+-[0-9a-f]+)?$")


def leftovers(path: str | Path) -> list[Path]:
    """What interrupted writers left in or beside the graph directory ``path``, none of it
    part of the graph (the manifest names none of it): index build directories
    (``index/.tmp-*``), temporary files (``.NAME.tmp``, ``.NAME.tmp-PID-HEX``) anywhere
    under ``path``, and the staging directories of dead processes beside it
    (``.NAME.staging-PID-*``, an interrupted ingest or append). A running writer's files
    are listed too while it runs.

    Parameters
    ----------
    path : str or Path
        A local graph directory.

    Returns
    -------
    list of Path
        Sorted.

    Examples
    --------
    >>> import tempfile, graphsys
    >>> from graphsys.storage.verify import leftovers
    >>> d = tempfile.mkdtemp() + "/g"
    >>> _ = graphsys.from_numpy([0, 1], [1, 2], d)
    >>> leftovers(d)
    []
    """
    path = Path(path)
    found = set(leftover_temps(path))
    for root, dirs, files in os.walk(path):
        for name in (*dirs, *files):
            if _TEMP_NAME.match(name):
                found.add(Path(root) / name)
    prefix = f".{path.name}{STAGING_MARK}"
    for staging in path.parent.glob(glob.escape(prefix) + "*"):
        pid = staging.name[len(prefix):].split("-")[0]
        if pid.isdigit() and not pid_alive(int(pid)):
            found.add(staging)
    return sorted(found)
