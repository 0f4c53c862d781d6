"""Argument checks shared by the generators: a failure is a one-line
:class:`~graphsys.errors.ParameterError` naming the parameter (the CLI shows the flag that
set it)."""

from __future__ import annotations

from graphsys.errors import check_count

#: Largest node / edge count accepted (ids and counts stay far from int64 overflow).
MAX_COUNT = 1 << 62


def check_int(value: object, name: str, *, minimum: int = 1, maximum: int = MAX_COUNT) -> int:
    """:func:`~graphsys.errors.check_count` with the generators' ceiling."""
    return check_count(name, value, minimum=minimum, maximum=maximum)


def check_seed(seed: object, name: str = "seed") -> int:
    """A seed is any integer in ``[0, 2**63)``."""
    return check_int(seed, name, minimum=0, maximum=(1 << 63) - 1)
