"""The Planetoid files (``ind.<name>.{x,y,tx,ty,allx,ally,graph,test.index}``): the standard
"public" split of Cora, CiteSeer and PubMed (Yang, Cohen & Salakhutdinov, ICML 2016), read
without running any code from them.

All but ``test.index`` are Python 2 pickles: :class:`RestrictedUnpickler` resolves only the
constructors they need (NumPy arrays and dtypes, ``scipy.sparse.csr_matrix``,
``collections.defaultdict``, ``list``) and refuses any other global before it is called;
what is loaded is checked for type and shape. Assembly as in Kipf & Welling's
``gcn/utils.py``: nodes = ``allx`` rows, then the test rows at ``test.index`` (CiteSeer's
gaps get zero features and label -1); train = the first ``len(y)`` nodes, validation = the
next 500, test = ``test.index``; edges from ``graph``, self-loops and duplicates removed,
stored in both directions.
"""

from __future__ import annotations

import importlib
import io
import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graphsys.errors import InputError

#: The parts of a Planetoid dataset, as the registry names its files (``planetoid-<part>``).
PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test-index")

#: (module, name) a Planetoid pickle may reference -> where the object lives today. The
#: pickles were written by Python 2 with NumPy 1.x and SciPy < 1.8.
_ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"): ("numpy._core.multiarray", "numpy.core.multiarray"),
    ("numpy._core.multiarray", "_reconstruct"): ("numpy._core.multiarray",
                                                 "numpy.core.multiarray"),
    ("numpy", "ndarray"): ("numpy",),
    ("numpy", "dtype"): ("numpy",),
    ("scipy.sparse.csr", "csr_matrix"): ("scipy.sparse",),
    ("scipy.sparse._csr", "csr_matrix"): ("scipy.sparse",),
    ("collections", "defaultdict"): ("collections",),
    ("__builtin__", "list"): ("builtins",),
    ("builtins", "list"): ("builtins",),
    ("copy_reg", "_reconstructor"): ("copyreg",),
    ("copyreg", "_reconstructor"): ("copyreg",),
}


class RestrictedUnpickler(pickle.Unpickler):
    """An unpickler that resolves only :data:`_ALLOWED` globals; ``where`` names the file
    in the error raised for anything else."""

    def __init__(self, data: bytes, where: str):
        super().__init__(io.BytesIO(data), encoding="latin1")
        self.where = where

    def find_class(self, module: str, name: str):
        homes = _ALLOWED.get((module, name))
        if homes is None:
            raise InputError(f"refusing to unpickle {module}.{name} (Planetoid files may "
                             f"only hold NumPy arrays, SciPy CSR matrices and lists)",
                             path=self.where)
        for home in homes:
            try:
                return getattr(importlib.import_module(home), name)
            except (ImportError, AttributeError):
                continue
        raise InputError(f"cannot resolve {module}.{name}", path=self.where)


def restricted_load(path: str | Path):
    """Unpickle ``path`` with :class:`RestrictedUnpickler`; one-line error on refusal or on
    a corrupt file."""
    with open(path, "rb") as fh:
        data = fh.read()
    try:
        return RestrictedUnpickler(data, str(path)).load()
    except InputError:
        raise
    except Exception as exc:  # corrupt or truncated pickle data: any unpickling error
        raise InputError(f"not a readable Planetoid pickle ({type(exc).__name__}: "
                         f"{' '.join(str(exc).split())[:200]})", path=path) from None


@dataclass
class PlanetoidData:
    """An assembled Planetoid dataset.

    ``features`` float32 (N, F); ``labels`` int64 (N,) (-1 = no label); ``train_mask``,
    ``val_mask``, ``test_mask`` bool (N,); ``src``/``dst`` int64 (E,) one direction of
    every undirected edge (``src < dst``).
    """

    features: np.ndarray
    labels: np.ndarray
    train_mask: np.ndarray
    val_mask: np.ndarray
    test_mask: np.ndarray
    src: np.ndarray
    dst: np.ndarray

    @property
    def num_nodes(self) -> int:
        return len(self.labels)


def _dense(obj, path: Path, rows: int | None = None) -> np.ndarray:
    import scipy.sparse as sp

    if sp.issparse(obj):
        obj = obj.toarray()
    if not isinstance(obj, np.ndarray) or obj.ndim != 2 or obj.dtype.kind not in "fiub":
        raise InputError(f"expected a 2-D numeric matrix, got {type(obj).__name__}", path=path)
    if rows is not None and obj.shape[0] != rows:
        raise InputError(f"{obj.shape[0]} rows, expected {rows}", path=path)
    return obj.astype(np.float32)


def read_planetoid(paths: dict[str, Path]) -> PlanetoidData:
    """Read and assemble the files ``paths[part]`` for every part of :data:`PARTS`."""
    missing = [p for p in PARTS if p not in paths]
    if missing:
        raise InputError(f"Planetoid files missing: {', '.join(missing)}")
    raw = {p: restricted_load(paths[p]) for p in PARTS if p != "test-index"}
    x, tx, allx = (_dense(raw[p], paths[p]) for p in ("x", "tx", "allx"))
    y, ty, ally = (_dense(raw[p], paths[p], len(m))
                   for p, m in (("y", x), ("ty", tx), ("ally", allx)))
    try:
        test_index = np.array([int(t) for t in Path(paths["test-index"]).read_text().split()],
                              np.int64)
    except ValueError as exc:
        raise InputError(f"not a list of integers ({exc})", path=paths["test-index"]) from None
    if len(test_index) != len(tx):
        raise InputError(f"{len(test_index)} test ids for {len(tx)} test rows",
                         path=paths["test-index"])
    graph = raw["graph"]
    if not isinstance(graph, dict) or not all(
            isinstance(k, int) and isinstance(v, list) for k, v in graph.items()):
        raise InputError("expected a dict of adjacency lists", path=paths["graph"])
    lo, hi = int(test_index.min()), int(test_index.max())
    n = max(hi + 1, len(allx))
    if lo < len(allx):
        raise InputError(f"test ids start at {lo}, inside the {len(allx)} allx rows",
                         path=paths["test-index"])
    features = np.zeros((n, x.shape[1]), np.float32)
    onehot = np.zeros((n, y.shape[1]), np.float32)
    features[:len(allx)], onehot[:len(allx)] = allx, ally
    features[test_index], onehot[test_index] = tx, ty
    labels = np.where(onehot.sum(1) > 0, onehot.argmax(1), -1).astype(np.int64)
    masks = [np.zeros(n, bool) for _ in range(3)]
    masks[0][:len(y)] = True
    masks[1][len(y):len(y) + 500] = True
    masks[2][test_index] = True
    pairs = [(int(u), int(v)) for u, nbrs in graph.items() for v in nbrs]
    e = np.array(pairs, np.int64).reshape(-1, 2)
    if len(e) and (e.min() < 0 or e.max() >= n):
        raise InputError(f"node ids outside 0..{n - 1}", path=paths["graph"])
    e = e[e[:, 0] != e[:, 1]]
    e = np.unique(np.sort(e, axis=1), axis=0)
    return PlanetoidData(features, labels, *masks, e[:, 0].copy(), e[:, 1].copy())
