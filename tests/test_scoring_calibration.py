"""ECE conventions and class-wise ACE against their anchors' formulas on crafted inputs."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from scipy.stats import binned_statistic_dd
from torchmetrics.functional.classification import multiclass_calibration_error

from imagenet_suite.scoring.metrics.calibration import (
    adaptive_calibration_error,
    calibration_bins,
    calibration_error,
    expected_calibration_error,
)
from imagenet_suite.scoring.metrics.row_statistics import row_statistics

CLASSES = 20


def rows_with_confidence(confidences: np.ndarray, predicted: np.ndarray) -> torch.Tensor:
    """Probability rows whose maximum is exactly ``confidences[i]`` at class ``predicted[i]``."""
    conf = torch.tensor(confidences, dtype=torch.float32)
    rest = ((1 - conf) / (CLASSES - 1))[:, None].expand(-1, CLASSES).clone()
    rest[torch.arange(len(conf)), torch.as_tensor(predicted)] = conf
    return rest


def crafted_set(edges10: np.ndarray):
    """Confidences on every 15-bin edge and the given 10-bin edges (float32), exactly 1.0 for ~10 %,
    and spread in between. Rows on an edge are under-confident (always correct) and all others
    over-confident, so moving an edge row to the neighbouring bin changes the ECE."""
    rng = np.random.default_rng(7)
    edges15 = np.linspace(0, 1, 16, dtype=np.float32)[2:]  # >= 2/15 so a row's max is unique
    edges10 = edges10.astype(np.float32)
    spread = rng.uniform(0.1, 1.0, 600).astype(np.float32)
    confidences = np.concatenate([np.repeat(edges15, 20), np.repeat(edges10, 20), np.ones(90, np.float32), spread])
    predicted = rng.integers(0, CLASSES, len(confidences))
    probs = rows_with_confidence(confidences, predicted)
    on_edge = np.arange(len(confidences)) < 20 * (len(edges15) + len(edges10))
    correct = on_edge | (rng.random(len(confidences)) < np.clip(confidences - 0.15, 0, 1))
    labels = np.where(correct, predicted, (predicted + 1 + rng.integers(0, CLASSES - 1, len(predicted))) % CLASSES)
    return probs, torch.from_numpy(labels)


@pytest.fixture(scope="module")
def crafted():
    return crafted_set(np.linspace(0, 1, 11)[2:])


def ours(probs, labels, convention, kind="probs"):
    stats = row_statistics(probs, kind, labels, max_rank=1)
    return expected_calibration_error(stats.confidence, stats.label_rank == 0, convention)


def test_torchmetrics_convention_equals_torchmetrics(crafted):
    probs, labels = crafted
    expected = multiclass_calibration_error(probs, labels, num_classes=CLASSES, n_bins=15, norm="l1").item()
    assert ours(probs, labels, "torchmetrics") == pytest.approx(expected, abs=1e-6)


def test_torchmetrics_convention_equals_torchmetrics_from_logits():
    generator = torch.Generator().manual_seed(3)
    logits = torch.randn(2000, 50, generator=generator) * 4
    labels = torch.randint(0, 50, (2000,), generator=generator)
    expected = multiclass_calibration_error(logits, labels, num_classes=50, n_bins=15).item()
    assert ours(logits, labels, "torchmetrics", kind="logits") == pytest.approx(expected, abs=1e-6)


def guo_reference(confidence: torch.Tensor, correct: torch.Tensor, n_bins=15) -> float:
    """gpleiss ``_ECELoss``: bins (lo, hi], proportions over all samples."""
    edges = torch.linspace(0, 1, n_bins + 1)
    ece = torch.zeros(1)
    for lower, upper in itertools.pairwise(edges):
        in_bin = confidence.gt(lower.item()) * confidence.le(upper.item())
        proportion = in_bin.float().mean()
        if proportion.item() > 0:
            gap = confidence[in_bin].mean() - correct[in_bin].float().mean()
            ece += torch.abs(gap) * proportion
    return ece.item()


def test_guo_convention_equals_the_gpleiss_loop(crafted):
    probs, labels = crafted
    confidence, predicted = probs.max(dim=1)
    expected = guo_reference(confidence, predicted == labels)
    assert ours(probs, labels, "guo") == pytest.approx(expected, abs=1e-6)


def netcal_reference(probs: np.ndarray, labels: np.ndarray, bins=10) -> float:
    """netcal ``ECE(bins=10).measure(probs, labels)`` (1.3.6): clip, argmax/max, binned_statistic_dd."""
    eps = np.finfo(probs.dtype).eps
    clipped = np.clip(probs, eps, 1 - eps)
    matched = np.argmax(clipped, axis=1) == labels
    confidence = np.max(clipped, axis=1, keepdims=True)
    bounds = [np.linspace(0.0, 1.0, bins + 1)]
    accuracy, _, _ = binned_statistic_dd(confidence, matched, statistic="mean", bins=bounds)
    mean_conf, _, _ = binned_statistic_dd(confidence, confidence[:, 0], statistic="mean", bins=bounds)
    counts, _ = np.histogramdd(confidence, bins=bounds)
    accuracy, mean_conf = np.nan_to_num(accuracy), np.nan_to_num(mean_conf)
    return float(np.sum(np.abs(accuracy - mean_conf) * counts / counts.sum()))


def test_netcal_convention_equals_netcal_binning():
    # float32(0.7) and float32(0.9) lie below the float64 edges 0.7 and 0.9: netcal counts them with
    # numpy's float64 edges but averages them with scipy's float32 edges, so netcal disagrees with
    # itself there; every other 10-bin edge, conf == 1.0 (clipped to 1 - eps) and the 15-bin edges stay.
    edges10 = np.array([0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0])
    probs, labels = crafted_set(edges10)
    expected = netcal_reference(probs.numpy(), labels.numpy())
    assert ours(probs, labels, "netcal") == pytest.approx(expected, abs=1e-6)


def test_conventions_really_differ_on_these_inputs(crafted):
    probs, labels = crafted
    values = {c: ours(probs, labels, c) for c in ("torchmetrics", "guo", "netcal")}
    assert min(abs(a - b) for a in values.values() for b in values.values() if a is not b) > 1e-4


def test_confidence_one_gets_its_own_torchmetrics_bin():
    confidence = torch.tensor([1.0, 1.0, 0.99, 0.5])
    correct = torch.tensor([True, False, True, True])
    bins = calibration_bins(confidence, correct, "torchmetrics")
    assert bins.count.tolist()[-1] == 2 and bins.lower[-1] == bins.upper[-1] == 1.0
    assert calibration_bins(confidence, correct, "guo").count.tolist()[-1] == 3


def test_unknown_convention_is_refused():
    with pytest.raises(ValueError, match="unknown ECE convention 'openood'"):
        expected_calibration_error(torch.tensor([0.5]), torch.tensor([True]), "openood")


def robustness_metrics_ace(probs: np.ndarray, labels: np.ndarray, num_bins=15, threshold=0.0) -> float:
    """Google robustness_metrics GeneralCalibrationError(adaptive, class_conditional, not max_prob, l1)."""
    one_hot = np.eye(probs.shape[1])[labels]
    total = 0.0
    for j in range(probs.shape[1]):
        column, positives = probs[:, j], one_hot[:, j]
        positives, column = positives[column > threshold], column[column > threshold]
        if column.size == 0:
            continue
        indices = np.minimum(
            np.round(np.linspace(0, len(column), num_bins, endpoint=False)).astype(int), len(column) - 1
        )
        upper_edges = np.sort(column)[indices][1:]
        bin_of = np.digitize(column, upper_edges)
        sums = np.bincount(bin_of, weights=column, minlength=num_bins).astype(np.float64)
        counts = np.bincount(bin_of, minlength=num_bins) + np.finfo(np.float64).eps
        accuracy = np.bincount(bin_of, weights=positives, minlength=num_bins) / counts
        total += np.sum(np.abs((accuracy - sums / counts) * counts / float(len(column)))) / probs.shape[1]
    return total


def ace(probs: torch.Tensor, labels: torch.Tensor, kind="probs") -> float:
    stats = row_statistics(probs, kind, labels, max_rank=1)
    return adaptive_calibration_error(probs, labels, stats.normalizer)


def test_ace_equals_robustness_metrics_with_ties_and_zeros():
    rng = np.random.default_rng(11)
    raw = rng.dirichlet(np.full(CLASSES, 0.3), size=700).astype(np.float32)
    raw = np.round(raw * 64) / 64  # many exactly equal values (ties at adaptive edges)
    raw[:, 3] = 0.0  # a class whose probabilities are all 0 (excluded by the threshold)
    raw[raw.sum(1) == 0, 0] = 1.0
    probs = raw / raw.sum(1, keepdims=True)
    labels = rng.integers(0, CLASSES, 700)
    expected = robustness_metrics_ace(probs, labels)
    assert ace(torch.from_numpy(probs), torch.from_numpy(labels)) == pytest.approx(expected, abs=1e-9)


def test_thresholded_ace_equals_robustness_metrics():
    generator = torch.Generator().manual_seed(8)
    logits = torch.randn(900, 25, generator=generator) * 2
    labels = torch.randint(0, 25, (900,), generator=generator)
    stats = row_statistics(logits, "logits", labels, max_rank=1)
    expected = robustness_metrics_ace(torch.softmax(logits, 1).numpy(), labels.numpy(), threshold=0.01)
    assert adaptive_calibration_error(logits, labels, stats.normalizer, threshold=0.01) == pytest.approx(
        expected, abs=1e-9
    )


def test_bin_sum_paths_agree_with_empty_bins_and_empty_rows():
    from imagenet_suite.scoring.metrics.calibration import _bin_sums_cumsum, _bin_sums_reduceat

    rows = torch.sort(torch.rand(4, 50, generator=torch.Generator().manual_seed(2)), dim=1).values
    bounds = torch.tensor([[0, 0, 10, 10, 50], [5, 20, 20, 49, 50], [50, 50, 50, 50, 50], [0, 1, 2, 3, 50]])
    expected = torch.stack(
        [torch.stack([rows[r, bounds[r, b] : bounds[r, b + 1]].double().sum() for b in range(4)]) for r in range(4)]
    )
    assert torch.allclose(_bin_sums_reduceat(rows.clone(), bounds), expected, atol=1e-12)
    assert torch.allclose(_bin_sums_cumsum(rows.clone(), bounds), expected, atol=1e-12)


def test_ace_from_logits_equals_reference_on_softmax():
    generator = torch.Generator().manual_seed(5)
    logits = torch.randn(1500, 30, generator=generator) * 3
    labels = torch.randint(0, 30, (1500,), generator=generator)
    expected = robustness_metrics_ace(torch.softmax(logits, 1).numpy(), labels.numpy())
    assert ace(logits, labels, kind="logits") == pytest.approx(expected, abs=1e-7)


def test_ace_does_not_depend_on_block_size(monkeypatch):
    from imagenet_suite.scoring.metrics import calibration

    generator = torch.Generator().manual_seed(9)
    logits = torch.randn(400, 64, generator=generator)
    labels = torch.randint(0, 64, (400,), generator=generator)
    whole = ace(logits, labels, "logits")
    monkeypatch.setattr(calibration, "ACE_BLOCK_ELEMENTS", 400 * 5)
    assert ace(logits, labels, "logits") == pytest.approx(whole, abs=1e-12)


def test_calibration_error_is_the_geometric_mean():
    assert calibration_error(0.04, 0.0001) == pytest.approx(math.sqrt(0.04 * 0.0001))
    assert math.isnan(calibration_error(float("nan"), 0.1))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_calibration_equals_cpu(crafted):
    probs, labels = crafted
    for convention in ("torchmetrics", "guo", "netcal"):
        assert ours(probs.cuda(), labels.cuda(), convention) == pytest.approx(ours(probs, labels, convention), abs=1e-9)
    assert ace(probs.cuda(), labels.cuda()) == pytest.approx(ace(probs, labels), abs=1e-9)
