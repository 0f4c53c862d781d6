"""``import graphsys`` leaves the environment alone; the OpenMP wait policy (passive, after a
short spin) is applied by the engines' entry points (``graphsys.openmp.apply_wait_policy``),
leaving a user's own settings alone; the top-level API."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROBE = ("import os, graphsys, graphsys.openmp as o; "
         "print(os.environ.get('OMP_WAIT_POLICY'), os.environ.get('GOMP_SPINCOUNT')); "
         "o.apply_wait_policy(); "
         "print(os.environ['OMP_WAIT_POLICY'], os.environ['GOMP_SPINCOUNT'])")


@pytest.mark.parametrize("given, at_import, want", [
    ({}, "None None", "PASSIVE 3000"),
    ({"OMP_WAIT_POLICY": "ACTIVE", "GOMP_SPINCOUNT": "77"}, "ACTIVE 77", "ACTIVE 77"),
])
def test_openmp_wait_settings(given, at_import, want):
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")} | given
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                         text=True, check=True)
    assert out.stdout.split("\n")[-3:-1] == [at_import, want]


def test_peer_environment_drops_only_what_the_policy_set():
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    probe = ("import graphsys.openmp as o, json; o.apply_wait_policy(); "
             "e = o.peer_environment(); "
             "print(json.dumps([e.get('OMP_WAIT_POLICY'), e.get('GOMP_SPINCOUNT')]))")
    for given, want in (({}, "[null, null]"), ({"GOMP_SPINCOUNT": "5"}, '[null, "5"]')):
        out = subprocess.run([sys.executable, "-c", probe], env=env | given,
                             capture_output=True, text=True, check=True)
        assert out.stdout.split("\n")[-2] == want


def test_top_level_api():
    import graphsys
    from graphsys._version import __version__

    assert graphsys.__version__ == __version__
    assert set(graphsys.__all__) == {
        "Execution", "Graph", "__version__", "from_arrow", "from_dgl", "from_networkx",
        "from_numpy", "from_pyg", "from_scipy", "ingest", "open_graph", "to_dgl", "to_networkx",
        "to_pyg", "to_scipy"}
    assert all(hasattr(graphsys, name) for name in graphsys.__all__)
    # conversions live in graphsys.interop only
    assert not any(hasattr(graphsys.Graph, f"to_{k}") for k in ("pyg", "dgl", "scipy",
                                                                 "networkx"))


def test_storage_package_imports_none_of_its_modules():
    """``graphsys.storage``'s ``__init__`` documents and lists its modules, importing none
    (a child importing from it would then close no cycle)."""
    import ast

    import graphsys.storage as storage

    tree = ast.parse(open(storage.__file__).read())
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert "graph" in storage.__all__ and storage.__doc__


#: Internal helpers that once were exported from a package: each lives in its module only.
INTERNAL = {
    "bsp": ["ALGORITHMS", "resolve_device"],
    "embed": ["bucket_order", "config_from_dict", "min_swaps", "plan_buffer"],
    "sampling": ["parse_fanouts", "typed_edges"],
    "analysis": ["BANDS", "GPUS", "MAPPINGS", "WARP", "SimtAccumulator", "demo_step",
                 "resolve_gpu"],
    "generators": ["TableWriter", "default_grid_edges", "max_grid_edges", "node_table_path"],
}


@pytest.mark.parametrize("package", sorted(INTERNAL))
def test_packages_export_entry_points_and_types_not_internals(package):
    import importlib

    module = importlib.import_module(f"graphsys.{package}")
    assert all(hasattr(module, name) for name in module.__all__)
    assert not set(INTERNAL[package]) & set(module.__all__)
    assert not [name for name in INTERNAL[package] if name in vars(module)]


def test_names_are_imported_on_first_use():
    """``import graphsys`` (and the ingest command) imports none of the conversions'
    modules; each name is imported when first looked up."""
    child = ("import sys, graphsys, graphsys.commands.ingest; "
             "before = sorted(m for m in sys.modules if m.startswith('graphsys.interop')); "
             "f = graphsys.from_numpy; "
             "print(before, f.__module__, 'from_numpy' in dir(graphsys))")
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split("\n")[-2] == "[] graphsys.interop.arrays True"
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        import graphsys

        graphsys.nothing  # noqa: B018
