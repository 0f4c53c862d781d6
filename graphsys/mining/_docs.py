"""The parameter texts the mining functions share, put into their docstrings by the one
template, :func:`graphsys.execution.fill_doc` (:func:`document`)."""

from __future__ import annotations

from graphsys.execution import OPTION_DOCS, fill_doc, with_threads

PARAMETERS = {
    "graph": """graph : Graph or str or Path
    An opened graph or a graph directory (one entity type).""",
    "edge_set": """edge_set : str, optional
    The edge set (default: the graph's default); its undirected simple view is used.""",
    "mode": """mode : {"auto", "memory", "out-of-core"}, default "auto"
    ``memory``: the oriented graph in RAM; ``out-of-core``: row blocks of the stored
    ``sym`` index within ``memory_limit`` (:mod:`graphsys.mining.outofcore`); ``auto``:
    in RAM when that fits the budget, else out of core.""",
    "threads": """threads : int, optional
    numba threads (default: numba's current count; capped at ``NUMBA_NUM_THREADS``).""",
    "memory_limit": OPTION_DOCS["memory_limit"],
    "distributed": """distributed : bool, default False
    Split the roots over the ranks of the initialised ``torch.distributed`` process
    group (each rank owns a range of oriented vertices of about equal work; the counts
    are summed with ``all_reduce``; every rank returns the whole answer).""",
    "progress": OPTION_DOCS["progress"],
    "match": """pattern : Pattern or str or sequence of (int, int)
    The pattern, a name (:meth:`~graphsys.mining.Pattern.named`) or an edge list.
induced : bool, default False
    Induced matches only.
labels : str or array-like, optional
    The graph's node labels (a node column of integers, or one integer per node by
    internal id), required when the pattern has labels.""",
    "edge_labels": """edge_labels : str, optional
    The graph's integer edge column the pattern's edge labels refer to, required when
    the pattern has edge labels.""",
}
PARAMETERS["execution"] = OPTION_DOCS["execution"]
PARAMETERS["options"] = "\n".join(PARAMETERS[k] for k in (
    "threads", "memory_limit", "distributed", "progress", "execution"))
#: The options of the functions that take no ``threads``, ``distributed`` or ``progress``
PARAMETERS["memory_options"] = "\n".join(PARAMETERS[k] for k in ("memory_limit", "execution"))
#: What a triangle call's budget also covers: the oriented graph it keeps.
_KEPT = """ In RAM, the oriented graph is kept on the opened Graph and the next count
    on it reuses it (:mod:`graphsys.views.cache`): the kept structure counts against this
    budget, on this call and the next ones (dropped when it no longer fits beside what a
    call needs)."""
PARAMETERS["triangle_options"] = "\n".join((
    PARAMETERS["mode"], PARAMETERS["threads"], PARAMETERS["memory_limit"] + _KEPT,
    PARAMETERS["distributed"], PARAMETERS["progress"], PARAMETERS["execution"]))


def document(func):
    """Decorator of a mining front-end: each docstring line ``%(name)s`` replaced by the
    text of :data:`PARAMETERS`, each call run on its threads
    (:func:`~graphsys.execution.with_threads`)."""
    return with_threads(fill_doc(**PARAMETERS)(func))
