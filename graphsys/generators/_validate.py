"""Argument checks shared by the generators: a failure is a one-line
:class:`~graphsys.errors.ParameterError` naming the parameter (the CLI shows the flag that
set it)."""

from __future__ import annotations

import numbers

from graphsys.errors import ParameterError

#: Largest node / edge count accepted (ids and counts stay far from int64 overflow).
MAX_COUNT = 1 << 62


def check_int(value: object, name: str, *, minimum: int = 1, maximum: int = MAX_COUNT) -> int:
    """``value`` as an int in ``[minimum, maximum]``, else a ParameterError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterError(name, f"must be an integer, got {value!r}")
    value = int(value)
    if value < minimum:
        raise ParameterError(name, f"must be >= {minimum}, got {value}")
    if value > maximum:
        raise ParameterError(name, f"must be <= {maximum}, got {value}")
    return value


def check_seed(seed: object, name: str = "seed") -> int:
    """A seed is any integer in ``[0, 2**63)``."""
    return check_int(seed, name, minimum=0, maximum=(1 << 63) - 1)
