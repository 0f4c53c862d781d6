"""Progress of long loops: a tqdm bar on a terminal, a plain line every N seconds elsewhere.

:func:`progress_bar` takes tqdm's arguments (``total``, ``unit``, ``desc``, ``disable``,
...). When stderr is a terminal it is a tqdm bar; when it is not (``nohup``, CI, a batch
scheduler, a pipe) it is a :class:`LineProgress`: one line, at most every
:func:`interval` seconds (``GRAPHSYS_PROGRESS_SECONDS``, default 10), with the work done
and the total, the share, the rate and the time left (``epoch 1/5: 1.2M/8.0M edge (15%),
412k edge/s, elapsed 00:03, ETA 00:16``). A loop shorter than the interval prints nothing,
so short runs stay silent; ``disable=True`` (the commands' ``--quiet``) prints nothing at
all.

**Compilations** (docs/architecture.md shows the lines). A graphsys kernel compiled while a
display is open is not the loop's work: :func:`graphsys.jit.install` has numba call
:func:`compile_started` and :func:`compile_ended`, the display opened last says it, named
after the kernels' module (:func:`kernel_family`), and every open display moves its start
by the compilation's seconds (:attr:`CompileAware.compile_seconds` sums them).

Examples
--------
>>> import io
>>> from graphsys.progress import LineProgress, progress_bar
>>> log = io.StringIO()  # not a terminal
>>> with progress_bar(total=3, unit="batch", desc="train", file=log) as bar:
...     for _ in range(3):
...         bar.update(1)
>>> isinstance(bar, LineProgress), bar.n, log.getvalue()  # shorter than the interval
(True, 3, '')
"""

from __future__ import annotations

import os
import sys
import time
import weakref
from collections.abc import Callable
from typing import NamedTuple

from tqdm import tqdm

from graphsys.errors import GraphsysError, ParameterError, check_flag

__all__ = ["DEFAULT_SECONDS", "ENV", "Bar", "CompileAware", "LineProgress", "Step",
           "check_progress", "compile_ended", "compile_started", "display", "interval",
           "kernel_family", "progress_bar"]

#: Environment variable: seconds between two progress lines when stderr is not a terminal.
ENV = "GRAPHSYS_PROGRESS_SECONDS"
#: Seconds between two progress lines by default.
DEFAULT_SECONDS = 10.0
#: The line: done/total, share, rate, elapsed and remaining time.
LINE_FORMAT = ("{desc}: {n_fmt}/{total_fmt} {unit} ({percentage:.0f}%), {rate_fmt}, "
               "elapsed {elapsed}, ETA {remaining}{postfix}")
#: The same without a total (the work is open-ended).
OPEN_FORMAT = "{desc}: {n_fmt} {unit}, {rate_fmt}, elapsed {elapsed}{postfix}"


def interval() -> float:
    """Seconds between two progress lines: ``GRAPHSYS_PROGRESS_SECONDS`` (a positive
    number) or :data:`DEFAULT_SECONDS`.

    Raises
    ------
    GraphsysError
        The variable is set to something other than a positive number.

    Examples
    --------
    >>> import os
    >>> from graphsys.progress import DEFAULT_SECONDS, ENV, interval
    >>> interval() == float(os.environ.get(ENV) or DEFAULT_SECONDS)
    True
    """
    text = os.environ.get(ENV, "").strip()
    if not text:
        return DEFAULT_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise GraphsysError(f"{ENV}={text!r}: expected a positive number of seconds")
    return value


#: What a display says while graphsys kernels compile (``{family}``: :func:`kernel_family`).
COMPILING = "compiling {family} kernels (once per install; ahead: `graphsys warmup --all`)"
#: What it says once they are compiled.
COMPILED = "compiled {count} {family} kernel{s} in {seconds:.1f} s, not counted in the elapsed time"

#: The displays open now, the last opened last (weak: a display dropped unclosed leaves).
_open: list[weakref.ref] = []


