"""The kernel cache fails closed and survives edits: an entry that does not load (truncated,
garbled, empty, of another version or format, of another signature, unreadable, in a
read-only directory) is compiled again with at most one line said, never a traceback, and
replaced where it can be; a kernel module's key follows what it compiles from, not the
whole package; two processes saving at once leave whole entries."""

from __future__ import annotations

import io
import json
import os
import pickle
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graphsys import jit_cache

REPO = Path(__file__).resolve().parents[1]

#: A child that calls one small kernel with two signatures (int32 and int64 indices).
CHILD = """
import json, numpy as np
from graphsys import jit
from graphsys.storage.kernels import count_into
out = []
for dtype in (np.int32, np.int64):
    counts = np.zeros(4, np.int64)
    count_into(np.array([1, 2, 2], dtype), counts)
    out.append(counts.tolist())
path, hits, misses = jit.kernel_cache(count_into)
print(json.dumps({"counts": out, "hits": hits, "misses": misses, "path": path}))
"""
RIGHT = [[0, 1, 2, 0], [0, 1, 2, 0]]


def _env(root: Path, install: Path = REPO) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "PYTHONPATH")}
    env.update(PYTHONPATH=str(install), XDG_CACHE_HOME=str(root / "xdg"),
               PYTHONDONTWRITEBYTECODE="1", PYTHONWARNINGS="default")
    return env


