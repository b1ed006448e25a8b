"""OOD detection metrics (NINCO, Bitterwolf et al. 2023, and OpenOOD v1.5 conventions) and their ``score`` wiring.

Scores follow one convention everywhere: **larger = more in-distribution (ID)**. Every metric
upcasts to float64, works on the scores' device, never applies a sigmoid or bins thresholds
(torchmetrics' auto-sigmoid saturates raw scores), and refuses NaN/inf scores and empty sets.

===========================  =================================================================
metric                       definition
===========================  =================================================================
``auroc``                    P(ID score > OOD score) + ½ P(equal): Mann–Whitney, ties count ½
                             (= sklearn ``roc_auc_score``, either class positive)
``fpr95``                    NINCO / OpenOOD < v1.5, ID positive: ``t = numpy.quantile(id,
                             1 − 0.95)`` (linear), FPR = fraction of OOD with score ≥ t
``fpr95_openood_v15``        OpenOOD ≥ v1.5 (commit 873e8c2), OOD positive: sklearn
                             ``roc_curve(is_ood, −score)`` (``drop_intermediate`` points dropped),
                             FPR = ``fpr[argmax(tpr >= 0.95)]`` = fraction of ID rejected at 95 %
                             OOD recall. A different number from ``fpr95``.
``aupr_in`` / ``aupr_out``   trapezoid ``auc(recall, precision)`` of ``precision_recall_curve``
                             with ID (score) / OOD (−score) positive (OpenOOD after 2023-12-18);
                             not average precision
===========================  =================================================================

On a grouped OOD set (NINCO classes, unit tests, popular sets) each group is evaluated against all
ID images; ``macro`` is the mean over groups (the paper's headline), ``pooled`` treats all OOD
images as one set. Unit tests: a detector **fails** a test when its ``fpr95`` is > 10 %.

This module holds the metrics only (detectors: :mod:`.ood_detectors`; their train statistics:
:mod:`.ood_detector_stats`, fitted by :mod:`.ood_detector_fit`). The evaluator's OOD
families (``ood_detection``, ``ood_detection_datasets``, ``ood_unit_tests``) are wired in
:mod:`imagenet_suite.scoring.families.ood` and read :class:`~imagenet_suite.scoring.evaluation.options.OodOptions`;
the per-group FPR plot is :func:`imagenet_suite.scoring.presentation.plots.per_group_fpr_plot`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ...errors import OutputsError
from ..threads import single_threaded_torch
from .classification import Fraction
from .ood_detector_stats import PRESETS
from .ood_detectors import DETECTORS
from .ood_fit import numpy_lerp

TPR = 0.95
FAIL_THRESHOLD = 0.10
METRIC_NAMES = ("auroc", "fpr95", "fpr95_openood_v15", "aupr_in", "aupr_out")


# -- inputs ----------------------------------------------------------------------------------------------


def as_scores(values: torch.Tensor | np.ndarray | Sequence[float], name: str, nan_to_num: bool = False) -> torch.Tensor:
    """A 1-D float64 tensor of detector scores (same device); OutputsError if empty or NaN/inf.

    ``nan_to_num=True`` replaces NaN by 0 and ±inf by the largest finite float64 first, like NINCO's
    ``auroc_ood`` (``np.nan_to_num``); off by default, so a broken detector is an error, not a number.

    Example:
        >>> as_scores([0.5, 2.0], "id_scores")
        tensor([0.5000, 2.0000], dtype=torch.float64)
        >>> as_scores([0.5, float("nan")], "id_scores")
        Traceback (most recent call last):
        ...
        imagenet_suite.errors.OutputsError: id_scores: 1 score(s) are NaN or inf, the first at position 1 (nan); ...
        >>> as_scores([0.5, float("nan")], "id_scores", nan_to_num=True)
        tensor([0.5000, 0.0000], dtype=torch.float64)
    """
    tensor = values if isinstance(values, torch.Tensor) else torch.as_tensor(np.asarray(values))
    tensor = tensor.detach().reshape(-1) if tensor.ndim <= 1 or tensor.shape[-1] == 1 else tensor
    if tensor.ndim != 1:
        raise OutputsError(f"{name}: expected a 1-D tensor of scores, got shape {tuple(tensor.shape)}")
    if tensor.numel() == 0:
        raise OutputsError(f"{name}: no scores (an empty set cannot be evaluated)")
    tensor = tensor.to(torch.float64)
    if nan_to_num:
        return torch.nan_to_num(tensor)
    bad = ~torch.isfinite(tensor)
    if bool(bad.any()):
        first = int(bad.nonzero()[0, 0])
        raise OutputsError(
            f"{name}: {int(bad.sum())} score(s) are NaN or inf, the first at position {first} "
            f"({float(tensor[first])}); fix the detector or pass nan_to_num=True (NINCO's handling)"
        )
    return tensor


# -- the metrics -----------------------------------------------------------------------------------------
# Every metric works on sorted score sets (sorted once per set, reused for every OOD group): the ROC and
# precision-recall curves are never materialized over the union of both sets; each curve point that
# matters is located by ``searchsorted``. The results equal sklearn's curves point for point.


@dataclass(frozen=True)
class SortedScores:
    """A set of scores sorted ascending (float64), with its distinct values and their counts."""

    values: torch.Tensor  # ascending
    unique: torch.Tensor  # ascending distinct values
    below: torch.Tensor  # int64: number of values < unique[i]
    upto: torch.Tensor  # int64: number of values <= unique[i]

    @classmethod
    def of(cls, scores: torch.Tensor) -> SortedScores:
        values = torch.sort(scores).values
        unique, counts = torch.unique_consecutive(values, return_counts=True)
        upto = torch.cumsum(counts, 0)
        return cls(values, unique, upto - counts, upto)

    @property
    def n(self) -> int:
        return self.values.numel()

    def count_below(self, x: torch.Tensor) -> torch.Tensor:
        """Number of scores < each x (int64)."""
        return torch.searchsorted(self.values, x, right=False)

    def count_upto(self, x: torch.Tensor) -> torch.Tensor:
        """Number of scores <= each x (int64)."""
        return torch.searchsorted(self.values, x, right=True)


def _vector_ops(function):
    """Run on one CPU thread: these metrics are N-long vector operations, for which waking an OpenMP
    team costs more than the work (milliseconds per operation on a shared machine)."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with single_threaded_torch():
            return function(*args, **kwargs)

    return wrapper


