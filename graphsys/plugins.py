"""The registries of graphsys's plug-in kinds, and one registration line per built-in plug-in.

Each built-in is registered lazily (``"module:attribute"``, imported on first lookup), so
building the command line (``choices``, help texts) imports no torch and no plug-in module.
Adding a plug-in is one new file plus one line here (see ``docs/architecture.md``); a
third-party distribution adds the same line as a ``graphsys.plugins`` entry point instead
(:mod:`graphsys.registry`).

- :data:`PARTITIONERS`: a :class:`partitioners.base.Partitioner` subclass;
- :data:`ALGORITHMS`: a :class:`graphsys.bsp.algorithms.spec.AlgorithmSpec`;
- :data:`GNN_MODELS`: a :class:`graphsys.gnn.conv.spec.ModelSpec`;
- :data:`DATASET_LOADERS`: a :class:`graphsys.datasets.registry.DatasetLoader`;
- :data:`INPUT_FORMATS`: a :class:`graphsys.storage.formats.InputFormat`;
- :data:`GRAPH_VIEWS`: a view kind's function ``(graph, kind, edge_set=..., **options)``.

The embedding operators, comparators and losses register with a decorator in
:mod:`graphsys.embed.model` (their registries live there).
"""

from __future__ import annotations

from typing import Any

from graphsys.registry import Registry

#: Node partitioning strategies (``graphsys ingest --partitioner``).
PARTITIONERS: Registry[Any] = Registry("partitioner", "partitioners.base:Partitioner")
PARTITIONERS.register_lazy("hash", "partitioners.hash:HashPartitioner")
PARTITIONERS.register_lazy("range", "partitioners.range:RangePartitioner")
PARTITIONERS.register_lazy("degree", "partitioners.degree:DegreePartitioner")
PARTITIONERS.register_lazy("fennel", "partitioners.fennel:FennelPartitioner")
#: The partitioner of an ingest that names none.
DEFAULT_PARTITIONER = "hash"

#: Vertex (BSP) algorithms (``graphsys run ALGO``, ``graphsys profile ALGO``).
ALGORITHMS: Registry[Any] = Registry("algorithm", "graphsys.bsp.algorithms.spec:AlgorithmSpec")
ALGORITHMS.register_lazy("pagerank", "graphsys.bsp.algorithms.pagerank:PAGERANK_SPEC")
ALGORITHMS.register_lazy("ppr", "graphsys.bsp.algorithms.pagerank:PPR_SPEC")
ALGORITHMS.register_lazy("bfs", "graphsys.bsp.algorithms.traversal:BFS_SPEC")
ALGORITHMS.register_lazy("sssp", "graphsys.bsp.algorithms.traversal:SSSP_SPEC")
ALGORITHMS.register_lazy("wcc", "graphsys.bsp.algorithms.components:WCC_SPEC")
ALGORITHMS.register_lazy("lpa", "graphsys.bsp.algorithms.label_propagation:LPA_SPEC")
ALGORITHMS.register_lazy("kcore", "graphsys.bsp.algorithms.kcore:KCORE_SPEC")
ALGORITHMS.register_lazy("hits", "graphsys.bsp.algorithms.hits:HITS_SPEC")
ALGORITHMS.register_lazy("scc", "graphsys.bsp.algorithms.scc:SCC_SPEC")
ALGORITHMS.register_lazy("betweenness", "graphsys.bsp.algorithms.centrality:BETWEENNESS_SPEC")
ALGORITHMS.register_lazy("closeness", "graphsys.bsp.algorithms.centrality:CLOSENESS_SPEC")
ALGORITHMS.register_lazy("harmonic", "graphsys.bsp.algorithms.centrality:HARMONIC_SPEC")
ALGORITHMS.register_lazy("louvain", "graphsys.bsp.algorithms.community:LOUVAIN_SPEC")
ALGORITHMS.register_lazy("leiden", "graphsys.bsp.algorithms.community:LEIDEN_SPEC")

#: Built-in GNN models, one per convolution (``graphsys gnn train --model``).
GNN_MODELS: Registry[Any] = Registry("gnn_model", "graphsys.gnn.conv.spec:ModelSpec")
GNN_MODELS.register_lazy("pinsage", "graphsys.gnn.conv.pinsage:PINSAGE_MODEL")
GNN_MODELS.register_lazy("sage", "graphsys.gnn.conv.sage:SAGE_MODEL")
GNN_MODELS.register_lazy("gcn", "graphsys.gnn.conv.gcn:GCN_MODEL")
GNN_MODELS.register_lazy("gat", "graphsys.gnn.conv.gat:GAT_MODEL")
GNN_MODELS.register_lazy("gin", "graphsys.gnn.conv.gin:GIN_MODEL")

#: Dataset loaders: the ``loader`` of a registry TOML file (:mod:`graphsys.datasets`).
DATASET_LOADERS: Registry[Any] = Registry("dataset_loader",
                                                 "graphsys.datasets.registry:DatasetLoader")
DATASET_LOADERS.register_lazy("edge_list", "graphsys.datasets.loaders:EDGE_LIST")
DATASET_LOADERS.register_lazy("linqs", "graphsys.datasets.loaders:LINQS")
DATASET_LOADERS.register_lazy("kg_triples", "graphsys.datasets.loaders:KG_TRIPLES")
DATASET_LOADERS.register_lazy("movielens", "graphsys.datasets.loaders:MOVIELENS")
DATASET_LOADERS.register_lazy("planetoid", "graphsys.datasets.loaders:PLANETOID")
DATASET_LOADERS.register_lazy("temporal_edges", "graphsys.datasets.temporal_edges:TEMPORAL_EDGES")

#: Edge-list input formats (``graphsys ingest --format``; ``auto`` picks by file name).
INPUT_FORMATS: Registry[Any] = Registry("input_format", "graphsys.storage.formats:InputFormat")
INPUT_FORMATS.register_lazy("tsv", "graphsys.storage.formats:TSV")
INPUT_FORMATS.register_lazy("csv", "graphsys.storage.formats:CSV")
INPUT_FORMATS.register_lazy("parquet", "graphsys.storage.formats:PARQUET")
INPUT_FORMATS.register_lazy("arrow", "graphsys.storage.formats:ARROW")
INPUT_FORMATS.register_lazy("jodie", "graphsys.storage.formats:JODIE")

#: The kinds of in-memory graph view (``Graph.view(kind)``): the storage layer reaches the
#: view layer above it by name here, never by an import.
GRAPH_VIEWS: Registry[Any] = Registry("graph view")
for _kind in ("out", "in", "sym", "oriented", "temporal", "typed"):  # graphsys.views.KINDS
    GRAPH_VIEWS.register_lazy(_kind, "graphsys.views:view")
