r"""The vertex-centric programming model: :class:`VertexProgram`, combiners, the context.

A superstep :math:`s` of a program over the vertex set owned by this process:

1. **aggregate**: :meth:`VertexProgram.aggregate` returns local partial values (e.g. the
   dangling rank mass); the engine reduces them over all processes (sum/min/max) and exposes
   them as ``ctx.aggregates``;
2. **compute / communicate**: every *active* vertex ``u`` sends :math:`x_u` =
   :meth:`VertexProgram.send` along its edges; each edge ``(u, v)`` carries
   :math:`m_{uv} = \phi(x_u, w_{uv})` (``message``: ``copy``, ``add_weight``,
   ``mul_weight``, or a callable); the messages reaching ``v`` are combined with
   :math:`\bigoplus` (``combiner``: ``sum``, ``min``, ``max`` or a :class:`Combiner`);
3. **barrier / update**: :meth:`VertexProgram.update` folds the combined messages into the
   state and returns the next frontier plus partial halting values (reduced like aggregates);
   the run stops when :meth:`VertexProgram.halt` says so, the frontier is empty everywhere,
   or ``max_iters`` supersteps ran.

State and messages are torch tensors on the run's device; vertex values sent along edges are
float64 (N_local,). A program that declares a message :attr:`VertexProgram.width` ``d``
sends float64 (N_local, d) rows instead (a feature matrix, HITS' two scores): messages
are combined column by column with the same builtin message and combiner, in memory, out of
core and across ranks, and scalar programs keep their own paths. ``ctx.lo``/``ctx.hi`` is
the global id range this process owns (``0..N`` in a single process).
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from graphsys.bsp import kernels
from graphsys.bsp.docstrings import cite, fill_doc
from graphsys.errors import GraphsysError

if TYPE_CHECKING:
    import torch

#: Builtin per-edge message functions: name -> kernel code.
MESSAGES = {"copy": kernels.MSG_COPY, "add_weight": kernels.MSG_ADD_WEIGHT,
            "mul_weight": kernels.MSG_MUL_WEIGHT}
#: Builtin combiners: name -> (kernel code, identity, torch scatter_reduce name).
COMBINERS = {"sum": (kernels.COMB_SUM, 0.0, "sum"),
             "min": (kernels.COMB_MIN, float("inf"), "amin"),
             "max": (kernels.COMB_MAX, float("-inf"), "amax")}
#: Reductions allowed for aggregators.
REDUCTIONS = ("sum", "min", "max")
DIRECTIONS = ("out", "in", "both")
#: the dtypes :meth:`Context.full` fills with NumPy on the CPU, by name (a torch dtype's
#: ``str`` less ``torch.``, or a NumPy dtype's name)
_NUMPY_DTYPES = {"float64": np.float64, "float32": np.float32, "int64": np.int64,
                 "bool": np.bool_}
#: dtypes a scalar copy/sum program may sum its messages in (:attr:`VertexProgram.sum_dtype`)
SUM_DTYPES = ("float64", "float32")


class Combiner(ABC):
    """A custom message combiner: how the messages reaching one vertex become one value.

    The builtin combiners (``"sum"``, ``"min"``, ``"max"``, named by
    :attr:`VertexProgram.combiner`) run in the fused kernels and combine locally before
    any exchange. A :class:`Combiner` subclass runs on the generic (torch) path and sees
    every raw message of a superstep, so it need not be associative (e.g. the mode,
    :class:`ModeCombiner`); in a distributed run raw messages are exchanged rather than
    locally combined ones.

    Attributes
    ----------
    name : str
        Shown in errors and statistics.
    identity : float
        Value of ``combined`` where a vertex received nothing.

    Examples
    --------
    The mean of the messages (``identity`` where none arrived):

    >>> import torch
    >>> from graphsys.bsp import Combiner
    >>> class Mean(Combiner):
    ...     name = "mean"
    ...     def combine(self, index, values, num_targets):
    ...         total = torch.zeros(num_targets, dtype=torch.float64).index_add_(0, index, values)
    ...         count = torch.zeros(num_targets, dtype=torch.float64).index_add_(
    ...             0, index, torch.ones_like(values))
    ...         return torch.where(count > 0, total / count.clamp(min=1), self.identity)
    >>> values = torch.tensor([1.0, 3.0, 5.0], dtype=torch.float64)
    >>> Mean().combine(torch.tensor([0, 0, 2]), values, 3)
    tensor([2., 0., 5.], dtype=torch.float64)
    """

    name = "custom"
    #: Value of ``combined`` where a vertex received nothing.
    identity = 0.0

    @abstractmethod
    def combine(self, index: torch.Tensor, values: torch.Tensor,
                num_targets: int) -> torch.Tensor:
        """Combine the messages of one superstep per target.

        Parameters
        ----------
        index : torch.Tensor
            int64 (M,): the local target of each message, in ``[0, num_targets)``.
        values : torch.Tensor
            float64 (M,): the messages.
        num_targets : int
            Vertices owned by this process.

        Returns
        -------
        torch.Tensor
            float64 (num_targets,): the combined value of each target, :attr:`identity`
            where none arrived.
        """


def message_runs(index: torch.Tensor, values: torch.Tensor):
    """The messages sorted by (target, value) and cut into runs of equal pairs: returns
    (target, value, length) per run."""
    import torch

    order = torch.argsort(values, stable=True)
    order = order[torch.argsort(index[order], stable=True)]
    idx, val = index[order], values[order]
    new = torch.ones_like(idx, dtype=torch.bool)
    new[1:] = (idx[1:] != idx[:-1]) | (val[1:] != val[:-1])
    starts = torch.nonzero(new).squeeze(1)
    lengths = torch.diff(starts, append=torch.tensor([idx.numel()], device=idx.device))
    return idx[starts], val[starts], lengths


class ModeCombiner(Combiner):
    """The most frequent message value per target; ties go to the smallest value (label
    propagation).

    Examples
    --------
    Target 0 receives 2, 5, 5; target 1 receives 7, 1; target 2 nothing:

    >>> import torch
    >>> from graphsys.bsp import ModeCombiner
    >>> values = torch.tensor([2.0, 5.0, 5.0, 7.0, 1.0], dtype=torch.float64)
    >>> ModeCombiner().combine(torch.tensor([0, 0, 0, 1, 1]), values, 3)
    tensor([5., 1., 0.], dtype=torch.float64)
    """

    name = "mode"

    def combine(self, index, values, num_targets):
        import torch

        out = torch.full((num_targets,), self.identity, dtype=torch.float64,
                         device=values.device)
        if index.numel() == 0:
            return out
        # the runs of equal (target, value); per target: the longest, then the smallest
        # value among runs that long
        run_idx, run_val, counts = message_runs(index, values)
        best = torch.zeros(num_targets, dtype=counts.dtype, device=index.device)
        best.scatter_reduce_(0, run_idx, counts, "amax")
        keep = counts == best[run_idx]
        out.scatter_reduce_(0, run_idx[keep], run_val[keep], "amin", include_self=False)
        return out


@dataclass
class Solved:
    """What :meth:`VertexProgram.solve_in_memory` ran: ``method`` (recorded in
    :attr:`RunStats.method`), its ``supersteps`` (iterations or levels, seconds excluding
    CSR/CSC builds), ``num_left``: vertices left active (0 when done: the run converged;
    a count, not a mask, so a finished run allocates nothing for it), and ``setup_seconds``
    it spent preparing (a renumbering), charged to the run's setup."""

    method: str
    supersteps: list
    num_left: int
    setup_seconds: float = 0.0