def _sorted(scores, name: str) -> SortedScores:
    return scores if isinstance(scores, SortedScores) else SortedScores.of(as_scores(scores, name))


@_vector_ops
def auroc(id_scores, ood_scores) -> float:
    """Area under the ROC curve, ID positive: P(id > ood) + ½ P(id = ood), exact counts, float64.

    Example:
        Of the 16 (ID, OOD) pairs, the ID score is larger in 14, equal in one (1 = 1), smaller in
        one (1 < 2): (14 + ½) / 16:

        >>> id_scores, ood_scores = [5.0, 4.0, 3.0, 1.0], [2.0, 1.0, 0.0, 0.0]
        >>> auroc(id_scores, ood_scores)
        0.90625
    """
    ids, oods = _sorted(id_scores, "id_scores"), _sorted(ood_scores, "ood_scores")
    above = ids.n - ids.count_upto(oods.unique)  # ID > w
    equal = ids.count_upto(oods.unique) - ids.count_below(oods.unique)  # ID = w
    counts = oods.upto - oods.below
    return float(((2 * above + equal) * counts).sum().double() / (2.0 * ids.n * oods.n))


def numpy_quantile(ordered: torch.Tensor, q: float) -> float:
    """``numpy.quantile(values, q)`` (method ``linear``) of ascending float64 ``ordered``, bit for bit.

    Example:
        The 0.05-quantile of (1, 3, 4, 5) lies 0.05 · 3 = 0.15 of the way from 1 to 3:

        >>> import torch
        >>> round(numpy_quantile(torch.tensor([1.0, 3.0, 4.0, 5.0], dtype=torch.float64), 0.05), 12)
        1.3
    """
    n = ordered.numel()
    position = (n - 1) * q
    if position >= n - 1:
        return float(ordered[-1])
    low = int(math.floor(position))
    return numpy_lerp(float(ordered[low]), float(ordered[low + 1]), position - low)


