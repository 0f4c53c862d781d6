"""Argument checks shared by the generators; failures are one-line :class:`GraphsysError`."""

from __future__ import annotations

import math
import numbers

from graphsys.errors import GraphsysError

#: Largest node / edge count accepted (ids and counts stay far from int64 overflow).
MAX_COUNT = 1 << 62


def check_int(value: object, name: str, *, minimum: int = 1, maximum: int = MAX_COUNT) -> int:
    """``value`` as an int in ``[minimum, maximum]``, else a GraphsysError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise GraphsysError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if value < minimum:
        raise GraphsysError(f"{name} must be >= {minimum}, got {value}")
    if value > maximum:
        raise GraphsysError(f"{name} must be <= {maximum}, got {value}")
    return value


def check_float(value: object, name: str, *, minimum: float | None = None,
                maximum: float | None = None, strict_minimum: bool = False) -> float:
    """``value`` as a finite float within the bounds, else a GraphsysError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise GraphsysError(f"{name} must be a finite number, got {value!r}")
    value = float(value)
    if minimum is not None and (value <= minimum if strict_minimum else value < minimum):
        raise GraphsysError(f"{name} must be {'>' if strict_minimum else '>='} {minimum:g}, "
                            f"got {value:g}")
    if maximum is not None and value > maximum:
        raise GraphsysError(f"{name} must be <= {maximum:g}, got {value:g}")
    return value


def check_seed(seed: object, name: str = "seed") -> int:
    """A seed is any integer in ``[0, 2**63)``."""
    return check_int(seed, name, minimum=0, maximum=(1 << 63) - 1)
