"""The process that Nsight Compute profiles for ``profile --ncu``: one BSP run of a builtin
algorithm through the torch backend (the engine's CUDA code path), as
:func:`graphsys.bsp.algorithms` runs it for ``graphsys run``.

It is started as ``python -m graphsys.analysis.ncu_target SPEC`` (:func:`target_command`),
where ``SPEC`` is one JSON object holding the keyword arguments of :func:`run_target`. The
profiled process therefore runs library functions only: it does not go through the command
line (no argument parser, no flags), so the library never shells out to the CLI and the
measured kernels are those of :func:`run_target` whatever the CLI's options become. It
prints the run statistics as one JSON line on stdout; a :class:`GraphsysError` is one line
``error: ...`` on stderr and its exit code (which :func:`graphsys.analysis.ncu.measure`
quotes when ncu's run fails).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from graphsys.errors import GraphsysError

#: The keys of a target spec (the keyword arguments of :func:`run_target`).
SPEC_KEYS = ("graph", "algorithm", "device", "mode", "max_iters", "source", "edge_set")


def run_target(graph: str, algorithm: str, *, device: str = "cuda", mode: str = "memory",
               max_iters: int | None = None, source: int | str | None = None,
               edge_set: str | None = None) -> dict[str, Any]:
    """Run the builtin BSP ``algorithm`` over the graph directory ``graph`` on ``device``
    with the torch backend (no integrity check: the profile opened the graph already);
    ``source`` is an original node id (bfs, sssp, ppr). Returns the run statistics
    (:meth:`graphsys.bsp.stats.RunStats.to_dict`)."""
    from graphsys.device import resolve_device
    from graphsys.plugins import ALGORITHMS
    from graphsys.storage.graph import open_graph

    spec = ALGORITHMS.get(algorithm)
    spec.check_source(source)
    g = open_graph(graph)
    result = spec.run(g, source, max_iters=max_iters, mode=mode, backend="torch",
                      device=str(resolve_device(device)), edge_set=edge_set)
    return result.stats.to_dict()


def target_command(graph: str | Path, algorithm: str, *, device: str = "cuda",
                   mode: str = "memory", max_iters: int | None = None, source=None,
                   edge_set: str | None = None) -> list[str]:
    """``[python, -m, graphsys.analysis.ncu_target, SPEC]``: the command line of a process
    that runs :func:`run_target` with these arguments (the application ncu profiles)."""
    spec = {"graph": str(graph), "algorithm": algorithm, "device": device, "mode": mode,
            "max_iters": max_iters, "source": source, "edge_set": edge_set}
    return [sys.executable, "-m", __name__, json.dumps(spec)]


def main(argv: list[str]) -> int:
    """Run the spec ``argv[0]`` (a JSON object of :data:`SPEC_KEYS`); print the statistics
    as one JSON line. Returns the exit status."""
    try:
        if len(argv) != 1:
            raise GraphsysError("ncu target: expected one JSON spec")
        try:
            spec = json.loads(argv[0])
        except ValueError as exc:
            raise GraphsysError(f"ncu target: the spec is not JSON: {exc}") from None
        if not isinstance(spec, dict) or set(spec) - set(SPEC_KEYS) or not {
                "graph", "algorithm"} <= set(spec):
            raise GraphsysError(f"ncu target: the spec must be an object with graph and "
                                f"algorithm and no keys but {', '.join(SPEC_KEYS)}")
        stats = run_target(**spec)
    except GraphsysError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(json.dumps({"ok": True, **stats}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
