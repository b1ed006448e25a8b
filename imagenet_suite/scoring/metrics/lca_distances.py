"""The C×C distance matrices LCA metrics read: the shipped ImageNet-1k tree or a built hierarchy folder.

:func:`distance_matrix` returns the matrix of one named distance (``info``, ``depth_two_sided``,
``depth_one_sided``; rows = ground truth) from the ImageNet-1k WordNet tree shipped with the
package, or from the ``distance_<name>.npy`` of a built ``wordnet_hierarchy`` / ``kmeans_hierarchy``
dataset folder. Matrices are cached per (hierarchy, distance) and returned read-only.

A built hierarchy must be over the 1000 ImageNet-1k classes in class-index order (the LCA family scores
1000-way outputs and slices the matrix itself for a class subset): one built over other classes
(``wordnet_hierarchy`` with a ``wnids_file``, ``kmeans_hierarchy`` with ``classes=present``) is refused,
naming the folder. :func:`hierarchy_record` checks a hierarchy and says which one it is, JSON-ready
(score reports' ``meta["hierarchy"]``, suite.json's ``hierarchy``).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from ...classes import imagenet_wnids
from ...dataset.folder import DatasetFolder
from ...errors import ConfigError, DatasetFolderError, param
from ...files import sha256_file
from ...hierarchies.distances import METRICS as DISTANCES

HIERARCHY_DATASETS = ("wordnet_hierarchy", "kmeans_hierarchy")
KINDS = {None: "wordnet", "wordnet_hierarchy": "wordnet", "kmeans_hierarchy": "kmeans"}
PAPER_DISTANCE = {"wordnet": "info", "kmeans": "depth_one_sided"}
"""The distance LCA-on-the-Line (Shi et al. 2024) reports LCA in, per kind of hierarchy: information
content for the WordNet tree (its Tables 1 and 2, and the released code for every dataset), and ``max(M) − M``
= levels from the ground truth up to the deepest shared cluster (``depth_one_sided``) for a K-means hierarchy
(App. F.2 and its ``create_hierarchy.py``). :data:`PAPER_DISTANCE_BY_DATASET` holds the OOD sets whose ImageNet
LCA the paper takes in another distance."""
PAPER_DISTANCE_BY_DATASET = {"wordnet": {"imagenet_sketch": "depth_two_sided", "imagenet_a": "depth_two_sided"}}
"""Per kind of hierarchy, the OOD sets (builder names) for which LCA-on-the-Line predicts with the ImageNet LCA in
another distance than :data:`PAPER_DISTANCE`: App. E.2 "we adopt lcad_i for ObjectNet, ImageNet-R and
ImageNet-v2, and lcad_d for ImageNet-S, and ImageNet-A", lcad_d being its Eq. 6, the tree-depth path through the
LCA ``(d(y) − d(lca)) + (d(y') − d(lca))`` (``depth_two_sided``; the released code's commented-out depth option
would give ``depth_one_sided``). The released per-model values are all ``info``."""
PAPER_DISTANCES = {"wordnet": ("info", "depth_two_sided"), "kmeans": ("depth_one_sided",)}
"""Every distance LCA-on-the-Line uses with a kind of hierarchy (WordNet: its lcad_i and lcad_d)."""


def paper_distance(kind: str, dataset: str | None = None) -> str:
    """The distance of the ImageNet LCA that LCA-on-the-Line correlates with OOD set ``dataset`` (a builder name;
    None: its default) under a ``kind`` (``wordnet`` / ``kmeans``) hierarchy.

    Example:
        >>> paper_distance("wordnet", "imagenet_r"), paper_distance("wordnet", "imagenet_sketch")
        ('info', 'depth_two_sided')
        >>> paper_distance("kmeans", "imagenet_a"), paper_distance("wordnet")
        ('depth_one_sided', 'info')
    """
    return PAPER_DISTANCE_BY_DATASET.get(kind, {}).get(dataset, PAPER_DISTANCE[kind])


def distance_matrix(distance: str, hierarchy: str | Path | None = None) -> np.ndarray:
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
    return _load(None if hierarchy is None else str(hierarchy), distance)


def hierarchy_record(hierarchy: str | Path | None = None) -> dict[str, Any]:
    """Which hierarchy LCA distances come from, checked and JSON-ready.

    ``{"kind": "wordnet" | "kmeans", "build": {"folder", "builder", "version", "config", "split",
    "build_info_sha256"} | None, "shipped_sha256", "seed", "options", "sources", "paper_distance",
    "paper_distances"}``:
    ``build`` is the hierarchy's build (None for the tree shipped with the package, whose nodes CSV's
    sha256 is ``shipped_sha256``); ``seed``, ``options`` (the builder options: for K-means ``nested``,
    ``n_init``, ``classes`` and the ``outputs`` file) and ``sources`` (``{name: {"file", "sha256"}}``: what it
    was built from, e.g. the model outputs and the labelled dataset of a K-means hierarchy) come from its
    build_info.json; ``paper_distance`` is :data:`PAPER_DISTANCE` of its kind and ``paper_distances`` the OOD sets
    the paper predicts with another (:data:`PAPER_DISTANCE_BY_DATASET`, ``{builder: distance}``). ConfigError naming
    ``hierarchy`` for a path that is not a built dataset folder, not a hierarchy build, or a hierarchy
    over other classes than the 1000 ImageNet-1k classes.

    Example:
        >>> record = hierarchy_record()
        >>> record["kind"], record["build"], record["paper_distance"]
        ('wordnet', None, 'info')
        >>> record["paper_distances"]
        {'imagenet_sketch': 'depth_two_sided', 'imagenet_a': 'depth_two_sided'}
    """
    if hierarchy is None:
        from ...hierarchies.imagenet1k import SHIPPED_NODES_CSV

        shipped = _sha256(str(SHIPPED_NODES_CSV))
        return _record("wordnet", None, shipped, None, None, None)
    folder = _hierarchy_folder(str(hierarchy))
    config = folder.configs[0]
    info = folder.config_info(config)
    build = {
        "folder": str(folder.path.resolve()),
        "builder": folder.name,
        "version": folder.version,
        "config": config,
        "split": folder.splits(config)[0],
        "build_info_sha256": folder.build_info_sha256,
    }
    sources = {name: {"file": s.get("file"), "sha256": s.get("sha256")} for name, s in info["sources"].items()}
    return _record(KINDS[folder.name], build, None, folder.seed, dict(info.get("options", {})), sources)


def _record(kind, build, shipped, seed, options, sources) -> dict[str, Any]:
    return {
        "kind": kind,
        "build": build,
        "shipped_sha256": shipped,
        "seed": seed,
        "options": options,
        "sources": sources,
        "paper_distance": PAPER_DISTANCE[kind],
        "paper_distances": dict(PAPER_DISTANCE_BY_DATASET.get(kind, {})),
    }


@cache
def _sha256(path: str) -> str:
    return sha256_file(path)


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
    folder = _hierarchy_folder(hierarchy)
    rel = f"{folder.configs[0]}/distance_{distance}.npy"
    if not any(rel in info["files"] for info in folder.build_info["configs"].values()):
        raise ConfigError(f"{param('hierarchy')} {hierarchy}: {Path(rel).name} is missing")
    return np.load(folder.file(rel), allow_pickle=False)


def _hierarchy_folder(hierarchy: str) -> DatasetFolder:
    """The built hierarchy folder, checked: a wordnet/kmeans hierarchy build over the ImageNet-1k classes."""
    try:
        folder = DatasetFolder(hierarchy)
    except DatasetFolderError as err:
        raise ConfigError(f"{param('hierarchy')} {hierarchy}: not a built hierarchy folder ({err})") from err
    if folder.name not in HIERARCHY_DATASETS:
        raise ConfigError(
            f"{param('hierarchy')} {hierarchy}: a {folder.name} dataset, expected a wordnet_hierarchy or kmeans_hierarchy "
            "folder"
        )
    wnids = _class_wnids(folder)
    if wnids != imagenet_wnids():
        which = "the ImageNet-1k classes in another order" if set(wnids) == set(imagenet_wnids()) else "other classes"
        raise ConfigError(
            f"{param('hierarchy')} {hierarchy}: a hierarchy over {len(wnids)} {which}, expected the 1000 ImageNet-1k "
            "classes in class-index order (built with classes=present or a wnids_file?)"
        )
    return folder


def _class_wnids(folder: DatasetFolder) -> tuple[str, ...]:
    """The hierarchy's classes in matrix-row order: the rows with a ``class_index``, by that index (a
    ``wordnet_hierarchy``'s leaves; a ``kmeans_hierarchy``'s classes)."""
    config = folder.configs[0]
    table = folder.read_table(config, folder.splits(config)[0], ["wnid", "class_index"]).to_pydict()
    leaves = sorted((index, wnid) for wnid, index in zip(table["wnid"], table["class_index"]) if index is not None)
    return tuple(wnid for _, wnid in leaves)


__all__ = [
    "HIERARCHY_DATASETS",
    "PAPER_DISTANCE",
    "PAPER_DISTANCES",
    "PAPER_DISTANCE_BY_DATASET",
    "distance_matrix",
    "hierarchy_record",
    "paper_distance",
]
