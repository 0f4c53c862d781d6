"""The CLI's error surface: library parameters are reported as the flags that set them."""

from __future__ import annotations

import pytest

from graphsys import cli
from graphsys.bsp.algorithms.pagerank import PageRank
from graphsys.errors import ParameterError
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources


def test_library_error_names_the_parameter_not_a_flag():
    with pytest.raises(ParameterError, match=r"^tol must be a finite number > 0, got 0\.0$"):
        PageRank(tol=0.0)


def test_cli_reports_the_flag_that_set_the_parameter(tmp_path, capsys):
    edges = tmp_path / "e.tsv"
    edges.write_text("0\t1\n1\t2\n2\t0\n")
    graph = tmp_path / "g"
    ingest_sources([EdgeSource([edges])], graph, IngestOptions(partitions=1))
    rc = cli.main(["run", "pagerank", str(graph), "--tol", "0"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert err[-1] == "error: --tol must be a finite number > 0, got 0.0"
    rc = cli.main(["run", "pagerank", str(graph), "--max-iters", "0"])
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "error: --max-iters must be a positive integer, got 0")


def test_parameter_without_a_flag_keeps_its_library_name():
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--other")
    exc = ParameterError("max_iters", "must be a positive integer, got 0")
    assert cli.user_message(exc, parser, parser.parse_args([])) == str(exc)


@pytest.mark.parametrize("argv, line", [
    (["ingest", "{e}", "--out", "{t}/g0", "--partitions", "0"],
     "error: --partitions must be a positive integer, got 0"),
    (["profile", "pagerank", "{g}", "--block-size", "100"],
     "error: --block-size must be a multiple of 32 in [32, 1024], got 100"),
    (["profile", "pagerank", "{g}", "--items-per-thread", "0"],
     "error: --items-per-thread must be a positive integer, got 0"),
    (["profile", "pagerank", "{g}", "--ranks", "0"],
     "error: --ranks must be a positive integer, got 0"),
    (["profile", "bfs", "{g}"], "error: --source is needed by bfs: give a node id"),
    *[([cmd, "bfs", "{g}", "--source", "x"], "error: --source: 'x' is not an integer node id "
                                              "(the graph's ids are integers)")
      for cmd in ("run", "profile")],
    (["gnn", "train", "--graph", "{g}", "--epochs", "0"],
     "error: --epochs must be a positive integer, got 0"),
    (["gnn", "train", "--graph", "{g}", "--workers", "-1"],
     "error: --workers must be a non-negative integer, got -1"),
    (["gnn", "train", "--graph", "{g}", "--lr", "0"],
     "error: --lr must be a finite number > 0, got 0.0"),
    (["run", "pagerank", "{g}", "--device", "tpu"],
     "error: --device 'tpu': unknown device (choose from cpu, cuda, auto)"),
])
def test_library_parameters_read_as_flags(tmp_path, capsys, argv, line):
    """Library errors name parameters (ingest's partitions, the profiler's block_size,
    ...); each command's parser maps them to its own flags."""
    edges = tmp_path / "e.tsv"
    edges.write_text("0\t1\n1\t2\n2\t0\n")
    graph = tmp_path / "g"
    ingest_sources([EdgeSource([edges])], graph, IngestOptions(partitions=1))
    capsys.readouterr()
    argv = [a.format(e=edges, g=graph, t=tmp_path) for a in argv]
    assert cli.main(argv) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == line


@pytest.mark.parametrize("argv", [
    [],
    ["nosuch-command"],
    ["generate", "rmat", "--out", "{t}/x.tsv"],
    ["generate", "rmat", "--nodes", "0", "--out", "{t}/x.tsv"],
    ["generate", "grid", "--nodes", "10", "--drop", "1", "--out", "{t}/x.tsv"],
    ["generate", "sbm", "--nodes", "10", "--out", "{t}/x.unknown"],
    ["datasets", "ingest", "no-such-dataset", "--out", "{t}/g"],
    ["datasets", "nosuch"],
    ["info", "{t}/missing"],
    ["run", "pagerank", "{t}/missing"],
    ["run", "pagerank", "{t}/missing", "--bogus-flag"],
    ["profile", "pagerank", "{t}/missing"],
    ["embed", "train", "--config", "{t}/missing.toml"],
    ["ingest", "{t}/missing.tsv", "--out", "{t}/g"],
])
def test_every_failure_is_one_error_line(tmp_path, capsys, argv):
    """Whatever fails (the command line, a value, a file), stderr holds exactly one line and
    it starts with ``error: ``; the exit code is non-zero."""
    capsys.readouterr()
    try:
        rc = cli.main([a.format(t=tmp_path) for a in argv])
    except SystemExit as exc:  # argparse exits on a bad command line
        rc = exc.code
    err = capsys.readouterr().err.splitlines()
    assert rc != 0
    assert len(err) == 1, err
    assert err[0].startswith("error: "), err


def test_parameter_aliases_name_the_flag(tmp_path, capsys):
    """A library parameter whose flag has another name (num_nodes: --nodes) reads as the flag."""
    capsys.readouterr()
    rc = cli.main(["generate", "kg", "--nodes", "100", "--edges", "1G",
                   "--out", str(tmp_path / "kg.tsv")])
    assert rc == 2
    assert capsys.readouterr().err.startswith("error: --edges must be <= ")


def test_sigterm_is_an_interrupt_on_the_main_thread_only(tmp_path, capsys):
    """Within a command SIGTERM raises ``cli.Terminated`` (a KeyboardInterrupt, so every
    writer's cleanup runs); the handler is restored after, and a command run off the main
    thread (where no handler can be set) runs as before."""
    import os
    import signal
    import threading

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(cli.Terminated), cli.terminate_as_interrupt():
        os.kill(os.getpid(), signal.SIGTERM)
        signal.pause()
    assert signal.getsignal(signal.SIGTERM) is before and issubclass(cli.Terminated,
                                                                       KeyboardInterrupt)
    edges = tmp_path / "e.tsv"
    edges.write_text("0\t1\n")
    rc = []
    t = threading.Thread(target=lambda: rc.append(cli.main(
        ["ingest", str(edges), "--out", str(tmp_path / "g")])))
    t.start()
    t.join()
    assert rc == [0] and (tmp_path / "g" / "manifest.json").is_file()


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, cli.Terminated])
def test_an_interrupt_raised_in_a_callback_from_c_still_stops_the_command(interrupt,
                                                                          capsys):
    """Ctrl-C or SIGTERM landing in a callback from C code (LLVM's object-cache callback
    while numba compiles a kernel) was reported as ``Exception ignored on calling ctypes
    callback function`` and dropped: the command ran on to exit 0. It is raised again
    once the callback returns, and the command stops with its one line. The SIGINT that
    raises it again is sent until its handler has run: one landing as the main thread
    began to wait on a lock (after Python's last check for signals) was lost to the wait,
    which ran to its end (here the first is dropped, as that one)."""
    import ctypes
    import signal
    import sys
    import threading

    def command(args):
        def raise_it():
            raise interrupt()
        ctypes.CFUNCTYPE(None)(raise_it)()  # Python reports it, cannot raise it
        threading.Event().wait(10)  # interrupted by the interrupt raised again
        raise AssertionError("the interrupt was dropped")

    sent, send = [], signal.pthread_kill

    def first_lost(thread, signum):
        sent.append(signum)
        if len(sent) > 1:
            send(thread, signum)

    parser = cli.ArgumentParser(prog="graphsys")
    parser.set_defaults(func=command)
    hook = sys.unraisablehook
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cli, "build_parser", lambda argv: parser)
        mp.setattr(signal, "pthread_kill", first_lost)
        code = cli.main([])
    assert code == (143 if interrupt is cli.Terminated else 130) and len(sent) > 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "error: terminated (SIGTERM)" if interrupt is cli.Terminated else "error: interrupted"]
    assert sys.unraisablehook is hook


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, cli.Terminated])
def test_an_interrupt_while_a_kernel_compiles_is_raised_once_it_has_compiled(interrupt):
    """Ctrl-C or SIGTERM while the main thread compiled a numba kernel was raised inside
    the compilation, where it can fall between llvmlite's C call that hands an LLVM module
    over and the Python object told so: that object then freed the module again as the
    interrupt unwound (a segfault of ``graphsys run ... --mode out-of-core`` on Ctrl-C).
    It is held until the compilation has ended, then raised."""
    import signal
    import threading

    import numba
    from numba.core import event

    class InterruptedCompile(event.Listener):
        def on_start(self, ev):  # within the compilation, numba's compiler lock held
            signal.raise_signal(signal.SIGTERM if interrupt is cli.Terminated
                                else signal.SIGINT)

        def on_end(self, ev):
            pass

    @numba.njit
    def add_one(x):
        return x + 1

    with pytest.raises(KeyboardInterrupt) as raised, cli.terminate_as_interrupt():
        with event.install_listener("numba:compile", InterruptedCompile()):
            add_one(1)  # raised once the kernel has compiled: here or in the wait below
        threading.Event().wait(10)
    assert raised.type is interrupt
    assert len(add_one.signatures) == 1  # compiled whole, not interrupted within