@_vector_ops
def fpr_at_tpr(id_scores, ood_scores, tpr: float = TPR) -> Fraction:
    """NINCO's FPR at ``tpr`` TPR, ID positive: ``t = np.quantile(id, 1 - tpr)``, FPR = mean(ood >= t).

    Returned as a :class:`Fraction` (false positives / OOD images). ``1 - tpr`` is evaluated in float
    exactly as NINCO's ``utils.fpr_at_tpr`` does (0.050000000000000044 for 0.95).

    Example:
        The threshold keeping 95 % of the ID scores is their 0.05-quantile, 1.3 (between 1 and 3);
        one OOD score (2) of four lies above it:

        >>> id_scores, ood_scores = [5.0, 4.0, 3.0, 1.0], [2.0, 1.0, 0.0, 0.0]
        >>> fpr_at_tpr(id_scores, ood_scores)
        Fraction(numerator=1, denominator=4)
    """
    ids, oods = _sorted(id_scores, "id_scores"), _sorted(ood_scores, "ood_scores")
    threshold = numpy_quantile(ids.values, 1 - tpr)
    below = int(oods.count_below(torch.tensor([threshold], dtype=torch.float64, device=oods.values.device))[0])
    return Fraction(oods.n - below, oods.n)


@_vector_ops
def fpr_at_tpr_openood_v15(id_scores, ood_scores, tpr: float = TPR) -> float:
    """OpenOOD v1.5's "FPR@95": OOD positive, ``roc_curve(is_ood, -score)`` with sklearn's default
    ``drop_intermediate=True``, then ``fpr[argmax(tpr_curve >= tpr)]`` — the fraction of ID images
    rejected when ``tpr`` of the OOD images are detected.

    The ROC points run over the distinct scores of both sets in ascending score order, with
    tps = #OOD <= v and fps = #ID <= v. The first point reaching ``tpr`` is an OOD score; sklearn drops
    a point when both count sequences have a zero second difference there (first and last points are
    kept), in which case the next kept point is the answer.

    Example:
        OOD is detected when the score is <= t; 95 % of the OOD scores (all four) are <= 2, and at
        that threshold one ID score of four (1) is rejected as well:

        >>> id_scores, ood_scores = [5.0, 4.0, 3.0, 1.0], [2.0, 1.0, 0.0, 0.0]
        >>> fpr_at_tpr_openood_v15(id_scores, ood_scores)
        0.25
    """
    ids, oods = _sorted(id_scores, "id_scores"), _sorted(ood_scores, "ood_scores")
    reached = (oods.upto.double() / oods.n) >= tpr
    value = float(oods.unique[int(torch.argmax(reached.to(torch.uint8)))])
    points = _RocWalk(ids, oods)
    while points.dropped(value):
        value = points.next(value)
    return points.fps(value) / ids.n


class _RocWalk:
    """Neighbouring points of the OOD-positive ROC curve over the union of two sorted sets."""

    def __init__(self, ids: SortedScores, oods: SortedScores):
        self.ids, self.oods = ids, oods
        self.device = ids.values.device

    def _t(self, value: float) -> torch.Tensor:
        return torch.tensor([value], dtype=torch.float64, device=self.device)

    def tps(self, value: float) -> int:
        return int(self.oods.count_upto(self._t(value))[0])

    def fps(self, value: float) -> int:
        return int(self.ids.count_upto(self._t(value))[0])

    def previous(self, value: float) -> float | None:
        found = [s.values[k - 1] for s in (self.ids, self.oods) if (k := int(s.count_below(self._t(value))[0])) > 0]
        return float(max(found)) if found else None

    def next(self, value: float) -> float | None:
        found = [s.values[k] for s in (self.ids, self.oods) if (k := int(s.count_upto(self._t(value))[0])) < s.n]
        return float(min(found)) if found else None

    def dropped(self, value: float) -> bool:
        before, after = self.previous(value), self.next(value)
        if before is None or after is None:
            return False
        return (
            self.fps(after) - 2 * self.fps(value) + self.fps(before) == 0
            and self.tps(after) - 2 * self.tps(value) + self.tps(before) == 0
        )


def _aupr(positive: SortedScores, negative: SortedScores, positive_is_high: bool) -> float:
    """``auc(recall, precision)`` of sklearn's ``precision_recall_curve`` (trapezoid from recall 0,
    precision 1). Recall only moves at a positive score u; the preceding curve point then has
    tp = #positives strictly beyond u and fp = #negatives strictly beyond u ("beyond" = more
    positive-looking), so each term needs counts at the positives' distinct values only."""
    counts = positive.upto - positive.below
    if positive_is_high:  # ID positive: thresholds descend, "beyond u" = above u
        tp, tp_before = positive.n - positive.below, positive.n - positive.upto
        fp, fp_before = (
            negative.n - negative.count_below(positive.unique),
            negative.n - negative.count_upto(positive.unique),
        )
    else:  # OOD positive on -score: thresholds ascend in score, "beyond u" = below u
        tp, tp_before = positive.upto, positive.below
        fp, fp_before = negative.count_upto(positive.unique), negative.count_below(positive.unique)
    precision = tp.double() / (tp + fp).double()
    total_before = (tp_before + fp_before).double()
    precision_before = torch.where(total_before > 0, tp_before.double() / total_before.clamp_min(1), 1.0)
    return float(((counts.double() / positive.n) * (precision + precision_before) / 2.0).sum())


