"""Hierarchies through the builder framework: wordnet_hierarchy and kmeans_hierarchy datasets + CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from imagenet_suite.dataset.folder import DatasetFolder
from imagenet_suite.hierarchies.imagenet1k import imagenet1k_distance_matrix, imagenet1k_tree
from imagenet_suite.hierarchies.tree import Tree
from tests.helpers import build_val, folder_bytes, load, run_cli


@pytest.fixture(scope="module")
def wordnet_folder(tmp_path_factory):
    from imagenet_suite.core.options import BuildOptions
    from imagenet_suite.core.runner import build_dataset

    return DatasetFolder(
        build_dataset("wordnet_hierarchy", tmp_path_factory.mktemp("wn"), options=BuildOptions(progress=False))
    )


def test_wordnet_dataset_roundtrips_to_the_shipped_tree(wordnet_folder, tmp_path):
    ds = load(wordnet_folder.path, "default", split="nodes", cache_dir=tmp_path)
    assert ds.num_rows == 1372
    assert {"wnid", "name", "parent", "depth", "num_leaves"} <= set(ds.column_names)
    roots = [row for row in ds if row["parent"] is None]
    assert len(roots) == 1 and roots[0]["wnid"] == "n00001930" and roots[0]["num_leaves"] == 1000
    tree = Tree.from_nodes_table(wordnet_folder.read_table(None, "nodes"))
    assert tree == imagenet1k_tree()
    matrix = np.load(wordnet_folder.path / "default" / "distance_info.npy")
    assert np.array_equal(matrix, imagenet1k_distance_matrix("info"))
    assert run_cli("verify", str(wordnet_folder.path)).returncode == 0


def test_distance_lookup_reads_a_built_folder(wordnet_folder):
    out = json.loads(
        run_cli("hierarchy", "distance", "n02110341", "n02110185", "--nodes", str(wordnet_folder.path), "--json").stdout
    )
    assert round(out["info"], 4) == 6.8826 and out["depth_two_sided"] == 4 and out["depth_one_sided"] == 1


def test_custom_class_list_and_bad_wnid(tmp_path):
    wnids = tmp_path / "wnids.txt"
    wnids.write_text("n02110341\nn02110185\nn01440764\n")
    result = run_cli(
        "build", "wordnet_hierarchy", "--option", f"wnids_file={wnids}", "--out", str(tmp_path / "o"), "--no-progress"
    )
    folder = DatasetFolder(result.stdout.strip().splitlines()[-1])
    tree = Tree.from_nodes_table(folder.read_table(None, "nodes"))
    assert tree.class_wnids == ("n02110341", "n02110185", "n01440764")
    assert folder.build_info["configs"]["default"]["sources"]["wnids_file"]["file"] == "wnids.txt"
    wnids.write_text("n02110341\ndog\n")
    bad = run_cli(
        "build", "wordnet_hierarchy", "--option", f"wnids_file={wnids}", "--out", str(tmp_path / "p"), check=False
    )
    assert bad.returncode == 2 and "'dog' is not a wnid" in bad.stderr


def _clustered_outputs(path, ids, labels, seed=0):
    """Features whose class means form 2 well-separated groups of classes (even vs odd class index)."""
    rng = np.random.default_rng(seed)
    centers = {c: np.r_[np.full(4, 10.0 if c % 2 else -10.0), rng.normal(size=4)] for c in set(labels)}
    features = np.stack([centers[c] + 0.01 * rng.normal(size=8) for c in labels]).astype(np.float32)
    np.savez(path, ids=np.asarray(ids, dtype=str), features=features)
    return path


def test_kmeans_dataset_is_deterministic_and_recovers_groups(val_layouts, val_images, tmp_path):
    val = build_val(val_layouts, "folders", tmp_path / "val")
    outputs = _clustered_outputs(
        tmp_path / "f.npz", [im.image_id for im in val_images], [im.label for im in val_images]
    )
    folders = []
    for run in ("a", "b"):
        result = run_cli(
            "build",
            "kmeans_hierarchy",
            "--option",
            f"outputs={outputs}",
            "--input",
            str(val),
            "--option",
            "classes=present",
            "--seed",
            "3",
            "--out",
            str(tmp_path / run),
            "--no-progress",
        )
        folders.append(DatasetFolder(result.stdout.strip().splitlines()[-1]))
    assert folders[0].path.name.startswith("kmeans_hierarchy-1.0.0-seed3")
    assert folder_bytes(folders[0].path) == folder_bytes(folders[1].path)
    table = folders[0].read_table(None, "classes").to_pydict()
    present = sorted({im.label for im in val_images})
    assert table["class_index"] == present and len(table) == 2 + 4  # 12 classes: levels 0..3
    level1 = dict(zip(table["class_index"], table["level_1"]))
    assert len({level1[c] for c in present if c % 2}) == 1 and len({level1[c] for c in present if not c % 2}) == 1
    assert level1[next(c for c in present if c % 2)] != level1[next(c for c in present if not c % 2)]


def test_kmeans_needs_every_class_unless_told_otherwise(val_layouts, val_images, tmp_path):
    val = build_val(val_layouts, "folders", tmp_path / "val")
    outputs = _clustered_outputs(
        tmp_path / "f.npz", [im.image_id for im in val_images], [im.label for im in val_images]
    )
    result = run_cli(
        "build",
        "kmeans_hierarchy",
        "--option",
        f"outputs={outputs}",
        "--input",
        str(val),
        "--out",
        str(tmp_path / "o"),
        check=False,
    )
    assert result.returncode == 2 and "class(es) have no samples" in result.stderr


def test_kmeans_refuses_ids_not_in_the_dataset(val_layouts, val_images, tmp_path):
    val = build_val(val_layouts, "folders", tmp_path / "val")
    outputs = _clustered_outputs(
        tmp_path / "f.npz", ["nope"] + [im.image_id for im in val_images[1:]], [im.label for im in val_images]
    )
    result = run_cli(
        "build",
        "kmeans_hierarchy",
        "--option",
        f"outputs={outputs}",
        "--input",
        str(val),
        "--out",
        str(tmp_path / "o"),
        check=False,
    )
    assert result.returncode == 2 and "1 id(s) are not in" in result.stderr and "'nope'" in result.stderr


def test_a_built_wordnet_tree_is_recorded_for_lca_and_a_tree_over_other_classes_is_refused(wordnet_folder, tmp_path):
    from imagenet_suite.errors import ConfigError
    from imagenet_suite.scoring.metrics.lca_distances import distance_matrix, hierarchy_record

    record = hierarchy_record(wordnet_folder.path)
    assert record["kind"] == "wordnet" and record["paper_distance"] == "info" and record["shipped_sha256"] is None
    assert record["build"]["builder"] == "wordnet_hierarchy" and record["build"]["split"] == "nodes"
    assert record["build"]["build_info_sha256"] == wordnet_folder.build_info_sha256
    assert set(record["sources"]) == {"wordnet_data_noun"}
    assert np.array_equal(distance_matrix("info", wordnet_folder.path), imagenet1k_distance_matrix("info"))
    wnids = tmp_path / "wnids.txt"
    wnids.write_text("n02110341\nn02110185\nn01440764\n")
    result = run_cli(
        "build", "wordnet_hierarchy", "--option", f"wnids_file={wnids}", "--out", str(tmp_path / "o"), "--no-progress"
    )
    three = result.stdout.strip().splitlines()[-1]
    with pytest.raises(ConfigError, match=r"a hierarchy over 3 other classes, expected the 1000 ImageNet-1k classes"):
        hierarchy_record(three)