def test_an_ignored_sigint_stays_ignored(monkeypatch, capsys):
    """A SIGINT the process ignores (a job a script started in the background, which the
    terminal's Ctrl-C must not stop) stays ignored while a command runs."""
    import os
    import signal

    def command(args):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # Python runs a signal's handler between two instructions
            pass
        return 0

    parser = cli.ArgumentParser(prog="graphsys")
    parser.set_defaults(func=command)
    monkeypatch.setattr(cli, "build_parser", lambda argv: parser)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert cli.main([]) == 0
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
    assert capsys.readouterr().err == ""


def test_an_interrupt_while_the_command_loads_is_one_line(monkeypatch, capsys):
    """Ctrl-C while the command's modules import (the first second of every command) was
    a traceback of the import machinery and exit -2; it reads as any interrupt."""
    def importing(argv):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", importing)
    assert cli.main(["ingest", "e.tsv", "--out", "g"]) == 130
    assert capsys.readouterr().err == "error: interrupted\n"


def test_the_interrupt_line_is_the_last_line(monkeypatch, capsys):
    """A progress display the interrupt left open (its frame held by the interrupt's
    traceback) printed its last line (what compiled) below ``error: interrupted``; it is
    closed before that line."""
    from graphsys.progress import LineProgress, compile_ended, compile_started

    def command(args):
        bar = LineProgress(total=2, unit="edge", desc="index csr")  # left open
        compile_started("graphsys.storage.adjacency_index")
        compile_ended("graphsys.storage.adjacency_index")
        raise KeyboardInterrupt(bar)

    parser = cli.ArgumentParser(prog="graphsys")
    parser.set_defaults(func=command)
    monkeypatch.setattr(cli, "build_parser", lambda argv: parser)
    assert cli.main([]) == 130
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == "error: interrupted" and "compiled 1 adjacency_index kernel" in err[-2]


