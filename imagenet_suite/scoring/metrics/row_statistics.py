"""One pass over the rows of a score tensor, shared by top-k, ReaL, calibration and class balance.

For every row the pass keeps, in float32 on the scores' device:

* ``top_classes``: the ``max_rank`` best classes in order, by descending score with ties broken by
  lowest class index (``torch.topk`` leaves tie order unspecified, so its result is reordered and,
  where a tie straddles the cut, completed exactly);
* ``label_rank`` (when labels are given): the label's position in that order, ``max_rank`` if it
  is not among the first ``max_rank``; top-k is correct iff ``label_rank < k``;
* ``confidence``: the largest softmax probability; ``target_probability``: the label's probability;
* a :class:`SoftmaxNormalizer` so later passes (class-wise calibration, the 16-class mapping) can
  produce probabilities of any column block without recomputing row sums.

Scores are upcast to float32 chunk by chunk (bf16/fp16 order and ties survive the upcast exactly),
and an optional class subset slices the columns before anything is ranked or normalized.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..batching import as_float32, chunk_elements, map_chunks, row_chunks


@dataclass(frozen=True)
class SoftmaxNormalizer:
    """Per-row ``shift`` and ``total`` with ``p[i, j] = exp(s[i, j] - shift[i]) / total[i]``.

    For ``logits`` (and sliced ``log_probs``) ``shift`` is the row max and ``total`` the sum of
    ``exp(s - max)``; for ``probs`` the probabilities are the stored values divided by ``total``
    (absent, i.e. 1, unless the columns were sliced); for unsliced ``log_probs`` they are ``exp(s)``.
    """

    kind: str
    shift: torch.Tensor | None
    total: torch.Tensor | None

    def probabilities(self, block: torch.Tensor, rows: slice | torch.Tensor) -> torch.Tensor:
        """Probabilities of a float32 block of columns for the given rows."""
        if self.kind == "probs":
            return block if self.total is None else block / self.total[rows, None]
        if self.shift is None:  # unsliced log_probs
            return block.exp()
        return torch.exp(block - self.shift[rows, None]) / self.total[rows, None]

    def probabilities_by_class_(self, by_class: torch.Tensor) -> torch.Tensor:
        """In place: float32 scores laid out ``[W classes, N rows]`` (all rows) become probabilities."""
        if self.shift is not None:
            return by_class.sub_(self.shift[None, :]).exp_().div_(self.total[None, :])
        if self.kind == "log_probs":
            return by_class.exp_()
        return by_class if self.total is None else by_class.div_(self.total[None, :])


@dataclass(frozen=True)
class RowStatistics:
    """Per-row results of :func:`row_statistics` (tensors of length N on the scores' device)."""

    top_classes: torch.Tensor
    label_rank: torch.Tensor | None
    confidence: torch.Tensor
    target_probability: torch.Tensor | None
    normalizer: SoftmaxNormalizer
    max_rank: int


def row_statistics(
    scores: torch.Tensor,
    kind: str,
    labels: torch.Tensor | None = None,
    max_rank: int = 5,
    columns: torch.Tensor | None = None,
) -> RowStatistics:
    """Top classes, label ranks, confidences and target probabilities of every row, in one chunked pass.

    ``scores``: ``[N, C]`` of ``kind`` (logits/probs/log_probs), any float dtype and device.
    ``labels``: optional ``[N]`` int64 class positions in the (sliced) column space. ``columns``:
    optional int64 class subset; scores are sliced to it before ranking or softmax (renormalized).

    Example:
        Logits whose softmax is (0.7, 0.2, 0.1) and (0.25, 0.25, 0.5); row 1's label (class 1) is
        third after the tie 0 = 1 goes to class 0, so it is not among the ``max_rank`` = 2 best:

        >>> import torch
        >>> logits = torch.tensor([[0.7, 0.2, 0.1], [0.25, 0.25, 0.5]]).log()
        >>> stats = row_statistics(logits, "logits", labels=torch.tensor([0, 1]), max_rank=2)
        >>> stats.top_classes
        tensor([[0, 1],
                [2, 0]])
        >>> stats.label_rank
        tensor([0, 2])
        >>> stats.confidence, stats.target_probability
        (tensor([0.7000, 0.5000]), tensor([0.7000, 0.2500]))
    """
    n_rows = scores.shape[0]
    width = scores.shape[1] if columns is None else len(columns)
    max_rank = min(max_rank, width)
    device = scores.device
    sliced = columns is not None
    keeps_shift = kind == "logits" or (sliced and kind == "log_probs")
    keeps_total = keeps_shift or (sliced and kind == "probs")
    top = torch.empty(n_rows, max_rank, dtype=torch.int64, device=device)
    confidence = torch.empty(n_rows, dtype=torch.float32, device=device)
    target = torch.empty(n_rows, dtype=torch.float32, device=device) if labels is not None else None
    shift = torch.empty(n_rows, dtype=torch.float32, device=device) if keeps_shift else None
    total = torch.empty(n_rows, dtype=torch.float32, device=device) if keeps_total else None

    def process(rows: slice) -> None:
        chunk = as_float32(scores[rows] if columns is None else scores[rows].index_select(1, columns))
        top[rows], best = tie_safe_topk(chunk, max_rank)
        if keeps_shift:
            shift[rows] = best
            total[rows] = torch.exp(chunk - best[:, None]).sum(dim=1)
        elif keeps_total:
            total[rows] = chunk.sum(dim=1)
        confidence[rows] = _probability(best, kind, rows, shift, total)
        if labels is not None:
            target[rows] = _probability(chunk.gather(1, labels[rows, None])[:, 0], kind, rows, shift, total)

    map_chunks(process, list(row_chunks(n_rows, width, chunk_elements(device))), device)
    ranks = None if labels is None else rank_in_top(top, labels)
    return RowStatistics(top, ranks, confidence, target, SoftmaxNormalizer(kind, shift, total), max_rank)


def _probability(values: torch.Tensor, kind: str, rows: slice, shift, total) -> torch.Tensor:
    """Softmax probability of one score per row, given the row's normalizer."""
    if shift is not None:
        return torch.exp(values - shift[rows]) / total[rows]
    if kind == "probs":
        return values if total is None else values / total[rows]
    return values.exp()


def tie_safe_topk(chunk: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(classes [B, k], best score [B])``: the k best classes of each row of a float32 chunk,
    ordered by descending score, equal scores by ascending class index.

    ``torch.topk(k + 1)`` finds the candidates; they are reordered (index, then stable by value);
    rows where the k-th and (k+1)-th scores tie are completed exactly with the lowest-index tied
    classes.

    Example:
        Three classes tie for the best score; the two lowest indices are taken, in order:

        >>> tie_safe_topk(torch.tensor([[0.2, 0.4, 0.4, 0.4]]), 2)
        (tensor([[1, 2]]), tensor([0.4000]))
    """
    width = chunk.shape[1]
    values, indices = chunk.topk(min(k + 1, width), dim=1)
    indices, by_index = indices.sort(dim=1)
    values = values.gather(1, by_index)
    values, by_value = values.sort(dim=1, descending=True, stable=True)
    indices = indices.gather(1, by_value)
    top = indices[:, :k].clone()
    if values.shape[1] > k:
        straddling = (values[:, k - 1] == values[:, k]).nonzero()[:, 0]
        if len(straddling):
            top[straddling] = _complete_ties(chunk[straddling], top[straddling], values[straddling, k - 1], k)
    return top, values[:, 0]


def _complete_ties(rows: torch.Tensor, top: torch.Tensor, cut: torch.Tensor, k: int) -> torch.Tensor:
    """Exact top-k for rows whose k-th score ``cut`` is shared beyond the candidates: classes above
    the cut keep their (already ordered) places, the rest go to the lowest-index classes at the cut."""
    above = (rows > cut[:, None]).sum(dim=1)
    tied = (rows == cut[:, None]).nonzero()  # (row, column) pairs, row-major: columns ascending per row
    count = torch.bincount(tied[:, 0], minlength=rows.shape[0])
    first = torch.cumsum(count, dim=0) - count
    slot = torch.arange(k, device=rows.device)[None, :]
    at_cut = tied[(first[:, None] + slot).clamp(max=len(tied) - 1), 1]  # the k lowest tied columns
    place = slot - above[:, None]
    return torch.where(place >= 0, at_cut.gather(1, place.clamp(min=0)), top)


def rank_in_top(top: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Position of each label in its row's ordered top classes; ``top.shape[1]`` when absent.

    Example:
        >>> rank_in_top(torch.tensor([[1, 2], [0, 1]]), torch.tensor([2, 3]))
        tensor([1, 2])
    """
    match = top == labels[:, None]
    return torch.where(match.any(dim=1), match.to(torch.int8).argmax(dim=1), top.shape[1])
