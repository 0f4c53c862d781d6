"""The body of each rank of the distributed mining test (imported by the spawned
processes)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def worker(rank: int, world_size: int, port: int, graph_dir: str, out_dir: str) -> None:
    import torch.distributed as dist

    from graphsys import mining, open_graph
    from graphsys.distributed import join_local_store
    from graphsys.errors import GraphsysError
    from graphsys.mining.outofcore import triangles_by_blocks
    from graphsys.mining.parallel import Ranks

    join_local_store(port, rank, world_size)
    try:
        g = open_graph(graph_dir)
        opts = {"distributed": True, "threads": 1}
        stats = mining.triangle_stats(g, per_node=True, mode="memory", **opts)
        # out of core in row blocks of 40 entries: the outer blocks dealt over the ranks
        total, counts, _ = triangles_by_blocks(g, "default", per_vertex=True,
                                               memory_limit=None, threads=1,
                                               ranks=Ranks.of(True), block_entries=40)
        out = {"count": stats.count, "transitivity": stats.transitivity,
               "triangles": stats.triangles.values.tolist(),
               "ooc_count": total, "ooc_triangles": counts.tolist(),
               "cliques4": mining.clique_count(g, 4, **opts),
               "clique_counts4": mining.clique_counts(g, 4, **opts).values.tolist(),
               "motifs4": mining.motifs(g, 4, **opts).counts,
               "motifs5": mining.motifs(g, 5, **opts).counts,
               "sampled4": mining.motifs(g, 4, method="sampled", samples=500, seed=1,
                                         **opts).counts,
               "triads": mining.triad_census(g, **opts),
               "pattern": mining.count(g, "4-cycle", induced=True, **opts)}
        # ranks given other budgets (or, with none, seeing other free RAM) agree on one, the
        # smallest: the same mode and row blocks on every rank
        out["budget"] = Ranks.of(True).budget([5 << 20, 3 << 20][rank])
        try:  # ranks making other calls: refused on every rank, nothing summed
            mining.clique_count(g, 3 + rank, **opts)
        except GraphsysError as exc:
            out["other_call"] = str(exc)
        Path(out_dir, f"{rank}.json").write_text(json.dumps(out, default=_plain))
    finally:
        dist.destroy_process_group()


def _plain(x):
    return x.item() if isinstance(x, np.generic) else str(x)