def _child(root: Path, install: Path = REPO, wrap: list[str] | None = None) -> tuple[dict, str]:
    """Run CHILD; (its JSON line, its stderr). A traceback fails the test."""
    out = subprocess.run([*(wrap or []), sys.executable, "-c", CHILD], env=_env(root, install),
                         cwd=root, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


def _entry(root: Path) -> tuple[Path, list[Path]]:
    """count_into's index file and its data files under root's cache."""
    [index] = (root / "xdg").rglob("kernels.count_into-*.nbi")
    return index, sorted(index.parent.glob("kernels.count_into-*.nbc"))


@pytest.fixture(scope="module")
def warm(tmp_path_factory) -> Path:
    """A cache holding count_into's two signatures."""
    root = tmp_path_factory.mktemp("warm")
    got, err = _child(root)
    assert got["counts"] == RIGHT and got["misses"] == 2 and not err.strip()
    return root


def _copy(warm: Path, tmp_path: Path) -> Path:
    shutil.copytree(warm / "xdg", tmp_path / "xdg")
    return tmp_path


def _garble(path: Path) -> None:
    data = bytearray(path.read_bytes())
    mid = len(data) // 2
    data[mid:mid + 64] = bytes(b ^ 0x5A for b in data[mid:mid + 64])
    path.write_bytes(bytes(data))


def _reframe_index(index: Path, version: str) -> None:
    """Rewrite the index as written by numba ``version``."""
    f = io.BytesIO(jit_cache.unframe(index.read_bytes()))
    pickle.load(f)
    index.write_bytes(jit_cache.frame(pickle.dumps(version, protocol=-1) + f.read()))


def _swap_data(data: list[Path]) -> None:
    a, b = data[0].read_bytes(), data[1].read_bytes()
    data[0].write_bytes(b)
    data[1].write_bytes(a)


CORRUPTIONS = {
    "data truncated": (lambda i, d: d[0].write_bytes(d[0].read_bytes()[:700]), 1),
    "index truncated": (lambda i, d: i.write_bytes(i.read_bytes()[:40]), 1),
    "data garbled": (lambda i, d: _garble(d[0]), 1),  # machine code: unpickles, then crashes
    "index garbled": (lambda i, d: i.write_bytes(os.urandom(300)), 1),
    "data empty": (lambda i, d: d[1].write_bytes(b""), 1),
    "index empty": (lambda i, d: i.write_bytes(b""), 1),
    "index of another numba": (lambda i, d: _reframe_index(i, "0.1.0"), 0),
    "index in numba's format": (lambda i, d: i.write_bytes(pickle.dumps("0.1.0") + b"x"), 0),
    "data of another signature": (lambda i, d: _swap_data(d), 2),
}


@pytest.mark.parametrize("case", sorted(CORRUPTIONS))
def test_an_entry_that_does_not_load_is_compiled_said_once_and_replaced(case, warm, tmp_path):
    """Each corruption gives the right answer with at most one line per damaged file
    (naming it), the kernel compiled again and the entry replaced: the next process loads
    both signatures and says nothing."""
    root = _copy(warm, tmp_path)
    index, data = _entry(root)
    corrupt, files = CORRUPTIONS[case]
    corrupt(index, data)
    got, err = _child(root)
    lines = err.strip().splitlines()
    assert got["counts"] == RIGHT and got["misses"] >= 1, (got, err)
    assert len(lines) <= files and all("KernelCacheWarning" in ln and ".nb" in ln
                                       for ln in lines), err
    again, err = _child(root)
    assert again["counts"] == RIGHT and (again["hits"], again["misses"]) == (2, 0), (again, err)
    assert not err.strip()


#: A child that calls two kernels of one module with one signature, (int64[:], uint64[:]).
TWO_KERNELS = """
import json, numpy as np
from graphsys.storage.kernels import count_into, mark_seen
ids = np.array([1, 2, 2, 5], np.int64)
counts, seen = np.zeros(8, np.uint64), np.zeros(8, np.uint64)
count_into(ids, counts)
mark_seen(ids, seen)
print(json.dumps([counts.tolist(), seen.tolist()]))
"""


def test_a_data_file_of_another_kernel_is_not_loaded(tmp_path):
    """Two kernels' data files of one signature swapped (each checks out, holds the right
    signature): each kernel is compiled again with one line per file, never the other's
    code run (count_into ran mark_seen's: counts [38, 0, ...], the bitmap of ids 1, 2, 5)."""
    right = [[0, 1, 2, 0, 0, 1, 0, 0], [38, 0, 0, 0, 0, 0, 0, 0]]

    def child():
        out = subprocess.run([sys.executable, "-c", TWO_KERNELS], env=_env(tmp_path),
                             cwd=tmp_path, capture_output=True, text=True, timeout=900)
        assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-3000:]
        return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr

    assert child() == (right, "")
    [a] = (tmp_path / "xdg").rglob("kernels.count_into-*.nbc")
    [b] = (tmp_path / "xdg").rglob("kernels.mark_seen-*.nbc")
    _swap_data([a, b])
    got, err = child()
    assert got == right, got
    lines = err.strip().splitlines()
    assert len(lines) == 2 and all("KernelCacheWarning" in ln for ln in lines), err
    assert child() == (right, "")


def test_an_unreadable_index_is_compiled_around_in_one_line(warm, tmp_path):
    """An index that cannot be read (a directory in its place: unreadable to any user,
    root included) costs a compilation and one line per process; nothing is removed."""
    root = _copy(warm, tmp_path)
    index, _ = _entry(root)
    index.unlink()
    index.mkdir()
    for _ in range(2):
        got, err = _child(root)
        assert got["counts"] == RIGHT and got["misses"] == 2
        assert len(err.strip().splitlines()) == 1 and str(index) in err
    assert index.is_dir()


def test_a_fifo_in_place_of_an_entry_does_not_hang(warm, tmp_path):
    """A FIFO where the index and a data file go blocked the kernel's first call forever
    (open and read wait for a writer, and so did the warning, reading the file for its
    source line); each is now refused unread, in one line, and the kernel compiled."""
    root = _copy(warm, tmp_path)
    index, data = _entry(root)
    for path in (index, data[0]):
        path.unlink()
        os.mkfifo(path)
    out = subprocess.run([sys.executable, "-c", CHILD], env=_env(root), cwd=root,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1])["counts"] == RIGHT
    lines = out.stderr.strip().splitlines()
    assert 1 <= len(lines) <= 2 and all("not a regular file" in ln for ln in lines), lines


