"""Reading score reports (``ScoreReport.to_dict()`` form, keyed by ``"<folder>[/<config>]"``): a metric row
or its value, the reports of one builder (and config), the reports of one evaluation protocol, and each
report's headline accuracy.

Which report is which is read from its ``meta`` (the builder's ``dataset`` name and the ``config``), never
from its key. A value is None when its row is absent or NaN.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from ..evaluation.preprocessing import report_protocol
from .column_rows import ColumnRows

ReportDict = Mapping[str, Any]
ID_DATASET = "imagenet_val"
WRAPPER_PROBABILITIES_KEY = "@hesse2025_probabilities"
"""Key suffix of a zero-shot run's report scored again on Beyond Accuracy's wrapper probabilities (``evaluate``
of an ``open_clip:`` model with ``--probabilities softmax``): the QUBA dimensions read it in place of the report
of the key without it (:func:`beyond_accuracy_view`), every other number ignores it (:func:`without_recomputed`)."""
WRAPPER_PROBABILITY_SETS = (ID_DATASET, "shape_bias_sets")
"""The builders whose QUBA rows depend on the probabilities: calibration and class balance (ImageNet val), the
16-class decisions of the OOD sets and the cue-conflict shape bias (``shape_bias_sets``, mean probabilities)."""
OBJECTNET_HEAD_KEY = "@objectnet113"
"""Key suffix of a zero-shot run's ObjectNet report with LCA-on-the-Line's 113-way head (ObjectNet's class
names prompted; ``evaluate`` of an ``open_clip:`` model)."""
HEADLINE_METRICS = (
    "mean_corruption_accuracy",  # first: a perturbations build's top1_accuracy pools its clean rows
    "real_top1_accuracy",
    "multilabel_accuracy",
    "top1_accuracy",
    "accuracy16",
    "mean_corruption_accuracy",
)


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
    rows = report.get("metrics", ())
    if isinstance(rows, ColumnRows):  # held by a leaderboard: found in the columns
        return rows.first(metric, variant, subgroup)
    for row in rows:
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


def without_recomputed(reports: Mapping[str, ReportDict]) -> dict[str, ReportDict]:
    """The reports without those scored again on Beyond Accuracy's wrapper probabilities
    (:data:`WRAPPER_PROBABILITIES_KEY`)."""
    return {key: report for key, report in reports.items() if not key.endswith(WRAPPER_PROBABILITIES_KEY)}


def beyond_accuracy_view(reports: Mapping[str, ReportDict]) -> dict[str, ReportDict]:
    """The reports with each one scored again on Beyond Accuracy's wrapper probabilities in place of the report
    it was scored again from (same key without :data:`WRAPPER_PROBABILITIES_KEY`).

    Example:
        >>> view = beyond_accuracy_view({"imagenet_val": "softmax once", "imagenet_val@hesse2025_probabilities": "twice",
        ...                              "imagenet_r": "r"})
        >>> view
        {'imagenet_val': 'twice', 'imagenet_r': 'r'}
    """
    view = without_recomputed(reports)
    for key, report in reports.items():
        if key.endswith(WRAPPER_PROBABILITIES_KEY):
            view[key.removesuffix(WRAPPER_PROBABILITIES_KEY)] = report
    return view


def under(reports: Mapping[str, ReportDict], protocol: str) -> dict[str, ReportDict]:
    """The reports measured under evaluation ``protocol`` (:func:`~imagenet_suite.scoring.evaluation.preprocessing.report_protocol`)."""
    return {key: report for key, report in reports.items() if report_protocol(report) == protocol}


__all__ = [
    "HEADLINE_METRICS",
    "ID_DATASET",
    "OBJECTNET_HEAD_KEY",
    "WRAPPER_PROBABILITIES_KEY",
    "WRAPPER_PROBABILITY_SETS",
    "ReportDict",
    "beyond_accuracy_view",
    "first_value",
    "headline_accuracy",
    "headline_row",
    "report_row",
    "report_value",
    "reports_of",
    "under",
    "without_recomputed",
]
