"""Calibration: top-label ECE in three named binning conventions, class-wise adaptive ACE, and CE.

ECE = sum over bins of (n_b / N) * |accuracy_b - mean confidence_b| on the top-1 confidence (the
largest softmax probability) and top-1 correctness. Conventions differ only in binning (bin count,
edge rule, and where a confidence of exactly 1.0 goes), after the three implementations named below:

* ``torchmetrics`` (default; torchmetrics >= 1.0, used by QUBA): 15 equal-width bins ``[lo, hi)``
  with float32 edges, plus an extra bin holding confidence == 1.0 exactly;
* ``guo`` (Guo et al. 2017 / gpleiss ``_ECELoss`` / torchmetrics < 1.0): 15 bins ``(lo, hi]``;
  confidence 0 falls in no bin but still counts in N;
* ``netcal`` (netcal ``ECE`` defaults): 10 bins, confidences clipped to ``[eps, 1 - eps]`` (float32
  eps), float64 edges, bins ``[lo, hi)`` with the last one closed. (netcal itself counts samples with
  numpy's float64 edges but averages them with scipy's edges cast to the input dtype, so for float32
  inputs equal to float32(0.7) or float32(0.9) it disagrees with itself; we bin consistently.)

ACE (Beyond Accuracy, Hesse et al. 2025, Eqs. 7-9; Nixon et al. 2019, Google robustness_metrics
``GeneralCalibrationError`` with ``binning_scheme='adaptive', class_conditional=True, max_prob=False,
threshold=0, norm='l1', num_bins=15``, the implementation QUBA copied, reproduced to float64
rounding): for every class j, the n probabilities ``p[:, j]`` above the threshold get 15 upper bin
edges, the order statistics at ``round(linspace(0, n, 15, endpoint=False))[1:]`` followed by 1.0,
and are assigned like ``np.digitize``, so a probability of exactly 1.0 has a 16th bin of its own;
class error = sum_b (n_b/n) |acc_b - conf_b|; ACE = mean over classes. CE = sqrt(ECE * ACE) (Hesse
et al. 2025, Eq. 9). Each class's values are sorted (numpy's vectorized sort on the CPU: measured
faster than selecting the 14 order statistics with ``np.partition`` or ``torch.kthvalue``) and the
bins summed from float64 sums of runs of the sorted values.

Counts are int64, sums float64; everything runs on the scores' device.
"""

from __future__ import annotations

import functools
import math
import threading
from dataclasses import dataclass

import numpy as np
import torch

from ..batching import column_chunks, map_chunks, sort_rows_, transposed_float32
from ..report_names import DEFAULT_ECE_CONVENTION, ECE_CONVENTIONS
from ..threads import cpu_workers
from .row_statistics import SoftmaxNormalizer

ACE_BINS = 15
ACE_BLOCK_ELEMENTS = 1 << 22


@dataclass(frozen=True)
class CalibrationBins:
    """Per-bin statistics of one ECE convention (float64/int64 CPU tensors of equal length).

    ``lower``/``upper`` are the bin's edges (the torchmetrics 1.0-bin has lower == upper == 1).
    """

    convention: str
    lower: torch.Tensor
    upper: torch.Tensor
    count: torch.Tensor
    correct: torch.Tensor
    confidence_sum: torch.Tensor
    total: int

    @property
    def accuracy(self) -> torch.Tensor:
        return self.correct.double() / self.count.clamp(min=1)

    @property
    def mean_confidence(self) -> torch.Tensor:
        return self.confidence_sum / self.count.clamp(min=1)

    @property
    def expected_calibration_error(self) -> float:
        """Sum over bins of (n_b / N) |accuracy_b - confidence_b|; NaN for N == 0."""
        if self.total == 0:
            return math.nan
        gaps = (self.correct.double() - self.confidence_sum).abs()  # n_b * |acc_b - conf_b|
        return float(gaps.sum() / self.total)

    def to_json(self) -> dict[str, list[float] | list[int]]:
        """The bins as JSON lists (a report's ``reliability[convention]``: what a reliability diagram needs).

        Example:
            >>> import torch
            >>> bins = calibration_bins(torch.tensor([0.875, 0.625]), torch.tensor([True, False]), "guo")
            >>> data = bins.to_json()
            >>> sorted(data), sum(data["count"]), len(data["lower"])
            (['confidence_sum', 'correct', 'count', 'lower', 'upper'], 2, 15)
            >>> CalibrationBins.from_json("guo", data).expected_calibration_error == bins.expected_calibration_error
            True
        """
        return {
            "lower": self.lower.tolist(),
            "upper": self.upper.tolist(),
            "count": self.count.tolist(),
            "correct": self.correct.tolist(),
            "confidence_sum": self.confidence_sum.tolist(),
        }

    @classmethod
    def from_json(cls, convention: str, data: dict[str, list]) -> CalibrationBins:
        """The bins :meth:`to_json` wrote (checked by the suite.json schema where they are read)."""
        count = torch.tensor(data["count"], dtype=torch.int64)
        return cls(
            convention,
            torch.tensor(data["lower"], dtype=torch.float64),
            torch.tensor(data["upper"], dtype=torch.float64),
            count,
            torch.tensor(data["correct"], dtype=torch.int64),
            torch.tensor(data["confidence_sum"], dtype=torch.float64),
            int(count.sum()),
        )


