"""Classification accuracy: top-k, ReaL top-k, per-class accuracy, class-subset evaluation.

Conventions (shared by every function here):

* scores are upcast to float32 chunk by chunk before ranking (never compared in bf16/fp16);
* ties are broken by lowest class index: a class outranks the label if its score is strictly
  greater, or equal at a lower index (``torch.topk`` leaves tie order unspecified, so it is not used);
* counts are accumulated as int64 and fractions formed once at the end;
* class-subset evaluation (ImageNet-A/R: 200 classes) slices the score columns to the subset before
  ranking, as the anchors (timm, QUBA) do, and labels are mapped to their position in the subset.

All functions work on the scores' own device.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ...errors import OutputsError
from ..batching import as_float32, chunk_elements, map_chunks, row_chunks
from .row_statistics import rank_in_top, row_statistics, tie_safe_topk


@dataclass(frozen=True)
class Fraction:
    """An integer count over an integer total; ``value`` is NaN when nothing was counted."""

    numerator: int
    denominator: int

    @property
    def value(self) -> float:
        return self.numerator / self.denominator if self.denominator else math.nan


def subset_columns(class_subset: Sequence[int] | torch.Tensor, num_classes: int, device: torch.device) -> torch.Tensor:
    """The class subset as an int64 tensor of column indices (in the given order), validated against C.

    ``class_subset`` is a list of class indices, or a boolean mask over all C classes.

    Example:
        >>> import torch
        >>> subset_columns([3, 1], num_classes=5, device="cpu")
        tensor([3, 1])
        >>> subset_columns(torch.tensor([False, True, False, True, False]), num_classes=5, device="cpu")
        tensor([1, 3])
    """
    columns = torch.as_tensor(list(class_subset) if not isinstance(class_subset, torch.Tensor) else class_subset)
    if columns.dtype == torch.bool:
        if columns.shape != (num_classes,):
            raise OutputsError(f"a class_subset mask must have {num_classes} entries, got shape {tuple(columns.shape)}")
        columns = columns.nonzero()[:, 0]
    columns = columns.to(device=device, dtype=torch.int64)
    if columns.ndim != 1 or len(columns) == 0:
        raise OutputsError(f"class_subset must be a non-empty list of class indices, got shape {tuple(columns.shape)}")
    if int(columns.min()) < 0 or int(columns.max()) >= num_classes:
        raise OutputsError(f"class_subset holds indices outside 0..{num_classes - 1}")
    if len(torch.unique(columns)) != len(columns):
        raise OutputsError("class_subset holds a class index twice")
    return columns


def labels_in_subset(labels: torch.Tensor, columns: torch.Tensor, num_classes: int) -> torch.Tensor:
    """Map full-space labels to their position in ``columns``; refuse labels outside the subset.

    Example:
        >>> import torch
        >>> labels_in_subset(torch.tensor([3, 1, 3]), torch.tensor([3, 1]), num_classes=5)
        tensor([0, 1, 0])
    """
    position = torch.full((num_classes,), -1, dtype=torch.int64, device=labels.device)
    position[columns.to(labels.device)] = torch.arange(len(columns), device=labels.device)
    mapped = position[labels]
    outside = mapped < 0
    if bool(outside.any()):
        row = int(outside.nonzero()[0, 0])
        raise OutputsError(
            f"row {row} has label {int(labels[row])}, which is not in the evaluation's class subset "
            f"({int(outside.sum())} such rows)"
        )
    return mapped


def label_ranks(
    scores: torch.Tensor, labels: torch.Tensor, max_rank: int, columns: torch.Tensor | None = None
) -> torch.Tensor:
    """``min(rank of the label, max_rank)`` per row (0 = top-1), ties broken by lowest class index.

    ``labels``: ``[N]`` int64 positions in the (sliced) column space; ``columns``: optional class
    subset the scores are sliced to first. Works in float32 chunks on the scores' device.

    Example:
        Row 0's classes in order are 1, 2, 0 (the tie 1 = 2 goes to the lower index), so its label 2
        is second; row 1's label 2 is third, beyond ``max_rank`` = 2:

        >>> import torch
        >>> scores = torch.tensor([[0.2, 0.4, 0.4], [0.7, 0.2, 0.1]])
        >>> label_ranks(scores, torch.tensor([2, 2]), max_rank=2)
        tensor([1, 2])
    """
    _check_labels(labels, scores.shape[1] if columns is None else len(columns))
    return rank_in_top(top_classes(scores, max_rank, columns), labels)


def top_classes(scores: torch.Tensor, k: int, columns: torch.Tensor | None = None) -> torch.Tensor:
    """``[N, k]`` int64: each row's k best classes, descending score, ties to the lowest index.

    Example:
        >>> import torch
        >>> top_classes(torch.tensor([[0.2, 0.4, 0.4], [0.7, 0.2, 0.1]]), k=2)
        tensor([[1, 2],
                [0, 1]])
    """
    width = scores.shape[1] if columns is None else len(columns)
    k = min(k, width)
    top = torch.empty(scores.shape[0], k, dtype=torch.int64, device=scores.device)

    def process(rows: slice) -> None:
        chunk = scores[rows] if columns is None else scores[rows].index_select(1, columns)
        top[rows] = tie_safe_topk(as_float32(chunk), k)[0]

    map_chunks(process, list(row_chunks(scores.shape[0], width, chunk_elements(scores.device))), scores.device)
    return top


def topk_accuracy(
    scores: torch.Tensor,
    labels: torch.Tensor,
    ks: Sequence[int] = (1, 5),
    class_subset: Sequence[int] | torch.Tensor | None = None,
) -> dict[int, Fraction]:
    """Top-k accuracy for each k: the label is among the k best-scored classes.

    ``class_subset`` (1000-way indices): scores are sliced to these columns and labels mapped into
    them before ranking (the ImageNet-A/R protocol).

    Example:
        The labels are ranked 1st, 2nd and 3rd in their rows:

        >>> import torch
        >>> scores = torch.tensor([[0.1, 0.7, 0.2], [0.5, 0.3, 0.2], [0.6, 0.3, 0.1]])
        >>> labels = torch.tensor([1, 1, 2])
        >>> accuracy = topk_accuracy(scores, labels, ks=(1, 2))
        >>> accuracy[1]
        Fraction(numerator=1, denominator=3)
        >>> accuracy[2].value
        0.6666666666666666

        On the class subset {1, 2} row 1 is right as well (0.3 > 0.2), row 2 still wrong (0.3 > 0.1):

        >>> topk_accuracy(scores, labels, ks=(1,), class_subset=[1, 2])[1]
        Fraction(numerator=2, denominator=3)
    """
    if class_subset is None:
        return topk_from_ranks(label_ranks(scores, labels, max(ks)), ks)
    _check_labels(labels, scores.shape[1])
    columns = subset_columns(class_subset, scores.shape[1], scores.device)
    ranks = label_ranks(scores, labels_in_subset(labels, columns, scores.shape[1]), max(ks), columns)
    return topk_from_ranks(ranks, ks)


def topk_from_ranks(ranks: torch.Tensor, ks: Sequence[int]) -> dict[int, Fraction]:
    """Top-k fractions from capped label ranks (int64 counts).

    Example:
        >>> import torch
        >>> topk_from_ranks(torch.tensor([0, 2, 5, 1]), ks=(1, 5))
        {1: Fraction(numerator=1, denominator=4), 5: Fraction(numerator=3, denominator=4)}
    """
    return {k: Fraction(int((ranks < k).sum()), int(ranks.numel())) for k in ks}


def per_class_accuracy(
    correct: torch.Tensor, labels: torch.Tensor, num_classes: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(correct_count, total_count)`` per class, int64 tensors of length ``num_classes``.

    ``correct``: ``[N]`` bool (e.g. ``label_rank == 0``); ``labels``: ``[N]`` int64 in 0..C-1.

    Example:
        Class 0 has one right of two images, classes 1 and 2 one right of one, class 3 no image:

        >>> import torch
        >>> correct = torch.tensor([True, False, True, True])
        >>> hits, totals = per_class_accuracy(correct, torch.tensor([0, 0, 1, 2]), num_classes=4)
        >>> hits, totals
        (tensor([1, 1, 1, 0]), tensor([2, 1, 1, 0]))
    """
    totals = torch.bincount(labels, minlength=num_classes)
    hits = torch.bincount(labels[correct], minlength=num_classes)
    return hits, totals


