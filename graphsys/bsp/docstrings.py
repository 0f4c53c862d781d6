"""Docstring pieces shared by the public functions of :mod:`graphsys.bsp`: the engine
options every front-end takes and the papers they cite, put into numpydoc docstrings by the
one template, :func:`graphsys.execution.fill_doc`."""

from __future__ import annotations

from collections.abc import Callable

from graphsys.execution import OPTION_DOCS as SHARED
from graphsys.execution import fill_doc

#: The numpydoc entries of the engine options: :func:`graphsys.bsp.run` and every algorithm
#: front-end (:func:`graphsys.bsp.pagerank`, ...) take them as keyword parameters of the
#: same meaning
OPTION_DOCS = {
    **SHARED,
    "graph": """graph : Graph or str or Path
    An opened graph or a graph directory.""",
    "mode": """mode : {"auto", "memory", "out-of-core"}, default "auto"
    ``memory`` builds the CSR/CSC adjacency once and picks push or pull per superstep
    (Ligra's rule, see ``dense_divisor``); ``out-of-core`` streams the edge buckets from
    the mapped files every superstep, holding only vertex arrays in memory. ``auto``:
    ``memory``, but a CPU run expected to end within a few supersteps (one started from a
    previous result, ``init``) streams where building the adjacency would cost more
    (:func:`~graphsys.bsp.engine.choose_mode`); ``result.stats.mode`` says which ran.""",
    "threads": """threads : int, optional
    numba's thread count while the call runs (capped at ``NUMBA_NUM_THREADS``, restored
    after it) and the worker threads of an out-of-core or distributed pass (default:
    numba's thread count).""",
    "edge_set": """edge_set : str or sequence of str, optional
    The edge set whose edges carry messages, or several read as one (a list, names joined
    by commas, or ``"all"``); default: the graph's default view, the default edge set with
    the edge sets appended to it (:mod:`graphsys.storage.edge_views`).""",
    "distributed": """distributed : bool, default False
    Run as one rank of the initialised ``torch.distributed`` process group: each rank owns
    a contiguous range of partitions and streams their edges; every rank receives all
    values.""",
    "readahead": """readahead : int, default 4
    Buckets an out-of-core worker asks the kernel to read ahead.""",
    "dense_divisor": """dense_divisor : float, default 20
    Ligra's direction rule: a superstep pulls when ``|F| + outdeg(F) > m /
    dense_divisor`` (``F`` the frontier, ``m`` the edges), else pushes.""",
    "init": """init : str, Path, pyarrow.Table or Result, optional
    A previous result of this algorithm (a ``graphsys run --out`` Parquet file,
    ``Result.to_table()`` or the Result) on an earlier version of the edges read, e.g.
    before an append: the run starts from it (PageRank from its ranks, WCC from its
    components and the new edges only, BFS/SSSP from its distances, k-core from its core
    numbers) and ends where a run from scratch does (:mod:`graphsys.bsp.incremental`).
    Refused in one line when it was computed on other edges.""",
    "device_budget": """device_budget : int or float, optional
    Out of core on the torch backend: bytes of edge batches (an int) that may stay in
    device memory after the first superstep, or a share in [0, 1] of the device memory
    free when the run starts; the rest are copied to the device every superstep from a
    host cache (pinned on CUDA, written once, within a quarter of the host memory
    available) or, beyond it, through a ring of staging buffers
    (:mod:`graphsys.bsp.device_stream`). Default: half the free memory on CUDA, nothing
    on the CPU. ``result.stats.resident_bytes`` says what was kept.""",
    "fuse": """fuse : bool, default True
    Let declared fast paths run inside numba calls (in memory, numba backend, one
    process): the supersteps of min-relaxation programs (BFS, SSSP, WCC), PageRank's fused
    pull + update loop, whole-graph algorithms. Same supersteps and values; the seconds of
    fused supersteps are their call's time split by work. False runs the generic loop.""",
}

#: Options documented by :func:`document_options` for the algorithm front-ends (``schedule``
#: is documented by each algorithm that takes it, ``max_iters`` by each with its default)
ENGINE_OPTIONS = ("mode", "device", "backend", "threads", "edge_set", "distributed",
                  "progress", "readahead", "dense_divisor", "fuse")


def document_options(*names: str) -> Callable:
    """Decorator: replace the docstring line ``%(engine_options)s`` with the entries of
    :data:`OPTION_DOCS` named by ``names`` (default: :data:`ENGINE_OPTIONS`), and
    ``%(graph)s`` with the ``graph`` entry."""
    return fill_doc(engine_options="\n".join(OPTION_DOCS[n] for n in names or ENGINE_OPTIONS),
                    graph=OPTION_DOCS["graph"])


#: The papers the engine and the algorithms implement, as numpydoc reference bodies
PAPERS = {
    "pregel": """G. Malewicz, M. H. Austern, A. J. C. Bik, J. C. Dehnert, I. Horn, N. Leiser,
   G. Czajkowski, "Pregel: a system for large-scale graph processing", SIGMOD 2010.""",
    "ligra": """J. Shun, G. E. Blelloch, "Ligra: a lightweight graph processing framework for
   shared memory", PPoPP 2013.""",
    "pagerank": """L. Page, S. Brin, R. Motwani, T. Winograd, "The PageRank citation ranking:
   bringing order to the web", Stanford InfoLab technical report, 1999.""",
    "beamer": """S. Beamer, K. Asanović, D. Patterson, "Direction-optimizing breadth-first
   search", SC 2012.""",
    "afforest": """M. Sutton, T. Ben-Nun, A. Barak, "Optimizing parallel graph connectivity
   computation via subgraph sampling", IPDPS 2018.""",
}


def cite(*keys: str) -> str:
    """The numpydoc ``References`` entries ``.. [1]``, ``.. [2]``, ... of :data:`PAPERS`
    ``keys``, in that order."""
    return "\n".join(f".. [{i}] {PAPERS[k]}" for i, k in enumerate(keys, 1))