def calibration_bins(
    confidence: torch.Tensor, correct: torch.Tensor, convention: str = DEFAULT_ECE_CONVENTION, n_bins: int | None = None
) -> CalibrationBins:
    """Bin top-1 confidences (``[N]`` float) with their correctness (``[N]`` bool) by ``convention``.

    Example:
        Two images at confidence 0.875 (both right) fall in the 14th of torchmetrics' 15 bins,
        [13/15, 14/15); two at 0.625 (one right) in the 10th, [9/15, 10/15):

        >>> import torch
        >>> confidence = torch.tensor([0.875, 0.875, 0.625, 0.625])
        >>> correct = torch.tensor([True, True, True, False])
        >>> bins = calibration_bins(confidence, correct)
        >>> len(bins.count)  # 15 bins and the bin of confidence == 1.0
        16
        >>> used = bins.count.nonzero().flatten()
        >>> used.tolist(), bins.accuracy[used].tolist(), bins.mean_confidence[used].tolist()
        ([9, 13], [0.5, 1.0], [0.625, 0.875])
        >>> bins.expected_calibration_error  # 2/4 * |0.5 - 0.625| + 2/4 * |1.0 - 0.875|
        0.125
    """
    if convention not in ECE_CONVENTIONS:
        raise ValueError(f"unknown ECE convention {convention!r}; known: {sorted(ECE_CONVENTIONS)}")
    n_bins = n_bins or ECE_CONVENTIONS[convention]
    confidence = confidence.float()
    index, values, lower, upper, slots = _BINNERS[convention](confidence, n_bins)
    inside = (index >= 0) & (index < slots)
    index, values, hits = index[inside], values[inside], correct[inside]
    count = torch.bincount(index, minlength=slots)
    right = torch.bincount(index[hits], minlength=slots)
    sums = torch.zeros(slots, dtype=torch.float64, device=index.device).index_add_(0, index, values.double())
    return CalibrationBins(convention, lower, upper, count.cpu(), right.cpu(), sums.cpu(), int(confidence.numel()))


def expected_calibration_error(
    confidence: torch.Tensor, correct: torch.Tensor, convention: str = DEFAULT_ECE_CONVENTION, n_bins: int | None = None
) -> float:
    """Top-label ECE of ``convention`` (``torchmetrics`` default, ``guo``, ``netcal``).

    Example:
        ECE = sum over bins of (n_b / N) |accuracy_b - confidence_b|. Here the only confidence of
        its bin is 0.75 (right: a gap of 0.25), the other two share a bin at 0.5 (one right: no gap):

        >>> import torch
        >>> confidence = torch.tensor([0.75, 0.5, 0.5])
        >>> correct = torch.tensor([True, True, False])
        >>> expected_calibration_error(confidence, correct)  # 1/3 * 0.25
        0.08333333333333333

        A confidence of exactly 1.0 has a bin of its own in torchmetrics >= 1.0; Guo et al.'s
        (lo, hi] bins put it with 0.96875, where a wrong 1.0 and a right 0.96875 partly cancel:

        >>> confidence, correct = torch.tensor([1.0, 0.96875]), torch.tensor([False, True])
        >>> expected_calibration_error(confidence, correct)  # 1/2 * |0 - 1| + 1/2 * |1 - 0.96875|
        0.515625
        >>> expected_calibration_error(confidence, correct, "guo")  # |1/2 - (1 + 0.96875) / 2|
        0.484375
    """
    return calibration_bins(confidence, correct, convention, n_bins).expected_calibration_error


