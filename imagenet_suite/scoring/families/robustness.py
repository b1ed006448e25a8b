"""Robustness families of corrupted test sets: ``robustness`` (top-1) and ``robustness16`` (16-class).

Both apply to datasets with ``corruption`` and ``severity`` columns: ``robustness`` with a ``label``
column, ``robustness16`` with ``label16`` and the imagenet_16 decision mapping. The summaries go to
``artifacts["robustness"]`` / ``artifacts["robustness16"]``. Metric functions:
:mod:`imagenet_suite.scoring.metrics.robustness`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..evaluation.context import EvaluationContext
from ..evaluation.family import Applies, MetricFamily
from ..evaluation.results import MetricRow
from ..metrics import shape
from ..metrics.robustness import summarize, summary_rows


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
    return summary_rows(summary, "top1")


def robustness16_rows(ctx: EvaluationContext, options: None) -> list[MetricRow]:
    """Accuracy per corruption and severity from the 16-class decisions (variant ``accuracy16``)."""
    correct = ctx.decisions16 == ctx.categories("label16")
    summary = summarize(correct, ctx.joined.columns["corruption"], ctx.joined.columns["severity"])
    ctx.artifacts["robustness16"] = summary
    return summary_rows(summary, "accuracy16")


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
