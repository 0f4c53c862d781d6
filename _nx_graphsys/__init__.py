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
    # the weak components of a directed graph are those of its undirected view: the same
    "weakly_connected_components": "graphsys.nx_backend.algorithms:connected_components",
    "number_weakly_connected_components":
        "graphsys.nx_backend.algorithms:number_connected_components",
    "is_weakly_connected": "graphsys.nx_backend.algorithms:is_connected",
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
    "square_clustering": "graphsys.nx_backend.spectral:square_clustering",
    # centrality
    "betweenness_centrality": "graphsys.nx_backend.algorithms:betweenness_centrality",
    "closeness_centrality": "graphsys.nx_backend.algorithms:closeness_centrality",
    "eigenvector_centrality": "graphsys.nx_backend.spectral:eigenvector_centrality",
    "eigenvector_centrality_numpy": "graphsys.nx_backend.spectral:eigenvector_centrality_numpy",
    "katz_centrality": "graphsys.nx_backend.spectral:katz_centrality",
    "katz_centrality_numpy": "graphsys.nx_backend.spectral:katz_centrality_numpy",
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
        "graphsys.nx_backend.measures:degree_pearson_correlation_coefficient",
    "diameter": "graphsys.nx_backend.measures:diameter",
    "eccentricity": "graphsys.nx_backend.measures:eccentricity",
    "radius": "graphsys.nx_backend.measures:radius",
    "center": "graphsys.nx_backend.measures:center",
    "periphery": "graphsys.nx_backend.measures:periphery",
    # degrees, cuts and boundaries
    "degree_centrality": "graphsys.nx_backend.degrees:degree_centrality",
    "in_degree_centrality": "graphsys.nx_backend.degrees:in_degree_centrality",
    "out_degree_centrality": "graphsys.nx_backend.degrees:out_degree_centrality",
    "isolates": "graphsys.nx_backend.degrees:isolates",
    "number_of_isolates": "graphsys.nx_backend.degrees:number_of_isolates",
    "is_isolate": "graphsys.nx_backend.degrees:is_isolate",
    "number_of_selfloops": "graphsys.nx_backend.degrees:number_of_selfloops",
    "is_empty": "graphsys.nx_backend.degrees:is_empty",
    "is_regular": "graphsys.nx_backend.degrees:is_regular",
    "is_k_regular": "graphsys.nx_backend.degrees:is_k_regular",
    "average_neighbor_degree": "graphsys.nx_backend.degrees:average_neighbor_degree",
    "average_degree_connectivity": "graphsys.nx_backend.degrees:average_degree_connectivity",
    "s_metric": "graphsys.nx_backend.degrees:s_metric",
    "group_degree_centrality": "graphsys.nx_backend.degrees:group_degree_centrality",
    "group_in_degree_centrality": "graphsys.nx_backend.degrees:group_in_degree_centrality",
    # a directed graph's (the only one NetworkX dispatches): its out-neighbours, as above
    "group_out_degree_centrality": "graphsys.nx_backend.degrees:group_degree_centrality",
    "volume": "graphsys.nx_backend.degrees:volume",
    "cut_size": "graphsys.nx_backend.degrees:cut_size",
    "normalized_cut_size": "graphsys.nx_backend.degrees:normalized_cut_size",
    "conductance": "graphsys.nx_backend.degrees:conductance",
    "edge_expansion": "graphsys.nx_backend.degrees:edge_expansion",
    "mixing_expansion": "graphsys.nx_backend.degrees:mixing_expansion",
    "node_boundary": "graphsys.nx_backend.degrees:node_boundary",
    "node_expansion": "graphsys.nx_backend.degrees:node_expansion",
    "boundary_expansion": "graphsys.nx_backend.degrees:boundary_expansion",
    "degree_mixing_dict": "graphsys.nx_backend.degrees:degree_mixing_dict",
    # reachability, path lengths and distance sums
    "has_path": "graphsys.nx_backend.paths:has_path",
    "descendants": "graphsys.nx_backend.paths:descendants",
    # undirected only (the checks): an undirected graph's ancestors are its descendants
    "ancestors": "graphsys.nx_backend.paths:descendants",
    "descendants_at_distance": "graphsys.nx_backend.paths:descendants_at_distance",
    "shortest_path_length": "graphsys.nx_backend.paths:shortest_path_length",
    "single_target_shortest_path_length":
        "graphsys.nx_backend.paths:single_target_shortest_path_length",
    "all_pairs_shortest_path_length": "graphsys.nx_backend.paths:all_pairs_shortest_path_length",
    "dijkstra_path_length": "graphsys.nx_backend.paths:dijkstra_path_length",
    "all_pairs_dijkstra_path_length": "graphsys.nx_backend.paths:all_pairs_dijkstra_path_length",
    "single_source_bellman_ford_path_length":
        "graphsys.nx_backend.paths:single_source_bellman_ford_path_length",
    "bellman_ford_path_length": "graphsys.nx_backend.paths:bellman_ford_path_length",
    "all_pairs_bellman_ford_path_length":
        "graphsys.nx_backend.paths:all_pairs_bellman_ford_path_length",
    "multi_source_dijkstra_path_length":
        "graphsys.nx_backend.paths:multi_source_dijkstra_path_length",
    "average_shortest_path_length": "graphsys.nx_backend.paths:average_shortest_path_length",
    "wiener_index": "graphsys.nx_backend.paths:wiener_index",
    "hyper_wiener_index": "graphsys.nx_backend.paths:hyper_wiener_index",
    "schultz_index": "graphsys.nx_backend.paths:schultz_index",
    "gutman_index": "graphsys.nx_backend.paths:gutman_index",
    "barycenter": "graphsys.nx_backend.paths:barycenter",
    "harmonic_diameter": "graphsys.nx_backend.paths:harmonic_diameter",
    "global_efficiency": "graphsys.nx_backend.paths:global_efficiency",
    "efficiency": "graphsys.nx_backend.paths:efficiency",
    "harmonic_centrality": "graphsys.nx_backend.paths:harmonic_centrality",
    # structure, cores and ego graphs
    "is_directed_acyclic_graph": "graphsys.nx_backend.structure:is_directed_acyclic_graph",
    "is_tree": "graphsys.nx_backend.structure:is_tree",
    "is_forest": "graphsys.nx_backend.structure:is_forest",
    "is_bipartite": "graphsys.nx_backend.structure:is_bipartite",
    "attracting_components": "graphsys.nx_backend.structure:attracting_components",
    "number_attracting_components": "graphsys.nx_backend.structure:number_attracting_components",
    "is_attracting_component": "graphsys.nx_backend.structure:is_attracting_component",
    "kosaraju_strongly_connected_components":
        "graphsys.nx_backend.structure:kosaraju_strongly_connected_components",
    "is_semiconnected": "graphsys.nx_backend.structure:is_semiconnected",
    "flow_hierarchy": "graphsys.nx_backend.structure:flow_hierarchy",
    "k_core": "graphsys.nx_backend.structure:k_core",
    "k_shell": "graphsys.nx_backend.structure:k_shell",
    "k_crust": "graphsys.nx_backend.structure:k_crust",
    "k_corona": "graphsys.nx_backend.structure:k_corona",
    "ego_graph": "graphsys.nx_backend.structure:ego_graph",
    # communities and triads
    "is_partition": "graphsys.nx_backend.community:is_partition",
    "modularity": "graphsys.nx_backend.community:modularity",
    "louvain_communities": "graphsys.nx_backend.community:louvain_communities",
    "label_propagation_communities":
        "graphsys.nx_backend.community:label_propagation_communities",
    "asyn_lpa_communities": "graphsys.nx_backend.community:asyn_lpa_communities",
    "triadic_census": "graphsys.nx_backend.community:triadic_census",
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
    "betweenness_centrality": ("Unweighted; k sources drawn as NetworkX draws them (the same "
                               "seed, the same sample); weight stays in NetworkX."),
    "closeness_centrality": "Every node, unweighted; u and distance stay in NetworkX.",
    "triangles": "Self-loops ignored, as NetworkX.",
    "clustering": "Undirected graphs, unweighted; weight and directed graphs stay in NetworkX.",
    "average_clustering": ("Undirected graphs, unweighted; weight and directed graphs stay "
                           "in NetworkX."),
    "transitivity": "Undirected graphs; directed graphs stay in NetworkX.",
    "diameter": "Undirected graphs; iFUB with a 4-sweep start.",
    "eccentricity": "Undirected graphs; Takes and Kosters' bounds for every node.",
    "ancestors": "Undirected graphs; a directed graph's reversed search stays in NetworkX.",
    "shortest_path_length": ("A directed graph's target-only form stays in NetworkX; "
                             "weights float32 does not hold exactly too."),
    "barycenter": "Unweighted, not a tree; weight, attr and sp stay in NetworkX.",
    "modularity": "NetworkX's directed modularity on a DiGraph; self-loops as NetworkX.",
    "ego_graph": "distance, and undirected=True on a directed graph, stay in NetworkX.",
    "k_core": "A given core_number stays in NetworkX.",
}
