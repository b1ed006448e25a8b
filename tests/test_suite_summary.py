"""The suite summary on hand-written score reports: which report feeds which number (read from each
report's meta, never from its key), the regenerated-ImageNet-C route of C-robustness and mCE, and
dimensions that are missing or undefined."""

from __future__ import annotations

import math

import pytest

from imagenet_suite.scoring.summary.imagenet_c import ALEXNET_CLEAN_ERROR, ALEXNET_ERRORS
from imagenet_suite.scoring.summary.suite import suite_summary


def report(dataset: str, config: str, *rows: tuple[str, str, str, float]) -> dict:
    """A ScoreReport dict: ``rows`` as (metric, variant, subgroup, value)."""
    metrics = [{"metric": m, "variant": v, "subgroup": g, "value": x} for m, v, g, x in rows]
    return {"meta": {"dataset": dataset, "config": config}, "metrics": metrics}


VAL = report("imagenet_val", "default", ("top1_accuracy", "", "", 0.8), ("calibration_error", "x", "", 0.01))
REGENERATED = report(
    "perturbations",
    "imagenet_c_regenerated",
    ("corruption_accuracy", "top1", "gaussian_noise/1", 0.6),
    ("corruption_accuracy", "top1", "gaussian_noise/3", 0.4),
    ("corruption_accuracy", "top1", "contrast/3", 0.3),
)
COMMON = report("perturbations", "common", ("corruption_accuracy", "top1", "contrast/3", 0.9))


def test_c_robustness_and_mce_from_a_regenerated_imagenet_c_not_from_the_common_portfolio():
    summary = suite_summary({"a": VAL, "reg": REGENERATED, "common": COMMON}, allow_partial=True)
    c = summary["quba"]["dimensions"]["c_robustness"]
    means = {"gaussian_noise": 0.5, "contrast": 0.3}  # mean over severities, then over corruptions
    assert c["value"] == pytest.approx((0.5 + 0.3) / 2 / 0.8)
    assert c["sources"] == ["reg"] and c["note"] == "over 3 of the 75 ImageNet-C sets"
    assert summary["quba"]["partial"] == {"c_robustness": "over 3 of the 75 ImageNet-C sets"}
    corrupted = summary["imagenet_c"]
    assert corrupted["mce"] == pytest.approx(sum((1 - a) / ALEXNET_ERRORS[n] for n, a in means.items()) / 2)
    relative = [(1 - a - 0.2) / (ALEXNET_ERRORS[n] - ALEXNET_CLEAN_ERROR) for n, a in means.items()]
    assert corrupted["relative_mce"] == pytest.approx(sum(relative) / 2)


def test_reports_are_found_by_their_meta_and_absent_data_is_named():
    summary = suite_summary({"any name": VAL}, params_millions=25.6)
    quba = summary["quba"]
    assert quba["dimensions"]["accuracy"] == {"value": 0.8, "sources": ["any name"], "note": ""}
    assert quba["dimensions"]["params_millions"]["value"] == 25.6
    assert quba["score"] is None
    assert set(quba["missing"]) == {
        "adversarial_robustness",
        "c_robustness",
        "ood_robustness",
        "class_balance",
        "object_focus",
        "shape_bias",
    }
    assert (
        "imagenet_r" in quba["missing"]["ood_robustness"]
        and "--adversarial" in quba["missing"]["adversarial_robustness"]
    )


def test_a_zero_accuracy_leaves_the_normalised_dimensions_undefined_not_nan():
    zero = report("imagenet_val", "default", ("top1_accuracy", "", "", 0.0))
    summary = suite_summary({"val": zero, "reg": REGENERATED}, allow_partial=True)
    assert summary["quba"]["missing"]["c_robustness"] == "undefined: its normalising accuracy is 0"
    attacks = {
        "clean_accuracy": 0.0,
        "fgsm_accuracy": 0.0,
        "pgd_accuracy": 0.0,
        "rows": 4,
        "attack_convention": "hesse2025",
    }
    summary = suite_summary({"val": zero}, adversarial=attacks)
    assert summary["quba"]["missing"]["adversarial_robustness"] == "undefined: its normalising accuracy is 0"


