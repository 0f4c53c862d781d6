"""The ``graphsys`` command line: one sub-command per module of :mod:`graphsys.commands`.

Every command module exposes ``register(subparsers)``, which adds its parser and sets
``func`` to a callable ``(args) -> int`` (the exit code). User-facing failures raise
:class:`graphsys.errors.GraphsysError`; they are printed here as one line, with no traceback.

Every failure reads the same on stderr: one line starting with ``error: ``, whether the
command line could not be parsed (argparse's usage dump is replaced by a pointer to
``--help``), the library refused a value, or the system refused a file. A
:class:`~graphsys.errors.ParameterError` names the library parameter; it is shown as the
flag of the command that set it (:func:`flag_for`, with :data:`PARAMETER_DESTS` for the
parameters whose flag has another name).

A reader that leaves early (``graphsys run pagerank G --out pr.parquet | head -3``) does
not end the command: once a write to stdout or stderr finds its pipe closed, that stream
goes to ``/dev/null`` (:class:`ReaderMayLeave`), so the command still does its work (writes
``--out``) and exits with its own code, printing no ``Broken pipe`` (in the program, up
to its exit: an exit handler's write included). A stream closed from the start
(``graphsys ... >&-``) is one whose reader has left: Python has no object for it, and the
program points its descriptor at ``/dev/null`` first, as git does (a file the command
opened would take its number).

SIGTERM (what ``timeout``, Slurm, systemd and Kubernetes send) is handled as Ctrl-C is: it
raises :class:`Terminated`, a :class:`KeyboardInterrupt`, in the command, so every writer's
cleanup runs (a staging directory, an index build directory, a temporary file is removed;
a graph or checkpoint keeps its last complete state), and the command exits with 143
after one ``error:`` line. A second SIGTERM during that cleanup is ignored (SIGKILL still
stops the process at once). Ctrl-C or SIGTERM reads the same from the import of the
command's modules on, and when it lands in a callback from C code (LLVM's, while numba
compiles a kernel) or a finalizer, where Python only reports it, it is raised again once
that returns (:class:`_Redeliver`) rather than dropped; one that lands while the main
thread compiles or loads a numba kernel is held until that ends (raised inside it, it could
break llvmlite's hand-over of an LLVM module and free it twice: a segfault as the
interrupt unwinds). Once the command has returned, its outcome stands: the program's
process then ignores both signals until it has exited, so that one landing in the exit
(the exit handlers, the interpreter's teardown) changes neither its exit code nor its
lines (:func:`terminate_as_interrupt`).

The program (:func:`program`: the ``graphsys`` script and ``python -m graphsys``) ends the
process, after a ``fast_exit`` command (its work all on disk, e.g. ``ingest``), an
interrupted one or one that destroyed a process group (:func:`graphsys.distributed.destroy`),
with its output flushed, exit handlers run and threads joined but without tearing down the
imported modules' objects (numba's, LLVM's, Arrow's): that only frees memory the system
frees anyway, takes seconds, and can abort (SIGABRT) under a gloo thread outliving its
group; those objects are kept out of the collector's scans too
(:func:`graphsys.jit.freeze_long_lived`).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import importlib
import os
import signal
import sys
import threading
import time
from pathlib import Path

from graphsys import openmp
from graphsys.errors import GraphsysError, ParameterError
from graphsys.jit import freeze_long_lived, gc_paused

COMMANDS = ("demo", "ingest", "index", "info", "verify", "export", "generate", "datasets", "run",
            "embed", "profile", "gnn", "mine", "subgraph", "links", "warmup", "delete",
            "update", "compact")
#: Commands that call no BLAS routine: run as the graphsys program (not through an
#: in-process :func:`main`, whose environment is the caller's), they run with one OpenBLAS
#: thread unless the environment sets ``OPENBLAS_NUM_THREADS`` (each OpenBLAS that loads,
#: NumPy's and SciPy's, otherwise starts a worker per core, each of which spins waiting for
#: work before it sleeps).
SERIAL_BLAS = ("ingest",)
#: Exit codes of a command interrupted by Ctrl-C (SIGINT) and by SIGTERM, as a shell's.
INTERRUPTED = (128 + signal.SIGINT, 128 + signal.SIGTERM)
#: Seconds between the SIGINTs sent to re-raise a held interrupt until its handler runs
RESEND_SECONDS = 0.01
#: Library parameter -> the argparse destinations of flags that set it under another name
#: (``graphsys generate --nodes`` sets ``num_nodes``, ``graphsys run --edges`` sets
#: ``edge_set``, ``--partitions`` sets ``partitions`` or ``num_partitions``); a parameter
#: whose flag has its own name needs no entry.
PARAMETER_DESTS: dict[str, tuple[str, ...]] = {
    "num_nodes": ("nodes",), "num_entities": ("nodes",),
    "num_edges": ("edges",), "num_triples": ("edges",),
    "partitions": ("num_partitions",), "num_partitions": ("partitions",),
    "edge_set": ("edges", "edge_sets"), "edge_sets": ("edge_set",),
    "workers": ("num_workers",), "num_workers": ("workers",),
    "world_size": ("ranks",), "sources": ("source",),
}


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the CLI's voice: a bad command line is one ``error: `` line that
    points at ``--help`` (exit code 2), not a usage dump. Sub-command parsers inherit it."""

    def error(self, message: str):
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of the command line ``argv``; None: the full parser, every command's.

    With ``argv`` naming a command, only that command's module is imported (commands
    import heavy libraries such as torch only when they need them). With ``argv`` naming
    none (``--version``, ``--help``, no command or an unknown one), no command module is
    imported: each command is listed with the help line its module registers, read from
    the module's source (:func:`command_help`), and none can run."""
    parser = ArgumentParser(
        prog="graphsys",
        description="Partitioned Arrow graph storage, BSP analytics, embeddings and GNNs.",
    )
    from graphsys._version import __version__

    parser.add_argument("--version", action="version", version=f"graphsys {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    first = _command_name(argv)
    listed = {} if argv is None or first in COMMANDS else {n: command_help(n) for n in COMMANDS}
    with gc_paused():  # imports: every object they make stays
        for name in (first,) if first in COMMANDS else COMMANDS:
            if listed.get(name) is not None:
                subparsers.add_parser(name, help=listed[name], add_help=False)
            else:
                importlib.import_module(f"graphsys.commands.{name}").register(subparsers)
    return parser


def command_help(name: str) -> str | None:
    """The ``help`` that :mod:`graphsys.commands` ``.name``'s ``register`` gives the
    command's parser, read from the module's source without importing it; None when that
    is not a literal string, or the source cannot be read (the caller then imports the
    module)."""
    import ast

    try:
        source = (Path(__file__).with_name("commands") / f"{name}.py").read_text("utf-8")
    except (OSError, UnicodeError):  # an install without sources
        return None
    start = source.find("\ndef register(")  # parse that function only where it can
    end = source.find("\ndef ", start + 1) if start >= 0 else -1
    try:
        tree = ast.parse(source[start:end] if end > start else source)
    except SyntaxError:
        tree = ast.parse(source)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_parser" and node.args
                and isinstance(node.args[0], ast.Constant) and node.args[0].value == name):
            text = next((k.value for k in node.keywords if k.arg == "help"), None)
            if isinstance(text, ast.Constant) and isinstance(text.value, str):
                return text.value
    return None


