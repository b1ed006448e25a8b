"""The C×C distance matrices LCA metrics read: the shipped ImageNet-1k tree or a built hierarchy folder.

:func:`distance_matrix` returns the matrix of one named distance (``info``, ``depth_two_sided``,
``depth_one_sided``; rows = ground truth) from the ImageNet-1k WordNet tree shipped with the
package, or from the ``distance_<name>.npy`` of a built ``wordnet_hierarchy`` / ``kmeans_hierarchy``
dataset folder. Matrices are cached per (hierarchy, distance) and returned read-only.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

from ...dataset.folder import DatasetFolder
from ...errors import ConfigError, param
from ...hierarchies.distances import METRICS as DISTANCES

HIERARCHY_DATASETS = ("wordnet_hierarchy", "kmeans_hierarchy")


def distance_matrix(distance: str, hierarchy: str | None = None) -> np.ndarray:
    """The cached, read-only C×C matrix of ``distance`` (ConfigError for an unknown distance or a bad folder).

    Example:
        The shipped ImageNet-1k WordNet tree. Tench and goldfish (classes 0 and 1) are both
        cyprinids: their LCA has 2 classes under it (``info``: log2 2 = 1 bit) and is one edge
        above each (``depth_two_sided``: 2 edges):

        >>> info = distance_matrix("info")
        >>> info.shape, info[0, :2].tolist()
        ((1000, 1000), [0.0, 1.0])
        >>> float(distance_matrix("depth_two_sided")[0, 1])
        2.0
    """
    if distance not in DISTANCES:
        raise ConfigError(f"unknown LCA distance {distance!r}; expected one of {list(DISTANCES)}")
    return _load(hierarchy, distance)


@cache
def _load(hierarchy: str | None, distance: str) -> np.ndarray:
    if hierarchy is None:
        from ...hierarchies.imagenet1k import imagenet1k_distance_matrix

        matrix = imagenet1k_distance_matrix(distance)
    else:
        matrix = _from_folder(hierarchy, distance)
    matrix.setflags(write=False)
    return matrix


def _from_folder(hierarchy: str, distance: str) -> np.ndarray:
    folder = DatasetFolder(hierarchy)
    if folder.name not in HIERARCHY_DATASETS:
        raise ConfigError(
            f"{param('hierarchy')} {hierarchy}: a {folder.name} dataset, expected a wordnet_hierarchy or kmeans_hierarchy "
            "folder"
        )
    rel = f"{folder.configs[0]}/distance_{distance}.npy"
    if not any(rel in info["files"] for info in folder.build_info["configs"].values()):
        raise ConfigError(f"{param('hierarchy')} {hierarchy}: {Path(rel).name} is missing")
    return np.load(folder.file(rel), allow_pickle=False)


__all__ = ["HIERARCHY_DATASETS", "distance_matrix"]
