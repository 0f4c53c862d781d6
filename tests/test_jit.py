"""graphsys kernels cache under one directory per kernel module and digest of what it
compiles from, shared by every install of the same sources (read-only ones included);
NUMBA_CACHE_DIR, when set, holds them (under graphsys/)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from graphsys import jit, jit_cache

REPO = Path(__file__).resolve().parents[1]

#: A child that calls one small kernel and says where it is cached and what it cost.
CHILD = """
import json, numpy as np, graphsys
from graphsys import jit
from graphsys.storage.kernels import count_into
counts = np.zeros(4, np.int64)
count_into(np.array([1, 2, 2], np.int32), counts)
path, hits, misses = jit.kernel_cache(count_into)
print(json.dumps({"path": path, "hits": hits, "misses": misses, "counts": counts.tolist(),
                  "package": graphsys.__file__,
                  "digest": jit.kernel_dir(count_into.py_func.__code__.co_filename)}))
"""


def _install(root: Path) -> Path:
    """A read-only copy of the packages at a new path (a fresh install)."""
    for package in ("graphsys", "partitioners"):
        shutil.copytree(REPO / package, root / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    for path in [root, *root.rglob("*")]:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    return root


def _child(install: Path, cache: Path, cwd: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "PYTHONPATH")}
    env.update(PYTHONPATH=str(install), XDG_CACHE_HOME=str(cache), PYTHONDONTWRITEBYTECODE="1")
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=cwd, capture_output=True,
                         text=True, timeout=600, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_read_only_installs_share_one_cache(tmp_path):
    """The first install compiles into XDG_CACHE_HOME/graphsys/numba/storage/kernels-DIGEST
    (its package directory is read-only: nothing is written beside the sources); a second
    install of the same sources at another path loads the kernel instead of compiling it."""
    cache = tmp_path / "cache"
    first = _child(_install(tmp_path / "a"), cache, tmp_path)
    assert first["package"].startswith(str(tmp_path / "a"))
    assert first["counts"] == [0, 1, 2, 0] and first["misses"] == 1
    from graphsys.storage import kernels

    digest = jit_cache.module_digest(str(Path(kernels.__file__).resolve()))
    expected = cache / "graphsys" / "numba" / "storage" / f"kernels-{digest}"
    assert first["digest"] == first["path"] == str(expected)
    assert list(expected.glob("kernels.count_into-*.nbi"))
    assert not list((tmp_path / "a").rglob("*.nbi"))
    second = _child(_install(tmp_path / "b"), cache, tmp_path)
    assert second["package"].startswith(str(tmp_path / "b"))
    assert (second["hits"], second["misses"]) == (1, 0) and second["path"] == first["path"]


def test_numba_cache_dir_wins(monkeypatch):
    """With NUMBA_CACHE_DIR set (as the test suite runs), kernels cache there, under
    graphsys/, keyed as everywhere else."""
    from graphsys.storage.kernels import count_into

    path, _, _ = jit.kernel_cache(count_into)
    root = os.environ.get("NUMBA_CACHE_DIR")
    assert Path(path).is_relative_to(jit.cache_root())
    if root:
        assert jit.cache_root() == Path(root) / "graphsys"


def test_locator_is_installed_for_graphsys_sources_only():
    import numba

    assert jit.install()  # idempotent: import graphsys installed it already

    @numba.njit(cache=True)
    def outside(x):  # this test file is not graphsys's: numba's own locators decide
        return x + 1

    assert outside(1) == 2
    assert not Path(outside.stats.cache_path).is_relative_to(jit.cache_root())


def test_gc_paused_nests_and_restores_the_collector():
    """The collector is off within (nested) blocks and back on after the last one, unless it
    was off before the first."""
    import gc

    assert gc.isenabled()
    with jit.gc_paused():
        with jit.gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with jit.gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_freeze_long_lived_freezes_now_and_after_each_pause():
    """After freeze_long_lived (in a process of its own: it is for the whole process), the
    objects alive then and those made within a later gc_paused block are in the permanent
    generation; objects made outside a block are not."""
    import subprocess
    import sys

    code = """if True:
        import gc
        from graphsys import jit
        assert gc.get_freeze_count() == 0
        jit.freeze_long_lived()
        n = gc.get_freeze_count()
        assert n > 0
        young = [[] for _ in range(50)]
        assert gc.get_freeze_count() == n
        with jit.gc_paused():
            kept = [[] for _ in range(1000)]
        assert gc.get_freeze_count() >= n + 1050 and gc.isenabled()
        print("ok")
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr


def test_start_up_checks_blas_without_importing_scipy_linalg():
    """numba's start-up (``kernels.start_up``) leaves ``scipy.linalg`` unimported and
    ``cython_blas`` unlisted; numba found a BLAS, and a later import of ``cython_blas``
    goes through its package and gets the one module."""
    child = ("import sys, json; from graphsys.storage import kernels; kernels.start_up(); "
             "before = ['scipy.linalg' in sys.modules, "
             "'scipy.linalg.cython_blas' in sys.modules]; "
             "import numba.np.arraymath as am, scipy.linalg.cython_blas as cb, scipy.linalg; "
             "print(json.dumps(before + [am._HAVE_BLAS, scipy.linalg.cython_blas is cb, "
             "'dgemm' in cb.__pyx_capi__]))")
    assert json.loads(_stdout(child).strip().splitlines()[-1]) == [False, False, True, True,
                                                                   True]


