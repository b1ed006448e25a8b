"""The ``class_balance`` family: QUBA class balance and its accuracy and confidence parts.

Applies to a ``label`` ClassLabel (class subset applied first); one set of rows per configured
convention. Metric function: :func:`imagenet_suite.scoring.metrics.class_balance.class_balance`.
"""

from __future__ import annotations

from ..evaluation.context import EvaluationContext
from ..evaluation.family import LABEL_REQUIREMENT, MetricFamily, has_class_label
from ..evaluation.options import ClassBalanceOptions
from ..evaluation.results import MetricRow
from ..metrics.class_balance import class_balance, class_balance_replicates
from ..metrics.uncertainty import resampled


def class_balance_rows(ctx: EvaluationContext, options: ClassBalanceOptions) -> list[MetricRow]:
    """``class_balance``, ``class_balance_accuracy``, ``class_balance_confidence`` per convention."""
    rows = []
    correct, probability, labels, classes = (
        ctx.top1_correct,
        ctx.row_stats.target_probability,
        ctx.labels,
        ctx.num_classes,
    )
    for convention in options.conventions:
        balance = class_balance(correct, probability, labels, classes, convention)
        ctx.resample(
            "class_balance",
            convention,
            "",
            resampled(
                [ctx.ids],
                lambda counts, convention=convention: class_balance_replicates(
                    correct, probability, labels, classes, counts[0], convention
                ),
            ),
        )
        rows += [
            MetricRow("class_balance", balance.value, convention),
            MetricRow("class_balance_accuracy", balance.accuracy_balance, convention),
            MetricRow("class_balance_confidence", balance.confidence_balance, convention),
        ]
    return rows


CLASS_BALANCE = MetricFamily(
    "class_balance",
    ("label",),
    has_class_label,
    class_balance_rows,
    ClassBalanceOptions,
    "QUBA class balance, both conventions",
    LABEL_REQUIREMENT,
)
