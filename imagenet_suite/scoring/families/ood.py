"""OOD families of NINCO (Bitterwolf et al. 2023): ``ood_detection``, ``ood_detection_datasets``, ``ood_unit_tests``, and
``ood_detection_set`` for a whole OOD set.

The grouped ones apply to a dataset whose ``protocol.ood.group_column`` is their column (``ood_class``
for NINCO classes, ``source_dataset`` for the popular OOD sets, ``test`` for unit tests);
``ood_detection_set`` applies to an OOD set without groups (ImageNet-O: ``protocol.ood`` is ``true``; the full popular
OOD sets of ``popular_ood``), and also scores the subsets its ``protocol.ood.subsets`` names among
:data:`SUBSET_COLUMNS` (NINCO's inspected samples and their cleaned part: the "-f" and "-c" columns of
Bitterwolf et al. 2023, Tables 15–18). On NINCO's classes, a split with the build's :data:`IN21K_OVERLAP` column
also gets one ``in21k_overlap`` row per class beside its per-class metrics (Appendix L's split, Tables 19–20).
Every group is scored against the ID set given in :class:`~imagenet_suite.scoring.evaluation.options.OodOptions`, once per
detector the inputs allow (or the ones asked for); without ID outputs the families refuse to run.

Artifacts: ``ood/<detector>`` holds each detector's :class:`~imagenet_suite.scoring.metrics.ood.GroupedOOD`;
on unit-test sets ``ood_fail_threshold`` holds the threshold the verdict rows used, which is the
one :func:`imagenet_suite.scoring.presentation.plots.write_ood_plots` marks. Metric functions:
:mod:`imagenet_suite.scoring.metrics.ood`; detectors: :mod:`imagenet_suite.scoring.metrics.ood_detectors`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from ...errors import ConfigError, OutputsError, param
from ..evaluation.context import EvaluationContext
from ..evaluation.family import Applies, Compute, MetricFamily
from ..evaluation.options import OodOptions
from ..evaluation.results import MetricRow
from ..metrics.classification import Fraction
from ..metrics.ood import (
    MACRO_REPLICATES,
    METRIC_NAMES,
    GroupedOOD,
    grouped_ood_metrics,
    macro_replicates,
    ood_metrics,
    unit_test_verdict,
)
from ..metrics.ood_detectors import NEEDS_FEATURES, available_detectors, detector_scores, why_unavailable
from ..metrics.uncertainty import resampled
from ..report_names import FAIL_THRESHOLD_ARTIFACT, IN21K_OVERLAP, SUBSET_COLUMNS


def applies_to(column: str) -> Applies:
    """``applies`` for a dataset whose ``protocol.ood.group_column`` is ``column`` and has that column."""

    def applies(features: Mapping[str, Any], protocol: Mapping[str, Any]) -> bool:
        ood = protocol.get("ood")
        return isinstance(ood, Mapping) and ood.get("group_column") == column and column in features

    return applies


def rows_for(column: str) -> Compute:
    """``compute`` of the OOD metrics grouped by ``column``: per detector, groups + macro + pooled (+ verdict)."""

    def compute(ctx: EvaluationContext, options: OodOptions) -> list[MetricRow]:
        check_id_outputs(ctx, options)
        ood = ctx.joined.protocol["ood"]
        names = ctx.joined.features[column]["names"]
        groups = ctx.joined.columns[column]
        expected = ood.get("groups") or names
        threshold = options.verdict_threshold(ood) if ood.get("unit_tests") else None
        if threshold is not None:
            ctx.artifacts[FAIL_THRESHOLD_ARTIFACT] = threshold
        rows: list[MetricRow] = []
        for detector in detectors(ctx, options):
            id_scores, ood_scores = scores(ctx, options, detector)
            grouped = grouped_ood_metrics(id_scores, ood_scores, groups, names, options.tpr, expected)
            ctx.artifacts[f"ood/{detector}"] = grouped
            for metric in MACRO_REPLICATES:
                ctx.resample(
                    metric,
                    f"{detector}:macro",
                    "",
                    resampled(
                        [options.id_outputs.ids, ctx.ids],
                        lambda counts, metric=metric, id_scores=id_scores, ood_scores=ood_scores: macro_replicates(
                            metric, id_scores, ood_scores, groups, names, counts[0], counts[1], options.tpr, expected
                        ),
                    ),
                )
            rows += grouped_rows(detector, grouped)
            if threshold is not None:
                rows += verdict_rows(detector, grouped, threshold)
        return rows + overlap_rows(ctx, column)

    return compute


def overlap_rows(ctx: EvaluationContext, column: str) -> list[MetricRow]:
    """One ``in21k_overlap`` row per group of ``column`` (:data:`IN21K_OVERLAP`), none without that column;
    OutputsError when a group's rows disagree."""
    if IN21K_OVERLAP not in ctx.joined.columns:
        return []
    names = ctx.joined.features[column]["names"]
    found: dict[str, set[str]] = {}
    for group, value in zip(ctx.joined.columns[column].tolist(), ctx.joined.columns[IN21K_OVERLAP], strict=True):
        found.setdefault(names[group], set()).add((value or "").strip())
    rows = []
    for name, values in found.items():
        if len(values) > 1:
            raise OutputsError(f"{ctx.joined.dataset}: OOD class {name!r} has several {IN21K_OVERLAP} values "
                               f"{sorted(values)}: expected one per class")  # fmt: skip
        (value,) = values
        if value:
            rows.append(MetricRow(IN21K_OVERLAP, float(value != "0"), "", name))
    return rows


