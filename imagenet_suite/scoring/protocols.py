"""Evaluation protocols that datasets publish as data (``build_info.json`` → ``protocol``), applied here.

Two protocols beyond the class subset of ImageNet-A/R (which ``classification`` applies):

**Class mapping** (ObjectNet). The dataset's label column holds its own classes (ObjectNet: 113);
``protocol["class_mapping"]`` maps each of them, by ClassLabel name, to its ImageNet-1k indices
(ObjectNet: 125 in all, 9 classes mapped to several) and ``protocol["mapping_rule"]`` is
``"max_over_mapped_logits"``: a model's score for a mapped class is the **maximum** of its 1000-way
scores over the mapped columns, and its prediction is the best mapped class (ties to the lowest
class index, as everywhere in the scorer). Softmax and log-softmax are increasing within a row, so
the maximum over mapped logits, probabilities or log-probabilities ranks the mapped classes
identically: top-k accuracy does not depend on the outputs' kind.

**Border crop** (ObjectNet: 2 px). ``protocol["border_crop_px"]`` pixels are removed from every
side of each decoded image *before* the model's own preprocessing. It acts on inputs, so the scorer
cannot apply it to outputs: :func:`border_crop` is the transform to use at inference time, and
:func:`crop_description` is the sentence a report records so readers know which protocol the
numbers assume. Stored image bytes are never cropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from ..errors import OutputsError
from .batching import as_float32, chunk_elements, row_chunks
from .classification import Fraction, label_ranks, topk_from_ranks

MAX_OVER_MAPPED_LOGITS = "max_over_mapped_logits"
MAPPED_VARIANT = "class_mapping:max"  # MetricRow.variant of accuracies computed through a class mapping


def applies_class_mapping(features: Mapping[str, Any], protocol: Mapping[str, Any]) -> bool:
    """True when a dataset publishes a max-over-mapped-logits mapping and has its label column."""
    return protocol.get("mapping_rule") == MAX_OVER_MAPPED_LOGITS and protocol.get("label_column") in features


def mapping_in_label_order(
    protocol: Mapping[str, Any], label_names: Sequence[str], num_classes: int
) -> list[list[int]]:
    """``protocol["class_mapping"]`` as a list aligned with the label column's ClassLabel names.

    Entry ``k`` lists the ``num_classes``-way score columns of label ``k``. OutputsError if a label
    has no mapping, the mapping names an unknown label, or an index is outside ``0..num_classes-1``.
    """
    mapping = protocol.get("class_mapping")
    if not isinstance(mapping, Mapping):
        raise OutputsError(
            f"protocol class_mapping must be {{label name: [class indices]}}, got {type(mapping).__name__}"
        )
    unknown = sorted(set(mapping) - set(label_names))
    missing = [name for name in label_names if name not in mapping]
    if unknown or missing:
        raise OutputsError(
            f"protocol class_mapping does not match the label names: unknown {unknown[:5]}, unmapped {missing[:5]}"
        )
    aligned = []
    for name in label_names:
        columns = [int(c) for c in mapping[name]]
        if not columns or min(columns) < 0 or max(columns) >= num_classes:
            raise OutputsError(
                f"protocol class_mapping[{name!r}] = {columns}: expected a non-empty list of indices "
                f"in 0..{num_classes - 1}"
            )
        aligned.append(columns)
    return aligned


def _gather_index(mapping: Sequence[Sequence[int]], device: torch.device) -> torch.Tensor:
    """``[K, M]`` int64 columns, short lists padded with their own first column (a max is unchanged)."""
    width = max(len(columns) for columns in mapping)
    rows = [list(columns) + [columns[0]] * (width - len(columns)) for columns in mapping]
    return torch.tensor(rows, dtype=torch.int64, device=device)


def mapped_scores(scores: torch.Tensor, mapping: Sequence[Sequence[int]]) -> torch.Tensor:
    """``[N, K]`` scores of the mapped classes: row-wise max over each class's mapped columns.

    ``scores``: ``[N, C]`` on any device (upcast to float32 chunk by chunk, float64 kept);
    ``mapping``: K non-empty lists of column indices in ``0..C-1`` (:func:`mapping_in_label_order`).
    """
    if scores.ndim != 2:
        raise OutputsError(f"scores must be [N, C], got shape {tuple(scores.shape)}")
    if not mapping or any(len(columns) == 0 for columns in mapping):
        raise OutputsError("class mapping must hold at least one class, each with at least one column")
    index = _gather_index(mapping, scores.device)
    if int(index.min()) < 0 or int(index.max()) >= scores.shape[1]:
        raise OutputsError(f"class mapping holds columns outside 0..{scores.shape[1] - 1}")
    dtype = torch.float64 if scores.dtype == torch.float64 else torch.float32
    out = torch.empty(scores.shape[0], index.shape[0], dtype=dtype, device=scores.device)
    flat = index.reshape(-1)
    for rows in row_chunks(scores.shape[0], scores.shape[1], chunk_elements(scores.device)):
        chunk = as_float32(scores[rows]).index_select(1, flat)
        out[rows] = chunk.view(chunk.shape[0], *index.shape).amax(dim=2)
    return out


def mapped_topk_accuracy(
    scores: torch.Tensor, labels: torch.Tensor, mapping: Sequence[Sequence[int]], ks: Sequence[int] = (1, 5)
) -> dict[int, Fraction]:
    """Top-k accuracy over the mapped classes (``labels``: ``[N]`` int64 in ``0..K-1``).

    The label is among the k best mapped classes by :func:`mapped_scores`, ties to the lowest index.
    """
    mapped = mapped_scores(scores, mapping)
    labels = labels.to(device=mapped.device, dtype=torch.int64)
    return topk_from_ranks(label_ranks(mapped, labels, max(ks)), ks)


def crop_box(width: int, height: int, border_px: int) -> tuple[int, int, int, int]:
    """PIL crop box ``(left, upper, right, lower)`` removing ``border_px`` pixels from every side."""
    if border_px < 0 or 2 * border_px >= min(width, height):
        raise ValueError(f"a {border_px} px border crop does not fit a {width}x{height} image")
    return border_px, border_px, width - border_px, height - border_px


def border_crop(image, border_px: int):
    """The protocol's border crop of a PIL image (apply before the model's own preprocessing)."""
    return image.crop(crop_box(image.width, image.height, border_px))


def crop_description(protocol: Mapping[str, Any]) -> str | None:
    """One sentence on the input crop a protocol assumes, for reports; None when there is none."""
    border = protocol.get("border_crop_px")
    if not border:
        return None
    return (
        f"inputs assume a {int(border)} px border crop: crop box (b, b, W-b, H-b) with b={int(border)} on the "
        "decoded image before the model's preprocessing (imagenet_suite.scoring.protocols.border_crop); "
        "the dataset stores the uncropped images"
    )


__all__ = [
    "MAPPED_VARIANT",
    "MAX_OVER_MAPPED_LOGITS",
    "applies_class_mapping",
    "border_crop",
    "crop_box",
    "crop_description",
    "mapped_scores",
    "mapped_topk_accuracy",
    "mapping_in_label_order",
]
