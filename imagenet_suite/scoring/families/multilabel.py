"""Multi-label families of Anzaku et al. 2024: ``multilabel`` (PatchML ``labels``) and ``multilabel_real`` (ReaL sets).

``multilabel`` applies to a ``labels`` column that is a list of ClassLabel; ``multilabel_real`` to a
``real_labels`` list-of-ClassLabel column when the protocol publishes ``label_count_subgroups``
(e.g. ``[1, 2, 3, 4, 5]`` for ReaL V1). ASMA's subgroups come from the protocol (default 1–5).
Results go to ``artifacts["multilabel/<column>"]``. Metric functions:
:mod:`imagenet_suite.scoring.metrics.multilabel`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from ..evaluation.context import EvaluationContext
from ..evaluation.family import Compute, MetricFamily
from ..evaluation.results import MetricRow
from ..metrics.multilabel import VARIANTS, is_label_set_feature, multilabel_scores, subgroups_of
from ..metrics.uncertainty import group_means, proportion


def applies_to_labels(features: Mapping[str, Any], protocol: Mapping[str, Any]) -> bool:
    """True for a ``labels`` list-of-ClassLabel column (PatchML)."""
    return is_label_set_feature(features.get("labels"))


def applies_to_real_labels(features: Mapping[str, Any], protocol: Mapping[str, Any]) -> bool:
    """True for a ``real_labels`` list-of-ClassLabel column with published ``label_count_subgroups``."""
    return is_label_set_feature(features.get("real_labels")) and bool(protocol.get("label_count_subgroups"))


def rows_for(column: str) -> Compute:
    """``compute`` of the multi-label metrics on the label sets of ``column``."""

    def compute(ctx: EvaluationContext, options: None) -> list[MetricRow]:
        groups = subgroups_of(ctx.joined.protocol)
        result = multilabel_scores(ctx.scores, ctx.joined.columns[column], groups)
        ctx.artifacts[f"multilabel/{column}"] = result
        sizes = result.sizes
        in_groups = torch.isin(sizes, torch.tensor(groups, device=sizes.device))
        for variant in VARIANTS:
            ctx.resample("asma", variant, "", group_means(ctx.ids, result.per_sample[variant], sizes, in_groups))
        ctx.resample("multilabel_real_accuracy", "all", "", proportion(ctx.ids, result.top1_in_set, sizes > 0))
        return result.rows()

    return compute


MULTILABEL = MetricFamily(
    "multilabel",
    ("labels",),
    applies_to_labels,
    rows_for("labels"),
    None,
    "variable top-k: ASMA (exact, jaccard, recall, hamming), subgroup accuracy, ReaL accuracy",
)
MULTILABEL_REAL = MetricFamily(
    "multilabel_real",
    ("real_labels",),
    applies_to_real_labels,
    rows_for("real_labels"),
    None,
    "variable top-k on ReaL label sets: ASMA, subgroup accuracy (protocol label_count_subgroups)",
)