def _all_dimensions_but_c(c_reports: dict) -> dict:
    """Reports for every QUBA dimension, ImageNet-C from ``c_reports``."""
    shape = {c: report("shape_bias_sets", c, ("accuracy16", "", "", 0.5)) for c in SHAPE_CONFIGS}
    cue = report("shape_bias_sets", "cue_conflict", ("shape_bias", "pooled", "", 0.3))
    balance = {"metric": "class_balance", "variant": "reference_impl", "subgroup": "", "value": 0.9}
    val = {**VAL, "metrics": [*VAL["metrics"], balance]}
    rest = {
        "val": val,
        "r": report("imagenet_r", "default", ("top1_accuracy", "", "", 0.4)),
        "same": report("backgrounds_challenge", "mixed_same", ("top1_accuracy", "", "", 0.7)),
        "rand": report("backgrounds_challenge", "mixed_rand", ("top1_accuracy", "", "", 0.6)),
        "cue": cue,
        **{f"shape/{c}": r for c, r in shape.items()},
    }
    return {**rest, **c_reports}


SHAPE_CONFIGS = ("sketch", "stylized", "edge", "silhouette")
ATTACKS = {
    "clean_accuracy": 0.8,
    "fgsm_accuracy": 0.2,
    "pgd_accuracy": 0.1,
    "rows": 16,
    "attack_convention": "hesse2025",
}


def test_quba_needs_all_75_imagenet_c_sets_unless_partial_is_allowed():
    """Beyond Accuracy's C-robustness is the mean over the 15 × 5 ImageNet-C sets: from 3 of them there
    is no C-robustness (so no QUBA score) unless allow_partial, which computes both and marks them."""
    reports = _all_dimensions_but_c({"reg": REGENERATED})
    strict = suite_summary(reports, params_millions=25.6, adversarial=ATTACKS)["quba"]
    assert strict["score"] is None and list(strict["missing"]) == ["c_robustness"] and strict["partial"] == {}
    assert strict["missing"]["c_robustness"].startswith("needs all 75 ImageNet-C sets (corruption × severity), found 3")
    assert "allow_partial" in strict["missing"]["c_robustness"]
    partial = suite_summary(reports, params_millions=25.6, adversarial=ATTACKS, allow_partial=True)["quba"]
    assert partial["score"] is not None and partial["missing"] == {}
    assert partial["partial"] == {"c_robustness": "over 3 of the 75 ImageNet-C sets"}


def test_a_complete_imagenet_c_gives_an_unmarked_quba_score():
    from imagenet_suite.perturbations.corruptions import IMAGENET_C, SEVERITIES

    rows = [("corruption_accuracy", "top1", f"{c}/{s}", 0.5) for c in IMAGENET_C for s in SEVERITIES]
    reports = _all_dimensions_but_c({"reg": report("perturbations", "imagenet_c_regenerated", *rows)})
    quba = suite_summary(reports, params_millions=25.6, adversarial=ATTACKS)["quba"]
    assert quba["score"] is not None and quba["partial"] == {} and quba["missing"] == {}
    assert quba["dimensions"]["c_robustness"] == {"value": 0.5 / 0.8, "sources": ["reg"], "note": ""}


def test_a_corruption_builds_headline_is_its_corrupted_accuracy_with_the_clean_one_beside_it():
    """Every clean row right, every corrupted row wrong: top-1 pooled over all rows is 0.5, but the
    accuracy the leaderboard ranks (and Sum/Borda/LCA-on-the-line read) is the corrupted one, 0.0."""
    import torch

    from imagenet_suite.scoring.metrics.robustness import summarize, summary_rows

    correct = torch.tensor([True, True, False, False])
    rows = summary_rows(summarize(correct, ["clean", "clean", "fog", "fog"], [0, 0, 3, 3]), "top1")
    metrics = [{"metric": "top1_accuracy", "variant": "", "subgroup": "", "value": 0.5}]
    metrics += [{"metric": r.metric, "variant": r.variant, "subgroup": r.subgroup, "value": r.value} for r in rows]
    build = {"meta": {"dataset": "perturbations", "config": "common"}, "metrics": metrics}
    accuracies = suite_summary({"p": build, "val": VAL})["accuracies"]
    assert accuracies["p"] == {"metric": "mean_corruption_accuracy", "value": 0.0, "clean_accuracy": 1.0}
    assert accuracies["val"] == {"metric": "top1_accuracy", "value": 0.8}


