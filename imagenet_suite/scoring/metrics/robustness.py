"""Robustness summaries of corrupted test sets (``perturbations`` builds, or any dataset with
``corruption`` and ``severity`` columns).

From per-row correctness (top-1 against ``label``, or the 16-class decision against ``label16``):

* ``corruption_accuracy`` per ``<corruption>/<severity>`` (counted fraction) and per ``<corruption>``
  (mean over its severities);
* ``mean_corruption_accuracy``: mean over corruptions of their mean over severities — Beyond Accuracy's
  A_corr ("mean over severities, then over corruptions"; with equal split sizes the flat mean of
  the 75 ImageNet-C accuracies);
* ``pooled_corruption_accuracy``: all corrupted rows pooled (Heuillet et al. 2025's a(common) for its
  one-corruption-per-image portfolio);
* with ``clean`` rows (``corruption == "clean"``): ``clean_accuracy``, ``c_robustness`` =
  A_corr / A_clean (Hesse et al. 2025, Eq. 6, not mCE: no AlexNet normalisation) and ``relative_corruption_accuracy``
  per corruption (its mean accuracy / clean accuracy).

The evaluator's families ``robustness`` and ``robustness16`` are wired in
:mod:`imagenet_suite.scoring.families.robustness`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..evaluation.results import MetricRow
from .classification import Fraction

CLEAN = "clean"


@dataclass(frozen=True)
class RobustnessSummary:
    """Accuracies of one corrupted test set; ``clean`` is None without clean rows."""

    per_split: dict[tuple[str, int], Fraction]  # (corruption, severity) -> correct / rows
    clean: Fraction | None

    @property
    def per_corruption(self) -> dict[str, float]:
        """Mean accuracy over the severities of each corruption."""
        grouped: dict[str, list[float]] = {}
        for (corruption, _), fraction in sorted(self.per_split.items()):
            grouped.setdefault(corruption, []).append(fraction.value)
        return {name: sum(values) / len(values) for name, values in grouped.items()}

    @property
    def mean_corruption_accuracy(self) -> float:
        values = list(self.per_corruption.values())
        return sum(values) / len(values) if values else math.nan

    @property
    def pooled(self) -> Fraction:
        return Fraction(
            sum(f.numerator for f in self.per_split.values()), sum(f.denominator for f in self.per_split.values())
        )

    @property
    def c_robustness(self) -> float:
        """A_corr / A_clean (NaN without clean rows or with zero clean accuracy)."""
        if self.clean is None or not self.clean.value:
            return math.nan
        return self.mean_corruption_accuracy / self.clean.value


def summarize(
    correct: torch.Tensor, corruptions: Sequence[str], severities: torch.Tensor | Sequence[int]
) -> RobustnessSummary:
    """Summary of per-row ``correct`` flags with each row's corruption name and severity."""
    flags = correct.to("cpu", torch.bool).tolist()
    levels = severities.tolist() if isinstance(severities, torch.Tensor) else list(severities)
    if not len(flags) == len(corruptions) == len(levels):
        raise ValueError(
            f"{len(flags)} correctness flags, {len(corruptions)} corruptions and {len(levels)} severities: "
            "one of each per row is required"
        )
    counts: dict[tuple[str, int], list[int]] = {}
    for hit, corruption, severity in zip(flags, corruptions, levels, strict=True):
        tally = counts.setdefault((corruption, int(severity)), [0, 0])
        tally[0] += hit
        tally[1] += 1
    clean = [Fraction(*v) for (name, _), v in counts.items() if name == CLEAN]
    per_split = {key: Fraction(*v) for key, v in counts.items() if key[0] != CLEAN}
    pooled_clean = Fraction(sum(f.numerator for f in clean), sum(f.denominator for f in clean)) if clean else None
    return RobustnessSummary(per_split, pooled_clean)


def summary_rows(summary: RobustnessSummary, variant: str) -> list[MetricRow]:
    """The tidy rows of a summary (overall rows first, then per corruption and per split)."""
    rows = [
        MetricRow("mean_corruption_accuracy", summary.mean_corruption_accuracy, variant),
        MetricRow.fraction("pooled_corruption_accuracy", summary.pooled, variant),
    ]
    if summary.clean is not None:
        rows += [
            MetricRow.fraction("clean_accuracy", summary.clean, variant),
            MetricRow("c_robustness", summary.c_robustness, variant),
        ]
    for name, value in summary.per_corruption.items():
        rows.append(MetricRow("corruption_accuracy", value, variant, name))
        if summary.clean is not None and summary.clean.value:
            rows.append(MetricRow("relative_corruption_accuracy", value / summary.clean.value, variant, name))
    for (name, severity), fraction in sorted(summary.per_split.items()):
        rows.append(MetricRow.fraction("corruption_accuracy", fraction, variant, f"{name}/{severity}"))
    return rows


__all__ = ["RobustnessSummary", "summarize", "summary_rows"]
