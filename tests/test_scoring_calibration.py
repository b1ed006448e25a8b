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


def adaptive_upper_edges(column: np.ndarray, num_bins: int) -> np.ndarray:
    """robustness_metrics ``_get_adaptive_bins``: the sorted values at ``min(round(linspace(0, n, B,
    endpoint=False)), n - 1)``, the first dropped and 1.0 appended (``linspace(0, 1, B + 1)[1:]`` for
    no values)."""
    if column.size == 0:
        return np.linspace(0, 1, num_bins + 1)[1:]
    at = np.round(np.linspace(0, column.size, num_bins, endpoint=False)).astype(int)
    edges = np.concatenate((np.sort(column)[np.minimum(at, column.size - 1)][1:], [1.0]))
    assert len(edges) == num_bins and edges[-1] == 1
    return edges


def binned_error(column: np.ndarray, positives: np.ndarray, upper: np.ndarray, num_bins: int) -> float:
    """robustness_metrics ``_get_calibration_error`` with ``norm='l1'``: ``np.digitize`` (a value >= 1.0
    lands in bin B, past the last edge), bincounts, float64 eps added to the counts, sum of
    |(accuracy - confidence) * count / n| (0 for no values)."""
    if column.size == 0:
        return 0.0
    bin_of = np.digitize(column, upper)
    sums = np.bincount(bin_of, weights=column, minlength=num_bins).astype(np.float64)
    counts = np.bincount(bin_of, minlength=num_bins) + np.finfo(np.float64).eps
    accuracy = np.bincount(bin_of, weights=positives, minlength=num_bins) / counts
    return float(np.sum(np.abs((accuracy - sums / counts) * (counts / float(column.size)))))


def robustness_metrics_ace(probs: np.ndarray, labels: np.ndarray, num_bins=15, threshold=0.0) -> float:
    """The reference: Google robustness_metrics (Nixon et al. 2019) ``GeneralCalibrationError`` with
    ``binning_scheme='adaptive', class_conditional=True, max_prob=False, norm='l1'``, as QUBA copies
    it, in plain numpy (``metrics/uncertainty.py``, ``update_state``): per class j, keep
    ``p[:, j] > threshold`` (numpy compares a float32 array with a Python float in float32), bin and
    weigh as above, divide by the number of classes (classes with nothing kept count 0) and sum."""
    num_classes = probs.shape[1]
    one_hot = np.eye(num_classes)[labels]
    per_class = []
    for j in range(num_classes):
        kept = probs[:, j] > threshold
        column, positives = probs[kept, j], one_hot[kept, j]
        upper = adaptive_upper_edges(column, num_bins)
        per_class.append(binned_error(column, positives, upper, num_bins) / num_classes)
    return float(np.sum(per_class))


def ace(probs: torch.Tensor, labels: torch.Tensor, kind="probs", **options) -> float:
    stats = row_statistics(probs, kind, labels, max_rank=1, columns=options.get("columns"))
    return adaptive_calibration_error(probs, labels, stats.normalizer, **options)


def test_reported_example_puts_exact_ones_in_a_bin_of_their_own():
    """Two classes, two bins. Class 0: 0.2, 0.6, 0.8, 1.0 with one image of class 0 (the third);
    n = 4, edge position round(linspace(0, 4, 2, endpoint=False))[1] = 2 -> upper edges (0.8, 1.0);
    digitize: {0.2, 0.6} -> bin 0 |0 - 0.8|, {0.8} -> bin 1 |1 - 0.8|, {1.0} -> bin 2 |0 - 1.0|;
    error (0.8 + 0.2 + 1.0) / 4 = 0.5. Class 1: 0.8, 0.4, 0.2, 0.0, the 0.0 dropped (not > 0);
    n = 3, position round(1.5) = 2 -> edges (0.8, 1.0); {0.4, 0.2} |1 - 0.6|, {0.8} |1 - 0.8|;
    error 0.6 / 3 = 0.2. ACE = (0.5 + 0.2) / 2 = 0.35. Merging 1.0 into the bin of 0.8 (what this
    package did before) gives class 0 (0.8 + |1 - 1.8|) / 4 = 0.4 and ACE 0.30."""
    class0 = np.array([0.2, 0.6, 0.8, 1.0], dtype=np.float32)
    probs = np.stack([class0, 1 - class0], axis=1)
    labels = np.array([1, 1, 0, 1])
    expected = robustness_metrics_ace(probs, labels, num_bins=2)
    assert expected == pytest.approx(0.35, abs=1e-7)
    assert ace(torch.from_numpy(probs), torch.from_numpy(labels), num_bins=2) == pytest.approx(expected, abs=1e-12)


