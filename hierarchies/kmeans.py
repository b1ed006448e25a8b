"""K-means latent class hierarchy from a model's per-class mean vectors (LCA-on-the-Line,
Shi et al. 2024, Appendix F.2).

Procedure (as the LCA-on-the-line code ``create_hierarchy.py`` does it):

1. per-class mean of the model's vectors (logits or features, ``[N, D]``) over a labelled set
   (the paper: ImageNet val), then L2-normalise each class mean;
2. for each level ``i = 0 … floor(log2 C)`` cluster the C class means with
   ``KMeans(n_clusters=2**i, random_state=seed, n_init=n_init)``; level 0 is the single
   cluster. A final level ``top = floor(log2 C) + 1`` puts every class in its own cluster;
3. the LCA *level* of two classes is the deepest level at which they share a cluster
   (``top`` on the diagonal, 0 if they only share the root cluster).

**Not a tree.** By default (``nested=False``, paper-faithful) the levels are clustered
independently, so two classes can share a cluster at level 5 but not at level 4; the result
violates the ultrametric inequality on a few percent of triples. As in the paper's code, this is
not repaired: the LCA level is simply "deepest shared level" (:meth:`level_matrix`), and
:meth:`ultrametric_violation_rate` reports how far from a tree the result is. ``nested=True``
instead splits every cluster of level ``i−1`` in two with 2-means, which yields a strict tree.

Distances (:meth:`KMeansHierarchy.distance_matrix`), rows = ground truth:
``depth_one_sided = top − level`` (what the paper's code uses: ``max(M) − M``),
``depth_two_sided = 2·(top − level)``, ``info = log2(size of the shared cluster at that level)``.

``n_init`` defaults to 1: scikit-learn ≥ 1.4's ``n_init='auto'`` with k-means++ (the version the
paper's code pinned, 1.5.2) means one initialisation. Same inputs + seed → same hierarchy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from imagenet_suite.errors import ConfigError, HierarchyError, ShapeMismatch, UnknownClass, param

from .distances import check_metric


def class_means(vectors: Any, labels: Any, num_classes: int) -> np.ndarray:
    """[C, D] float64 per-class means of ``vectors`` [N, D] (numpy or torch, any device).

    ``labels`` [N] are class indices 0..C-1. Every class needs at least one sample.
    Summation runs on the vectors' own device (torch) before one small copy to the CPU.
    """
    if hasattr(vectors, "detach"):
        return _class_means_torch(vectors, labels, num_classes)
    vectors, labels = np.asarray(vectors, dtype=np.float64), np.asarray(labels).astype(np.int64)
    _check_inputs(vectors.shape, labels.shape, labels.min(initial=0), labels.max(initial=0), num_classes)
    counts = np.bincount(labels, minlength=num_classes)
    _require_all_classes(counts)
    sums = np.zeros((num_classes, vectors.shape[1]), dtype=np.float64)
    np.add.at(sums, labels, vectors)
    return sums / counts[:, None]


def _class_means_torch(vectors, labels, num_classes: int) -> np.ndarray:
    import torch

    labels = torch.as_tensor(labels, device=vectors.device).long()
    _check_inputs(tuple(vectors.shape), tuple(labels.shape), int(labels.min()), int(labels.max()), num_classes)
    sums = torch.zeros((num_classes, vectors.shape[1]), dtype=torch.float64, device=vectors.device)
    sums.index_add_(0, labels, vectors.detach().to(torch.float64))
    counts = torch.bincount(labels, minlength=num_classes).cpu().numpy()
    _require_all_classes(counts)
    return sums.cpu().numpy() / counts[:, None]


def _check_inputs(vshape: tuple, lshape: tuple, lo: int, hi: int, num_classes: int) -> None:
    if len(vshape) != 2:
        raise ShapeMismatch(f"vectors must be [N, D], got shape {vshape}")
    if lshape != (vshape[0],):
        raise ShapeMismatch(f"labels must be [N] = [{vshape[0]}] to match vectors, got shape {lshape}")
    if lo < 0 or hi >= num_classes:
        raise ShapeMismatch(f"labels must lie in 0..{num_classes - 1} (num_classes={num_classes}), got {lo}..{hi}")


def _require_all_classes(counts: np.ndarray) -> None:
    empty = np.flatnonzero(counts == 0)
    if empty.size:
        raise HierarchyError(f"{empty.size} class(es) have no samples, so no class mean: {empty[:10].tolist()}")


def l2_normalize(means: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(means, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise HierarchyError(
            f"class means {np.flatnonzero(norms[:, 0] == 0)[:10].tolist()} are zero vectors and cannot be L2-normalised"
        )
    return means / norms


@dataclass(frozen=True)
class KMeansClustering:
    """The K-means knobs of :meth:`KMeansHierarchy.fit`, as one value (what :func:`~.export.export_kmeans_hierarchy`
    takes and records): ``seed`` (``random_state`` of every level), ``n_init`` (restarts per level, ≥ 1) and
    ``nested`` (each level's clusters split the previous level's: a strict tree; the paper's default is False).
    """

    seed: int = 0
    n_init: int = 1
    nested: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.n_init, bool) or not isinstance(self.n_init, int) or self.n_init < 1:
            raise ConfigError(f"{param('n_init')} must be an integer ≥ 1, got {self.n_init!r}")


class KMeansHierarchy:
    """Cluster assignments per level; the interface mirrors :class:`~.tree.Tree` for distances.

    ``assignments``: [C, top] int array, column ``i`` = cluster id of each class at level ``i``
    (``top = floor(log2 C) + 1``; the singleton level ``top`` is implicit).
    """

    def __init__(self, assignments: np.ndarray, class_wnids: Sequence[str] | None = None, *, nested: bool = False):
        self.assignments = np.asarray(assignments, dtype=np.int64)
        if self.assignments.ndim != 2 or self.assignments.shape[1] != num_levels(self.assignments.shape[0]):
            raise ShapeMismatch(f"assignments must be [C, floor(log2 C) + 1], got shape {self.assignments.shape}")
        self.class_wnids = (
            tuple(class_wnids) if class_wnids is not None else tuple(str(i) for i in range(len(self.assignments)))
        )
        if len(self.class_wnids) != self.num_classes:
            raise ShapeMismatch(f"{len(self.class_wnids)} class wnids for {self.num_classes} classes")
        self.nested = nested
        self._index = {w: i for i, w in enumerate(self.class_wnids)}

    @classmethod
    def fit(
        cls,
        vectors: Any,
        labels: Any,
        num_classes: int,
        *,
        seed: int = 0,
        n_init: int = 1,
        nested: bool = False,
        class_wnids: Sequence[str] | None = None,
    ) -> KMeansHierarchy:
        """Class means → L2-normalise → K-means per level (module docstring)."""
        means = l2_normalize(class_means(vectors, labels, num_classes))
        return cls.from_class_means(
            means, seed=seed, n_init=n_init, nested=nested, class_wnids=class_wnids, normalized=True
        )

    @classmethod
    def from_class_means(
        cls,
        means: np.ndarray,
        *,
        seed: int = 0,
        n_init: int = 1,
        nested: bool = False,
        class_wnids: Sequence[str] | None = None,
        normalized: bool = False,
    ) -> KMeansHierarchy:
        """Cluster given [C, D] class means (L2-normalised here unless ``normalized``)."""
        means = np.asarray(means, dtype=np.float64)
        if means.ndim != 2 or means.shape[0] < 2:
            raise ShapeMismatch(f"class means must be [C, D] with C >= 2, got shape {means.shape}")
        means = means if normalized else l2_normalize(means)
        levels = num_levels(means.shape[0])
        cluster = _nested_levels if nested else _independent_levels
        return cls(cluster(means, levels, seed, n_init), class_wnids, nested=nested)

    # -- queries ------------------------------------------------------------------------------
    @property
    def num_classes(self) -> int:
        return self.assignments.shape[0]

    @property
    def top_level(self) -> int:
        """The singleton level (10 for 1000 classes): the LCA level of a class with itself."""
        return self.assignments.shape[1]

    def class_index(self, key: str | int) -> int:
        if isinstance(key, (int, np.integer)) or (isinstance(key, str) and key.strip().isdigit()):
            if not 0 <= int(key) < self.num_classes:
                raise UnknownClass(f"class index {int(key)} is out of range 0..{self.num_classes - 1}")
            return int(key)
        if key not in self._index:
            raise UnknownClass(f"{key!r} is not a class of this K-means hierarchy")
        return self._index[key]

    def lca(self, a: str | int, b: str | int) -> tuple[int, int]:
        """(level, cluster id at that level) of the deepest cluster holding both classes.

        The level is ``top_level`` (cluster id = the class index) when ``a == b``.
        """
        ia, ib = self.class_index(a), self.class_index(b)
        if ia == ib:
            return self.top_level, ia
        shared = np.flatnonzero(self.assignments[ia] == self.assignments[ib])
        level = int(shared.max())  # level 0 is always shared
        return level, int(self.assignments[ia, level])

    def level_matrix(self) -> np.ndarray:
        """[C, C] int: deepest shared level; ``top_level`` on the diagonal."""
        levels = np.zeros((self.num_classes, self.num_classes), dtype=np.int64)
        for level in range(1, self.top_level):
            column = self.assignments[:, level]
            levels[column[:, None] == column[None, :]] = level
        np.fill_diagonal(levels, self.top_level)
        return levels

    def cluster_sizes(self) -> np.ndarray:
        """[C, top] int: size of the cluster each class is in, per level."""
        sizes = np.empty_like(self.assignments)
        for level in range(self.top_level):
            _, inverse, counts = np.unique(self.assignments[:, level], return_inverse=True, return_counts=True)
            sizes[:, level] = counts[inverse]
        return sizes

    def distance_matrix(self, metric: str = "depth_one_sided") -> np.ndarray:
        """C×C float64 distances, rows = ground truth (module docstring); default = the paper's code."""
        check_metric(metric)
        levels = self.level_matrix()
        if metric == "depth_one_sided":
            return (self.top_level - levels).astype(np.float64)
        if metric == "depth_two_sided":
            return 2.0 * (self.top_level - levels)
        sizes = np.concatenate([self.cluster_sizes(), np.ones((self.num_classes, 1), dtype=np.int64)], axis=1)
        return np.log2(np.take_along_axis(sizes, levels, axis=1).astype(np.float64))

    def ultrametric_violation_rate(self, num_triples: int = 100_000, seed: int = 0) -> float:
        """Share of random triples (i, j, k) with level(i,k) < min(level(i,j), level(j,k)); 0 for a tree."""
        levels = self.level_matrix()
        i, j, k = np.random.default_rng(seed).integers(0, self.num_classes, size=(3, num_triples))
        return float(np.mean(levels[i, k] < np.minimum(levels[i, j], levels[j, k])))

    def __repr__(self) -> str:
        return f"KMeansHierarchy(classes={self.num_classes}, levels=0..{self.top_level}, nested={self.nested})"


def num_levels(num_classes: int) -> int:
    """Number of clustered levels, ``floor(log2 C) + 1`` (levels 0 … floor(log2 C))."""
    if num_classes < 2:
        raise HierarchyError(f"a K-means hierarchy needs at least 2 classes, got {num_classes}")
    return int(math.floor(math.log2(num_classes))) + 1


def _kmeans(points: np.ndarray, k: int, seed: int, n_init: int) -> np.ndarray:
    from sklearn.cluster import KMeans

    if k == 1:
        return np.zeros(len(points), dtype=np.int64)
    return KMeans(n_clusters=k, random_state=seed, n_init=n_init).fit_predict(points).astype(np.int64)


def _independent_levels(means: np.ndarray, levels: int, seed: int, n_init: int) -> np.ndarray:
    return np.stack([_kmeans(means, 2**i, seed, n_init) for i in range(levels)], axis=1)


def _nested_levels(means: np.ndarray, levels: int, seed: int, n_init: int) -> np.ndarray:
    assignments = np.zeros((len(means), levels), dtype=np.int64)
    for level in range(1, levels):
        parent = assignments[:, level - 1]
        for cluster in np.unique(parent):
            members = np.flatnonzero(parent == cluster)
            split = _kmeans(means[members], 2, seed, n_init) if len(members) > 1 else np.zeros(1, dtype=np.int64)
            assignments[members, level] = 2 * cluster + split
    return assignments
