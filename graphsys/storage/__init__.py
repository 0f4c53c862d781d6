"""Partitioned graph storage: the on-disk format and the API every engine reads it through.

A graph directory holds a JSON manifest, the nodes of each entity type split into ``P``
partitions (Arrow IPC files with the original ids and any node columns), and the edges of
each edge set split into the ``P x P`` buckets of PyTorch-BigGraph's layout (bucket
``(i, j)``: the edges from partition ``i`` to partition ``j``, sorted, in Arrow IPC files
that are memory-mapped when read). ``docs/format.md`` specifies the format.

The user-facing entry points are at the top level of :mod:`graphsys`:
:func:`graphsys.ingest` (edge files in), :func:`graphsys.open_graph` and
:class:`graphsys.Graph` (read), and the ``from_*``/``to_*`` conversions of
:mod:`graphsys.interop`; :mod:`~graphsys.storage.graph` starts the tour of the modules
here. Importing this package imports none of them; ``__all__`` names them.
"""

__all__ = ["adjacency_index", "append", "csr", "edges", "export", "format", "graph", "info",
           "ingest", "ingest_files", "location", "node_reads", "schema", "verify"]
