"""Class-wise ACE on bootstrap resamples by the per-resample method (``method="exact-loop"`` of
:func:`~imagenet_suite.scoring.metrics.ace_replicates.adaptive_calibration_error_replicates`): each
resample's edges and bin sums from a pass over every class's N sorted probabilities, weighted by the
resample's counts. The reference the anchored method is tested against, and what it falls back to for
the (resample, class) pairs its windows cannot settle.

A resample is the images repeated by their counts, so each class's probabilities are sorted once and
only weighted per resample: the adaptive edges are the order statistics of the weighted values (the
value at the first sorted position whose cumulative count exceeds the rank), bins are assigned as
``np.digitize`` does, and the sums run over the counts. The cost is a pass over all N x C probabilities
per resample (``benchmarks/bench_bootstrap.py`` measures it against the anchored method).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..batching import column_chunks, map_chunks, transposed_float32
from ..threads import cpu_workers
from .calibration import ACE_BINS, ACE_BLOCK_ELEMENTS, PREFIX_STRIDE, _edge_positions, _positives, _prefix_sums
from .row_statistics import SoftmaxNormalizer


def exact_loop_replicates(
    scores: torch.Tensor,
    labels: torch.Tensor,
    normalizer: SoftmaxNormalizer,
    counts: torch.Tensor,
    num_bins: int = ACE_BINS,
    threshold: float = 0.0,
    columns: torch.Tensor | None = None,
) -> torch.Tensor:
    """``[R]`` float64: :func:`~imagenet_suite.scoring.metrics.calibration.adaptive_calibration_error`
    recomputed on each bootstrap resample, ``counts`` ``[R, N]`` (how often each image is drawn), one pass
    over the sorted probabilities per resample (see the module docstring).

    Example:
        The first example of :func:`~imagenet_suite.scoring.metrics.calibration.adaptive_calibration_error`
        (ACE 0.25 with 2 bins); counts of 1 give it back, and doubling image 0 while dropping image 1 equals
        the metric on the rows 0, 0, 2, 3:

        >>> from imagenet_suite.scoring import row_statistics
        >>> probs = torch.tensor([[0.875, 0.125], [0.75, 0.25], [0.25, 0.75], [0.125, 0.875]])
        >>> labels = torch.tensor([0, 1, 1, 1])
        >>> normalizer = row_statistics(probs, "probs", labels).normalizer
        >>> counts = torch.tensor([[1, 1, 1, 1], [2, 0, 1, 1]])
        >>> from imagenet_suite.scoring.metrics.calibration import adaptive_calibration_error
        >>> ace = exact_loop_replicates(probs, labels, normalizer, counts, num_bins=2)
        >>> rows = torch.tensor([0, 0, 2, 3])
        >>> direct = adaptive_calibration_error(probs[rows], labels[rows], row_statistics(probs[rows], "probs", labels[rows]).normalizer, num_bins=2)
        >>> ace.tolist() == [0.25, direct]
        True
    """
    n_rows = scores.shape[0]
    width = scores.shape[1] if columns is None else len(columns)
    if n_rows == 0 or width == 0:
        return torch.full((counts.shape[0],), math.nan, dtype=torch.float64)
    small = counts.numel() == 0 or int(counts.max()) < 1 << 15  # always, short of absurd luck: half the memory traffic
    counts = counts.to(scores.device, torch.int16 if small else torch.int32)
    workers = cpu_workers() if scores.device.type == "cpu" else 1
    blocks = column_chunks(n_rows, width, ACE_BLOCK_ELEMENTS, workers)

    def block_errors(block: slice) -> torch.Tensor:
        block_scores = scores[:, block] if columns is None else scores.index_select(1, columns[block])
        by_class = normalizer.probabilities_by_class_(transposed_float32(block_scores))
        positives = _positives(by_class, labels, block.start, threshold, with_rows=True)
        values, order = _sorted_with_order(by_class)
        return _weighted_class_errors(values, order, positives, counts, num_bins, threshold)

    errors = map_chunks(block_errors, blocks, scores.device)
    return (torch.cat(errors, dim=1).sum(dim=1) / width).cpu()


def _sorted_with_order(by_class: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row sorted ascending and the positions it came from (numpy on the CPU: several times
    faster there). The order among equal values does not matter: equal values share a bin."""
    if by_class.device.type == "cpu":
        order = np.argsort(by_class.numpy(), axis=1).astype(np.int32)
        return torch.from_numpy(np.take_along_axis(by_class.numpy(), order, axis=1)), torch.from_numpy(order)
    values, order = torch.sort(by_class, dim=1)
    return values, order


