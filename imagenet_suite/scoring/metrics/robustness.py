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
from ..report_names import CLEAN
from .classification import Fraction


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
    """Summary of per-row ``correct`` flags with each row's corruption name and severity.

    Example:
        Four clean rows (3 right), fog at severities 1 (1 of 2 right) and 2 (none of 2), blur at
        severity 1 (2 of 2): fog's mean over its severities is 0.25, blur's 1.0, so A_corr = 0.625
        and A_corr / A_clean = 0.625 / 0.75:

        >>> import torch
        >>> correct = torch.tensor([1, 1, 1, 0, 0, 1, 0, 0, 1, 1], dtype=torch.bool)
        >>> corruptions = ["clean"] * 4 + ["fog"] * 4 + ["blur"] * 2
        >>> severities = [0, 0, 0, 0, 1, 1, 2, 2, 1, 1]
        >>> summary = summarize(correct, corruptions, severities)
        >>> summary.per_corruption
        {'blur': 1.0, 'fog': 0.25}
        >>> summary.mean_corruption_accuracy, summary.pooled, summary.clean
        (0.625, Fraction(numerator=3, denominator=6), Fraction(numerator=3, denominator=4))
        >>> summary.c_robustness
        0.8333333333333334
    """
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
    """The tidy rows of a summary (overall rows first, then per corruption and per split).

    Example:
        >>> import torch
        >>> summary = summarize(torch.tensor([True, False, True, True]), ["clean", "clean", "fog", "fog"], [0, 0, 3, 3])
        >>> [(row.metric, row.subgroup, row.value) for row in summary_rows(summary, "top1")]
        [('mean_corruption_accuracy', '', 1.0), ('pooled_corruption_accuracy', '', 1.0),
         ('clean_accuracy', '', 0.5), ('c_robustness', '', 2.0), ('corruption_accuracy', 'fog', 1.0),
         ('relative_corruption_accuracy', 'fog', 2.0), ('corruption_accuracy', 'fog/3', 1.0)]
    """
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
