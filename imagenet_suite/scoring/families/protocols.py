"""The ``mapped_topk_accuracy`` family: accuracy through a published class mapping (ObjectNet, IN-9).

Applies when ``protocol.mapping_rule`` is one of
:data:`~imagenet_suite.scoring.metrics.protocols.MAPPING_RULES` and the dataset has the protocol's
``label_column``. What it reports depends on the rule:

* ``"max_over_mapped_logits"`` (ObjectNet): ``top<k>_accuracy`` with variant ``class_mapping:max``
  for every k of :class:`~imagenet_suite.scoring.evaluation.options.TopkOptions` (each mapped class scored by
  the max of its mapped logits);
* ``"argmax_then_map"`` (IN-9 of the Backgrounds Challenge): ``top1_accuracy`` only, with variant
  ``class_mapping:argmax`` (the 1000-way top-1 class, ties to the lowest index, mapped to its
  dataset class; an unmapped top-1 class counts as wrong). Top-k for k > 1 is not defined for this
  rule — it gives one class per row, not a ranking — so the other ks are not reported.

Metric functions: :mod:`imagenet_suite.scoring.metrics.protocols`.
"""

from __future__ import annotations

from ..evaluation.context import EvaluationContext
from ..evaluation.family import MetricFamily
from ..evaluation.options import TopkOptions
from ..evaluation.results import MetricRow
from ..metrics.classification import Fraction, topk_from_ranks
from ..metrics.protocols import (
    ARGMAX_MAPPED_VARIANT,
    ARGMAX_THEN_MAP,
    MAPPED_VARIANT,
    applies_class_mapping,
    argmax_mapped_hits,
    mapped_label_ranks,
    mapping_in_label_order,
)
from ..metrics.uncertainty import proportion


def mapped_topk_rows(ctx: EvaluationContext, options: TopkOptions) -> list[MetricRow]:
    """Accuracy over the dataset's own classes, by the protocol's mapping rule (see the module docstring)."""
    protocol = ctx.joined.protocol
    column = protocol["label_column"]
    mapping = mapping_in_label_order(protocol, ctx.joined.features[column]["names"], ctx.scores.shape[1])
    labels = ctx.joined.columns[column]
    if protocol["mapping_rule"] == ARGMAX_THEN_MAP:
        hits = argmax_mapped_hits(ctx.scores, labels, mapping, top1=ctx.top_classes[:, 0])
        ctx.resample("top1_accuracy", ARGMAX_MAPPED_VARIANT, "", proportion(ctx.ids, hits))
        return [
            MetricRow.fraction("top1_accuracy", Fraction(int(hits.sum()), int(hits.numel())), ARGMAX_MAPPED_VARIANT)
        ]
    ranks = mapped_label_ranks(ctx.scores, labels, mapping, max(options.ks))
    counted = topk_from_ranks(ranks, options.ks)
    for k in options.ks:
        ctx.resample(f"top{k}_accuracy", MAPPED_VARIANT, "", proportion(ctx.ids, ranks < k))
    return [MetricRow.fraction(f"top{k}_accuracy", counted[k], MAPPED_VARIANT) for k in options.ks]


MAPPED_TOPK_ACCURACY = MetricFamily(
    "mapped_topk_accuracy",
    ("objectnet_label", "label9"),
    applies_class_mapping,
    mapped_topk_rows,
    TopkOptions,
    "accuracy over the dataset's own classes through its published class mapping: top-k by the max of each "
    "class's mapped ImageNet logits (ObjectNet), or top-1 by the mapped 1000-way argmax (IN-9)",
    "protocol mapping_rule 'max_over_mapped_logits' or 'argmax_then_map' and its label_column",
)
