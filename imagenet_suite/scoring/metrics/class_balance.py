"""Class balance (Beyond Accuracy, Hesse et al. 2025, Eqs. 10-12): how evenly accuracy and confidence
spread over classes.

Two named conventions, because the QUBA paper's formulas and its code (visinf/beyond-accuracy) differ:

* ``reference_impl`` (default; the QUBA code, which produced Table 12):
  F_acc = 1 - std(per-class accuracy) with the unbiased (C-1) std of ``torch.std``;
  F_conf = 1 - mean over classes of the population std of the target-class softmax probability of
  that class's images;
* ``paper_eq11`` (the paper's Eqs. 10-11): F_acc = 1 - sqrt(mean_c (A_c - A)^2) with A the overall
  accuracy; F_conf = 1 - sqrt(mean_c (Conf_c - Conf)^2) with Conf_c the mean target probability of
  class c and Conf the mean over all images.

Both report F = GM(F_acc, F_conf) = sqrt(F_acc * F_conf). Classes without images are left out
(the QUBA code would return NaN for them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

CLASS_BALANCE_CONVENTIONS = ("reference_impl", "paper_eq11")
DEFAULT_CLASS_BALANCE_CONVENTION = "reference_impl"


@dataclass(frozen=True)
class ClassBalance:
    """F_acc, F_conf and their geometric mean under one convention."""

    convention: str
    accuracy_balance: float
    confidence_balance: float

    @property
    def value(self) -> float:
        product = self.accuracy_balance * self.confidence_balance
        return math.sqrt(product) if product >= 0 else math.nan


def class_balance(
    correct: torch.Tensor,
    target_probability: torch.Tensor,
    labels: torch.Tensor,
    num_classes: int,
    convention: str = DEFAULT_CLASS_BALANCE_CONVENTION,
) -> ClassBalance:
    """Class balance of top-1 correctness ``[N]`` bool and target-class probabilities ``[N]`` float.

    ``labels``: ``[N]`` int64 in 0..num_classes-1. See the module docstring for the conventions.

    Example:
        Class 0: two right images at target probability 0.75; class 1: a right one at 0.5 and a
        wrong one at 0.25. Class accuracies are 1 and 1/2, so the reference implementation's
        F_acc = 1 - std([1, 0.5]) (unbiased) = 1 - sqrt(1/8); the probabilities' population std is 0
        in class 0 and 0.125 in class 1, so F_conf = 1 - 0.0625:

        >>> import torch
        >>> correct = torch.tensor([True, True, True, False])
        >>> target_probability = torch.tensor([0.75, 0.75, 0.5, 0.25])
        >>> labels = torch.tensor([0, 0, 1, 1])
        >>> balance = class_balance(correct, target_probability, labels, num_classes=2)
        >>> round(balance.accuracy_balance, 6), balance.confidence_balance
        (0.646447, 0.9375)
        >>> round(balance.value, 6)  # sqrt(F_acc * F_conf)
        0.778488

        The paper's Eqs. 10-11 measure the spread around the overall values instead: accuracies
        1 and 0.5 around 0.75, mean probabilities 0.75 and 0.375 around 0.5625:

        >>> paper = class_balance(correct, target_probability, labels, num_classes=2, convention="paper_eq11")
        >>> paper.accuracy_balance, paper.confidence_balance, round(paper.value, 6)
        (0.75, 0.8125, 0.780625)
    """
    if convention not in CLASS_BALANCE_CONVENTIONS:
        raise ValueError(f"unknown class balance convention {convention!r}; known: {CLASS_BALANCE_CONVENTIONS}")
    counts = torch.bincount(labels, minlength=num_classes)
    present = counts > 0
    class_accuracy = _class_means(correct.double(), labels, counts)[present]
    class_confidence = _class_means(target_probability.double(), labels, counts)
    if convention == "reference_impl":
        f_acc = 1.0 - float(class_accuracy.std(unbiased=True)) if len(class_accuracy) > 1 else math.nan
        within_std = _class_population_std(target_probability.double(), labels, counts, class_confidence)[present]
        f_conf = 1.0 - float(within_std.mean())
    else:
        overall_accuracy = correct.double().mean()
        overall_confidence = target_probability.double().mean()
        f_acc = 1.0 - float(((class_accuracy - overall_accuracy) ** 2).mean().sqrt())
        f_conf = 1.0 - float(((class_confidence[present] - overall_confidence) ** 2).mean().sqrt())
    return ClassBalance(convention, f_acc, f_conf)


def class_balance_replicates(
    correct: torch.Tensor,
    target_probability: torch.Tensor,
    labels: torch.Tensor,
    num_classes: int,
    counts: torch.Tensor,
    convention: str = DEFAULT_CLASS_BALANCE_CONVENTION,
) -> torch.Tensor:
    """``[R]`` float64: the class balance F of ``convention`` on each bootstrap resample, ``counts``
    ``[R, N]`` (how often each image is drawn; counts of 1 give :func:`class_balance`).

    Every class mean, spread and overall value is taken over the drawn images, each as often as drawn;
    a class none of whose images is drawn is left out, as a class without images is.

    Example:
        The images of :func:`class_balance`' example. Drawing the right image of class 1 twice and its
        wrong one never makes both class accuracies 1 (F_acc = 1) and class 1's probabilities 0.5 and 0.5
        (F_conf = 1):

        >>> correct = torch.tensor([True, True, True, False])
        >>> target_probability = torch.tensor([0.75, 0.75, 0.5, 0.25])
        >>> labels = torch.tensor([0, 0, 1, 1])
        >>> counts = torch.tensor([[1, 1, 1, 1], [1, 1, 2, 0]])
        >>> [round(value, 6) for value in class_balance_replicates(correct, target_probability, labels, 2, counts).tolist()]
        [0.778488, 1.0]
    """
    if convention not in CLASS_BALANCE_CONVENTIONS:
        raise ValueError(f"unknown class balance convention {convention!r}; known: {CLASS_BALANCE_CONVENTIONS}")
    weights = counts.to(correct.device, torch.float64)
    hits, probability = correct.double(), target_probability.double()
    rows = weights.shape[0]

    def per_class(values: torch.Tensor) -> torch.Tensor:
        return torch.zeros(rows, num_classes, dtype=torch.float64, device=weights.device).index_add_(1, labels, values)

    sizes = per_class(weights)
    present = sizes > 0
    class_accuracy = per_class(weights * hits) / sizes
    class_confidence = per_class(weights * probability) / sizes
    if convention == "reference_impl":
        f_acc = 1.0 - _masked_std(class_accuracy, present)
        within = (per_class(weights * (probability - class_confidence[:, labels]) ** 2) / sizes).sqrt()
        f_conf = 1.0 - within.where(present, torch.nan).nanmean(dim=1)
    else:
        drawn = weights.sum(dim=1, keepdim=True)
        overall_accuracy = (weights @ hits)[:, None] / drawn
        overall_confidence = (weights @ probability)[:, None] / drawn
        f_acc = 1.0 - ((class_accuracy - overall_accuracy) ** 2).where(present, torch.nan).nanmean(dim=1).sqrt()
        f_conf = 1.0 - ((class_confidence - overall_confidence) ** 2).where(present, torch.nan).nanmean(dim=1).sqrt()
    product = f_acc * f_conf
    return product.sqrt().where(product >= 0, torch.nan).cpu()


def _masked_std(values: torch.Tensor, present: torch.Tensor) -> torch.Tensor:
    """Per row, the unbiased std of the ``present`` entries (``torch.std``); NaN with fewer than two."""
    found = present.sum(dim=1)
    mean = values.where(present, 0.0).sum(dim=1) / found
    squares = ((values - mean[:, None]) ** 2).where(present, 0.0).sum(dim=1)
    return (squares / (found - 1)).sqrt().where(found > 1, torch.nan)


def _class_means(values: torch.Tensor, labels: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    sums = torch.zeros(len(counts), dtype=torch.float64, device=values.device).index_add_(0, labels, values)
    return sums / counts.clamp(min=1)


def _class_population_std(values, labels, counts, means) -> torch.Tensor:
    """Per-class population std (ddof=0, like ``np.std``), two-pass for accuracy."""
    squares = torch.zeros(len(counts), dtype=torch.float64, device=values.device)
    squares.index_add_(0, labels, (values - means[labels]) ** 2)
    return (squares / counts.clamp(min=1)).sqrt()