def kernel_family(module: str) -> str:
    """A human name of the kernels of the module ``module``: its last part without
    ``kernels_`` / ``_kernels`` and a leading underscore, or its package's where nothing
    is left (``graphsys.bsp.kernels_centrality`` -> ``centrality``,
    ``graphsys.storage.kernels`` -> ``storage``, ``graphsys.sampling._kernels`` ->
    ``sampling``).

    Examples
    --------
    >>> from graphsys.progress import kernel_family
    >>> [kernel_family(m) for m in ("graphsys.bsp.kernels_centrality",
    ...  "graphsys.storage.kernels", "graphsys.mining.motif_kernels", "graphsys.kernels.cores")]
    ['centrality', 'storage', 'motif', 'cores']
    """
    parts = [p for p in module.split(".") if p != "graphsys"] or ["graphsys"]
    for part in reversed(parts):
        name = part.lstrip("_").removeprefix("kernels_").removesuffix("_kernels")
        if name and name != "kernels":
            return name
    return "graphsys"


def compile_started(module: str) -> None:
    """A kernel of the module ``module`` starts compiling (outside any other graphsys
    kernel's compilation): every open display notes the time, the one opened last says it.
    :func:`graphsys.jit.watch_compiles` calls it (and :func:`compile_ended`).

    Examples
    --------
    >>> import io
    >>> from graphsys.progress import LineProgress, compile_ended, compile_started
    >>> log = io.StringIO()
    >>> with LineProgress(total=1, unit="source", desc="betweenness", file=log) as bar:
    ...     compile_started("graphsys.bsp.kernels_centrality")
    ...     compile_ended("graphsys.bsp.kernels_centrality", kernels=2)
    ...     bar.update(1)
    >>> print(log.getvalue(), end="")  # doctest: +ELLIPSIS
    betweenness: compiling centrality kernels (once per install; ahead: `graphsys warmup --all`)
    betweenness: compiled 2 centrality kernels in ... s, not counted in the elapsed time
    >>> bar.compiled
    2
    """
    bars = _displays()
    for i, bar in enumerate(bars):
        bar._compile_start(module, announce=i == len(bars) - 1)


def compile_ended(module: str, kernels: int = 1) -> None:
    """The compilation :func:`compile_started` noted ended, ``kernels`` kernel signatures
    compiled in it (its own and those it called): every open display leaves its seconds
    out of its elapsed time.

    Examples
    --------
    >>> import io
    >>> from graphsys.progress import LineProgress, compile_ended, compile_started
    >>> with LineProgress(total=1, desc="motifs", file=io.StringIO()) as bar:
    ...     compile_started("graphsys.mining.motif_kernels")
    ...     compile_ended("graphsys.mining.motif_kernels", kernels=4)
    >>> bar.compiled, bar.compile_seconds >= 0
    (4, True)
    """
    for bar in _displays():
        bar._compile_end(module, kernels)


def _displays() -> list[CompileAware]:
    """The displays open now, the last opened last."""
    return [bar for bar in (ref() for ref in list(_open)) if bar is not None]


