"""Engine glue of the declared whole-graph fast paths
(:meth:`~graphsys.bsp.program.VertexProgram.solve_in_memory`): call the program, charge
CSR/CSC builds to setup, record its method and supersteps."""

from __future__ import annotations

from graphsys.bsp.program import Context, VertexProgram
from graphsys.bsp.stats import RunStats


def solve_in_memory(program: VertexProgram, ctx: Context, edges, state: dict,
                    schedule: str, max_iters: int, stats: RunStats,
                    progress, on_device: bool = False) -> int | None:
    """Run ``program``'s in-memory fast path if it declares one for ``schedule``; returns
    the number of vertices it leaves active (0: converged), or None when the superstep loop
    must run. ``on_device``: the torch backend's path
    (:meth:`~graphsys.bsp.program.VertexProgram.solve_on_device`)."""
    build0 = edges.build_seconds
    solve = program.solve_on_device if on_device else program.solve_in_memory
    solved = solve(ctx, edges, state, schedule, max_iters)
    stats.setup_seconds += edges.build_seconds - build0
    if solved is None:
        return None
    stats.setup_seconds += solved.setup_seconds
    stats.method = solved.method
    for ss in solved.supersteps:
        stats.supersteps.append(ss)
        if progress is not None:
            progress(ss)
    return solved.num_left
