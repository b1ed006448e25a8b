"""ImageNet-C in the suite summary: the top-1 accuracy of each benchmark (corruption, severity) set from
the reports (the released ``imagenet_c`` configs, else the regenerated ``perturbations`` build), its mean
over severities per corruption, and mCE and relative mCE (Hendrycks & Dietterich 2019) against AlexNet's
published errors (:data:`ALEXNET_ERRORS`, :data:`ALEXNET_CLEAN_ERROR`).

The same accuracies feed QUBA's C-robustness (:mod:`imagenet_suite.scoring.summary.quba`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...perturbations.corruptions import IMAGENET_C, SEVERITIES
from .reports import ReportDict, report_value, reports_of

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
RELEASED_IMAGENET_C = "imagenet_c"  # the builder of the released ImageNet-C (not the regenerated `perturbations`)


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


__all__ = [
    "ALEXNET_CLEAN_ERROR",
    "ALEXNET_ERRORS",
    "RELEASED_IMAGENET_C",
    "corruption_accuracies",
    "imagenet_c_summary",
    "per_corruption_means",
    "released_imagenet_c_accuracy",
]
