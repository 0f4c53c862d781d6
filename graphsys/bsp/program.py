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
from typing import Any

import torch

from graphsys.bsp import kernels
from graphsys.errors import GraphsysError

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
#: dtypes a scalar copy/sum program may sum its messages in (:attr:`VertexProgram.sum_dtype`)
SUM_DTYPES = ("float64", "float32")


class Combiner(ABC):
    """A custom message combiner, run on the generic (torch) path.

    Subclasses implement :meth:`combine`, which sees every raw message of a superstep (a
    custom combiner need not be associative, e.g. the mode), so in a distributed run raw
    messages are exchanged rather than locally combined ones.
    """

    name = "custom"
    #: Value of ``combined`` where a vertex received nothing.
    identity = 0.0

    @abstractmethod
    def combine(self, index: torch.Tensor, values: torch.Tensor,
                num_targets: int) -> torch.Tensor:
        """Combine messages ``values`` float64 (M,) addressed to targets ``index`` int64 (M,)
        in ``[0, num_targets)``; return float64 (num_targets,) (``identity`` where none)."""


class ModeCombiner(Combiner):
    """The most frequent message value per target; ties go to the smallest value (label
    propagation)."""

    name = "mode"

    def combine(self, index, values, num_targets):
        out = torch.full((num_targets,), self.identity, dtype=torch.float64,
                         device=values.device)
        if index.numel() == 0:
            return out
        # sort by (target, value), count runs, keep the longest run of each target
        order = torch.argsort(values, stable=True)
        order = order[torch.argsort(index[order], stable=True)]
        idx, val = index[order], values[order]
        new_run = torch.ones_like(idx, dtype=torch.bool)
        new_run[1:] = (idx[1:] != idx[:-1]) | (val[1:] != val[:-1])
        starts = torch.nonzero(new_run).squeeze(1)
        counts = torch.diff(starts, append=torch.tensor([idx.numel()], device=idx.device))
        run_idx, run_val = idx[starts], val[starts]
        # per target: max count, then smallest value among runs with that count
        best = torch.zeros(num_targets, dtype=counts.dtype, device=idx.device)
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
    """What a program sees of the run.

    ``num_nodes``: global N; ``lo``/``hi``: owned global id range; ``device``: torch device;
    ``backend``: ``numba`` (CPU kernels: a program may run its own vertex passes in numba
    too) or ``torch`` (the GPU code path, on any device); ``superstep``: current superstep
    (0-based); ``aggregates``: reduced aggregator values of this superstep; ``graph``: the
    opened Graph.
    """

    graph: Any
    num_nodes: int
    lo: int
    hi: int
    device: torch.device
    backend: str = "torch"
    edge_set: str | None = None
    superstep: int = 0
    #: vertices in this superstep's sending frontier, over all processes
    num_active: int = 0
    aggregates: dict[str, float] = field(default_factory=dict)
    _degrees: dict[str, torch.Tensor] = field(default_factory=dict)
    _degree_fn: Callable[[str], Any] | None = None

    @property
    def num_local(self) -> int:
        return self.hi - self.lo

    def node_range(self) -> torch.Tensor:
        """Global ids of the owned vertices, int64 (N_local,)."""
        return torch.arange(self.lo, self.hi, dtype=torch.int64, device=self.device)

    def degree(self, direction: str = "out") -> torch.Tensor:
        """Out-/in-/both-degree of the owned vertices (multi-edges counted), float64
        (N_local,)."""
        if direction not in self._degrees:
            deg = self._degree_fn(direction)
            self._degrees[direction] = torch.as_tensor(
                deg[self.lo:self.hi], dtype=torch.float64).to(self.device)
        return self._degrees[direction]

    def full(self, value: float, dtype=torch.float64, width: int | None = None) -> torch.Tensor:
        """``value`` in every owned vertex: (N_local,), or (N_local, width) rows."""
        shape = (self.num_local,) if width is None else (self.num_local, width)
        return torch.full(shape, value, dtype=dtype, device=self.device)