@dataclass
class Context:
    """What a program sees of the run: sizes, the owned vertex range, degrees, the
    superstep number and the reduced aggregators.

    One process owns the internal ids ``lo..hi-1`` (``0..N-1`` in a single process); the
    state tensors of a program hold those vertices in that order, ``N_local = hi - lo`` of
    them.

    Attributes
    ----------
    graph : Graph
        The opened graph (node columns, ids, edge sets).
    num_nodes : int
        N, the vertices of the whole graph.
    lo, hi : int
        The internal id range this process owns.
    device : torch.device
        Where the state lives (``cpu`` or a CUDA device).
    host : bool
        True where the run keeps the state in NumPy arrays (see
        :attr:`VertexProgram.host_state`): :meth:`full`, :meth:`node_range` and
        :meth:`degree` then return NumPy arrays, and ``device`` is
        :data:`graphsys.device.HOST`.
    backend : str
        ``numba`` (CPU kernels: a program may run its own vertex passes in numba too) or
        ``torch`` (the GPU code path, on any device).
    edge_set : str
        The edge set that carries messages.
    superstep : int
        The current superstep (0-based).
    num_active : int
        Vertices in this superstep's sending frontier, over all processes.
    aggregates : dict of str to float
        This superstep's reduced aggregator values (see
        :meth:`VertexProgram.aggregate`).
    num_local : int
        ``hi - lo`` (a property).

    Examples
    --------
    A program reads the context it is handed; this one answers from it before any
    superstep (no vertex is active):

    >>> import tempfile, graphsys
    >>> from graphsys import bsp
    >>> class InDegree(bsp.VertexProgram):
    ...     message, combiner, direction = "copy", "sum", "out"
    ...     def init(self, ctx):
    ...         print(ctx.num_nodes, ctx.lo, ctx.hi)
    ...         return {}, ctx.full(False, bool)
    ...     def send(self, ctx, state): ...
    ...     def update(self, ctx, state, combined, received): ...
    ...     def result(self, ctx, state):
    ...         return ctx.degree("in")
    >>> g = graphsys.from_numpy([1, 1, 1, 2], [2, 3, 4, 3], tempfile.mkdtemp() + "/g")
    >>> bsp.run(g, InDegree()).to_dict()
    4 0 4
    {1: 0.0, 2: 1.0, 3: 2.0, 4: 1.0}
    """

    graph: Any
    num_nodes: int
    lo: int
    hi: int
    device: torch.device
    backend: str = "torch"
    edge_set: str | None = None
    superstep: int = 0
    num_active: int = 0
    aggregates: dict[str, float] = field(default_factory=dict)
    _degrees: dict[str, torch.Tensor] = field(default_factory=dict)
    _degree_fn: Callable[[str], Any] | None = None
    host: bool = False

    @property
    def num_local(self) -> int:
        """Vertices this process owns (``hi - lo``)."""
        return self.hi - self.lo

    def node_range(self, dtype=None) -> torch.Tensor:
        """Internal (global) ids of the owned vertices, ``dtype`` (a torch or NumPy dtype,
        default int64) (N_local,) on the run's device."""
        host = _numpy_dtype(dtype, "int64") if self.device.type == "cpu" else None
        if host is not None:  # NumPy: see full()
            ids = np.arange(self.lo, self.hi, dtype=host)
            return ids if self.host else _from_numpy(ids)
        import torch

        return torch.arange(self.lo, self.hi, dtype=_torch_dtype(dtype, "int64"),
                            device=self.device)

    def degree(self, direction: str = "out") -> torch.Tensor:
        """Degrees of the owned vertices in the run's edge set.

        Parameters
        ----------
        direction : {"out", "in", "both"}, default "out"
            Out-edges, in-edges, or both (multi-edges counted).

        Returns
        -------
        torch.Tensor
            float64 (N_local,), computed once per direction and run.
        """
        if direction not in self._degrees:
            deg = self._degree_fn(direction)
            own = np.asarray(deg[self.lo:self.hi], dtype=np.float64)  # NumPy: see full()
            self._degrees[direction] = own if self.host else _from_numpy(own).to(self.device)
        return self._degrees[direction]

    def full(self, value: float, dtype=None, width: int | None = None) -> torch.Tensor:
        """A state tensor holding ``value`` for every owned vertex.

        Parameters
        ----------
        value : float
            The fill value.
        dtype : torch.dtype or NumPy dtype, optional
            Its dtype (default float64; ``bool``, ``np.int64``, ``torch.bool`` ... name the
            same dtypes).
        width : int, optional
            None: shape (N_local,); else (N_local, width) rows (a vector program).

        Returns
        -------
        torch.Tensor
            On the run's device (a NumPy array where :attr:`host`).
        """
        shape = (self.num_local,) if width is None else (self.num_local, width)
        host = _numpy_dtype(dtype, "float64") if self.device.type == "cpu" else None
        if host is not None:
            # NumPy: a torch fill of a CPU tensor of more than 32k elements wakes torch's
            # thread pool, which costs more than the fill (milliseconds on a busy machine)
            filled = np.full(shape, value, dtype=host)
            return filled if self.host else _from_numpy(filled)
        import torch

        return torch.full(shape, value, dtype=_torch_dtype(dtype, "float64"),
                          device=self.device)


