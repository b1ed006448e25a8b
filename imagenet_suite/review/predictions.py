"""What a reviewer sees of a model: its top-5 ImageNet-1k classes, MSP and energy, per dataset row.

Computed from :class:`imagenet_suite.scoring.outputs.ModelOutputs` (``[N, 1000]`` logits, probs or
log-probs plus the row ids), in row chunks on the outputs' own device; softmax is applied exactly
once (only to logits). Scores follow the OOD convention *higher = more in-distribution*:

* ``msp`` — maximum softmax probability, in [0, 1];
* ``energy`` — ``logsumexp(logits)`` (the negative free energy at T = 1); only for ``logits``
  outputs (probabilities have lost the logits' scale), None otherwise.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from ..classes import NUM_CLASSES, imagenet_wnids, readable_name
from ..scoring.batching import as_float32, chunk_elements, probabilities, row_chunks
from ..scoring.outputs import ModelOutputs
from .errors import ReviewError

TOP_K = 5
SHOWN = 3  # ids quoted in an error message


@dataclass(frozen=True)
class RowPrediction:
    """The model's view of one row: top-k class indices with probabilities (descending), MSP, energy."""

    classes: tuple[int, ...]
    probs: tuple[float, ...]
    msp: float
    energy: float | None


@functools.cache
def imagenet_display_names() -> tuple[str, ...]:
    """A readable, unique name per ImageNet-1k class index: the first lemma, plus the wnid where
    two classes share it (``crane (n02012849)`` / ``crane (n03126707)``; same for ``maillot``)."""
    names = [readable_name(w) for w in imagenet_wnids()]
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return tuple(f"{n} ({w})" if counts[n] > 1 else n for n, w in zip(names, imagenet_wnids()))


def row_predictions(outputs: ModelOutputs, dataset_ids: set[str], k: int = TOP_K) -> dict[str, RowPrediction]:
    """Top-``k`` classes, MSP and energy of every outputs row, keyed by row id.

    Raises ReviewError if the outputs are not 1000-way ImageNet-1k scores, hold ids that are not
    rows of the dataset, or contain NaN/inf (or probability rows that do not sum to 1).
    """
    if outputs.num_classes != NUM_CLASSES:
        raise ReviewError(
            f"model outputs have {outputs.num_classes} scores per row; review needs the "
            f"{NUM_CLASSES} ImageNet-1k classes in sorted-wnid order"
        )
    unknown = [i for i in outputs.ids if i not in dataset_ids]
    if unknown:
        raise ReviewError(
            f"model outputs hold {len(unknown)} id(s) that are not rows of the dataset, "
            f"e.g. {', '.join(repr(i) for i in unknown[:SHOWN])}"
        )
    outputs.validate()
    result: dict[str, RowPrediction] = {}
    for rows in row_chunks(outputs.num_rows, outputs.num_classes, chunk_elements(outputs.device)):
        chunk = as_float32(outputs.values[rows])
        probs = probabilities(chunk, outputs.kind)
        top = probs.topk(k, dim=1)
        energy = torch.logsumexp(chunk, dim=1).tolist() if outputs.kind == "logits" else [None] * len(chunk)
        for offset, (idx, p, e) in enumerate(zip(top.indices.tolist(), top.values.tolist(), energy)):
            result[outputs.ids[rows.start + offset]] = RowPrediction(tuple(idx), tuple(p), p[0], e)
    return result
