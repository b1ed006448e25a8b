"""LCA / top-k LCA / ELCA as tensor functions, checked against per-sample reference loops."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from imagenet_suite.errors import HierarchyError, ShapeMismatch
from imagenet_suite.hierarchies.distances import restrict_matrix, tree_distance_matrix
from imagenet_suite.hierarchies.imagenet1k import imagenet1k_tree
from imagenet_suite.hierarchies.kmeans import KMeansHierarchy
from imagenet_suite.scoring.metrics import lca_scoring as scoring

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture(scope="module")
def info() -> np.ndarray:
    return tree_distance_matrix(imagenet1k_tree(), "info")


def outputs(n: int = 600, c: int = 1000, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, c, (n,), generator=g)
    logits = 2.0 * torch.randn(n, c, generator=g)
    logits[torch.arange(n), labels] += 6.0  # about half the samples correct
    return logits, labels


def reference_lca(logits: np.ndarray, labels: np.ndarray, d: np.ndarray) -> float:
    wrong = [d[y, int(np.argmax(row))] for row, y in zip(logits, labels) if np.argmax(row) != y]
    return float(np.mean(wrong))


def reference_elca(logits: np.ndarray, labels: np.ndarray, d: np.ndarray, variant: str) -> float:
    values = []
    for row, y in zip(logits.astype(np.float64), labels):
        if variant == "mistakes" and np.argmax(row) == y:
            continue
        p = np.exp(row - row.max())
        if variant == "exclude_gt":
            p[y] = 0.0
        values.append(p @ d[y] / p.sum())
    return float(np.mean(values))


@pytest.mark.parametrize("device", DEVICES)
def test_lca_matches_the_per_sample_definition(info, device):
    logits, labels = outputs()
    score = scoring.lca(logits.to(device), labels.to(device), info)
    wrong = int((logits.argmax(1) != labels).sum())
    assert 100 < wrong < 500  # a meaningful mix of right and wrong
    assert (score.count, score.num_samples) == (wrong, 600)
    assert score.value == pytest.approx(reference_lca(logits.numpy(), labels.numpy(), info), rel=1e-6)
    per_sample = scoring.per_sample_lca(logits.to(device), labels.to(device), info)
    assert per_sample.device.type == device and torch.isnan(per_sample).sum() == 600 - wrong


def test_lca_of_a_perfect_model_is_nan_with_zero_count(info):
    labels = torch.arange(10)
    score = scoring.lca(torch.eye(10, 1000), labels, info)
    assert math.isnan(score.value) and score.count == 0 and score.num_samples == 10


def test_ties_go_to_the_lowest_class_index(info):
    values = torch.zeros(2, 1000)
    values[0, [7, 3, 500]] = 5.0  # three-way tie: 3 wins
    values[1, [999, 998]] = 1.0
    assert scoring.top1(values).tolist() == [3, 998]
    assert scoring.topk(values, 4).tolist() == [[3, 7, 500, 0], [998, 999, 0, 1]]
    labels = torch.tensor([0, 0])
    assert scoring.lca(values, labels, info).value == pytest.approx((info[0, 3] + info[0, 998]) / 2)


def test_topk_matches_a_stable_sort():
    g = torch.Generator().manual_seed(1)
    values = torch.randint(0, 6, (300, 40), generator=g).float()  # many ties
    expected = torch.sort(values, dim=1, descending=True, stable=True).indices[:, :5]
    assert torch.equal(scoring.topk(values, 5), expected)
    smooth = torch.randn(300, 40, generator=g)
    assert torch.equal(scoring.topk(smooth, 5), torch.sort(smooth, dim=1, descending=True, stable=True).indices[:, :5])
    with pytest.raises(ShapeMismatch, match="k=41"):
        scoring.topk(values, 41)


def test_top5_lca(info):
    logits, labels = outputs(seed=2)
    top5 = torch.sort(logits, dim=1, descending=True, stable=True).indices[:, :5].numpy()
    y = labels.numpy()
    wrong = top5[:, 0] != y
    expected = np.mean([info[y[i], top5[i]].mean() for i in np.flatnonzero(wrong)])  # GT in top-5 counts 0
    score = scoring.topk_lca(logits, labels, info, k=5, chunk_rows=128)
    assert score.count == wrong.sum() and score.value == pytest.approx(expected, rel=1e-6)
    assert scoring.topk_lca(logits, labels, info, k=1).value == pytest.approx(
        scoring.lca(logits, labels, info).value, rel=1e-6
    )


@pytest.mark.parametrize("variant", scoring.ELCA_VARIANTS)
def test_elca_variants_match_their_definitions(info, variant):
    logits, labels = outputs(seed=3)
    score = scoring.elca(logits, labels, info, kind="logits", variant=variant, chunk_rows=100)
    assert score.value == pytest.approx(reference_elca(logits.numpy(), labels.numpy(), info, variant), rel=1e-5)
    wrong = int((logits.argmax(1) != labels).sum())
    assert score.count == (wrong if variant == "mistakes" else 600)


def test_elca_default_variant_is_all_samples(info):
    logits, labels = outputs(seed=4)
    assert scoring.DEFAULT_ELCA_VARIANT == "all"
    assert scoring.elca(logits, labels, info, kind="logits") == scoring.elca(
        logits, labels, info, kind="logits", variant="all"
    )
    ordered = [
        scoring.elca(logits, labels, info, kind="logits", variant=v).value for v in ("all", "mistakes", "exclude_gt")
    ]
    assert ordered[0] < ordered[1] < ordered[2]  # mass on the GT (distance 0) pulls "all" down


def test_softmax_is_applied_exactly_once(info):
    logits, labels = outputs(seed=5)
    from_logits = scoring.elca(logits, labels, info, kind="logits").value
    assert scoring.elca(logits.softmax(1), labels, info, kind="probs").value == pytest.approx(from_logits, rel=1e-5)
    assert scoring.elca(logits.log_softmax(1), labels, info, kind="log_probs").value == pytest.approx(
        from_logits, rel=1e-5
    )
    hot = scoring.elca(logits, labels, info, kind="logits", temperature=2.0).value
    assert hot == pytest.approx(scoring.elca(logits / 2.0, labels, info, kind="logits").value, rel=1e-6)
    with pytest.raises(HierarchyError, match="temperature applies to logits"):
        scoring.elca(logits.softmax(1), labels, info, kind="probs", temperature=2.0)
    with pytest.raises(HierarchyError, match="kind='scores'"):
        scoring.elca(logits, labels, info, kind="scores")


def test_exclude_gt_is_exact_for_saturated_models(info):
    logits = torch.full((2, 1000), -50.0)
    labels = torch.tensor([251, 0])
    logits[0, 251], logits[0, 250] = 60.0, 0.0  # p(GT) = 1 in float32; the rest is dominated by class 250
    logits[1, 0] = 60.0  # the remaining mass is uniform over the 999 others
    per_sample = scoring.per_sample_elca(logits, labels, info, kind="logits", exclude_gt=True)
    assert per_sample[0].item() == pytest.approx(info[251, 250], rel=1e-5)  # dalmatian→husky 6.8826
    assert per_sample[1].item() == pytest.approx(info[0, 1:].mean(), rel=1e-5)


def test_inputs_are_never_modified(info):
    logits, labels = outputs(seed=6)
    before = logits.clone()
    for kind, values in (("logits", logits), ("probs", logits.softmax(1)), ("log_probs", logits.log_softmax(1))):
        kept = values.clone()
        scoring.elca(values, labels, info, kind=kind, variant="exclude_gt")
        assert torch.equal(values, kept), kind
    assert torch.equal(logits, before)


def test_kmeans_distance_plugs_in_the_same_way():
    rng = np.random.default_rng(0)
    hierarchy = KMeansHierarchy.from_class_means(rng.normal(size=(40, 8)), seed=0)
    d = hierarchy.distance_matrix("depth_one_sided")
    logits, labels = outputs(n=300, c=40, seed=7)
    assert scoring.lca(logits, labels, d).value == pytest.approx(
        reference_lca(logits.numpy(), labels.numpy(), d), rel=1e-6
    )


def test_class_subset_uses_the_restricted_matrix(info):
    subset = list(range(0, 1000, 5))  # 200 classes, e.g. ImageNet-R-style
    logits, labels = outputs(n=300, c=200, seed=8)
    d = restrict_matrix(info, subset)
    expected = reference_lca(logits.numpy(), labels.numpy(), info[np.ix_(subset, subset)])
    assert scoring.lca(logits, labels, d).value == pytest.approx(expected, rel=1e-6)


def test_input_errors(info):
    logits, labels = outputs(n=20)
    with pytest.raises(ShapeMismatch, match=r"shape \(1000, 1000\), but the outputs have 200 classes"):
        scoring.lca(logits[:, :200], labels % 200, info)
    with pytest.raises(ShapeMismatch, match=r"labels must be an integer tensor of shape \[20\]"):
        scoring.lca(logits, labels[:10], info)
    with pytest.raises(ShapeMismatch, match="labels must lie in 0..999"):
        scoring.lca(logits, labels + 1000, info)
    with pytest.raises(ShapeMismatch, match=r"values must be a \[N, C\] torch tensor"):
        scoring.lca(logits.numpy(), labels, info)
    with pytest.raises(ShapeMismatch, match="integer tensor"):
        scoring.lca(logits, labels.float(), info)
    bad = logits.clone()
    bad[3, 3] = float("nan")
    with pytest.raises(HierarchyError, match="NaN or ±inf"):
        scoring.elca(bad, labels, info, kind="logits")
    for value in (float("inf"), float("-inf"), float("nan")):  # checked chunk by chunk: a late chunk counts too
        bad = logits.clone()
        bad[17, 5] = value
        with pytest.raises(HierarchyError, match=r"NaN or ±inf \(rows 16\.\.19\)"):
            scoring.elca(bad, labels, info, kind="logits", chunk_rows=4)
    with pytest.raises(HierarchyError, match="unknown ELCA variant"):
        scoring.elca(logits, labels, info, kind="logits", variant="paper")


def test_finite_check_handles_overflowing_sums(info):
    huge = torch.full((4, 1000), 3e38)  # finite, but the sum overflows: falls back to the elementwise check
    assert scoring._all_finite(huge)
    assert scoring.lca(huge, torch.arange(4), info).count == 3  # all tied: class 0 predicted, sample 0 correct


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16])
def test_other_float_dtypes_are_scored_in_float32(info, dtype):
    logits, labels = outputs(seed=9)
    logits = logits.to(dtype).float()  # representable in both dtypes: results must agree
    expected = scoring.elca(logits, labels, info, kind="logits").value
    assert scoring.elca(logits.to(dtype), labels, info, kind="logits").value == pytest.approx(expected, rel=1e-5)
    assert scoring.lca(logits.to(dtype), labels, info) == scoring.lca(logits, labels, info)


def test_read_only_cached_matrix_is_accepted_without_warnings():
    import warnings

    from imagenet_suite.hierarchies.imagenet1k import imagenet1k_distance_matrix

    logits, labels = outputs(n=50, seed=10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        score = scoring.lca(logits, labels, imagenet1k_distance_matrix("depth_two_sided"))
    assert score.value == pytest.approx(
        reference_lca(logits.numpy(), labels.numpy(), imagenet1k_distance_matrix("depth_two_sided"))
    )
