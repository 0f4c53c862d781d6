"""Structural measures of a stored graph, as NetworkX and igraph users compute them.

- link scores of node pairs and the best candidates of each node: :func:`link_scores`,
  :func:`top_links`, :func:`common_neighbors`;
- summaries: :func:`degree_stats` (statistics and distribution), :func:`density`,
  :func:`reciprocity`, :func:`degree_assortativity`;
- distances in hops: :func:`diameter` (estimate or exact), :func:`eccentricity`.

Each follows NetworkX's definition (named in its docstring; where NetworkX refuses a case,
such as a disconnected graph's diameter, the docstring says what is returned instead) and
reads the graph through the Graph API: a stream of the edge buckets, or the sorted rows of
the stored adjacency index where the graph has one, else a CSR/CSC built once per opened
graph.
"""

from graphsys.measures.degrees import (
    DegreeStats,
    degree_assortativity,
    degree_stats,
    density,
    reciprocity,
)
from graphsys.measures.distance import Diameter, diameter, eccentricity
from graphsys.measures.similarity import (
    METHODS,
    TopLinks,
    common_neighbors,
    link_scores,
    top_links,
)

__all__ = ["METHODS", "DegreeStats", "Diameter", "TopLinks", "common_neighbors",
           "degree_assortativity", "degree_stats", "density", "diameter", "eccentricity",
           "link_scores", "reciprocity", "top_links"]
