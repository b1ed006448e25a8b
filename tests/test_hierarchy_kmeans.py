"""K-means latent hierarchy (LCA-on-the-Line, Shi et al. 2024, App. F.2): known clusters, determinism, metrics, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from imagenet_suite.errors import HierarchyError, ShapeMismatch, UnknownClass
from imagenet_suite.hierarchies.kmeans import KMeansHierarchy, class_means, num_levels

BITS = 4  # 16 classes = leaves of a balanced binary tree of depth 4


def binary_tree_samples(per_class: int = 20, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Class c's centre is ±scale_l along axis l for each bit l of c (MSB = largest scale), so
    classes sharing their first l bits are closer than any that do not; samples add small noise."""
    rng = np.random.default_rng(seed)
    classes = np.arange(2**BITS)
    bits = (classes[:, None] >> np.arange(BITS - 1, -1, -1)) & 1  # MSB first
    centres = (2 * bits - 1) * (20.0 ** -np.arange(BITS))  # scales 1, 1/20, 1/400, 1/8000
    labels = np.repeat(classes, per_class)
    vectors = centres[labels] + rng.normal(scale=1e-5, size=(len(labels), BITS))
    return vectors, labels


def shared_prefix_levels() -> np.ndarray:
    """Expected LCA level: number of leading bits two classes share; top level (5) on the diagonal."""
    classes = np.arange(2**BITS)
    levels = np.zeros((16, 16), dtype=np.int64)
    for level in range(1, BITS + 1):
        prefix = classes >> (BITS - level)
        levels[prefix[:, None] == prefix[None, :]] = level
    np.fill_diagonal(levels, BITS + 1)
    return levels


@pytest.mark.parametrize("nested", [False, True])
def test_known_binary_clusters_are_recovered(nested):
    vectors, labels = binary_tree_samples()
    hierarchy = KMeansHierarchy.fit(vectors, labels, 16, seed=0, nested=nested)
    assert hierarchy.top_level == 5 and hierarchy.assignments.shape == (16, 5)
    assert np.array_equal(hierarchy.level_matrix(), shared_prefix_levels())
    assert hierarchy.lca(0, 1) == (3, hierarchy.assignments[0, 3])
    assert hierarchy.lca(0, 8)[0] == 0 and hierarchy.lca(5, 5) == (5, 5)
    assert hierarchy.ultrametric_violation_rate() == 0.0


def test_distance_metrics_on_known_clusters():
    vectors, labels = binary_tree_samples()
    hierarchy = KMeansHierarchy.fit(vectors, labels, 16, seed=0)
    levels = shared_prefix_levels()
    assert np.array_equal(hierarchy.distance_matrix("depth_one_sided"), 5 - levels)  # the paper's max(M) − M
    assert np.array_equal(hierarchy.distance_matrix("depth_two_sided"), 2 * (5 - levels))
    # info: the cluster shared at level L holds 2**(4 − L) classes → log2 = 4 − L; 0 on the diagonal
    expected_info = np.where(levels == 5, 0, 4 - levels).astype(float)
    assert np.array_equal(hierarchy.distance_matrix("info"), expected_info)


def test_deterministic_for_a_seed_and_seed_matters():
    rng = np.random.default_rng(1)
    vectors, labels = rng.normal(size=(3000, 32)), np.repeat(np.arange(100), 30)
    first = KMeansHierarchy.fit(vectors, labels, 100, seed=7)
    again = KMeansHierarchy.fit(vectors, labels, 100, seed=7)
    other = KMeansHierarchy.fit(vectors, labels, 100, seed=8)
    assert np.array_equal(first.assignments, again.assignments)
    assert np.array_equal(first.level_matrix(), again.level_matrix())
    assert not np.array_equal(first.assignments, other.assignments)
    assert first.top_level == num_levels(100) == 7  # levels 0..6 (2**6 = 64 <= 100) + singleton level 7


def test_independent_levels_need_not_form_a_tree_but_nested_levels_do():
    rng = np.random.default_rng(2)
    means = rng.normal(size=(200, 16))
    independent = KMeansHierarchy.from_class_means(means, seed=0)
    nested = KMeansHierarchy.from_class_means(means, seed=0, nested=True)
    assert independent.ultrametric_violation_rate() > 0  # random data: levels disagree, as in the paper
    assert nested.ultrametric_violation_rate() == 0.0
    for level in range(1, nested.top_level):  # every cluster lies inside one parent cluster
        pairs = np.unique(nested.assignments[:, [level - 1, level]], axis=0)
        assert len(np.unique(pairs[:, 1])) == len(pairs)


def test_class_means_numpy_and_torch_agree_and_normalisation():
    rng = np.random.default_rng(3)
    vectors, labels = rng.normal(size=(50, 3)), np.arange(50) % 5
    means = class_means(vectors, labels, 5)
    assert np.allclose(means[2], vectors[labels == 2].mean(axis=0))
    assert np.allclose(
        class_means(torch.as_tensor(vectors, dtype=torch.float32), torch.as_tensor(labels), 5), means, atol=1e-6
    )
    scaled = KMeansHierarchy.fit(vectors * np.array([[1.0]] * 50) * 3.0, labels, 5, seed=0)
    assert np.array_equal(
        scaled.assignments, KMeansHierarchy.fit(vectors, labels, 5, seed=0).assignments
    )  # L2-normalised


def test_errors():
    vectors, labels = np.ones((4, 2)), np.array([0, 1, 1, 3])
    with pytest.raises(HierarchyError, match=r"have no samples, so no class mean: \[2\]"):
        class_means(vectors, labels, 4)
    with pytest.raises(ShapeMismatch, match="labels must be"):
        class_means(vectors, labels[:3], 4)
    with pytest.raises(ShapeMismatch, match="labels must lie in 0..2"):
        class_means(vectors, labels, 3)
    hierarchy = KMeansHierarchy.from_class_means(np.eye(4), class_wnids=["a", "b", "c", "d"])
    assert hierarchy.lca("a", 3)[0] in range(0, 3)
    with pytest.raises(UnknownClass, match="'e' is not a class"):
        hierarchy.lca("e", "a")
    with pytest.raises(HierarchyError, match="zero vectors"):
        KMeansHierarchy.from_class_means(np.zeros((4, 2)))
    with pytest.raises(HierarchyError, match="unknown distance metric"):
        hierarchy.distance_matrix("levels")
