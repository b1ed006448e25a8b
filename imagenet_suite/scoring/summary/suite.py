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
  adversarial_robustness     GM(FGSM-A / A, PGD-A / A), A the clean accuracy of the same attacked subset
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
  (:func:`quba_autoattack`): ``{"score", "adversarial_robustness", "missing", "partial", "note"}``.
* ``adversarial`` — adversarial.json (:data:`ADVERSARIAL`): the attacked subset, clean, FGSM and PGD
  accuracies, and per AutoAttack perturbation type its accuracy and settings (``autoattack``).
* ``imagenet_c`` — mCE and relative mCE (Hendrycks & Dietterich 2019): per corruption the error
  averaged over its severities divided by AlexNet's (:data:`ALEXNET_ERRORS`); relative CE subtracts
  the clean errors first. Both are fractions (1.0 = AlexNet) over the benchmark corruptions present.
* ``ninco`` — per detector the mean AUROC and mean FPR@95 over the NINCO classes (uniform over
  classes, NINCO's headline) and the unit tests failed.
* ``ninco_cleaning`` — per whole OOD set with NINCO subsets (``popular_ood`` builds) and detector, FPR@95
  and AUROC (NINCO's convention: ImageNet val positive) on the ``full`` set, on NINCO's inspected sample
  (``ninco_sample``, the paper's "-f") and on its cleaned part (``ninco_cleaned``, "-c"), each with its
  OOD rows (:func:`ninco_cleaning_summary`; Bitterwolf et al. 2023, Tables 15–19).
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

Reading a suite.json back (:func:`read_suite`, used by ``leaderboard`` and by ``evaluate`` on an existing
run folder): its ``format`` must be :data:`SUITE_FORMAT`, :data:`SUITE_FORMAT_2` (the same keys but
``weights_source``: the weights tag is unknown) or absent, the layout imagenet-suite wrote before it had
one (also reports without ``provenance``: the builds they read are unknown) — and its structure must match :data:`SUITE_SCHEMAS` (a small declarative check:
:class:`Fields`, :class:`MapOf`, :class:`ListOf`, :class:`Number`, :class:`Text`, :class:`Maybe`).
A mismatch is one :class:`~imagenet_suite.errors.RunFolderError` line naming the file, the JSON path
(``datasets["imagenet_val"].metrics[0].value``) and what was expected.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ... import __version__
from ...errors import RunFolderError
from ...perturbations.corruptions import IMAGENET_C, SEVERITIES
from ..evaluation.preprocessing import ANZAKU2024, HESSE2025, PROTOCOLS, report_protocol
from ..metrics.object_focus import object_focus
from ..metrics.quba import DEFAULT_WEIGHTS, DIMENSIONS, quba_score, quba_score_autoattack

ReportDict = Mapping[str, Any]

# Hendrycks & Dietterich (2019): AlexNet's top-1 error on each ImageNet-C corruption, averaged over the
# five severities (hendrycks/robustness, as copied verbatim by google-research/augmix's ALEXNET_ERR).
ALEXNET_ERRORS: dict[str, float] = dict(
    zip(
        IMAGENET_C,
        (
            0.886428,
            0.894468,
            0.922640,
            0.819880,
            0.826268,
            0.785948,
            0.798360,
            0.866816,
            0.826572,
            0.819324,
            0.564592,
            0.853204,
            0.646056,
            0.717840,
            0.606500,
        ),
        strict=True,
    )
)
# AlexNet's clean top-1 error, for relative mCE: torchvision's alexnet (IMAGENET1K_V1, acc@1 56.522),
# the model Hendrycks & Dietterich evaluated (their Table 1 prints 43.5).
ALEXNET_CLEAN_ERROR = 1 - 0.56522
OOD_SETS = ("imagenet_r", "sketch16", "stylized16", "edge16", "silhouette16")
SHAPE_BIAS_SET_CONFIGS = {
    "sketch16": "sketch",
    "stylized16": "stylized",
    "edge16": "edge",
    "silhouette16": "silhouette",
}
ID_DATASET = "imagenet_val"
RELEASED_IMAGENET_C = "imagenet_c"  # the builder of the released ImageNet-C (not the regenerated `perturbations`)
HEADLINE_METRICS = (
    "mean_corruption_accuracy",  # first: a perturbations build's top1_accuracy pools its clean rows
    "real_top1_accuracy",
    "multilabel_accuracy",
    "top1_accuracy",
    "accuracy16",
    "mean_corruption_accuracy",
)


# ----------------------------------------------------------------------------------------- reading reports


def report_value(report: ReportDict, metric: str, variant: str | None = None, subgroup: str = "") -> float | None:
    """The value of the first row ``metric`` (any variant when None) and ``subgroup``; None if absent or NaN."""
    row = report_row(report, metric, variant, subgroup)
    if row is None:
        return None
    value = row.get("value")
    return None if value is None or math.isnan(value) else float(value)


def report_row(
    report: ReportDict, metric: str, variant: str | None = None, subgroup: str = ""
) -> Mapping[str, Any] | None:
    """The first row ``metric`` (any variant when None) and ``subgroup`` (:func:`report_value` reads its value)."""
    for row in report.get("metrics", ()):
        wanted = variant is None or row.get("variant", "") == variant
        if wanted and row["metric"] == metric and row.get("subgroup", "") == subgroup:
            return row
    return None


def reports_of(
    reports: Mapping[str, ReportDict], dataset: str, config: str | None = None
) -> Iterator[tuple[str, ReportDict]]:
    """``(key, report)`` of the reports on builder ``dataset`` (and ``config``), in key order."""
    for key in sorted(reports):
        meta = reports[key].get("meta", {})
        if meta.get("dataset") == dataset and (config is None or meta.get("config") == config):
            yield key, reports[key]


def first_value(
    reports: Mapping[str, ReportDict], dataset: str, config: str | None, metric: str, variant: str | None = None
) -> tuple[str, float] | None:
    """``(key, value)`` of the first report on ``dataset``/``config`` holding ``metric``; None if none does."""
    for key, report in reports_of(reports, dataset, config):
        value = report_value(report, metric, variant)
        if value is not None:
            return key, value
    return None


def headline_accuracy(report: ReportDict) -> tuple[str, float] | None:
    """``(metric, value)``: the report's main accuracy, the first of :data:`HEADLINE_METRICS` it holds.

    A corruption build's is the mean accuracy over its corruptions (clean rows excluded), else ReaL
    top-1, multi-label accuracy, top-1, 16-class accuracy.

    Example:
        A perturbations build whose clean rows are all right and corrupted rows all wrong pools to a
        top-1 of 0.5; its headline is the corrupted accuracy, 0.0:

        >>> rows = [("top1_accuracy", 0.5), ("mean_corruption_accuracy", 0.0), ("clean_accuracy", 1.0)]
        >>> headline_accuracy({"metrics": [{"metric": m, "value": v, "variant": "top1"} for m, v in rows]})
        ('mean_corruption_accuracy', 0.0)
    """
    row = headline_row(report)
    return None if row is None else (row["metric"], float(row["value"]))


def headline_row(report: ReportDict) -> Mapping[str, Any] | None:
    """The row :func:`headline_accuracy` reads (None without one)."""
    for metric in HEADLINE_METRICS:
        if report_value(report, metric) is not None:
            return report_row(report, metric)
    return None


def geometric_mean(values: list[float]) -> float:
    """GM as ``scipy.stats.mstats.gmean`` (Beyond Accuracy's code): 0 when any value is 0."""
    if any(value <= 0 for value in values):
        return 0.0
    return math.exp(sum(math.log(value) for value in values) / len(values))


# ----------------------------------------------------------------------------------------- QUBA dimensions


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


def corruption_accuracies(reports: Mapping[str, ReportDict]) -> tuple[dict[tuple[str, int], float], list[str]]:
    """Top-1 accuracy per benchmark (corruption, severity) and the reports they came from.

    The released ``imagenet_c`` (one config per ``<corruption>_<severity>``) when present, else the
    regenerated ``perturbations`` config ``imagenet_c_regenerated`` (``corruption_accuracy`` rows per
    ``<corruption>/<severity>``).
    """
    found: dict[tuple[str, int], float] = {}
    sources: list[str] = []
    for key, report in reports_of(reports, RELEASED_IMAGENET_C):
        released = released_imagenet_c_accuracy(report)
        if released is not None and released[0] in IMAGENET_C:
            found[released[:2]] = released[2]
            sources.append(key)
    if found:
        return found, sources
    for key, report in reports_of(reports, "perturbations", "imagenet_c_regenerated"):  # not Heuillet et al.'s `common`
        for corruption in IMAGENET_C:
            for severity in SEVERITIES:
                value = report_value(report, "corruption_accuracy", "top1", f"{corruption}/{severity}")
                if value is not None:
                    found[(corruption, severity)] = value
                    if key not in sources:
                        sources.append(key)
    return found, sources


def released_imagenet_c_accuracy(report: ReportDict) -> tuple[str, int, float] | None:
    """``(corruption, severity, top-1)`` of a report on a config ``<corruption>_<severity>`` of the released
    ImageNet-C (the ``imagenet_c`` builder, its 4 extra corruptions included); None for any other report.

    Example:
        >>> meta = {"dataset": "imagenet_c", "config": "speckle_noise_3"}
        >>> released_imagenet_c_accuracy({"meta": meta, "metrics": [{"metric": "top1_accuracy", "value": 0.25}]})
        ('speckle_noise', 3, 0.25)
    """
    meta = report.get("meta", {})
    corruption, _, severity = str(meta.get("config", "")).rpartition("_")
    value = report_value(report, "top1_accuracy", "")
    if meta.get("dataset") != RELEASED_IMAGENET_C or not corruption or not severity.isdigit() or value is None:
        return None
    return corruption, int(severity), value


def per_corruption_means(accuracies: Mapping[tuple[str, int], float]) -> dict[str, float]:
    """Mean accuracy over the severities present, per corruption (benchmark order)."""
    means = {}
    for corruption in IMAGENET_C:
        values = [value for (name, _), value in accuracies.items() if name == corruption]
        if values:
            means[corruption] = sum(values) / len(values)
    return means


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


def _adversarial(adversarial: Mapping[str, Any] | None) -> dict[str, Any]:
    if not adversarial:
        raise Missing("needs the attacks: evaluate --adversarial N (with an imagenet_val folder)")
    if "fgsm_accuracy" not in adversarial or "pgd_accuracy" not in adversarial:
        raise Missing("needs FGSM and PGD: evaluate --adversarial N --attack fgsm,pgd[,...]")
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


# ----------------------------------------------------------------------------------------- other headlines


def imagenet_c_summary(reports: Mapping[str, ReportDict], accuracy: float | None) -> dict[str, Any] | None:
    """mCE and relative mCE over the benchmark corruptions present (None without ImageNet-C).

    Example:
        Gaussian noise at severities 1 and 2 only (accuracies 0.6 and 0.4): its error is 0.5, and
        CE = 0.5 / AlexNet's 0.886428; relative CE, with a clean accuracy of 0.75, is
        (0.5 - 0.25) / (0.886428 - AlexNet's clean error 0.43478):

        >>> def report(config, accuracy):
        ...     meta = {"dataset": "imagenet_c", "config": config}
        ...     return {"meta": meta, "metrics": [{"metric": "top1_accuracy", "value": accuracy}]}
        >>> reports = {"c/1": report("gaussian_noise_1", 0.6), "c/2": report("gaussian_noise_2", 0.4)}
        >>> summary = imagenet_c_summary(reports, accuracy=0.75)
        >>> summary["sets"], round(summary["mce"], 6), round(summary["relative_mce"], 6)
        (2, 0.564062, 0.553528)
    """
    accuracies, sources = corruption_accuracies(reports)
    if not accuracies:
        return None
    per_corruption = {}
    for corruption, mean in per_corruption_means(accuracies).items():
        error = 1 - mean
        entry = {"accuracy": mean, "ce": error / ALEXNET_ERRORS[corruption]}
        if accuracy is not None:
            entry["relative_ce"] = (error - (1 - accuracy)) / (ALEXNET_ERRORS[corruption] - ALEXNET_CLEAN_ERROR)
        per_corruption[corruption] = entry
    summary: dict[str, Any] = {
        "mce": sum(entry["ce"] for entry in per_corruption.values()) / len(per_corruption),
        "relative_mce": None,
        "sets": len(accuracies),
        "corruptions": per_corruption,
        "sources": sources,
    }
    if accuracy is not None:
        summary["relative_mce"] = sum(entry["relative_ce"] for entry in per_corruption.values()) / len(per_corruption)
    return summary


def ninco_summary(reports: Mapping[str, ReportDict]) -> dict[str, Any] | None:
    """Per detector: mean AUROC and mean FPR@95 over the NINCO classes (config ``ninco``) and the unit
    tests failed (config ``unit_tests``); None without NINCO reports."""
    detectors: dict[str, dict[str, Any]] = {}
    for key, report in reports_of(reports, "ninco", "ninco"):
        for row in report.get("metrics", ()):
            variant = row.get("variant", "")
            if row["metric"] in ("auroc", "fpr95") and variant.endswith(":macro") and not row.get("subgroup"):
                entry = detectors.setdefault(variant.removesuffix(":macro"), {"source": key})
                entry[f"mean_{row['metric']}"] = row["value"]
    for key, report in reports_of(reports, "ninco", "unit_tests"):
        for row in report.get("metrics", ()):
            if row["metric"] == "unit_tests_failed":
                detector, _, rule = row.get("variant", "").partition(":")
                detectors.setdefault(detector, {})["unit_tests_failed"] = {
                    "failed": row["numerator"],
                    "of": row["denominator"],
                    "rule": rule,
                    "source": key,
                }
    return detectors or None


CLEANING_PARTS = {"": "full", "ninco_sample": "ninco_sample", "ninco_cleaned": "ninco_cleaned"}
"""Report subgroup of a whole OOD set's rows -> its part in ``summary.ninco_cleaning``."""


def ninco_cleaning_summary(reports: Mapping[str, ReportDict]) -> dict[str, Any] | None:
    """``{report key: {detector: {part: {"fpr95", "auroc", "rows"}}}}`` for every report with NINCO subset
    rows (:data:`CLEANING_PARTS`: ``full``, ``ninco_sample``, ``ninco_cleaned``); ``rows`` is the number of OOD
    images, from the FPR@95 row's denominator. None without such reports.

    Example:
        >>> row = lambda metric, value, subgroup, n=None: {"metric": metric, "value": value, "variant": "msp",
        ...                                                "subgroup": subgroup, "denominator": n}
        >>> report = {"metrics": [row("fpr95", 0.6, "", 10), row("auroc", 0.7, ""),
        ...                       row("fpr95", 0.4, "ninco_cleaned", 3), row("auroc", 0.9, "ninco_cleaned")]}
        >>> ninco_cleaning_summary({"popular_ood/places": report})
        {'popular_ood/places': {'msp': {'full': {'fpr95': 0.6, 'rows': 10, 'auroc': 0.7}, 'ninco_cleaned': {'fpr95': 0.4, 'rows': 3, 'auroc': 0.9}}}}
    """
    found: dict[str, Any] = {}
    for key in sorted(reports):
        rows = reports[key].get("metrics", ())
        if not any(row.get("subgroup") in ("ninco_sample", "ninco_cleaned") for row in rows):
            continue
        for row in rows:
            part = CLEANING_PARTS.get(row.get("subgroup", ""))
            variant = row.get("variant", "")
            if part is None or row["metric"] not in ("fpr95", "auroc") or ":" in variant or not variant:
                continue
            entry = found.setdefault(key, {}).setdefault(variant, {}).setdefault(part, {})
            entry[row["metric"]] = row["value"]
            if row["metric"] == "fpr95":
                entry["rows"] = row.get("denominator")
    return found or None


def lca_summary(reports: Mapping[str, ReportDict]) -> dict[str, dict[str, float]]:
    """``{report key: {distance: LCA over mistakes}}`` for every report with LCA rows."""
    found: dict[str, dict[str, float]] = {}
    for key in sorted(reports):
        for row in reports[key].get("metrics", ()):
            if row["metric"] == "lca" and not row.get("subgroup") and row.get("value") is not None:
                found.setdefault(key, {})[row.get("variant", "")] = row["value"]
    return found


def under(reports: Mapping[str, ReportDict], protocol: str) -> dict[str, ReportDict]:
    """The reports measured under evaluation ``protocol`` (:func:`~imagenet_suite.scoring.evaluation.preprocessing.report_protocol`)."""
    return {key: report for key, report in reports.items() if report_protocol(report) == protocol}


def asma_summary(reports: Mapping[str, ReportDict]) -> dict[str, dict[str, float]]:
    """``{report key: {variant: ASMA}}`` for every ``anzaku2024`` report with ASMA rows (PatchML, ReaL
    sets resized without a centre crop, as Anzaku et al. 2024 measured ASMA)."""
    found: dict[str, dict[str, float]] = {}
    reports = under(reports, ANZAKU2024)
    for key in sorted(reports):
        for row in reports[key].get("metrics", ()):
            if row["metric"] == "asma" and row.get("value") is not None:
                found.setdefault(key, {})[row.get("variant", "")] = row["value"]
    return found


def real_summary(reports: Mapping[str, ReportDict]) -> dict[str, Any] | None:
    """ReaL top-1 (and top-5) from the first ``hesse2025`` report of an ``imagenet_real`` build holding it
    (Beyer et al. 2020 evaluate with the model's own preprocessing, centre crop). Other label sets scored
    the ReaL way (ImageNetV2's multi-labels of Anzaku et al. 2024) are not ReaL: they are in ``anzaku2024``."""
    for key, report in reports_of(under(reports, HESSE2025), "imagenet_real"):
        top1 = report_value(report, "real_top1_accuracy")
        if top1 is not None:
            return {
                "real_top1_accuracy": top1,
                "real_top5_accuracy": report_value(report, "real_top5_accuracy"),
                "source": key,
            }
    return None


def expert_labels_summary(reports: Mapping[str, ReportDict]) -> dict[str, dict[str, Any]] | None:
    """Shankar et al.'s multi-label accuracy (per-class mean and pooled, lenient and strict) and the
    ImageNet-M mistakes, per ``imagenet_multilabel`` report; None without one."""
    found: dict[str, dict[str, Any]] = {}
    for key, report in reports_of(under(reports, HESSE2025), "imagenet_multilabel"):
        entry = {}
        for metric in ("multilabel_accuracy", "multilabel_accuracy_pooled", "imagenet_m_mistakes"):
            for variant in ("lenient", "strict"):
                value = report_value(report, metric, variant)
                if value is not None:
                    entry[f"{metric}/{variant}"] = value
        if entry:
            found[key] = entry
    return found or None


ANZAKU_COLUMNS = (
    ("top1_accuracy", "top1_accuracy", ""),
    ("real_accuracy", "multilabel_real_accuracy", "all"),
    ("asma", "asma", "exact"),
)


def anzaku2024_summary(reports: Mapping[str, ReportDict]) -> dict[str, dict[str, float]] | None:
    """``{report key: {"top1_accuracy", "real_accuracy", "asma"}}`` (those present) for every ``anzaku2024``
    report with ASMA rows: Anzaku et al. 2024's table columns, resized without a centre crop."""
    found: dict[str, dict[str, float]] = {}
    for key, report in sorted(under(reports, ANZAKU2024).items()):
        if report_value(report, "asma", "exact") is None:
            continue
        entry = {name: report_value(report, metric, variant) for name, metric, variant in ANZAKU_COLUMNS}
        found[key] = {name: value for name, value in entry.items() if value is not None}
    return found or None


def suite_summary(
    reports: Mapping[str, ReportDict],
    *,
    params_millions: float | None = None,
    adversarial: Mapping[str, Any] | None = None,
    weights: Mapping[str, float] | None = None,
    allow_partial: bool = False,
) -> dict[str, Any]:
    """Every headline number the reports allow (module docstring); JSON-ready (NaN as None).

    ``allow_partial``: compute QUBA dimensions from partial inputs too (C-robustness from fewer than
    the 75 ImageNet-C sets), listing them under ``quba.partial``.
    """
    present, missing = quba_dimensions(reports, params_millions, adversarial, allow_partial)
    partial = {name: entry["note"] for name, entry in present.items() if entry.pop("partial", False)}
    score = quba_score({name: entry["value"] for name, entry in present.items()}, weights) if not missing else None
    accuracy = present.get("accuracy", {}).get("value")
    summary = {
        "quba": {
            "score": score,
            "dimensions": present,
            "missing": missing,
            "weights": {**DEFAULT_WEIGHTS, **(weights or {})},
            "partial": partial,
        },
        "adversarial": dict(adversarial) if adversarial else None,
        **quba_autoattack(present, missing, partial, adversarial, weights),
        "imagenet_c": imagenet_c_summary(reports, accuracy),
        "ninco": ninco_summary(reports),
        "ninco_cleaning": ninco_cleaning_summary(reports),
        "real": real_summary(reports),
        "expert_labels": expert_labels_summary(reports),
        "asma": asma_summary(reports),
        "anzaku2024": anzaku2024_summary(reports),
        "lca": lca_summary(reports),
        "accuracies": headline_accuracies(under(reports, HESSE2025)),
        "protocols": {name: PROTOCOLS[name] for name in PROTOCOLS if under(reports, name)},
    }
    return _finite(summary)


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


def headline_accuracies(reports: Mapping[str, ReportDict]) -> dict[str, dict[str, Any]]:
    """``{key: {"metric", "value"[, "clean_accuracy"]}}``: each report's :func:`headline_accuracy`, with the
    accuracy on its clean rows beside it for a corruption build that has them."""
    accuracies = {}
    for key in sorted(reports):
        headline = headline_accuracy(reports[key])
        if headline is None:
            continue
        accuracies[key] = {"metric": headline[0], "value": headline[1]}
        clean = report_value(reports[key], "clean_accuracy")
        if headline[0] == "mean_corruption_accuracy" and clean is not None:
            accuracies[key]["clean_accuracy"] = clean
    return accuracies


def _finite(value: Any) -> Any:
    """``value`` with every NaN/inf float replaced by None (strict JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


# ----------------------------------------------------------------------------------------- reading suite.json

SUITE_JSON = "suite.json"
SUITE_FORMAT = "imagenet-suite.suite/3"
"""``format`` of the suite.json written now: layout 2 plus ``weights_source`` (the weights tag and where the
weights came from). Layout 2 and layout 1 (no ``format`` key, before formats) are read too."""
SUITE_FORMAT_2 = "imagenet-suite.suite/2"


class Check:
    """One node of a declarative JSON schema: :meth:`check` raises :class:`Mismatch` at the first
    value that does not fit, with its JSON path."""

    expected = "a value"

    def check(self, value: Any, path: str) -> None:
        raise NotImplementedError


class Mismatch(Exception):
    """Where a JSON value does not fit its schema: ``path``, what was expected, what was found."""

    def __init__(self, path: str, expected: str, found: str | None):
        self.path, self.found = path, found
        where = path or "the top level"
        super().__init__(
            f"{where}: missing; expected {expected}"
            if found is None
            else f"{where}: expected {expected}, found {found}"
        )


@dataclass(frozen=True)
class Number(Check):
    """A JSON number (never a boolean or a string), finite; ``integer``: without a fraction part."""

    integer: bool = False
    minimum: float | None = None

    @property
    def expected(self) -> str:  # type: ignore[override]
        kind = "an integer" if self.integer else "a finite number"
        return kind + (f" >= {self.minimum:g}" if self.minimum is not None else "")

    def check(self, value: Any, path: str) -> None:
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or not math.isfinite(value) or (self.integer and not isinstance(value, int)):
            raise Mismatch(path, self.expected, describe_json(value))
        if self.minimum is not None and value < self.minimum:
            raise Mismatch(path, self.expected, describe_json(value))


@dataclass(frozen=True)
class Text(Check):
    """A JSON string; ``pattern`` (a regular expression it must match in full) or ``choices``."""

    pattern: str | None = None
    choices: tuple[str, ...] | None = None
    what: str = "a string"

    @property
    def expected(self) -> str:  # type: ignore[override]
        return f"one of {list(self.choices)}" if self.choices is not None else self.what

    def check(self, value: Any, path: str) -> None:
        if (
            not isinstance(value, str)
            or (self.pattern is not None and re.fullmatch(self.pattern, value) is None)
            or (self.choices is not None and value not in self.choices)
        ):
            raise Mismatch(path, self.expected, describe_json(value))


@dataclass(frozen=True)
class Boolean(Check):
    """A JSON boolean (never a number or a string)."""

    @property
    def expected(self) -> str:  # type: ignore[override]
        return "true or false"

    def check(self, value: Any, path: str) -> None:
        if not isinstance(value, bool):
            raise Mismatch(path, self.expected, describe_json(value))


@dataclass(frozen=True)
class Maybe(Check):
    """``inner`` or null."""

    inner: Check

    @property
    def expected(self) -> str:  # type: ignore[override]
        return f"{self.inner.expected} or null"

    def check(self, value: Any, path: str) -> None:
        if value is None:
            return
        try:
            self.inner.check(value, path)
        except Mismatch as mismatch:
            if mismatch.path != path:
                raise
            raise Mismatch(path, self.expected, mismatch.found) from mismatch


@dataclass(frozen=True)
class ListOf(Check):
    """A JSON list of ``item`` (of ``length`` items when given)."""

    item: Check
    length: int | None = None

    @property
    def expected(self) -> str:  # type: ignore[override]
        return "a list" if self.length is None else f"a list of {self.length}"

    def check(self, value: Any, path: str) -> None:
        if not isinstance(value, list) or (self.length is not None and len(value) != self.length):
            raise Mismatch(path, f"{self.expected} of {self.item.expected}", describe_json(value))
        for index, item in enumerate(value):
            self.item.check(item, f"{path}[{index}]")


@dataclass(frozen=True)
class MapOf(Check):
    """A JSON object with any keys (only ``keys`` when given), each value a ``value``."""

    value: Check
    keys: tuple[str, ...] | None = None

    @property
    def expected(self) -> str:  # type: ignore[override]
        return "an object"

    def check(self, value: Any, path: str) -> None:
        if not isinstance(value, dict):
            raise Mismatch(path, "an object", describe_json(value))
        for key, item in value.items():
            if self.keys is not None and key not in self.keys:
                raise Mismatch(json_path(path, key, bracket=True), f"a key among {list(self.keys)}", "another key")
            self.value.check(item, json_path(path, key, bracket=True))


@dataclass(frozen=True)
class Fields(Check):
    """A JSON object with the ``required`` keys and perhaps the ``optional`` ones (other keys are ignored)."""

    required: Mapping[str, Check]
    optional: Mapping[str, Check] = field(default_factory=dict)

    @property
    def expected(self) -> str:  # type: ignore[override]
        return "an object"

    def check(self, value: Any, path: str) -> None:
        if not isinstance(value, dict):
            raise Mismatch(path, f"an object with keys {list(self.required)}", describe_json(value))
        for key, check in self.required.items():
            if key not in value:
                raise Mismatch(json_path(path, key), check.expected, None)
            check.check(value[key], json_path(path, key))
        for key, check in self.optional.items():
            if key in value:
                check.check(value[key], json_path(path, key))

    def extended(self, **fields: Check) -> Fields:
        """This schema with ``fields`` required on top (replacing same-named ones)."""
        return Fields({**self.required, **fields}, self.optional)


def json_path(path: str, key: str, bracket: bool = False) -> str:
    """``path.key`` for a key that is an identifier (and ``not bracket``), else ``path["key"]``."""
    if not bracket and key.isidentifier():
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


def describe_json(value: Any) -> str:
    """A JSON value for an error message: ``the string "0.5"``, ``true (a boolean)``, ``NaN``, ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, str):
        return f"the string {json.dumps(value if len(value) <= 40 else value[:40] + '...')}"
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def check_json(value: Any, schema: Check, where: str | Path) -> None:
    """RunFolderError naming ``where`` (the file), the JSON path and what was expected, on a mismatch."""
    try:
        schema.check(value, "")
    except Mismatch as mismatch:
        raise RunFolderError(f"{where}: {mismatch}") from mismatch


def read_json(path: str | Path, what: str) -> Any:
    """A JSON file's value; RunFolderError naming it as ``what`` when it cannot be read or parsed."""
    try:
        return json.loads(Path(path).read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RunFolderError(f"{path}: not a readable {what} ({' '.join(str(err).split())})") from err


NUMBER, COUNT, TEXT = Number(), Number(integer=True, minimum=0), Text()
SHA256 = Text(pattern="[0-9a-f]{64}", what="a sha256 (64 lowercase hex digits)")
BUILD = Fields(
    {
        "folder": TEXT,
        "builder": TEXT,
        "version": TEXT,
        "config": TEXT,
        "split": TEXT,
        "build_info_sha256": SHA256,
    }
)
"""One build of a dataset split: the folder read, the build's identity, the sha256 of its build_info.json."""
METRIC_ROW = Fields(
    {"metric": TEXT, "value": Maybe(NUMBER)},
    {"variant": TEXT, "subgroup": TEXT, "numerator": Maybe(NUMBER), "denominator": Maybe(NUMBER)},
)
REPORT_1 = Fields({"meta": Fields({"dataset": TEXT, "config": TEXT, "split": TEXT}), "metrics": ListOf(METRIC_ROW)})
PROVENANCE = Fields({"dataset": BUILD, "outputs": BUILD, "id_outputs": Maybe(BUILD)})
"""What a report was computed from: the split scored, the split whose outputs were scored (ImageNet val's
for a labels-only config), and the ImageNet-val outputs an OOD set was scored against (else null)."""
REPORT_2 = REPORT_1.extended(provenance=PROVENANCE)
AUTOATTACK = Fields(
    {
        "accuracy": NUMBER,
        "norm": Text(choices=("Linf", "L2", "L1")),
        "eps": NUMBER,
        "version": TEXT,
        "attacks": ListOf(TEXT),
        "iterations": COUNT,
        "queries": COUNT,
        "library": TEXT,
    }
)
"""One AutoAttack of adversarial.json: its robust accuracy and what it was run with."""
ADVERSARIAL = Fields(
    {
        "requested_rows": Number(integer=True, minimum=1),
        "seed": COUNT,
        "batch_size": Number(integer=True, minimum=1),
        "rows": COUNT,
        "clean_accuracy": NUMBER,
        "attack": TEXT,
        "ids": ListOf(TEXT),
    },
    {
        "fgsm_accuracy": NUMBER,
        "pgd_accuracy": NUMBER,
        "dataset": BUILD,
        "autoattack": MapOf(AUTOATTACK),
        "correct": MapOf(Text(pattern="[01]*", what="a string of 0s and 1s"), ("clean", "fgsm", "pgd")),
    },
)
"""adversarial.json (and ``summary.adversarial``); ``fgsm_accuracy``/``pgd_accuracy``: when those attacks ran
(always, in files written before ``--attack``); ``autoattack``: per AutoAttack perturbation type
(``autoattack-linf``, ``autoattack-l2:eps=0.5``, ...) its :data:`AUTOATTACK` entry; ``dataset``: the
ImageNet-val build attacked (absent in files written before builds were recorded); ``correct``: per
attacked image (in ``ids`` order) whether the model was right, ``1``/``0``, clean and under FGSM and PGD
(absent in files written before intervals)."""
WEIGHTS_LIBRARIES = ("torchvision", "timm", "open_clip")
"""Model libraries whose pretrained tags a run can name (``open_clip``: zero-shot vision-language models)."""
WEIGHTS_KINDS = (*WEIGHTS_LIBRARIES, "file", "none")
"""Where a run's weights came from: a library tag's pretrained weights, a file, or a random init."""
WEIGHTS_SOURCE = Fields(
    {
        "kind": Text(choices=WEIGHTS_KINDS),
        "library": Maybe(Text(choices=WEIGHTS_LIBRARIES)),
        "architecture": TEXT,
        "tag": Maybe(TEXT),
        "requested": Maybe(TEXT),
        "loaded": Boolean(),
        "location": Maybe(TEXT),
        "seed": Maybe(Number(integer=True)),
    }
)
"""Which weights a run used (``imagenet_suite.inference.models.WeightsSource.record``): ``kind`` (the tag's
pretrained weights from ``torchvision``, ``timm`` or ``open_clip``, a ``file``, or ``none``: a random init from ``seed``),
the library's ``architecture`` and the weights ``tag`` the spec resolved to (``requested``: as the spec
wrote it, null when it wrote none and the library's default was taken; ``loaded``: whether the tag's
weights are the ones loaded, false with a file or a random init, where the tag chose the architecture's
configuration and preprocessing only), and ``location`` (the URL, ``hf-hub:<repo id>`` or the file)."""
HIERARCHY = Fields(
    {
        "kind": Text(choices=("wordnet", "kmeans")),
        "build": Maybe(BUILD),
        "shipped_sha256": Maybe(SHA256),
        "paper_distance": TEXT,
    },
    {
        "seed": Maybe(Number(integer=True)),
        "sources": Maybe(MapOf(Fields({}, {"file": Maybe(TEXT), "sha256": Maybe(SHA256)}))),
    },
)
"""The hierarchy of a run's LCA distances (``imagenet_suite.scoring.metrics.lca_distances.hierarchy_record``):
its ``kind``, its ``build`` (null: the WordNet tree shipped with the package, its nodes CSV's sha256 in
``shipped_sha256``), the build's ``seed``, ``options`` and ``sources``, and ``paper_distance``, the distance
LCA-on-the-Line (Shi et al. 2024) reports with that kind of hierarchy."""
FILE_RECORD = Fields({"path": TEXT, "sha256": SHA256})
"""A file of the run folder (its path relative to the folder) and its sha256."""
UNCERTAINTY = Fields(
    {
        "method": TEXT,
        "resamples": Number(integer=True, minimum=1),
        "seed": COUNT,
        "ci95": MapOf(ListOf(NUMBER, length=2)),
        "no_interval": MapOf(TEXT),
        "samples": MapOf(ListOf(Fields({"rows": COUNT, "ids_sha256": SHA256}))),
        "files": Fields({"replicates": FILE_RECORD, "correct": MapOf(FILE_RECORD.extended(rows=COUNT))}),
    }
)
"""``summary.uncertainty`` (:mod:`imagenet_suite.scoring.summary.intervals`): the bootstrap's ``method``,
``resamples`` and ``seed``; ``ci95``: ``{JSON path of a number in summary: [low, high]}``; ``no_interval``:
``{JSON path: why it has none}``; ``samples``: per report key (and ``adversarial``: the attacked images),
the sets of images it was resampled over (rows, sha256 of the sorted ids); ``files``: the replicates and, per dataset key, the per-image correctness
of its headline accuracy, each with its sha256."""
BENCHMARK_ROW = Fields(
    {
        "set": TEXT,
        "fpr95_openood_v15": NUMBER,
        "auroc": NUMBER,
        "aupr_in": NUMBER,
        "aupr_out": NUMBER,
        "fpr95": NUMBER,
        "acc": Maybe(NUMBER),
    }
)
BENCHMARK = Fields(
    {
        "benchmark": TEXT,
        "id": Fields({"rows": COUNT, "accuracy": Maybe(NUMBER), "build": BUILD, "split": BUILD}),
        "sets": MapOf(Fields({"group": TEXT, "rows": COUNT, "build": BUILD})),
        "detectors": MapOf(ListOf(BENCHMARK_ROW)),
    },
    {"citation": TEXT},
)
"""``summary.benchmarks[NAME]`` (:func:`imagenet_suite.inference.benchmark.run_benchmark`): the ID images (rows,
top-1, the val build and the build of the split), each OOD set (group, rows, build) and per detector the rows
of :func:`imagenet_suite.scoring.benchmarks.benchmark_table` (fractions)."""
SUMMARY = Fields(
    {
        "quba": Fields(
            {
                "score": Maybe(NUMBER),
                "dimensions": MapOf(Fields({"value": NUMBER, "sources": ListOf(TEXT), "note": TEXT}), DIMENSIONS),
                "missing": MapOf(TEXT, DIMENSIONS),
                "weights": MapOf(NUMBER, DIMENSIONS),
            },
            {"partial": MapOf(TEXT, DIMENSIONS)},
        ),
        "adversarial": Maybe(ADVERSARIAL),
        "imagenet_c": Maybe(
            Fields(
                {
                    "mce": NUMBER,
                    "relative_mce": Maybe(NUMBER),
                    "sets": COUNT,
                    "corruptions": MapOf(Fields({"accuracy": NUMBER, "ce": NUMBER}, {"relative_ce": Maybe(NUMBER)})),
                    "sources": ListOf(TEXT),
                }
            )
        ),
        "ninco": Maybe(
            MapOf(
                Fields(
                    {},
                    {
                        "source": TEXT,
                        "mean_auroc": Maybe(NUMBER),
                        "mean_fpr95": Maybe(NUMBER),
                        "unit_tests_failed": Fields(
                            {"failed": Maybe(COUNT), "of": Maybe(COUNT), "rule": TEXT, "source": TEXT}
                        ),
                    },
                )
            )
        ),
        "real": Maybe(Fields({"real_top1_accuracy": NUMBER, "real_top5_accuracy": Maybe(NUMBER), "source": TEXT})),
        "expert_labels": Maybe(MapOf(MapOf(NUMBER))),
        "asma": MapOf(MapOf(NUMBER)),
        "lca": MapOf(MapOf(NUMBER)),
        "accuracies": MapOf(Fields({"metric": TEXT, "value": NUMBER}, {"clean_accuracy": NUMBER})),
    },
    {  # absent in files written before
        "anzaku2024": Maybe(MapOf(MapOf(NUMBER))),
        "benchmarks": Maybe(MapOf(BENCHMARK)),
        "ninco_cleaning": Maybe(
            MapOf(MapOf(MapOf(Fields({"fpr95": NUMBER, "auroc": NUMBER}, {"rows": Maybe(COUNT)}))))
        ),
        "protocols": MapOf(TEXT),
        "uncertainty": Maybe(UNCERTAINTY),
        "quba_autoattack": Fields(
            {
                "score": Maybe(NUMBER),
                "adversarial_robustness": Maybe(NUMBER),
                "missing": MapOf(TEXT, DIMENSIONS),
                "note": TEXT,
            },
            {"partial": MapOf(TEXT, DIMENSIONS)},
        ),
    },
)
SUITE_1 = Fields(
    {
        "model": TEXT,
        "weights": TEXT,
        "weights_sha256": Maybe(SHA256),
        "params": COUNT,
        "imagenet_suite": TEXT,
        "datasets": MapOf(REPORT_1),
        "skipped": MapOf(TEXT),
        "summary": SUMMARY,
    },
    {"hierarchy": Maybe(HIERARCHY)},  # absent in suite.json written before hierarchies were recorded
)
SUITE_2 = SUITE_1.extended(format=Text(choices=(SUITE_FORMAT_2,)), datasets=MapOf(REPORT_2))
SUITE_SCHEMAS: dict[str | None, Fields] = {
    None: SUITE_1,  # written before suite.json had a format: reports name no build
    SUITE_FORMAT_2: SUITE_2,  # reports name their builds; the weights tag is not recorded
    SUITE_FORMAT: SUITE_2.extended(format=Text(choices=(SUITE_FORMAT,)), weights_source=Maybe(WEIGHTS_SOURCE)),
}


def read_suite(path: str | Path) -> dict[str, Any]:
    """A suite.json (``path``, or the one in run folder ``path``), checked: its format is one this version
    reads and every key the summary, the Markdown and the leaderboard use is there with the right type.
    RunFolderError (one line: the file, the JSON path, what was expected) otherwise."""
    path = Path(path)
    if path.is_dir():
        path = path / SUITE_JSON
    suite = read_json(path, "suite.json of `imagenet-suite evaluate`")
    if not isinstance(suite, dict):
        raise RunFolderError(
            f"{path}: not a suite.json of `imagenet-suite evaluate` (expected an object, found {describe_json(suite)})"
        )
    if "format" in suite and (not isinstance(suite["format"], str) or suite["format"] not in SUITE_SCHEMAS):
        raise RunFolderError(
            f"{path}: format is {describe_json(suite['format'])}, but imagenet-suite {__version__} reads suite.json "
            f"of format {json.dumps(SUITE_FORMAT)} or {json.dumps(SUITE_FORMAT_2)} (or without one, as written "
            "before formats)"
        )
    check_json(suite, SUITE_SCHEMAS[suite.get("format")], path)
    return suite


def weights_tag_text(record: Mapping[str, Any]) -> str | None:
    """The weights tag of a ``weights_source`` record as one phrase, e.g. ``torchvision
    resnet50.IMAGENET1K_V2 (DEFAULT: no tag in the spec)`` or ``timm resnet50.a1_in1k``; None without one."""
    if record.get("tag") is None:
        return None
    text = f"{record['library']} {record['architecture']}.{record['tag']}"
    if record["library"] == "torchvision" and record.get("requested") in (None, "DEFAULT"):
        text += " (DEFAULT" + (": no tag in the spec)" if record.get("requested") is None else ")")
    elif record.get("requested") is None:
        text += f" ({record['library']}'s default tag: no tag in the spec)"
    return text


def weights_label(suite: Mapping[str, Any], sha256_digits: int | None = 12) -> str:
    """The weights of a suite.json in one phrase (suite.md, leaderboard rows): the tag and where the weights
    came from, their sha256 (``sha256_digits`` of it; None: all), and, with a file or a random init, the
    tag that chose the architecture and preprocessing. A suite.json before format 3 says the tag was not
    recorded.

    Example:
        >>> source = {"kind": "none", "library": "timm", "architecture": "test_resnet", "tag": "r160_in1k",
        ...           "requested": None, "loaded": False, "location": None, "seed": 0}
        >>> weights_label({"weights": "none (seed 0)", "weights_sha256": None, "weights_source": source})
        "none (seed 0); tag timm test_resnet.r160_in1k (timm's default tag: no tag in the spec) not loaded"
        >>> weights_label({"weights": "pretrained", "weights_sha256": None})
        'pretrained; weights tag not recorded'
    """
    sha = suite.get("weights_sha256")
    sha_text = f", sha256 {sha[:sha256_digits] if sha256_digits else sha}" if sha else ""
    source = suite.get("weights_source")
    if source is None:
        return f"{suite['weights']}{sha_text}; weights tag not recorded"
    tag = weights_tag_text(source)
    if source["loaded"]:
        return f"{tag}{sha_text}"
    label = f"none (seed {source['seed']})" if source["kind"] == "none" else f"file {source['location']}{sha_text}"
    return label + (f"; tag {tag} not loaded" if tag else "")


__all__ = [
    "ADVERSARIAL",
    "ALEXNET_CLEAN_ERROR",
    "ALEXNET_ERRORS",
    "AUTOATTACK",
    "BUILD",
    "HIERARCHY",
    "OOD_SETS",
    "SUITE_FORMAT",
    "SUITE_FORMAT_2",
    "SUITE_JSON",
    "SUITE_SCHEMAS",
    "UNCERTAINTY",
    "WEIGHTS_KINDS",
    "WEIGHTS_LIBRARIES",
    "WEIGHTS_SOURCE",
    "Boolean",
    "Fields",
    "ListOf",
    "MapOf",
    "Maybe",
    "Number",
    "Text",
    "anzaku2024_summary",
    "asma_summary",
    "check_json",
    "corruption_accuracies",
    "describe_json",
    "expert_labels_summary",
    "geometric_mean",
    "headline_accuracy",
    "headline_row",
    "imagenet_c_summary",
    "ninco_cleaning_summary",
    "ninco_summary",
    "quba_autoattack",
    "quba_dimensions",
    "read_json",
    "read_suite",
    "released_imagenet_c_accuracy",
    "report_row",
    "report_value",
    "suite_summary",
    "weights_label",
    "weights_tag_text",
]
