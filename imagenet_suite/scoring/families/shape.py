"""16-class families of model-vs-human sets: ``shape_bias`` (cue conflict) and ``accuracy16``.

Both apply when ``protocol.decision_mapping == "imagenet_16"`` and the dataset has their columns.
Per-category shape bias goes to ``artifacts["shape_bias_per_category"]`` (plotted by
:func:`imagenet_suite.scoring.presentation.plots.shape_bias_per_category_plot`). Metric functions:
:mod:`imagenet_suite.scoring.metrics.shape`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..evaluation.context import EvaluationContext
from ..evaluation.family import Applies, MetricFamily
from ..evaluation.results import MetricRow
from ..metrics import shape
from ..metrics.uncertainty import proportion, ratio


def imagenet16_with(*columns: str) -> Applies:
    """``applies`` for a dataset with the imagenet_16 decision mapping and all of ``columns``."""

    def applies(features: Mapping[str, Any], protocol: Mapping[str, Any]) -> bool:
        return protocol.get("decision_mapping") == shape.IMAGENET_16_MAPPING and all(c in features for c in columns)

    return applies


def shape_bias_rows(ctx: EvaluationContext, options: None) -> list[MetricRow]:
    """Pooled ``shape_bias``, then one row per shape category that has cue-conflict images."""
    shapes, textures = ctx.categories("shape_label16"), ctx.categories("texture_label16")
    pooled = shape.shape_bias(ctx.decisions16, shapes, textures)
    per_category = shape.shape_bias_per_category(ctx.decisions16, shapes, textures)
    ctx.artifacts["shape_bias_per_category"] = per_category
    conflict = shapes != textures
    shape_hits = (ctx.decisions16 == shapes) & conflict
    cue_hits = shape_hits | ((ctx.decisions16 == textures) & conflict)
    ctx.resample("shape_bias", "pooled", "", ratio(ctx.ids, shape_hits.double(), cue_hits.double()))
    rows = [_shape_bias_row(pooled, "")]
    rows += [_shape_bias_row(result, category) for category, result in per_category.items() if result.conflict_images]
    return rows


def _shape_bias_row(result: shape.ShapeBias, subgroup: str) -> MetricRow:
    hits = result.shape_hits + result.texture_hits
    return MetricRow("shape_bias", result.value, "pooled", subgroup, result.shape_hits, hits)


def accuracy16_rows(ctx: EvaluationContext, options: None) -> list[MetricRow]:
    """``accuracy16``: the 16-class decision equals ``label16``."""
    labels16 = ctx.categories("label16")
    ctx.resample("accuracy16", "", "", proportion(ctx.ids, ctx.decisions16 == labels16))
    return [MetricRow.fraction("accuracy16", shape.accuracy16(ctx.decisions16, labels16))]


SHAPE_BIAS = MetricFamily(
    "shape_bias",
    ("shape_label16", "texture_label16"),
    imagenet16_with("shape_label16", "texture_label16"),
    shape_bias_rows,
    None,
    "cue-conflict shape bias, pooled and per shape category",
    "protocol decision_mapping='imagenet_16' and columns 'shape_label16', 'texture_label16'",
)
ACCURACY16 = MetricFamily(
    "accuracy16",
    ("label16",),
    imagenet16_with("label16"),
    accuracy16_rows,
    None,
    "16-class accuracy",
    "protocol decision_mapping='imagenet_16' and a 'label16' column",
)
