"""The evaluation context: one joined split, the options, and intermediates shared by families.

A family's ``compute`` reads everything through an :class:`EvaluationContext`. Intermediates that
several families need (one pass over the rows for ranks and confidences, the 16-class decisions,
the class-subset view of the labels) are computed on first use and cached, so each is computed at
most once per evaluation. Families put non-tabular results that plots read into ``artifacts``, and
each number that a bootstrap over the images can recompute under ``artifacts[RESAMPLED]``
(:meth:`EvaluationContext.resample`).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import torch

from ..join import JoinedSplit
from ..metrics import classification, shape
from ..metrics.row_statistics import RowStatistics, row_statistics
from ..metrics.uncertainty import Resampled
from .options import ScoreOptions, TopkOptions

RESAMPLED = "resampled"
"""``artifacts[RESAMPLED]``: ``{(metric, variant, subgroup): Resampled}``, the report's rows that a bootstrap
over the images can recompute (:class:`~imagenet_suite.scoring.metrics.uncertainty.Resampled`)."""


class EvaluationContext:
    """One joined split plus lazily computed intermediates shared by metric families."""

    def __init__(self, joined: JoinedSplit, options: ScoreOptions):
        self.joined = joined
        self.options = options
        self.artifacts: dict[str, Any] = {}  # non-tabular results for plots (bins, per-category data)

    @property
    def ids(self) -> tuple[str, ...]:
        """The ``id`` of every row, in row order."""
        return self.joined.outputs.ids

    def resample(self, metric: str, variant: str, subgroup: str, estimate: Resampled) -> None:
        """Record how the row ``(metric, variant, subgroup)`` is recomputed on bootstrap resamples."""
        self.artifacts.setdefault(RESAMPLED, {})[(metric, variant, subgroup)] = estimate

    @property
    def scores(self) -> torch.Tensor:
        """The ``[N, C]`` outputs tensor (never copied)."""
        return self.joined.outputs.values

    @property
    def kind(self) -> str:
        """``logits``, ``probs`` or ``log_probs``."""
        return self.joined.outputs.kind

    @property
    def max_rank(self) -> int:
        """How many ranks the shared row statistics keep: the largest requested top-k."""
        return max(self.options.of(TopkOptions).ks)

    @cached_property
    def class_subset(self) -> torch.Tensor | None:
        """Column indices of ``protocol.class_subset`` (ImageNet-A/R) on the scores' device, or None."""
        subset = self.joined.protocol.get("class_subset")
        if subset is None:
            return None
        return classification.subset_columns(subset, self.scores.shape[1], self.scores.device)

    @cached_property
    def labels(self) -> torch.Tensor:
        """``label`` in the evaluated column space (subset positions when a class subset applies)."""
        labels = self.joined.columns["label"]
        if self.class_subset is None:
            return labels
        return classification.labels_in_subset(labels, self.class_subset, self.scores.shape[1])

    @cached_property
    def num_classes(self) -> int:
        """Number of evaluated classes (the subset's size when a class subset applies)."""
        return self.scores.shape[1] if self.class_subset is None else len(self.class_subset)

    @cached_property
    def class_names(self) -> list[str]:
        """Names of the evaluated classes (wnids of the ClassLabel, sliced to the subset)."""
        names = self.joined.features.get("label", {}).get("names") or [str(i) for i in range(self.scores.shape[1])]
        return names if self.class_subset is None else [names[i] for i in self.class_subset.tolist()]

    @cached_property
    def row_stats(self) -> RowStatistics:
        """One pass over the rows: label rank, confidence, target probability, top classes."""
        return row_statistics(self.scores, self.kind, self.labels, self.max_rank, self.class_subset)

    @cached_property
    def top_classes(self) -> torch.Tensor:
        """Ordered top-k classes in the full column space (shared with row_stats when possible)."""
        if "label" in self.joined.columns and self.class_subset is None:
            return self.row_stats.top_classes
        return classification.top_classes(self.scores, self.max_rank)

    @cached_property
    def top1_correct(self) -> torch.Tensor:
        """``[N]`` bool: the label is the top-1 class (ties to the lowest class index)."""
        return self.row_stats.label_rank == 0

    @cached_property
    def decisions16(self) -> torch.Tensor:
        """``[N]`` 16-class decisions (model-vs-human mapping)."""
        return shape.decisions16(self.scores, self.kind)

    def categories(self, column: str) -> torch.Tensor:
        """A 16-class column as int64 indices in sorted category order, on the scores' device."""
        values = self.joined.columns[column]
        names = (self.joined.features.get(column) or {}).get("names")
        if isinstance(values, list):
            return shape.category_index(values).to(self.scores.device)
        if names is not None and tuple(names) != shape.CATEGORIES16:
            return shape.category_index([names[i] for i in values.tolist()]).to(self.scores.device)
        return values


__all__ = ["RESAMPLED", "EvaluationContext"]
