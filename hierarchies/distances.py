"""LCA distance matrices between classes, computed vectorised (no per-pair Python loop).

Orientation: ``D[y, y']`` with the **row = ground-truth class** ``y`` and the column = the other
(predicted) class ``y'``. All matrices are ``float64``, C×C, zero on the diagonal. Metrics
(LCA-on-the-Line, Shi et al. 2024, Sec. 2 and App. E.2–E.3, Eqs. 5–7):

* ``info`` — ``log2(num_leaves(lca(y, y')))`` in bits; equals Valmadre's information
  difference ``i(y) − i(lca)`` for a uniform distribution over leaves. Symmetric.
* ``depth_two_sided`` — ``d(y) + d(y') − 2·d(lca)``: edges on the path through the LCA (the
  paper's Eq. 6 with its sign typo fixed). Symmetric.
* ``depth_one_sided`` — ``d(y) − d(lca)``: edges from the ground truth up to the LCA. Not
  symmetric.

For K-means hierarchies (:mod:`.kmeans`) the same names apply with "depth" counted in levels.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from imagenet_suite.errors import HierarchyError, ShapeMismatch

METRICS = ("info", "depth_two_sided", "depth_one_sided")


def check_metric(metric: str) -> str:
    if metric not in METRICS:
        raise HierarchyError(f"unknown distance metric {metric!r}; expected one of {list(METRICS)}")
    return metric


def tree_distance_matrix(tree, metric: str) -> np.ndarray:
    """The C×C ``metric`` matrix of a :class:`~.tree.Tree` (see the module docstring)."""
    check_metric(metric)
    classes = np.arange(tree.num_classes)
    lca_depth = tree.lca_depths(classes[:, None], classes[None, :])
    if metric == "info":
        lca_node = tree.paths[classes[:, None], lca_depth]
        return np.log2(tree.num_leaves[lca_node].astype(np.float64))
    leaf_depth = tree.depths[tree.class_nodes]
    if metric == "depth_one_sided":
        return (leaf_depth[:, None] - lca_depth).astype(np.float64)
    return (leaf_depth[:, None] + leaf_depth[None, :] - 2 * lca_depth).astype(np.float64)


def check_distance_matrix(distance: Any, num_classes: int, name: str = "distance") -> None:
    """Raise :class:`ShapeMismatch` unless ``distance`` is a ``num_classes``×``num_classes`` matrix."""
    shape = tuple(getattr(distance, "shape", ()))
    if shape != (num_classes, num_classes):
        raise ShapeMismatch(
            f"{name} matrix has shape {shape}, but the outputs have {num_classes} classes: "
            f"expected ({num_classes}, {num_classes}) (restrict it with restrict_matrix for a class subset)"
        )


def restrict_matrix(distance: np.ndarray, class_indices) -> np.ndarray:
    """The rows and columns of ``class_indices`` (e.g. the 200 ImageNet-R classes), in that order.

    Use it when a dataset's label space is a subset of the hierarchy's classes: distances keep
    the full hierarchy's values (as the LCA-on-the-line code does for ImageNet-R/-A).
    """
    distance = np.asarray(distance)
    index = np.asarray(class_indices, dtype=np.int64)
    if distance.ndim != 2 or distance.shape[0] != distance.shape[1]:
        raise ShapeMismatch(f"distance matrix must be square, got shape {distance.shape}")
    if index.size and (index.min() < 0 or index.max() >= distance.shape[0]):
        raise ShapeMismatch(f"class_indices must lie in 0..{distance.shape[0] - 1}, got {index.min()}..{index.max()}")
    return distance[np.ix_(index, index)]


def distance_statistics(distance: np.ndarray) -> dict[str, float]:
    """Summary over the off-diagonal entries: mean, min, max, number of distinct values, row means."""
    distance = np.asarray(distance, dtype=np.float64)
    off = ~np.eye(distance.shape[0], dtype=bool)
    values = distance[off]
    row_means = values.reshape(distance.shape[0], -1).mean(axis=1)
    return {
        "mean": float(values.mean()),
        "min": float(values.min()),
        "max": float(values.max()),
        "distinct": int(np.unique(np.round(values, 12)).size),
        "row_mean_min": float(row_means.min()),
        "row_mean_max": float(row_means.max()),
    }
