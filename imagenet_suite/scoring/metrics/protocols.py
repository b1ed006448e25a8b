"""Evaluation protocols that datasets publish as data (``build_info.json`` → ``protocol``), applied here.

Two protocols beyond the class subset of ImageNet-A/R (which ``classification`` applies):

**Class mapping** (ObjectNet, IN-9). The dataset's label column (``protocol["label_column"]``) holds
its own classes (ObjectNet: 113, IN-9: 9); ``protocol["class_mapping"]`` maps each of them, by
ClassLabel name, to its ImageNet-1k indices, and ``protocol["mapping_rule"]`` (:data:`MAPPING_RULES`)
says how a 1000-way model's scores become a prediction among them:

* ``"max_over_mapped_logits"`` (ObjectNet: 125 ImageNet classes in all, 9 classes mapped to several):
  a model's score for a mapped class is the **maximum** of its 1000-way scores over the mapped
  columns, and its prediction is the best mapped class (ties to the lowest class index, as
  everywhere in the scorer). Softmax and log-softmax are increasing within a row, so the maximum
  over mapped logits, probabilities or log-probabilities ranks the mapped classes identically:
  top-k accuracy does not depend on the outputs' kind.
* ``"argmax_then_map"`` (IN-9 of the Backgrounds Challenge, Xiao et al. 2021): the model's 1000-way
  **top-1** class (argmax, ties to the lowest index) is mapped to the dataset class whose list holds
  it; a top-1 class in no list (``-1`` in the release's ``in_to_in9.json``) is a wrong prediction.
  Only top-1 is defined: the rule yields one class per row, not a ranking of the mapped classes. The
  lists must be disjoint (the mapping is a function of the 1000 classes). The argmax is the same for
  logits, probabilities and log-probabilities.

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

from ...errors import OutputsError
from ..batching import as_float32, chunk_elements, row_chunks
from .classification import Fraction, label_ranks, top_classes, topk_from_ranks

MAX_OVER_MAPPED_LOGITS = "max_over_mapped_logits"
ARGMAX_THEN_MAP = "argmax_then_map"
MAPPING_RULES = (MAX_OVER_MAPPED_LOGITS, ARGMAX_THEN_MAP)
MAPPED_VARIANT = "class_mapping:max"  # MetricRow.variant of accuracies computed through a max-over-mapped mapping
ARGMAX_MAPPED_VARIANT = "class_mapping:argmax"  # ... and through an argmax-then-map mapping


def class_mapping_rule(features: Mapping[str, Any], protocol: Mapping[str, Any]) -> str | None:
    """The dataset's ``protocol["mapping_rule"]`` when it is one of :data:`MAPPING_RULES` and the
    dataset has the protocol's ``label_column``; None otherwise.

    Example:
        >>> protocol = {"mapping_rule": "max_over_mapped_logits", "label_column": "objectnet_label"}
        >>> class_mapping_rule({"objectnet_label": {}}, protocol), class_mapping_rule({"label": {}}, protocol)
        ('max_over_mapped_logits', None)
    """
    rule = protocol.get("mapping_rule")
    if rule in MAPPING_RULES and protocol.get("label_column") in features:
        return rule
    return None


def applies_class_mapping(
    features: Mapping[str, Any], protocol: Mapping[str, Any], rules: Sequence[str] = MAPPING_RULES
) -> bool:
    """True when a dataset publishes a class mapping with one of ``rules`` and has its label column.

    Example:
        >>> protocol = {"mapping_rule": "argmax_then_map", "label_column": "in9_label"}
        >>> features = {"in9_label": {}}
        >>> applies_class_mapping(features, protocol), applies_class_mapping(features, protocol, [MAX_OVER_MAPPED_LOGITS])
        (True, False)
    """
    return class_mapping_rule(features, protocol) in rules


def mapping_in_label_order(
    protocol: Mapping[str, Any], label_names: Sequence[str], num_classes: int
) -> list[list[int]]:
    """``protocol["class_mapping"]`` as a list aligned with the label column's ClassLabel names.

    Entry ``k`` lists the ``num_classes``-way score columns of label ``k``. OutputsError if a label
    has no mapping, the mapping names an unknown label, or an index is outside ``0..num_classes-1``.

    Example:
        >>> protocol = {"class_mapping": {"dog": [1, 2], "cat": [0]}}
        >>> mapping_in_label_order(protocol, ["cat", "dog"], num_classes=4)
        [[0], [1, 2]]
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

    Example:
        Mapped class 0 takes the larger of columns 0 and 1, classes 1 and 2 columns 2 and 3:

        >>> import torch
        >>> scores = torch.tensor([[0.1, 0.5, 0.3, 0.1], [0.4, 0.1, 0.2, 0.3]])
        >>> mapped_scores(scores, [[0, 1], [2], [3]])
        tensor([[0.5000, 0.3000, 0.1000],
                [0.4000, 0.2000, 0.3000]])
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

    Example:
        The mapped scores of :func:`mapped_scores`' example: row 0's label 0 is first (0.5), row 1's
        label 2 second (0.3 after 0.4):

        >>> import torch
        >>> scores = torch.tensor([[0.1, 0.5, 0.3, 0.1], [0.4, 0.1, 0.2, 0.3]])
        >>> mapped_topk_accuracy(scores, torch.tensor([0, 2]), [[0, 1], [2], [3]], ks=(1, 2))
        {1: Fraction(numerator=1, denominator=2), 2: Fraction(numerator=2, denominator=2)}
    """
    return topk_from_ranks(mapped_label_ranks(scores, labels, mapping, max(ks)), ks)


def mapped_label_ranks(
    scores: torch.Tensor, labels: torch.Tensor, mapping: Sequence[Sequence[int]], max_rank: int
) -> torch.Tensor:
    """``[N]`` int64: each label's rank among the mapped classes of :func:`mapped_scores` (0 = first, ties
    to the lowest index), capped at ``max_rank``; top-k is right when it is below k.

    Example:
        The rows of :func:`mapped_topk_accuracy`' example: row 0's label is first, row 1's second:

        >>> import torch
        >>> scores = torch.tensor([[0.1, 0.5, 0.3, 0.1], [0.4, 0.1, 0.2, 0.3]])
        >>> mapped_label_ranks(scores, torch.tensor([0, 2]), [[0, 1], [2], [3]], max_rank=2).tolist()
        [0, 1]
    """
    mapped = mapped_scores(scores, mapping)
    labels = labels.to(device=mapped.device, dtype=torch.int64)
    return label_ranks(mapped, labels, max_rank)


def mapped_class_of_column(mapping: Sequence[Sequence[int]], num_classes: int, device: torch.device) -> torch.Tensor:
    """``[num_classes]`` int64: the mapped class of each score column, ``-1`` for a column in no list.

    ``mapping``: K lists of column indices in ``0..num_classes-1`` (:func:`mapping_in_label_order`);
    OutputsError if a column is in two lists (argmax-then-map needs the lists disjoint).

    Example:
        >>> mapped_class_of_column([[0], [2, 3]], num_classes=5, device="cpu")
        tensor([ 0, -1,  1,  1, -1])
    """
    lookup = torch.full((num_classes,), -1, dtype=torch.int64)
    for label, columns in enumerate(mapping):
        for column in columns:
            column = int(column)
            if not 0 <= column < num_classes:
                raise OutputsError(f"class mapping holds column {column}, outside 0..{num_classes - 1}")
            if int(lookup[column]) not in (-1, label):
                raise OutputsError(
                    f"class mapping lists column {column} under classes {int(lookup[column])} and {label}; "
                    "argmax-then-map needs each column in at most one class"
                )
            lookup[column] = label
    return lookup.to(device)


def argmax_mapped_predictions(scores: torch.Tensor, mapping: Sequence[Sequence[int]]) -> torch.Tensor:
    """``[N]`` int64: each row's top-1 column (argmax, ties to the lowest index) mapped to its class
    through ``mapping`` (:func:`mapped_class_of_column`), ``-1`` where the top-1 column is in no list.

    Example:
        Row 0's top-1 column (1) is in no list, row 1's (0) is class 0's:

        >>> import torch
        >>> scores = torch.tensor([[0.1, 0.5, 0.3, 0.1], [0.4, 0.1, 0.2, 0.3]])
        >>> argmax_mapped_predictions(scores, [[0], [2]])
        tensor([-1,  0])
    """
    if scores.ndim != 2:
        raise OutputsError(f"scores must be [N, C], got shape {tuple(scores.shape)}")
    if not mapping or any(len(columns) == 0 for columns in mapping):
        raise OutputsError("class mapping must hold at least one class, each with at least one column")
    lookup = mapped_class_of_column(mapping, scores.shape[1], scores.device)
    return lookup[top_classes(scores, 1)[:, 0]]


def argmax_mapped_accuracy(
    scores: torch.Tensor, labels: torch.Tensor, mapping: Sequence[Sequence[int]], top1: torch.Tensor | None = None
) -> Fraction:
    """Top-1 accuracy under argmax-then-map: the mapped top-1 class equals the label (``labels``:
    ``[N]`` int64 in ``0..K-1``); an unmapped top-1 class (``-1``) is wrong. Over all N rows.

    ``top1``: the rows' top-1 columns if already known (ties to the lowest index), else computed.

    Example:
        The predictions of :func:`argmax_mapped_predictions`' example, -1 and 0, against labels 0
        and 0: the unmapped top-1 counts as wrong:

        >>> import torch
        >>> scores = torch.tensor([[0.1, 0.5, 0.3, 0.1], [0.4, 0.1, 0.2, 0.3]])
        >>> argmax_mapped_accuracy(scores, torch.tensor([0, 0]), [[0], [2]])
        Fraction(numerator=1, denominator=2)
    """
    hits = argmax_mapped_hits(scores, labels, mapping, top1)
    return Fraction(int(hits.sum()), int(hits.numel()))


def argmax_mapped_hits(
    scores: torch.Tensor, labels: torch.Tensor, mapping: Sequence[Sequence[int]], top1: torch.Tensor | None = None
) -> torch.Tensor:
    """``[N]`` bool: the mapped top-1 class equals the label (:func:`argmax_mapped_accuracy` per image).

    Example:
        >>> import torch
        >>> scores = torch.tensor([[0.1, 0.5, 0.3, 0.1], [0.4, 0.1, 0.2, 0.3]])
        >>> argmax_mapped_hits(scores, torch.tensor([0, 0]), [[0], [2]]).tolist()
        [False, True]
    """
    labels = labels.to(device=scores.device, dtype=torch.int64)
    if labels.shape != (scores.shape[0],):
        raise OutputsError(f"labels must be [{scores.shape[0]}], got shape {tuple(labels.shape)}")
    if len(labels) and (int(labels.min()) < 0 or int(labels.max()) >= len(mapping)):
        raise OutputsError(f"labels must be in 0..{len(mapping) - 1} (the mapped classes)")
    if top1 is None:
        predicted = argmax_mapped_predictions(scores, mapping)
    else:
        predicted = mapped_class_of_column(mapping, scores.shape[1], scores.device)[top1.to(scores.device)]
    return predicted == labels


def crop_box(width: int, height: int, border_px: int) -> tuple[int, int, int, int]:
    """PIL crop box ``(left, upper, right, lower)`` removing ``border_px`` pixels from every side.

    Example:
        >>> crop_box(640, 480, 2)
        (2, 2, 638, 478)
    """
    if border_px < 0 or 2 * border_px >= min(width, height):
        raise ValueError(f"a {border_px} px border crop does not fit a {width}x{height} image")
    return border_px, border_px, width - border_px, height - border_px


def border_crop(image, border_px: int):
    """The protocol's border crop of a PIL image (apply before the model's own preprocessing).

    Example:
        >>> from PIL import Image
        >>> border_crop(Image.new("RGB", (640, 480)), 2).size
        (636, 476)
    """
    return image.crop(crop_box(image.width, image.height, border_px))


def crop_description(protocol: Mapping[str, Any]) -> str | None:
    """One sentence on the input crop a protocol assumes, for reports; None when there is none.

    Example:
        >>> print(crop_description({"border_crop_px": 2}))
        inputs assume a 2 px border crop: crop box (b, b, W-b, H-b) with b=2 on the decoded image ...
        >>> crop_description({}) is None
        True
    """
    border = protocol.get("border_crop_px")
    if not border:
        return None
    return (
        f"inputs assume a {int(border)} px border crop: crop box (b, b, W-b, H-b) with b={int(border)} on the "
        "decoded image before the model's preprocessing (imagenet_suite.scoring.metrics.protocols.border_crop); "
        "the dataset stores the uncropped images"
    )


__all__ = [
    "ARGMAX_MAPPED_VARIANT",
    "ARGMAX_THEN_MAP",
    "MAPPED_VARIANT",
    "MAPPING_RULES",
    "MAX_OVER_MAPPED_LOGITS",
    "applies_class_mapping",
    "argmax_mapped_accuracy",
    "argmax_mapped_hits",
    "argmax_mapped_predictions",
    "border_crop",
    "class_mapping_rule",
    "crop_box",
    "crop_description",
    "mapped_class_of_column",
    "mapped_label_ranks",
    "mapped_scores",
    "mapped_topk_accuracy",
    "mapping_in_label_order",
]