def test_program_ends_the_process_after_a_fast_exit_command(tmp_path):
    """``python -m graphsys ingest`` (a ``fast_exit`` command) leaves without the
    interpreter's teardown: its JSON line is flushed into a pipe, the exit handlers run (a
    child's atexit line is printed after it) and its code is 0; a failing ingest still exits
    as before, with its one error line. The ingest ran with one OpenBLAS thread (the
    environment set none) and the imports' objects frozen out of the collector's scans."""
    import json
    import os
    import subprocess
    import sys

    edges = tmp_path / "e.tsv"
    edges.write_text("0\t1\n1\t2\n")
    child = ("import atexit, gc, os, sys; atexit.register(lambda: print('atexit ran', "
             "os.environ.get('OPENBLAS_NUM_THREADS'), gc.get_freeze_count() > 0)); "
             "sys.argv[0] = 'graphsys'; from graphsys.cli import program; program()")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", child, "ingest", str(edges), "--out",
                          str(tmp_path / "g"), "--json"], capture_output=True, text=True,
                         timeout=300, env=env)
    lines = out.stdout.splitlines()
    assert out.returncode == 0 and lines[-1] == "atexit ran 1 True", out.stderr
    assert json.loads(lines[0])["edges"] == {"default": 2}
    assert (tmp_path / "g" / "manifest.json").is_file()
    bad = subprocess.run([sys.executable, "-m", "graphsys", "ingest", str(tmp_path / "no.tsv"),
                          "--out", str(tmp_path / "h")], capture_output=True, text=True,
                         timeout=300)
    assert bad.returncode != 0 and bad.stderr.startswith("error: ")
    assert len(bad.stderr.splitlines()) == 1


