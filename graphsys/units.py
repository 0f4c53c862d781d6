"""Parsing of user-facing quantities (byte sizes)."""

from __future__ import annotations

import re

from graphsys.errors import GraphsysError

_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3, "gb": 1000**3,
    "t": 1000**4, "tb": 1000**4, "p": 1000**5, "pb": 1000**5, "e": 1000**6, "eb": 1000**6,
    "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4, "pib": 1024**5,
    "eib": 1024**6,
}
#: Largest size accepted: what an int64 byte count holds (8 EiB), beyond any machine.
MAX_SIZE = 2**63 - 1


def parse_size(text: str | int, *, field: str = "size", minimum: int = 1) -> int:
    """A byte count from a size such as ``"2GB"``, ``"512MiB"``, ``"1e9"`` or an int.

    Decimal units (KB, MB, GB, TB, PB, EB: powers of 1000) and binary units (KiB, MiB, GiB,
    TiB, PiB, EiB); case is ignored. Every size is at most :data:`MAX_SIZE` (8 EiB, what an
    int64 byte count holds), however it is written.

    Parameters
    ----------
    text : str or int
        The size.
    field : str, default "size"
        What the size is for, named in errors.
    minimum : int, default 1
        The least size that can work, named in the error.

    Returns
    -------
    int
        Bytes, in ``[minimum, MAX_SIZE]``.

    Raises
    ------
    GraphsysError
        A size that cannot be parsed, below ``minimum`` or above :data:`MAX_SIZE`.

    Examples
    --------
    >>> from graphsys.units import parse_size
    >>> parse_size("2GB"), parse_size("512MiB"), parse_size(4096)
    (2000000000, 536870912, 4096)
    >>> parse_size("1e99", field="memory_limit")
    Traceback (most recent call last):
    ...
    graphsys.errors.GraphsysError: memory_limit: size '1e99' is more than 8 EiB (...)
    """
    if isinstance(text, bool) or not isinstance(text, (int, str)):
        raise GraphsysError(f"{field}: cannot parse size {text!r} (examples: 2GB, 512MiB)")
    if isinstance(text, int):
        value = text
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][0-9]+)?)\s*([a-zA-Z]*)\s*", str(text))
        if not m or m.group(2).lower() not in _SIZE_UNITS:
            raise GraphsysError(f"{field}: cannot parse size {text!r} (examples: 2GB, 512MiB)")
        digits, unit = m.group(1), _SIZE_UNITS[m.group(2).lower()]
        number = int(digits) * unit if digits.isdigit() else float(digits) * unit
        value = int(number) if number <= MAX_SIZE else MAX_SIZE + 1
    if value <= 0:
        raise GraphsysError(f"{field}: size must be positive, got {text!r}")
    if value > MAX_SIZE:
        raise GraphsysError(f"{field}: size {text!r} is more than 8 EiB ({MAX_SIZE:,} bytes)")
    if value < minimum:
        raise GraphsysError(f"{field}: size {text!r} is less than {minimum:,} bytes, the "
                            f"least that can work")
    return value