def test_import_graphsys_defers_numba_and_installs_the_locator_when_it_loads():
    """``import graphsys`` leaves numba unimported (a command may read its input first);
    the first import of numba installs the locators (first and last) and the cache's load
    and save before any kernel is defined (docs/architecture.md lists exactly these)."""
    child = ("import sys, graphsys; before = 'numba' in sys.modules; "
             "from graphsys.storage.kernels import count_into; "
             "from numba.core import caching; from graphsys import jit; "
             "impl = getattr(caching, 'CacheImpl', None) or caching._CacheImpl; "
             "first, last = jit.locator_classes(); classes = impl._locator_classes; "
             "print(before, classes[0] is first, classes[-1] is last, "
             "caching.Cache.load_overload.graphsys, caching.Cache.save_overload.graphsys)")
    assert _stdout(child).split() == ["False", "True", "True", "True", "True"]


def _stdout(code: str) -> str:
    """What a fresh interpreter running ``code`` prints."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600, check=True).stdout


def test_a_cached_kernel_loads_without_numbas_registries():
    """A graphsys kernel loaded from the cache skips numba's refresh of its CPU target (the
    typing and lowering registries, some 90 modules): numba's heapq and typed
    dict support stay unimported, and so does ``scipy.linalg`` when a loaded kernel's
    environment imports ``numba.np.arraymath`` (``np.arange``). The loaded code
    runs right, and a function compiled afterwards (the compiler refreshes) does too."""
    import numpy as np

    from graphsys.storage import kernels

    key = np.array([3 << 8 | 1, 1 << 8 | 2, 1 << 8 | 1], np.uint64)
    kernels.radix_sort_edges(key.copy(), np.zeros(0, np.int32), 8, 0, np.empty(3, np.int64))
    kernels.count_into(np.zeros(1, np.int64), np.zeros(1, np.int64))  # both cached now
    child = """if True:
        import json, sys
        import numpy as np
        from graphsys import jit
        from graphsys.storage import kernels
        kernels.start_up()
        key = np.array([3 << 8 | 1, 1 << 8 | 2, 1 << 8 | 1], np.uint64)
        order = np.empty(3, np.int64)
        kernels.radix_sort_edges(key, np.zeros(0, np.int32), 8, 0, order)
        loaded = [m in sys.modules for m in ("numba.cpython.heapq", "numba.typed.typeddict",
                                             "scipy.linalg")]
        hits = [jit.kernel_cache(k)[1] for k in (kernels.count_into, kernels.radix_sort_edges)]
        import numba

        @numba.njit
        def total(x):
            return np.sum(x) + len(str(3))

        print(json.dumps([key.tolist(), order.tolist(), loaded, hits,
                          int(total(np.arange(4)))]))
    """
    got = json.loads(_stdout(child).strip().splitlines()[-1])
    assert got[0] == [1 << 8 | 1, 1 << 8 | 2, 3 << 8 | 1] and got[1] == [2, 1, 0]
    assert got[2] == [False, False, False]
    assert got[3] == [1, 1]
    assert got[4] == 7


def test_compilations_of_graphsys_kernels_are_counted_and_told_once_outermost(monkeypatch):
    import numba

    from graphsys import progress

    told = []
    monkeypatch.setattr(progress, "compile_started", lambda m: told.append(("start", m)))
    monkeypatch.setattr(progress, "compile_ended", lambda m, k: told.append(("end", m, k)))
    assert jit.watch_compiles()

    def inner(x):
        return x * 2

    def outer(x):
        return kernel_inner(x) + 1

    inner.__module__ = outer.__module__ = "graphsys.storage.kernels"
    kernel_inner = numba.njit(inner)
    kernel_outer = numba.njit(outer)
    before = jit.compile_totals()
    assert kernel_outer(3) == 7 and kernel_outer(4) == 9  # the second call compiles nothing
    after = jit.compile_totals()
    assert after["kernels"] - before["kernels"] == 2  # outer and the inner it calls
    assert after["seconds"] > before["seconds"]
    assert told == [("start", "graphsys.storage.kernels"),
                    ("end", "graphsys.storage.kernels", 2)]


def test_the_off_switch_leaves_numba_as_it_is(tmp_path):
    """With GRAPHSYS_KERNEL_CACHE=numba, ``import graphsys`` puts no finder on sys.meta_path
    and numba's cache keeps its own locators, load and save (docs/architecture.md says how
    to turn the patch off); a kernel still runs, cached where numba's defaults put it. An
    unknown value is said in one line and the patch is installed as usual."""
    code = ("import json, sys, numpy as np, graphsys; from graphsys import jit; "
            "hook = any(isinstance(f, jit._NumbaHook) for f in sys.meta_path); "
            "from graphsys.storage.kernels import count_into; "
            "from numba.core import caching; "
            "impl = getattr(caching, 'CacheImpl', None) or caching._CacheImpl; "
            "ours = [c for c in impl._locator_classes if c.__module__ == 'graphsys.jit']; "
            "c = np.zeros(4, np.int64); count_into(np.array([1, 2, 2], np.int32), c); "
            "print(json.dumps([hook, len(ours), "
            "getattr(caching.Cache.load_overload, 'graphsys', False), c.tolist(), "
            "jit.kernel_cache(count_into)[0]]))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(REPO), NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONDONTWRITEBYTECODE="1")
    runs = {}
    for value in ("numba", "bogus"):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=600, check=True, env={**env,
                                                            "GRAPHSYS_KERNEL_CACHE": value})
        runs[value] = (json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr)
    (hook, ours, patched, counts, where), said = runs["numba"]
    assert (hook, ours, patched, counts) == (False, 0, False, [0, 1, 2, 0]) and not said
    assert where.startswith(str(tmp_path / "cache"))  # numba's NUMBA_CACHE_DIR locator
    assert not where.startswith(str(tmp_path / "cache" / "graphsys"))
    (hook, ours, patched, counts, where), said = runs["bogus"]
    assert (hook, ours, patched, counts) == (True, 2, True, [0, 1, 2, 0])
    assert where.startswith(str(tmp_path / "cache" / "graphsys"))
    assert "GRAPHSYS_KERNEL_CACHE" in said and "neither 'graphsys' nor 'numba'" in said


#: A child that imports a module a kernel module compiles from, edits its file, then
#: imports the kernel module and says its cache directory.
EDIT_AFTER_IMPORT = """
import sys
from pathlib import Path
import graphsys.prefetch
from graphsys import jit
if sys.argv[1] == "edit":
    with open(graphsys.prefetch.__file__, "a") as f:
        f.write("EDITED = 1\\n")