@_vector_ops
def aupr_in(id_scores, ood_scores) -> float:
    """Area under the precision-recall curve with ID positive (score as is), trapezoid rule.

    Example:
        Down the scores, the precision is 1 at recall ¼, ½ and ¾ (5, 4 and 3 are above every OOD
        score); the OOD score 2 comes next (precision 3/4, recall ¾), then the last ID score 1 with
        the OOD score 1 (precision 4/6, recall 1). Trapezoids from (0, 1): ¾ · 1 + ¼ · (3/4 + 4/6) / 2:

        >>> id_scores, ood_scores = [5.0, 4.0, 3.0, 1.0], [2.0, 1.0, 0.0, 0.0]
        >>> round(aupr_in(id_scores, ood_scores), 6)
        0.927083
    """
    return _aupr(_sorted(id_scores, "id_scores"), _sorted(ood_scores, "ood_scores"), positive_is_high=True)


@_vector_ops
def aupr_out(id_scores, ood_scores) -> float:
    """Area under the precision-recall curve with OOD positive (−score), trapezoid rule.

    Example:
        Up the OOD scores: precision 1 at recall ½ (the two 0s), 3/4 at recall ¾ (score 1, shared
        with an ID score), 4/5 at recall 1 (score 2): ½ · 1 + ¼ · (1 + 3/4) / 2 + ¼ · (3/4 + 4/5) / 2:

        >>> id_scores, ood_scores = [5.0, 4.0, 3.0, 1.0], [2.0, 1.0, 0.0, 0.0]
        >>> round(aupr_out(id_scores, ood_scores), 6)
        0.9125
    """
    return _aupr(_sorted(ood_scores, "ood_scores"), _sorted(id_scores, "id_scores"), positive_is_high=False)


@_vector_ops
def ood_metrics(id_scores, ood_scores, tpr: float = TPR) -> dict[str, float | Fraction]:
    """All five metrics of one OOD set against the ID set (``fpr95`` as a :class:`Fraction`).

    Example:
        The sets of :func:`auroc`, :func:`fpr_at_tpr`, :func:`aupr_in`, ... (see their examples):

        >>> id_scores, ood_scores = [5.0, 4.0, 3.0, 1.0], [2.0, 1.0, 0.0, 0.0]
        >>> {name: round(metric_value(value), 6) for name, value in ood_metrics(id_scores, ood_scores).items()}
        {'auroc': 0.90625, 'fpr95': 0.25, 'fpr95_openood_v15': 0.25, 'aupr_in': 0.927083, 'aupr_out': 0.9125}
    """
    return _metrics(_sorted(id_scores, "id_scores"), _sorted(ood_scores, "ood_scores"), tpr)


def _metrics(ids: SortedScores, oods: SortedScores, tpr: float) -> dict[str, Any]:
    return {
        "auroc": auroc(ids, oods),
        "fpr95": fpr_at_tpr(ids, oods, tpr),
        "fpr95_openood_v15": fpr_at_tpr_openood_v15(ids, oods, tpr),
        "aupr_in": aupr_in(ids, oods),
        "aupr_out": aupr_out(ids, oods),
    }


@dataclass(frozen=True)
class GroupedOOD:
    """Metrics of every OOD group against the ID set, their mean over groups, and the pooled set."""

    per_group: dict[str, dict[str, Any]]
    macro: dict[str, float]
    pooled: dict[str, Any]
    group_sizes: dict[str, int]

    def fpr_per_group(self) -> dict[str, float]:
        return {name: metrics["fpr95"].value for name, metrics in self.per_group.items()}


