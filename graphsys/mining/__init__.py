"""Pattern mining over a stored graph: triangles, cliques, motifs and user patterns.

Every function reads the undirected simple view of an edge set (both directions of every
stored edge, each adjacent pair once, self-loops dropped; :mod:`graphsys.views.orient`),
served from the graph's ``sym`` index (``graphsys index --undirected``) when it has one, and
returns counts over the whole graph or per node (:class:`NodeValues`, keyed back to the
original ids). See ``docs/mining.md`` for the algorithms and their costs.

- Triangles (:mod:`graphsys.mining.triangle`): :func:`triangle_count`, :func:`triangles`,
  :func:`clustering`, :func:`average_clustering`, :func:`transitivity` (all from one
  pass: :func:`triangle_stats`), :func:`triad_census`; in RAM, out of core, or across
  ``torch.distributed`` ranks; :func:`triangle_work`, the work per node.
- Cliques (:mod:`graphsys.mining.clique`): :func:`clique_count`, :func:`clique_counts`,
  :func:`cliques`.
- Motifs (:mod:`graphsys.mining.motif`): :func:`motifs`, exact or sampled.
- User patterns (:mod:`graphsys.mining.pattern`): :class:`Pattern`, :func:`count`,
  :func:`matches`.
"""

from graphsys.mining.clique import clique_count, clique_counts, cliques
from graphsys.mining.motif import MotifCensus, motifs
from graphsys.mining.pattern import Pattern, count, matches
from graphsys.mining.triangle import (
    TRIAD_NAMES,
    TriangleStats,
    average_clustering,
    clustering,
    transitivity,
    triad_census,
    triangle_count,
    triangle_stats,
    triangle_work,
    triangles,
)
from graphsys.storage.node_values import NodeValues

__all__ = ["MotifCensus", "NodeValues", "Pattern", "TRIAD_NAMES", "TriangleStats",
           "average_clustering", "clique_count", "clique_counts", "cliques", "clustering",
           "count", "matches", "motifs", "transitivity", "triad_census", "triangle_count",
           "triangle_stats", "triangle_work", "triangles"]