def _weighted_class_errors(values, order, positives, counts: torch.Tensor, num_bins: int, threshold: float):
    """``[R, W]`` float64 class errors of a block of classes (sorted ``values`` ``[W, N]``, ``order``) on each
    resample of ``counts`` ``[R, N]``, as many resamples at a time as fit in :data:`ACE_BLOCK_ELEMENTS`."""
    width, n_rows = values.shape
    limit = torch.full((width, 1), threshold, dtype=values.dtype, device=values.device)
    skipped = torch.searchsorted(values, limit, right=True)[:, 0]
    step = max(1, ACE_BLOCK_ELEMENTS // max(1, width * n_rows))
    parts = [
        _weighted_errors_of(values, order, skipped, positives, counts[start : start + step], num_bins)
        for start in range(0, counts.shape[0], step)
    ]
    return torch.cat(parts) if parts else torch.empty(0, width, dtype=torch.float64, device=values.device)


def _drawn(weights: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """``weights[:, order]`` (numpy's take on the CPU: about twice as fast as torch's indexing there)."""
    if weights.device.type == "cpu":
        return torch.from_numpy(np.take(weights.numpy(), order.numpy(), axis=1))
    return weights[:, order]


def _weighted_prefix_sums(drawn: torch.Tensor, values: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """float64 ``[G, W, P]``: the sum of ``drawn[g, w, :p] * values[w, :p]`` for each ``p = positions[g, w, :]``
    (integer counts times float32 values, added in float64). On the CPU as
    :func:`~imagenet_suite.scoring.metrics.calibration._prefix_sums_numpy` does
    it, each run of ``PREFIX_STRIDE`` products summed by ``einsum`` without materializing the products;
    elsewhere :func:`_prefix_sums` of the products."""
    group, width, n_rows = drawn.shape
    if drawn.device.type != "cpu":
        flat = (drawn * values.double()).view(group * width, n_rows)
        return _prefix_sums(flat, positions.reshape(group * width, -1)).view(group, width, -1)
    counts, value, where = drawn.numpy(), values.numpy(), positions.numpy()
    stride = PREFIX_STRIDE
    runs = n_rows // stride
    run = np.minimum(where // stride, runs)
    left = where - run * stride
    g, w = np.arange(group)[:, None, None], np.arange(width)[None, :, None]
    run_prefix = np.zeros((group, width, runs + 1))
    rest = np.zeros(where.shape)
    if runs:
        counted = counts[..., : runs * stride].reshape(group, width, runs, stride)
        valued = value[:, : runs * stride].reshape(width, runs, stride)
        product = {"dtype": np.float64, "casting": "unsafe"}
        np.cumsum(np.einsum("gwrs,wrs->gwr", counted, valued, **product), axis=2, out=run_prefix[..., 1:])
        inside = np.minimum(run, runs - 1)
        mask = np.arange(stride) < left[..., None]
        rest = np.einsum("gwps,gwps->gwp", counted[g, w, inside] * mask, valued[w, inside], **product)
    tail = np.multiply(counts[..., runs * stride :], value[:, runs * stride :], dtype=np.float64)
    tail_prefix = np.zeros((group, width, tail.shape[2] + 1))
    np.cumsum(tail, axis=2, out=tail_prefix[..., 1:])
    rest = np.where(run == runs, tail_prefix[g, w, np.minimum(left, tail.shape[2])], rest)
    return torch.from_numpy(run_prefix[g, w, run] + rest)


def _weighted_errors_of(values, order, skipped, positives, weights: torch.Tensor, num_bins: int) -> torch.Tensor:
    """``[G, W]``: the class errors on the ``G`` resamples of ``weights`` ``[G, N]`` at once."""
    (width, n_rows), group = values.shape, weights.shape[0]
    drawn = _drawn(weights, order)  # [G, W, N]: the count of the image at each sorted position
    cumulative = torch.cumsum(drawn, dim=2, dtype=torch.int32)
    last_skipped = (skipped - 1).clamp(min=0)[None, :, None].expand(group, width, 1)
    before = torch.where(skipped > 0, cumulative.gather(2, last_skipped)[..., 0], 0)  # [G, W] weight <= threshold
    kept = cumulative[..., -1] - before
    distinct, which = torch.unique(kept, return_inverse=True)
    ranks = torch.stack([_edge_positions(int(n), num_bins) for n in distinct.tolist()]).to(values.device)[which]
    positions = torch.searchsorted(cumulative, (before[..., None] + ranks).to(torch.int32), right=True)
    edges = values[torch.arange(width, device=values.device)[None, :, None], positions.clamp(max=n_rows - 1)]
    edges = torch.cat([edges, torch.ones((group, width, 1), dtype=values.dtype, device=values.device)], dim=2)
    per_class = edges.permute(1, 0, 2).reshape(width, -1)  # searchsorted per class row, all resamples at once
    starts = torch.searchsorted(values, per_class, right=False).view(width, group, -1).permute(1, 0, 2)
    starts = torch.maximum(starts, skipped[None, :, None])
    end = torch.full((group, width, 1), n_rows, dtype=starts.dtype, device=values.device)
    bounds = torch.cat([skipped[None, :, None].expand(group, width, 1), starts, end], dim=2)
    prob_sums = torch.diff(_weighted_prefix_sums(drawn, values, bounds), dim=2)
    local, probabilities, rows = positives
    bins = (edges[:, local] <= probabilities[None, :, None]).sum(dim=2)  # [G, P]
    slot = (torch.arange(group, device=values.device)[:, None] * width + local[None, :]) * (num_bins + 1) + bins
    label_sums = torch.zeros(group * width * (num_bins + 1), dtype=torch.float64, device=values.device)
    label_sums.index_add_(0, slot.reshape(-1), weights[:, rows].double().reshape(-1))
    errors = (label_sums.view(group, width, -1) - prob_sums).abs().sum(dim=2) / kept.clamp(min=1)
    return torch.where(kept > 0, errors, torch.zeros_like(errors))
