"""The suite summary: the seed papers' headline numbers for one model, from its score reports.

Input: the score reports of one model on many built datasets (``ScoreReport.to_dict()`` form, keyed by
``"<folder>[/<config>]"``), the model's parameter count and, when measured, its adversarial accuracies.
Which report feeds which number is read from each report's ``meta`` (the builder's ``dataset`` name and
the ``config``), never from the keys, so folders may be named freely.

Output (:func:`suite_summary`, JSON-ready):

* ``quba`` — the nine dimensions of Beyond Accuracy (Hesse et al. 2025), each ``{"value", "sources", "note"}`` or listed under
  ``missing`` with what it needs, and the QUBA score (Eq. 1, :func:`~imagenet_suite.scoring.metrics.quba.quba_score`)
  only when all nine are present. A dimension is present only from complete inputs (C-robustness: all
  75 ImageNet-C sets) unless ``allow_partial``; then it is computed from what there is, and ``partial``
  (``{dimension: what it was computed over}``) marks the dimensions and the score as partial:

  =========================  ====================================================================
  accuracy                   ImageNet val top-1 (``imagenet_val``)
  adversarial_robustness     GM(FGSM-A / A, PGD-A / A), A the clean accuracy of the same attacked subset;
                             only from attacks under Beyond Accuracy's ``hesse2025`` convention (the
                             normalised inputs; ``attack_convention`` of adversarial.json), the scale of
                             QUBA's μ/σ: a ``pixel`` run lists it as missing
  c_robustness               mean top-1 over the 15 × 5 ImageNet-C sets (mean over severities, then
                             corruptions) / A; released ``imagenet_c`` configs, else the regenerated
                             ``perturbations``; all 75 sets needed (``allow_partial``: those present,
                             ``note`` and ``partial`` say how many)
  ood_robustness             GM(R, sketch16, stylized16, edge16, silhouette16 accuracies) / A
  calibration_error          CE = GM(ECE, ACE) on ImageNet val
  class_balance              the reference implementation's F on ImageNet val
  object_focus               1 − (A_mixed_same − A_mixed_rand) on IN-9 (``backgrounds_challenge``)
  shape_bias                 cue-conflict shape bias (``shape_bias_sets/cue_conflict``)
  params_millions            parameters of the evaluated model / 1e6
  =========================  ====================================================================

* ``quba_autoattack`` — only when the attacks include ``autoattack-linf`` (ε 4/255): Beyond Accuracy's Table 8
  QUBA, with the adversarial dimension AutoAttack's accuracy / A, z-scored with μ/σ 0.04/0.03
  (:func:`~imagenet_suite.scoring.summary.quba.quba_autoattack`):
  ``{"score", "adversarial_robustness", "missing", "partial", "note"}``.
* ``adversarial`` — adversarial.json (:data:`~imagenet_suite.scoring.summary.suite_json.ADVERSARIAL`): the
  attacked subset, clean, FGSM and PGD accuracies, where FGSM and PGD perturbed (``attack_convention``), and
  per AutoAttack perturbation type its accuracy and settings (``autoattack``).
* ``imagenet_c`` — mCE and relative mCE (Hendrycks & Dietterich 2019): per corruption the error
  averaged over its severities divided by AlexNet's
  (:data:`~imagenet_suite.scoring.summary.imagenet_c.ALEXNET_ERRORS`); relative CE subtracts the clean
  errors first. Both are fractions (1.0 = AlexNet) over the benchmark corruptions present.
* ``ninco`` — per detector the mean AUROC and mean FPR@95 over the NINCO classes (uniform over
  classes, NINCO's headline) and the unit tests failed.
* ``ninco_cleaning`` — per whole OOD set with NINCO subsets (``popular_ood`` builds) and detector, FPR@95
  and AUROC (NINCO's convention: ImageNet val positive) on the ``full`` set, on NINCO's inspected sample
  (``ninco_sample``, the paper's "-f") and on its cleaned part (``ninco_cleaned``, "-c"), each with its
  OOD rows (:func:`~imagenet_suite.scoring.summary.headlines.ninco_cleaning_summary`; Bitterwolf et al.
  2023, Tables 15–18).
* ``expert_labels`` — Shankar et al.'s multi-label accuracy (lenient, strict; per-class mean and
  pooled) and ImageNet-M mistakes out of 68 (``imagenet_multilabel`` reports).
* ``real`` (ReaL top-1), ``asma`` (per PatchML / ReaL report, per variant), ``lca`` (per report, per
  distance) and ``accuracies`` (each report's headline accuracy, the leaderboard's input: for a
  corruption build, the mean accuracy over its corruptions, never the top-1 pooled with its clean rows,
  with ``clean_accuracy`` beside it).
* ``anzaku2024`` — per multi-label report resized without a centre crop: top-1, ReaL accuracy (top-1
  in the label set) and ASMA (``exact``), the columns of Anzaku et al. 2024's tables.
* ``protocols`` — the evaluation protocols the reports were measured under, each with its preprocessing.

Each number is read from reports of the evaluation protocol its paper used
(:mod:`imagenet_suite.scoring.evaluation.preprocessing`): ASMA, ``anzaku2024`` and PatchML from the
``anzaku2024`` reports (resized to the model's input size, no centre crop: Anzaku et al. 2024, App. B);
ReaL top-1 (Beyer et al. 2020), the expert multi-labels, QUBA and ``accuracies`` from the
``hesse2025`` ones (the model's own preprocessing, centre crop).

The pieces: :mod:`~imagenet_suite.scoring.summary.reports` (reading reports),
:mod:`~imagenet_suite.scoring.summary.quba` (the QUBA dimensions), :mod:`~imagenet_suite.scoring.summary.imagenet_c`
(ImageNet-C accuracies, mCE), :mod:`~imagenet_suite.scoring.summary.headlines` (the other headlines); reading a
suite.json back: :mod:`~imagenet_suite.scoring.summary.suite_json`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..evaluation.preprocessing import HESSE2025, PROTOCOLS
from ..metrics.quba import DEFAULT_WEIGHTS, DIMENSIONS, quba_score
from .headlines import (
    anzaku2024_summary,
    asma_summary,
    expert_labels_summary,
    headline_accuracies,
    lca_summary,
    ninco_cleaning_summary,
    ninco_summary,
    real_summary,
)
from .imagenet_c import imagenet_c_summary
from .quba import quba_autoattack, quba_dimensions
from .reports import ReportDict, beyond_accuracy_view, under, without_recomputed

WRAPPER_TEXT = {
    True: "hesse2025, recomputed from the logits",
    False: "hesse2025, the run's outputs",
}
"""``quba.probabilities`` of a zero-shot run: Beyond Accuracy's wrapper probabilities (softmax(s·cos), or
sigmoid(s·cos + b) with a logit bias), softmaxed again by every metric as the paper's code does: computed from
the stored logits (``--probabilities softmax``, True) or the outputs themselves (``hesse2025``, False)."""
ZERO_SHOT_ATTACKS = (
    "a zero-shot model's FGSM and PGD attacked its logits (--probabilities softmax); Beyond Accuracy attacks its "
    "wrapper's output, softmax(s·cos): evaluate with --probabilities hesse2025"
)


def suite_summary(
    reports: Mapping[str, ReportDict],
    *,
    params_millions: float | None = None,
    adversarial: Mapping[str, Any] | None = None,
    weights: Mapping[str, float] | None = None,
    allow_partial: bool = False,
    zero_shot: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Every headline number the reports allow (module docstring); JSON-ready (NaN as None).

    ``allow_partial``: compute QUBA dimensions from partial inputs too (C-robustness from fewer than
    the 75 ImageNet-C sets), listing them under ``quba.partial``. ``zero_shot``: the head record of a
    zero-shot model (:func:`~imagenet_suite.inference.zero_shot.head_record`; None for other models): QUBA
    then follows Beyond Accuracy's wrappers (``quba.probabilities`` says how). With ``probabilities``
    ``softmax`` (the outputs are logits) its probability-dependent dimensions are read from the reports
    scored again on the wrapper's probabilities (:data:`~imagenet_suite.scoring.summary.reports.WRAPPER_PROBABILITIES_KEY`),
    and the adversarial dimension is missing: its attacks ran on the logits, not on the wrapper's output.
    """
    plain = without_recomputed(reports)
    on_logits = zero_shot is not None and zero_shot.get("probabilities") == "softmax"
    present, missing = quba_dimensions(
        beyond_accuracy_view(reports) if on_logits else plain, params_millions, adversarial, allow_partial
    )
    if on_logits:
        present.pop("adversarial_robustness", None)
        missing = {
            name: ZERO_SHOT_ATTACKS if name == "adversarial_robustness" else missing[name]
            for name in DIMENSIONS
            if name in missing or name == "adversarial_robustness"
        }
    partial = {name: entry["note"] for name, entry in present.items() if entry.pop("partial", False)}
    score = quba_score({name: entry["value"] for name, entry in present.items()}, weights) if not missing else None
    accuracy = present.get("accuracy", {}).get("value")
    probabilities = {} if zero_shot is None else {"probabilities": WRAPPER_TEXT[on_logits]}
    summary = {
        "quba": {
            "score": score,
            "dimensions": present,
            "missing": missing,
            "weights": {**DEFAULT_WEIGHTS, **(weights or {})},
            "partial": partial,
            **probabilities,
        },
        "adversarial": dict(adversarial) if adversarial else None,
        **quba_autoattack(present, missing, partial, adversarial, weights),
        "imagenet_c": imagenet_c_summary(plain, accuracy),
        "ninco": ninco_summary(plain),
        "ninco_cleaning": ninco_cleaning_summary(plain),
        "real": real_summary(plain),
        "expert_labels": expert_labels_summary(plain),
        "asma": asma_summary(plain),
        "anzaku2024": anzaku2024_summary(plain),
        "lca": lca_summary(plain),
        "accuracies": headline_accuracies(under(plain, HESSE2025)),
        "protocols": {name: PROTOCOLS[name] for name in PROTOCOLS if under(plain, name)},
    }
    return _finite(summary)


def _finite(value: Any) -> Any:
    """``value`` with every NaN/inf float replaced by None (strict JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


__all__ = [
    "suite_summary",
]
