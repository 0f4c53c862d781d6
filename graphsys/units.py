"""Parsing of user-facing quantities: byte sizes, counts and decimal times."""

from __future__ import annotations

import math
import re
from numbers import Integral

import numpy as np

from graphsys.errors import GraphsysError, InputError, check_count

_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3, "gb": 1000**3,
    "t": 1000**4, "tb": 1000**4, "p": 1000**5, "pb": 1000**5, "e": 1000**6, "eb": 1000**6,
    "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4, "pib": 1024**5,
    "eib": 1024**6,
}
#: Largest size accepted: what an int64 byte count holds (8 EiB), beyond any machine.
MAX_SIZE = 2**63 - 1
_COUNT_SUFFIXES = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "b": 10**9, "t": 10**12,
                   "ki": 1 << 10, "mi": 1 << 20, "gi": 1 << 30, "ti": 1 << 40}


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
    if isinstance(text, bool) or not isinstance(text, (Integral, str)):
        raise GraphsysError(f"{field}: cannot parse size {text!r} (examples: 2GB, 512MiB)")
    if isinstance(text, Integral):  # NumPy's integers too
        value = int(text)
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


def parse_count(text: str | int, field: str = "count") -> int:
    """A non-negative integer from a count such as ``"10M"``, ``"4Mi"``, ``"1e6"`` or an int.

    Decimal suffixes (k, M, G or B, T: powers of 1000) and binary ones (Ki, Mi, Gi, Ti:
    powers of 1024), case ignored; ``_`` separates digits; a fraction or exponent must give
    a whole number (``"2.5k"`` is 2500, ``"1.5"`` is an error).

    Parameters
    ----------
    text : str or int
        The count.
    field : str, default "count"
        What the count is for, named first in errors (the command line passes its flag).

    Returns
    -------
    int
        The count, ``>= 0``.

    Raises
    ------
    GraphsysError
        A count that cannot be parsed, is negative or is not a whole number.

    Examples
    --------
    >>> from graphsys.units import parse_count
    >>> parse_count("10M"), parse_count("32Mi"), parse_count("1e6"), parse_count("1_000")
    (10000000, 33554432, 1000000, 1000)
    """
    if isinstance(text, int) and not isinstance(text, bool):
        return check_count(field, text, minimum=0)
    m = re.fullmatch(r"\s*([0-9][0-9_]*(?:\.[0-9]*)?(?:[eE][0-9]+)?)\s*([kmgtbKMGTB][iI]?)?\s*",
                     str(text))
    suffix = (m.group(2) or "").lower() if m else ""
    if not m or suffix not in _COUNT_SUFFIXES:
        raise GraphsysError(f"{field} must be a non-negative integer such as 1000, 10M or "
                            f"1e6, got {text!r}")
    number = m.group(1).replace("_", "")
    if re.fullmatch(r"[0-9]+", number):
        return int(number) * _COUNT_SUFFIXES[suffix]
    value = float(number) * _COUNT_SUFFIXES[suffix]
    if not math.isfinite(value) or value != int(value):
        raise GraphsysError(f"{field} must be a whole number, got {text!r}")
    return int(value)


def format_size(nbytes: int | float) -> str:
    """A byte count as a message shows it: bytes below 1 KB, else KB, MB, GB, TB (powers of
    1000, as :func:`parse_size` reads them) with three significant digits, so that two
    sizes compared in a message never both read 0.

    Parameters
    ----------
    nbytes : int or float
        Bytes (non-negative).

    Returns
    -------
    str

    Examples
    --------
    >>> from graphsys.units import format_size
    >>> format_size(1), format_size(2_136_064), format_size(16_500), format_size(4e9)
    ('1 byte', '2.14 MB', '16.5 KB', '4 GB')
    """
    value = float(nbytes)
    if value < 1000:
        return f"{int(value):,} byte{'' if int(value) == 1 else 's'}"
    units, k = ("KB", "MB", "GB", "TB"), 0
    value /= 1000
    while k < len(units) - 1 and float(f"{value:.3g}") >= 1000:  # as printed, below 1000
        value /= 1000
        k += 1
    return f"{value:.3g} {units[k]}" if value < 1000 else f"{value:,.0f} {units[k]}"


def parse_seconds(text) -> tuple[np.ndarray, np.ndarray | None]:
    """Decimal Unix-second strings to int64 whole seconds (rounded down) and, when any has
    a fractional part, int64 microseconds, both exact (never through a float).

    Parameters
    ----------
    text : pyarrow.Array or sequence of str
        Strings ``"1289241911.72836"``, ``"1082040961"``, ``"-5.5"``; at most 6 decimals.

    Returns
    -------
    seconds : numpy.ndarray
        int64 ``floor(t)``.
    micros : numpy.ndarray or None
        int64 ``t * 10**6`` exactly, or None when every stamp is whole seconds.

    Raises
    ------
    InputError
        A stamp that is not a decimal number with at most 6 decimals.

    Examples
    --------
    >>> import pyarrow as pa
    >>> s, us = parse_seconds(pa.array(["1289241911.72836", "10", "-5.5"]))
    >>> s.tolist(), us.tolist()
    ([1289241911, 10, -6], [1289241911728360, 10000000, -5500000])
    >>> parse_seconds(pa.array(["7", "8"]))[1] is None
    True
    """
    strings = [str(v) for v in (text.to_pylist() if hasattr(text, "to_pylist") else text)]
    micros = np.empty(len(strings), np.int64)
    fractional = False
    for k, v in enumerate(strings):
        m = _DECIMAL.fullmatch(v.strip())
        if m is None:
            raise InputError(f"timestamp {v!r} (row {k}) is not a decimal number of seconds "
                             f"with at most 6 decimals")
        sign = -1 if m.group(1) == "-" else 1
        frac = (m.group(3) or "").ljust(6, "0")
        fractional |= any(c != "0" for c in frac)
        micros[k] = sign * (int(m.group(2)) * 1_000_000 + int(frac))
    return micros // 1_000_000, (micros if fractional else None)


_DECIMAL = re.compile(r"([+-]?)(\d+)(?:\.(\d{0,6}))?")
