"""Robustness summaries: per corruption/severity accuracy, mean of means, pooled, C-robustness vs clean rows."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from imagenet_suite.scoring.evaluation.report import applicable_metrics, families_by_name, score
from imagenet_suite.scoring.metrics import robustness
from imagenet_suite.scoring.metrics.shape import CATEGORIES16, CATEGORY_INDICES
from imagenet_suite.scoring.outputs import ModelOutputs
from tests.test_scoring_join import label_feature, write_dataset_folder

STRING = {"dtype": "string", "_type": "Value"}
INT = {"dtype": "int32", "_type": "Value"}


def corrupted_split(rng: np.random.Generator, sizes: dict[tuple[str, int], int]):
    """Rows (corruption, severity) with the given counts, random correctness flags."""
    corruptions, severities = [], []
    for (name, severity), count in sizes.items():
        corruptions += [name] * count
        severities += [severity] * count
    correct = rng.random(len(corruptions)) < 0.6
    return correct, corruptions, severities


def expected(correct, corruptions, severities):
    """The Beyond Accuracy recipe, computed directly with NumPy."""
    correct, corruptions, severities = np.asarray(correct), np.asarray(corruptions), np.asarray(severities)
    corrupted = corruptions != "clean"
    per_corruption = {}
    for name in sorted(set(corruptions[corrupted])):
        levels = sorted(set(severities[corruptions == name]))
        per_corruption[name] = np.mean([correct[(corruptions == name) & (severities == s)].mean() for s in levels])
    mean = np.mean(list(per_corruption.values()))
    clean = correct[~corrupted].mean() if (~corrupted).any() else math.nan
    return per_corruption, mean, correct[corrupted].mean(), clean, mean / clean


def test_summary_follows_mean_over_severities_then_corruptions():
    rng = np.random.default_rng(0)
    sizes = {("clean", 0): 40, ("fog", 1): 30, ("fog", 2): 10, ("snow", 1): 25, ("snow", 5): 45, ("pixelate", 3): 7}
    correct, corruptions, severities = corrupted_split(rng, sizes)
    summary = robustness.summarize(torch.from_numpy(correct), corruptions, torch.tensor(severities))
    per_corruption, mean, pooled, clean, c_rob = expected(correct, corruptions, severities)
    assert summary.per_corruption == pytest.approx(per_corruption)
    assert summary.mean_corruption_accuracy == pytest.approx(mean)
    assert summary.pooled.value == pytest.approx(pooled) and summary.pooled.denominator == 117
    assert summary.clean.value == pytest.approx(clean) and summary.c_robustness == pytest.approx(c_rob)
    assert summary.mean_corruption_accuracy != pytest.approx(summary.pooled.value)  # unequal sizes: not the same


def test_with_equal_split_sizes_the_mean_is_the_flat_mean_of_all_splits():
    rng = np.random.default_rng(1)
    sizes = {(name, s): 20 for name in ("a", "b", "c") for s in range(1, 6)}
    correct, corruptions, severities = corrupted_split(rng, sizes)
    summary = robustness.summarize(torch.from_numpy(correct), corruptions, severities)
    flat = np.mean([f.value for f in summary.per_split.values()])
    assert len(summary.per_split) == 15 and summary.mean_corruption_accuracy == pytest.approx(flat)
    assert summary.clean is None and math.isnan(summary.c_robustness)


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="3 correctness flags, 2 corruptions and 3 severities"):
        robustness.summarize(torch.tensor([True, False, True]), ["a", "b"], [1, 1, 1])


def _folder(tmp_path, ids, corruptions, severities, labels, label_column="label", protocol=None):
    features = {
        "id": STRING,
        "corruption": STRING,
        "severity": INT,
        label_column: label_feature()
        if label_column == "label"
        else {"names": list(CATEGORIES16), "_type": "ClassLabel"},
    }
    columns = {"id": ids, "corruption": corruptions, "severity": severities, label_column: labels}
    return write_dataset_folder(tmp_path, columns, features, protocol, builder="perturbations")


def test_score_reports_robustness_rows_for_a_perturbation_folder(tmp_path):
    rng = np.random.default_rng(2)
    sizes = {("clean", 0): 30, ("gaussian_noise", 1): 30, ("gaussian_noise", 3): 30, ("contrast", 3): 30}
    correct, corruptions, severities = corrupted_split(rng, sizes)
    labels = rng.integers(0, 1000, len(correct))
    logits = torch.randn(len(correct), 1000, generator=torch.Generator().manual_seed(0))
    wrong = (torch.from_numpy(labels) + 1) % 1000
    target = torch.where(torch.from_numpy(correct), torch.from_numpy(labels), wrong)
    logits[torch.arange(len(correct)), target] = 50.0
    ids = [f"img{i}/{c}/{s}" for i, (c, s) in enumerate(zip(corruptions, severities, strict=True))]
    folder = _folder(tmp_path, ids, corruptions, severities, labels.tolist())
    assert {"robustness", "topk_accuracy"} <= set(applicable_metrics(_features(folder), {}))
    report = score(folder, ModelOutputs(logits, ids), metrics=["robustness"])
    per_corruption, mean, pooled, clean, c_rob = expected(correct, corruptions, severities)
    assert report.value("mean_corruption_accuracy") == pytest.approx(mean)
    assert report.value("c_robustness") == pytest.approx(c_rob)
    assert report.value("clean_accuracy") == pytest.approx(clean)
    assert report.value("pooled_corruption_accuracy") == pytest.approx(pooled)
    assert report.value("corruption_accuracy", subgroup="contrast") == pytest.approx(per_corruption["contrast"])
    assert report.value("relative_corruption_accuracy", subgroup="contrast") == pytest.approx(
        per_corruption["contrast"] / clean
    )
    split = next(r for r in report.rows if r.subgroup == "gaussian_noise/3")
    assert split.denominator == 30 and split.numerator == int(correct[30 * 2 : 30 * 3].sum())


def _features(folder):
    from imagenet_suite.dataset.folder import DatasetFolder

    return DatasetFolder(folder).config_info()["features"]


def test_16_class_sets_use_the_decision_mapping(tmp_path):
    rng = np.random.default_rng(3)
    sizes = {("clean", 0): 16, ("fog", 2): 16}
    correct, corruptions, severities = corrupted_split(rng, sizes)
    labels = rng.integers(0, 16, len(correct))
    decided = np.where(correct, labels, (labels + 3) % 16)
    logits = torch.zeros(len(correct), 1000)
    for row, category in enumerate(decided):
        logits[row, list(CATEGORY_INDICES[CATEGORIES16[category]])] = 20.0
    ids = [f"s{i}" for i in range(len(correct))]
    folder = _folder(
        tmp_path, ids, corruptions, severities, labels.tolist(), "label16", {"decision_mapping": "imagenet_16"}
    )
    assert "robustness16" in applicable_metrics(_features(folder), {"decision_mapping": "imagenet_16"})
    assert "robustness16" not in applicable_metrics(_features(folder), {})
    report = score(folder, ModelOutputs(logits, ids), metrics=["robustness16"])
    _, mean, _, _clean, c_rob = expected(correct, corruptions, severities)
    assert report.value("mean_corruption_accuracy", "accuracy16") == pytest.approx(mean)
    assert report.value("c_robustness", "accuracy16") == pytest.approx(c_rob)


def test_metrics_are_listed_and_need_their_columns():
    assert families_by_name()["robustness"].columns == ("corruption", "severity", "label")
    assert "robustness" not in applicable_metrics({"label": label_feature()}, {})