def _command_name(argv: list[str] | None) -> str | None:
    """The command ``argv`` names: its first argument that is not an option."""
    return next((a for a in (argv or []) if not a.startswith("-")), None)


def command_parser(parser: argparse.ArgumentParser,
                   args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the (sub-)command that ``args`` ran (``graphsys embed train``'s)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = action.choices.get(getattr(args, action.dest, None) or "")
            if chosen is not None:
                return command_parser(chosen, args)
    return parser


def flag_for(parser: argparse.ArgumentParser, args: argparse.Namespace, dest: str) -> str | None:
    """The flag of the (sub-)command that ``args`` ran whose value lands in ``dest``
    (``--max-iters`` for ``max_iters``), else in one of ``dest``'s
    :data:`PARAMETER_DESTS`; None when that command has no such option."""
    parser = command_parser(parser, args)
    for name in (dest, *PARAMETER_DESTS.get(dest, ())):
        for action in parser._actions:
            if action.dest == name and action.option_strings:
                return max(action.option_strings, key=len)
    return None


def user_message(exc: GraphsysError, parser: argparse.ArgumentParser,
                 args: argparse.Namespace) -> str:
    """``exc`` as the CLI user reads it: a :class:`ParameterError` names the flag that set
    the parameter when the command has one; every other error is printed as it is."""
    if isinstance(exc, ParameterError):
        flag = flag_for(parser, args, exc.parameter)
        if flag is not None:
            return f"{flag} {exc.message}"
    return str(exc)


class Terminated(KeyboardInterrupt):
    """A SIGTERM received by a command: raised in its main thread like Ctrl-C's
    :class:`KeyboardInterrupt`, so the same cleanup runs."""


class _Redeliver:
    """Raises an interrupt where it is safe to, and again one that Python could only
    report.

    A :class:`KeyboardInterrupt` (Ctrl-C) or :class:`Terminated` raised while the main
    thread ran a callback from C code (LLVM's, while numba compiles a kernel) or a
    finalizer (``__del__``) is printed as ``Exception ignored on calling ctypes callback
    function`` (or ``in ... __del__``) and dropped, and the command would run on.
    :meth:`hook` (``sys.unraisablehook``) takes it instead, and a thread sends the main
    thread a SIGINT (:meth:`_send`) once the callback has returned, whose handler
    (:meth:`on_int`) raises it again, where it propagates as any interrupt does.

    An interrupt that arrives while the main thread holds numba's compiler lock (a kernel
    compiles or loads from the cache: :func:`_compiling`) is not raised there: llvmlite
    hands an LLVM module over in two steps (the C call that moves it, then the Python
    object that is told so), and an exception raised between them leaves the object owning
    a module already freed or owned by the JIT, which it frees again when the unwinding
    drops it (a segfault). The handler then only records it, and a thread sends the SIGINT
    once the main thread has left the compiler (:meth:`_after_compiling`)."""

    def __init__(self, sigint) -> None:
        self.pending: type[KeyboardInterrupt] | None = None
        self.returned = True  # whether the hook that took the pending interrupt returned
        self.waiting = False  # whether a thread waits for the compiler to send the SIGINT
        self.previous = sys.unraisablehook
        self.sigint = sigint  # the SIGINT handler it stands in for
        self.over = False  # whether the command or block has ended: a signal is recorded
        self.handled = threading.Event()  # whether on_int ran since a SIGINT was sent
        self.late: int | None = None  # the signal recorded then

    def hook(self, unraisable) -> None:
        if (not isinstance(unraisable.exc_value, KeyboardInterrupt) or self.pending
                or threading.current_thread() is not threading.main_thread()):
            self.previous(unraisable)
            return
        self.pending, self.returned = type(unraisable.exc_value), False
        threading.Thread(target=self._signal_main, daemon=True).start()
        self.returned = True  # last: no check for signals between it and the return

    def _signal_main(self) -> None:
        while not self.returned:  # raised within the hook, it would be reported again
            time.sleep(0.001)
        self._send()

    def _send(self) -> None:
        """Send the main thread a SIGINT, again each :data:`RESEND_SECONDS` until its handler
        has run or the block has ended: one that lands as the main thread begins to wait on
        a lock (after Python's last check for signals, before the wait) leaves it waiting to
        the end, its handler run only then. A signal, not ``interrupt_main``'s flag: it also wakes
        a wait in a system call."""
        self.handled.clear()
        main = threading.main_thread().ident
        signal.pthread_kill(main, signal.SIGINT)
        while not self.handled.wait(RESEND_SECONDS) and not self.over:
            signal.pthread_kill(main, signal.SIGINT)

    def _after_compiling(self) -> None:
        """Send the main thread a SIGINT once no thread holds numba's compiler lock (the
        handler holds it again if the main thread compiles anew by then)."""
        try:
            with sys.modules["numba.core.compiler_lock"].global_compiler_lock:
                pass
        finally:
            self.waiting = False
            self._send()

    def _held(self) -> bool:
        """Whether the interrupt is held for now (the main thread is compiling)."""
        if not _compiling():
            return False
        if not self.waiting:
            self.waiting = True
            threading.Thread(target=self._after_compiling, daemon=True).start()
        return True

    def on_int(self, signum, frame):
        """The pending interrupt; else what the handler it stands in for does: Python's
        raises KeyboardInterrupt, a caller's own runs, an ignored SIGINT (a job a script
        started in the background) stays ignored. Within a numba compilation it is held
        until that ends."""
        self.handled.set()
        if self.over:
            self.late = signum
            return None
        if self.pending is None and self.sigint == signal.SIG_IGN:
            return None
        if self._held():
            return None
        pending, self.pending = self.pending, None
        if pending is not None:
            raise pending()
        if callable(self.sigint):
            return self.sigint(signum, frame)
        raise KeyboardInterrupt()

    def on_term(self, signum, frame):
        """:class:`Terminated`, once: a later SIGTERM is ignored while the cleanup runs;
        within a numba compilation held until that ends, as :meth:`on_int` holds Ctrl-C."""
        if self.over:
            self.late = signum
            return
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if self._held():
            self.pending = Terminated
            return
        raise Terminated()


def _compiling() -> bool:
    """Whether this thread holds numba's compiler lock: it compiles a kernel or loads one
    from the cache (False where numba was never imported)."""
    module = sys.modules.get("numba.core.compiler_lock")
    return module is not None and module.global_compiler_lock.is_locked()


@contextlib.contextmanager
def terminate_as_interrupt(ignore_after: bool = False):
    """Within the block, SIGTERM raises :class:`Terminated` in the main thread (once: a
    later SIGTERM is ignored while the cleanup runs), and an interrupt raised in a
    callback from C code, which Python only reports, is raised again after it. The block
    gets the :class:`_Redeliver` that does so (None off the main thread, where no handler
    can be set and it does nothing); setting its ``over`` ends that early (as
    :func:`_command` does once the command has returned or raised): from then on a signal
    is only recorded.

    After the block the previous handlers are restored, whole even when a signal lands
    while they are; a signal recorded is then sent to them (unless the block was itself
    interrupted: its cleanup has run). With ``ignore_after`` (the program's, whose process
    ends after the command) both signals are ignored instead, until the process has
    exited: the command's outcome is decided once it has returned (its output written) or
    raised (its cleanup run), and a Ctrl-C or SIGTERM that lands in the exit (the exit
    handlers, the interpreter's teardown) would only turn it into an exit by the signal
    with no line, or a traceback from an exit handler."""
    if threading.current_thread() is not threading.main_thread():
        yield None
        return

    redeliver = _Redeliver(signal.getsignal(signal.SIGINT))
    previous = (signal.signal(signal.SIGTERM, redeliver.on_term),
                signal.signal(signal.SIGINT, redeliver.on_int))
    sys.unraisablehook = redeliver.hook
    interrupted = False
    try:
        yield redeliver
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        redeliver.over = True  # first: from here on a signal is only recorded
        if ignore_after:
            previous = signal.SIG_IGN, signal.SIG_IGN
        signal.signal(signal.SIGTERM, previous[0])
        signal.signal(signal.SIGINT, previous[1])
        sys.unraisablehook = redeliver.previous
        if redeliver.late is not None and not interrupted:
            signal.raise_signal(redeliver.late)  # to the handler now restored


def main(argv: list[str] | None = None) -> int:
    """Run the command ``argv`` (default ``sys.argv[1:]``); returns its exit code."""
    return _run(argv)[0]


def program() -> None:
    """The ``graphsys`` program: :func:`main` on ``sys.argv``, then the process exits with
    its code; after a ``fast_exit`` command that succeeded or any command interrupted,
    without the interpreter's teardown (see the module docstring)."""
    _open_standard_descriptors()
    if _command_name(sys.argv[1:]) in SERIAL_BLAS and "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy loads
    code, args = _run(None, program=True)
    if (code == 0 and getattr(args, "fast_exit", False) or _ran_a_process_group()
            or args is None and code in INTERRUPTED):
        _exit_now(code)
    sys.exit(code)


def _open_standard_descriptors() -> None:
    """Point each closed standard descriptor (0, 1, 2: ``graphsys ... >&-``) at
    ``/dev/null``, as git does before a command: a file the command opens would otherwise
    take its number, and what C code writes to stdout or stderr (a library's warning)
    would land in that file."""
    fd = os.open(os.devnull, os.O_RDWR)
    while fd <= 2:  # the lowest free number: each closed one in turn
        fd = os.open(os.devnull, os.O_RDWR)
    os.close(fd)


def _ran_a_process_group() -> bool:
    """Whether the command destroyed a ``torch.distributed`` process group, whose gloo
    threads can outlive it and abort the interpreter's teardown
    (:func:`graphsys.distributed.destroy`)."""
    module = sys.modules.get("graphsys.distributed")
    return module is not None and module.destroyed_a_group()


def _exit_now(code: int) -> None:
    """End the process as the interpreter would, less its teardown of module objects: join
    the non-daemon threads and run the exit handlers (``atexit``, ``weakref.finalize``,
    logging's), flush the standard streams, then ``os._exit``. Where this Python has no
    ``threading._shutdown`` (what the interpreter calls), or a stream cannot be flushed,
    the normal exit does it all."""
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is None:
        return
    shutdown()
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()  # a ReaderMayLeave: a closed pipe goes to /dev/null
        sys.stderr.flush()
    except (OSError, ValueError):  # a full disk: reported by the normal exit
        return
    os._exit(code)


def _run(argv: list[str] | None, program: bool = False
         ) -> tuple[int, argparse.Namespace | None]:
    """:func:`main`, with the parsed arguments (None when the command line did not parse);
    ``program``: the process is :func:`program`'s, which ends after the command."""
    openmp.apply_wait_policy()  # before any command loads an OpenMP runtime
    argv = sys.argv[1:] if argv is None else argv
    with readers_may_leave(program):
        code = None
        try:
            with terminate_as_interrupt(program) as block:  # from the command's imports on
                parser = build_parser(argv)
                args, extra = parser.parse_known_args(argv)
                if extra:  # named by the command's own parser, which points at its --help
                    command_parser(parser, args).error(
                        f"unrecognized arguments: {' '.join(extra)}")
                if program and getattr(args, "fast_exit", False):
                    freeze_long_lived()  # the process exits without teardown after it
                code = _command(parser, args, block)
            return code, args
        except KeyboardInterrupt as exc:
            if code is not None:  # sent on to the caller's handler once the command returned
                raise
            code, line = ((INTERRUPTED[1], "error: terminated (SIGTERM)")
                          if isinstance(exc, Terminated) else
                          (INTERRUPTED[0], "error: interrupted"))
        # printed once the interrupt and the frames it held are gone: a progress display
        # they left open closes first, its last line above this one
        print(line, file=sys.stderr)
        return code, None


class ReaderMayLeave:
    """A standard stream whose reader may close its pipe (``| head -1``): a write or flush
    that finds it closed points the stream's descriptor at ``/dev/null`` instead of
    raising, and the stream takes every later line there. Everything else is the
    stream's."""

    def __init__(self, stream):
        self.stream = stream

    def __getattr__(self, name):
        return getattr(self.stream, name)

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except BrokenPipeError:
            self._to_devnull()
            return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            self._to_devnull()

    def _to_devnull(self) -> None:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, self.stream.fileno())
        finally:
            os.close(null)


@contextlib.contextmanager
def readers_may_leave(for_good: bool = False):
    """Within the block, ``sys.stdout`` and ``sys.stderr`` are :class:`ReaderMayLeave`
    (flushed at its end, so that the interpreter's own last flush finds nothing left). One
    that Python has none of (None: its descriptor was closed, ``graphsys info G >&-``)
    writes to ``/dev/null``, as one whose reader has left. With ``for_good`` (the
    program's, whose process ends after the command) they stay so until the process has
    exited: a reader that leaves by then (``| head -1`` once the command has returned)
    finds an exit handler's write, or the interpreter's last flush, as quiet, with no
    ``BrokenPipeError`` (/dev/null on the descriptor: what Python's documentation of
    SIGPIPE recommends)."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = (ReaderMayLeave(open(os.devnull, "w") if stream is None else
                                             stream) for stream in saved)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        if not for_good:
            for stream, wrapped in zip(saved, (sys.stdout, sys.stderr)):
                if stream is None:
                    wrapped.stream.close()
            sys.stdout, sys.stderr = saved


def _command(parser: argparse.ArgumentParser, args: argparse.Namespace,
             block: _Redeliver | None = None) -> int:
    """The chosen command's exit code; a user-facing failure printed as one line. Its
    outcome stands once it has returned or raised: from then on ``block``, its
    :func:`terminate_as_interrupt`'s, only records a signal."""
    try:
        try:
            code = args.func(args)
        finally:  # first, with no check for signals between
            if block is not None:
                block.over = True
        return int(code or 0)
    except GraphsysError as exc:
        print(f"error: {user_message(exc, parser, args)}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:  # the system refused: a full disk, a permission, a vanished file
        if exc.errno is None:
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    program()