def _torchmetrics_bins(confidence: torch.Tensor, n_bins: int):
    edges = torch.linspace(0, 1, n_bins + 1, dtype=torch.float32, device=confidence.device)
    index = torch.bucketize(confidence, edges, right=True) - 1  # [lo, hi); conf == 1.0 -> slot n_bins
    lower = torch.cat([edges[:-1], edges[-1:]]).double().cpu()
    upper = torch.cat([edges[1:], edges[-1:]]).double().cpu()
    return index, confidence, lower, upper, n_bins + 1


def _guo_bins(confidence: torch.Tensor, n_bins: int):
    edges = torch.linspace(0, 1, n_bins + 1, dtype=torch.float32, device=confidence.device)
    index = torch.bucketize(confidence, edges, right=False) - 1  # (lo, hi]; conf == 0 -> -1 (no bin)
    return index, confidence, edges[:-1].double().cpu(), edges[1:].double().cpu(), n_bins


def _netcal_bins(confidence: torch.Tensor, n_bins: int):
    eps = float(np.finfo(np.float32).eps)
    clipped = confidence.clamp(eps, 1.0 - eps).double()
    edges = torch.from_numpy(np.linspace(0.0, 1.0, n_bins + 1)).to(confidence.device)
    index = torch.bucketize(clipped, edges, right=True) - 1  # [lo, hi), last bin closed
    index = torch.where(clipped == edges[-1], n_bins - 1, index)
    return index, clipped, edges[:-1].cpu(), edges[1:].cpu(), n_bins


_BINNERS = {"torchmetrics": _torchmetrics_bins, "guo": _guo_bins, "netcal": _netcal_bins}


def adaptive_calibration_error(
    scores: torch.Tensor,
    labels: torch.Tensor,
    normalizer: SoftmaxNormalizer,
    num_bins: int = ACE_BINS,
    threshold: float = 0.0,
    columns: torch.Tensor | None = None,
) -> float:
    """Class-wise adaptive calibration error (Beyond Accuracy's ACE) over all classes of the score space.

    ``scores``: ``[N, C]``; ``labels``: ``[N]`` int64 positions in the (sliced) column space;
    ``normalizer``: from :func:`row_statistics` on the same scores (turns any column block into
    softmax probabilities, which lie in [0, 1], as robustness_metrics requires); ``columns``: the
    class subset the scores are sliced to, if any. Columns are processed in blocks (threads on the
    CPU); each block's probabilities are sorted per class, so no [N, C] probability tensor is ever
    materialized.

    The binning is Google robustness_metrics' ``GeneralCalibrationError`` (Nixon et al. 2019;
    ``binning_scheme='adaptive', class_conditional=True, max_prob=False, norm='l1'``), the code
    QUBA copied: for class j, the n probabilities ``p[:, j]`` above ``threshold`` (compared in
    float32, as numpy compares a float32 array with a Python float) get ``num_bins`` upper edges,
    the order statistics at positions ``round(linspace(0, n, num_bins, endpoint=False))[1:]``
    (capped at n - 1) followed by 1.0, and a value's bin is the number of upper edges <= it
    (``np.digitize``): a value equal to an edge goes to the bin above, and a probability of exactly
    1.0 (a float32 softmax whose top logit leads by ~17 or more) to a bin of its own after the last
    edge. Class j's error is sum_b |#labelled j in b - sum of p_j in b| / n (0 when no probability
    is above the threshold), and ACE the mean over all classes of the space.

    Example:
        Four images, two classes; class j's error is (1/N) sum over its bins |#labelled j - sum p_j|.
        With 2 equal-mass bins, class 0's probabilities sort into {0.125, 0.25} (no image of class 0:
        |0 - 0.375|) and {0.75, 0.875} (one: |1 - 1.625|), so its error is (0.375 + 0.625) / 4 =
        0.25, and class 1's mirror image too:

        >>> import torch
        >>> from imagenet_suite.scoring import row_statistics
        >>> probs = torch.tensor([[0.875, 0.125], [0.75, 0.25], [0.25, 0.75], [0.125, 0.875]])
        >>> labels = torch.tensor([0, 1, 1, 1])
        >>> normalizer = row_statistics(probs, "probs", labels).normalizer
        >>> adaptive_calibration_error(probs, labels, normalizer, num_bins=2)
        0.25

        With the default 15 bins each of the four distinct values has a bin of its own, so a class's
        error is the mean |1[label = j] - p_j| = (0.125 + 0.75 + 0.25 + 0.125) / 4:

        >>> adaptive_calibration_error(probs, labels, normalizer)
        0.3125

        A probability of exactly 1.0 has a bin of its own. Class 0's probabilities 0.2, 0.6, 0.8,
        1.0 (one image of class 0, the third) get the upper edges 0.8 (position round(4/2) = 2)
        and 1.0: bins {0.2, 0.6} |0 - 0.8|, {0.8} |1 - 0.8| and {1.0} |0 - 1|, an error of 2/4.
        Class 1's 0.8, 0.4, 0.2, 0.0 lose the 0.0 to the threshold; n = 3 gives the edges 0.8
        (position round(1.5) = 2) and 1.0: bins {0.4, 0.2} |1 - 0.6| and {0.8} |1 - 0.8|, an error
        of 0.6/3. ACE = (0.5 + 0.2) / 2; with the 1.0 merged into the bin of 0.8, class 0 would
        have (0.8 + 0.8)/4 and ACE 0.30:

        >>> probs = torch.tensor([[0.2, 0.8], [0.6, 0.4], [0.8, 0.2], [1.0, 0.0]])
        >>> labels = torch.tensor([1, 1, 0, 1])
        >>> normalizer = row_statistics(probs, "probs", labels).normalizer
        >>> round(adaptive_calibration_error(probs, labels, normalizer, num_bins=2), 6)  # float32 inputs
        0.35
    """
    n_rows = scores.shape[0]
    width = scores.shape[1] if columns is None else len(columns)
    if n_rows == 0 or width == 0:
        return math.nan
    workers = cpu_workers() if scores.device.type == "cpu" else 1
    blocks = column_chunks(n_rows, width, ACE_BLOCK_ELEMENTS, workers)
    buffers = threading.local()  # one [W, N] float32 buffer per thread, reused block after block

    def block_error(block: slice) -> torch.Tensor:
        block_scores = scores[:, block] if columns is None else scores.index_select(1, columns[block])
        size = (block.stop - block.start) * n_rows
        buffer = getattr(buffers, "values", None)
        if buffer is None or buffer.numel() < size:
            buffer = buffers.values = torch.empty(size, dtype=torch.float32, device=scores.device)
        by_class = transposed_float32(block_scores, out=buffer[:size].view(-1, n_rows))
        by_class = normalizer.probabilities_by_class_(by_class)
        return _class_errors(by_class, labels, block.start, num_bins, threshold)

    errors = map_chunks(block_error, blocks, scores.device)
    return float(torch.cat(errors).sum() / width)