def test_a_huge_entry_is_refused_before_it_is_read(tmp_path):
    """A sparse 1 TB file in place of an entry was read whole (MemoryError, or all the
    memory there was) before its frame was checked."""
    from graphsys.jit_cache import BadEntry, read_file

    with open(tmp_path / "x.nbc", "wb") as f:
        f.truncate(1 << 40)
    with pytest.raises(BadEntry, match="1,099,511,627,776 bytes, more than a kernel cache"):
        read_file(tmp_path / "x.nbc")


def _read_only_runner(root: Path) -> list[str] | None:
    """A prefix that runs a command with ``root`` read-only (a read-only bind mount for
    root, which permissions do not stop), or [] where permissions suffice; None where
    neither can be had."""
    if os.geteuid() != 0:
        for path in [root, *root.rglob("*")]:
            if not path.is_symlink():
                path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
        return []
    if shutil.which("unshare") is None:
        return None
    wrap = ["unshare", "-m", "sh", "-c", f'mount --bind -o ro "{root}" "{root}" && exec "$0" "$@"']
    probe = subprocess.run([*wrap, "true"], capture_output=True)
    return wrap if probe.returncode == 0 else None


def test_a_bad_entry_in_a_read_only_cache_of_a_read_only_install(warm, tmp_path):
    """Nothing can be written (the install and every cache directory read-only): the
    kernels are still defined (numba alone has no locator left and fails at import), a
    damaged entry is compiled around in at most one line, the whole entry still loads."""
    root = _copy(warm, tmp_path)
    for package in ("graphsys", "partitioners"):
        shutil.copytree(REPO / package, root / "install" / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    index, data = _entry(root)
    data[0].write_bytes(data[0].read_bytes()[:700])
    wrap = _read_only_runner(root)
    if wrap is None:
        pytest.skip("no way to make a directory read-only for this user here")
    try:
        got, err = _child(root, root / "install", wrap)
        assert got["counts"] == RIGHT and (got["hits"], got["misses"]) == (1, 1)
        assert got["path"] == str(index.parent)
        assert len(err.strip().splitlines()) <= 1 and str(data[0]) in err, err
    finally:
        for path in [root, *root.rglob("*")]:
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | stat.S_IWUSR)


def test_two_processes_saving_at_once_leave_one_whole_entry(tmp_path):
    """Two processes compile count_into into one empty cache at once, each a different
    signature: the entry holds both (the index is updated under a lock, each data file is
    named by its signature), and a third process loads both."""
    children = ["import numpy as np\nfrom graphsys.storage.kernels import count_into\n"
                f"count_into(np.array([1], np.{t}), np.zeros(4, np.int64))" for t in
                ("int32", "int64")]
    procs = [subprocess.Popen([sys.executable, "-c", c], env=_env(tmp_path), cwd=tmp_path,
                              stderr=subprocess.PIPE, text=True) for c in children]
    for p in procs:
        assert p.wait(timeout=900) == 0 and not p.stderr.read().strip()
    got, err = _child(tmp_path)
    assert got["counts"] == RIGHT and (got["hits"], got["misses"]) == (2, 0) and not err.strip()
    assert not list((tmp_path / "xdg").rglob("*.tmp-*"))


#: A kernel module of a copied install: a parallel kernel and a kernel that calls it.
CHAIN = """import numba


@numba.njit(cache=True, nogil=True, parallel=True)
def fill(out):
    for i in numba.prange(out.shape[0]):
        out[i] = i


@numba.njit(cache=True, nogil=True)
def filled(out):
    fill(out)
    return out.sum()
"""
#: Runs one call of CHAIN's kernels, then prints filled's cache hits and misses.
CHAIN_CHILD = ("import numpy as np\nfrom graphsys import jit\n"
               "from graphsys.kernels.chain import fill, filled\n{call}\n"
               "print(jit.kernel_cache(filled)[1:])")


