"""Class-wise ACE on bootstrap resamples by the anchored method
(:class:`~imagenet_suite.scoring.metrics.ace_replicates.ClasswiseAceReplicates`) against the per-resample
method (``exact-loop``), which ``test_scoring_uncertainty`` checks against the metric of the resampled rows:

* equal to 1e-12 relative (1e-15 absolute for an ACE near 0; the float64 masses are added in another order,
  nothing else differs) on resamples of logits with and without ties, fp16 logits, probabilities
  underflowing to 0 (skipped by the threshold), probabilities of exactly 1.0, stored probabilities with
  long runs of equal values, a model with a few distinct outputs (every class recomputed), classes without images or without a probability above the threshold, a class
  subset, 2 to 15 bins, and counts that are no bootstrap draw at all;
* the fast path settles nearly every (resample, class) pair where it should, the per-resample method the
  rest (both are exercised);
* chunking the resamples changes nothing, and ``resample()`` hands a number that asks for larger chunks the
  same draws;
* the intervals a report gets are the ones the per-resample method gives;
* on a GPU, the same values as on the CPU.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from imagenet_suite.scoring.metrics import ace_replicates, calibration, row_statistics
from imagenet_suite.scoring.metrics.ace_loop import exact_loop_replicates
from imagenet_suite.scoring.metrics.ace_replicates import (
    METHODS,
    ClasswiseAceReplicates,
    adaptive_calibration_error_replicates,
)
from imagenet_suite.scoring.metrics.paired_tests import percentile_interval
from imagenet_suite.scoring.metrics.uncertainty import bootstrap_counts, proportion, resampled

TOLERANCE = 1e-12
FLOOR = 1e-15  # an ACE near 0 (every probability 0 or 1) is a difference of terms near 1: agreement to 15 decimals


def _logits(rows: int, classes: int, scale: float, seed: int, boost: float = 3.0):
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, classes, (rows,), generator=generator)
    logits = torch.randn(rows, classes, generator=generator) * scale
    logits[torch.arange(rows), labels] += boost
    return logits, labels


def _counts(rows: int, resamples: int, seed: int = 0) -> torch.Tensor:
    return bootstrap_counts(seed, [f"img{i:05d}" for i in range(rows)], range(resamples))


def _compare(scores, labels, kind, counts, num_bins=15, threshold=0.0, columns=None):
    """The anchored replicates (and how many pairs it recomputed) after checking them against the
    per-resample method."""
    normalizer = row_statistics.row_statistics(scores, kind, labels, columns=columns).normalizer
    anchored = ClasswiseAceReplicates(scores, labels, normalizer, num_bins, threshold, columns)
    found = anchored(counts)
    expected = exact_loop_replicates(scores, labels, normalizer, counts, num_bins, threshold, columns)
    assert found.dtype == torch.float64 and found.shape == (counts.shape[0],)
    assert torch.allclose(found, expected, rtol=TOLERANCE, atol=FLOOR, equal_nan=True)
    return found, anchored.recomputed


def _rounded(rows: int, classes: int, steps: int, seed: int):
    """Stored probabilities in steps of 1 / ``steps``: runs of equal values (rows summing to 1 within 1 / steps)."""
    logits, labels = _logits(rows, classes, 1.0, seed)
    return torch.round(torch.softmax(logits, dim=1) * steps) / steps, labels


def _case(name: str):
    """``(scores, labels, kind)`` of a named case."""
    if name == "logits":
        return (*_logits(1500, 30, 1.5, 1), "logits")
    if name == "ties":  # logits in steps of 1/2
        logits, labels = _logits(1500, 30, 1.5, 2)
        return torch.round(logits * 2) / 2, labels, "logits"
    if name == "underflow to 0":
        return (*_logits(800, 20, 40.0, 3), "logits")
    if name == "exactly 1.0":
        return (*_logits(1200, 25, 1.0, 4, boost=30.0), "logits")
    if name == "fp16 logits":
        logits, labels = _logits(1500, 30, 3.0, 5)
        return logits.half(), labels, "logits"
    return (*_rounded(1500, 30, 4096, 16), "probs")  # tied probabilities


CASES = ("logits", "ties", "underflow to 0", "exactly 1.0", "fp16 logits", "tied probabilities")


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("num_bins", [15, 4, 2])
def test_anchored_equals_the_per_resample_method(case, num_bins):
    scores, labels, kind = _case(case)
    counts = _counts(scores.shape[0], 12, seed=num_bins)
    _compare(scores, labels, kind, torch.cat([torch.ones(1, scores.shape[0], dtype=torch.int64), counts]), num_bins)


def test_identity_resample_is_the_metric():
    logits, labels = _logits(2000, 40, 2.0, 6)
    normalizer = row_statistics.row_statistics(logits, "logits", labels).normalizer
    point = calibration.adaptive_calibration_error(logits, labels, normalizer)
    found = ClasswiseAceReplicates(logits, labels, normalizer)(torch.ones(1, 2000, dtype=torch.int64))
    assert float(found[0]) == pytest.approx(point, rel=TOLERANCE, abs=0)


def test_the_fast_path_settles_nearly_every_pair():
    logits, labels = _logits(4000, 40, 1.5, 7)
    _, recomputed = _compare(logits, labels, "logits", _counts(4000, 25))
    assert recomputed <= 25 * 40 // 100  # at most 1 %: the windows hold the edges of bootstrap resamples


def test_long_runs_of_equal_probabilities_go_to_the_per_resample_method():
    # stored probabilities in steps of 1/64: runs of hundreds of equal values at every edge
    probs, labels = _rounded(1500, 12, 64, 8)
    _, recomputed = _compare(probs, labels, "probs", _counts(1500, 10))
    assert recomputed > 0


def test_a_model_with_few_distinct_outputs_is_recomputed_class_by_class_block_at_once():
    # the scale benchmark's nearly free model on a pool of 8 pictures: every class's values are 8 runs of
    # ~190 equal values, longer than any window, so every class of every block goes to the per-resample method
    logits, labels = _logits(8, 12, 1.5, 12)
    scores = logits[torch.arange(1520) % 8]
    labels = torch.randint(0, 12, (1520,), generator=torch.Generator().manual_seed(12))
    found, recomputed = _compare(scores, labels, "logits", _counts(1520, 9))
    assert recomputed == 9 * 12 and found.isfinite().all()


def test_classes_without_images_or_without_probability_above_the_threshold():
    logits, labels = _logits(1000, 30, 2.0, 9)
    labels = labels % 10  # classes 10..29 have no image
    logits[:, 25:] -= 60.0  # classes 25..29: every probability below the threshold
    _compare(logits, labels, "logits", _counts(1000, 10), threshold=1e-12)


def test_a_class_subset():
    logits, labels = _logits(1200, 40, 1.5, 10)
    columns = torch.arange(0, 40, 3)
    keep = torch.isin(labels, columns)
    position = torch.full((40,), -1, dtype=torch.int64)
    position[columns] = torch.arange(len(columns))
    scores, local = logits[keep], position[labels[keep]]
    _compare(scores, local, "logits", _counts(len(local), 10), columns=columns)


def test_counts_that_are_no_bootstrap_draw():
    logits, labels = _logits(600, 15, 1.5, 11)
    counts = _counts(600, 6)
    counts[0] = 0  # nothing drawn
    counts[1] = 0
    counts[1, 17] = 600  # one image 600 times
    counts[2, :300] = 2  # the first half twice, the rest never
    counts[2, 300:] = 0
    counts[3] = 1
    counts[3, labels == 4] = 0  # class 4 without images
    counts[4] *= 7  # every count times 7
    found, _ = _compare(logits, labels, "logits", counts)
    assert found[0].isnan() or found[0] == 0


def test_chunks_of_resamples_change_nothing():
    logits, labels = _logits(2000, 30, 1.5, 12)
    normalizer = row_statistics.row_statistics(logits, "logits", labels).normalizer
    counts = _counts(2000, 30)
    whole = ClasswiseAceReplicates(logits, labels, normalizer)(counts)
    ace = ClasswiseAceReplicates(logits, labels, normalizer)
    parts = torch.cat([ace(counts[start : start + 7]) for start in range(0, 30, 7)])
    assert torch.allclose(whole, parts, rtol=TOLERANCE, atol=0)


@pytest.mark.parametrize("case", ["logits", "tied probabilities"])
def test_parts_of_a_calls_resamples_change_nothing(case, monkeypatch):
    # the walks, bins and errors of one resample at a time give each resample the same errors, to the bit
    scores, labels, kind = _case(case)
    counts = _counts(scores.shape[0], 20, seed=3)
    whole, whole_recomputed = _compare(scores, labels, kind, counts)
    monkeypatch.setattr(ace_replicates, "PART_ELEMENTS", 1)
    parted, parted_recomputed = _compare(scores, labels, kind, counts)
    assert torch.equal(parted, whole) and parted_recomputed == whole_recomputed


@pytest.mark.parametrize("case", ["logits", "tied probabilities"])
def test_the_count_products_type_changes_nothing(case, monkeypatch):
    # int8 products where they are fast (AVX-512 VNNI or AMX), float32 or float64 elsewhere: exact in each, so the
    # replicates are the same to the bit
    scores, labels, kind = _case(case)
    counts = _counts(scores.shape[0], 20, seed=5)
    used, count_type = [], ace_replicates._count_type

    def recorded(*args):
        used.append(count_type(*args))
        return used[-1]

    monkeypatch.setattr(ace_replicates, "_count_type", recorded)
    replicates = []
    for fast, exact in ((True, ace_replicates.EXACT_FLOAT32), (False, ace_replicates.EXACT_FLOAT32), (False, 0)):
        monkeypatch.setattr(ace_replicates, "int8_products_are_fast", lambda fast=fast: fast)
        monkeypatch.setattr(ace_replicates, "EXACT_FLOAT32", exact)
        replicates.append(_compare(scores, labels, kind, counts)[0])
    assert used == [torch.int8, torch.float32, torch.float64]
    assert all(torch.equal(replicates[0], other) for other in replicates[1:])


def test_the_functional_form_takes_either_method():
    logits, labels = _logits(500, 10, 1.5, 13)
    normalizer = row_statistics.row_statistics(logits, "logits", labels).normalizer
    counts = _counts(500, 5)
    found = [adaptive_calibration_error_replicates(logits, labels, normalizer, counts, method=m) for m in METHODS]
    assert torch.allclose(found[0], found[1], rtol=TOLERANCE, atol=0)
    with pytest.raises(ValueError, match="unknown ACE resampling method"):
        adaptive_calibration_error_replicates(logits, labels, normalizer, counts, method="approximate")
    one_bin = adaptive_calibration_error_replicates(logits, labels, normalizer, counts, num_bins=1)
    assert torch.allclose(one_bin, exact_loop_replicates(logits, labels, normalizer, counts, 1), rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------- in a report


def test_a_larger_chunk_asked_for_gets_the_same_draws(monkeypatch):
    from imagenet_suite.scoring.summary import intervals

    ids = [f"img{i:03d}" for i in range(50)]
    hits = torch.arange(50) % 3 != 0
    monkeypatch.setattr(intervals, "CHUNK_ELEMENTS", 50 * 4)  # 4 resamples a chunk by default
    seen = []

    def first_counts(counts):
        seen.append(counts[0].clone())
        return counts[0][:, 0].double()

    estimates = {
        ("top1_accuracy", "", ""): proportion(ids, hits),
        ("first", "", ""): resampled([ids], first_counts, chunk_elements=50 * 11),  # 11 at a time
    }
    found = intervals.resample(estimates, intervals.Bootstrap(resamples=30, seed=3))
    assert [len(counts) for counts in seen[1:]] == [11, 11, 8]
    drawn = torch.cat(seen[1:])
    assert torch.equal(drawn, bootstrap_counts(3, ids, range(30)))
    expected = (drawn.double() @ hits.double()) / 50
    assert np.array_equal(found.replicates[("top1_accuracy", "", "")], expected.numpy())


def test_report_intervals_are_the_per_resample_methods():
    from imagenet_suite.classes import imagenet_wnids
    from imagenet_suite.scoring.evaluation.context import RESAMPLED
    from imagenet_suite.scoring.evaluation.report import evaluate
    from imagenet_suite.scoring.join import JoinedSplit
    from imagenet_suite.scoring.metrics.uncertainty import derived
    from imagenet_suite.scoring.outputs import ModelOutputs
    from imagenet_suite.scoring.summary.intervals import Bootstrap, resample

    logits, labels = _logits(3000, 50, 1.5, 14)
    ids = [f"ILSVRC2012_val_{i:08d}" for i in range(3000)]
    features = {"label": {"_type": "ClassLabel", "names": list(imagenet_wnids())[:50]}}
    joined = JoinedSplit(ModelOutputs(logits, ids), {"label": labels}, features, {}, "imagenet_val", "default", "val")
    report = evaluate(joined, ["calibration"])
    row = ("calibration_error", "sqrt(ece*ace)", "")
    anchored = report.artifacts[RESAMPLED][row]
    stats = row_statistics.row_statistics(logits, "logits", labels)
    normalizer, confidence, correct = stats.normalizer, stats.confidence, stats.label_rank == 0
    ece = resampled([ids], lambda counts: calibration.ece_replicates(confidence, correct, counts[0]))
    ace = resampled([ids], lambda counts: exact_loop_replicates(logits, labels, normalizer, counts[0]))
    reference = derived(torch.sqrt, derived(torch.mul, ece, ace))
    bootstrap = Bootstrap(resamples=200, seed=5)
    found = resample({row: anchored}, bootstrap)
    expected = resample({row: reference}, bootstrap)
    assert found.identity[row] == pytest.approx(report.value(*row), rel=1e-9)
    assert np.allclose(found.replicates[row], expected.replicates[row], rtol=TOLERANCE, atol=0)
    low, high = percentile_interval(found.replicates[row])
    assert (low, high) == pytest.approx(percentile_interval(expected.replicates[row]), rel=TOLERANCE, abs=0)


# ---------------------------------------------------------------------------------------------- GPU


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_a_gpu_the_values_are_the_cpus():
    logits, labels = _logits(3000, 40, 1.5, 15)
    counts = _counts(3000, 20)
    on_cpu = _compare(logits, labels, "logits", counts)[0]
    logits, labels = logits.cuda(), labels.cuda()
    normalizer = row_statistics.row_statistics(logits, "logits", labels).normalizer
    on_gpu = ClasswiseAceReplicates(logits, labels, normalizer)(counts)
    assert on_gpu.device.type == "cpu"
    assert torch.allclose(on_gpu, on_cpu, rtol=1e-6, atol=0)  # the GPU's softmax may round differently
    expected = exact_loop_replicates(logits, labels, normalizer, counts)
    assert torch.allclose(on_gpu, expected, rtol=TOLERANCE, atol=0)
