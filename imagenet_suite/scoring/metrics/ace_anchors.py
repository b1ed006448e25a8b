"""What the anchored class-wise ACE on bootstrap resamples
(:class:`~imagenet_suite.scoring.metrics.ace_replicates.ClasswiseAceReplicates`) keeps of a block of classes
between its calls: each class's anchors (the identity resample's edges) and the columns of the products that
count and weigh the drawn images from them up, a window of the sorted values and their images around every
edge it walks, and the positives (the images labelled with the class) with the edges that decide their bins.
Computed once, from the classes' sorted probabilities (see that module for the method).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..batching import sort_rows_
from .calibration import ACE_BLOCK_ELEMENTS, _edge_positions, _positives

WINDOW_SIGMAS = 8.0
"""Half-width of the stored window around an edge, in standard deviations of a bootstrap resample's
cumulative count there; a walk that would leave it is settled by the per-resample method."""
NEIGHBOUR_SIGMAS = 5.0
"""A positive this close (in the same deviations) to the edge below or above its bin also gets the edge
beyond walked, so that its bin is settled when it crosses."""
PAD = 8  # positions added to every window and reach
CANDIDATES = 4  # edges that decide a positive's bin


@dataclass
class Block:
    """What one block of classes keeps between calls (tensors on the scores' device). ``I`` walked edges,
    ``P`` positives; count columns are ``sum c [p >= t]``, mass columns ``sum c p [p >= t]``."""

    start: int
    width: int
    empty: torch.Tensor  # [W] bool: nothing above the threshold (error 0 on every resample)
    unsettled: torch.Tensor  # [W] bool: always by the per-resample method (long runs of ties)
    count_class: torch.Tensor  # [nc] local class of each count column
    count_from: torch.Tensor  # [nc] float32 t
    mass_class: torch.Tensor  # [nv]
    mass_from: torch.Tensor  # [nv]
    kept_column: torch.Tensor  # [W] count column above the threshold, -1 when nothing is skipped
    bulk_column: torch.Tensor  # [W] mass column above the threshold, -1 for the pooled classes
    pooled: torch.Tensor  # [W] bool: whole mass in the pooled product (nothing skipped, no positive in bin 0)
    pooled_rows: torch.Tensor  # [N] float64: each image's probabilities summed over the pooled classes
    one_class: torch.Tensor  # [Q] the class of each probability >= 1.0 (the last bin's values)
    one_row: torch.Tensor  # [Q] its image
    one_value: torch.Tensor  # [Q] float32
    item_class: torch.Tensor  # [I] (walked edges: count and mass columns 0..I-1)
    item_edge: torch.Tensor  # [I] 1..num_bins-1
    item_anchor: torch.Tensor  # [I] sorted position of the anchor (the first position of its value)
    window_start: torch.Tensor  # [I]
    window_length: torch.Tensor  # [I]
    window_offset: torch.Tensor  # [I] into the flat window tensors
    window_rows: torch.Tensor  # [sum L] int32: the image at each window position
    window_values: torch.Tensor  # [sum L] float32
    window_ties: torch.Tensor  # [sum L] int32: first position of each value (at least the first kept one)
    slot: torch.Tensor  # [W, num_bins] item of edge k of class j, -1 when not walked
    positive_class: torch.Tensor  # [P]
    positive_row: torch.Tensor  # [P]
    positive_end: torch.Tensor  # [P] first sorted position above the positive's value
    positive_at_one: torch.Tensor  # [P] int64: 1 for a value >= 1.0
    positive_edges: torch.Tensor  # [P, CANDIDATES] edges that decide the bin, 0 where none
    positive_items: torch.Tensor  # [P, CANDIDATES] their walked items, -1 where none
    recomputed: int = 0  # (resample, class) pairs settled by the per-resample method (one thread per block)


def _prepare_block(
    by_class: torch.Tensor, labels: torch.Tensor, first_class: int, num_bins: int, threshold: float
) -> Block:
    """What a block of classes keeps between calls, from its probabilities ``by_class`` ``[W, N]`` (classes
    ``first_class`` on; consumed): see :class:`Block`."""
    width, n_rows = by_class.shape
    device, bins, edges = by_class.device, num_bins, num_bins - 1
    local, values_at, rows = _positives(by_class, labels, first_class, threshold, with_rows=True)
    by_label = torch.sort(local, stable=True).indices
    local, values_at, rows = local[by_label], values_at[by_label], rows[by_label]
    values = sort_rows_(by_class.clone())  # each class's values in order; which image where is found below
    threshold = torch.tensor(threshold, dtype=torch.float32, device=device)
    above_threshold = torch.nextafter(threshold, torch.tensor(math.inf, device=device))
    skipped = torch.searchsorted(values, threshold.expand(width, 1).contiguous(), right=True)[:, 0]
    kept = n_rows - skipped
    empty = kept == 0
    # the identity resample's edges (positions), their anchors (first position of the edge's value)
    distinct, which = torch.unique(kept, return_inverse=True)
    ranks = torch.stack([_edge_positions(int(n), bins) for n in distinct.tolist()]).to(device)[which]
    at = (skipped[:, None] + ranks).clamp(max=n_rows - 1)  # [W, edges]
    anchor = torch.searchsorted(values, values.gather(1, at), right=False)
    sigma = _sigmas(kept, bins)
    # positives: the first position above each one's value, and the edges that decide its bin
    end = _search_rows(values, local, values_at, right=True)  # the first sorted position above each positive
    identity = (at[local] < end[:, None]).sum(dim=1)  # the positive's bin on the identity resample
    reach = (NEIGHBOUR_SIGMAS * sigma[local]).ceil().long() + PAD
    lower, upper = (identity - 1).clamp(min=0), identity.clamp(max=edges - 1)  # columns of edges k*, k*+1
    near_lower = (identity >= 1) & (end - at[local, lower] <= reach[torch.arange(len(local)), lower])
    near_upper = (identity < edges) & (at[local, upper] - end < reach[torch.arange(len(local)), upper])
    candidates = torch.stack(
        [
            identity,
            identity + 1,
            torch.where(near_lower, identity - 1, 0),
            torch.where(near_upper, identity + 2, 0),
        ],
        dim=1,
    )
    candidates = torch.where((candidates >= 1) & (candidates <= edges), candidates, 0)
    # walked edges: every class's last order statistic, and those deciding its positives' bins
    needed = torch.zeros((width, bins), dtype=torch.bool, device=device)
    needed[:, edges] = ~empty
    needed[local[:, None].expand_as(candidates), candidates] = True
    needed[:, 0] = False
    item_edge, item_class = needed.T.nonzero(as_tuple=True)  # grouped by edge
    item_at, item_anchor = at[item_class, item_edge - 1], anchor[item_class, item_edge - 1]
    half = (WINDOW_SIGMAS * sigma[item_class, item_edge - 1]).ceil().long() + PAD
    length = torch.minimum(2 * half, torch.tensor(n_rows, device=device))
    start = torch.minimum((item_at - half).clamp(min=0), n_rows - length)
    unsettled = torch.zeros(width, dtype=torch.bool, device=device)
    unsettled[item_class[item_anchor < start]] = True  # a run of ties from the anchor beyond the window
    walked = ~unsettled[item_class]  # an unsettled class is recomputed on every resample: nothing of it is walked
    item_edge, item_class, item_anchor, start, length = (
        part[walked] for part in (item_edge, item_class, item_anchor, start, length)
    )
    slot = torch.full((width, bins), -1, dtype=torch.int64, device=device)
    slot[item_class, item_edge] = torch.arange(len(item_class), device=device)
    offset = torch.cumsum(length, 0) - length
    item_of = torch.repeat_interleave(torch.arange(len(item_class), device=device), length)
    position = start[item_of] + torch.arange(int(length.sum()), device=device) - offset[item_of]
    window_values = values[item_class[item_of], position]
    ties = _first_positions(values, item_class, start, offset, item_of, position, window_values)
    window_rows = _window_rows(by_class, values, item_class, start, length, item_of, position)
    # product columns: walked anchors first, then the classes' kept counts, whole masses and 1.0-bins
    one_class, one_row = (by_class >= 1.0).nonzero(as_tuple=True)  # the last bin's (1.0 > the threshold)
    has_skip = (skipped > 0) & ~empty
    in_bin_zero = torch.zeros(width, dtype=torch.bool, device=device)
    in_bin_zero[local[(identity == 0) | ((identity == 1) & near_lower)]] = True
    pooled = ~empty & ~has_skip & ~in_bin_zero
    pooled_rows = by_class[pooled].double().sum(dim=0)
    single = ~empty & ~pooled
    anchor_values = values[item_class, item_anchor]
    count_class, count_from, mass_class, mass_from = [item_class], [anchor_values], [item_class], [anchor_values]
    kept_column = _columns(has_skip, count_class, count_from, above_threshold)
    bulk_column = _columns(single, mass_class, mass_from, above_threshold)
    return Block(
        first_class,
        width,
        empty,
        unsettled,
        torch.cat(count_class),
        torch.cat(count_from),
        torch.cat(mass_class),
        torch.cat(mass_from),
        kept_column,
        bulk_column,
        pooled,
        pooled_rows,
        one_class,
        one_row,
        by_class[one_class, one_row],
        item_class,
        item_edge,
        item_anchor,
        start,
        length,
        offset,
        window_rows,
        window_values,
        torch.maximum(ties, skipped[item_class[item_of]]).int(),
        slot,
        local,
        rows,
        end,
        (values_at >= 1.0).long(),
        candidates,
        slot[local[:, None], candidates],
    )


def _columns(chosen: torch.Tensor, classes: list, thresholds: list, value: torch.Tensor) -> torch.Tensor:
    """Append a product column ``value`` for each ``chosen`` class; ``[W]``: its column, -1 where none."""
    picked = chosen.nonzero()[:, 0]
    column = torch.full(chosen.shape, -1, dtype=torch.int64, device=chosen.device)
    column[picked] = sum(len(part) for part in classes) + torch.arange(len(picked), device=chosen.device)
    classes.append(picked)
    thresholds.append(value.to(thresholds[0].dtype).expand(len(picked)))
    return column


def _sigmas(kept: torch.Tensor, bins: int) -> torch.Tensor:
    """``[W, bins - 1]``: the standard deviation of a bootstrap resample's count below each edge's quantile."""
    quantile = torch.arange(1, bins, dtype=torch.float64, device=kept.device) / bins
    return (kept.double()[:, None] * quantile * (1 - quantile)).sqrt()


def _search_rows(values: torch.Tensor, row: torch.Tensor, query: torch.Tensor, right: bool) -> torch.Tensor:
    """``[K]``: the sorted position of each ``query[k]`` in row ``row[k]`` of ``values`` ``[W, N]``
    (``torch.searchsorted``, ``right`` as there), without copying a row per query: the queries are laid out in a
    ``[W, most per row]`` grid, one row of it per row of ``values``.

    Example:
        >>> values = torch.tensor([[0.25, 0.5, 0.5], [0.125, 0.75, 1.0]])
        >>> _search_rows(values, torch.tensor([0, 1, 0]), torch.tensor([0.5, 0.5, 1.0]), right=False).tolist()
        [1, 1, 3]
    """
    width, device = values.shape[0], values.device
    if not len(row):
        return torch.zeros(0, dtype=torch.int64, device=device)
    order = torch.sort(row, stable=True).indices
    by_row = row[order]
    per_row = torch.bincount(by_row, minlength=width)
    place = torch.arange(len(row), device=device) - (torch.cumsum(per_row, 0) - per_row)[by_row]
    grid = torch.zeros((width, int(per_row.max())), dtype=values.dtype, device=device)
    grid[by_row, place] = query[order].to(values.dtype)
    found = torch.empty(len(row), dtype=torch.int64, device=device)
    found[order] = torch.searchsorted(values, grid, right=right)[by_row, place]
    return found


def _window_rows(by_class, values, item_class, start, length, item_of, position) -> torch.Tensor:
    """``[sum L]``: the image at each window position. Any images whose values are the window's sorted values
    will do, ties in any order (equal values share every bin and every bin boundary): those with a value
    strictly between the window's first and last, and as many of those at the first and at the last value
    as the window holds. Found for a group of items at a time (:func:`_item_groups`)."""
    low = values[item_class, start]
    high = values[item_class, start + length - 1]
    above_low = _search_rows(values, item_class, low, right=True)
    equal_low = above_low - _search_rows(values, item_class, low, right=False)
    in_window = (above_low - start).clamp(max=length)
    skip = equal_low - in_window  # images of the first value before the window
    offset = torch.cumsum(length, 0) - length
    parts = []
    for group in _item_groups(len(item_class), by_class.shape[1]):
        probabilities = by_class[item_class[group]]  # [G, N]
        item, row = ((probabilities >= low[group, None]) & (probabilities <= high[group, None])).nonzero(as_tuple=True)
        found = probabilities[item, row]
        del probabilities
        by_value = torch.sort(found, stable=True).indices
        by_value = by_value[torch.sort(item[by_value], stable=True).indices]  # by item, then value
        row = row[by_value]
        per_item = torch.bincount(item, minlength=group.stop - group.start)
        first = torch.cumsum(per_item, 0) - per_item + skip[group]
        flat = slice(int(offset[group.start]), int(offset[group.stop - 1] + length[group.stop - 1]))
        local = item_of[flat] - group.start
        parts.append(row[first[local] + position[flat] - start[group][local]].int())
    return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.int32, device=values.device)


def _item_groups(items: int, n_rows: int) -> list[slice]:
    """Consecutive groups of walked items whose ``[G, N]`` copies of their classes' probabilities hold at most
    :data:`~imagenet_suite.scoring.metrics.calibration.ACE_BLOCK_ELEMENTS` values (a block's own size)."""
    step = max(1, ACE_BLOCK_ELEMENTS // max(1, n_rows))
    return [slice(first, min(items, first + step)) for first in range(0, items, step)]


def _first_positions(values, item_class, start, offset, item_of, position, found) -> torch.Tensor:
    """The first sorted position of each window value ``found`` (flat, item by item): where its run of equal
    values starts inside the window, or before it for the run the window starts in."""
    device = found.device
    flat = torch.arange(len(found), device=device)
    new_run = torch.ones_like(found, dtype=torch.bool)
    new_run[1:] = found[1:] != found[:-1]
    new_run[offset] = True  # every window starts a run
    run_start = torch.cummax(torch.where(new_run, flat, 0), dim=0).values
    first = position - (flat - run_start)
    from_start = run_start == offset[item_of]  # the run the window starts in may begin before it
    before = _search_rows(values, item_class, values[item_class, start], right=False)
    return torch.where(from_start, before[item_of], first)