def top1_per_class(
    scores: torch.Tensor, labels: torch.Tensor, kind: str = "logits"
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-class top-1 ``(correct_count, total_count)`` from scores (a convenience over row_statistics).

    Example:
        Class 0 has one right image (row 0) of two; class 1's only image (row 2) is taken for class 0:

        >>> import torch
        >>> scores = torch.tensor([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
        >>> top1_per_class(scores, torch.tensor([0, 0, 1]), kind="probs")
        (tensor([1, 0]), tensor([2, 1]))
    """
    stats = row_statistics(scores, kind, labels, max_rank=1)
    return per_class_accuracy(stats.label_rank == 0, labels, scores.shape[1])


def real_topk_accuracy(
    scores: torch.Tensor, label_sets: torch.Tensor, ks: Sequence[int] = (1, 5), top: torch.Tensor | None = None
) -> dict[int, Fraction]:
    """ReaL top-k: any of the k best-scored classes is in the row's label set.

    ``label_sets``: ``[N, L]`` int64, each row's plausible labels padded with -1. Rows with an empty
    set are skipped (numerator and denominator), as timm's ``RealLabelsImagenet`` does. ``top``:
    the rows' ordered top classes if already computed (:func:`top_classes`, at least ``max(ks)``).

    Example:
        Row 0's top-1 (class 0) is not in its set {1, 2}, its top-2 {0, 1} is; row 1 is right at
        top-1; row 2 has no plausible label and is not counted:

        >>> import torch
        >>> scores = torch.tensor([[0.6, 0.3, 0.1], [0.2, 0.7, 0.1], [0.5, 0.4, 0.1]])
        >>> label_sets = torch.tensor([[1, 2], [1, -1], [-1, -1]])
        >>> real_topk_accuracy(scores, label_sets, ks=(1, 2))
        {1: Fraction(numerator=1, denominator=2), 2: Fraction(numerator=2, denominator=2)}
    """
    hits, evaluated = real_topk_hits(scores, label_sets, ks, top)
    return {k: Fraction(int((hits[k] & evaluated).sum()), int(evaluated.sum())) for k in ks}


def real_topk_hits(
    scores: torch.Tensor, label_sets: torch.Tensor, ks: Sequence[int] = (1, 5), top: torch.Tensor | None = None
) -> tuple[dict[int, torch.Tensor], torch.Tensor]:
    """Per image, the ReaL top-k hits of :func:`real_topk_accuracy`: ``({k: [N] bool}, [N] bool evaluated)``
    (evaluated: the image has a plausible label; ReaL accuracy is hits over evaluated images).

    Example:
        The rows of :func:`real_topk_accuracy`' example:

        >>> import torch
        >>> scores = torch.tensor([[0.6, 0.3, 0.1], [0.2, 0.7, 0.1], [0.5, 0.4, 0.1]])
        >>> hits, evaluated = real_topk_hits(scores, torch.tensor([[1, 2], [1, -1], [-1, -1]]), ks=(1, 2))
        >>> hits[1].tolist(), hits[2].tolist(), evaluated.tolist()
        ([False, True, False], [True, True, False], [True, True, False])
    """
    if label_sets.ndim != 2:
        raise OutputsError(f"label_sets must be [N, L] padded with -1, got shape {tuple(label_sets.shape)}")
    _check_labels(label_sets[label_sets >= 0], scores.shape[1])
    if top is None or top.shape[1] < max(ks):
        top = top_classes(scores, max(ks))
    in_set = (top[:, : max(ks), None] == label_sets[:, None, :]).any(dim=2)  # [N, k]; -1 never matches
    hit_by = in_set.cummax(dim=1).values  # hit_by[:, k-1]: one of the first k is in the set
    last = hit_by.shape[1]  # C when k > C: every class is then among the k best, as in topk_accuracy
    return {k: hit_by[:, min(k, last) - 1] for k in ks}, (label_sets >= 0).any(dim=1)


def _check_labels(labels: torch.Tensor, num_classes: int) -> None:
    if labels.numel() and (int(labels.min()) < 0 or int(labels.max()) >= num_classes):
        raise OutputsError(f"labels must lie in 0..{num_classes - 1}, found {int(labels.min())}..{int(labels.max())}")