def _class_errors(
    by_class: torch.Tensor, labels: torch.Tensor, first_class: int, num_bins: int, threshold: float
) -> torch.Tensor:
    """Per-class adaptive calibration error (float64 ``[W]``) of a block of classes' probabilities
    ``by_class`` ``[W, N]`` (row j = class first_class + j over all N images; sorted in place)."""
    width, n_rows = by_class.shape
    positives = _positives(by_class, labels, first_class, threshold)
    by_class = sort_rows_(by_class)
    limit = torch.full((width, 1), threshold, dtype=by_class.dtype, device=by_class.device)
    skipped = torch.searchsorted(by_class, limit, right=True)[:, 0]
    kept = n_rows - skipped
    edges, bounds = _adaptive_edges(by_class, skipped, kept, num_bins)
    prob_sums = _bin_sums(by_class, bounds)
    label_sums = _positives_per_bin(positives, edges, width)
    errors = (label_sums - prob_sums).abs().sum(dim=1) / kept.clamp(min=1)
    return torch.where(kept > 0, errors, torch.zeros_like(errors))


def _adaptive_edges(by_class: torch.Tensor, skipped: torch.Tensor, kept: torch.Tensor, num_bins: int):
    """Upper bin edges ``[W, num_bins]`` (order statistics, then 1.0) and bin boundaries
    ``[W, num_bins + 2]`` (positions in the sorted rows) of the ``num_bins + 1`` bins.

    Bin b holds values in [edge_{b-1}, edge_b), i.e. sorted positions [first >= edge_{b-1}, first
    >= edge_b); the first bin starts after the skipped (<= threshold) values, and the last, the
    values >= 1.0, ends at N.
    """
    width, n_rows = by_class.shape
    distinct, which = torch.unique(kept, return_inverse=True)  # nearly always one value: N
    per_count = torch.stack([_edge_positions(int(n), num_bins) for n in distinct.tolist()])
    offsets = per_count.to(by_class.device)[which]
    positions = (skipped[:, None] + offsets).clamp(max=n_rows - 1)
    one = torch.ones((width, 1), dtype=by_class.dtype, device=by_class.device)
    edges = torch.cat([by_class.gather(1, positions), one], dim=1)
    starts = torch.maximum(torch.searchsorted(by_class, edges, right=False), skipped[:, None])
    end = torch.full((width, 1), n_rows, dtype=starts.dtype, device=starts.device)
    return edges, torch.cat([skipped[:, None], starts, end], dim=1)


