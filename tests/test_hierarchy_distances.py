"""Distance matrices of the ImageNet-1k tree: statistics and example pairs of the LCA-on-the-Line tree (Shi et al. 2024)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from imagenet_suite.errors import HierarchyError, ShapeMismatch
from imagenet_suite.hierarchies.distances import (
    METRICS,
    check_distance_matrix,
    distance_statistics,
    restrict_matrix,
    tree_distance_matrix,
)
from imagenet_suite.hierarchies.imagenet1k import imagenet1k_distance_matrix, imagenet1k_tree
from imagenet_suite.hierarchies.tree import Tree


@pytest.fixture(scope="module")
def tree():
    return imagenet1k_tree()


@pytest.fixture(scope="module")
def matrices(tree):
    return {m: tree_distance_matrix(tree, m) for m in METRICS}


# GT (class idx), other (idx), LCA synset, LCA leaves, info, depth 2-sided, depth 1-sided — from imagenet_fiveai.csv
EXAMPLE_PAIRS = [
    (0, 1, "cyprinid.n.01", 2, 1.0000, 2, 1),  # tench / goldfish
    (385, 386, "elephant.n.01", 2, 1.0000, 2, 1),  # Indian / African elephant
    (281, 282, "domestic_cat.n.01", 5, 2.3219, 2, 1),  # tabby / tiger cat
    (9, 130, "bird.n.01", 59, 5.8826, 4, 1),  # ostrich / flamingo
    (251, 250, "dog.n.01", 118, 6.8826, 4, 1),  # dalmatian / Siberian husky
    (9, 290, "vertebrate.n.01", 337, 8.3966, 8, 2),  # ostrich / jaguar
    (0, 999, "physical_entity.n.01", 1000, 9.9658, 13, 10),  # tench / toilet tissue
]


@pytest.mark.parametrize("gt, other, lca_name, leaves, info, depth2, depth1", EXAMPLE_PAIRS)
def test_example_pairs(tree, matrices, gt, other, lca_name, leaves, info, depth2, depth1):
    lca = tree.node(tree.lca(gt, other))
    assert (lca.name, lca.num_leaves) == (lca_name, leaves)
    assert matrices["info"][gt, other] == pytest.approx(info, abs=5e-5)
    assert matrices["depth_two_sided"][gt, other] == depth2
    assert matrices["depth_one_sided"][gt, other] == depth1


def test_info_statistics(matrices):
    stats = distance_statistics(matrices["info"])
    assert stats["mean"] == pytest.approx(9.1604, abs=5e-5)
    assert (stats["min"], stats["max"]) == (1.0, pytest.approx(math.log2(1000)))
    assert stats["distinct"] == 55
    assert (stats["row_mean_min"], stats["row_mean_max"]) == (
        pytest.approx(8.942, abs=5e-4),
        pytest.approx(9.857, abs=5e-4),
    )
    off_diagonal = matrices["info"][~np.eye(1000, dtype=bool)]
    assert np.mean(off_diagonal == math.log2(1000)) == pytest.approx(0.0750, abs=5e-5)  # LCA = root


def test_depth_statistics(matrices):
    two = distance_statistics(matrices["depth_two_sided"])
    assert two["mean"] == pytest.approx(11.4408, abs=5e-5) and (two["min"], two["max"]) == (2.0, 23.0)
    assert distance_statistics(matrices["depth_one_sided"])["mean"] == pytest.approx(5.7204, abs=5e-5)


def test_matrix_properties(matrices):
    for metric, matrix in matrices.items():
        assert matrix.shape == (1000, 1000) and matrix.dtype == np.float64
        assert not np.diagonal(matrix).any(), metric
    assert np.array_equal(matrices["info"], matrices["info"].T)
    assert np.array_equal(matrices["depth_two_sided"], matrices["depth_two_sided"].T)
    one = matrices["depth_one_sided"]
    assert np.array_equal(one + one.T, matrices["depth_two_sided"])  # the two one-sided halves
    assert not np.array_equal(one, one.T)


def test_matrices_agree_with_per_pair_lca_on_a_sample(tree, matrices):
    rng = np.random.default_rng(0)
    for a, b in rng.integers(0, 1000, size=(200, 2)):
        lca = tree.node(tree.lca(int(a), int(b)))
        da, db = tree.depths[tree.class_nodes[a]], tree.depths[tree.class_nodes[b]]
        assert matrices["info"][a, b] == math.log2(lca.num_leaves)
        assert matrices["depth_two_sided"][a, b] == da + db - 2 * lca.depth
        assert matrices["depth_one_sided"][a, b] == da - lca.depth


def test_small_tree_by_hand():
    tree = Tree.from_edges([("r", "x"), ("r", "c2"), ("x", "c0"), ("x", "c1")], ["c0", "c1", "c2"])
    assert tree_distance_matrix(tree, "info").tolist() == [
        [0, 1, math.log2(3)],
        [1, 0, math.log2(3)],
        [math.log2(3)] * 2 + [0],
    ]
    assert tree_distance_matrix(tree, "depth_one_sided").tolist() == [[0, 1, 2], [1, 0, 2], [1, 1, 0]]
    assert tree_distance_matrix(tree, "depth_two_sided").tolist() == [[0, 2, 3], [2, 0, 3], [3, 3, 0]]


def test_restrict_and_checks(matrices):
    subset = [1, 2, 4, 6, 8]
    small = restrict_matrix(matrices["info"], subset)
    assert small.shape == (5, 5) and small[0, 1] == matrices["info"][1, 2]
    with pytest.raises(ShapeMismatch, match=r"shape \(1000, 1000\), but the outputs have 200 classes"):
        check_distance_matrix(matrices["info"], 200)
    with pytest.raises(ShapeMismatch, match="class_indices must lie"):
        restrict_matrix(matrices["info"], [0, 1000])
    with pytest.raises(HierarchyError, match="unknown distance metric 'depth'"):
        tree_distance_matrix(imagenet1k_tree(), "depth")


def test_cached_imagenet1k_matrices(matrices):
    for metric in METRICS:
        cached = imagenet1k_distance_matrix(metric)
        assert np.array_equal(cached, matrices[metric]) and not cached.flags.writeable
    with pytest.raises(HierarchyError, match="unknown distance metric"):
        imagenet1k_distance_matrix("depth")
