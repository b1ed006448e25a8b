"""Families on the top-1 / top-k ranking: ``topk_accuracy``, ``per_class_accuracy``, ``real_accuracy``.

``topk_accuracy`` and ``per_class_accuracy`` apply to a ``label`` ClassLabel (1000 wnids); a
published ``protocol.class_subset`` (ImageNet-A/R) slices the scores to the subset first (variant
``class_subset``). ``real_accuracy`` applies to a ``real_labels`` column; empty label sets are
skipped. Metric functions: :mod:`imagenet_suite.scoring.metrics.classification`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..evaluation.context import EvaluationContext
from ..evaluation.family import LABEL_REQUIREMENT, MetricFamily, has_class_label
from ..evaluation.options import TopkOptions
from ..evaluation.results import MetricRow
from ..metrics import classification
from ..metrics.uncertainty import proportion


def topk_rows(ctx: EvaluationContext, options: TopkOptions) -> list[MetricRow]:
    """``top<k>_accuracy`` for every k, counted from the shared label ranks."""
    variant = "class_subset" if ctx.class_subset is not None else ""
    ranks = ctx.row_stats.label_rank
    counted = classification.topk_from_ranks(ranks, options.ks)
    for k in options.ks:
        ctx.resample(f"top{k}_accuracy", variant, "", proportion(ctx.ids, ranks < k))
    return [MetricRow.fraction(f"top{k}_accuracy", counted[k], variant) for k in options.ks]


def per_class_rows(ctx: EvaluationContext, options: None) -> list[MetricRow]:
    """``mean_per_class_accuracy`` over present classes, then ``per_class_accuracy`` per wnid."""
    hits, totals = classification.per_class_accuracy(ctx.top1_correct, ctx.labels, ctx.num_classes)
    present = totals > 0
    class_means = hits[present].double() / totals[present]
    rows = [MetricRow("mean_per_class_accuracy", float(class_means.mean()) if len(class_means) else math.nan)]
    for index, (hit, total) in enumerate(zip(hits.tolist(), totals.tolist(), strict=True)):
        if total:
            counted = classification.Fraction(hit, total)
            rows.append(MetricRow.fraction("per_class_accuracy", counted, subgroup=ctx.class_names[index]))
    return rows


def has_real_labels(features: Mapping[str, Any], protocol: Mapping[str, Any]) -> bool:
    """True when the dataset has a ``real_labels`` column."""
    return "real_labels" in features


def real_rows(ctx: EvaluationContext, options: TopkOptions) -> list[MetricRow]:
    """``real_top<k>_accuracy`` for every k (empty label sets skipped)."""
    label_sets = ctx.joined.columns["real_labels"]
    hits, evaluated = classification.real_topk_hits(ctx.scores, label_sets, options.ks, top=ctx.top_classes)
    rows = []
    for k in options.ks:
        ctx.resample(f"real_top{k}_accuracy", "", "", proportion(ctx.ids, hits[k], evaluated))
        counted = classification.Fraction(int((hits[k] & evaluated).sum()), int(evaluated.sum()))
        rows.append(MetricRow.fraction(f"real_top{k}_accuracy", counted))
    return rows


TOPK_ACCURACY = MetricFamily(
    "topk_accuracy",
    ("label",),
    has_class_label,
    topk_rows,
    TopkOptions,
    "top-k accuracy, ties to the lowest class index",
    LABEL_REQUIREMENT,
)
PER_CLASS_ACCURACY = MetricFamily(
    "per_class_accuracy",
    ("label",),
    has_class_label,
    per_class_rows,
    None,
    "top-1 accuracy of each class",
    LABEL_REQUIREMENT,
)
REAL_ACCURACY = MetricFamily(
    "real_accuracy",
    ("real_labels",),
    has_real_labels,
    real_rows,
    TopkOptions,
    "ReaL top-k, empty label sets skipped",
    "a 'real_labels' column (list of class indices)",
)