class CompileAware(tqdm):
    """A tqdm that says when graphsys kernels compile while it is open and leaves their
    seconds out of its elapsed time and rate (see the module's docstring).

    Attributes
    ----------
    compiled : int
        Kernel signatures compiled while it was open.
    compile_seconds : float
        Their seconds, by the display's clock (left out of its elapsed time).

    Examples
    --------
    :class:`Bar` and :class:`LineProgress` are the two kinds :func:`progress_bar` opens:

    >>> import io
    >>> from graphsys.progress import Bar, CompileAware, LineProgress
    >>> issubclass(Bar, CompileAware), issubclass(LineProgress, CompileAware)
    (True, True)
    >>> with CompileAware(total=2, file=io.StringIO()) as bar:  # nothing compiled
    ...     _ = bar.update(2)
    >>> bar.n, bar.compiled, bar.compile_seconds
    (2, 0, 0.0)
    """

    def __init__(self, *args, **kwargs) -> None:
        self.compiled, self.compile_seconds = 0, 0.0
        self._phase: dict | None = None  # the compilations since the loop last advanced
        self._compile_t0: float | None = None
        super().__init__(*args, **kwargs)
        if not self.disable:
            _open.append(weakref.ref(self))

    def _compile_start(self, module: str, announce: bool) -> None:
        self._compile_t0 = self._time()
        family = kernel_family(module)
        if not announce:
            return
        if self._phase is None:
            self._phase = {"families": [], "count": 0, "seconds": 0.0, "desc": self.desc}
        if family not in self._phase["families"]:
            self._phase["families"].append(family)
            self._say_compiling(COMPILING.format(family=family), self._phase["desc"])

    def _compile_end(self, module: str, kernels: int) -> None:
        if self._compile_t0 is None:
            return
        seconds = max(0.0, self._time() - self._compile_t0)
        self._compile_t0 = None
        self.start_t += seconds  # the loop's elapsed time and rate leave it out
        self.last_print_t += seconds
        self.compiled += kernels
        self.compile_seconds += seconds
        if self._phase is not None:
            self._phase["count"] += kernels
            self._phase["seconds"] += seconds

    def _end_phase(self) -> None:
        """Say what was compiled since the loop last advanced, if anything was."""
        phase, self._phase = self._phase, None
        if phase is None or not phase["count"]:
            return
        count = phase["count"]
        line = COMPILED.format(count=count, family=" and ".join(phase["families"]),
                               s="" if count == 1 else "s", seconds=phase["seconds"])
        self._say_compiled(line, phase["desc"])

    @staticmethod
    def _with_desc(text: str, desc: str) -> str:
        desc = desc.removesuffix(": ")
        return f"{desc}: {text}" if desc else text

    def _say_compiling(self, text: str, desc: str) -> None:
        self.set_description_str(self._with_desc(text, desc))

    def _say_compiled(self, text: str, desc: str) -> None:
        self.set_description_str(desc, refresh=False)
        self.write(self._with_desc(text, desc), file=self.fp)

    def update(self, n=1):
        if self._phase is not None:
            self._end_phase()
        return super().update(n)

    def _leave(self) -> None:
        """Say what was compiled since the loop last advanced; stop listening."""
        self._end_phase()
        _open[:] = [ref for ref in _open if ref() is not None and ref() is not self]

    def close(self) -> None:
        self._leave()
        super().close()


class Bar(CompileAware):
    """tqdm's bar (on a terminal), saying when graphsys kernels compile.

    Examples
    --------
    >>> import io
    >>> from graphsys.progress import Bar
    >>> with Bar(total=3, desc="train", file=io.StringIO()) as bar:
    ...     _ = bar.update(3)
    >>> bar.n, bar.compiled
    (3, 0)
    """


class LineProgress(CompileAware):
    """A tqdm that writes a whole line (no carriage return, no bar) at most every
    ``every`` seconds (default :func:`interval`), and a last line when it closes if it
    wrote any and the work advanced since: for logs, where a redrawn bar is unreadable.
    Compilations of graphsys kernels are said in a line each when they start and when the
    loop next advances.

    Examples
    --------
    ``every=0``: a line at each update (the rate and times vary from run to run):

    >>> import io
    >>> from graphsys.progress import LineProgress
    >>> log = io.StringIO()
    >>> with LineProgress(total=2, unit="batch", desc="train", file=log, every=0) as bar:
    ...     for _ in range(2):
    ...         _ = bar.update(1)
    >>> print(log.getvalue(), end="")
    train: 1/2 batch (50%), ...batch/s, elapsed ..., ETA ...
    train: 2/2 batch (100%), ...batch/s, elapsed ..., ETA ...
    """

    def __init__(self, *args, every: float | None = None, **kwargs) -> None:
        self._every = interval() if every is None else float(every)
        self._last_line = None
        self._lines = 0
        self._last_n = None  # the count the last line gave
        kwargs.setdefault("file", sys.stderr)
        kwargs["mininterval"] = self._every
        kwargs["maxinterval"] = self._every
        kwargs["dynamic_ncols"] = False
        kwargs.pop("ncols", None)
        super().__init__(*args, **kwargs)
        self._last_line = self.start_t if hasattr(self, "start_t") else time.time()

    def _say_compiling(self, text: str, desc: str) -> None:
        if not self.disable:
            self.fp.write(self._with_desc(text, desc) + "\n")
            self.fp.flush()

    _say_compiled = _say_compiling

    def display(self, msg=None, pos=None) -> bool:
        if self.disable or self._last_line is None:
            return True
        now = self._time()
        closing = getattr(self, "_closing", False)
        if closing and (not self._lines or self.n == self._last_n):
            return True  # a run shorter than the interval stays silent; no line twice
        if not closing and now - self._last_line < self._every:
            return True
        d = self.format_dict
        d["bar_format"] = LINE_FORMAT if d.get("total") else OPEN_FORMAT
        line = self.format_meter(**d)
        self.fp.write(line.strip() + "\n")
        self.fp.flush()
        self._last_line, self._last_n = now, self.n
        self._lines += 1
        return True

    def close(self) -> None:
        """The last line (if any was written), without tqdm's trailing newline."""
        if getattr(self, "disable", True):  # closed, or an __init__ that raised (tqdm's
            return                          # __del__ still closes it)
        self._leave()
        self._closing = True
        self.display()
        self.disable = True
        with self._lock:
            self._decr_instances(self)