@_vector_ops
def grouped_ood_metrics(
    id_scores,
    ood_scores,
    groups: torch.Tensor | Sequence[int],
    group_names: Sequence[str],
    tpr: float = TPR,
    expected_groups: Sequence[str] | None = None,
) -> GroupedOOD:
    """Per-group, macro (mean over groups) and pooled metrics.

    ``groups[i]`` is the index into ``group_names`` of OOD sample i. Every name of ``expected_groups``
    (default: all of ``group_names``) must have at least one sample: an empty OOD class is an error,
    not a NaN silently left out of the mean. The ID scores are sorted once for all groups.

    Example:
        OOD group ``a`` holds the scores 2 and 1, group ``b`` the two 0s. Against the ID scores
        (5, 4, 3, 1), ``a``'s AUROC is (6 + ½) / 8 and one of its two scores lies above the FPR@95
        threshold 1.3; ``b`` is separated perfectly:

        >>> id_scores, ood_scores = [5.0, 4.0, 3.0, 1.0], [2.0, 1.0, 0.0, 0.0]
        >>> result = grouped_ood_metrics(id_scores, ood_scores, [0, 0, 1, 1], ["a", "b"])
        >>> {name: metrics["auroc"] for name, metrics in result.per_group.items()}
        {'a': 0.8125, 'b': 1.0}
        >>> result.fpr_per_group(), result.group_sizes
        ({'a': 0.5, 'b': 0.0}, {'a': 2, 'b': 2})
        >>> result.macro["auroc"], result.macro["fpr95"]  # means over the groups
        (0.90625, 0.25)
    """
    ids, oods = SortedScores.of(as_scores(id_scores, "id_scores")), as_scores(ood_scores, "ood_scores")
    labels = torch.as_tensor(groups, device=oods.device).reshape(-1).long()
    if labels.numel() != oods.numel():
        raise OutputsError(f"{labels.numel()} group labels for {oods.numel()} OOD scores")
    if labels.numel() and (int(labels.min()) < 0 or int(labels.max()) >= len(group_names)):
        raise OutputsError(
            f"group labels must be in 0..{len(group_names) - 1}, got {int(labels.min())}..{int(labels.max())}"
        )
    wanted = list(expected_groups) if expected_groups is not None else list(group_names)
    unknown = [g for g in wanted if g not in group_names]
    if unknown:
        raise OutputsError(f"expected OOD group(s) {unknown} are not among the group names {list(group_names)[:5]}...")
    counts = torch.bincount(labels, minlength=len(group_names)).tolist()
    empty = [g for g in wanted if counts[list(group_names).index(g)] == 0]
    if empty:
        raise OutputsError(f"OOD group(s) {empty} have no samples; every evaluated OOD class needs at least one image")
    names = list(group_names)
    per_group = {g: _metrics(ids, SortedScores.of(oods[labels == names.index(g)]), tpr) for g in wanted}
    macro = {m: float(np.mean([metric_value(per_group[g][m]) for g in wanted])) for m in METRIC_NAMES}
    return GroupedOOD(
        per_group, macro, _metrics(ids, SortedScores.of(oods), tpr), {g: counts[names.index(g)] for g in wanted}
    )


MACRO_REPLICATES = ("auroc", "fpr95")


