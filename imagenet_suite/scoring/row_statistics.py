"""One pass over the rows of a score tensor, shared by top-k, calibration and class balance.

For every row ``i`` with label ``y_i`` the pass keeps, in float32 on the scores' device:

* ``label_rank``: how many classes outrank ``y_i`` (scores strictly greater, plus equal scores at a
  lower class index, i.e. ties broken by lowest class index), capped at ``max_rank``; top-k is correct
  iff ``label_rank < k``;
* ``confidence``: the largest softmax probability (the top-1 prediction's probability);
* ``target_probability``: the softmax probability of ``y_i``;
* a :class:`SoftmaxNormalizer` so later passes (class-wise calibration, the 16-class mapping) can
  produce probabilities of any column block without recomputing row sums.

Scores are upcast to float32 chunk by chunk (bf16/fp16 order and ties are kept exactly by the upcast),
and an optional class subset slices the columns before anything is ranked or normalized.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .batching import as_float32, chunk_elements, row_chunks


@dataclass(frozen=True)
class SoftmaxNormalizer:
    """Per-row ``shift`` and ``total`` with ``p[i, j] = exp(s[i, j] - shift[i]) / total[i]``.

    For ``logits`` (and sliced ``log_probs``) ``shift`` is the row max and ``total`` the sum of
    ``exp(s - max)``; for ``probs`` the probabilities are the stored values divided by ``total``
    (1 unless the columns were sliced); for unsliced ``log_probs`` they are ``exp(s)``.
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


@dataclass(frozen=True)
class RowStatistics:
    """Per-row results of :func:`row_statistics` (all 1-D tensors of length N on the scores' device)."""

    label_rank: torch.Tensor
    confidence: torch.Tensor
    target_probability: torch.Tensor
    normalizer: SoftmaxNormalizer
    max_rank: int


def row_statistics(
    scores: torch.Tensor,
    kind: str,
    labels: torch.Tensor,
    max_rank: int = 5,
    columns: torch.Tensor | None = None,
) -> RowStatistics:
    """Label ranks, confidences and target probabilities of every row, in one chunked pass.

    ``scores``: ``[N, C]`` of ``kind`` (logits/probs/log_probs), any float dtype and device.
    ``labels``: ``[N]`` int64 class positions in the (sliced) column space. ``columns``: optional
    int64 class subset; scores are sliced to it before ranking or softmax (renormalized over it).
    """
    n_rows = scores.shape[0]
    width = scores.shape[1] if columns is None else len(columns)
    renormalize = columns is not None
    device = scores.device
    rank = torch.empty(n_rows, dtype=torch.int64, device=device)
    confidence = torch.empty(n_rows, dtype=torch.float32, device=device)
    target = torch.empty(n_rows, dtype=torch.float32, device=device)
    keeps_norm = kind == "logits" or (renormalize and kind == "log_probs")
    shift = torch.empty(n_rows, dtype=torch.float32, device=device) if keeps_norm else None
    total = torch.empty(n_rows, dtype=torch.float32, device=device) if keeps_norm or (renormalize and kind == "probs") else None
    for rows in row_chunks(n_rows, width, chunk_elements(device)):
        chunk = scores[rows] if columns is None else scores[rows].index_select(1, columns)
        chunk = as_float32(chunk)
        y = labels[rows]
        label_score = chunk.gather(1, y[:, None])
        rank[rows] = capped_label_rank(chunk, y, label_score, max_rank)
        top = chunk.amax(dim=1)
        if keeps_norm:
            row_sum = torch.exp(chunk - top[:, None]).sum(dim=1)
            shift[rows], total[rows] = top, row_sum
            confidence[rows] = 1.0 / row_sum
            target[rows] = torch.exp(label_score[:, 0] - top) / row_sum
        elif kind == "probs":
            row_sum = chunk.sum(dim=1) if total is not None else None
            if row_sum is not None:
                total[rows] = row_sum
            confidence[rows] = top if row_sum is None else top / row_sum
            target[rows] = label_score[:, 0] if row_sum is None else label_score[:, 0] / row_sum
        else:  # log_probs, unsliced
            confidence[rows] = top.exp()
            target[rows] = label_score[:, 0].exp()
    normalizer = SoftmaxNormalizer(kind, shift, total)
    return RowStatistics(rank, confidence, target, normalizer, max_rank)


def capped_label_rank(chunk: torch.Tensor, labels: torch.Tensor, label_score: torch.Tensor, max_rank: int) -> torch.Tensor:
    """``min(rank, max_rank)`` of each row's label; ties broken by lowest class index.

    rank = #{j : s_j > s_y} + #{j < y : s_j == s_y}. The second term is only computed for the few
    rows where another class ties the label's score (bf16 ties; rare in float32).
    """
    greater = (chunk > label_score).sum(dim=1)
    at_least = (chunk >= label_score).sum(dim=1)
    tied = ((at_least - greater) > 1) & (greater < max_rank)
    if bool(tied.any()):
        rows = tied.nonzero()[:, 0]
        sub = chunk[rows]
        lower_index = torch.arange(sub.shape[1], device=sub.device)[None, :] < labels[rows, None]
        greater[rows] += ((sub == label_score[rows]) & lower_index).sum(dim=1)
    return greater.clamp_(max=max_rank)