def applies_ungrouped(features: Mapping[str, Any], protocol: Mapping[str, Any]) -> bool:
    """``applies`` for a whole OOD set with no group column: ``protocol.ood`` is ``true`` (ImageNet-O)
    or a mapping without ``group_column``."""
    ood = protocol.get("ood")
    return ood is True or (isinstance(ood, Mapping) and not ood.get("group_column"))


def ungrouped_rows(ctx: EvaluationContext, options: OodOptions) -> list[MetricRow]:
    """``compute`` for a whole OOD set against the ID set: per detector, one row per metric (no subgroup)."""
    check_id_outputs(ctx, options)
    everything = torch.zeros(ctx.scores.shape[0], dtype=torch.long, device=ctx.scores.device)
    rows: list[MetricRow] = []
    subsets = subset_masks(ctx)
    for detector in detectors(ctx, options):
        id_scores, ood_scores = scores(ctx, options, detector)
        grouped = grouped_ood_metrics(id_scores, ood_scores, everything, [ctx.joined.dataset], options.tpr)
        ctx.artifacts[f"ood/{detector}"] = grouped
        rows += [_metric_row(metric, grouped.pooled[metric], detector, "") for metric in METRIC_NAMES]
        for name, mask in subsets.items():
            found = ood_metrics(id_scores, ood_scores[mask], options.tpr)
            rows += [_metric_row(metric, found[metric], detector, name) for metric in METRIC_NAMES]
    return rows


def subset_masks(ctx: EvaluationContext) -> dict[str, torch.Tensor]:
    """``{subset: boolean mask over the OOD rows}`` for each of :data:`SUBSET_COLUMNS` that the set's
    ``protocol.ood.subsets`` names and that has at least one row."""
    ood = ctx.joined.protocol.get("ood")
    named = ood.get("subsets", {}) if isinstance(ood, Mapping) else {}
    masks = {}
    for name in SUBSET_COLUMNS:
        column = named.get(name)
        if column is None or column not in ctx.joined.columns:
            continue
        mask = torch.tensor([bool(value) for value in ctx.joined.columns[column]], device=ctx.scores.device)
        if bool(mask.any()):
            masks[name] = mask
    return masks


def grouped_rows(detector: str, grouped: GroupedOOD) -> list[MetricRow]:
    """Report rows: per metric, ``<detector>:macro`` and ``<detector>:pooled`` overall, then per group."""
    rows = []
    for metric in METRIC_NAMES:
        rows.append(MetricRow(metric, grouped.macro[metric], f"{detector}:macro"))
        rows.append(_metric_row(metric, grouped.pooled[metric], f"{detector}:pooled", ""))
    for group, metrics in grouped.per_group.items():
        rows += [_metric_row(metric, metrics[metric], detector, group) for metric in METRIC_NAMES]
    return rows


def verdict_rows(detector: str, grouped: GroupedOOD, threshold: float) -> list[MetricRow]:
    """``unit_tests_failed`` (count over tests) and one ``unit_test_failed`` (0/1) per test."""
    failed, count = unit_test_verdict(grouped.fpr_per_group(), threshold)
    rows = [
        MetricRow(
            "unit_tests_failed", float(count), f"{detector}:fpr95>{threshold:g}", "", count, len(grouped.per_group)
        )
    ]
    rows += [
        MetricRow("unit_test_failed", float(name in failed), f"{detector}:fpr95>{threshold:g}", name)
        for name in grouped.per_group
    ]
    return rows