@functools.lru_cache(maxsize=256)
def _edge_positions(n: int, num_bins: int) -> torch.Tensor:
    """Positions of the order-statistic upper edges among n sorted values, as robustness_metrics'
    ``_get_adaptive_bins`` computes them (before it appends 1.0)."""
    if n == 0:
        return torch.zeros(num_bins - 1, dtype=torch.int64)
    indices = np.round(np.linspace(0, n, num_bins, endpoint=False)).astype(np.int64)
    return torch.from_numpy(np.minimum(indices, n - 1)[1:].copy())


def _positives(
    by_class: torch.Tensor, labels: torch.Tensor, first_class: int, threshold: float, with_rows: bool = False
):
    """``(class in block, probability)`` of every image labelled with a class of the block whose
    probability for its label is above the threshold (read before sorting); ``with_rows``: and the image."""
    width = by_class.shape[0]
    rows = ((labels >= first_class) & (labels < first_class + width)).nonzero()[:, 0]
    local = labels[rows] - first_class
    values = by_class[local, rows]
    keep = values > threshold
    return (local[keep], values[keep], rows[keep]) if with_rows else (local[keep], values[keep])


def _positives_per_bin(positives, edges: torch.Tensor, width: int) -> torch.Tensor:
    """Number of labelled images per class and bin (float64 ``[W, B + 1]`` for ``B`` upper edges); a
    value's bin is the number of upper edges <= it, as ``np.digitize``."""
    local, values = positives
    n_bins = edges.shape[1] + 1
    bins = (edges[local] <= values[:, None]).sum(dim=1)
    counts = torch.zeros(width * n_bins, dtype=torch.float64, device=edges.device)
    counts.index_add_(0, local * n_bins + bins, torch.ones_like(values, dtype=torch.float64))
    return counts.view(width, n_bins)


PREFIX_STRIDE = 128  # values per float64 partial sum of a sorted row (see _prefix_sums)


def _bin_sums(by_class: torch.Tensor, bounds: torch.Tensor) -> torch.Tensor:
    """float64 ``[W, B]`` sums of each sorted row over ``[bounds[:, b], bounds[:, b + 1])``
    (non-decreasing bounds in [0, N])."""
    prefix = _prefix_sums(by_class, bounds)
    return prefix[:, 1:] - prefix[:, :-1]


