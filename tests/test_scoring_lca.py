"""The lca metric family in the scorer: distances named, equal to the hierarchy functions, subset-aware."""

from __future__ import annotations

import pytest
import torch

from imagenet_suite.hierarchies.imagenet1k import imagenet1k_distance_matrix
from imagenet_suite.scoring import LcaOptions, ModelOutputs, ScoreOptions, score
from imagenet_suite.scoring.metrics import lca_scoring
from tests.helpers import build_val, run_cli


@pytest.fixture(scope="module")
def val_folder(val_layouts, tmp_path_factory):
    return build_val(val_layouts, "folders", tmp_path_factory.mktemp("lca"))


def _outputs(val_images, seed=0):
    logits = torch.randn(len(val_images), 1000, generator=torch.Generator().manual_seed(seed))
    return ModelOutputs(logits, [im.image_id for im in val_images])


def test_lca_rows_match_the_hierarchy_functions_for_every_distance(val_folder, val_images):
    outputs = _outputs(val_images)
    report = score(val_folder, outputs, metrics=["lca"])
    labels = torch.tensor([im.label for im in val_images])
    for distance in ("info", "depth_two_sided", "depth_one_sided"):
        matrix = torch.tensor(imagenet1k_distance_matrix(distance))
        assert report.value("lca", distance) == pytest.approx(lca_scoring.lca(outputs.values, labels, matrix).value)
        assert report.value("top5_lca", distance) == pytest.approx(
            lca_scoring.topk_lca(outputs.values, labels, matrix, k=5).value
        )
        assert report.value("elca", f"{distance}/all") == pytest.approx(
            lca_scoring.elca(outputs.values, labels, matrix, kind="logits").value
        )


def test_only_the_requested_distance_is_reported(val_folder, val_images):
    report = score(
        val_folder,
        _outputs(val_images),
        metrics=["lca"],
        options=ScoreOptions(lca=LcaOptions(distances=("depth_one_sided",), elca_variant="mistakes")),
    )
    assert {(r.metric, r.variant) for r in report.rows} == {
        ("lca", "depth_one_sided"),
        ("top5_lca", "depth_one_sided"),
        ("elca", "depth_one_sided/mistakes"),
    }


def test_cli_lca_with_a_built_hierarchy_and_a_bad_distance(val_folder, val_images, tmp_path):
    import numpy as np

    path = tmp_path / "o.npz"
    outputs = _outputs(val_images, seed=3)
    np.savez(path, ids=np.asarray(outputs.ids, dtype=str), logits=outputs.values.numpy())
    result = run_cli("score", str(val_folder), "--outputs", str(path), "--metrics", "lca", "--lca-distance", "info")
    assert "lca" in result.stdout and "info" in result.stdout and "depth_two_sided" not in result.stdout
    bad = run_cli(
        "score", str(val_folder), "--outputs", str(path), "--metrics", "lca", "--lca-distance", "hops", check=False
    )
    assert bad.returncode == 2 and "unknown LCA distance 'hops'" in bad.stderr
    wrong = run_cli(
        "score",
        str(val_folder),
        "--outputs",
        str(path),
        "--metrics",
        "lca",
        "--hierarchy",
        str(val_folder),
        check=False,
    )
    assert wrong.returncode == 2 and "expected a wordnet_hierarchy or kmeans_hierarchy folder" in wrong.stderr
