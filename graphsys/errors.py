"""Errors that graphsys reports to users as one line and a non-zero exit code."""

from __future__ import annotations

import math
from numbers import Integral, Real


class GraphsysError(Exception):
    """A user-facing failure: bad input, a bad option, a corrupt graph directory.

    The CLI prints ``error: <message>`` on one line and exits with :attr:`exit_code`;
    no traceback. Messages name the file, line or field at fault.
    """

    exit_code = 2


class InputError(GraphsysError):
    """Malformed or unusable input data (edge lists, node tables, configs)."""

    def __init__(self, message: str, *, path: object | None = None, line: int | None = None):
        where = ""
        if path is not None:
            where = f"{path}"
            if line is not None:
                where += f":{line}"
            where += ": "
        super().__init__(where + message)
        self.path = path
        self.line = line


class FormatError(GraphsysError):
    """A graph directory that is missing, corrupt, truncated or of an unknown version."""

    exit_code = 3


class ConfigError(GraphsysError):
    """A config file, key or value that cannot be used; the message starts with the key."""


class ParameterError(GraphsysError):
    """A function or config parameter with a value that cannot be used.

    The library names the *parameter* (``max_iters must be a positive integer, got 0``); it
    never names a command-line flag. The CLI (:func:`graphsys.cli.main`) rewrites the leading
    parameter name into the flag that set it (``--max-iters must be ...``) when the command
    has one, so users of either surface read their own vocabulary.

    Parameters
    ----------
    parameter : str
        The parameter's name as the library spells it (``max_iters``).
    message : str
        The rest of the sentence, without the name (``must be positive, got 0``).

    Examples
    --------
    >>> from graphsys.errors import ParameterError
    >>> str(ParameterError("max_iters", "must be a positive integer, got 0"))
    'max_iters must be a positive integer, got 0'
    """

    def __init__(self, parameter: str, message: str):
        super().__init__(f"{parameter} {message}")
        self.parameter = parameter
        self.message = message


def check_count(name: str, value, *, minimum: int = 1, maximum: int | None = None) -> int:
    """``value`` as an ``int`` (NumPy integers included, a bool not) when it is an integer
    of at least ``minimum`` and at most ``maximum`` (when given), else a one-line
    :class:`ParameterError` naming ``name`` (the ceiling is named when it is passed).

    >>> check_count("k", 3), check_count("radius", 0, minimum=0)
    (3, 0)
    >>> check_count("features", 70000, minimum=0, maximum=65536)
    Traceback (most recent call last):
    ...
    graphsys.errors.ParameterError: features must be a non-negative integer <= 65536, got 70000
    >>> check_count("k", 9, minimum=3, maximum=8)
    Traceback (most recent call last):
    ...
    graphsys.errors.ParameterError: k must be an integer from 3 to 8, got 9
    """
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum or (
            maximum is not None and value > maximum):
        what = {1: "a positive integer", 0: "a non-negative integer"}.get(
            minimum, f"an integer >= {minimum}")
        if maximum is not None and isinstance(value, Integral) and value > maximum:
            what = (f"{what} <= {maximum}" if minimum in (0, 1)
                    else f"an integer from {minimum} to {maximum}")
        raise ParameterError(name, f"must be {what}, got {_shown(value)}")
    return int(value)


def check_real(name: str, value, *, low: float | None = None, high: float | None = None,
               low_open: bool = False, high_open: bool = False) -> float:
    """``value`` as a ``float`` when it is a finite real number (NumPy's included, a bool
    not) within the bounds given (``low <= value <= high``; ``<`` on an open side), else a
    one-line :class:`ParameterError` naming ``name``; NaN fails every bound.

    >>> check_real("damping", 0.85, low=0, high=1, low_open=True, high_open=True)
    0.85
    >>> check_real("tol", float("nan"), low=0, low_open=True)
    Traceback (most recent call last):
    ...
    graphsys.errors.ParameterError: tol must be a finite number > 0, got nan
    >>> check_real("tol", 10**400)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    graphsys.errors.ParameterError: tol must be a finite number, got 10000...000... (401 characters)
    """
    try:
        f = float(value) if isinstance(value, Real) and not isinstance(value, bool) else math.nan
    except OverflowError:  # an int beyond float's range
        f = math.nan
    if not (math.isfinite(f) and (low is None or (low < f if low_open else low <= f))
            and (high is None or (f < high if high_open else f <= high))):
        if low is not None and high is not None:
            bound = f" in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        elif low is not None or high is not None:
            bound = (f" {'>' if low_open else '>='} {low:g}" if high is None
                     else f" {'<' if high_open else '<='} {high:g}")
        else:
            bound = ""
        raise ParameterError(name, f"must be a finite number{bound}, got {_shown(value)}")
    return f


def _shown(value) -> str:
    """``repr(value)`` for a one-line message, cut where it is long (10**400 has 401
    digits)."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:40]}... ({len(text)} characters)"


def first_bool(values):
    """The first bool (Python's or NumPy's) among the items of a list or tuple ``values``
    (nested ones included), else None. ``np.asarray([True, 2])`` is ``[1, 2]``: a bool
    among integers would pass as the integer 1, so a reader of integers (ids, counts)
    refuses what this finds.

    >>> first_bool([3, (4, True)]), first_bool([3, 4]), first_bool(None)
    (True, None, None)
    """
    stack = [values] if isinstance(values, (list, tuple)) else []
    while stack:
        for v in stack.pop():
            if isinstance(v, bool) or (getattr(v, "dtype", None) == bool
                                       and getattr(v, "shape", None) == ()):  # NumPy's
                return bool(v)
            if isinstance(v, (list, tuple)):
                stack.append(v)
    return None


def check_flag(name: str, value) -> bool:
    """``value`` as a ``bool`` when it is one (NumPy's included), else a one-line
    :class:`ParameterError` naming ``name`` (a string such as ``"no"`` is not read as
    true).

    >>> check_flag("fuse", False)
    False
    """
    numpy_bool = getattr(value, "dtype", None) == bool and getattr(value, "shape", None) == ()
    if not (isinstance(value, bool) or numpy_bool):
        raise ParameterError(name, f"must be True or False, got {value!r}")
    return bool(value)


class ConvergenceWarning(UserWarning):
    """An iterative algorithm stopped at its iteration limit before its convergence rule
    held: the values returned are the last iterate (``result.stats.converged`` is False).
    The CLI refuses such a run instead, unless told to keep it.

    Examples
    --------
    >>> import tempfile, warnings, numpy as np, graphsys
    >>> from graphsys import bsp
    >>> from graphsys.errors import ConvergenceWarning
    >>> g = graphsys.from_numpy(np.array([1, 1, 2, 3]), np.array([2, 3, 3, 1]),
    ...                         tempfile.mkdtemp() + "/g")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always", ConvergenceWarning)
    ...     result = bsp.pagerank(g, tol=1e-15, max_iters=2)
    >>> result.stats.converged, caught[0].category.__name__
    (False, 'ConvergenceWarning')
    >>> with warnings.catch_warnings():  # an unconverged run as an error
    ...     warnings.simplefilter("error", ConvergenceWarning)
    ...     bsp.pagerank(g, tol=1e-15, max_iters=2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    graphsys.errors.ConvergenceWarning: pagerank did not converge within 2 supersteps ...
    """
