"""Multi-label scoring (Anzaku et al. 2024): variable top-k, the four ASMA variants, subgroups, ReaL accuracy,
seed averaging and ΔRank, against hand-computed values and an independent numpy reference."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import torch

from imagenet_suite.errors import ConfigError, OutputsError
from imagenet_suite.scoring.evaluation.report import applicable_metrics, score
from imagenet_suite.scoring.metrics import multilabel as ml
from imagenet_suite.scoring.outputs import ModelOutputs
from tests.test_scoring_join import label_feature, write_dataset_folder


def padded(sets: list[list[int]], width: int | None = None) -> torch.Tensor:
    width = width or max(1, max(len(s) for s in sets))
    return torch.tensor([s + [-1] * (width - len(s)) for s in sets], dtype=torch.int64)


def reference(scores: np.ndarray, sets: list[list[int]], groups, variant: str) -> tuple[float, dict[int, float]]:
    """Independent numpy ASMA: stable argsort on -scores (ties to the lowest index), multi-hot vectors,
    the per-sample formulas written from their definitions (hamming: the mean over all C classes)."""
    _n, c = scores.shape
    order = np.argsort(-scores, axis=1, kind="stable")
    per_group: dict[int, list[float]] = {}
    for i, labels in enumerate(sets):
        k = len(labels)
        if k == 0 or k not in groups:
            continue
        truth, pred = np.zeros(c, bool), np.zeros(c, bool)
        truth[labels], pred[order[i, :k]] = True, True
        both = (truth & pred).sum()
        value = {
            "exact": float((truth == pred).all()),
            "jaccard": both / (truth | pred).sum(),
            "recall": both / truth.sum(),
            "hamming": float((truth == pred).mean()),
        }[variant]
        per_group.setdefault(k, []).append(value)
    means = {g: float(np.mean(v)) for g, v in per_group.items()}
    return float(np.mean(list(means.values()))), means


def test_hand_computed_variants():
    # C = 10; row 0: Y={1,2,3}, top-3 = {1,2,9} -> m=2; row 1: Y={4,5}, top-2 = {4,5} -> m=2; row 2: Y={7}, top-1 = 8
    scores = torch.zeros(3, 10)
    scores[0, [1, 2, 9]] = torch.tensor([5.0, 4.0, 3.0])
    scores[1, [4, 5]] = torch.tensor([2.0, 1.0])
    scores[2, 8] = 1.0
    sets = padded([[1, 2, 3], [4, 5], [7]])
    result = ml.multilabel_scores(scores, sets, groups=(1, 2, 3))
    expected = {
        "exact": (0.0, 1.0, 0.0),
        "jaccard": (0.5, 1.0, 0.0),
        "recall": (2 / 3, 1.0, 0.0),
        "hamming": (1 - 2 / 10, 1.0, 1 - 2 / 10),
    }
    for variant, (three, two, one) in expected.items():
        groups = result.subgroups[variant]
        assert (groups[3].value, groups[2].value, groups[1].value) == pytest.approx((three, two, one), abs=1e-12)
        assert result.asma(variant) == pytest.approx((three + two + one) / 3, abs=1e-12)
    assert (result.real_all.numerator, result.real_all.denominator) == (2, 3)  # top-1 of rows 0, 1 in the set
    assert (result.multilabel.numerator, result.multilabel.denominator) == (2, 3)


def test_variable_topk_breaks_ties_by_lowest_index():
    scores = torch.tensor([[1.0, 3.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0, 2.0], [0.0, 1.0, 0.0, 1.0, 5.0]])
    sets = padded([[0, 1], [4, 3, 2], [2]])
    assert ml.variable_topk(scores, sets).tolist() == [[1, 2, -1], [0, 1, 2], [4, -1, -1]]
    assert ml.variable_topk(scores.to(torch.bfloat16), sets).tolist() == [[1, 2, -1], [0, 1, 2], [4, -1, -1]]


def test_subgroups_range_skips_empty_and_outside_groups():
    scores = torch.arange(20.0).repeat(5, 1)  # every row ranks 19, 18, 17, ...
    sets = padded([[19, 18], [19, 0], [], [19, 18, 17, 16, 15, 14], [0]])
    result = ml.multilabel_scores(scores, sets, groups=(1, 2, 3, 4, 5))
    exact = result.subgroups["exact"]
    assert (exact[2].count, exact[2].value, exact[1].count, exact[1].value, exact[3].count) == (2, 0.5, 1, 0.0, 0)
    assert result.asma("exact") == pytest.approx(0.25)  # mean of A_1 = 0 and A_2 = 0.5; empty g=3..5 ignored
    assert (result.real_in_groups.numerator, result.real_in_groups.denominator) == (2, 3)  # 6-label row excluded
    assert (result.real_all.numerator, result.real_all.denominator) == (3, 4)  # empty row skipped
    with pytest.raises(ConfigError, match="distinct integers ≥ 1"):
        ml.multilabel_scores(scores, sets, groups=(0, 1))


@pytest.mark.parametrize("variant", ml.VARIANTS)
def test_matches_an_independent_reference(variant):
    rng = np.random.default_rng(3)
    n, c = 400, 40
    scores = rng.integers(0, 6, size=(n, c)).astype(np.float32)  # many ties
    sets = [sorted(rng.choice(c, size=int(rng.integers(0, 8)), replace=False).tolist()) for _ in range(n)]
    for groups in ((1, 2, 3, 4, 5), (2, 3, 4, 6)):
        expected, per_group = reference(scores, sets, groups, variant)
        result = ml.multilabel_scores(torch.from_numpy(scores), padded(sets, 9), groups)
        assert result.asma(variant) == pytest.approx(expected, abs=1e-12)
        assert {g: s.value for g, s in result.subgroups[variant].items() if s.count} == pytest.approx(
            per_group, abs=1e-12
        )


def test_kinds_and_dtypes_give_the_same_sets():
    logits = torch.randn(64, 30, generator=torch.Generator().manual_seed(0))
    sets = padded([[i % 30, (i * 7 + 1) % 30] if i % 3 else [i % 30] for i in range(64)])
    base = ml.variable_topk(logits, sets)
    assert torch.equal(ml.variable_topk(torch.softmax(logits, 1), sets), base)
    assert torch.equal(ml.variable_topk(torch.log_softmax(logits, 1).double(), sets), base)


def test_bad_label_sets_are_refused():
    scores = torch.zeros(2, 5)
    with pytest.raises(OutputsError, match="row 1 repeats a class: \\[3, 3\\]"):
        ml.multilabel_scores(scores, padded([[1], [3, 3]]))
    with pytest.raises(OutputsError, match="values 1..7; expected class indices 0..4"):
        ml.multilabel_scores(scores, padded([[1], [7]]))
    with pytest.raises(OutputsError, match="integer \\[N, L\\]"):
        ml.multilabel_scores(scores, torch.zeros(2, 1))


# ------------------------------------------------------------------------------- the evaluator


def patchml_like_folder(root, sets, seed, builder="patchml"):
    ids = [f"patchml-s{seed}-k{len(s)}-{i:06d}" for i, s in enumerate(sets)]
    features = {"id": {"dtype": "string", "_type": "Value"}, "labels": {"feature": label_feature(), "_type": "List"}}
    protocol = {"multi_label": "labels", "label_count_subgroups": [2, 3], "seed": seed}
    return write_dataset_folder(
        root, {"id": ids, "labels": sets}, features, protocol, config="images", split="test", builder=builder
    ), ids


def test_multilabel_family_scores_a_labels_dataset(tmp_path):
    sets = [[1, 2], [3, 4], [5, 6, 7], [8]]
    folder, ids = patchml_like_folder(tmp_path, sets, seed=0)
    logits = torch.zeros(4, 1000)
    logits[0, [1, 2]] = 5  # exact
    logits[1, [3, 9]] = 5  # 1 of 2
    logits[2, [5, 6, 7]] = 5  # exact
    logits[3, 8] = 5  # outside the subgroups {2, 3}
    order = [3, 1, 0, 2]
    report = score(folder, ModelOutputs(logits[order], [ids[i] for i in order]))
    assert report.meta["metrics"] == ["multilabel"]
    assert report.value("asma") == report.value("asma", "exact") == pytest.approx((0.5 + 1.0) / 2)
    assert report.value("asma", "recall") == pytest.approx((0.75 + 1.0) / 2)
    assert report.value("subgroup_accuracy", "exact", "labels=2") == 0.5
    table = report.table.set_index(["metric", "variant", "subgroup"])
    assert table.loc[("subgroup_accuracy", "exact", "labels=2"), "denominator"] == 2
    assert table.loc[("asma_coverage", "", ""), ["numerator", "denominator"]].tolist() == [3, 4]
    assert report.value("multilabel_real_accuracy", "all") == 1.0


def test_applicability():
    labels = {"id": {}, "labels": {"feature": label_feature(), "_type": "List"}}
    assert "multilabel" in applicable_metrics(labels, {})
    assert "multilabel" not in applicable_metrics({"id": {}, "labels": {"dtype": "string", "_type": "Value"}}, {})
    real = {"id": {}, "real_labels": {"feature": label_feature(), "_type": "Sequence"}}
    assert "multilabel_real" not in applicable_metrics(real, {"multi_label": "real_labels"})
    assert "multilabel_real" in applicable_metrics(
        real, {"multi_label": "real_labels", "label_count_subgroups": [1, 2, 3, 4, 5]}
    )
    assert ml.subgroups_of({}) == (1, 2, 3, 4, 5) and ml.subgroups_of({"label_count_subgroups": [2, 9]}) == (2, 9)


def test_average_over_seeds(tmp_path):
    reports = []
    for seed, hit in ((0, [1, 2]), (1, [1, 9])):
        folder, ids = patchml_like_folder(tmp_path / str(seed), [[1, 2], [3, 4, 5]], seed)
        logits = torch.zeros(2, 1000)
        logits[0, hit] = 1
        reports.append(score(folder, ModelOutputs(logits, ids)))
    path = tmp_path / "second.json"
    reports[1].to_json(path)
    averaged = ml.average_over_seeds([reports[0], path]).set_index(["metric", "variant", "subgroup"])
    first, second = reports[0].value("asma", "jaccard"), reports[1].value("asma", "jaccard")
    assert averaged.loc[("asma", "jaccard", ""), "value"] == pytest.approx((first + second) / 2)
    assert averaged.loc[("asma", "jaccard", ""), "num_seeds"] == 2 and first != second
    with pytest.raises(ConfigError, match="distinct seeds"):
        ml.average_over_seeds([reports[0], reports[0]])
    other, other_ids = patchml_like_folder(tmp_path / "other", [[1, 2]], 5, builder="other")
    with pytest.raises(ConfigError, match="one dataset only"):
        ml.average_over_seeds([reports[0], score(other, ModelOutputs(torch.zeros(1, 1000), other_ids))])
    assert json.loads(path.read_text())["meta"]["protocol"]["seed"] == 1


def test_delta_rank_follows_the_paper():
    top1 = pd.Series({"a": 0.9, "b": 0.8, "c": 0.8, "d": 0.7})
    asma = pd.Series({"a": 0.1, "b": 0.5, "c": 0.6, "d": 0.2})
    delta = ml.delta_rank(top1, asma)
    # top-1 ranks a1 b2 c2 d3 (dense: the tie shares rank 2, d is 3rd, not 4th); ASMA ranks c1 b2 d3 a4
    assert delta.to_dict() == {"a": -3, "b": 0, "c": 1, "d": 0}
    with pytest.raises(ConfigError, match="same distinct models"):
        ml.delta_rank(top1, asma.drop("a"))
    with pytest.raises(ConfigError, match="NaN"):
        ml.delta_rank(top1, asma.replace(0.2, math.nan))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_gives_the_cpu_results():
    rng = np.random.default_rng(1)
    scores = torch.from_numpy(rng.integers(0, 4, size=(2000, 1000)).astype(np.float32)).to(torch.bfloat16)
    sets = padded(
        [sorted(rng.choice(1000, size=int(rng.integers(0, 10)), replace=False).tolist()) for _ in range(2000)], 9
    )
    cpu = ml.multilabel_scores(scores, sets, (2, 3, 4, 6, 9))
    gpu = ml.multilabel_scores(scores.cuda(), sets.cuda(), (2, 3, 4, 6, 9))
    for variant in ml.VARIANTS:
        assert gpu.asma(variant) == pytest.approx(cpu.asma(variant), abs=1e-12)
    assert gpu.real_all == cpu.real_all
