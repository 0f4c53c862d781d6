"""The rule every output path follows: no existing file is replaced unasked, and nothing is
written inside a graph or checkpoint directory.

:func:`check_output` is called on each output path before any work starts: an existing
path is refused in one line unless the caller allows replacing it (``overwrite``), and a
path that is or lies inside a graphsys graph directory (``manifest.json``), an embedding or
GNN checkpoint (``checkpoint.json``, ``model.json``) or a GNN embedding directory
(``embeddings.json``) is refused even with ``overwrite``: a file written there can replace
the manifest, or be an unlisted file that the checkpoint's reader refuses. A command with
several outputs checks them together (:func:`check_outputs`). A checked path is an
:class:`OutputPath`, which remembers ``overwrite``, so a library function handed it checks
it again with the caller's choice.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from graphsys.errors import GraphsysError, ParameterError

#: Marker files of the directories outputs stay out of: file name -> (format name that its
#: ``"format"`` field holds, what the directory is called in messages).
PROTECTED_MARKERS = {
    "manifest.json": ("graphsys-graph", "graph"),
    "checkpoint.json": ("graphsys-embeddings", "checkpoint"),
    "model.json": ("graphsys-gnn-checkpoint", "checkpoint"),
    "embeddings.json": ("graphsys-gnn-embeddings", "embedding"),
}
#: Bytes of a marker file read to find its ``"format"`` field (written first by graphsys).
_HEAD_BYTES = 4096


class OutputPath(type(Path())):  # type: ignore[misc]
    """A checked output path (:func:`check_output`): a :class:`~pathlib.Path` that also
    carries ``overwrite``, whether its caller allows replacing an existing file."""

    overwrite: bool = False


def _marker_kind(directory: Path) -> str | None:
    """What ``directory`` is (``graph``, ``checkpoint``, ``embedding``) when it holds a
    graphsys marker file, else None."""
    for name, (fmt, kind) in PROTECTED_MARKERS.items():
        try:
            with open(directory / name, "rb") as f:
                head = f.read(_HEAD_BYTES).decode("utf-8", "replace")
        except OSError:
            continue
        if re.search(r'"format"\s*:\s*"' + re.escape(fmt) + '"', head):
            return kind
    return None


def protected_directory(path: str | os.PathLike) -> tuple[Path, str] | None:
    """The graph, checkpoint or embedding directory that ``path`` is or lies inside (the
    nearest one, with its kind), or None. Symbolic links are followed before ``..`` is
    taken (``link/../x`` with ``link`` a graph's subdirectory lies inside the graph), and
    the directory is given resolved."""
    here = Path(os.path.realpath(path))
    for directory in (here, *here.parents):
        if directory.is_dir():
            kind = _marker_kind(directory)
            if kind is not None:
                return directory, kind
    return None


def check_output(path: str | os.PathLike, *, overwrite: bool = False,
                 name: str = "out") -> OutputPath:
    """Check the output path ``path`` against the rule of this module and return it as an
    :class:`OutputPath`.

    Parameters
    ----------
    path : str or path-like
        The file the output will be written to (an existing directory is refused; a
        directory a command creates is :func:`check_output_directory`'s). An
        :class:`OutputPath` keeps the ``overwrite`` it was checked with.
    overwrite : bool
        Allow replacing an existing ``path``.
    name : str
        The parameter that gave ``path``, named by the messages.

    Returns
    -------
    OutputPath
        ``path``, carrying ``overwrite``.

    Raises
    ------
    GraphsysError
        ``path`` is or lies inside a graph, checkpoint or embedding directory, or is a
        directory, a device, a FIFO or a socket (directly or through a symlink).
    ParameterError
        ``path`` exists and ``overwrite`` is not set.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys.outputs import check_output
    >>> root = tempfile.mkdtemp()
    >>> g = graphsys.from_numpy(np.array([0, 1]), np.array([1, 2]), root + "/g")
    >>> check_output(root + "/pr.parquet").overwrite
    False
    >>> check_output(root + "/g/manifest.json", overwrite=True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    graphsys.errors.GraphsysError: .../g/manifest.json: inside the graph directory .../g; ...
    """
    allowed = bool(overwrite or getattr(path, "overwrite", False))
    out = OutputPath(path)
    out.overwrite = allowed
    _refuse_inside(path, protected_directory(out))
    if out.is_dir():  # a file cannot replace it, with overwrite or not
        raise GraphsysError(f"{path}: is a directory, where a file is written (choose "
                            f"another {name} path)")
    if out.exists() and not out.is_file():  # /dev/null, /dev/stdout: renamed over, as root
        raise GraphsysError(f"{path}: is not a regular file (a device, a FIFO or a socket), "
                            f"where a file is written: an output replaces a regular file "
                            f"only (choose another {name} path)")
    if (out.exists() or out.is_symlink()) and not allowed:
        raise ParameterError("overwrite", f"is needed to replace {path}, which already "
                                          f"exists (or choose another {name} path)")
    return out


def check_parent(path: str | os.PathLike, label: str | None = None) -> None:
    """Refuse, in one line, a file output whose directory does not exist or is a file
    (``label``: how the message names ``path``; default ``path`` itself)."""
    parent = Path(path).parent
    if not parent.is_dir():
        why = f"{parent} is a file" if parent.exists() else f"directory {parent} does not exist"
        raise GraphsysError(f"{label or path}: {why}")


def check_output_directory(path: str | os.PathLike) -> Path:
    """Refuse, in one line, a directory that a command creates or fills (a checkpoint, an
    embedding directory, a graph) inside a graph, checkpoint or embedding directory; whether
    an existing ``path`` is resumed, refused or replaced is the command's own rule.

    Parameters
    ----------
    path : str or path-like
        The directory to create or fill.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    GraphsysError
        A parent of ``path`` is a graph, checkpoint or embedding directory.

    Examples
    --------
    >>> import tempfile
    >>> from graphsys.outputs import check_output_directory
    >>> check_output_directory(tempfile.mkdtemp() + "/ck").name
    'ck'
    """
    path = Path(path)
    _refuse_inside(path, protected_directory(Path(os.path.realpath(path)).parent))
    return path


def _refuse_inside(path, inside: tuple[Path, str] | None) -> None:
    if inside is not None:
        root, kind = inside
        raise GraphsysError(f"{path}: inside the {kind} directory {root}; outputs are "
                            f"written outside graph and checkpoint directories")


def check_outputs(outputs, *, overwrite: bool = False) -> list[Path | None]:
    """Check every output of one command before any work starts: each path by the rule of
    this module, and the paths against each other.

    Two outputs may not name the same file (after ``..`` and symbolic links are resolved),
    and no output may lie inside a directory that another output of the same command
    creates (a checkpoint, an export directory): one would replace or pollute the other
    after the work is done.

    Parameters
    ----------
    outputs : iterable of (str, path or None, str)
        ``(name, path, kind)`` per output, ``kind`` ``"file"`` (:func:`check_output`:
        an existing file only with ``overwrite``) or ``"directory"``
        (:func:`check_output_directory`: the command's own rule decides about an existing
        one); ``name`` (a parameter, or the flag that set it) is named by the messages. A
        None path is skipped.
    overwrite : bool, default False
        Allow replacing existing files.

    Returns
    -------
    list of Path or None
        The checked paths in the order given (files as :class:`OutputPath`).

    Raises
    ------
    GraphsysError
        Two outputs name one file, an output lies inside another one's directory, or an
        output lies inside a graph, checkpoint or embedding directory.
    ParameterError
        A file exists and ``overwrite`` is not set.

    Examples
    --------
    >>> import tempfile
    >>> from graphsys.outputs import check_outputs
    >>> d = tempfile.mkdtemp()
    >>> check_outputs([("report", d + "/r.json", "file"), ("trace", d + "/./r.json", "file")])
    Traceback (most recent call last):
    ...
    graphsys.errors.GraphsysError: report and trace both name .../r.json: give each output ...
    """
    outputs = list(outputs)
    items = [(name, path, kind) for name, path, kind in outputs if path is not None]
    real = [Path(os.path.realpath(path)) for _, path, _ in items]
    for a, (name_a, path_a, _) in enumerate(items):
        for b, (name_b, path_b, kind_b) in enumerate(items):
            if b > a and (real[a] == real[b] or _same_file(real[a], real[b])):
                raise GraphsysError(f"{name_a} and {name_b} both name {real[a]}: give each "
                                    f"output a path of its own")
            if kind_b == "directory" and real[b] in real[a].parents:
                raise GraphsysError(f"{name_a} {path_a} lies inside {path_b}, the directory "
                                    f"{name_b} creates: write it outside")
    checked = [check_output_directory(path) if kind == "directory" else
               check_output(path, overwrite=overwrite, name=name.lstrip("-"))
               for name, path, kind in items]
    it = iter(checked)
    return [None if path is None else next(it) for _, path, _ in outputs]


def _same_file(a: Path, b: Path) -> bool:
    """Two existing paths of one file (hard links)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_own_directory(path: str | os.PathLike, *, what: str = "this output") -> Path:
    """Refuse, in one line, a directory that a command writes as its own (a GNN run, an
    embedding directory) when it is, or lies inside, a graph, checkpoint or embedding
    directory: unlike :func:`check_output_directory`, ``path`` itself is checked too.

    Parameters
    ----------
    path : str or path-like
        The directory to create or fill.
    what : str
        What is written there, for the message.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    GraphsysError
        ``path`` is or lies inside a graph, checkpoint or embedding directory.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys.outputs import check_own_directory
    >>> root = tempfile.mkdtemp()
    >>> check_own_directory(root + "/run").name
    'run'
    >>> g = graphsys.from_numpy(np.array([0, 1]), np.array([1, 2]), root + "/g")
    >>> check_own_directory(root + "/g", what="a run")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    graphsys.errors.GraphsysError: .../g: is the graph directory .../g; a run is written ...
    """
    found = protected_directory(path)
    if found is not None:
        root, kind = found
        where = (f"is the {kind} directory {root}" if Path(os.path.realpath(path)) == root
                 else f"lies inside the {kind} directory {root}")
        raise GraphsysError(f"{path}: {where}; {what} is written outside graph and "
                            f"checkpoint directories (choose another directory)")
    return Path(path)
