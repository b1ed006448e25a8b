"""Writing hierarchies as files (nodes/assignments Parquet + .npy matrices) and reading them back."""

from __future__ import annotations

import io
import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from imagenet_suite.hierarchies import export
from imagenet_suite.hierarchies.distances import METRICS, tree_distance_matrix
from imagenet_suite.hierarchies.imagenet1k import imagenet1k_tree
from imagenet_suite.hierarchies.kmeans import KMeansClustering, KMeansHierarchy
from imagenet_suite.hierarchies.tree import Tree


def test_tree_export_round_trips(tmp_path):
    tree = imagenet1k_tree()
    written = export.write_hierarchy(tree, tmp_path / "wordnet")
    names = sorted(p.name for p in written)
    assert names == [
        "distance_depth_one_sided.npy",
        "distance_depth_two_sided.npy",
        "distance_info.npy",
        "hierarchy.json",
        "nodes.parquet",
    ]
    table = pq.read_table(tmp_path / "wordnet" / "nodes.parquet")
    assert table.num_rows == 1372 and table.column("parent").null_count == 1
    assert Tree.from_nodes_table(table) == tree
    for metric in METRICS:
        assert np.array_equal(
            np.load(tmp_path / "wordnet" / f"distance_{metric}.npy"), tree_distance_matrix(tree, metric)
        )
    info = json.loads((tmp_path / "wordnet" / "hierarchy.json").read_text())
    assert info["kind"] == "wordnet_tree" and info["class_wnids"] == list(tree.class_wnids)


def test_nodes_features_describe_the_table():
    features = export.nodes_features()
    table = imagenet1k_tree().nodes_table()
    assert table.cast(features.arrow_schema).equals(table)


def test_matrix_files_are_deterministic_npy_bytes():
    tree = imagenet1k_tree()
    first, second = export.matrix_files(tree), export.matrix_files(tree)
    assert first == second and set(first) == {f"distance_{m}.npy" for m in METRICS}
    assert np.array_equal(np.load(io.BytesIO(first["distance_info.npy"])), tree_distance_matrix(tree, "info"))


def test_kmeans_export(tmp_path):
    rng = np.random.default_rng(0)
    vectors, labels = rng.normal(size=(400, 8)), np.arange(400) % 20
    wnids = [f"c{i:02d}" for i in range(20)]
    written = export.export_kmeans_hierarchy(
        tmp_path / "km", vectors, labels, 20, clustering=KMeansClustering(seed=3), class_wnids=wnids
    )
    assert sorted(p.name for p in written) == [
        "assignments.parquet",
        "distance_depth_one_sided.npy",
        "distance_depth_two_sided.npy",
        "distance_info.npy",
        "hierarchy.json",
        "lca_level.npy",
    ]
    hierarchy = KMeansHierarchy.fit(vectors, labels, 20, seed=3, class_wnids=wnids)
    rows = pq.read_table(tmp_path / "km" / "assignments.parquet").to_pylist()
    assert rows == export.assignment_rows(hierarchy) and rows[0]["wnid"] == "c00" and len(rows[0]) == 2 + 5
    assert np.array_equal(np.load(tmp_path / "km" / "lca_level.npy"), hierarchy.level_matrix())
    assert np.array_equal(np.load(tmp_path / "km" / "distance_depth_one_sided.npy"), hierarchy.distance_matrix())
    info = json.loads((tmp_path / "km" / "hierarchy.json").read_text())
    assert (info["kind"], info["seed"], info["levels"]) == ("kmeans", 3, 5)
    assert export.assignment_features(5).arrow_schema.names == list(rows[0])


@pytest.mark.parametrize("subset", [["n02110341", "n02110185", "n01440764"]])
def test_wordnet_export_for_a_subset(tmp_path, subset):
    written = export.export_wordnet_hierarchy(tmp_path / "sub", subset)
    tree = Tree.from_nodes_table(pq.read_table(written[0]))
    assert tree.class_wnids == tuple(subset)
    assert np.load(tmp_path / "sub" / "distance_info.npy")[0, 1] == 1.0  # dalmatian / husky share dog.n.01 (2 leaves)
