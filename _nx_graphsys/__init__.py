"""What NetworkX reads of the graphsys backend when it is imported: the backend's
``networkx.backend_info`` entry point (:func:`get_info`) and the table of the functions it
implements (:data:`FUNCTIONS`).

NetworkX (>= 3.2) calls :func:`get_info` at ``import networkx``, in every program of an
environment where graphsys is installed, so this package imports nothing (not graphsys,
whose import loads numba and pyarrow); the implementations are imported on first dispatch
(:mod:`graphsys.nx_backend`). A new function is one line in :data:`FUNCTIONS`.
"""

#: NetworkX's dispatch name -> ``"module:function"`` implementing it with NetworkX's
#: signature (``graphsys.nx_backend`` modules).
FUNCTIONS = {
    # link analysis
    "pagerank": "graphsys.nx_backend.algorithms:pagerank",
    "hits": "graphsys.nx_backend.algorithms:hits",
    # traversal and shortest paths
    "single_source_shortest_path_length":
        "graphsys.nx_backend.algorithms:single_source_shortest_path_length",
    "single_source_dijkstra_path_length":
        "graphsys.nx_backend.algorithms:single_source_dijkstra_path_length",
    # components and cores
    "connected_components": "graphsys.nx_backend.algorithms:connected_components",
    "number_connected_components": "graphsys.nx_backend.algorithms:number_connected_components",
    "is_connected": "graphsys.nx_backend.algorithms:is_connected",
    "node_connected_component": "graphsys.nx_backend.algorithms:node_connected_component",
    "weakly_connected_components": "graphsys.nx_backend.algorithms:weakly_connected_components",
    "number_weakly_connected_components":
        "graphsys.nx_backend.algorithms:number_weakly_connected_components",
    "is_weakly_connected": "graphsys.nx_backend.algorithms:is_weakly_connected",
    "strongly_connected_components":
        "graphsys.nx_backend.algorithms:strongly_connected_components",
    "number_strongly_connected_components":
        "graphsys.nx_backend.algorithms:number_strongly_connected_components",
    "is_strongly_connected": "graphsys.nx_backend.algorithms:is_strongly_connected",
    "core_number": "graphsys.nx_backend.algorithms:core_number",
    # triangles and clustering
    "triangles": "graphsys.nx_backend.cluster:triangles",
    "clustering": "graphsys.nx_backend.cluster:clustering",
    "average_clustering": "graphsys.nx_backend.cluster:average_clustering",
    "transitivity": "graphsys.nx_backend.cluster:transitivity",
    # centrality
    "betweenness_centrality": "graphsys.nx_backend.algorithms:betweenness_centrality",
    "closeness_centrality": "graphsys.nx_backend.algorithms:closeness_centrality",
    # link prediction
    "jaccard_coefficient": "graphsys.nx_backend.measures:jaccard_coefficient",
    "adamic_adar_index": "graphsys.nx_backend.measures:adamic_adar_index",
    "resource_allocation_index": "graphsys.nx_backend.measures:resource_allocation_index",
    "preferential_attachment": "graphsys.nx_backend.measures:preferential_attachment",
    # summaries and distances
    "density": "graphsys.nx_backend.measures:density",
    "overall_reciprocity": "graphsys.nx_backend.measures:overall_reciprocity",
    "reciprocity": "graphsys.nx_backend.measures:reciprocity",
    "degree_assortativity_coefficient":
        "graphsys.nx_backend.measures:degree_assortativity_coefficient",
    "degree_pearson_correlation_coefficient":
        "graphsys.nx_backend.measures:degree_assortativity_coefficient",
    "diameter": "graphsys.nx_backend.measures:diameter",
    "eccentricity": "graphsys.nx_backend.measures:eccentricity",
    "radius": "graphsys.nx_backend.measures:radius",
    "center": "graphsys.nx_backend.measures:center",
    "periphery": "graphsys.nx_backend.measures:periphery",
}


def get_info() -> dict:
    """The ``networkx.backend_info`` entry point: the backend's name, summary, default
    config (``nx.config.backends.graphsys``) and functions."""
    return {
        "backend_name": "graphsys",
        "project": "graphsys",
        "package": "graphsys",
        "short_summary": "Partitioned Arrow graph storage; numba kernels.",
        "default_config": {
            # with automatic dispatch (NETWORKX_BACKEND_PRIORITY=graphsys), graphs with
            # fewer edges stay in NetworkX: converting one costs more than it saves
            "min_edges": 10_000,
            # where converted graphs are written (None: /dev/shm when writable, else the
            # system's temporary directory)
            "tmpdir": None,
        },
        "functions": {name: {"additional_docs": _DOCS.get(name, "")} for name in FUNCTIONS},
    }


_DOCS = {
    "pagerank": ("dangling, and weights float32 does not hold (non-numbers, NaN, inf, "
                 "negative, beyond float32's range), stay in NetworkX."),
    "hits": "Power iteration to tol (NetworkX uses ARPACK); nstart stays in NetworkX.",
    "single_source_dijkstra_path_length": ("Weights float32 does not hold exactly stay in "
                                           "NetworkX."),
    "betweenness_centrality": "Every source, unweighted; k and weight stay in NetworkX.",
    "closeness_centrality": "Every node, unweighted; u and distance stay in NetworkX.",
    "triangles": "Self-loops ignored, as NetworkX.",
    "clustering": "Undirected graphs, unweighted; weight and directed graphs stay in NetworkX.",
    "average_clustering": ("Undirected graphs, unweighted; weight and directed graphs stay "
                           "in NetworkX."),
    "transitivity": "Undirected graphs; directed graphs stay in NetworkX.",
    "diameter": "Undirected graphs; iFUB with a 4-sweep start.",
    "eccentricity": "Undirected graphs; Takes and Kosters' bounds for every node.",
}
