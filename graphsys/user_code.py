"""The user's own code named on the command line as ``module:attr`` (a GNN model factory
for ``graphsys gnn train --model``, a vertex program class for ``graphsys run --program``):
imported as Python imports it, from ``sys.path`` and the current working directory (as
``python -m`` would, also when the ``graphsys`` console script runs), with one-line errors."""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from typing import Any

from graphsys.errors import GraphsysError


def load_object(spec: str, what: str) -> Any:
    """The object named ``module:attr`` (``attr`` may be dotted).

    ``module`` is looked up on ``sys.path`` with the current working directory in front
    for this import (a console-script entry point does not put it there, ``python -m``
    does), so ``mymod:MyProgram`` finds ``./mymod.py``.

    Parameters
    ----------
    spec : str
        ``module:attr``, e.g. ``"mymod:MaxLabel"``.
    what : str
        The option's name in errors (e.g. ``"model"``).

    Returns
    -------
    object
        The callable named by ``spec``.

    Raises
    ------
    GraphsysError
        When the module does not import, has no such attribute, or the object is not
        callable.
    """
    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        raise GraphsysError(f"{what} {spec!r}: expected a builtin name or module:Factory")
    try:
        obj = _import_from_cwd(module)
    except ImportError as exc:
        raise GraphsysError(f"{what} {spec!r}: cannot import {module!r} ({exc})") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise GraphsysError(f"{what} {spec!r}: module {module!r} has no {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise GraphsysError(f"{what} {spec!r}: {attr!r} is not callable")
    return obj


def build(spec: str, what: str, **kwargs) -> Any:
    """``load_object(spec, what)(**kwargs)``, the call checked first: an abstract class, or
    a callable whose signature does not take ``kwargs`` (a class that needs arguments
    where the command passes none), is one line rather than a ``TypeError``. Errors raised
    inside the user's code are the user's, as they are.

    Raises
    ------
    GraphsysError
        As :func:`load_object`, and when ``spec`` cannot be called with ``kwargs``.
    """
    obj = load_object(spec, what)
    if inspect.isabstract(obj):
        raise GraphsysError(f"{what} {spec!r}: {obj.__name__} is abstract (it leaves "
                            f"{', '.join(sorted(obj.__abstractmethods__))} undefined)")
    try:
        inspect.signature(obj).bind(**kwargs)
    except TypeError as exc:
        raise GraphsysError(f"{what} {spec!r} cannot be called with "
                            f"{', '.join(kwargs) or 'no arguments'} ({exc})") from None
    except ValueError:  # no signature to read (some builtins): the call itself tells
        pass
    return obj(**kwargs)


def _import_from_cwd(module: str):
    """``importlib.import_module(module)`` with the current directory first on ``sys.path``
    for the duration of the import (left as it was afterwards)."""
    cwd = os.getcwd()
    if cwd in sys.path or "" in sys.path:
        return importlib.import_module(module)
    sys.path.insert(0, cwd)
    try:
        importlib.invalidate_caches()
        return importlib.import_module(module)
    finally:
        try:
            sys.path.remove(cwd)
        except ValueError:  # the module removed it itself
            pass
