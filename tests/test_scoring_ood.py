"""OOD metrics against their anchors: sklearn (AUROC, ROC/PR curves, OpenOOD v1.5) and NINCO's formulas.

Random and tie-heavy inputs, agreement to 1e-9 (usually exact); the two FPR@95 conventions on one
input; no sigmoid on raw scores; per-group / macro / pooled aggregation; bad inputs.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn import metrics as skm

from imagenet_suite.errors import OutputsError
from imagenet_suite.scoring.metrics import ood


def ninco_fpr(ids, oods, tpr=0.95):
    """j-cb/NINCO utils.fpr_at_tpr."""
    threshold = np.quantile(ids, 1 - tpr)
    return (oods >= threshold).mean()


def ninco_auroc(ids, oods):
    """j-cb/NINCO utils.auroc_ood (ID positive, nan_to_num)."""
    return skm.roc_auc_score(len(ids) * [1] + len(oods) * [0], np.nan_to_num(np.concatenate([ids, oods])))


def openood_v15(ids, oods, tpr=0.95):
    """OpenOOD evaluators/metrics.py auc_and_fpr_recall (after 873e8c2 and 4a72488): auroc, aupr_in, aupr_out, fpr."""
    conf = np.concatenate([ids, oods])
    ood_indicator = np.r_[np.zeros(len(ids)), np.ones(len(oods))]
    fpr_list, tpr_list, _ = skm.roc_curve(ood_indicator, -conf)
    precision_in, recall_in, _ = skm.precision_recall_curve(1 - ood_indicator, conf)
    precision_out, recall_out, _ = skm.precision_recall_curve(ood_indicator, -conf)
    return (
        skm.auc(fpr_list, tpr_list),
        skm.auc(recall_in, precision_in),
        skm.auc(recall_out, precision_out),
        fpr_list[np.argmax(tpr_list >= tpr)],
    )


def draws():
    """(id, ood) pairs: continuous, integer-valued (tie-heavy), few distinct values, tiny, shifted."""
    rng = np.random.default_rng(2023)
    out = []
    for trial in range(24):
        n, m = int(rng.integers(20, 4000)), int(rng.integers(1, 600))
        kind = trial % 4
        if kind == 0:
            ids, oods = rng.normal(1.0, 1.0, n), rng.normal(0.0, 1.0, m)
        elif kind == 1:  # tie-heavy: integer scores
            ids, oods = rng.integers(0, 12, n).astype(float), rng.integers(0, 9, m).astype(float)
        elif kind == 2:  # three distinct values only
            ids, oods = (
                rng.choice([0.1, 0.5, 0.9], n, p=[0.1, 0.3, 0.6]),
                rng.choice([0.1, 0.5, 0.9], m, p=[0.5, 0.3, 0.2]),
            )
        else:  # energy-like float32 scores, many exact ties after rounding
            ids = np.round(rng.normal(21, 1, n), 2).astype(np.float32).astype(float)
            oods = np.round(rng.normal(19.5, 1.2, m), 2).astype(np.float32).astype(float)
        out.append((ids, oods))
    out.append((np.array([3.0]), np.array([3.0])))  # one each, tied
    return out


@pytest.mark.parametrize("case", range(25))
def test_metrics_agree_with_the_anchors(case):
    ids, oods = draws()[case]
    ours = ood.ood_metrics(torch.from_numpy(ids), torch.from_numpy(oods))
    auroc, aupr_in, aupr_out, fpr_openood = openood_v15(ids, oods)
    assert ours["auroc"] == pytest.approx(ninco_auroc(ids, oods), abs=1e-12)
    assert ours["auroc"] == pytest.approx(auroc, abs=1e-12)  # the ROC area is the same either way round
    assert ours["aupr_in"] == pytest.approx(aupr_in, abs=1e-9)
    assert ours["aupr_out"] == pytest.approx(aupr_out, abs=1e-9)
    assert ours["fpr95_openood_v15"] == fpr_openood  # the same ROC point, exactly
    assert ours["fpr95"].value == ninco_fpr(ids, oods)  # exact count over the same threshold
    assert ours["fpr95"].denominator == len(oods) and ours["fpr95"].numerator == round(ninco_fpr(ids, oods) * len(oods))


def test_the_two_fpr_conventions_give_their_documented_answers():
    """OOD positive (OpenOOD v1.5) vs ID positive (NINCO) on one tie-heavy input, hand-computed.

    ID = [1, 2, 3 x 18], OOD = [0 x 18, 1, 2]. NINCO: t = quantile(ID, 0.05) = 1 + 0.95 * (2 - 1) = 1.95,
    OOD >= t: one of 20 -> 0.05. OpenOOD: ROC of (is_ood, -score) has points (fpr, tpr) = (0, .9),
    (.05, .95), (.1, 1.0), (1, 1); sklearn drops the collinear (.05, .95), so the first point with
    tpr >= .95 is (.1, 1.0) -> 0.10 (0.05 with drop_intermediate=False).
    """
    ids = np.array([1.0, 2.0] + [3.0] * 18)
    oods = np.array([0.0] * 18 + [1.0, 2.0])
    assert ood.fpr_at_tpr(ids, oods).value == ninco_fpr(ids, oods) == 0.05
    assert ood.fpr_at_tpr_openood_v15(ids, oods) == openood_v15(ids, oods)[3] == 0.10
    fpr, tpr, _ = skm.roc_curve(np.r_[np.zeros(20), np.ones(20)], -np.r_[ids, oods], drop_intermediate=False)
    assert fpr[np.argmax(tpr >= 0.95)] == 0.05  # the point sklearn's default drops
    rng = np.random.default_rng(0)  # and on a continuous draw they are simply different quantities
    ids, oods = rng.normal(2, 0.5, 5000), rng.normal(0, 2, 500)  # unequal spreads
    ninco, openood = ood.fpr_at_tpr(ids, oods).value, ood.fpr_at_tpr_openood_v15(ids, oods)
    assert abs(ninco - openood) > 0.05 and ninco == ninco_fpr(ids, oods) and openood == openood_v15(ids, oods)[3]


def test_threshold_is_numpy_linear_quantile_at_one_minus_tpr_and_ties_count():
    ids = np.arange(1, 21, dtype=float)  # quantile(0.050000000000000044) = 1.95
    assert ood.numpy_quantile(torch.from_numpy(ids), 1 - 0.95) == np.quantile(ids, 1 - 0.95)
    for n in (2, 7, 19, 20, 21, 101, 50_000):
        values = np.sort(np.random.default_rng(n).normal(size=n))
        for q in (1 - 0.95, 0.5, 0.25, 0.999999, 1.0, 0.0):
            assert ood.numpy_quantile(torch.from_numpy(values), q) == np.quantile(values, q), (n, q)
    tied = ood.fpr_at_tpr([1, 1, 1, 1], [1, 0])  # OOD at the threshold counts as accepted (>=)
    assert (tied.numerator, tied.denominator) == (1, 2)


def test_no_sigmoid_is_ever_applied_to_raw_scores():
    """torchmetrics squashes scores outside [0, 1] with a sigmoid: float32 energies saturate to 1.0."""
    rng = np.random.default_rng(7)
    ids = rng.normal(21.0, 1.0, 3000).astype(np.float32)
    oods = rng.normal(19.0, 1.5, 300).astype(np.float32)
    ours = ood.auroc(torch.from_numpy(ids), torch.from_numpy(oods))
    assert ours == pytest.approx(ninco_auroc(ids.astype(float), oods.astype(float)), abs=1e-12)
    shifted = ood.auroc(torch.from_numpy(ids) - 20, torch.from_numpy(oods) - 20)  # now partly inside [0, 1]
    assert shifted == ours
    sigmoid = ood.auroc(torch.sigmoid(torch.from_numpy(ids)), torch.sigmoid(torch.from_numpy(oods)))
    assert sigmoid < ours - 0.05  # what an auto-sigmoid would report: saturated ties
    torchmetrics = pytest.importorskip("torchmetrics.functional.classification")
    anchor = float(
        torchmetrics.binary_auroc(
            torch.from_numpy(np.r_[ids, oods]), torch.from_numpy(np.r_[np.ones(3000), np.zeros(300)]).long()
        )
    )
    assert abs(anchor - ours) > 0.05  # the pitfall is real in the anchor, and absent here


def test_device_and_dtype_of_inputs_do_not_matter():
    rng = np.random.default_rng(1)
    ids, oods = rng.normal(1, 1, 500), rng.normal(0, 1, 80)
    reference = ood.ood_metrics(ids, oods)
    for dtype in (torch.float32, torch.float64):
        values = ood.ood_metrics(torch.tensor(ids, dtype=dtype), torch.tensor(oods, dtype=dtype))
        tolerance = 0 if dtype == torch.float64 else 1e-2
        assert values["auroc"] == pytest.approx(reference["auroc"], abs=tolerance)
    assert ood.ood_metrics(list(ids), list(oods))["auroc"] == reference["auroc"]


# -- aggregation -----------------------------------------------------------------------------------------


def test_macro_and_pooled_differ_and_match_per_group_anchors():
    """A big easy class and a small hard one: the mean over classes weights them equally, pooling does not."""
    rng = np.random.default_rng(5)
    ids = rng.normal(2, 1, 2000)
    easy, hard = rng.normal(-2, 1, 900), rng.normal(1.8, 1, 30)
    oods = np.r_[easy, hard]
    groups = np.r_[np.zeros(900, int), np.ones(30, int)]
    grouped = ood.grouped_ood_metrics(ids, oods, groups, ["easy", "hard"])
    for name, part in (("easy", easy), ("hard", hard)):
        assert grouped.per_group[name]["fpr95"].value == ninco_fpr(ids, part)
        assert grouped.per_group[name]["auroc"] == pytest.approx(ninco_auroc(ids, part), abs=1e-12)
        assert grouped.per_group[name]["fpr95"].denominator == len(part)  # FPR * n is an integer
    assert grouped.macro["fpr95"] == pytest.approx((ninco_fpr(ids, easy) + ninco_fpr(ids, hard)) / 2, abs=1e-15)
    assert grouped.pooled["fpr95"].value == ninco_fpr(ids, oods)
    assert grouped.pooled["auroc"] == pytest.approx(ninco_auroc(ids, oods), abs=1e-12)
    assert grouped.macro["fpr95"] - grouped.pooled["fpr95"].value > 0.3
    assert grouped.group_sizes == {"easy": 900, "hard": 30}


def test_unit_test_verdict_is_strictly_above_ten_percent():
    failed, count = ood.unit_test_verdict({"black": 0.10, "white": 0.1025, "grey": 0.0, "uni": 1.0})
    assert (failed, count) == (["white", "uni"], 2)
    assert ood.unit_test_verdict({"black": 0.2}, threshold=0.25) == ([], 0)


# -- bad inputs ------------------------------------------------------------------------------------------


def test_nan_scores_are_refused_unless_asked_for_ninco_handling():
    with pytest.raises(OutputsError, match=r"ood_scores: 1 score\(s\) are NaN or inf, the first at position 2"):
        ood.auroc([1.0, 2.0, 3.0], [0.5, 1.0, float("nan")])
    with pytest.raises(OutputsError, match="id_scores: 1 score"):
        ood.fpr_at_tpr([1.0, float("inf")], [0.0])
    ids, oods = np.array([1.0, 2.0, 0.5]), np.array([0.1, np.nan, 3.0])
    patched = ood.as_scores(oods, "ood", nan_to_num=True)
    assert ood.auroc(ids, patched) == pytest.approx(ninco_auroc(ids, oods), abs=1e-15)


def test_empty_sets_and_empty_groups_are_errors():
    with pytest.raises(OutputsError, match="ood_scores: no scores"):
        ood.auroc([1.0, 2.0], [])
    with pytest.raises(OutputsError, match=r"OOD group\(s\) \['hard'\] have no samples"):
        ood.grouped_ood_metrics([1.0, 2.0], [0.0, 0.5], [0, 0], ["easy", "hard"])
    with pytest.raises(OutputsError, match="group labels must be in 0..1"):
        ood.grouped_ood_metrics([1.0, 2.0], [0.0, 0.5], [0, 2], ["easy", "hard"])
    with pytest.raises(OutputsError, match="3 group labels for 2 OOD scores"):
        ood.grouped_ood_metrics([1.0, 2.0], [0.0, 0.5], [0, 0, 1], ["easy", "hard"])
    only_easy = ood.grouped_ood_metrics([1.0, 2.0], [0.0, 0.5], [0, 0], ["easy", "hard"], expected_groups=["easy"])
    assert list(only_easy.per_group) == ["easy"]


def test_sorted_scores_counts():
    values = torch.tensor([3.0, 1.0, 2.0, 2.0, 5.0], dtype=torch.float64)
    sorted_scores = ood.SortedScores.of(values)
    assert sorted_scores.unique.tolist() == [1.0, 2.0, 3.0, 5.0]
    assert (sorted_scores.below.tolist(), sorted_scores.upto.tolist()) == ([0, 1, 3, 4], [1, 3, 4, 5])
    probe = torch.tensor([2.0, 4.0, 0.0], dtype=torch.float64)
    assert sorted_scores.count_below(probe).tolist() == [1, 4, 0] and sorted_scores.count_upto(probe).tolist() == [
        3,
        4,
        0,
    ]


def test_openood_fpr_on_tie_blocks_where_sklearn_drops_points():
    """Runs of equal tie groups make collinear ROC points; sklearn's drop_intermediate removes them."""
    rng = np.random.default_rng(9)
    mattered = 0
    for _ in range(300):
        ids, oods, value = [], [], 0.0
        for _ in range(int(rng.integers(2, 8))):  # blocks of identical (ID, OOD) tie groups
            n_id, n_ood, repeats = int(rng.integers(0, 3)), int(rng.integers(1, 3)), int(rng.integers(1, 5))
            for _ in range(repeats):
                ids += [value] * n_id
                oods += [value] * n_ood
                value += 1.0
        ids += list(rng.integers(0, int(value) + 3, int(rng.integers(1, 20))).astype(float))
        ids, oods = np.array(ids), np.array(oods)
        expected = openood_v15(ids, oods)[3]
        assert ood.fpr_at_tpr_openood_v15(ids, oods) == expected
        fpr, tpr, _ = skm.roc_curve(
            np.r_[np.zeros(len(ids)), np.ones(len(oods))], -np.r_[ids, oods], drop_intermediate=False
        )
        mattered += fpr[np.argmax(tpr >= 0.95)] != expected
    assert mattered > 10  # the case is exercised, not just possible