from graphsys.storage import kernels
print(jit.kernel_dir(kernels.__file__))
"""


def test_a_file_edited_after_its_import_keys_no_cache_entry(tmp_path):
    """The digest is taken from the bytes each module was imported from: a process that
    imported ``prefetch`` before its file was edited compiles ``storage.kernels`` from
    the old code, and keys it as a process of the old sources does, not the edited ones
    (whose processes would load that stale code)."""
    install = tmp_path / "install"
    for package in ("graphsys", "partitioners"):
        shutil.copytree(REPO / package, install / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(install), NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONDONTWRITEBYTECODE="1")

    def child(what: str) -> str:
        out = subprocess.run([sys.executable, "-c", EDIT_AFTER_IMPORT, what], env=env,
                             cwd=tmp_path, capture_output=True, text=True, timeout=600,
                             check=True)
        return out.stdout.strip().splitlines()[-1]

    old = child("keep")
    edited_in_flight = child("edit")  # imported old bytes, then edited the file
    assert edited_in_flight == old
    assert child("keep") != old  # a process of the edited sources has a key of its own


#: A child that calls the neighbour sampler's count kernel in the variant ``argv[1]`` names
#: and says whether that call compiled it (and then whether its code is the parallel one) or
#: loaded it.
TWINS = """
import json, sys, numpy as np, graphsys
from graphsys.sampling import _kernels as K
kernel = K.count_picks_par if sys.argv[1] == "par" else K.count_picks_ser
out = np.empty(2, np.int64)
kernel(np.array([0, 2, 5], np.int64), np.array([0, 1], np.int64), 1, False, out)
(sig,) = kernel.signatures
misses = sum(kernel.stats.cache_misses.values())
print(json.dumps({"counts": out.tolist(), "hits": sum(kernel.stats.cache_hits.values()),
                  "misses": misses,  # compiled here: whether its code runs parallel loops
                  "parallel": "__gufunc__" in kernel.overloads[sig].library.get_llvm_str()
                  if misses else None}))
"""


def test_twin_kernels_of_one_function_cache_apart(tmp_path):
    """The samplers compile each kernel twice from one Python function (``parallel=True``
    and a serial ``nogil`` twin), which numba would cache under the same files and keys:
    the serial one compiled first then loaded where the parallel one was asked for. Each
    twin's entries are keyed by its options: a process asking for the parallel kernel
    after another compiled the serial one compiles its own, and the next loads it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(REPO), NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONDONTWRITEBYTECODE="1")

    def child(variant: str) -> dict:
        out = subprocess.run([sys.executable, "-c", TWINS, variant], env=env, timeout=600,
                             capture_output=True, text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    first, second, third = child("ser"), child("par"), child("par")
    assert first["counts"] == second["counts"] == third["counts"] == [1, 1]
    assert (first["misses"], first["parallel"]) == (1, False)
    assert (second["hits"], second["misses"], second["parallel"]) == (0, 1, True)
    assert (third["hits"], third["misses"]) == (1, 0)  # the parallel twin's own entry
