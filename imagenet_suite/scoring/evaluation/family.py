"""What a metric family is: :class:`MetricFamily`, a small declaration the evaluator runs.

A family is data, not a registration: it is built like any object and does nothing when created
or imported. The built-in families are listed explicitly in
:data:`imagenet_suite.scoring.families.FAMILIES`; ``score(..., families=...)`` takes any sequence,
so a third-party family is added by passing ``(*FAMILIES, my_family)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .context import EvaluationContext
from .results import MetricRow

Applies = Callable[[Mapping[str, Any], Mapping[str, Any]], bool]
"""``applies(features, protocol)``: the dataset's features dict and published protocol -> bool."""

Compute = Callable[[EvaluationContext, Any], list[MetricRow]]
"""``compute(ctx, options)``: the family's rows; ``options`` is its :attr:`MetricFamily.options` instance or None."""


@dataclass(frozen=True)
class MetricFamily:
    """One selectable family of metrics.

    * ``name`` — what ``--metrics`` / ``score(metrics=...)`` select and ``report.meta["metrics"]`` lists;
    * ``columns`` — the label columns the join reads for it, those the dataset has (images are never read);
    * ``applies(features, protocol)`` — whether it applies to a dataset, decided from the dataset's
      columns and protocol only, never from user flags; must not raise;
    * ``options`` — the options type it reads from :class:`~imagenet_suite.scoring.evaluation.options.ScoreOptions`
      (None: it has no knobs);
    * ``compute(ctx, options)`` — its :class:`MetricRow` list for one evaluation, given the
      :class:`EvaluationContext` and its options instance (None when ``options`` is None);
    * ``description`` and ``requires`` (what a dataset needs, for error messages).
    """

    name: str
    columns: tuple[str, ...]
    applies: Applies
    compute: Compute
    options: type | None = None
    description: str = ""
    requires: str = ""

    @property
    def requirement(self) -> str:
        """What a dataset needs for the family to apply (``requires``, else its columns)."""
        return self.requires or f"columns {list(self.columns)}"

    def rows(self, ctx: EvaluationContext) -> list[MetricRow]:
        """Compute the family on ``ctx`` with its own options instance."""
        options = None if self.options is None else ctx.options.of(self.options)
        return self.compute(ctx, options)


def has_class_label(features: Mapping[str, Any], protocol: Mapping[str, Any]) -> bool:
    """True when the dataset's ``label`` column is a ClassLabel."""
    return (features.get("label") or {}).get("_type") == "ClassLabel"


LABEL_REQUIREMENT = "a 'label' ClassLabel column"

__all__ = ["LABEL_REQUIREMENT", "Applies", "Compute", "MetricFamily", "has_class_label"]
