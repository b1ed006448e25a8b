"""Class-wise ACE on many bootstrap resamples at once: a few matrix products instead of a pass over
every probability per resample.

:func:`~imagenet_suite.scoring.metrics.calibration.adaptive_calibration_error` bins each class's N
probabilities at 14 order statistics (15 bins, and a 16th for a probability of exactly 1.0). A bootstrap
resample repeats image i ``c_i`` times, so its edges are the *weighted* order statistics of the same sorted
values: the value at the first sorted position where the cumulative count exceeds the rank. Recomputing
that per resample reads all N x C probabilities (the ``exact-loop`` method, 1,000 times for a 1,000-resample
bootstrap of ImageNet val). This computes the same numbers from far less:

* **The error telescopes.** Class j's error is ``sum_b |L_b - W_b| / n`` over bins, ``L_b`` the drawn images
  labelled j in bin b, ``W_b`` the drawn probability mass there (``sum c_i p_ij``, never negative). A bin
  without a drawn positive contributes ``W_b``, and those of bins 0..13 add up to the class's whole mass
  minus ``U_14``, the mass from the last order-statistic edge up. So ``n · error = mass - U_14 + |L_14 - W_14|
  + |L_15 - W_15| + sum over bins 0..13 that hold a drawn positive of (|L_b - W_b| - W_b)``. The classes'
  whole masses are one product (``counts @`` the rows' probability sums); only the edges around the
  positives' bins are needed (for most classes only the last one: their images sit in the top bin).
* **Sums from a fixed value up are matrix products.** The drawn count and mass at or above a fixed value
  ``t`` (an *anchor*: the identity resample's edge) are ``counts @ [p >= t]`` and ``counts @ (p [p >= t])``,
  for all resamples and anchors at once: one exact integer product (int8 counts with int32 sums on a CPU with
  int8 kernels, float32 elsewhere: :func:`_count_type`)
  and one float64 product per block of classes, its columns built tile by tile of images where the product
  reads them. The masses are float64 sums of the same exact products as the per-resample method's.
* **The edge is found by a short walk.** A resample's cumulative count at the anchor is off the rank by
  some ``d`` (about ``sqrt(n q (1 - q))`` at quantile q: ~56 at the last edge of 50,000 images), so its
  edge lies about ``d`` positions away: the walk reads the counts of the images from the anchor to there,
  ``STRAY_SIGMAS · sqrt(|d|)`` beyond, sums them from the anchor's exact count, and takes the last position
  whose count does not exceed the rank. The mass at the edge's bin boundary (the first position of the
  edge's value: ties share a bin) is the anchor's mass plus the read images' products up to it.
* **A positive's bin** is the number of edges at sorted positions below its own: exact from the walked
  edges around it, certified by monotonicity (an edge below one that lies below the image does too).

Whatever a walk or a certificate cannot settle — a walk leaving its stored window, a positive landing in a
bin whose edges were not walked, a run of equal probabilities longer than the window — is recomputed for
that class and resample by the per-resample method. Every value is the exact one up to float64 summation
order (masses are added in another order: an agreement to ~1e-15 relative, tested to 1e-12).

What the calls share (anchors, windows, positives: :mod:`~imagenet_suite.scoring.metrics.ace_anchors`) is
computed on the first call from each class's sorted probabilities, as the metric itself sorts them. Everything
runs on the scores' device (torch); on the CPU, blocks of classes go to worker threads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..batching import column_chunks, map_chunks, transposed_float32
from ..threads import cpu_workers
from .ace_anchors import CANDIDATES, PAD, Block, _prepare_block
from .ace_loop import _sorted_with_order, _weighted_class_errors, exact_loop_replicates
from .calibration import ACE_BINS, ACE_BLOCK_ELEMENTS, _edge_positions, _positives
from .row_statistics import SoftmaxNormalizer

METHODS = ("anchored", "exact-loop")
RESAMPLE_CHUNK_ELEMENTS = 1 << 24
"""Counts (resamples x images) a :class:`ClasswiseAceReplicates` is best given at once: each call builds its
product columns afresh, so fewer, larger calls cost less (335 resamples of 50,000 images)."""

STRAY_SIGMAS = 5.0
"""How far past the expected position a walk reads, in square roots of the distance."""
WALK_ELEMENTS = 1 << 20  # positions read per pass of a walk
TILE_ROWS = 16384  # images per tile of the product columns on the CPU (built in cache) ...
TILE_ELEMENTS = 1 << 22  # ... fewer where a block has many columns: at most this many values per tile
PART_ELEMENTS = 1 << 21
"""Per block, the resamples whose walks, bins and errors are worked out together: as many as make at most this
many (resample, walked edge, positive or class bin) entries (the products take them all at once)."""
EXACT_FLOAT32 = 1 << 24  # integers up to this are exact in float32


def adaptive_calibration_error_replicates(
    scores: torch.Tensor,
    labels: torch.Tensor,
    normalizer: SoftmaxNormalizer,
    counts: torch.Tensor,
    num_bins: int = ACE_BINS,
    threshold: float = 0.0,
    columns: torch.Tensor | None = None,
    method: str = "anchored",
) -> torch.Tensor:
    """``[R]`` float64: :func:`~imagenet_suite.scoring.metrics.calibration.adaptive_calibration_error` recomputed
    on each bootstrap resample, ``counts`` ``[R, N]`` (how often each image is drawn).

    ``method``: ``anchored`` (:class:`ClasswiseAceReplicates`, the module docstring's method) or ``exact-loop``
    (:func:`~imagenet_suite.scoring.metrics.ace_loop.exact_loop_replicates`, a pass over every probability per
    resample). Both give the metric of the resampled rows, up to float64 summation order. For many calls on
    the same scores (chunks of resamples), keep one :class:`ClasswiseAceReplicates`: it prepares once.

    Example:
        The first example of :func:`~imagenet_suite.scoring.metrics.calibration.adaptive_calibration_error`
        (ACE 0.25 with 2 bins); counts of 1 give it back, both methods alike:

        >>> from imagenet_suite.scoring import row_statistics
        >>> probs = torch.tensor([[0.875, 0.125], [0.75, 0.25], [0.25, 0.75], [0.125, 0.875]])
        >>> labels = torch.tensor([0, 1, 1, 1])
        >>> normalizer = row_statistics(probs, "probs", labels).normalizer
        >>> counts = torch.tensor([[1, 1, 1, 1], [2, 0, 1, 1]])
        >>> [adaptive_calibration_error_replicates(probs, labels, normalizer, counts, 2, method=m).tolist() for m in METHODS]
        [[0.25, 0.15625], [0.25, 0.15625]]
    """
    if method not in METHODS:
        raise ValueError(f"unknown ACE resampling method {method!r}; known: {list(METHODS)}")
    if method == "exact-loop":
        return exact_loop_replicates(scores, labels, normalizer, counts, num_bins, threshold, columns)
    return ClasswiseAceReplicates(scores, labels, normalizer, num_bins, threshold, columns)(counts)


class ClasswiseAceReplicates:
    """:func:`~imagenet_suite.scoring.metrics.calibration.adaptive_calibration_error` on bootstrap resamples:
    a callable ``counts [R, N] -> [R]`` float64 (CPU) that keeps what every call shares (each class's anchors,
    windows and positives), computed on its first call. Same arguments as the metric; with fewer than 2
    bins or a threshold of 1 or more (nothing to anchor) it runs the per-resample method.

    See the module docstring for the method; the values equal the per-resample computation
    (:func:`adaptive_calibration_error_replicates` with ``method="exact-loop"``) up to float64 summation order. ``recomputed`` counts the (resample, class) pairs
    left to the per-resample method.

    Example:
        The first example of :func:`~imagenet_suite.scoring.metrics.calibration.adaptive_calibration_error`
        (ACE 0.25 with 2 bins); counts of 1 give it back. Doubling image 0 and dropping image 1 gives class 0
        the sorted values 0.125, 0.25, 0.875, 0.875 and the edge 0.875 (rank 2): bins {0.125, 0.25}
        |0 - 0.375| and {0.875, 0.875} |2 - 1.75|, an error of 0.625 / 4; class 1 mirrors it:

        >>> from imagenet_suite.scoring import row_statistics
        >>> probs = torch.tensor([[0.875, 0.125], [0.75, 0.25], [0.25, 0.75], [0.125, 0.875]])
        >>> labels = torch.tensor([0, 1, 1, 1])
        >>> ace = ClasswiseAceReplicates(probs, labels, row_statistics(probs, "probs", labels).normalizer, num_bins=2)
        >>> ace(torch.tensor([[1, 1, 1, 1], [2, 0, 1, 1]])).tolist()
        [0.25, 0.15625]
    """

    def __init__(
        self,
        scores: torch.Tensor,
        labels: torch.Tensor,
        normalizer: SoftmaxNormalizer,
        num_bins: int = ACE_BINS,
        threshold: float = 0.0,
        columns: torch.Tensor | None = None,
    ):
        self.scores, self.labels, self.normalizer = scores, labels, normalizer
        self.num_bins, self.threshold, self.columns = num_bins, threshold, columns
        self.width = scores.shape[1] if columns is None else len(columns)
        self._blocks: list[Block] | None = None
        self._last: tuple[torch.Tensor, torch.Tensor] | None = None

    def __call__(self, counts: torch.Tensor) -> torch.Tensor:
        if self._last is not None and self._last[0] is counts:
            return self._last[1]
        n_rows, device = self.scores.shape[0], self.scores.device
        if n_rows == 0 or self.width == 0:
            return torch.full((counts.shape[0],), math.nan, dtype=torch.float64)
        if self.num_bins < 2 or not self.threshold < 1.0:  # no order-statistic edge to anchor, or nothing kept
            arguments = (self.num_bins, self.threshold, self.columns)
            return exact_loop_replicates(self.scores, self.labels, self.normalizer, counts, *arguments)
        workers = cpu_workers() if device.type == "cpu" else 1
        chunks = column_chunks(n_rows, self.width, ACE_BLOCK_ELEMENTS, workers)
        if self._blocks is None:
            self._blocks = map_chunks(self._prepare, chunks, device)
        on_device = counts.to(device)
        totals = on_device.sum(dim=1)
        shared = _Counts(
            on_device.to(torch.int32),
            on_device.to(_count_type(on_device, totals)),
            on_device.to(torch.float64),
            totals,
        )
        by_start = {block.start: block for block in self._blocks}
        sums = map_chunks(lambda chunk: self._error_sums(by_start[chunk.start], shared), chunks, device)
        result = (torch.stack(sums).sum(dim=0) / self.width).cpu()
        self._last = (counts, result)
        return result

    @property
    def recomputed(self) -> int:
        """How many (resample, class) pairs the per-resample method settled, over all calls so far."""
        return sum(block.recomputed for block in self._blocks or [])

    def _prepare(self, block: slice) -> Block:
        by_class = self._probabilities(block)
        return _prepare_block(by_class, self.labels, block.start, self.num_bins, self.threshold)

    def _probabilities(self, block: slice) -> torch.Tensor:
        """``[W, N]`` float32 probabilities of a block of classes (the metric's own computation)."""
        scores, columns = self.scores, self.columns
        block_scores = scores[:, block] if columns is None else scores.index_select(1, columns[block])
        return self.normalizer.probabilities_by_class_(transposed_float32(block_scores))

    # ------------------------------------------------------------------------------------- one call

    def _error_sums(self, block: Block, counts: _Counts) -> torch.Tensor:
        """``[R]`` float64: the sum of one block's class errors on every resample of ``counts``: the products for
        all of them at once, the rest (walks, bins, errors) a part of the resamples at a time
        (:data:`PART_ELEMENTS`): each resample's errors are its own, whatever the part."""
        counted, masses, pooled_mass = self._products(block, counts)
        group = counts.small.shape[0]
        per_resample = len(block.item_class) + len(block.positive_row) + block.width * (self.num_bins + 1)
        step = max(1, PART_ELEMENTS // per_resample)
        parts = [slice(first, min(group, first + step)) for first in range(0, group, step)]
        sums = [
            self._part_sums(block, counts.part(part), counted[part], masses[part], pooled_mass[part]) for part in parts
        ]
        return torch.cat(sums) if sums else torch.zeros(0, dtype=torch.float64, device=counts.small.device)

    def _part_sums(self, block: Block, counts: _Counts, counted, masses, pooled_mass) -> torch.Tensor:
        """:meth:`_error_sums` on the resamples of ``counts``, given their products."""
        device, bins, group = counts.small.device, self.num_bins, counts.small.shape[0]
        totals = counts.totals
        kept = torch.where(block.kept_column >= 0, _pick(counted, block.kept_column), totals[:, None])  # [R, W]
        before = totals[:, None] - kept
        # walk every needed edge from its anchor
        items = len(block.item_class)
        below_anchor = totals[:, None] - counted[:, :items]
        ranks = _ranks(kept.index_select(1, block.item_class), block.item_edge, bins)
        targets = before.index_select(1, block.item_class) + ranks
        position, boundary, walked = _walk(counts.wide, block, below_anchor, masses[:, :items], targets)
        # positives' bins and the drawn positives per bin
        width = block.width
        unsure = block.unsettled[None, :].expand(group, width).clone()
        unsure = _mark(unsure, block.item_class, ~walked)
        labelled, unsure = _labelled(counts.small, block, position, walked, unsure, bins)
        # suffix masses at the bins' boundaries: the whole mass, the walked edges, 1.0, nothing
        nan = torch.full((group, 1), math.nan, dtype=torch.float64, device=device)
        at_edges = torch.cat([boundary, nan], dim=1).index_select(1, block.slot.flatten() % (items + 1))
        at_edges = at_edges.view(group, block.width, bins)  # [R, W, bins]; column 0 (slot -1) NaN
        at_edges[:, :, 0] = _pick(masses, block.bulk_column, math.nan)
        one_products = counts.small.index_select(1, block.one_row).double() * block.one_value.double()
        at_one = torch.zeros((group, width), dtype=torch.float64, device=device).index_add_(
            1, block.one_class, one_products
        )
        bounds = torch.cat([at_edges, at_one[..., None], torch.zeros_like(at_one)[..., None]], dim=2)
        bin_mass = bounds[..., :-1] - bounds[..., 1:]  # [R, W, bins + 1]
        active = labelled[..., : bins - 1] > 0
        middle = bin_mass[..., : bins - 1]
        unsure |= (active & middle.isnan()).any(dim=2)
        correction = torch.where(active, (labelled[..., : bins - 1] - middle).abs() - middle, 0.0).sum(dim=2)
        top = (labelled[..., bins - 1 :] - bin_mass[..., bins - 1 :]).abs().sum(dim=2)
        rest = correction + top - bounds[..., bins - 1]  # n · error without the class's whole mass
        own = torch.where(block.pooled, rest, rest + bounds[..., 0])
        share = own / kept.clamp(min=1)
        skip = unsure | block.empty | (kept == 0)
        total_sum = torch.where(skip, 0.0, share).sum(dim=1) + pooled_mass / totals.clamp(min=1)
        if bool((unsure & ~block.empty).any()):
            total_sum = total_sum + self._recompute(block, counts, unsure & ~block.empty)
        return total_sum

    def _products(self, block: Block, counts: _Counts):
        """``(counted [R, nc] int64, masses [R, nv] float64, pooled mass [R])``: the block's count and mass
        columns and the pooled classes' whole mass on every resample, tile of images by tile (each tile's
        columns are built where the product reads them)."""
        by_class = self._probabilities(slice(block.start, block.start + block.width))
        n_rows, device, group = by_class.shape[1], by_class.device, counts.small.shape[0]
        counted = torch.zeros((group, len(block.count_class)), dtype=torch.int64, device=device)
        masses = torch.zeros((group, len(block.mass_class)), dtype=torch.float64, device=device)
        columns = max(len(block.count_class), len(block.mass_class), 1)
        step = min(TILE_ROWS, max(1, TILE_ELEMENTS // columns)) if device.type == "cpu" else n_rows
        for first in range(0, n_rows, step):
            tile = slice(first, min(n_rows, first + step))
            selected = by_class[block.count_class, tile]
            below = selected >= block.count_from[:, None]
            if counts.exact.dtype == torch.int8:  # int32 sums of int8 products: exact (oneDNN's VNNI kernels)
                counted += torch._int_mm(counts.exact[:, tile].contiguous(), below.to(torch.int8).T)
            else:
                counted += torch.round(counts.exact[:, tile] @ below.to(counts.exact.dtype).T).long()
            selected = by_class[block.mass_class, tile]
            selected.masked_fill_(~(selected >= block.mass_from[:, None]), 0)
            masses += counts.wide[:, tile] @ selected.double().T
        return counted, masses, counts.wide @ block.pooled_rows

    def _recompute(self, block: Block, counts: _Counts, unsure: torch.Tensor) -> torch.Tensor:
        """``[R]``: for the (resample, class) pairs ``unsure``, the per-resample method's error, less the whole
        mass the pooled product gave them. The classes unsure on the same resamples (every unsettled class: on
        all of them) are recomputed together, in the order of their first class."""
        by_class = self._probabilities(slice(block.start, block.start + block.width))
        change = torch.zeros(unsure.shape[0], dtype=torch.float64, device=by_class.device)
        positives = _positives(by_class, self.labels, block.start, self.threshold, with_rows=True)
        asked = unsure.any(dim=0).nonzero()[:, 0]
        patterns, which = torch.unique(unsure[:, asked].T, dim=0, return_inverse=True)
        for pattern in dict.fromkeys(which.tolist()):  # in the order of each pattern's first class
            chosen = patterns[pattern].nonzero()[:, 0]
            every = len(chosen) == len(change)  # then the counts are read where they are, not copied
            classes = asked[which == pattern]
            block.recomputed += len(chosen) * len(classes)
            rows = by_class.index_select(0, classes)
            values, order = (tensor.to(rows.device) for tensor in _sorted_with_order(rows))
            drawn = counts.small if every else counts.small[chosen]
            own = _positives_of(positives, classes, block.width)
            exact = _weighted_class_errors(values, order, own, drawn, self.num_bins, self.threshold)
            change[chosen] += exact.sum(dim=1)
            pooled = block.pooled.index_select(0, classes)
            if bool(pooled.any()):
                masses = (counts.wide if every else counts.wide[chosen]) @ rows[pooled].double().T
                change[chosen] -= masses.sum(dim=1) / counts.totals[chosen].clamp(min=1)
        return change


def _positives_of(positives, classes: torch.Tensor, width: int):
    """A block's ``(class, probability, image)`` positives restricted to ``classes`` (of the ``width`` in the
    block), their class numbered by its place in ``classes``."""
    local, values, rows = positives
    place = torch.full((width,), -1, dtype=torch.int64, device=local.device)
    place[classes] = torch.arange(len(classes), device=local.device)
    keep = place[local] >= 0
    return place[local[keep]], values[keep], rows[keep]


@dataclass(frozen=True)
class _Counts:
    """One call's counts in the types its steps read: int32 (positives), exact (count products: int8, float32 or
    float64, :func:`_count_type`), float64 (mass products and walks), and each resample's total."""

    small: torch.Tensor
    exact: torch.Tensor
    wide: torch.Tensor
    totals: torch.Tensor

    def part(self, rows: slice) -> _Counts:
        """The counts of the resamples ``rows`` (views, no copy)."""
        return _Counts(self.small[rows], self.exact[rows], self.wide[rows], self.totals[rows])


def _count_type(counts: torch.Tensor, totals: torch.Tensor) -> torch.dtype:
    """The cheapest type whose products with 0/1 columns are exact: on the CPU int8 (int32 sums) for counts
    up to 127 where :func:`int8_products_are_fast`, float32 for totals below 2^24; float64 on a GPU, which may
    round float32 products (TF32). Every type gives the same counts: the choice is one of speed only."""
    if counts.device.type != "cpu" or not counts.numel():
        return torch.float64
    if int(counts.max()) <= 127 and counts.shape[1] < 1 << 31 and int8_products_are_fast():
        return torch.int8
    return torch.float32 if int(totals.max()) < EXACT_FLOAT32 else torch.float64


def int8_products_are_fast() -> bool:
    """Whether ``torch._int_mm`` has fast kernels on this CPU: oneDNN's, with AVX-512 VNNI or AMX. Without them it
    is a plain loop: on an AVX2 CPU (AMD EPYC) 3.7 billion products a second against 110 for a float32 product of
    the same shape, which made the bootstrap's class-wise ACE four times slower there.

    Example:
        Counts up to 127 with small totals are int8 where it is fast, float32 (as exact) elsewhere:

        >>> counts = torch.tensor([[1, 2, 0], [0, 3, 0]])
        >>> _count_type(counts, counts.sum(dim=1)) == (torch.int8 if int8_products_are_fast() else torch.float32)
        True
    """
    checks = (getattr(torch.cpu, name, None) for name in ("_is_vnni_supported", "_is_amx_tile_supported"))
    return hasattr(torch, "_int_mm") and any(check is not None and bool(check()) for check in checks)


def _pick(products: torch.Tensor, column: torch.Tensor, missing: float = 0) -> torch.Tensor:
    """``[R, W]``: ``products[:, column[j]]``, ``missing`` where ``column[j]`` is -1."""
    padded = torch.cat([products, products.new_full((products.shape[0], 1), missing)], dim=1)
    return padded.index_select(1, column % (products.shape[1] + 1))


def _mark(unsure: torch.Tensor, classes: torch.Tensor, flags: torch.Tensor) -> torch.Tensor:
    """``unsure`` ``[R, W]`` or-ed with ``flags`` ``[R, K]`` of the classes ``classes`` ``[K]``."""
    hits = torch.zeros(unsure.shape, dtype=torch.int32, device=unsure.device).index_add_(1, classes, flags.int())
    return unsure | (hits > 0)


def _ranks(kept: torch.Tensor, edge: torch.Tensor, bins: int) -> torch.Tensor:
    """``[R, I]``: the rank of edge ``edge[i]`` among ``kept[r, i]`` values (robustness_metrics' positions)."""
    if not kept.numel():  # a block with no walked edge (every class unsettled)
        return torch.zeros(kept.shape, dtype=torch.int64, device=kept.device)
    distinct, which = torch.unique(kept, return_inverse=True)
    table = torch.stack([_edge_positions(int(n), bins) for n in distinct.tolist()]).to(kept.device)
    return table[which, edge[None, :].expand_as(kept) - 1]


def _walk(small: torch.Tensor, block: Block, below_anchor, anchor_mass, targets):
    """Every walked edge on every resample: ``(position, suffix mass at its bin boundary, settled)``, each
    ``[R, I]``. The edge is the last position p with count(< p) <= rank; the walk reads from the anchor
    past its expected place and is settled when what it read holds the edge and its value's first position."""
    group, items = below_anchor.shape
    device = small.device
    position = torch.zeros((group, items), dtype=torch.int64, device=device)
    boundary = torch.zeros((group, items), dtype=torch.float64, device=device)
    settled = torch.zeros((group, items), dtype=torch.bool, device=device)
    if not items:
        return position, boundary, settled
    anchor, start, length = block.item_anchor, block.window_start, block.window_length
    distance = below_anchor - targets  # > 0: the edge lies below the anchor
    expected = anchor[None, :] - distance
    stray = (STRAY_SIGMAS * (distance.abs() + 1).double().sqrt()).ceil().long() + PAD
    low = torch.maximum(torch.minimum(anchor[None, :], expected - stray) - PAD, start[None, :])
    high = torch.minimum(torch.maximum(anchor[None, :] + 1, expected + stray + 1), (start + length)[None, :])
    span = (high - low).clamp(min=1)
    per_resample = span.sum(dim=1).cumsum(0)
    first = 0
    while first < group:
        budget = (per_resample[first - 1] if first else 0) + WALK_ELEMENTS
        last = max(first + 1, int(torch.searchsorted(per_resample, budget, right=True)))
        chosen = slice(first, min(last, group))
        found = _walk_part(
            small[chosen], block, below_anchor[chosen], anchor_mass[chosen], targets[chosen], low[chosen], span[chosen]
        )
        position[chosen], boundary[chosen], settled[chosen] = found
        first = chosen.stop
    return position, boundary, settled


def _walk_part(small, block: Block, below_anchor, anchor_mass, targets, low, span):
    """:func:`_walk` on a few resamples: each (resample, edge) reads one run of positions, all runs laid end to
    end; a running sum over them gives every run's counts (the sum is non-decreasing, so the edge is one
    binary search into it); the mass between the anchor and the boundary is a sum over part of the run."""
    group, items = below_anchor.shape
    n_rows, device = small.shape[1], small.device
    lengths = span.reshape(-1)
    ends = torch.cumsum(lengths, 0)
    starts = ends - lengths
    item = torch.arange(items, device=device).repeat(group)
    low = low.reshape(-1)
    window_start = block.window_start.index_select(0, item)
    base = (block.window_offset.index_select(0, item) + low - window_start - starts).int()
    stored = torch.arange(int(ends[-1]), dtype=torch.int32, device=device) + torch.repeat_interleave(base, lengths)
    rows = block.window_rows.index_select(0, stored)
    per_resample = lengths.view(group, items).sum(dim=1)
    rows += torch.repeat_interleave(torch.arange(group, dtype=torch.int32, device=device) * n_rows, per_resample)
    drawn = small.view(-1).index_select(0, rows)  # float64 counts: sums of them are exact
    running = torch.cumsum(drawn, 0)

    def read_before(at: torch.Tensor) -> torch.Tensor:  # the counts read before flat position ``at``
        return torch.where(at > 0, running.index_select(0, (at - 1).clamp(min=0)), 0.0)

    anchor = block.item_anchor.index_select(0, item)
    at_start = read_before(starts)
    at_low = below_anchor.reshape(-1).double() - (read_before(starts + anchor - low) - at_start)
    target = targets.reshape(-1).double()
    settled = (at_low <= target) & (at_low + read_before(ends) - at_start > target)
    # the last position p with count(< p) <= rank: runs' positions whose inclusive count stays within it
    inside = torch.searchsorted(running, target - at_low + at_start, right=True) - starts  # exact integers
    inside = torch.minimum(inside.clamp(min=0), lengths - 1)
    position = low + inside
    boundary = block.window_ties.index_select(0, block.window_offset.index_select(0, item) + position - window_start)
    settled &= boundary >= low
    products = drawn * block.window_values.index_select(0, stored)
    lower = (torch.minimum(boundary, anchor) - low).clamp(0, None)
    upper = torch.minimum((torch.maximum(boundary, anchor) - low).clamp(0, None), lengths)
    parts = torch.stack([lower, upper - lower, lengths - upper], dim=1).reshape(-1)  # each run: before, between, after
    moved = torch.segment_reduce(products, "sum", lengths=parts).view(-1, 3)[:, 1]
    mass = anchor_mass.reshape(-1) + torch.where(boundary < anchor, moved, -moved)
    shape = (group, items)
    return position.view(shape), mass.view(shape), settled.view(shape)


def _labelled(small, block: Block, position, walked, unsure, bins: int):
    """``([R, W, bins + 1] drawn positives per class and bin, unsure)``: each drawn positive's bin, certified by
    the walked edges around it (else its pair is marked unsure)."""
    group, width = unsure.shape
    device = small.device
    labelled = torch.zeros((group, width * (bins + 1)), dtype=torch.float64, device=device)
    if not len(block.positive_row):
        return labelled.view(group, width, bins + 1), unsure
    drawn = small.index_select(1, block.positive_row)  # [R, P]
    if not position.shape[1]:  # no walked edge: every class with a drawn positive is left to the per-resample method
        return labelled.view(group, width, bins + 1), _mark(unsure, block.positive_class, drawn > 0)
    edges = block.positive_edges
    items = block.positive_items
    valid = (edges > 0) & (items >= 0)
    # most positives are decided by the last edge alone: in the top bin iff it lies below them
    last = valid[:, 0] & (edges[:, 0] == bins - 1) & ~valid[:, 1:].any(dim=1)
    below = position.index_select(1, items[:, 0].clamp(min=0)) < block.positive_end[None, :]
    lowest = torch.where(below, bins - 1, 0).expand_as(drawn).clone()
    certain = (below & walked.index_select(1, items[:, 0].clamp(min=0))).logical_and_(last[None, :])
    other = (~last).nonzero()[:, 0]
    if len(other):
        sub_lowest = torch.zeros((group, len(other)), dtype=torch.int64, device=device)
        highest = torch.full((group, len(other)), bins, dtype=torch.int64, device=device)
        sure = torch.ones((group, len(other)), dtype=torch.bool, device=device)
        for column in range(CANDIDATES):
            edge, ok = edges[other, column], valid[other, column]
            index = items[other, column].clamp(min=0)
            under = position.index_select(1, index) < block.positive_end[other][None, :]
            sub_lowest = torch.maximum(sub_lowest, torch.where(ok & under, edge, 0))
            highest = torch.minimum(highest, torch.where(ok & ~under, edge, bins))
            sure &= walked.index_select(1, index) | ~ok
        lowest[:, other] = sub_lowest
        certain[:, other] = sure & (highest == sub_lowest + 1)
    present = drawn > 0
    unsure = _mark(unsure, block.positive_class, present & ~certain)
    slot = block.positive_class * (bins + 1) + lowest + block.positive_at_one
    labelled.scatter_add_(1, slot, torch.where(present & certain, drawn, 0).double())
    return labelled.view(group, width, bins + 1), unsure
