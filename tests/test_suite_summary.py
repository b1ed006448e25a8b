"""The suite summary on hand-written score reports: which report feeds which number (read from each
report's meta, never from its key), the regenerated-ImageNet-C route of C-robustness and mCE, and
dimensions that are missing or undefined."""

from __future__ import annotations

import pytest

from imagenet_suite.scoring.summary.suite import ALEXNET_CLEAN_ERROR, ALEXNET_ERRORS, suite_summary


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
    summary = suite_summary({"a": VAL, "reg": REGENERATED, "common": COMMON})
    c = summary["quba"]["dimensions"]["c_robustness"]
    means = {"gaussian_noise": 0.5, "contrast": 0.3}  # mean over severities, then over corruptions
    assert c["value"] == pytest.approx((0.5 + 0.3) / 2 / 0.8)
    assert c["sources"] == ["reg"] and c["note"] == "over 3 of the 75 ImageNet-C sets"
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
    summary = suite_summary({"val": zero, "reg": REGENERATED})
    assert summary["quba"]["missing"]["c_robustness"] == "undefined: its normalising accuracy is 0"
    attacks = {"clean_accuracy": 0.0, "fgsm_accuracy": 0.0, "pgd_accuracy": 0.0, "rows": 4}
    summary = suite_summary({"val": zero}, adversarial=attacks)
    assert summary["quba"]["missing"]["adversarial_robustness"] == "undefined: its normalising accuracy is 0"
