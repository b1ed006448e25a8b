"""The nine dimensions of Beyond Accuracy (Hesse et al. 2025) from one model's score reports, and its
Table 8 variant with AutoAttack as the adversarial dimension.

:func:`quba_dimensions` gives each dimension either its value (``{"value", "sources", "note"}``) or what it
needs (the table of :mod:`imagenet_suite.scoring.summary.suite` says which report feeds which); a
dimension is computed from complete inputs only unless ``allow_partial``; the adversarial one only from attacks
under :data:`~imagenet_suite.scoring.metrics.quba.QUBA_ATTACK_CONVENTION` (:func:`attack_convention_of`), the
scale of its μ/σ. :func:`quba_autoattack` gives
``summary.quba_autoattack`` when the attacks include :data:`AUTOATTACK_QUBA`. The scores themselves (Eq. 1,
z-scoring) are :mod:`imagenet_suite.scoring.metrics.quba`'s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ...perturbations.corruptions import IMAGENET_C, SEVERITIES
from ..metrics.object_focus import object_focus
from ..metrics.quba import ATTACK_CONVENTIONS, DIMENSIONS, QUBA_ATTACK_CONVENTION, quba_score_autoattack
from .imagenet_c import corruption_accuracies, per_corruption_means
from .reports import ID_DATASET, ReportDict, first_value

OOD_SETS = ("imagenet_r", "sketch16", "stylized16", "edge16", "silhouette16")
SHAPE_BIAS_SET_CONFIGS = {
    "sketch16": "sketch",
    "stylized16": "stylized",
    "edge16": "edge",
    "silhouette16": "silhouette",
}


def geometric_mean(values: list[float]) -> float:
    """GM as ``scipy.stats.mstats.gmean`` (Beyond Accuracy's code): 0 when any value is 0."""
    if any(value <= 0 for value in values):
        return 0.0
    return math.exp(sum(math.log(value) for value in values) / len(values))


class Missing(Exception):
    """A dimension whose data is absent; the message says what it needs."""


def _dimension(value: float, sources: list[str], note: str = "") -> dict[str, Any]:
    return {"value": value, "sources": sources, "note": note}


def _accuracy(reports: Mapping[str, ReportDict]) -> tuple[str, float]:
    found = first_value(reports, ID_DATASET, None, "top1_accuracy", "")
    if found is None:
        raise Missing("needs an imagenet_val report (top-1 accuracy)")
    return found


def _id_metric(reports: Mapping[str, ReportDict], metric: str, variant: str | None, what: str) -> dict[str, Any]:
    found = first_value(reports, ID_DATASET, None, metric, variant)
    if found is None:
        raise Missing(f"needs an imagenet_val report with {what}")
    return _dimension(found[1], [found[0]])


def _c_robustness(reports: Mapping[str, ReportDict], accuracy: float, allow_partial: bool) -> dict[str, Any]:
    accuracies, sources = corruption_accuracies(reports)
    if not accuracies:
        raise Missing("needs ImageNet-C: imagenet_c configs or a perturbations imagenet_c_regenerated build")
    total = len(IMAGENET_C) * len(SEVERITIES)
    note = "" if len(accuracies) == total else f"over {len(accuracies)} of the {total} ImageNet-C sets"
    if note and not allow_partial:
        raise Missing(
            f"needs all {total} ImageNet-C sets (corruption × severity), found {len(accuracies)}; "
            "allow_partial (evaluate --allow-partial) computes it over those and marks the QUBA score partial"
        )
    means = per_corruption_means(accuracies)
    mean_accuracy = sum(means.values()) / len(means)
    return {**_dimension(mean_accuracy / accuracy if accuracy else math.nan, sources, note), "partial": bool(note)}


def ood_accuracies(reports: Mapping[str, ReportDict]) -> dict[str, tuple[str, float]]:
    """The five OOD accuracies of Beyond Accuracy that are present: ``{set: (report key, accuracy)}``."""
    found = {}
    r = first_value(reports, "imagenet_r", None, "top1_accuracy")
    if r is not None:
        found["imagenet_r"] = r
    for name, config in SHAPE_BIAS_SET_CONFIGS.items():
        value = first_value(reports, "shape_bias_sets", config, "accuracy16")
        if value is not None:
            found[name] = value
    return found


def _ood_robustness(reports: Mapping[str, ReportDict], accuracy: float) -> dict[str, Any]:
    found = ood_accuracies(reports)
    absent = [name for name in OOD_SETS if name not in found]
    if absent:
        raise Missing(f"needs all five OOD accuracies; absent: {absent}")
    gm = geometric_mean([found[name][1] for name in OOD_SETS])
    return _dimension(gm / accuracy if accuracy else math.nan, [found[name][0] for name in OOD_SETS])


def _object_focus(reports: Mapping[str, ReportDict]) -> dict[str, Any]:
    same = first_value(reports, "backgrounds_challenge", "mixed_same", "top1_accuracy")
    rand = first_value(reports, "backgrounds_challenge", "mixed_rand", "top1_accuracy")
    if same is None or rand is None:
        raise Missing("needs backgrounds_challenge mixed_same and mixed_rand reports")
    return _dimension(object_focus(same[1], rand[1]), [same[0], rand[0]])


def _shape_bias(reports: Mapping[str, ReportDict]) -> dict[str, Any]:
    found = first_value(reports, "shape_bias_sets", "cue_conflict", "shape_bias", "pooled")
    if found is None:
        raise Missing("needs a shape_bias_sets/cue_conflict report")
    return _dimension(found[1], [found[0]])


UNRECORDED_ATTACK_CONVENTION = "pixel"
"""The attack convention of an adversarial.json that records none: imagenet-suite attacked in [0, 1] pixel
space before it recorded conventions."""


def attack_convention_of(adversarial: Mapping[str, Any]) -> str:
    """Where the FGSM and PGD of an adversarial.json (or ``summary.adversarial``) perturbed: its
    ``attack_convention``, :data:`UNRECORDED_ATTACK_CONVENTION` when it records none.

    Example:
        >>> attack_convention_of({"attack_convention": "hesse2025"}), attack_convention_of({"rows": 10})
        ('hesse2025', 'pixel')
    """
    return adversarial.get("attack_convention", UNRECORDED_ATTACK_CONVENTION)


def _adversarial(adversarial: Mapping[str, Any] | None) -> dict[str, Any]:
    if not adversarial:
        raise Missing("needs the attacks: evaluate --adversarial N (with an imagenet_val folder)")
    if "fgsm_accuracy" not in adversarial or "pgd_accuracy" not in adversarial:
        raise Missing("needs FGSM and PGD: evaluate --adversarial N --attack fgsm,pgd[,...]")
    convention = attack_convention_of(adversarial)
    if convention != QUBA_ATTACK_CONVENTION:
        older = "" if "attack_convention" in adversarial else ", by an imagenet-suite that did not record it"
        raise Missing(
            f"attacked under the {convention!r} convention ({ATTACK_CONVENTIONS[convention]}{older}), on another scale "
            f"than QUBA's mu/sigma, which are of Beyond Accuracy's protocol: evaluate --adversarial N "
            f"--attack-convention {QUBA_ATTACK_CONVENTION}"
        )
    clean, fgsm, pgd = (float(adversarial[name]) for name in ("clean_accuracy", "fgsm_accuracy", "pgd_accuracy"))
    value = geometric_mean([fgsm / clean, pgd / clean]) if clean else math.nan
    return _dimension(value, ["adversarial"], f"{adversarial.get('rows')} val images, {adversarial.get('attack', '')}")


def quba_dimensions(
    reports: Mapping[str, ReportDict],
    params_millions: float | None,
    adversarial: Mapping[str, Any] | None,
    allow_partial: bool = False,
) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """``(present, missing)``: each of the nine dimensions either with its value or with what it needs.

    A dimension computed from partial inputs (only with ``allow_partial``) carries ``"partial": True``.
    """
    present: dict[str, dict[str, Any]] = {}
    missing: dict[str, str] = {}
    try:
        key, accuracy = _accuracy(reports)
        present["accuracy"] = _dimension(accuracy, [key])
    except Missing as absent:
        accuracy, missing["accuracy"] = None, str(absent)
    needs_accuracy = "needs the ImageNet val accuracy (an imagenet_val report) to normalise"
    computations = {
        "adversarial_robustness": lambda: _adversarial(adversarial),
        "c_robustness": lambda: _normalised(
            accuracy, needs_accuracy, lambda r, a: _c_robustness(r, a, allow_partial), reports
        ),
        "ood_robustness": lambda: _normalised(accuracy, needs_accuracy, _ood_robustness, reports),
        "calibration_error": lambda: _id_metric(reports, "calibration_error", None, "calibration (CE)"),
        "class_balance": lambda: _id_metric(reports, "class_balance", "reference_impl", "class balance"),
        "object_focus": lambda: _object_focus(reports),
        "shape_bias": lambda: _shape_bias(reports),
        "params_millions": lambda: _params(params_millions),
    }
    for name, compute in computations.items():
        try:
            present[name] = compute()
        except Missing as absent:
            missing[name] = str(absent)
            continue
        if not math.isfinite(present[name]["value"]):
            del present[name]
            missing[name] = "undefined: its normalising accuracy is 0"
    ordered = {name: present[name] for name in DIMENSIONS if name in present}
    return ordered, {name: missing[name] for name in DIMENSIONS if name in missing}


def _normalised(accuracy: float | None, needs: str, compute, reports) -> dict[str, Any]:
    if accuracy is None:
        raise Missing(needs)
    return compute(reports, accuracy)


def _params(params_millions: float | None) -> dict[str, Any]:
    if params_millions is None:
        raise Missing("needs the model's parameter count")
    return _dimension(float(params_millions), ["model"])


AUTOATTACK_QUBA = "autoattack-linf"
"""The AutoAttack of Beyond Accuracy's Table 8 variant: the paper does not state its norm or radius; its
adversarially trained rows match RobustBench's ImageNet L∞ 4/255 AutoAttack accuracy over clean accuracy
(ViT-S of Singh et al. 2023: 48.08 / 72.56 = 0.66, Table 8: 0.66), the threat model those models are
trained for."""


def quba_autoattack(
    present: Mapping[str, Mapping[str, Any]],
    missing: Mapping[str, str],
    partial: Mapping[str, str],
    adversarial: Mapping[str, Any] | None,
    weights: Mapping[str, float] | None,
) -> dict[str, Any]:
    """``{"quba_autoattack": ...}`` when the attacks include ``autoattack-linf`` at its default radius, else
    ``{}``: Beyond Accuracy's Table 8 QUBA, with AutoAttack as the adversarial dimension.

    The dimension is AA-A / A, the AutoAttack accuracy relative to the clean accuracy of the same images
    (as the paper's own adversarial robustness; :data:`AUTOATTACK_QUBA` says why L∞ 4/255), z-scored with
    μ/σ 0.04/0.03 (:func:`~imagenet_suite.scoring.metrics.quba.quba_score_autoattack`); the other eight
    are QUBA's. ``score`` is None while a dimension is missing (``missing`` names it).
    """
    entry = ((adversarial or {}).get("autoattack") or {}).get(AUTOATTACK_QUBA)
    if entry is None:
        return {}
    clean = float(adversarial["clean_accuracy"])
    value = entry["accuracy"] / clean if clean > 0 else None
    absent = {name: why for name, why in missing.items() if name != "adversarial_robustness"}
    if value is None:
        absent["adversarial_robustness"] = "undefined: its normalising accuracy is 0"
    values = {name: item["value"] for name, item in present.items()} | {"adversarial_robustness": value}
    return {
        "quba_autoattack": {
            "score": quba_score_autoattack(values, weights) if not absent else None,
            "adversarial_robustness": value,
            "missing": {name: absent[name] for name in DIMENSIONS if name in absent},
            "partial": {name: note for name, note in partial.items() if name != "adversarial_robustness"},
            "note": f"AutoAttack {entry['version']} {entry['norm']} eps={entry['eps']:.6g} accuracy / clean accuracy "
            f"on {adversarial['rows']} val images, mu/sigma 0.04/0.03 (Beyond Accuracy, Table 8)",
        }
    }


__all__ = [
    "AUTOATTACK_QUBA",
    "OOD_SETS",
    "SHAPE_BIAS_SET_CONFIGS",
    "UNRECORDED_ATTACK_CONVENTION",
    "Missing",
    "attack_convention_of",
    "geometric_mean",
    "ood_accuracies",
    "quba_autoattack",
    "quba_dimensions",
]
