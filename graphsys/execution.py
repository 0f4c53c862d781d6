"""How a call runs, whatever the engine: :class:`Execution`, one frozen options object
(mode, device, backend, threads, memory limit, distributed, progress), validated in one
place; the numpydoc texts of those options; and :func:`fill_doc`, the one docstring
template every engine's public functions are written with (``help()``, Sphinx and
doctests see the full text).

Engines take the options as keyword arguments of their front-ends and build one
:class:`Execution` from them (:meth:`Execution.of`), which is what they pass down.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from graphsys.device import DEVICES  # tests may widen it (a lazy-tensor device)
from graphsys.errors import ParameterError, check_count
from graphsys.progress import check_progress
from graphsys.threads import numba_threads

MODES = ("auto", "memory", "out-of-core")
BACKENDS = ("auto", "numba", "torch")

#: The numpydoc entries of the options that read the same in every engine (an engine adds
#: or overrides its own: :data:`graphsys.bsp.docstrings.OPTION_DOCS`, mining's ``_docs``).
OPTION_DOCS = {
    "device": """device : str, default "cpu"
    ``cpu``, ``cuda``, ``cuda:K`` or ``auto`` (CUDA when available).""",
    "backend": """backend : {"auto", "numba", "torch"}, default "auto"
    ``auto``: numba kernels on CPU, torch on CUDA; ``torch`` on CPU runs the GPU code path
    on CPU tensors.""",
    "memory_limit": """memory_limit : int, optional
    Anonymous bytes what the call builds in RAM may take (default: the RAM available
    now).""",
    "progress": """progress : bool or callable, optional
    False or None: nothing. True: a progress display (a bar on a terminal, a line every
    ``GRAPHSYS_PROGRESS_SECONDS`` elsewhere; :func:`graphsys.progress.display`). A
    callable: called with the report of each step as it ends (the BSP engine's: the
    superstep's :class:`~graphsys.bsp.stats.SuperstepStats`; the others': a
    :class:`graphsys.progress.Step`).""",
    "execution": """execution : Execution, optional
    How the call runs (``mode``, ``threads``, ``progress``, ...) as one
    :class:`~graphsys.execution.Execution` instead of those keywords (both: refused). A
    field the function has no keyword for is refused in one line where it would change
    where or how the call runs (CUDA, out of core, ``distributed``, ``progress``).
    ``threads`` holds for every such call (numba's thread count during the call,
    restored after it); ``memory_limit`` bounds what the call builds in RAM (a view over
    it is refused in one line) and is trivially met by a call that builds nothing
    sizeable (the BSP engine refuses it: ``device_budget`` and the out-of-core mode bound
    its memory).""",
}


@dataclass(frozen=True)
class Execution:
    """How a call runs: the options every engine shares, checked once when built.

    Parameters
    ----------
    mode : {"auto", "memory", "out-of-core"}, default "auto"
        In RAM, streamed from the mapped files, or chosen by the engine (each engine's
        front-ends say how).
    %(device)s
    %(backend)s
    threads : int, optional
        Worker threads (default: numba's thread count): numba's thread count while the
        call runs (:func:`graphsys.threads.numba_threads`: capped at
        ``NUMBA_NUM_THREADS``, restored after the call).
    %(memory_limit)s
    distributed : bool, default False
        Run as one rank of the initialised ``torch.distributed`` process group.
    %(progress)s

    Raises
    ------
    ParameterError
        A field outside its values (one line naming the field).

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import Execution, bsp, mining
    >>> run = Execution(mode="memory", threads=1)
    >>> run.mode, run.device, run.progress
    ('memory', 'cpu', False)
    >>> g = graphsys.from_numpy(np.array([1, 2, 3]), np.array([2, 3, 1]),
    ...                         tempfile.mkdtemp() + "/g")
    >>> bsp.run(g, bsp.PageRank(), execution=run).stats.mode
    'memory'
    >>> mining.triangle_stats(g, execution=run).count
    1
    >>> Execution(threads=0)
    Traceback (most recent call last):
    ...
    graphsys.errors.ParameterError: threads must be a positive integer, got 0
    """

    mode: str = "auto"
    device: str = "cpu"
    backend: str = "auto"
    threads: int | None = None
    memory_limit: int | None = None
    distributed: bool = False
    progress: bool | Callable = False

    def __post_init__(self) -> None:
        device = str(self.device)
        cuda_k = device.startswith("cuda:") and device[5:].isdigit()
        devices = (*DEVICES[:2], "cuda:K", *DEVICES[2:])
        for field, value, known in (("mode", self.mode, MODES), ("backend", self.backend,
                                    BACKENDS), ("device", "cpu" if cuda_k else device, devices)):
            if value not in known:
                raise ParameterError(field, f"must be one of {', '.join(known)}, got "
                                            f"{getattr(self, field)!r}")
        for field in ("threads", "memory_limit"):
            if getattr(self, field) is not None:
                check_count(field, getattr(self, field))
        if not isinstance(self.distributed, (bool, np.bool_)):
            raise ParameterError("distributed", f"must be True or False, got "
                                                f"{self.distributed!r}")
        object.__setattr__(self, "progress", check_progress(self.progress))

    @classmethod
    def of(cls, execution: Execution | None, **given) -> Execution:
        """``execution`` when given, else one built from a front-end's keyword options
        ``given``; refused when both say something (an option given neither None nor its
        default)."""
        if execution is None:
            return cls(**given)
        if not isinstance(execution, cls):
            raise ParameterError("execution", f"must be an Execution, got "
                                              f"{type(execution).__name__}")
        both = [k for k, v in given.items() if v is not None and not (
            isinstance(v, (str, bool)) and v == _DEFAULTS[k])]
        if both:
            raise ParameterError("execution", f"given with {', '.join(both)} as keywords "
                                              f"too: give each option once")
        return execution

    def on_cpu(self, what: str) -> Execution:
        """Itself, refused in one line where it asks ``what`` (CPU-only) for CUDA."""
        if str(self.device).startswith("cuda") or self.backend == "torch":
            raise ParameterError("device", f"{what} runs on the CPU (numba kernels), got "
                                           f"device {self.device!r}, backend {self.backend!r}")
        return self

    def without(self, what: str, *fields: str) -> Execution:
        """Itself, refused in one line where one of ``fields`` is set but ``what`` has no
        such option (an Execution built for another engine is not run with it ignored)."""
        for field in fields:
            if getattr(self, field) != _DEFAULTS[field]:
                raise ParameterError(field, f"is not an option of {what}")
        return self

    def in_memory(self, what: str, *fields: str) -> Execution:
        """Itself, refused in one line where it asks ``what`` (in memory on the CPU) to run
        out of core or on CUDA (:meth:`on_cpu`), or sets one of ``fields``
        (:meth:`without`)."""
        if self.mode == "out-of-core":
            raise ParameterError("mode", f"{what} runs in memory, got 'out-of-core'")
        return self.on_cpu(what).without(what, *fields)


#: The fields' defaults (what :meth:`Execution.of` reads as not given).
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(Execution)}
FIELDS = tuple(_DEFAULTS)


def with_threads(func: Callable) -> Callable:
    """Decorator of a front-end taking ``execution=`` (and maybe ``threads=``): each call
    runs with numba's thread count set to the threads asked, the Execution's or the
    keyword's (:func:`graphsys.threads.numba_threads`), restored after it."""

    @functools.wraps(func)
    def call(*args, **kwargs):
        given = kwargs.get("execution")
        with numba_threads(given.threads if isinstance(given, Execution)
                           else kwargs.get("threads")):
            return func(*args, **kwargs)

    return call


def fill_doc(**sections: str) -> Callable:
    """Decorator: replace each docstring line ``%(name)s`` with ``sections[name]``
    (numpydoc text written at column 0), indented like that line."""

    def decorate(func: Callable) -> Callable:
        lines = []
        for line in (func.__doc__ or "").splitlines():  # no docstring under python -OO
            key = line.strip()
            if key.startswith("%(") and key.endswith(")s") and key[2:-2] in sections:
                pad = line[:len(line) - len(line.lstrip())]
                lines += [pad + row if row else row
                          for row in sections[key[2:-2]].splitlines()]
            else:
                lines.append(line)
        func.__doc__ = "\n".join(lines) if func.__doc__ else func.__doc__
        return func

    return decorate


fill_doc(**OPTION_DOCS)(Execution)