def _prefix_sums(rows: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """float64 ``[W, P]``: the sum of ``rows[w, :positions[w, p]]`` (float32 values added in float64).

    One pass adds each run of ``PREFIX_STRIDE`` values in float64; a prefix is the running sum of
    the runs before its position plus the fewer than ``PREFIX_STRIDE`` values left. numpy on the
    CPU (several times faster than torch there), torch elsewhere.
    """
    return (_prefix_sums_numpy if rows.device.type == "cpu" else _prefix_sums_torch)(rows, positions)


def _prefix_sums_numpy(rows: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """:func:`_prefix_sums` of a contiguous CPU tensor: the values left are read from a copy of the
    position's run (or from the row's last, shorter run)."""
    values, where = rows.numpy(), positions.numpy()
    width, n_rows = values.shape
    stride = PREFIX_STRIDE
    runs = n_rows // stride
    run = np.minimum(where // stride, runs)
    left = where - run * stride  # values of the position's run before it
    row = np.arange(width)[:, None]
    run_prefix = np.zeros((width, runs + 1))
    rest = np.zeros(where.shape)
    if runs:
        in_runs = values[:, : runs * stride].reshape(width, runs, stride)  # a view
        np.cumsum(np.add.reduce(in_runs, axis=2, dtype=np.float64), axis=1, out=run_prefix[:, 1:])
        window = in_runs[row, np.minimum(run, runs - 1)]  # [W, P, stride] copies of the runs
        window[np.arange(stride) >= left[:, :, None]] = 0
        rest = np.add.reduce(window, axis=2, dtype=np.float64)
    tail = values[:, runs * stride :]
    tail_prefix = np.zeros((width, tail.shape[1] + 1))
    np.cumsum(tail, axis=1, dtype=np.float64, out=tail_prefix[:, 1:])
    rest = np.where(run == runs, tail_prefix[row, np.minimum(left, tail.shape[1])], rest)
    return torch.from_numpy(run_prefix[row, run] + rest)


def _prefix_sums_torch(rows: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """:func:`_prefix_sums` on any device: the values left are gathered in a ``PREFIX_STRIDE``-wide
    window starting at the position's run."""
    width, n_rows = rows.shape
    stride = PREFIX_STRIDE
    runs = n_rows // stride
    run_prefix = torch.zeros(width, runs + 1, dtype=torch.float64, device=rows.device)
    if runs:
        run_sums = rows[:, : runs * stride].reshape(width, runs, stride).sum(dim=2, dtype=torch.float64)
        torch.cumsum(run_sums, dim=1, out=run_prefix[:, 1:])
    run = torch.clamp(positions // stride, max=runs)
    window = (run * stride)[:, :, None] + torch.arange(stride, device=rows.device)
    values = rows.gather(1, window.clamp(max=n_rows - 1).view(width, -1)).view(window.shape)
    zero = torch.zeros((), dtype=values.dtype, device=values.device)
    rest = torch.where(window < positions[:, :, None], values, zero).sum(dim=2, dtype=torch.float64)
    return run_prefix.gather(1, run) + rest


# ----------------------------------------------------------------------------------------- on bootstrap resamples


def ece_replicates(
    confidence: torch.Tensor,
    correct: torch.Tensor,
    counts: torch.Tensor,
    convention: str = DEFAULT_ECE_CONVENTION,
    n_bins: int | None = None,
) -> torch.Tensor:
    """``[R]`` float64: the top-label ECE of ``convention`` on each bootstrap resample, ``counts`` ``[R, N]``
    (how often each image is drawn; :func:`~imagenet_suite.scoring.metrics.uncertainty.bootstrap_counts`).

    The bins are fixed by each image's confidence, so a resample only reweights them: ECE =
    sum_b |sum_{i in b} c_i (correct_i - conf_i)| / sum_i c_i, which for counts of 1 is
    :func:`expected_calibration_error`; the bins' sums of all resamples are one product with the
    images' gaps laid out by bin.

    Example:
        The images of :func:`calibration_bins`' example; drawing the wrong 0.625 twice and the right one
        never leaves its bin with accuracy 0 (a gap of 2 · 0.625) and the 0.875 bin with a gap of 2 · 0.125:

        >>> confidence = torch.tensor([0.875, 0.875, 0.625, 0.625])
        >>> correct = torch.tensor([True, True, True, False])
        >>> ece_replicates(confidence, correct, torch.tensor([[1, 1, 1, 1], [1, 1, 0, 2]])).tolist()
        [0.125, 0.375]
    """
    if convention not in ECE_CONVENTIONS:
        raise ValueError(f"unknown ECE convention {convention!r}; known: {sorted(ECE_CONVENTIONS)}")
    index, values, _, _, slots = _BINNERS[convention](confidence.float(), n_bins or ECE_CONVENTIONS[convention])
    inside = (index >= 0) & (index < slots)
    gaps = torch.where(inside, correct.double() - values.double(), torch.zeros((), dtype=torch.float64))
    by_bin = torch.zeros(len(gaps), slots, dtype=torch.float64, device=gaps.device)
    by_bin.scatter_(1, index.clamp(0, slots - 1)[:, None], gaps[:, None])  # [N, slots]: each image's gap in its bin
    weights = counts.to(gaps.device, torch.float64)
    return ((weights @ by_bin).abs().sum(dim=1) / weights.sum(dim=1)).cpu()


def calibration_error(ece: float, ace: float) -> float:
    """Beyond Accuracy's CE = geometric mean of ECE and ACE, sqrt(ECE * ACE).

    Example:
        >>> calibration_error(0.125, 0.5)
        0.25
        >>> calibration_error(float("nan"), 0.5)
        nan
    """
    return math.sqrt(ece * ace) if ece >= 0 and ace >= 0 else math.nan
