"""The user's own code named on the command line as ``module:attr`` (a GNN model factory
for ``graphsys gnn train --model``, a vertex program class for ``graphsys run --program``):
imported as Python normally imports (``sys.path``; the current directory under ``python -m``),
with one-line errors."""

from __future__ import annotations

import importlib
from typing import Any

from graphsys.errors import GraphsysError


def load_object(spec: str, what: str) -> Any:
    """The object named ``module:attr`` (``attr`` may be dotted); ``what`` (e.g. ``model``)
    names the option in errors. Raises GraphsysError when the module does not import, has
    no such attribute, or the object is not callable."""
    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        raise GraphsysError(f"{what} {spec!r}: expected a builtin name or module:Factory")
    try:
        obj = importlib.import_module(module)
    except ImportError as exc:
        raise GraphsysError(f"{what} {spec!r}: cannot import {module!r} ({exc})") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise GraphsysError(f"{what} {spec!r}: module {module!r} has no {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise GraphsysError(f"{what} {spec!r}: {attr!r} is not callable")
    return obj
