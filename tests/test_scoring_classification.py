"""Top-k, ReaL, per-class and class-subset accuracy against plain numpy references."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from imagenet_suite.errors import OutputsError
from imagenet_suite.scoring import batching
from imagenet_suite.scoring.metrics.classification import (
    label_ranks,
    per_class_accuracy,
    real_topk_accuracy,
    top1_per_class,
    top_classes,
    topk_accuracy,
)


def numpy_topk_sets(scores: np.ndarray, k: int) -> np.ndarray:
    """Each row's k best classes: descending score, ties to the lowest index (lexsort, no torch)."""
    index = np.arange(scores.shape[1])
    return np.stack([np.lexsort((index, -row))[:k] for row in scores])


def bf16_scores(rows: int, classes: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(rows, classes, generator=generator) * 3).to(torch.bfloat16)


@pytest.fixture(scope="module")
def tied():
    """bf16 logits with many ties at the top-1 and rank-5/6 boundaries, and labels near the top."""
    scores = bf16_scores(3000, 1000, seed=0)
    reference = numpy_topk_sets(scores.float().numpy(), 6)
    rng = np.random.default_rng(0)
    labels = reference[np.arange(len(reference)), rng.integers(0, 6, len(reference))]  # labels at ranks 0..5
    return scores, torch.from_numpy(labels), reference


def test_bf16_data_really_has_ties(tied):
    scores, _, reference = tied
    values = scores.float().numpy()
    rows = np.arange(len(values))
    tied_top1 = (values == values[rows, reference[:, 0]][:, None]).sum(1) > 1
    tied_top5 = (values == values[rows, reference[:, 4]][:, None]).sum(1) > 1
    assert tied_top1.mean() > 0.01 and tied_top5.mean() > 0.05


@pytest.mark.parametrize("k", [1, 5, 6])
def test_ordered_top_classes_equal_numpy_lexsort(tied, k):
    scores, _, reference = tied
    assert top_classes(scores, k).tolist() == reference[:, :k].tolist()


def test_ties_spanning_many_classes_at_the_cut():
    scores = torch.tensor([[5.0, 1.0, 1.0, 7.0, 1.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 9.0]])
    assert top_classes(scores, 3).tolist() == [[3, 0, 1], [6, 0, 1]]
    assert top_classes(scores.to(torch.bfloat16), 6).tolist() == [[3, 0, 1, 2, 4, 5], [6, 0, 1, 2, 3, 4]]


@pytest.mark.parametrize("k", [1, 2, 5])
def test_topk_matches_numpy_reference_under_bf16_ties(tied, k):
    scores, labels, reference = tied
    expected = (reference[:, :k] == labels.numpy()[:, None]).any(1)
    result = topk_accuracy(scores, labels, ks=(k,))[k]
    assert (result.numerator, result.denominator) == (int(expected.sum()), len(expected))


def test_label_ranks_equal_reference_positions(tied):
    scores, labels, reference = tied
    position = np.argmax(reference == labels.numpy()[:, None], axis=1)  # labels sit at ranks 0..5
    assert label_ranks(scores, labels, max_rank=6).tolist() == position.tolist()
    assert label_ranks(scores, labels, max_rank=3).tolist() == np.minimum(position, 3).tolist()


def test_topk_does_not_depend_on_chunk_size(tied, monkeypatch):
    scores, labels, _ = tied
    whole = topk_accuracy(scores, labels, ks=(1, 5))
    monkeypatch.setattr(batching, "CPU_CHUNK_ELEMENTS", 1000 * 7)  # 7-row chunks
    assert topk_accuracy(scores, labels, ks=(1, 5)) == whole


def test_ties_go_to_the_lowest_class_index():
    scores = torch.tensor([[1.0, 3.0, 3.0, 3.0, 0.0]])
    assert label_ranks(scores, torch.tensor([1]), 5).item() == 0
    assert label_ranks(scores, torch.tensor([2]), 5).item() == 1
    assert label_ranks(scores, torch.tensor([3]), 5).item() == 2
    assert label_ranks(scores, torch.tensor([0]), 5).item() == 3


def test_class_subset_slices_scores_before_ranking():
    scores = torch.tensor([[9.0, 1.0, 2.0, 3.0], [0.0, 5.0, 9.0, 1.0]])
    labels = torch.tensor([3, 1])
    assert topk_accuracy(scores, labels, ks=(1,))[1].numerator == 0
    # restricted to classes {1, 3}: row 0 -> class 3 wins (3 > 1), row 1 -> class 1 wins (5 > 1)
    assert topk_accuracy(scores, labels, ks=(1,), class_subset=[1, 3])[1].numerator == 2


def test_class_subset_may_be_a_boolean_mask():
    scores = torch.tensor([[9.0, 1.0, 2.0, 3.0], [0.0, 5.0, 9.0, 1.0]])
    mask = [False, True, False, True]
    assert topk_accuracy(scores, torch.tensor([3, 1]), ks=(1,), class_subset=mask)[1].numerator == 2
    with pytest.raises(OutputsError, match="mask must have 4 entries"):
        topk_accuracy(scores, torch.tensor([3, 1]), class_subset=[True, False])