def _program(tmp_path, prelude: str, command: str):
    """The run of ``cli.program()`` in a child Python, after the source ``prelude`` (with
    ``atexit``, ``os``, ``signal`` and ``sys`` imported), with one command whose body is
    the line ``command``."""
    import os
    import subprocess
    import sys

    child = ("import atexit, os, signal, sys\n" + prelude + "sys.argv[0] = 'graphsys'\n"
             "from graphsys import cli\n"
             f"def command(args): {command}\n"
             "parser = cli.ArgumentParser(prog='graphsys')\n"
             "parser.set_defaults(func=command)\n"
             "cli.build_parser = lambda argv: parser\n"
             "cli.program()\n")
    return subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


@pytest.mark.parametrize("interrupt", ["KeyboardInterrupt", "cli.Terminated"])
def test_program_ends_the_process_once_an_interrupted_command_cleaned_up(interrupt,
                                                                          tmp_path):
    """An interrupted command's cleanup has run when it prints its line; the process then
    ends without the interpreter's teardown (which took seconds after a torch command):
    the exit handlers run, the objects of ``__main__`` are not torn down. A second Ctrl-C
    by then is ignored (it was a traceback from an exit handler)."""
    out = _program(tmp_path, "class Torn:\n    def __del__(self): print('torn down', flush=True)\n"
                             "held = Torn()\n"
                             "def at_exit():\n"
                             "    os.kill(os.getpid(), signal.SIGINT)\n"
                             "    print('atexit ran', flush=True)\n"
                             "atexit.register(at_exit)\n", f"raise {interrupt}()")
    terminated = interrupt == "cli.Terminated"
    assert out.returncode == (143 if terminated else 130), out.stderr
    assert out.stderr == ("error: terminated (SIGTERM)\n" if terminated
                          else "error: interrupted\n")
    assert out.stdout == "atexit ran\n"


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_program_ignores_an_interrupt_once_the_command_has_returned(sig, tmp_path):
    """A command that had written its output and returned, its handlers restored, was
    ended by a Ctrl-C or SIGTERM landing in the exit: by the signal (130 or 143) with no
    line, or a traceback from an exit handler; one landing as its code was read made it
    an interrupted command. The program ignores both from the command's return on: the
    exit handlers run and the code is the command's."""
    out = _program(tmp_path, f"def late(): os.kill(os.getpid(), signal.{sig})\n"
                             "class Returned:\n"  # the command's code: read as the signal lands
                             "    def __bool__(self): late(); return False\n"
                             "def at_exit():\n"
                             "    late()\n"
                             "    print('atexit ran', flush=True)\n"
                             "atexit.register(at_exit)\n"
                             "exit = sys.exit\n"
                             "def exiting(code):\n"  # the program's exit, its command's block left
                             "    late()\n"
                             "    exit(code)\n"
                             "sys.exit = exiting\n",
                   "print('output', flush=True); return Returned()")
    assert (out.returncode, out.stderr, out.stdout) == (0, "", "output\natexit ran\n")


@pytest.mark.parametrize("fast_exit", [False, True])
def test_program_with_its_output_streams_closed_runs_its_command(fast_exit, tmp_path):
    """``graphsys info G <&- >&- 2>&-``: Python has no ``sys.stdout`` or ``sys.stderr``
    (None), and the command's first print was a traceback (exit 120); a file it opened
    could take a closed descriptor, where C code's writes to stdout or stderr landed. The
    closed streams write to /dev/null, as ones whose reader left, and the command exits
    with its own code."""
    out = _program(tmp_path, "for fd in (0, 1, 2): os.close(fd)\n"
                             "sys.stdin = sys.stdout = sys.stderr = None\n",
                   f"args.fast_exit = {fast_exit}; print('output'); print('log', file=sys.stderr)"
                   "; f = open('data', 'w'); os.write(1, b'C'); os.write(2, b'C'); f.write('data')"
                   "; f.close(); return 0")
    assert out.returncode == 0 and (tmp_path / "data").read_text() == "data"


@pytest.mark.parametrize("fast_exit", [False, True])
def test_program_output_whose_reader_left_in_the_exit_is_dropped_quietly(fast_exit,
                                                                         tmp_path):
    """``graphsys ... | head -1`` with the reader gone once the command had returned: an
    exit handler's line met the closed pipe as a ``BrokenPipeError`` traceback (or, left
    in the buffer, the interpreter's last flush: exit 120). The standard streams take a
    reader that leaves as quietly until the process has exited."""
    out = _program(tmp_path, "def reader_leaves():\n"
                             "    read, write = os.pipe(); os.close(read); os.dup2(write, 1)\n"
                             "    print('at exit')\n"
                             "atexit.register(reader_leaves)\n",
                   f"args.fast_exit = {fast_exit}; print('output'); return 0")
    assert (out.returncode, out.stderr, out.stdout) == (0, "", "output\n")