def _metric_row(metric: str, value: float | Fraction, variant: str, subgroup: str) -> MetricRow:
    if isinstance(value, Fraction):
        return MetricRow.fraction(metric, value, variant, subgroup)
    return MetricRow(metric, float(value), variant, subgroup)


def check_id_outputs(ctx: EvaluationContext, options: OodOptions) -> None:
    """ConfigError without ID outputs; OutputsError if they differ from the OOD outputs in C or kind.

    The ID outputs are validated (finite, distributions) once per options object.
    """
    if options.id_outputs is None:
        raise ConfigError(
            f"OOD metrics on {ctx.joined.dataset}/{ctx.joined.config} need the model's outputs on the "
            f"in-distribution set too: pass {param('id_outputs')} FILE (ImageNet val) or "
            "score(..., options=ScoreOptions(ood=OodOptions(id_outputs=...)))"
        )
    ood_outputs, id_outputs = ctx.joined.outputs, options.id_outputs
    if id_outputs.num_classes != ood_outputs.num_classes:
        raise OutputsError(
            f"ID outputs have C={id_outputs.num_classes} scores per row but the OOD outputs have "
            f"C={ood_outputs.num_classes}: both must come from the same model"
        )
    if id_outputs.kind != ood_outputs.kind:
        raise OutputsError(
            f"ID outputs are {id_outputs.kind!r} but OOD outputs are {ood_outputs.kind!r}: save both the same way"
        )
    if "validated" not in options.cache:
        id_outputs.validate()
        options.cache["validated"] = True


def detectors(ctx: EvaluationContext, options: OodOptions) -> list[str]:
    """The detectors to run: ``options.detectors`` (ConfigError if one cannot run) or all the inputs allow."""
    has_features = options.id_features is not None and options.ood_features is not None
    kind = ctx.joined.outputs.kind
    if options.detectors is None:
        return available_detectors(kind, has_features, options.stats)
    problems = {name: why_unavailable(name, kind, has_features, options.stats) for name in options.detectors}
    problems = {name: reason for name, reason in problems.items() if reason}
    if problems:
        raise ConfigError(f"OOD detector(s) cannot run: {problems}")
    return list(options.detectors)


def scores(ctx: EvaluationContext, options: OodOptions, detector: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``(id_scores, ood_scores)`` of ``detector``; ID scores cached in ``options.cache`` (``id/<detector>``)."""
    device = ctx.joined.outputs.device
    features = detector in NEEDS_FEATURES
    key = f"id/{detector}"
    if key not in options.cache:
        id_features = options.id_features.aligned(options.id_outputs.ids, "ID outputs").to(device) if features else None
        options.cache[key] = detector_scores(
            detector, options.id_outputs.values.to(device), options.id_outputs.kind, id_features, options.stats
        )
    ood_features = options.ood_features.aligned(ctx.joined.outputs.ids, "OOD outputs").to(device) if features else None
    ood_scores = detector_scores(
        detector, ctx.joined.outputs.values, ctx.joined.outputs.kind, ood_features, options.stats
    )
    return options.cache[key], ood_scores


OOD_DETECTION = MetricFamily(
    "ood_detection",
    ("ood_class", IN21K_OVERLAP),
    applies_to("ood_class"),
    rows_for("ood_class"),
    OodOptions,
    "OOD detection per NINCO class vs the ID set: AUROC, FPR@95 (NINCO and OpenOOD v1.5), AUPR-IN/OUT",
    "an 'ood_class' column named by protocol.ood.group_column ('in21k_overlap' read when present)",
)
OOD_DETECTION_DATASETS = MetricFamily(
    "ood_detection_datasets",
    ("source_dataset",),
    applies_to("source_dataset"),
    rows_for("source_dataset"),
    OodOptions,
    "OOD detection per (cleaned) popular OOD dataset vs the ID set",
)
OOD_DETECTION_SET = MetricFamily(
    "ood_detection_set",
    SUBSET_COLUMNS,
    applies_ungrouped,
    ungrouped_rows,
    OodOptions,
    "OOD detection of a whole OOD set (ImageNet-O, the full popular OOD sets) and its NINCO subsets vs the ID set: "
    "AUROC, FPR@95 (NINCO and OpenOOD v1.5), AUPR-IN/OUT",
    "protocol.ood true (or without group_column)",
)
OOD_UNIT_TESTS = MetricFamily(
    "ood_unit_tests",
    ("test",),
    applies_to("test"),
    rows_for("test"),
    OodOptions,
    "OOD unit tests: metrics per test and the number failed (FPR@95 > the fail threshold, 10 % by default)",
)
