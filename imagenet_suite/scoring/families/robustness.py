"""Robustness families of corrupted test sets: ``robustness`` (top-1) and ``robustness16`` (16-class).

Both apply to datasets with ``corruption`` and ``severity`` columns: ``robustness`` with a ``label``
column, ``robustness16`` with ``label16`` and the imagenet_16 decision mapping. The summaries go to
``artifacts["robustness"]`` / ``artifacts["robustness16"]``. Metric functions:
:mod:`imagenet_suite.scoring.metrics.robustness`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from ..evaluation.context import EvaluationContext
from ..evaluation.family import Applies, MetricFamily
from ..evaluation.results import MetricRow
from ..metrics import shape
from ..metrics.robustness import CLEAN, summarize, summary_rows
from ..metrics.uncertainty import GroupSums, proportion


def applies_with(label: str) -> Applies:
    """``applies`` for corruption + severity columns and ``label`` (``label16`` needs imagenet_16)."""

    def applies(features: Mapping[str, Any], protocol: Mapping[str, Any]) -> bool:
        if "corruption" not in features or "severity" not in features or label not in features:
            return False
        return label == "label" or protocol.get("decision_mapping") == shape.IMAGENET_16_MAPPING

    return applies


def robustness_rows(ctx: EvaluationContext, options: None) -> list[MetricRow]:
    """Accuracy per corruption and severity from top-1 correctness (variant ``top1``)."""
    summary = summarize(ctx.top1_correct, ctx.joined.columns["corruption"], ctx.joined.columns["severity"])
    ctx.artifacts["robustness"] = summary
    resample_robustness(ctx, ctx.top1_correct, "top1")
    return summary_rows(summary, "top1")


def robustness16_rows(ctx: EvaluationContext, options: None) -> list[MetricRow]:
    """Accuracy per corruption and severity from the 16-class decisions (variant ``accuracy16``)."""
    correct = ctx.decisions16 == ctx.categories("label16")
    summary = summarize(correct, ctx.joined.columns["corruption"], ctx.joined.columns["severity"])
    ctx.artifacts["robustness16"] = summary
    resample_robustness(ctx, correct, "accuracy16")
    return summary_rows(summary, "accuracy16")


def resample_robustness(ctx: EvaluationContext, correct: torch.Tensor, variant: str) -> None:
    """Record the rows the suite summary reads (mean corruption accuracy, clean accuracy, accuracy per
    ``<corruption>/<severity>``) as numbers of the bootstrap: shares of the corrupted splits' rows."""
    corruptions = list(ctx.joined.columns["corruption"])
    severities = [int(level) for level in torch.as_tensor(ctx.joined.columns["severity"]).tolist()]
    splits = sorted({(name, level) for name, level in zip(corruptions, severities, strict=True) if name != CLEAN})
    index = {split: position for position, split in enumerate(splits)}
    clean = torch.tensor([name == CLEAN for name in corruptions], device=correct.device)
    group = [index.get((name, level), 0) for name, level in zip(corruptions, severities, strict=True)]
    sums = GroupSums(ctx.ids, correct.double(), torch.tensor(group, device=correct.device), ~clean)
    names = sorted({name for name, _ in splits})
    parents = torch.tensor([names.index(name) for name, _ in splits], dtype=torch.long)
    if splits:
        ctx.resample("mean_corruption_accuracy", variant, "", sums.mean_of_means(parents))
    for (name, level), position in index.items():
        ctx.resample("corruption_accuracy", variant, f"{name}/{level}", sums.share(position))
    if bool(clean.any()):
        ctx.resample("clean_accuracy", variant, "", proportion(ctx.ids, correct, clean))


ROBUSTNESS = MetricFamily(
    "robustness",
    ("corruption", "severity", "label"),
    applies_with("label"),
    robustness_rows,
    None,
    "accuracy per corruption and severity, mean, pooled, C-robustness vs clean rows",
)
ROBUSTNESS16 = MetricFamily(
    "robustness16",
    ("corruption", "severity", "label16"),
    applies_with("label16"),
    robustness16_rows,
    None,
    "16-class accuracy per corruption and severity (model-vs-human sets), C-robustness",
)