def test_a_signal_once_the_command_has_returned_is_the_callers(monkeypatch, capsys):
    """A Ctrl-C landing as the command returned (its output written) made it an
    interrupted command: 130 and ``error: interrupted``. Its outcome stands: the program
    ignores such a signal, and an in-process caller's own handler gets it (Python's
    raises KeyboardInterrupt), once the command's handlers are restored."""
    import signal

    class Returned:  # the command's code: read as the signal lands
        def __bool__(self):
            signal.raise_signal(signal.SIGINT)
            return False

    parser = cli.ArgumentParser(prog="graphsys")
    parser.set_defaults(func=lambda args: Returned())
    monkeypatch.setattr(cli, "build_parser", lambda argv: parser)
    with pytest.raises(KeyboardInterrupt):
        cli.main([])
    assert capsys.readouterr().err == "" and signal.getsignal(signal.SIGINT) is (
        signal.default_int_handler)


def test_a_signal_while_the_handlers_are_restored_reaches_the_restored_one(monkeypatch):
    """A SIGINT landing as the handlers were restored after a command's block (the
    SIGTERM one restored, the SIGINT one not yet) raised from the block's handler: the
    caller was left with the command's handlers. They are restored whole, then the
    signal is sent to the caller's."""
    import signal
    import sys

    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    hook, set_handler, calls = sys.unraisablehook, signal.signal, []

    def setting(signum, handler):
        calls.append(signum)
        if len(calls) == 3:  # the first restore, after the block's two installs
            signal.raise_signal(signal.SIGINT)
        return set_handler(signum, handler)

    monkeypatch.setattr(signal, "signal", setting)
    try:
        with pytest.raises(KeyboardInterrupt), cli.terminate_as_interrupt():
            pass
        after = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
        restored = sys.unraisablehook is hook
    finally:
        set_handler(signal.SIGINT, before[0])
        set_handler(signal.SIGTERM, before[1])
        sys.unraisablehook = hook
    assert after == before and restored and len(calls) == 4


def test_a_reader_that_leaves_does_not_end_the_command(tmp_path, capsys, monkeypatch):
    """``graphsys run ... --out F | head -1``: stdout's reader is gone before the first
    superstep line; the run still writes F, exits 0 and prints no 'Broken pipe'."""
    import os
    import sys

    edges = tmp_path / "e.tsv"
    edges.write_text("0\t1\n1\t2\n2\t0\n")
    ingest_sources([EdgeSource([edges])], tmp_path / "g", IngestOptions(partitions=1))
    read, write = os.pipe()
    os.close(read)
    with open(write, "w", buffering=1) as closed:  # line-buffered: every line is written
        monkeypatch.setattr(sys, "stdout", closed)
        rc = cli.main(["run", "pagerank", str(tmp_path / "g"), "--out",
                       str(tmp_path / "pr.parquet")])
        assert sys.stdout is closed
    assert rc == 0 and (tmp_path / "pr.parquet").is_file()
    err = capsys.readouterr().err
    assert "error" not in err and "Broken pipe" not in err, err


def test_json_output_has_no_nan_or_infinity(capsys):
    """A NaN metric (``embed eval`` of an edge set without triples: 'mrr': NaN) or an
    infinite score was printed as NaN / Infinity, which JSON has not (jq refuses the line);
    every --json output now writes them as null."""
    import json
    import math

    from graphsys.commands._common import emit_json

    def strict(const):
        raise ValueError(f"not JSON: {const}")

    emit_json({"mrr": math.nan, "rows": [(1, 2, math.inf), [3, 4, -math.inf]], "count": 0,
               "nested": {"x": 0.5, "y": None, "id": "nan"}})
    out = json.loads(capsys.readouterr().out, parse_constant=strict)
    assert out == {"mrr": None, "rows": [[1, 2, None], [3, 4, None]], "count": 0,
                   "nested": {"x": 0.5, "y": None, "id": "nan"}}
