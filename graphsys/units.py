"""Parsing of user-facing quantities (byte sizes)."""

from __future__ import annotations

import re

from graphsys.errors import GraphsysError

_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3, "gb": 1000**3,
    "t": 1000**4, "tb": 1000**4,
    "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4,
}


def parse_size(text: str | int, *, field: str = "size") -> int:
    """A byte count from a size such as ``"2GB"``, ``"512MiB"``, ``"1e9"`` or an int.

    Decimal units (KB, MB, GB, TB: powers of 1000) and binary units (KiB, MiB, GiB, TiB);
    case is ignored.

    Parameters
    ----------
    text : str or int
        The size.
    field : str, default "size"
        What the size is for, named in errors.

    Returns
    -------
    int
        Bytes, positive.

    Raises
    ------
    GraphsysError
        A size that cannot be parsed, or not positive.

    Examples
    --------
    >>> from graphsys.units import parse_size
    >>> parse_size("2GB"), parse_size("512MiB"), parse_size(4096)
    (2000000000, 536870912, 4096)
    """
    if isinstance(text, int):
        value = text
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][0-9]+)?)\s*([a-zA-Z]*)\s*", str(text))
        if not m or m.group(2).lower() not in _SIZE_UNITS:
            raise GraphsysError(f"{field}: cannot parse size {text!r} (examples: 2GB, 512MiB)")
        value = int(float(m.group(1)) * _SIZE_UNITS[m.group(2).lower()])
    if value <= 0:
        raise GraphsysError(f"{field}: size must be positive, got {text!r}")
    return value
