"""Partitioned graph storage: the on-disk format and the API every engine reads it through.

A graph directory holds a JSON manifest, the nodes of each entity type split into ``P``
partitions (Arrow IPC files with the original ids and any node columns), and the edges of
each edge set split into the ``P x P`` buckets of PyTorch-BigGraph's layout (bucket
``(i, j)``: the edges from partition ``i`` to partition ``j``, sorted, in Arrow IPC files
that are memory-mapped when read). ``docs/format.md`` specifies the format.

The user-facing entry points are at the top level of :mod:`graphsys`:
:func:`graphsys.ingest` (edge files in), :func:`graphsys.open_graph` and
:class:`graphsys.Graph` (read), and the ``from_*``/``to_*`` conversions of
:mod:`graphsys.interop`. The modules here:

* :mod:`~graphsys.storage.graph`: :class:`~graphsys.storage.graph.Graph`, thin methods
  over the modules that read: :mod:`~graphsys.storage.schema` (schema and counts, from the
  manifest), :mod:`~graphsys.storage.edges` (buckets, edge streams, degrees),
  :mod:`~graphsys.storage.csr` (CSR/CSC, built or mapped from a stored index) and
  :mod:`~graphsys.storage.node_reads` (node ids and node columns);
* :mod:`~graphsys.storage.ingest_files`: :func:`graphsys.ingest`, the Python face of
  ``graphsys ingest``; :mod:`~graphsys.storage.ingest`: the out-of-core passes under it,
  for inputs given as :class:`~graphsys.storage.ingest.EdgeSource` /
  :class:`~graphsys.storage.ingest.NodeSource`; :mod:`~graphsys.storage.append`: a new
  edge set (and new nodes) added to a graph;
* :mod:`~graphsys.storage.adjacency_index`: persistent CSR/CSC/push indexes
  (``graphsys index``);
* :mod:`~graphsys.storage.verify`: integrity checks (``graphsys verify``);
* :mod:`~graphsys.storage.export`: an edge set written back as Parquet or TSV
  (``graphsys export``); :mod:`~graphsys.storage.info`: a graph's summary
  (``graphsys info``);
* :mod:`~graphsys.storage.format`: the manifest; :mod:`~graphsys.storage.location`: local
  directories and filesystem URIs.

Importing this package imports none of them; ``__all__`` names them.
"""

__all__ = ["adjacency_index", "append", "csr", "edges", "export", "format", "graph", "info",
           "ingest", "ingest_files", "location", "node_reads", "schema", "verify"]
