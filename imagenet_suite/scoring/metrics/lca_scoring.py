"""LCA and ELCA scores of model outputs: pure torch functions, on the outputs' own device.

Every function takes ``values`` — a ``[N, C]`` tensor of ``logits``, ``probs`` or ``log_probs``
— integer ``labels`` ``[N]`` (class indices 0..C-1), and a C×C ``distance`` matrix (numpy or
torch; rows = ground truth, see :mod:`.distances`). The choice of distance (``info``,
``depth_two_sided``, ``depth_one_sided``, or a K-means matrix) is the caller's, made explicit by
the matrix passed in. Predictions: top-1 = argmax; top-k = the k largest values; ties are broken
by the lowest class index. Work is batched over rows (``chunk_rows``, by default the scorer's chunk
size for the device: cache-sized on the CPU, the whole tensor on a GPU) so peak extra memory is
``chunk_rows × C`` values; only scalars come back to the CPU.

* :func:`lca` — mean ``D[y, ŷ]`` over the misclassified samples (top-1 ≠ y), the paper's LCA.
* :func:`topk_lca` — for the misclassified samples, mean of ``D[y, ŷ_j]`` over the top-k
  predictions ``j = 1..k`` (a ground truth inside the top-k contributes 0), as the paper's code
  reports "top-5 LCA" (without its ``argsort[:, -0]`` bug).
* :func:`elca` — expected LCA ``Σ_k p_k · D[y, k]`` with ``p = softmax(values / temperature)``.
  The paper's Eq. 8 (``1/(nK)``) cannot produce its Table 1 numbers and its code has no ELCA, so
  the paper's ELCA values are **not reproducible**. Three variants:
  ``"all"`` (default): mean over all samples; ``"mistakes"``: mean over misclassified samples;
  ``"exclude_gt"``: ``p`` renormalised over ``k ≠ y`` (computed without cancellation), mean
  over all samples. ELCA depends on the logit scale (temperature); don't compare it across
  model families with different scales (CLIP logits are 100·cosine).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ...errors import HierarchyError, ShapeMismatch
from ...hierarchies.distances import check_distance_matrix
from ..batching import chunk_elements

KINDS = ("logits", "probs", "log_probs")
ELCA_VARIANTS = ("all", "mistakes", "exclude_gt")
DEFAULT_ELCA_VARIANT = "all"
LOG2_E = 1.0 / math.log(2.0)


@dataclass(frozen=True)
class LCAScore:
    """A mean distance and what it averaged over."""

    value: float  # NaN when count == 0 (e.g. no mistakes)
    count: int  # samples averaged
    num_samples: int  # N


# -- input checks -------------------------------------------------------------------------------
def _checked(
    values: torch.Tensor, labels: Any, distance: Any, check_finite: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    if not isinstance(values, torch.Tensor) or values.ndim != 2:
        raise ShapeMismatch(
            f"values must be a [N, C] torch tensor, got {type(values).__name__} of shape {tuple(getattr(values, 'shape', ()))}"
        )
    n, c = values.shape
    labels = torch.as_tensor(labels, device=values.device)
    if labels.shape != (n,) or labels.dtype.is_floating_point or labels.dtype == torch.bool:
        raise ShapeMismatch(
            f"labels must be an integer tensor of shape [{n}], got {labels.dtype} of shape {tuple(labels.shape)}"
        )
    labels = labels.long()
    if n and (int(labels.min()) < 0 or int(labels.max()) >= c):
        raise ShapeMismatch(
            f"labels must lie in 0..{c - 1} (values have C={c} columns), got {int(labels.min())}..{int(labels.max())}"
        )
    check_distance_matrix(distance, c)
    if not isinstance(distance, torch.Tensor):  # numpy (maybe read-only, e.g. the cached matrices): copy
        distance = torch.from_numpy(np.array(distance, dtype=np.float32))
    distance = distance.to(device=values.device, dtype=torch.float32)
    if check_finite and n and not _all_finite(values):
        raise HierarchyError("values contain NaN or ±inf; the scorer needs finite outputs")
    return values, labels, distance


def _all_finite(values: torch.Tensor) -> bool:
    """True iff every entry is finite. A finite sum proves it in one cheap pass
    (NaN and ±inf propagate); only an overflowing sum falls back to the elementwise check."""
    if math.isfinite(float(values.sum())):
        return True
    return bool(torch.isfinite(values).all())


def _chunks(n: int, c: int, device: torch.device, chunk_rows: int | None):
    """Row slices of ``chunk_rows`` rows (default: the scorer's chunk size for the device)."""
    if chunk_rows is None:
        chunk_rows = max(1, chunk_elements(device) // max(1, c))
    if chunk_rows < 1:
        raise HierarchyError(f"chunk_rows must be >= 1, got {chunk_rows}")
    for start in range(0, n, chunk_rows):
        yield slice(start, min(start + chunk_rows, n))


def _mean(total: torch.Tensor | float, count: int, n: int) -> LCAScore:
    return LCAScore(float(total) / count if count else float("nan"), count, n)


# -- predictions --------------------------------------------------------------------------------
def top1(values: torch.Tensor) -> torch.Tensor:
    """[N] argmax per row on the values' device; ties → lowest class index.

    Both torch.argmax and numpy.argmax return the first maximum. On the CPU, numpy's
    row-wise argmax (a zero-copy view) is several times faster than torch's, so it is used there.

    Example:
        >>> import torch
        >>> top1(torch.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]))
        tensor([1, 0])
    """
    if values.device.type == "cpu" and values.dtype in (torch.float32, torch.float64) and not values.requires_grad:
        return torch.from_numpy(np.argmax(values.numpy(), axis=1))
    return values.argmax(dim=1)


def topk(values: torch.Tensor, k: int) -> torch.Tensor:
    """[N, k] class indices in decreasing value; equal values ordered by lowest class index.

    Example:
        >>> import torch
        >>> topk(torch.tensor([[0.5, 0.2, 0.5], [0.1, 0.2, 0.7]]), 2)
        tensor([[0, 2],
                [2, 1]])
    """
    _n, c = values.shape
    if not 1 <= k <= c:
        raise ShapeMismatch(f"k={k} must lie in 1..{c} (number of classes)")
    top = values.topk(min(k + 1, c), dim=1)  # sorted; one extra value shows a tie at the boundary
    index = top.indices[:, :k].clone()
    tied = (top.values[:, 1:] == top.values[:, :-1]).any(dim=1)  # torch's order among ties is unspecified
    if bool(tied.any()):
        index[tied] = _topk_lowest_index_ties(values[tied], k)
    return index


def _topk_lowest_index_ties(values: torch.Tensor, k: int) -> torch.Tensor:
    """Exact top-k for rows with ties: among equal values the lowest class indices, first."""
    n = values.shape[0]
    kth = values.topk(k, dim=1).values[:, -1:]  # k-th largest value per row
    above = values > kth
    need = k - above.sum(dim=1, keepdim=True)  # how many values equal to the k-th to take
    at = values == kth
    chosen = above | (at & (at.cumsum(dim=1) <= need))  # the lowest-index ties
    index = chosen.nonzero()[:, 1].view(n, k)  # ascending class index per row
    order = values.gather(1, index).argsort(dim=1, descending=True, stable=True)
    return index.gather(1, order)


# -- LCA ----------------------------------------------------------------------------------------
def per_sample_lca(values: torch.Tensor, labels: Any, distance: Any, *, check_finite: bool = True) -> torch.Tensor:
    """[N] float32 ``D[y, argmax]`` per sample, NaN where the prediction is correct.

    Example:
        The rows of :func:`lca`'s example: row 0 (label 0) predicts class 1, row 1 is right, row 2
        (label 2) predicts class 0 (a tie with class 2, to the lower index):

        >>> import torch
        >>> distance = torch.tensor([[0.0, 1.0, 3.0], [1.0, 0.0, 3.0], [3.0, 3.0, 0.0]])
        >>> probs = torch.tensor([[0.25, 0.75, 0.0], [0.0, 1.0, 0.0], [0.5, 0.0, 0.5]])
        >>> labels = torch.tensor([0, 1, 2])
        >>> per_sample_lca(probs, labels, distance)
        tensor([1., nan, 3.])
    """
    values, labels, distance = _checked(values, labels, distance, check_finite)
    predicted = top1(values)
    result = distance[labels, predicted]
    return result.masked_fill(predicted == labels, float("nan"))


def lca(values: torch.Tensor, labels: Any, distance: Any, *, check_finite: bool = True) -> LCAScore:
    """Mean ``D[y, ŷ]`` over misclassified samples (top-1 ≠ y); NaN if there are none.

    Example:
        Three classes, 0 and 1 close (distance 1), 2 far from both (3). Row 0 (label 0) predicts 1,
        row 1 is right, row 2 (label 2) ties classes 0 and 2 and the tie goes to class 0:

        >>> import torch
        >>> distance = torch.tensor([[0.0, 1.0, 3.0], [1.0, 0.0, 3.0], [3.0, 3.0, 0.0]])
        >>> probs = torch.tensor([[0.25, 0.75, 0.0], [0.0, 1.0, 0.0], [0.5, 0.0, 0.5]])
        >>> labels = torch.tensor([0, 1, 2])
        >>> lca(probs, labels, distance)  # (D[0, 1] + D[2, 0]) / 2
        LCAScore(value=2.0, count=2, num_samples=3)
    """
    return lca_of_mistakes(per_sample_lca(values, labels, distance, check_finite=check_finite))


def lca_of_mistakes(per_sample: torch.Tensor) -> LCAScore:
    """:func:`lca` from the per-sample distances of :func:`per_sample_lca` (NaN where right): their mean
    over the mistakes.

    Example:
        >>> import torch
        >>> lca_of_mistakes(torch.tensor([1.0, float("nan"), 3.0]))
        LCAScore(value=2.0, count=2, num_samples=3)
    """
    mistakes = ~torch.isnan(per_sample)
    count = int(mistakes.sum())
    return _mean(per_sample[mistakes].double().sum(), count, len(per_sample))


def topk_lca(
    values: torch.Tensor,
    labels: Any,
    distance: Any,
    k: int = 5,
    *,
    check_finite: bool = True,
    chunk_rows: int | None = None,
) -> LCAScore:
    """Over samples whose top-1 is wrong: mean over them of mean_j ``D[y, ŷ_j]``, j = 1..k.

    Example:
        Three classes, 0 and 1 close (distance 1), 2 far from both (3). Row 0 (label 0) predicts 1,
        row 1 is right, row 2 (label 2) ties classes 0 and 2 and the tie goes to class 0. The
        mistakes' top-2 are (1, 0) and (0, 2):

        >>> import torch
        >>> distance = torch.tensor([[0.0, 1.0, 3.0], [1.0, 0.0, 3.0], [3.0, 3.0, 0.0]])
        >>> probs = torch.tensor([[0.25, 0.75, 0.0], [0.0, 1.0, 0.0], [0.5, 0.0, 0.5]])
        >>> labels = torch.tensor([0, 1, 2])
        >>> topk_lca(probs, labels, distance, k=2)  # ((1 + 0) / 2 + (3 + 0) / 2) / 2
        LCAScore(value=1.0, count=2, num_samples=3)
    """
    values, labels, distance = _checked(values, labels, distance, check_finite)
    total, count = torch.zeros((), dtype=torch.float64, device=values.device), 0
    for rows in _chunks(len(values), values.shape[1], values.device, chunk_rows):
        predicted = topk(values[rows], k)
        wrong = predicted[:, 0] != labels[rows]
        d = distance[labels[rows][wrong, None], predicted[wrong]]
        total += d.double().mean(dim=1).sum()
        count += int(wrong.sum())
    return _mean(total, count, len(values))


# -- ELCA ---------------------------------------------------------------------------------------
def per_sample_elca(
    values: torch.Tensor,
    labels: Any,
    distance: Any,
    *,
    kind: str,
    temperature: float = 1.0,
    exclude_gt: bool = False,
    check_finite: bool = True,
    chunk_rows: int | None = None,
) -> torch.Tensor:
    """[N] float32 ``Σ_k p_k · D[y, k]``; ``exclude_gt`` renormalises p over k ≠ y (NaN if that mass is 0).

    Rows are processed in chunks with torch's own intra-op threads: measured on 2 cores, this beats
    spreading chunks over worker threads (:func:`imagenet_suite.scoring.batching.map_chunks`) for
    this sequence of short element-wise passes. Finiteness is checked chunk by chunk while the
    chunk is in cache, not in a separate pass over the whole tensor.

    Example:
        The rows of :func:`elca`'s example: 0.75 · D[0, 1], 1 · D[1, 1] and 0.5 · D[2, 0]:

        >>> import torch
        >>> distance = torch.tensor([[0.0, 1.0, 3.0], [1.0, 0.0, 3.0], [3.0, 3.0, 0.0]])
        >>> probs = torch.tensor([[0.25, 0.75, 0.0], [0.0, 1.0, 0.0], [0.5, 0.0, 0.5]])
        >>> labels = torch.tensor([0, 1, 2])
        >>> per_sample_elca(probs, labels, distance, kind="probs")
        tensor([0.7500, 0.0000, 1.5000])
        >>> per_sample_elca(probs, labels, distance, kind="probs", exclude_gt=True)  # row 1: no mass left
        tensor([1., nan, 3.])
    """
    values, labels, distance = _checked(values, labels, distance, check_finite=False)
    _check_kind(kind, temperature)
    n, c = values.shape
    out = torch.empty(n, dtype=torch.float32, device=values.device)
    # work buffers reused across chunks: no per-chunk allocation (page faults dominate on CPU)
    chunks = list(_chunks(n, c, values.device, chunk_rows))
    weights_buf = torch.empty((chunks[0].stop if chunks else 0, c), dtype=torch.float32, device=values.device)
    rows_buf = torch.empty_like(weights_buf)
    for rows in chunks:
        chunk, size = values[rows], rows.stop - rows.start
        if check_finite and not _all_finite(chunk):
            raise HierarchyError(
                f"values contain NaN or ±inf (rows {rows.start}..{rows.stop - 1}); the scorer needs finite outputs"
            )
        weights = _unnormalized_probs(chunk, labels[rows], kind, temperature, exclude_gt, weights_buf[:size])
        weighted = torch.index_select(distance, 0, labels[rows], out=rows_buf[:size]).mul_(weights)
        torch.div(weighted.sum(dim=1), weights.sum(dim=1), out=out[rows])
    return out


def elca(
    values: torch.Tensor,
    labels: Any,
    distance: Any,
    *,
    kind: str,
    variant: str = DEFAULT_ELCA_VARIANT,
    temperature: float = 1.0,
    check_finite: bool = True,
    chunk_rows: int | None = None,
) -> LCAScore:
    """Expected LCA distance under the model's softmax; ``variant`` in :data:`ELCA_VARIANTS`.

    ``kind``: what ``values`` hold (``logits``, ``probs``, ``log_probs``), so softmax is applied
    exactly once; ``temperature`` divides logits / log-probs (must be 1 for probs).

    Example:
        Three classes, 0 and 1 close (distance 1), 2 far from both (3). Row 0 (label 0) puts 0.75
        on class 1, row 1 is right, row 2 (label 2) ties classes 0 and 2 (the tie goes to class 0):

        >>> import torch
        >>> distance = torch.tensor([[0.0, 1.0, 3.0], [1.0, 0.0, 3.0], [3.0, 3.0, 0.0]])
        >>> probs = torch.tensor([[0.25, 0.75, 0.0], [0.0, 1.0, 0.0], [0.5, 0.0, 0.5]])
        >>> labels = torch.tensor([0, 1, 2])

        Per row, sum_k p_k D[y, k] is 0.75, 0 and 0.5 * 3 = 1.5:

        >>> elca(probs, labels, distance, kind="probs")
        LCAScore(value=0.75, count=3, num_samples=3)
        >>> elca(probs, labels, distance, kind="probs", variant="mistakes")  # rows 0 and 2
        LCAScore(value=1.125, count=2, num_samples=3)

        ``exclude_gt`` renormalises p over the wrong classes: row 0 puts all of it on class 1
        (distance 1), row 2 on class 0 (distance 3); row 1 has none left and is not counted:

        >>> elca(probs, labels, distance, kind="probs", variant="exclude_gt")
        LCAScore(value=2.0, count=2, num_samples=3)
    """
    if variant not in ELCA_VARIANTS:
        raise HierarchyError(f"unknown ELCA variant {variant!r}; expected one of {list(ELCA_VARIANTS)}")
    per_sample = per_sample_elca(
        values,
        labels,
        distance,
        kind=kind,
        temperature=temperature,
        exclude_gt=variant == "exclude_gt",
        check_finite=check_finite,
        chunk_rows=chunk_rows,
    )
    keep = ~torch.isnan(per_sample)
    if variant == "mistakes":
        keep &= top1(values) != torch.as_tensor(labels, device=values.device).long()
    return _mean(per_sample[keep].double().sum(), int(keep.sum()), len(per_sample))


def _check_kind(kind: str, temperature: float) -> None:
    if kind not in KINDS:
        raise HierarchyError(f"kind={kind!r}: expected one of {list(KINDS)} (what the values tensor holds)")
    if not temperature > 0:
        raise HierarchyError(f"temperature must be > 0, got {temperature}")
    if kind == "probs" and temperature != 1.0:
        raise HierarchyError("temperature applies to logits or log_probs; got kind='probs' with temperature != 1")


def _unnormalized_probs(
    chunk: torch.Tensor, labels: torch.Tensor, kind: str, temperature: float, exclude_gt: bool, out: torch.Tensor
) -> torch.Tensor:
    """Non-negative float32 weights ∝ the model's probabilities, written into ``out`` (same shape
    as ``chunk``), the ground truth masked if ``exclude_gt``. ``chunk`` (the caller's) is never written.

    Logits / log-probs: ``2^((v − max) · log2(e) / T)`` = ``exp((v − max) / T)`` (exp2 is about twice
    as fast as exp on the CPU); with ``exclude_gt`` the GT is set to −inf *before* the max, so the
    remaining mass is exact even when p(GT) rounds to 1. Half-precision chunks are upcast first.
    """
    scale = LOG2_E / temperature
    if kind == "probs" or exclude_gt or chunk.dtype not in (torch.float32, torch.float64):
        out.copy_(chunk)
        if kind == "probs":
            return out.scatter_(1, labels[:, None], 0.0) if exclude_gt else out
        if exclude_gt:
            out.scatter_(1, labels[:, None], float("-inf"))
        chunk = out
    shift = chunk.amax(dim=1, keepdim=True).mul_(-scale)  # −max · log2(e) / T per row
    return torch.add(shift, chunk, alpha=scale, out=out).exp2_()  # one pass: v·s − max·s
