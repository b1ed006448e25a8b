"""Family ``multilabel_accuracy``: expert multi-labels of Shankar et al. (2020) and ImageNet-M.

Applies to a dataset with a ``correct_labels`` list-of-ClassLabel column, ``unclear_labels``,
``is_problematic`` and the original ``label`` (``imagenet_multilabel``). On the ``imagenet_m``
split it reports the number of mistakes (``imagenet_m_mistakes``); on any other split the
class-averaged and pooled ``multilabel_accuracy`` with problematic rows excluded. Both variants,
``lenient`` (correct ∪ unclear, the default) and ``strict`` (correct only), are always reported, so
the family has no options. The prediction is the shared tie-safe top-1 (ties to the lowest class
index). Results also go to ``artifacts["multilabel_accuracy"]``. Metric functions:
:mod:`imagenet_suite.scoring.metrics.multilabel_accuracy`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from ..evaluation.context import EvaluationContext
from ..evaluation.family import MetricFamily, has_class_label
from ..evaluation.results import MetricRow
from ..metrics.multilabel import is_label_set_feature
from ..metrics.multilabel_accuracy import VARIANTS, imagenet_m_mistakes, imagenet_m_rows, in_sets, multilabel_accuracy
from ..metrics.uncertainty import group_means, proportion, total

IMAGENET_M_SPLIT = "imagenet_m"
COLUMNS = ("label", "correct_labels", "unclear_labels", "is_problematic")


def has_expert_labels(features: Mapping[str, Any], protocol: Mapping[str, Any]) -> bool:
    """True for ``correct_labels``/``unclear_labels`` lists of ClassLabel, ``is_problematic`` and a ``label``."""
    return (
        is_label_set_feature(features.get("correct_labels"))
        and is_label_set_feature(features.get("unclear_labels"))
        and "is_problematic" in features
        and has_class_label(features, protocol)
    )


def multilabel_accuracy_rows(ctx: EvaluationContext, options: None) -> list[MetricRow]:
    """ImageNet-M mistakes on the ``imagenet_m`` split, else class-averaged + pooled multi-label accuracy."""
    columns = ctx.joined.columns
    top1 = ctx.top_classes[:, 0]
    hits = {
        "lenient": in_sets(top1, columns["correct_labels"], columns["unclear_labels"]),
        "strict": in_sets(top1, columns["correct_labels"]),
    }
    if ctx.joined.split == IMAGENET_M_SPLIT:
        mistakes = imagenet_m_mistakes(top1, columns["correct_labels"], columns["unclear_labels"])
        ctx.artifacts["multilabel_accuracy"] = mistakes
        for variant in VARIANTS:
            ctx.resample("imagenet_m_mistakes", variant, "", total(ctx.ids, (~hits[variant]).double()))
        return imagenet_m_rows(mistakes)
    problematic = torch.as_tensor(columns["is_problematic"], dtype=torch.bool, device=top1.device)
    for variant in VARIANTS:
        kept = ~problematic
        ctx.resample("multilabel_accuracy", variant, "", group_means(ctx.ids, hits[variant].double(), ctx.labels, kept))
        ctx.resample("multilabel_accuracy_pooled", variant, "", proportion(ctx.ids, hits[variant], kept))
    result = multilabel_accuracy(
        top1, columns["correct_labels"], columns["unclear_labels"], ctx.labels, problematic, ctx.num_classes
    )
    ctx.artifacts["multilabel_accuracy"] = result
    return result.rows()


MULTILABEL_ACCURACY = MetricFamily(
    "multilabel_accuracy",
    COLUMNS,
    has_expert_labels,
    multilabel_accuracy_rows,
    None,
    "Shankar et al. multi-label top-1 (lenient, strict), per-class averaged, problematic images out; "
    "ImageNet-M mistakes",
    "'correct_labels' and 'unclear_labels' (lists of ClassLabel), 'is_problematic' and 'label'",
)