def _chain_entries(root: Path) -> list[bytes]:
    """The pickles saved for CHAIN's ``filled`` (not loaded: they name the copy's module)."""
    return [jit_cache.unframe(p.read_bytes()) for p in (root / "xdg").rglob("chain.filled-*.nbc")]


def test_a_kernel_compiled_beside_a_cached_parallel_callee_loads_in_a_new_process(tmp_path):
    """One process compiles a parallel kernel; a second loads it from the cache and compiles
    a kernel that calls it (numba then leaves out of the caller's compile result the hook
    that starts its threads before the code is linked, as when two processes compile
    beside each other); a third loads that caller before any parallel kernel. It runs (it
    died with SIGSEGV), and the entry saved holds the hook."""
    install = tmp_path / "install"
    for package in ("graphsys", "partitioners"):
        shutil.copytree(REPO / package, install / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    (install / "graphsys" / "kernels" / "chain.py").write_text(CHAIN)

    def child(call: str) -> str:
        out = subprocess.run([sys.executable, "-c", CHAIN_CHILD.format(call=call)],
                             env=_env(tmp_path, install), cwd=tmp_path, capture_output=True,
                             text=True, timeout=900)
        assert out.returncode == 0 and not out.stderr.strip(), (out.returncode,
                                                                 out.stderr[-3000:])
        return out.stdout.split()

    child("fill(np.zeros(8))")
    assert child("print(int(filled(np.zeros(8))))") == ["28", "(0,", "1)"]  # compiled
    assert child("print(int(filled(np.zeros(8))))") == ["28", "(1,", "0)"]  # loaded
    [entry] = _chain_entries(tmp_path)
    assert b"_reload_parfors" in entry


#: One BFS through bfs.search, whose cached kernel calls two cached parallel kernels; then
#: the hits and misses of search. With SAVE_AFTER set (a glob), search's entry is saved
#: only once a file matches it: the other process's entry is there, and this one replaces it.
SEARCH_CHILD = """import glob, os, time
import numpy as np
from numba.core import caching
from graphsys import jit
from graphsys.kernels import bfs

save = caching.Cache.save_overload


def save_after(self, sig, data):
    wait = os.environ.get("SAVE_AFTER")
    until = time.monotonic() + 600
    while wait and self._py_func is bfs.search.py_func and not glob.glob(wait):
        assert time.monotonic() < until
        time.sleep(0.05)
    return save(self, sig, data)


caching.Cache.save_overload = save_after
ptr, idx = np.array([0, 1, 3, 4]), np.array([1, 0, 2, 1])  # a path 0-1-2
print(bfs.levels(ptr, idx, ptr, idx, False, 0, bfs.NO_LIMIT, 2)[0].tolist(),
      jit.kernel_cache(bfs.search)[1:])
"""


@pytest.mark.slow("full")
def test_two_processes_compiling_bfs_search_leave_an_entry_a_third_loads(tmp_path):
    """The race itself, on an empty cache: a second process starts once the first has
    saved search's parallel steps but not search, so it loads them and compiles search
    beside the first, and saves it last; a third process then loads search before any
    parallel kernel. On the cache before the hook was added, it died with SIGSEGV."""
    env = {**_env(tmp_path), "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    kernels = tmp_path / "numba" / "graphsys" / "kernels"

    def saved(name: str) -> bool:
        return any(kernels.glob(f"bfs-*/bfs.{name}-*.nbi"))

    def start(**extra) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", SEARCH_CHILD], env={**env, **extra},
                                cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)

    def result(proc: subprocess.Popen) -> str:
        out, err = proc.communicate(timeout=900)
        assert proc.returncode == 0 and "[0, 1, 2]" in out, (proc.returncode, err[-3000:])
        return out

    first, second = start(), None
    while first.poll() is None and second is None:
        if saved("_top_down_parallel") and saved("_bottom_up_parallel") and not saved("search"):
            second = start(SAVE_AFTER=str(kernels / "bfs-*" / "bfs.search-*.nbi"))
        time.sleep(0.02)
    result(first)
    if second is None or "(0, 1)" not in result(second):  # search: 0 hits, 1 miss
        pytest.skip("the first process saved search before a second compiled it beside it")
    assert "(1, 0)" in result(start())  # loaded


def test_an_entry_saved_without_the_thread_hook_gets_it_as_it_loads():
    """An entry numba saved without the hook (in a cache written before the check) gets it
    where its machine code calls the threading layer; other code, and any payload not of
    that shape, is left as it is."""
    from numba.core.typed_passes import _reload_parfors

    def payload(code: bytes, hooks: list) -> tuple:
        return (("lib", "object", (code, b"bitcode")), "fndesc", "env", "sig", False, (),
                "ann", hooks, ())

    parallel = b"\x7fELF...\0numba_parallel_for\0do_scheduling_unsigned\0"
    fixed = jit_cache.with_thread_start(payload(parallel, []))
    assert fixed[7] == [_reload_parfors] and fixed[:7] == payload(parallel, [])[:7]
    assert jit_cache.with_thread_start(payload(parallel, [_reload_parfors]))[7] == [
        _reload_parfors]
    serial = payload(b"\x7fELF...\0NRT_MemInfo_call_dtor\0", [])
    assert jit_cache.with_thread_start(serial) is serial
    for other in (None, ("a",), payload(parallel, [])[:8]):
        assert jit_cache.with_thread_start(other) is other


def test_a_killed_writers_temp_file_is_removed_by_the_next_write(tmp_path):
    """A save killed between its temporary file and the rename left ``{path}.{uuid}.tmp``
    for ever; the temporary name now holds the writer's pid, and the next write of the file
    removes those of dead processes (a live writer's is left alone)."""
    dead = subprocess.Popen([sys.executable, "-c", ""])
    dead.wait()
    target = tmp_path / "count_into-1.py312.nbi"
    stale = tmp_path / f".{target.name}.tmp-{dead.pid}-0123abcd"
    live = tmp_path / f".{target.name}.tmp-{os.getpid()}-4567abcd"
    stale.write_bytes(b"half an entry")
    live.write_bytes(b"being written")
    jit_cache.write_atomic(str(target), b"entry", sync=False)
    assert target.read_bytes() == b"entry"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([target.name, live.name])


def test_frame_checks_every_byte():
    body = b"kernel" * 100
    blob = jit_cache.frame(body)
    assert jit_cache.unframe(blob) == body
    for bad in (b"", blob[:10], blob[:-1], blob[:60] + b"x" + blob[61:], b"junk" + blob):
        with pytest.raises(jit_cache.BadEntry):
            jit_cache.unframe(bad)
    with pytest.raises(jit_cache.ForeignEntry):
        jit_cache.unframe(pickle.dumps(("numba's", "own")))


def test_a_directory_open_to_other_users_is_not_used(tmp_path):
    check = jit_cache.open_to_others.__wrapped__  # uncached
    root = tmp_path / "root"
    (root / "storage").mkdir(parents=True)
    assert check(str(root / "storage"), str(root)) is None
    root.chmod(0o777)
    assert "every user" in check(str(root / "storage"), str(root))
    root.chmod(0o755)
    (root / "storage").chmod(0o757)
    assert "every user" in check(str(root / "storage"), str(root))


# -- keys -----------------------------------------------------------------------------

PACKAGE = {
    "__init__.py": "",
    "kern.py": ("import numba\nfrom graphsys import helper\nfrom .consts import K\n"
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                "    from graphsys import typing_only\n"
                "def run():\n    from graphsys import orchestration\n"),
    "helper.py": "import graphsys.sub.deep as deep\nX = 1\n",
    "consts.py": "K = 3\n",
    "sub/__init__.py": "",
    "sub/deep.py": "D = 4\n",
    "orchestration.py": "from graphsys import kern\n",
    "typing_only.py": "T = 0\n",
}


@pytest.fixture
def package(tmp_path, monkeypatch) -> Path:
    """A small package named graphsys whose kernel module (kern.py) imports a helper, a
    constant (relatively) and, through the helper, a subpackage's module; an orchestration
    module imports it."""
    pkg = tmp_path / "graphsys"
    for name, text in PACKAGE.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    monkeypatch.setattr(jit_cache, "PACKAGE", pkg)
    jit_cache.forget()
    yield pkg
    jit_cache.forget()


def _digest(pkg: Path) -> str:
    jit_cache.forget()
    return jit_cache.module_digest(str(pkg / "kern.py"))


def test_module_sources_follow_top_level_imports(package):
    names = {Path(p).relative_to(package).as_posix()
             for p in jit_cache.module_sources(str(package / "kern.py"))}
    assert names == {"kern.py", "helper.py", "consts.py", "__init__.py", "sub/__init__.py",
                     "sub/deep.py"}


@pytest.mark.parametrize(("edited", "changes"), [
    ("orchestration.py", False), ("typing_only.py", False),
    ("kern.py", True), ("helper.py", True), ("consts.py", True), ("sub/deep.py", True),
    ("sub/__init__.py", True)])
def test_a_kernel_modules_key_follows_what_it_compiles_from(package, edited, changes):
    """Editing a module the kernel module does not import (orchestration that imports
    it, one imported only for type checkers or inside a function) leaves its key;
    editing it or anything it imports, directly or transitively (a package whose module
    ``import a.b.c`` reads included), changes it."""
    before = _digest(package)
    assert len(before) == 16 and _digest(package) == before
    with (package / edited).open("a") as f:
        f.write("EDITED = 1\n")
    assert (_digest(package) != before) == changes


def test_no_kernel_module_compiles_from_the_command_line_layer():
    """A commit that touches only the CLI (commands, cli.py) recompiles no kernel."""
    pkg = jit_cache.PACKAGE
    kernel_modules = [p for p in pkg.rglob("*.py") if "cache=True" in p.read_text()]
    assert len(kernel_modules) > 20
    for path in kernel_modules:
        for source in jit_cache.module_sources(str(path)):
            rel = Path(source).relative_to(pkg).as_posix()
            assert not rel.startswith("commands/") and rel != "cli.py", (path, rel)


def test_import_lists_are_kept_across_processes(package, tmp_path):
    """The import lists are written beside the cache; a later process reads them instead
    of parsing, and a file that does not check out is ignored."""
    memo = tmp_path / "memo"
    monkeypatch_memo = jit_cache._ImportMemo()
    old, jit_cache._memo = jit_cache._memo, monkeypatch_memo
    try:
        with_memo = jit_cache.module_digest(str(package / "kern.py"), str(memo))
        saved = memo / f"imports-{jit_cache.FORMAT}"
        entries = json.loads(jit_cache.unframe(saved.read_bytes()))["imports"]
        assert len(entries) == len(PACKAGE) - 2  # kern.py's closure
        fresh = jit_cache._ImportMemo()
        fresh.attach(saved)
        assert fresh.entries == entries
        saved.write_bytes(saved.read_bytes()[:-5])
        broken = jit_cache._ImportMemo()
        broken.attach(saved)
        assert broken.entries == {}
    finally:
        jit_cache._memo = old
    assert with_memo == _digest(package)


def test_the_docs_name_the_import_lists_file():
    """jit_cache's docstring and docs/architecture.md name the import-lists file the cache
    writes: they said ``imports-1`` after the cache format moved to 2."""
    name = f"imports-{jit_cache.FORMAT}"
    page = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
    assert f"``{name}``" in jit_cache.__doc__
    assert f"`{name}`" in page.read_text(encoding="utf-8")