@_vector_ops
def macro_replicates(
    metric: str,
    id_scores,
    ood_scores,
    groups: torch.Tensor | Sequence[int],
    group_names: Sequence[str],
    id_counts: torch.Tensor,
    ood_counts: torch.Tensor,
    tpr: float = TPR,
    expected_groups: Sequence[str] | None = None,
) -> torch.Tensor:
    """``[R]`` float64: the ``macro`` ``auroc`` or ``fpr95`` of :func:`grouped_ood_metrics` on each bootstrap
    resample of the ID images (``id_counts`` ``[R, N_id]``) and of the OOD images (``ood_counts``
    ``[R, N_ood]``); counts of 1 give the point values.

    Each image counts as often as it is drawn: AUROC compares every drawn (ID, OOD) pair, FPR@95 takes
    numpy's linear quantile of the drawn ID scores (the ID images repeated by their counts) and the drawn
    share of each group's OOD scores at or above it. A group none of whose images is drawn is left out
    of the mean over groups.

    Example:
        The sets of :func:`grouped_ood_metrics`' example (macro AUROC 0.90625). Drawing group ``a``'s
        score 2 twice and its 1 never makes ``a``'s AUROC (2 · 3) / (4 · 2) = 0.75 (the ID 1 is below 2):

        >>> id_scores, ood_scores = [5.0, 4.0, 3.0, 1.0], [2.0, 1.0, 0.0, 0.0]
        >>> id_counts = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 1]])
        >>> ood_counts = torch.tensor([[1, 1, 1, 1], [2, 0, 1, 1]])
        >>> macro_replicates("auroc", id_scores, ood_scores, [0, 0, 1, 1], ["a", "b"], id_counts, ood_counts).tolist()
        [0.90625, 0.875]
    """
    if metric not in MACRO_REPLICATES:
        raise ValueError(f"replicates are computed for {MACRO_REPLICATES}, not {metric!r}")
    ids, oods = SortedScores.of(as_scores(id_scores, "id_scores")), as_scores(ood_scores, "ood_scores")
    order = torch.sort(as_scores(id_scores, "id_scores"), stable=True).indices
    id_weights = id_counts.to(ids.values.device, torch.float64)[:, order]
    cumulative = torch.nn.functional.pad(torch.cumsum(id_weights, dim=1), (1, 0))  # [R, N_id + 1]
    drawn_id = cumulative[:, -1:]
    ood_weights = ood_counts.to(oods.device, torch.float64)
    if metric == "auroc":
        below = cumulative[:, ids.count_below(oods)]
        upto = cumulative[:, ids.count_upto(oods)]
        per_image = 2 * (drawn_id - upto) + (upto - below)  # 2 · #ID above + #ID equal, as drawn
        scale = 2.0 * drawn_id
    else:
        threshold = _weighted_numpy_quantile(ids.values, cumulative, 1 - tpr)
        per_image = (oods[None, :] >= threshold[:, None]).double()
        scale = torch.ones_like(drawn_id)
    labels = torch.as_tensor(groups, device=oods.device).reshape(-1).long()
    names = list(group_names)
    wanted = torch.tensor([names.index(g) for g in (expected_groups or names)], device=oods.device)
    sums = torch.zeros(len(ood_weights), len(names), dtype=torch.float64, device=oods.device)
    sums.index_add_(1, labels, ood_weights * per_image)
    sizes = torch.zeros_like(sums).index_add_(1, labels, ood_weights)
    return (sums[:, wanted] / (scale * sizes[:, wanted])).nanmean(dim=1).cpu()


def _weighted_numpy_quantile(ordered: torch.Tensor, cumulative: torch.Tensor, q: float) -> torch.Tensor:
    """``[R]``: :func:`numpy_quantile` of the ascending values repeated by each row's counts (``cumulative``:
    ``[R, N + 1]`` running counts from 0; every row draws N values, so the position is the same)."""
    n = ordered.numel()
    position = (n - 1) * q
    if position >= n - 1:
        return ordered[-1].expand(cumulative.shape[0]).clone()
    low = int(math.floor(position))
    running = cumulative[:, 1:].contiguous()
    ranks = torch.tensor([low, low + 1], dtype=running.dtype, device=running.device).expand(len(running), 2)
    found = ordered[torch.searchsorted(running, ranks.contiguous(), right=True)]  # the value of each rank
    below, above, gamma = found[:, 0], found[:, 1], position - low
    diff = above - below
    return above - diff * (1 - gamma) if gamma >= 0.5 else below + diff * gamma


def metric_value(metric: float | Fraction) -> float:
    """The number of one metric result (``fpr95`` is a :class:`Fraction`, the others floats).

    Example:
        >>> metric_value(Fraction(1, 4)), metric_value(0.9)
        (0.25, 0.9)
    """
    return metric.value if isinstance(metric, Fraction) else float(metric)


def unit_test_verdict(fpr_per_test: Mapping[str, float], threshold: float = FAIL_THRESHOLD) -> tuple[list[str], int]:
    """The tests a detector fails (FPR strictly above ``threshold``, NINCO's ``fpr > 0.1``) and their number.

    Example:
        >>> unit_test_verdict({"noise": 0.05, "blobs": 0.2, "stripes": 0.1})
        (['blobs'], 1)
    """
    failed = [name for name, fpr in fpr_per_test.items() if fpr > threshold]
    return failed, len(failed)


__all__ = [
    "DETECTORS",
    "FAIL_THRESHOLD",
    "MACRO_REPLICATES",
    "METRIC_NAMES",
    "PRESETS",
    "TPR",
    "GroupedOOD",
    "SortedScores",
    "as_scores",
    "aupr_in",
    "aupr_out",
    "auroc",
    "fpr_at_tpr",
    "fpr_at_tpr_openood_v15",
    "grouped_ood_metrics",
    "macro_replicates",
    "metric_value",
    "numpy_quantile",
    "ood_metrics",
    "unit_test_verdict",
]
