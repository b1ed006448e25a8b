"""Multi-label accuracy of Shankar et al. (2020) on expert-reviewed label sets, and ImageNet-M mistakes.

Scored the way the authors score it (the ``imagenet2012_multilabel`` TFDS page and the
google-research/imagenet-mistakes notebook):

* the prediction is the **top-1** class, ties broken by the lowest class index
  (:func:`~imagenet_suite.scoring.metrics.classification.top_classes`, never a plain argmax);
* it is correct when it is in ``correct ∪ unclear`` (variant ``lenient``, the authors'
  recommendation and the default) or in ``correct`` only (``strict``);
* **problematic images are excluded** (``is_problematic``; the rows stay in the dataset, the exclusion
  happens here);
* ``multilabel_accuracy`` is computed **per original class and averaged over classes** — the
  annotated set is class-balanced, the problematic set is not — over the original classes that keep
  at least one non-problematic row (all 1000 on the real data). The pooled value (correct rows over
  non-problematic rows) is reported beside it.
* **ImageNet-M** (Vasudevan et al. 2022): the number of mistakes among its 68 images, every row
  counted (no exclusion), ``lenient`` being the paper's number (``strict`` reported too).

Inputs follow the scoring core: ``top1`` is ``[N]`` int64, label sets are ``[N, L]`` int64 padded with
-1 (the :class:`~imagenet_suite.scoring.join.JoinedSplit` layout), ``labels`` ``[N]`` int64 original
classes, ``problematic`` ``[N]`` bool. Counts are int64; everything stays on the inputs' device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ...errors import OutputsError
from ..evaluation.results import MetricRow
from .classification import Fraction, per_class_accuracy

VARIANTS = ("lenient", "strict")
DEFAULT_VARIANT = "lenient"


def in_sets(top1: torch.Tensor, *label_sets: torch.Tensor) -> torch.Tensor:
    """``[N]`` bool: ``top1[i]`` is in the union of the rows' padded label sets (-1 never matches).

    Example:
        >>> import torch
        >>> top1 = torch.tensor([0, 1, 2, 2])
        >>> correct = torch.tensor([[0], [0], [1], [2]])
        >>> unclear = torch.tensor([[-1], [1], [-1], [-1]])
        >>> in_sets(top1, correct, unclear), in_sets(top1, correct)
        (tensor([ True,  True, False,  True]), tensor([ True, False, False,  True]))
    """
    hit = torch.zeros(top1.shape[0], dtype=torch.bool, device=top1.device)
    for sets in label_sets:
        if sets.ndim != 2 or sets.shape[0] != top1.shape[0]:
            raise OutputsError(
                f"label sets must be [N, L] with N={top1.shape[0]} rows, padded with -1; got {tuple(sets.shape)}"
            )
        hit |= (sets.to(top1.device) == top1[:, None]).any(dim=1)
    return hit


@dataclass(frozen=True)
class ClassAveraged:
    """Per-class accuracies of one variant: ``hits``/``totals`` per original class (non-problematic rows)."""

    hits: torch.Tensor  # [C] int64
    totals: torch.Tensor  # [C] int64

    @property
    def num_classes(self) -> int:
        """Classes averaged over: those with at least one non-problematic row."""
        return int((self.totals > 0).sum())

    @property
    def value(self) -> float:
        """Mean over the classes with rows of (hits / rows); NaN when no class has a row."""
        present = self.totals > 0
        if not bool(present.any()):
            return math.nan
        return float((self.hits[present].double() / self.totals[present].double()).mean())

    @property
    def pooled(self) -> Fraction:
        return Fraction(int(self.hits.sum()), int(self.totals.sum()))


@dataclass(frozen=True)
class MultilabelAccuracy:
    """``multilabel_accuracy`` of both variants on one split, plus the number of excluded rows."""

    variants: dict[str, ClassAveraged]
    problematic: Fraction  # problematic rows / rows

    def rows(self) -> list[MetricRow]:
        """``multilabel_accuracy`` (class-averaged; lenient first, so ``report.value`` gives the default),
        ``multilabel_accuracy_pooled`` (fractions over non-problematic rows), ``multilabel_problematic``."""
        rows = [MetricRow("multilabel_accuracy", self.variants[v].value, v) for v in VARIANTS]
        rows += [MetricRow.fraction("multilabel_accuracy_pooled", self.variants[v].pooled, v) for v in VARIANTS]
        rows.append(MetricRow.fraction("multilabel_problematic", self.problematic))
        return rows


def multilabel_accuracy(
    top1: torch.Tensor,
    correct: torch.Tensor,
    unclear: torch.Tensor,
    labels: torch.Tensor,
    problematic: torch.Tensor,
    num_classes: int,
) -> MultilabelAccuracy:
    """Class-averaged and pooled multi-label top-1 accuracy (``lenient`` and ``strict``), problematic rows out.

    Classes are the original labels (``labels``); the average runs over the classes with at least
    one non-problematic row, so a class whose only images are problematic does not count.

    Example:
        Rows 0 and 1 (class 0) predict a correct and an unclear class, row 2 (class 1) is wrong,
        row 3 (class 2) is problematic and left out, and with it class 2. Lenient: class 0 scores
        2/2, class 1 0/1, mean 0.5; strict: 1/2 and 0/1, mean 0.25:

        >>> import torch
        >>> top1 = torch.tensor([0, 1, 2, 2])
        >>> correct = torch.tensor([[0], [0], [1], [2]])
        >>> unclear = torch.tensor([[-1], [1], [-1], [-1]])
        >>> labels = torch.tensor([0, 0, 1, 2])
        >>> problematic = torch.tensor([False, False, False, True])
        >>> result = multilabel_accuracy(top1, correct, unclear, labels, problematic, num_classes=3)
        >>> result.variants["lenient"].value, result.variants["strict"].value
        (0.5, 0.25)
        >>> result.variants["lenient"].num_classes, result.variants["lenient"].pooled
        (2, Fraction(numerator=2, denominator=3))
        >>> result.problematic
        Fraction(numerator=1, denominator=4)
    """
    _check_rows(top1, labels, problematic, num_classes)
    kept = ~problematic.to(top1.device)
    labels = labels.to(top1.device)
    hits = {"lenient": in_sets(top1, correct, unclear), "strict": in_sets(top1, correct)}
    variants = {}
    for variant in VARIANTS:
        counted, totals = per_class_accuracy(hits[variant][kept], labels[kept], num_classes)
        variants[variant] = ClassAveraged(counted, totals)
    return MultilabelAccuracy(variants, Fraction(int(problematic.sum()), int(problematic.numel())))


def imagenet_m_mistakes(top1: torch.Tensor, correct: torch.Tensor, unclear: torch.Tensor) -> dict[str, Fraction]:
    """ImageNet-M: ``{variant: Fraction(mistakes, rows)}`` over every row (no exclusion).

    Example:
        The rows of :func:`multilabel_accuracy`'s example: row 2 is a mistake either way, row 1
        (an unclear class) only by the strict rule:

        >>> import torch
        >>> top1 = torch.tensor([0, 1, 2, 2])
        >>> correct = torch.tensor([[0], [0], [1], [2]])
        >>> unclear = torch.tensor([[-1], [1], [-1], [-1]])
        >>> imagenet_m_mistakes(top1, correct, unclear)
        {'lenient': Fraction(numerator=1, denominator=4), 'strict': Fraction(numerator=2, denominator=4)}
    """
    hits = {"lenient": in_sets(top1, correct, unclear), "strict": in_sets(top1, correct)}
    return {v: Fraction(int((~hits[v]).sum()), int(top1.numel())) for v in VARIANTS}


def imagenet_m_rows(mistakes: dict[str, Fraction]) -> list[MetricRow]:
    """``imagenet_m_mistakes`` rows: value = number of mistakes, numerator/denominator = mistakes/rows.

    Example:
        >>> rows = imagenet_m_rows({"lenient": Fraction(7, 68), "strict": Fraction(9, 68)})
        >>> [(row.variant, row.value, row.denominator) for row in rows]
        [('lenient', 7.0, 68), ('strict', 9.0, 68)]
    """
    return [
        MetricRow(
            "imagenet_m_mistakes", float(mistakes[v].numerator), v, "", mistakes[v].numerator, mistakes[v].denominator
        )
        for v in VARIANTS
    ]


def _check_rows(top1: torch.Tensor, labels: torch.Tensor, problematic: torch.Tensor, num_classes: int) -> None:
    if top1.ndim != 1 or labels.shape != top1.shape or problematic.shape != top1.shape:
        raise OutputsError(
            f"top1, labels and problematic must be [N] tensors of one length, got {tuple(top1.shape)}, "
            f"{tuple(labels.shape)}, {tuple(problematic.shape)}"
        )
    if problematic.dtype != torch.bool:
        raise OutputsError(f"problematic must be a bool tensor, got {problematic.dtype}")
    if labels.numel() and (int(labels.min()) < 0 or int(labels.max()) >= num_classes):
        raise OutputsError(f"labels must lie in 0..{num_classes - 1}, found {int(labels.min())}..{int(labels.max())}")


__all__ = [
    "DEFAULT_VARIANT",
    "VARIANTS",
    "ClassAveraged",
    "MultilabelAccuracy",
    "imagenet_m_mistakes",
    "imagenet_m_rows",
    "in_sets",
    "multilabel_accuracy",
]