def test_beyond_accuracys_autoattack_variant_replaces_the_adversarial_dimension():
    """Table 8 of Beyond Accuracy: AutoAttack's AA-A / A as the adversarial dimension, z-scored with μ/σ
    0.04/0.03 instead of QUBA's; the other eight dimensions and the weights as QUBA's, by hand."""
    import numpy as np

    from imagenet_suite.perturbations.corruptions import IMAGENET_C, SEVERITIES
    from imagenet_suite.scoring.metrics.quba import QUBA_MEAN, QUBA_SIGNS, QUBA_STD, quba_weights

    rows = [("corruption_accuracy", "top1", f"{c}/{s}", 0.5) for c in IMAGENET_C for s in SEVERITIES]
    reports = _all_dimensions_but_c({"reg": report("perturbations", "imagenet_c_regenerated", *rows)})
    linf = {"accuracy": 0.1, "norm": "Linf", "eps": 4 / 255, "version": "standard", "attacks": ["apgd-ce"]}
    attacks = {**ATTACKS, "autoattack": {"autoattack-linf": linf, "autoattack-l2": {**linf, "accuracy": 0.3}}}
    summary = suite_summary(reports, params_millions=25.6, adversarial=attacks)
    values = np.array([entry["value"] for entry in summary["quba"]["dimensions"].values()])
    variant = summary["quba_autoattack"]
    assert variant["adversarial_robustness"] == 0.1 / 0.8 and variant["missing"] == {}
    z = QUBA_SIGNS * (values - QUBA_MEAN) / QUBA_STD
    z[1] = (0.1 / 0.8 - 0.04) / 0.03  # the AutoAttack dimension, with the paper's AutoAttack μ/σ
    assert variant["score"] == pytest.approx(float(z @ quba_weights() / 6), abs=1e-12)
    assert variant["score"] != pytest.approx(summary["quba"]["score"])
    # the FGSM/PGD QUBA is unchanged; without autoattack-linf (or at another radius) there is no variant
    assert (
        summary["quba"]["score"] == suite_summary(reports, params_millions=25.6, adversarial=ATTACKS)["quba"]["score"]
    )
    assert "quba_autoattack" not in suite_summary(reports, params_millions=25.6, adversarial=ATTACKS)
    other = {**ATTACKS, "autoattack": {"autoattack-linf:eps=0.0313725": linf}}
    assert "quba_autoattack" not in suite_summary(reports, params_millions=25.6, adversarial=other)
    # AutoAttack alone (no FGSM/PGD): QUBA's adversarial dimension is missing, the variant is not
    alone = {key: value for key, value in attacks.items() if key not in ("fgsm_accuracy", "pgd_accuracy")}
    summary = suite_summary(reports, params_millions=25.6, adversarial=alone)
    assert summary["quba"]["missing"] == {"adversarial_robustness": "needs FGSM and PGD: evaluate --adversarial N "
                                          "--attack fgsm,pgd[,...]"}  # fmt: skip
    assert summary["quba_autoattack"]["score"] == pytest.approx(variant["score"])


def test_only_attacks_under_beyond_accuracys_convention_give_the_adversarial_dimension():
    """QUBA's μ/σ of the adversarial dimension are of Beyond Accuracy's protocol (``hesse2025``: the normalised
    inputs attacked, clamped to [0, 1]): FGSM/PGD attacked in [0, 1] pixels (``pixel``), or recorded by an
    imagenet-suite that attacked in pixels without saying so (no ``attack_convention``), are on another scale:
    the dimension is missing with the reason, so is the score; Table 8's AutoAttack variant is not affected."""
    from imagenet_suite.perturbations.corruptions import IMAGENET_C, SEVERITIES

    rows = [("corruption_accuracy", "top1", f"{c}/{s}", 0.5) for c in IMAGENET_C for s in SEVERITIES]
    reports = _all_dimensions_but_c({"reg": report("perturbations", "imagenet_c_regenerated", *rows)})
    linf = {"accuracy": 0.1, "norm": "Linf", "eps": 4 / 255, "version": "standard", "attacks": ["apgd-ce"]}
    ours = suite_summary(
        reports, params_millions=25.6, adversarial={**ATTACKS, "autoattack": {"autoattack-linf": linf}}
    )
    assert ours["quba"]["dimensions"]["adversarial_robustness"]["value"] == pytest.approx(math.sqrt(0.25 * 0.125))
    older = {key: value for key, value in ATTACKS.items() if key != "attack_convention"}
    for attacks, why in (
        ({**ATTACKS, "attack_convention": "pixel"}, "attacked under the 'pixel' convention (FGSM/PGD in [0,1] pixel"),
        (older, "by an imagenet-suite that did not record it), on another scale than QUBA's mu/sigma"),
    ):
        summary = suite_summary(
            reports, params_millions=25.6, adversarial={**attacks, "autoattack": {"autoattack-linf": linf}}
        )
        quba = summary["quba"]
        assert list(quba["missing"]) == ["adversarial_robustness"] and quba["score"] is None
        assert why in quba["missing"]["adversarial_robustness"]
        assert quba["missing"]["adversarial_robustness"].endswith(
            "evaluate --adversarial N --attack-convention hesse2025"
        )
        assert summary["adversarial"] == {**attacks, "autoattack": {"autoattack-linf": linf}}  # recorded as it was
        assert summary["quba_autoattack"] == ours["quba_autoattack"]
