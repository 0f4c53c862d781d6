"""Seeded node splits of labelled datasets, made by the dataset loaders
(:mod:`graphsys.datasets.loaders`) where a dataset has no standard split of its own."""

from __future__ import annotations

import numpy as np

from graphsys.errors import InputError


def per_class_split(labels: np.ndarray, num_classes: int, *, seed: int, train_per_class: int,
                    val: int, test: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Planetoid-style random split of labelled nodes; returns three bool masks (N,).

    ``perm = numpy.random.default_rng(seed).permutation(N)`` over the rows; training takes
    the first ``train_per_class`` nodes of each class in ``perm`` order; of the remaining
    labelled nodes (``labels >= 0``) in ``perm`` order, the next ``val`` are validation and
    the following ``test`` are test nodes. The masks are disjoint.
    """
    n = len(labels)
    perm = np.random.default_rng(seed).permutation(n)
    train = np.zeros(n, bool)
    for c in range(num_classes):
        members = perm[labels[perm] == c]
        if len(members) < train_per_class:
            raise InputError(f"class {c} has {len(members)} nodes, fewer than "
                             f"train_per_class = {train_per_class}")
        train[members[:train_per_class]] = True
    rest = perm[~train[perm] & (labels[perm] >= 0)]
    if len(rest) < val + test:
        raise InputError(f"only {len(rest)} labelled nodes remain for val = {val} and "
                         f"test = {test}")
    val_mask = np.zeros(n, bool)
    test_mask = np.zeros(n, bool)
    val_mask[rest[:val]] = True
    test_mask[rest[val:val + test]] = True
    return train, val_mask, test_mask
