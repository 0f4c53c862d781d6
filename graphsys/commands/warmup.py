"""``graphsys warmup``: compile every vertex algorithm's kernels into the kernel cache.

A new install compiles each numba kernel on its first call (seconds for the larger ones) and
caches it for every later process and every install of the same sources (see
``graphsys.jit``). This command pays that cost once, up front, by running each registered
algorithm on small generated graphs in memory (with and without stored indexes) and out of
core; ``graphsys demo`` runs it first. A second run loads every kernel from the cache.
``--all`` also runs every public analysis (bsp, mining, measures, the samplers, the NetworkX
backend) on small generated graphs, in each layout the library hands its kernels, with one
progress line per area. ``--jobs N`` compiles in N fresh processes at once (numba compiles on
one core), the work split into groups of about equal compile time, all writing the one
cache; the progress lines and a worker's error are printed here.
"""

from __future__ import annotations

import sys

from graphsys.commands._common import emit_json
from graphsys.threads import available_cores


def register(subparsers) -> None:
    p = subparsers.add_parser("warmup", help="compile the algorithms' kernels ahead of use",
                              description=__doc__)
    p.add_argument("algorithms", nargs="*", metavar="ALGO",
                   help="algorithms to warm (default: every registered one)")
    p.add_argument("--all", action="store_true", dest="all_kernels",
                   help="also every public analysis: mining, measures, samplers, the "
                        "NetworkX backend (takes no ALGO)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the generated graphs (default 0)")
    p.add_argument("--jobs", type=int, default=None,
                   help="processes that compile at once (default: the CPUs this process may "
                        "run on; 1: in this process)")
    p.add_argument("--json", action="store_true", help="print one JSON line of figures")
    p.set_defaults(func=run)


def run(args) -> int:
    from graphsys.bsp.warmup import warmup
    from graphsys.errors import GraphsysError

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    progress = None if args.json else say
    jobs = available_cores() if args.jobs is None else args.jobs
    if args.all_kernels:
        if args.algorithms:
            raise GraphsysError("--all warms every algorithm: name none")
        from graphsys.commands.warmup_all import warmup_all

        report = warmup_all(seed=args.seed, progress=progress, jobs=jobs)
    else:
        report = warmup(args.algorithms or None, seed=args.seed, progress=progress, jobs=jobs)
    if args.json:
        emit_json(report)
    else:
        print(f"{report['compiled']} kernel signatures compiled, {report['loaded']} loaded "
              f"from the cache in {report['seconds']:.1f} s; cache: {report['cache']}")
    return 0