def softmax_inputs(rows: int, classes: int, scale: float, seed: int):
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn(rows, classes, generator=generator) * scale
    noise = torch.randint(0, classes, (rows,), generator=generator)
    right = torch.rand(rows, generator=generator) < 0.75
    return torch.softmax(logits, dim=1), torch.where(right, logits.argmax(1), noise)


@pytest.mark.parametrize(
    ("rows", "classes", "scale", "num_bins"),
    [(1, 3, 1.0, 15), (7, 5, 2.0, 15), (14, 4, 1.0, 15), (15, 6, 3.0, 15), (16, 3, 1.0, 15), (100, 10, 4.0, 15),
     (999, 37, 2.0, 15), (4000, 20, 8.0, 15), (3000, 12, 5.0, 7), (250, 8, 30.0, 15)],
)  # fmt: skip
def test_ace_equals_robustness_metrics_on_softmax(rows, classes, scale, num_bins):
    """float32 softmax probabilities given as ``probs``, so both sides bin the very same values;
    scale 30 makes ~40 % of the rows' top probability exactly 1.0 and some others exactly 0.0."""
    probs, labels = softmax_inputs(rows, classes, scale, rows + classes)
    expected = robustness_metrics_ace(probs.numpy(), labels.numpy(), num_bins=num_bins)
    assert ace(probs, labels, num_bins=num_bins) == pytest.approx(expected, abs=1e-12)


def exact_ones_zeros_and_ties(rows: int = 900, classes: int = 12, seed: int = 3):
    """float32 probabilities with many exact 1.0 (one-hot rows), exact 0.0, ties (multiples of 1/64)
    and classes with all, few (< bins) or no values above 0."""
    rng = np.random.default_rng(seed)
    raw = rng.dirichlet(np.full(classes, 0.3), size=rows)
    raw = np.round(raw * 64) / 64  # many exactly equal values (ties at adaptive edges)
    raw[:, 3] = 0.0  # a class whose probabilities are all 0 (excluded by the threshold)
    raw[rng.choice(rows, 6, replace=False), 4] = 5.0  # a class with 6 values above 0 (fewer than 15 bins)
    raw[:, 4] = np.where(raw[:, 4] == 5.0, raw[:, 4], 0.0)
    one_hot = rng.random(rows) < 0.4  # 40 % of rows exactly 1.0 at one class, 0.0 elsewhere
    # class 1 is exactly 1.0 in several of its top bins, class 5 in part of its top bin only
    hot = rng.choice([0, 1, 2, 5, 6], p=[0.15, 0.6, 0.15, 0.05, 0.05], size=rows)
    raw[one_hot] = 0.0
    raw[one_hot, hot[one_hot]] = 1.0
    raw[raw.sum(1) == 0, 0] = 1.0
    probs = (raw / raw.sum(1, keepdims=True)).astype(np.float32)
    labels = np.where(rng.random(rows) < 0.7, probs.argmax(1), rng.integers(0, classes, rows))
    return probs, labels