def progress_bar(*args, **kwargs) -> tqdm:
    """A progress bar with tqdm's arguments: a tqdm bar when stderr is a terminal, else a
    :class:`LineProgress` (a line every :func:`interval` seconds). ``disable=True``: no
    output.

    Returns
    -------
    tqdm
        Use it as tqdm (``update``, ``set_description``, ``set_postfix``, ``close``, as a
        context manager).

    Examples
    --------
    >>> import io
    >>> from graphsys.progress import progress_bar
    >>> with progress_bar(total=2, unit="batch", file=io.StringIO()) as bar:  # no terminal
    ...     _ = bar.update(2)
    >>> type(bar).__name__, bar.n, type(progress_bar(total=2, disable=True)).__name__
    ('LineProgress', 2, 'tqdm')
    """
    if kwargs.get("disable"):
        return tqdm(*args, **kwargs)
    file = kwargs.get("file") or sys.stderr
    try:
        tty = file.isatty()
    except (AttributeError, ValueError):
        tty = False
    return Bar(*args, **kwargs) if tty else LineProgress(*args, **kwargs)


class Step(NamedTuple):
    """One advance of a loop, as a ``progress`` callable receives it (:func:`display`).

    Examples
    --------
    A ``progress`` callable of one's own:

    >>> from graphsys.progress import display
    >>> def report(step):
    ...     print(f"{step.desc}: {step.done}/{step.total} {step.unit}")
    >>> with display(report, total=2, unit="edge", desc="ingest") as bar:
    ...     bar.update(2)
    ingest: 2/2 edge
    """

    desc: str
    done: float
    total: float | None
    unit: str


class _Reports(tqdm):
    """A silent display that calls ``report`` with a :class:`Step` at each update."""

    def __init__(self, report: Callable, *args, **kwargs) -> None:
        super().__init__(*args, **{**kwargs, "disable": True})
        self.report, self.desc, self.unit = report, kwargs.get("desc") or "", kwargs.get("unit")
        self.n = kwargs.get("initial", 0)

    def update(self, n=1):
        self.n += n
        self.report(Step(self.desc.removesuffix(": "), self.n, self.total, self.unit or "it"))


def check_progress(progress) -> bool | Callable:
    """``progress`` as every engine takes it: a callable as is, else True or False (None
    is False); anything else is refused in one line.

    Examples
    --------
    >>> from graphsys.progress import check_progress
    >>> check_progress(None), check_progress(True), check_progress(print) is print
    (False, True, True)
    >>> check_progress("yes")
    Traceback (most recent call last):
    ...
    graphsys.errors.ParameterError: progress must be True, False or a callable, got 'yes'
    """
    if callable(progress):
        return progress
    try:  # NumPy's bools too, as every flag (check_flag)
        return False if progress is None else check_flag("progress", progress)
    except ParameterError:
        raise ParameterError("progress", f"must be True, False or a callable, got "
                                         f"{progress!r}") from None


def display(progress, **kwargs) -> tqdm:
    """The display of an engine's ``progress`` option (one rule everywhere): False or None,
    none; True, :func:`progress_bar` with tqdm's arguments ``kwargs``; a callable, called
    with a :class:`Step` at each update.

    Examples
    --------
    >>> from graphsys.progress import display
    >>> steps = []
    >>> with display(steps.append, total=2, unit="block", desc="count") as bar:
    ...     bar.update(1)
    ...     bar.update(1)
    >>> steps[-1]
    Step(desc='count', done=2, total=2, unit='block')
    """
    progress = check_progress(progress)
    if callable(progress):
        return _Reports(progress, **kwargs)
    return progress_bar(**{**kwargs, "disable": not progress or kwargs.get("disable", False)})
