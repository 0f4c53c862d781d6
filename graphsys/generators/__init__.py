"""Synthetic graph generators: seeded, chunked, and fast enough for billion-edge inputs.

Every generator is deterministic for a seed and yields *chunks*, dicts of NumPy arrays with
the same number of rows, so memory stays bounded whatever the size; the output does not
depend on the chunk size. Write them with :func:`write_edges` (format from the extension:
``.tsv``, ``.tsv.gz``, ``.csv``, ``.csv.gz``, ``.parquet``, ``.arrow``, ``.feather``).

=============================  ==============================================================
:func:`rmat_edges`             directed power-law edges (R-MAT / Graph500 Kronecker)
:func:`grid_edges`             road-like weighted grid, undirected pairs written once
:func:`sbm`                    labelled stochastic block model with node features and masks
:func:`knowledge_graph`        triples with planted relations an embedding model can recover
=============================  ==============================================================

On the command line the same generators are ``graphsys generate rmat|grid|sbm|kg``; the
files they write are inputs of ``graphsys.ingest`` / ``graphsys ingest``.

Examples
--------
>>> import tempfile
>>> from graphsys.generators import rmat_edges, write_edges
>>> path = tempfile.mkdtemp() + "/rmat.parquet"
>>> write_edges(rmat_edges(1 << 10, 1 << 14, seed=1), path)
16384
"""

from graphsys.generators.grid import grid_edges
from graphsys.generators.kg import KnowledgeGraph, knowledge_graph
from graphsys.generators.rmat import rmat_edges
from graphsys.generators.sbm import SBM, sbm
from graphsys.generators.writer import (
    edge_schema,
    split_paths,
    write_edges,
    write_nodes,
    write_split_edges,
)

__all__ = [
    "KnowledgeGraph", "SBM", "edge_schema", "grid_edges", "knowledge_graph", "rmat_edges",
    "sbm", "split_paths", "write_edges", "write_nodes", "write_split_edges",
]
