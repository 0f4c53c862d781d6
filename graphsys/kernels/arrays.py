"""The arrays a kernel is handed, made alike at the boundary so that one compiled signature
serves every caller.

numba compiles a kernel once per combination of its arguments' types, and an array's type
includes whether it is writable: a stored adjacency index is a mapped, read-only array, one
built in memory is writable, so the same call on the two compiles the kernel twice (each a
parallel kernel's seconds). :func:`read_only` hands a kernel read-only views of the arrays
it only reads, whatever their source, so that both reach the one signature.
"""

from __future__ import annotations

import numpy as np


def read_only(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """Read-only views of ``arrays`` (no copy; the arrays themselves are left as they are).

    Parameters
    ----------
    *arrays : numpy.ndarray
        Arrays a kernel reads and never writes.

    Returns
    -------
    tuple of numpy.ndarray
        One view per array, ``flags.writeable`` False.

    Examples
    --------
    >>> import numpy as np
    >>> from graphsys.kernels.arrays import read_only
    >>> a = np.arange(3)
    >>> (v,) = read_only(a)
    >>> v.flags.writeable, a.flags.writeable, bool(np.shares_memory(a, v))
    (False, True, True)
    """
    out = []
    for a in arrays:
        v = a.view()
        v.flags.writeable = False
        out.append(v)
    return tuple(out)