def _dtype_name(dtype, default: str) -> str:
    """The name of a torch or NumPy dtype (``float64``, ``bool``...); ``default`` for None."""
    if dtype is None:
        return default
    if type(dtype).__module__.startswith("torch"):
        return str(dtype).removeprefix("torch.")
    return np.dtype(dtype).name


def _numpy_dtype(dtype, default: str) -> type | None:
    """The NumPy dtype :meth:`Context.full` fills ``dtype`` with on the CPU, or None."""
    return _NUMPY_DTYPES.get(_dtype_name(dtype, default))


def _torch_dtype(dtype, default: str) -> torch.dtype:
    """``dtype`` (torch or NumPy, None for ``default``) as a torch dtype."""
    import torch

    if isinstance(dtype, torch.dtype):
        return dtype
    return getattr(torch, _dtype_name(dtype, default))


def _from_numpy(arr: np.ndarray) -> torch.Tensor:
    import torch

    return torch.from_numpy(arr)


@fill_doc(references=cite("pregel", "ligra"))
class VertexProgram(ABC):
    """Base class of vertex programs (Pregel [1]_ / Ligra [2]_ style).

    A subclass implements :meth:`init`, :meth:`send`, :meth:`update` and :meth:`result`
    (and optionally :meth:`aggregate`, :meth:`halt`, :meth:`accepts`), and sets class
    attributes that configure the edge phase (the module docstring has the superstep).
    Run it with :func:`graphsys.bsp.run`; the same program
    runs in memory, out of core, on CUDA and distributed (``docs/programs.md`` is the
    guide). Every array a method returns is checked (type, shape, dtype, device) before
    the engine or a kernel reads it (:mod:`graphsys.bsp.checks`): a mismatch is one
    :class:`~graphsys.errors.GraphsysError` naming the method.

    Attributes
    ----------
    name : str
        Shown in statistics and errors.
    message : {"copy", "add_weight", "mul_weight"} or callable, default "copy"
        The message an edge ``(u, v)`` carries: ``x_u``, ``x_u + w_uv``, ``x_u * w_uv``,
        or ``message(x_src: float64 (E,), weight: float32 (E,) | None) -> float64 (E,)``
        (generic path).
    combiner : {"sum", "min", "max"} or Combiner, default "sum"
        How the messages reaching a vertex are combined.
    direction : {"out", "in", "both"}, default "out"
        Messages along edges, against them, or both ways. Read at every superstep, so a
        program may switch it (a property, or an attribute set in :meth:`update`; HITS
        alternates ``out`` and ``in``) in every mode.
    uses_weights : bool, default False
        Whether edge weights are needed (``add_weight``/``mul_weight``).
    first_message_wins : bool, default False
        All messages of a superstep are equal, so a pulling target can stop at its first
        one (Ligra's BFS trick).
    include_self : bool, default False
        Each active vertex also receives its own value (custom combiners).
    halt_when_inactive : bool, default True
        Stop when no vertex is active; programs that act on an empty frontier (k-core
        raising ``k``) set False and halt through :meth:`halt`.
    width : int, optional
        None: scalar messages, float64 (N_local,). ``d >= 1``: :meth:`send` returns
        float64 (N_local, d) rows, each column messaged and combined on its own (a
        callable ``message`` sees (E, d) rows), :meth:`update` gets ``combined`` float64
        (N_local, d) and :meth:`result` may return (N_local,) or (N_local, d). Builtin
        combiners only (not a :class:`Combiner`), no :attr:`relax_state`.
    sum_dtype : {"float64", "float32"}, default "float64"
        For a scalar ``copy``/``sum`` program: the numba CPU kernels round the sent values
        to float32 and, out of core, sum each target's messages in float32 per target
        partition, halving the cache footprint of the random accesses; a run on the torch
        backend refuses it.
    relax_state : str, optional
        Declares a *min-relaxation* (label-correcting) program, e.g. BFS, SSSP, WCC: the
        float64 state tensor of this name is what a vertex sends (plus
        :attr:`relax_offset`, plus the edge weight for ``add_weight``), the combiner is
        ``min``, :meth:`update` lowers the state to the combined minimum where that is
        smaller and the next frontier is the vertices it lowered; no aggregators, no
        :meth:`halt`. The in-memory numba engine then runs its supersteps inside numba
        calls, and the ``async`` schedule can run it.
    relax_offset : float, default 0.0
        Added to the sent value of a min-relaxation program (BFS: 1).
    expected_supersteps : int, optional
        How many supersteps the run is expected to take, where the program knows (a run
        started from a previous result: that run's count); ``mode="auto"`` streams the
        edges rather than building the adjacency when it is small
        (:func:`~graphsys.bsp.engine.choose_mode`). None: unknown.
    peeled : numpy.ndarray, optional
        Set by a run that kept the order in which it removed the nodes beside its values
        (int32/int64 (N,), the nodes in that order; k-core's peeling): the result's
        :attr:`Result.peeled <graphsys.bsp.result.Result.peeled>`, which its
        :attr:`~graphsys.bsp.result.Result.order` numbers. None: none.
    host_state : bool, default False
        Declares that :meth:`init`, :meth:`solve_in_memory` and :meth:`result` also take
        and return NumPy arrays: a run in memory on the CPU (numba backend, one process,
        ``fuse`` on) then keeps the state in NumPy arrays (:attr:`Context.host`) and
        imports no torch while the fast path answers; else the state becomes tensors
        before the first superstep.
    host_supersteps : bool, default False
        Declares, beside ``host_state``, that :meth:`aggregate`, :meth:`send`,
        :meth:`update` and :meth:`halt` also take and return NumPy arrays: a streamed run
        (``mode="out-of-core"``) on the CPU (numba backend, one process) then runs its
        supersteps on a NumPy state and imports no torch.

    References
    ----------
    %(references)s

    Examples
    --------
    Connected components by max-label propagation: every vertex ends with the largest
    internal id of its weak component.

    >>> import tempfile, numpy as np, torch, graphsys
    >>> from graphsys import bsp
    >>> class MaxLabel(bsp.VertexProgram):
    ...     name = "maxlabel"
    ...     message, combiner, direction = "copy", "max", "both"
    ...     def init(self, ctx):
    ...         label = ctx.node_range().to(torch.float64)
    ...         return {"label": label}, torch.ones_like(label, dtype=torch.bool)
    ...     def send(self, ctx, state):
    ...         return state["label"]
    ...     def update(self, ctx, state, combined, received):
    ...         grew = received & (combined > state["label"])
    ...         state["label"] = torch.where(grew, combined, state["label"])
    ...         return grew, {}
    ...     def result(self, ctx, state):
    ...         return state["label"]
    >>> g = graphsys.from_numpy(np.array([1, 2, 7]), np.array([2, 3, 8]),
    ...                         tempfile.mkdtemp() + "/g")
    >>> labels = bsp.run(g, MaxLabel()).to_dict()
    >>> labels[1] == labels[2] == labels[3] != labels[7] == labels[8]
    True
    """

    name = "program"
    message: str | Callable = "copy"
    combiner: str | Combiner = "sum"
    direction = "out"
    uses_weights = False
    first_message_wins = False
    include_self = False
    halt_when_inactive = True
    width: int | None = None
    sum_dtype = "float64"
    relax_state: str | None = None
    relax_offset = 0.0
    expected_supersteps: int | None = None
    peeled: np.ndarray | None = None
    host_state = False
    host_supersteps = False

    # -- the program ------------------------------------------------------------------------
    @abstractmethod
    def init(self, ctx: Context) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """The initial state and frontier (called once, before superstep 0).

        Parameters
        ----------
        ctx : Context
            The run: sizes, owned range, device, degrees.

        Returns
        -------
        state : dict of str to torch.Tensor
            Per-vertex tensors, (N_local,) or (N_local, d), on ``ctx.device`` (other
            entries, e.g. Python numbers or 0-d tensors, are allowed and passed back
            unchanged; a tensor of one or more dimensions must have N_local rows).
        active : torch.Tensor
            bool (N_local,): the vertices that send in superstep 0.
        """

    def aggregate(self, ctx: Context, state: dict[str, torch.Tensor]) -> dict[str, tuple]:
        """Global aggregators of this superstep, before anything is sent.

        Returns
        -------
        dict of str to (value, reduction)
            This process's partial ``value`` (a float or 0-d tensor) of each aggregator
            and its ``reduction`` (``"sum"``, ``"min"`` or ``"max"``). The engine reduces
            them over all processes; :meth:`send` and :meth:`update` read the results in
            ``ctx.aggregates[name]``. Default: none.
        """
        return {}

    @abstractmethod
    def send(self, ctx: Context, state: dict[str, torch.Tensor]) -> torch.Tensor:
        """The value each owned vertex sends along its edges this superstep.

        Returns
        -------
        torch.Tensor
            float64 (N_local,), or (N_local, width) rows for a vector program; only the
            rows of active vertices are read.
        """

    def accepts(self, ctx: Context, state: dict[str, torch.Tensor]) -> torch.Tensor | None:
        """Targets that may still take messages (Ligra's ``cond``).

        Returns
        -------
        torch.Tensor or None
            bool (N_local,); None (default): every vertex. A pull skips the others.
        """
        return None

    @abstractmethod
    def update(self, ctx: Context, state: dict[str, torch.Tensor], combined: torch.Tensor,
               received: torch.Tensor) -> tuple[torch.Tensor, dict[str, tuple]]:
        """Fold the combined messages into the state and choose the next frontier.

        Parameters
        ----------
        ctx : Context
            The run (``ctx.superstep``, ``ctx.aggregates``, ...).
        state : dict of str to torch.Tensor
            The program's state, updated in place (entries may be replaced).
        combined : torch.Tensor
            float64 (N_local,) (or (N_local, width)): the combined messages of each vertex,
            the combiner's identity where none arrived. A fresh tensor of this superstep:
            the program may keep or modify it.
        received : torch.Tensor
            bool (N_local,): which vertices received at least one message.

        Returns
        -------
        active : torch.Tensor
            bool (N_local,): the vertices that send in the next superstep.
        votes : dict of str to (value, reduction)
            Partial halting values, reduced over all processes like aggregators and
            passed to :meth:`halt`.
        """

    def halt(self, ctx: Context, votes: dict[str, float]) -> bool:
        """Whether the run stops after this superstep.

        Parameters
        ----------
        votes : dict of str to float
            The reduced values :meth:`update` returned.

        Returns
        -------
        bool
            Default: False (the run still stops on an empty frontier or ``max_iters``).
        """
        return False

    @abstractmethod
    def result(self, ctx: Context, state: dict[str, torch.Tensor]) -> torch.Tensor:
        """The per-vertex answer, read once after the last superstep.

        Returns
        -------
        torch.Tensor
            float64 (N_local,), or (N_local, d) rows (HITS' hub and authority, a vector
            program's features): :attr:`Result.values` gathers them by internal id.
        """

    def solve_in_memory(self, ctx: Context, edges: Any, state: dict[str, torch.Tensor],
                        schedule: str, max_iters: int) -> Solved | None:
        """Declared whole-graph fast path: solve the program in numba calls of its own
        (PageRank's fused pull + update, a direction-optimizing BFS, Afforest), writing the
        answer into ``state``. The engine calls it in memory, on the numba backend, in one
        process, with ``fuse`` on, before any superstep; ``edges`` is the run's
        :class:`~graphsys.bsp.edges.MemoryEdges` (``adjacency("csr" | "csc")``; NumPy arrays
        with :func:`~graphsys.bsp.edges.numpy_adjacency`). A program whose method changes
        the supersteps answers only ``schedule="auto"``. Returns None (default: the
        superstep loop runs) or a :class:`Solved`."""
        return None

    def solve_on_device(self, ctx: Context, edges: Any, state: dict[str, torch.Tensor],
                        schedule: str, max_iters: int) -> Solved | None:
        """:meth:`solve_in_memory` for the torch backend (any device: the same torch ops run
        on CPU tensors and on CUDA): called where that one would be, with the backend torch
        (PageRank's lean SpMV supersteps, BFS's direction-optimizing ones), and out of core
        where the edges build the layout on the device
        (:attr:`~graphsys.bsp.stream.StreamEdges.builds_on_device`; ``edges.streams`` is
        then true, and nothing may be built on the host). Returns None (default: the
        superstep loop runs) or a :class:`Solved`."""
        return None

    # -- engine helpers ---------------------------------------------------------------------
    def check(self) -> None:
        """Validate the configuration; raises :class:`GraphsysError`."""
        if not callable(self.message) and self.message not in MESSAGES:
            raise GraphsysError(f"{self.name}: unknown message {self.message!r} (builtin: "
                                f"{', '.join(MESSAGES)}, or a callable)")
        if not isinstance(self.combiner, Combiner) and self.combiner not in COMBINERS:
            raise GraphsysError(f"{self.name}: unknown combiner {self.combiner!r} (builtin: "
                                f"{', '.join(COMBINERS)}, or a Combiner)")
        if self.direction not in DIRECTIONS:
            raise GraphsysError(f"{self.name}: direction must be one of {DIRECTIONS}, got "
                                f"{self.direction!r}")
        if self.width is not None:
            if isinstance(self.width, bool) or not isinstance(self.width, int) or self.width < 1:
                raise GraphsysError(f"{self.name}: width must be None (scalar) or a positive "
                                    f"integer, got {self.width!r}")
            if isinstance(self.combiner, Combiner) or self.relax_state is not None:
                raise GraphsysError(f"{self.name}: a program of width {self.width} takes a "
                                    f"builtin combiner ({', '.join(COMBINERS)}) and no "
                                    f"relax_state")
        if self.sum_dtype not in SUM_DTYPES:
            raise GraphsysError(f"{self.name}: sum_dtype must be one of {SUM_DTYPES}, got "
                                f"{self.sum_dtype!r}")
        if self.sum_dtype != "float64" and (self.width is not None or self.message != "copy"
                                            or self.combiner != "sum"):
            raise GraphsysError(f"{self.name}: sum_dtype {self.sum_dtype} needs a scalar "
                                f"program with message 'copy' and combiner 'sum'")

    @property
    def fusable(self) -> bool:
        """True when :attr:`relax_state` is declared and the rest of the program fits it."""
        cls = type(self)
        # fused supersteps run no program code, so they keep one direction: a computed one
        # (a property, which may change between supersteps) takes the superstep loop
        static = not hasattr(inspect.getattr_static(cls, "direction", None), "__get__")
        return (static and self.relax_state is not None and self.combiner == "min"
                and self.message in ("copy", "add_weight") and not self.include_self
                and cls.aggregate is VertexProgram.aggregate
                and cls.halt is VertexProgram.halt)

    def message_shape(self, n: int) -> tuple[int, ...]:
        """Shape of ``n`` vertices' messages: (n,) scalar, (n, width) for a vector program."""
        return (n,) if self.width is None else (n, self.width)

    @property
    def host_ready(self) -> bool:
        """Whether :attr:`host_state` holds for the methods a run calls on a NumPy state:
        declared True by a class whose :meth:`init`, :meth:`result` and
        :meth:`solve_in_memory` are its own or inherited, not overridden below it (a
        subclass that overrides one of them with torch code and does not declare
        ``host_state`` itself gets tensors)."""
        return self._declares("host_state", ("init", "result", "solve_in_memory"))

    @property
    def host_streams(self) -> bool:
        """Whether a streamed CPU run may keep the state in NumPy arrays: :attr:`host_ready`
        and :attr:`host_supersteps` declared by a class whose superstep methods are its own
        or inherited, as :attr:`host_ready` checks its methods."""
        return self.host_ready and self._declares(
            "host_supersteps", ("aggregate", "send", "accepts", "update", "halt"))

    def _declares(self, flag: str, methods: tuple[str, ...]) -> bool:
        cls = type(self)
        owner = next((c for c in cls.__mro__ if flag in vars(c)), None)
        if owner is None or not getattr(self, flag):
            return False
        return all(next(c for c in cls.__mro__ if name in vars(c)) in owner.__mro__
                   for name in methods)

    @property
    def builtin(self) -> bool:
        """True when message and combiner have fused numba kernels."""
        return isinstance(self.message, str) and isinstance(self.combiner, str)

    @property
    def identity(self) -> float:
        if isinstance(self.combiner, Combiner):
            return self.combiner.identity
        return COMBINERS[self.combiner][1]

    @property
    def raw_messages(self) -> bool:
        """True when messages reach the combiner uncombined (custom :class:`Combiner`)."""
        return isinstance(self.combiner, Combiner)


def lower_to_min(state: dict[str, torch.Tensor], key: str, combined: torch.Tensor,
                 received: torch.Tensor) -> tuple[torch.Tensor, dict]:
    """The :meth:`VertexProgram.update` of a min-relaxation program
    (:attr:`VertexProgram.relax_state` ``key``): ``state[key]`` is lowered to ``combined``
    where a message was ``received`` and is smaller; returns the vertices it lowered (the
    next frontier) and no aggregator values."""
    import torch

    lower = received & (combined < state[key])
    state[key] = torch.where(lower, combined, state[key])
    return lower, {}