class VertexProgram(ABC):
    """Base class of vertex programs (Pregel / Ligra style); see the module docstring.

    Class attributes configure the edge phase:

    * ``message``: ``"copy"`` | ``"add_weight"`` | ``"mul_weight"`` | callable
      ``(x_src: float64 (E,), weight: float32 (E,) | None) -> float64 (E,)``;
    * ``combiner``: ``"sum"`` | ``"min"`` | ``"max"`` | a :class:`Combiner`;
    * ``direction``: messages along edges (``out``), against them (``in``), or ``both``;
      read at every superstep, so a program may switch it (a property, or an attribute set
      in :meth:`update`; HITS alternates ``out`` and ``in``) in every mode;
    * ``uses_weights``: whether edge weights are needed (``add_weight``/``mul_weight``);
    * ``first_message_wins``: all messages of a superstep are equal, so a pulling target
      can stop at its first one (Ligra's BFS trick);
    * ``include_self``: each active vertex also receives its own value (custom combiners);
    * ``width``: ``None`` (scalar messages, float64 (N_local,)) or ``d`` >= 1: :meth:`send`
      returns float64 (N_local, d), each column is messaged and combined on its own (a
      callable ``message`` sees (E, d) rows), :meth:`update` gets ``combined`` float64
      (N_local, d) and :meth:`result` may return (N_local,) or (N_local, d). Builtin
      combiners only (not a :class:`Combiner`), no :attr:`relax_state`;
    * ``sum_dtype``: ``"float64"`` (default) or ``"float32"`` for a scalar ``copy``/``sum``
      program: the numba CPU kernels then round the sent values to float32 and, out of
      core, sum each target's messages in float32 (flushed into the float64 ``combined``
      once per target partition), halving the cache footprint of the random accesses.
      The program's own doc states the error this admits; a run on the torch backend
      refuses it (:func:`graphsys.bsp.engine.run`).
    """

    name = "program"
    message: str | Callable = "copy"
    combiner: str | Combiner = "sum"
    direction = "out"
    uses_weights = False
    first_message_wins = False
    include_self = False
    #: stop when no vertex is active; programs that act on an empty frontier (k-core
    #: raising k) set False and halt through :meth:`halt`
    halt_when_inactive = True
    #: message width: None = scalar (N_local,) messages, an int d >= 1 = (N_local, d) rows
    width: int | None = None
    #: dtype the numba CPU kernels sum a scalar copy/sum program's messages in
    sum_dtype = "float64"
    #: Declares a *min-relaxation* (label-correcting) program, e.g. BFS, SSSP, WCC: the
    #: float64 state tensor of this name is what a vertex sends (plus ``relax_offset``, plus
    #: the edge weight for ``add_weight``), the combiner is ``min``, :meth:`update` lowers
    #: the state to the combined minimum where that is smaller and the next frontier is the
    #: vertices it lowered; no aggregators, no :meth:`halt`. The in-memory numba engine
    #: then runs its supersteps (push or pull) inside numba calls, with the same supersteps
    #: and results (:func:`graphsys.bsp.kernels.relax_run`).
    relax_state: str | None = None
    relax_offset = 0.0

    # -- the program ------------------------------------------------------------------------
    @abstractmethod
    def init(self, ctx: Context) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """Initial state (dict of (N_local,) tensors) and active frontier, bool (N_local,)."""

    def aggregate(self, ctx: Context, state: dict[str, torch.Tensor]) -> dict[str, tuple]:
        """Local partials ``{name: (0-d tensor or float, reduction)}`` of global aggregators
        read at this superstep (reduction: sum/min/max)."""
        return {}

    @abstractmethod
    def send(self, ctx: Context, state: dict[str, torch.Tensor]) -> torch.Tensor:
        """The value each owned vertex sends, float64 (N_local,), or (N_local, width) rows
        for a vector program."""

    def accepts(self, ctx: Context, state: dict[str, torch.Tensor]) -> torch.Tensor | None:
        """Targets that may still take messages, bool (N_local,) or None = all (Ligra's
        ``cond``)."""
        return None

    @abstractmethod
    def update(self, ctx: Context, state: dict[str, torch.Tensor], combined: torch.Tensor,
               received: torch.Tensor) -> tuple[torch.Tensor, dict[str, tuple]]:
        """Fold ``combined`` float64 (N_local,) (combiner identity where ``received``, bool
        (N_local,), is False) into ``state`` in place; return the next frontier, bool
        (N_local,), and local partial halting values ``{name: (value, reduction)}``.
        ``combined`` is a fresh tensor of this superstep: the program may keep or modify
        it."""

    def halt(self, ctx: Context, votes: dict[str, float]) -> bool:
        """Global decision from the reduced halting values; default: never (the run still
        stops on an empty frontier or ``max_iters``)."""
        return False

    @abstractmethod
    def result(self, ctx: Context, state: dict[str, torch.Tensor]) -> torch.Tensor:
        """The per-vertex answer, float64 (N_local,) or (N_local, d) rows (HITS' hub and
        authority, a vector program's features)."""

    def solve_in_memory(self, ctx: Context, edges: Any, state: dict[str, torch.Tensor],
                        schedule: str, max_iters: int) -> Solved | None:
        """Declared whole-graph fast path: solve the program in numba calls of its own
        (PageRank's fused pull + update, a direction-optimizing BFS, Afforest), writing the
        answer into ``state``. The engine calls it in memory, on the numba backend, in one
        process, with ``fuse`` on, before any superstep; ``edges`` is the run's
        :class:`~graphsys.bsp.edges.MemoryEdges` (``adjacency("csr" | "csc")``: indptr int64
        (N+1,), indices int32 (E,), weight). ``schedule`` is the run's (``sync``, ``auto``):
        a program whose method changes the supersteps answers only ``auto``. Returns None
        (default: no fast path, the superstep loop runs) or a :class:`Solved`."""
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
