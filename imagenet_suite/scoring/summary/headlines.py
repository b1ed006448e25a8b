"""The suite summary's headline numbers other than QUBA and ImageNet-C, each from the reports of the
evaluation protocol its paper used: NINCO per detector and its cleaning tables (Bitterwolf et al. 2023),
LCA per report (Shi et al. 2024), ASMA and the ``anzaku2024`` columns (Anzaku et al. 2024; resized, no
centre crop), ReaL top-1 (Beyer et al. 2020), the expert multi-labels (Shankar et al.) and each report's
headline accuracy (``accuracies``, the leaderboard's input).

Each function takes the reports keyed by ``"<folder>[/<config>]"`` and returns its part of the summary
(None, or an empty mapping, without the reports it reads).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..evaluation.preprocessing import ANZAKU2024, HESSE2025
from .reports import ReportDict, headline_accuracy, report_value, reports_of, under


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


__all__ = [
    "ANZAKU_COLUMNS",
    "CLEANING_PARTS",
    "anzaku2024_summary",
    "asma_summary",
    "expert_labels_summary",
    "headline_accuracies",
    "lca_summary",
    "ninco_cleaning_summary",
    "ninco_summary",
    "real_summary",
]