@pytest.mark.parametrize("num_bins", [15, 4, 2])
def test_ace_equals_robustness_metrics_with_exact_ones_zeros_and_ties(num_bins):
    probs, labels = exact_ones_zeros_and_ties()
    assert (probs == 1.0).sum() > 300 and (probs == 0.0).mean() > 0.3
    assert np.mean(probs[:, 1] == 1.0) > 1 / 15  # class 1's top order statistics are 1.0 themselves
    expected = robustness_metrics_ace(probs, labels, num_bins=num_bins)
    found = ace(torch.from_numpy(probs), torch.from_numpy(labels), num_bins=num_bins)
    assert found == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("threshold", [0.01, 0.1, 1 / 64, 0.5])
def test_thresholded_ace_equals_robustness_metrics(threshold):
    """Probabilities equal to the threshold (as float32) are dropped on both sides."""
    probs, labels = exact_ones_zeros_and_ties(seed=4)
    probs[::7, 5] = np.float32(threshold)
    expected = robustness_metrics_ace(probs, labels, threshold=threshold)
    found = ace(torch.from_numpy(probs), torch.from_numpy(labels), threshold=threshold)
    assert found == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("kind", ["probs", "logits"])
def test_ace_on_a_class_subset_equals_robustness_metrics(kind):
    """``columns=``: scores sliced to a subset and renormalized, labels in the subset's positions;
    the reference gets the very probabilities the normalizer makes of the sliced scores."""
    probs, labels = exact_ones_zeros_and_ties(rows=700, classes=30, seed=5)
    scores = torch.from_numpy(probs) if kind == "probs" else torch.log(torch.from_numpy(probs).clamp(min=1e-30))
    columns = torch.tensor([1, 3, 4, 7, 8, 9, 12, 20, 29])
    rows = torch.from_numpy(np.isin(labels, columns.numpy()) & (probs[:, columns.numpy()].sum(1) > 0))
    scores, subset_labels = scores[rows], torch.searchsorted(columns, torch.from_numpy(labels)[rows])
    stats = row_statistics(scores, kind, subset_labels, max_rank=1, columns=columns)
    subset_probs = stats.normalizer.probabilities(scores.index_select(1, columns), slice(None)).numpy()
    expected = robustness_metrics_ace(subset_probs, subset_labels.numpy())
    found = adaptive_calibration_error(scores, subset_labels, stats.normalizer, columns=columns)
    assert found == pytest.approx(expected, abs=1e-12)


def test_bin_sums_with_empty_bins_and_rows_on_both_paths(monkeypatch):
    from imagenet_suite.scoring.metrics import calibration

    for n_rows in (50, 128, 300, 1):
        rows = torch.sort(torch.rand(4, n_rows, generator=torch.Generator().manual_seed(2)), dim=1).values
        bounds = torch.tensor([[0, 0, 10, 10, 50], [5, 20, 20, 49, 50], [50, 50, 50, 50, 50], [0, 1, 2, 3, 50]])
        bounds = (bounds * n_rows) // 50
        expected = torch.stack(
            [torch.stack([rows[r, bounds[r, b] : bounds[r, b + 1]].double().sum() for b in range(4)]) for r in range(4)]
        )
        assert torch.allclose(calibration._bin_sums(rows.clone(), bounds), expected, rtol=0, atol=1e-12)
        with monkeypatch.context() as patched:  # the torch reductions CUDA runs
            patched.setattr(calibration, "_prefix_sums", calibration._prefix_sums_torch)
            assert torch.allclose(calibration._bin_sums(rows.clone(), bounds), expected, rtol=0, atol=1e-12)


def test_device_generic_path_equals_the_cpu_path(monkeypatch):
    """What CUDA runs (torch sort, float64 sums in torch), forced on the CPU."""
    from imagenet_suite.scoring.metrics import calibration

    probs, labels = exact_ones_zeros_and_ties(seed=6)
    probs, labels = torch.from_numpy(probs), torch.from_numpy(labels)
    expected = robustness_metrics_ace(probs.numpy(), labels.numpy())
    monkeypatch.setattr(calibration, "sort_rows_", lambda values: torch.sort(values, dim=1).values)
    monkeypatch.setattr(calibration, "_prefix_sums", calibration._prefix_sums_torch)
    assert ace(probs, labels) == pytest.approx(expected, abs=1e-12)


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
