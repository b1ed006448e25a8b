"""The ``mapped_topk_accuracy`` family: ObjectNet's class mapping, max over mapped logits.

Applies when ``protocol.mapping_rule == "max_over_mapped_logits"`` and the dataset has the
protocol's ``label_column``. Reports ``top<k>_accuracy`` with variant ``class_mapping:max`` for
every k of :class:`~imagenet_suite.scoring.options.TopkOptions`. Metric functions:
:mod:`imagenet_suite.scoring.protocols`.
"""

from __future__ import annotations

from ..context import EvaluationContext
from ..family import MetricFamily
from ..options import TopkOptions
from ..protocols import MAPPED_VARIANT, applies_class_mapping, mapped_topk_accuracy, mapping_in_label_order
from ..results import MetricRow


def mapped_topk_rows(ctx: EvaluationContext, options: TopkOptions) -> list[MetricRow]:
    """Top-k over the dataset's own classes, each scored by the max of its mapped columns."""
    protocol = ctx.joined.protocol
    column = protocol["label_column"]
    mapping = mapping_in_label_order(protocol, ctx.joined.features[column]["names"], ctx.scores.shape[1])
    counted = mapped_topk_accuracy(ctx.scores, ctx.joined.columns[column], mapping, options.ks)
    return [MetricRow.fraction(f"top{k}_accuracy", counted[k], MAPPED_VARIANT) for k in options.ks]


MAPPED_TOPK_ACCURACY = MetricFamily(
    "mapped_topk_accuracy",
    ("objectnet_label",),
    applies_class_mapping,
    mapped_topk_rows,
    TopkOptions,
    "top-k over the dataset's own classes, each scored by the max of its mapped ImageNet logits (ObjectNet)",
    "protocol mapping_rule='max_over_mapped_logits' and its label_column",
)
