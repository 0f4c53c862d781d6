"""Chronological splits of timestamped edges: by fractions, or at given times.

Both rules order the edges by their stamps in the stamps' own type (an int64 column is never
rounded through a float) and never split equal stamps across two sides:

* **fractions** (``link_split="time"``): the latest ``round(test_fraction * E)`` edges are
  test and the ``round(val_fraction * E)`` before them validation, each cut moved later past
  the stamps equal to the last stamp before it (ties go to the earlier side, as TGL's and
  TGB's ``t <= cut`` splits), so a held-out side can hold fewer edges than its fraction;
  one a tie empties is refused.
* **times** (``valid_from=T1``, ``test_from=T2``): training is every edge stamped before
  ``T1``, validation ``T1 <= t < T2``, test ``t >= T2`` (a bound is compared in the column's
  type: a fractional bound on an integer column is rounded up, which selects the same
  edges). Equal stamps are on one side by construction.

So every validation stamp is strictly later than every training stamp, and every test stamp
strictly later than both.
"""

from __future__ import annotations

import numpy as np

from graphsys.errors import ParameterError
from graphsys.gnn.link import TIME_COLUMN, split_edges
from graphsys.storage.time_view import time_bound


def _checked(time) -> np.ndarray:
    t = np.asarray(time)
    if t.ndim != 1 or t.dtype.kind not in "iuf":
        raise ParameterError("time", f"must be one integer or float stamp per edge, got "
                                     f"shape {t.shape}, dtype {t.dtype}")
    if t.dtype.kind == "f" and not np.isfinite(t).all():
        bad = int(np.argmax(~np.isfinite(t)))
        raise ParameterError("time", f"edge {bad} has timestamp {t[bad]}: every edge needs "
                                     f"a finite one")
    return t


def split_at_times(time, valid_from, test_from, *, span: str | None = None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Boolean masks (train, valid, test) of the edges stamped ``time``: before
    ``valid_from``, from ``valid_from`` to before ``test_from``, from ``test_from`` on.

    Parameters
    ----------
    time : array_like
        One integer or float stamp per edge.
    valid_from, test_from : int, float, str or datetime
        The two cut times (:func:`~graphsys.storage.time_view.parse_time`); ``valid_from
        < test_from``.
    span : str, optional
        What a refusal says the stamps are (default ``"the stamps run from LO to HI"``, the
        range of ``time``).

    Returns
    -------
    train, valid, test : numpy.ndarray
        bool (E,) each, disjoint, covering every edge.

    Raises
    ------
    ParameterError
        Cuts in the wrong order, or a side left empty: training, validation or test
        (naming the cut and the stamps' range).

    Examples
    --------
    >>> tr, va, te = split_at_times([5, 1, 9, 7, 7, 3], 6, 8)
    >>> tr.nonzero()[0].tolist(), va.nonzero()[0].tolist(), te.nonzero()[0].tolist()
    ([0, 1, 5], [3, 4], [2])
    """
    t = _checked(time)
    lo = time_bound(valid_from, t.dtype, name="valid_from", up=True)
    hi = time_bound(test_from, t.dtype, name="test_from", up=True)
    if lo > hi:
        raise ParameterError("test_from", f"must not come before valid_from ({test_from} < "
                                          f"{valid_from})")
    test = t >= hi
    valid = (t >= lo) & ~test
    train = ~(valid | test)
    if span is None:
        span = (f"the stamps run from {t.min()} to {t.max()}" if len(t)
                else "there are no edges")
    for name, mask, side, cut in (("valid_from", train, "training", f"= {valid_from}"),
                                  ("test_from", valid, "validation",
                                   f"= {test_from} with valid_from = {valid_from}"),
                                  ("test_from", test, "test", f"= {test_from}")):
        if not mask.any():
            raise ParameterError(name, f"{cut} leaves no {side} edge ({span})")
    return train, valid, test


def split_by_fractions(time, val_fraction: float, test_fraction: float
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Boolean masks (train, valid, test): the latest ``round(test_fraction * E)`` edges
    test, the ``round(val_fraction * E)`` before them validation, every cut moved later past
    the stamps equal to the last one before it: the link task's time split,
    :func:`graphsys.gnn.link.split_edges`, on one stamp per edge.

    Examples
    --------
    Validation asks for 2 edges, but the earlier one ties with a training edge (stamp 3):
    both stay in training.

    >>> tr, va, te = split_by_fractions([3, 5, 1, 4, 3, 2], 0.34, 0.17)
    >>> tr.nonzero()[0].tolist(), va.nonzero()[0].tolist(), te.nonzero()[0].tolist()
    ([0, 2, 4, 5], [3], [1])
    """
    t = _checked(time)
    return split_edges(len(t), val_fraction, test_fraction, 0, t)


def chronological_split(time, *, val_fraction: float = 0.05, test_fraction: float = 0.1,
                        valid_from=None, test_from=None
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`split_at_times` when both cut times are given, else
    :func:`split_by_fractions`; one of the two alone is refused."""
    if (valid_from is None) != (test_from is None):
        raise ParameterError("valid_from" if valid_from is None else "test_from",
                             "and the other cut time go together (train before valid_from, "
                             "validation before test_from, test from it on)")
    if valid_from is not None:
        return split_at_times(time, valid_from, test_from)
    return split_by_fractions(time, val_fraction, test_fraction)


def pair_cut(graph, valid_from, test_from):
    """The link task's ``cut`` (:func:`graphsys.gnn.link.link_data`) at the given times,
    or None when they are None: :func:`split_at_times` of the target pairs' dates (each
    distinct pair dated by its earliest edge), a refusal naming both the range of those
    dates and that of the edges' own stamps in ``graph``'s default view."""
    if valid_from is None:
        return None

    def cut(dates):
        stamps = [c for c in graph.edge_column(TIME_COLUMN) if len(c)]
        edges = (f"; the edges' stamps run from {min(c.min() for c in stamps)} to "
                 f"{max(c.max() for c in stamps)}" if stamps else "")
        span = (f"each distinct pair is dated by its earliest edge, and those dates run "
                f"from {np.min(dates)} to {np.max(dates)}{edges}" if len(dates)
                else "there are no edges")
        return split_at_times(dates, valid_from, test_from, span=span)
    return cut