def test_class_subset_matches_numpy_on_imagenet_r_indices():
    from imagenet_suite.classes import subset_indices

    subset = np.array(subset_indices("imagenet_r"))
    scores = bf16_scores(400, 1000, seed=3)
    rng = np.random.default_rng(3)
    labels = subset[rng.integers(0, len(subset), 400)]
    sliced = scores.float().numpy()[:, subset]
    expected_top1 = subset[numpy_topk_sets(sliced, 1)[:, 0]] == labels
    result = topk_accuracy(scores, torch.from_numpy(labels), ks=(1,), class_subset=subset.tolist())[1]
    assert result.numerator == int(expected_top1.sum())


def test_class_subset_refuses_labels_outside_the_subset():
    with pytest.raises(OutputsError, match="row 1 has label 0, which is not in the evaluation's class subset"):
        topk_accuracy(torch.randn(2, 4), torch.tensor([1, 0]), class_subset=[1, 3])


@pytest.mark.parametrize(("subset", "message"), [([], "non-empty"), ([1, 4], "outside 0..3"), ([1, 1], "twice")])
def test_refuses_malformed_class_subsets(subset, message):
    with pytest.raises(OutputsError, match=message):
        topk_accuracy(torch.randn(2, 4), torch.tensor([1, 1]), class_subset=subset)


def test_real_refuses_label_sets_that_are_not_padded_matrices():
    with pytest.raises(OutputsError, match=r"\[N, L\] padded with -1"):
        real_topk_accuracy(torch.randn(2, 4), torch.tensor([1, 2]))
    with pytest.raises(OutputsError, match="labels must lie in 0..3"):
        real_topk_accuracy(torch.randn(2, 4), torch.tensor([[1, -1], [9, 2]]))


def test_real_topk_with_k_above_the_number_of_classes_counts_every_class_as_in_the_top_k():
    scores = torch.tensor([[0.6, 0.3, 0.1], [0.2, 0.7, 0.1]])
    real = real_topk_accuracy(scores, torch.tensor([[2, -1], [0, -1]]), ks=(1, 5))
    plain = topk_accuracy(scores, torch.tensor([2, 0]), ks=(1, 5))
    assert (real[1].numerator, real[5].numerator, real[5].denominator) == (0, 2, 2)
    assert (plain[5].numerator, plain[5].denominator) == (2, 2)


def test_refuses_labels_outside_the_class_range():
    with pytest.raises(OutputsError, match=r"labels must lie in 0..3"):
        topk_accuracy(torch.randn(2, 4), torch.tensor([1, 4]))


def timm_style_real(scores: np.ndarray, label_sets: list[list[int]], k: int) -> tuple[int, int]:
    """timm RealLabelsImagenet: skip empty sets, correct if any of the top-k is in the set."""
    best = numpy_topk_sets(scores, k)
    hits = [any(p in labels for p in best[i]) for i, labels in enumerate(label_sets) if labels]
    return sum(hits), len(hits)


def test_real_topk_matches_the_timm_loop_and_skips_empty_sets(tied):
    scores, _, _ = tied
    rng = np.random.default_rng(1)
    sets = [sorted(set(rng.integers(0, 1000, size=n).tolist())) for n in rng.choice([0, 1, 1, 2, 3], size=len(scores))]
    best = numpy_topk_sets(scores.float().numpy(), 5)
    for i in range(0, len(sets), 3):  # make many rows hit, some through a tied rank
        sets[i] = sorted(set(sets[i]) | {int(best[i, i % 5])}) if sets[i] else sets[i]
    padded = torch.full((len(sets), max(map(len, sets))), -1, dtype=torch.int64)
    for row, labels in enumerate(sets):
        padded[row, : len(labels)] = torch.tensor(labels, dtype=torch.int64)
    result = real_topk_accuracy(scores, padded, ks=(1, 5))
    for k in (1, 5):
        assert (result[k].numerator, result[k].denominator) == timm_style_real(scores.float().numpy(), sets, k)
    assert result[1].denominator == sum(1 for s in sets if s) < len(sets)


def test_per_class_accuracy_counts_integers():
    correct = torch.tensor([True, False, True, True, False])
    labels = torch.tensor([2, 2, 0, 2, 1])
    hits, totals = per_class_accuracy(correct, labels, 4)
    assert hits.tolist() == [1, 0, 2, 0] and totals.tolist() == [1, 1, 3, 0]
    assert hits.dtype == totals.dtype == torch.int64


def test_top1_per_class_matches_numpy_argmax(tied):
    scores, labels, reference = tied
    hits, totals = top1_per_class(scores, labels)
    correct = reference[:, 0] == labels.numpy()
    assert hits.tolist() == np.bincount(labels.numpy()[correct], minlength=1000).tolist()
    assert totals.tolist() == np.bincount(labels.numpy(), minlength=1000).tolist()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_results_equal_cpu_results(tied):
    scores, labels, _ = tied
    cpu = topk_accuracy(scores, labels, ks=(1, 5))
    assert topk_accuracy(scores.cuda(), labels.cuda(), ks=(1, 5)) == cpu
