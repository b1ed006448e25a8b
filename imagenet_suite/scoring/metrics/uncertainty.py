"""Uncertainty of a number measured on a finite set of images: the seeded, paired percentile bootstrap,
exact McNemar and the paired bootstrap test.

None of the five papers the suite reproduces reports uncertainty: Beyond Accuracy (Hesse et al. 2025),
Heuillet et al. 2025, NINCO (Bitterwolf et al. 2023), LCA-on-the-Line (Shi et al. 2024) and Anzaku et
al. 2024 rank models on point estimates from one pass over 1k–50k images. The conventions here are the
textbook ones, named where they are used:

* **resamples** — bootstrap replicate ``b`` of a sample of ``N`` images draws ``N`` of them with
  replacement (Efron & Tibshirani 1993), as a count per image (:func:`bootstrap_counts`). The draw
  depends only on the seed, ``b`` and the sample's sorted ids (:func:`ids_sha256`), through
  :func:`~imagenet_suite.seeding.example_rng`: two models evaluated on the same images get the same
  resamples (a *paired* bootstrap), numbers of one model computed from the same images (top-1 and ECE
  of ImageNet val, the ID side of NINCO) are resampled together, and replicate ``b`` is the same
  whatever the number of replicates asked for.
* **interval** — the percentile interval: the 2.5 % and 97.5 % quantiles of the replicates
  (:func:`~imagenet_suite.scoring.metrics.paired_tests.percentile_interval`, numpy's ``linear`` quantile).
* **McNemar** — the exact two-sided McNemar test of two models' per-image correctness on the same
  images (:func:`~imagenet_suite.scoring.metrics.paired_tests.mcnemar_test`): ``2 · P(X ≤ min(b, c))`` for ``X ~ Binomial(b + c, ½)``, capped at 1,
  as statsmodels' ``mcnemar(table, exact=True)``.
* **paired bootstrap test** — the difference of two numbers and its percentile interval from the paired
  replicates; its two-sided p-value ``min(1, 2 · min(1 + #{d_b ≤ 0}, 1 + #{d_b ≥ 0}) / (B + 1))``
  (:func:`~imagenet_suite.scoring.metrics.paired_tests.paired_bootstrap_test`; Davison & Hinkley 1997, §4.4, with the +1 that keeps it above 0).

A number of a report that the bootstrap can recompute is a :class:`Resampled`: the ids of the images it
is computed from (one sample, or two: ID and OOD images) and a function from per-image counts to the
number, one value per replicate. The constructors here cover numbers that are sums over images
(:func:`proportion`, :func:`ratio`, :func:`total`, :func:`group_means`, :func:`derived`); metrics that
are not (ECE, class-wise ACE, class balance, AUROC, FPR@95) have their own ``*_replicates`` function
beside the metric. The intervals and the two tests, which need no torch, are in
:mod:`~imagenet_suite.scoring.metrics.paired_tests`.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch

from ...seeding import example_rng

Replicates = Callable[[Sequence[torch.Tensor]], torch.Tensor]
"""``compute(counts)``: one ``[R, N_k]`` count tensor per sample (rows of the sample's tensors) ->
``[R]`` float64 values of the number on the R resamples."""


def ids_sha256(ids: Sequence[str]) -> str:
    """sha256 of the sorted ids (as a JSON list): what identifies a sample of images for the bootstrap.

    Example:
        The order of the ids does not matter:

        >>> ids_sha256(["b", "a"]) == ids_sha256(["a", "b"])
        True
        >>> import hashlib
        >>> ids_sha256(["b", "a"]) == hashlib.sha256(b'["a", "b"]').hexdigest()
        True
    """
    return hashlib.sha256(json.dumps(sorted(ids)).encode()).hexdigest()


def bootstrap_counts(seed: int, ids: Sequence[str], replicates: Sequence[int]) -> torch.Tensor:
    """``[len(replicates), N]`` int64: how often each image (in the order of ``ids``) is drawn in each
    replicate; every row sums to N (:meth:`Sample.counts`).

    Replicate ``b`` draws N positions of the sorted ids uniformly with replacement from
    ``example_rng(seed, "bootstrap", ids_sha256(ids), b)``, so it depends on the seed, ``b`` and the
    set of ids only.

    Example:
        Three images; the counts follow the images, whatever order they are listed in:

        >>> counts = bootstrap_counts(0, ["x", "y", "z"], range(4))
        >>> counts.shape, counts.sum(dim=1).tolist()
        (torch.Size([4, 3]), [3, 3, 3, 3])
        >>> again = bootstrap_counts(0, ["z", "x", "y"], range(4))
        >>> torch.equal(again, counts[:, [2, 0, 1]])
        True
    """
    return Sample(tuple(ids)).counts(seed, replicates)


@dataclass(frozen=True)
class Sample:
    """A set of images (``ids``, in the row order of the tensors that read its counts), its sorted order and
    :func:`ids_sha256` computed once for all the resamples drawn of it.

    Example:
        >>> sample = Sample(("b", "a", "c"))
        >>> sample.order.tolist(), sample.digest == ids_sha256(["a", "b", "c"])
        ([1, 0, 2], True)
        >>> torch.equal(sample.counts(0, range(3)), bootstrap_counts(0, ["b", "a", "c"], range(3)))
        True
    """

    ids: tuple[str, ...]

    @cached_property
    def order(self) -> np.ndarray:
        """Row positions of the ids in sorted order."""
        return np.argsort(np.asarray(self.ids, dtype=object), kind="stable")

    @cached_property
    def digest(self) -> str:
        return ids_sha256(self.ids)

    def counts(self, seed: int, replicates: Sequence[int]) -> torch.Tensor:
        """``[len(replicates), N]`` int64 draws of :func:`bootstrap_counts`, in the order of ``ids``."""
        n = len(self.ids)
        drawn = np.zeros((len(replicates), n), dtype=np.int64)
        for row, b in enumerate(replicates):
            if n:
                positions = example_rng(seed, "bootstrap", self.digest, int(b)).integers(0, n, n)
                drawn[row, self.order] = np.bincount(positions, minlength=n)
        return torch.from_numpy(drawn)


# ----------------------------------------------------------------------------------------- resampled numbers


@dataclass(frozen=True)
class Resampled:
    """A number as a function of bootstrap counts over the images it is computed from.

    ``samples``: the ids of each sample, in the row order of the tensors the function reads (one sample;
    two for an OOD number: ID then OOD images). ``compute``: see :data:`Replicates`. ``correct`` and
    ``included``: for a :func:`proportion`, the per-image 0/1 and which images count (rows of the
    first sample), so a McNemar test can pair two models' images. ``chunk_elements``: how many counts
    (resamples x images of the widest sample) ``compute`` is best given at once, when more than a caller's
    default (a function that prepares per call, like class-wise ACE's column products); None: the default.
    """

    samples: tuple[tuple[str, ...], ...]
    compute: Replicates
    correct: torch.Tensor | None = None
    included: torch.Tensor | None = None
    chunk_elements: int | None = None

    def replicates(self, counts: Sequence[torch.Tensor]) -> torch.Tensor:
        """``[R]`` float64: the number on the resamples whose counts are given, one tensor per sample."""
        if len(counts) != len(self.samples):
            raise ValueError(f"{len(counts)} count tensors for {len(self.samples)} samples")
        for tensor, ids in zip(counts, self.samples, strict=True):
            if tensor.ndim != 2 or tensor.shape[1] != len(ids):
                raise ValueError(f"counts of shape {tuple(tensor.shape)} for a sample of {len(ids)} images")
        return self.compute(counts).to("cpu", torch.float64)


def _weights(counts: torch.Tensor, device: torch.device) -> torch.Tensor:
    return counts.to(device, torch.float64)


def proportion(ids: Sequence[str], hits: torch.Tensor, included: torch.Tensor | None = None) -> Resampled:
    """The share of ``hits`` (bool ``[N]``) among the ``included`` images (bool ``[N]``, default all).

    Example:
        Images a and b right, c wrong, d left out; the resample drawing a twice and c once gives 2/3:

        >>> estimate = proportion(["a", "b", "c", "d"], torch.tensor([1, 1, 0, 1]).bool(), torch.tensor([1, 1, 1, 0]).bool())
        >>> estimate.replicates([torch.tensor([[1, 1, 1, 1], [2, 0, 1, 1]])]).tolist()
        [0.6666666666666666, 0.6666666666666666]
    """
    hits = hits.bool()
    included = torch.ones_like(hits) if included is None else included.bool()
    numerator, denominator = (hits & included).double(), included.double()

    def compute(counts: Sequence[torch.Tensor]) -> torch.Tensor:
        weights = _weights(counts[0], numerator.device)
        return (weights @ numerator) / (weights @ denominator)

    return Resampled((tuple(ids),), compute, hits, included)


def ratio(ids: Sequence[str], numerator: torch.Tensor, denominator: torch.Tensor) -> Resampled:
    """Sum of ``numerator`` over sum of ``denominator`` (per-image float ``[N]`` each), e.g. the mean LCA
    distance over the mistakes (distance · mistake / mistake).

    Example:
        >>> estimate = ratio(["a", "b"], torch.tensor([3.0, 0.0]), torch.tensor([1.0, 1.0]))
        >>> estimate.replicates([torch.tensor([[1, 1], [2, 0], [0, 2]])]).tolist()
        [1.5, 3.0, 0.0]
    """
    top, bottom = numerator.double(), denominator.double()

    def compute(counts: Sequence[torch.Tensor]) -> torch.Tensor:
        weights = _weights(counts[0], top.device)
        return (weights @ top) / (weights @ bottom)

    return Resampled((tuple(ids),), compute)


def total(ids: Sequence[str], values: torch.Tensor) -> Resampled:
    """The sum of per-image ``values`` (e.g. a number of mistakes).

    Example:
        >>> total(["a", "b"], torch.tensor([1.0, 0.0])).replicates([torch.tensor([[1, 1], [2, 0]])]).tolist()
        [1.0, 2.0]
    """
    summed = values.double()

    def compute(counts: Sequence[torch.Tensor]) -> torch.Tensor:
        return _weights(counts[0], summed.device) @ summed

    return Resampled((tuple(ids),), compute)


class GroupSums:
    """Per resample, the sum of ``values`` (``[N]``) and the number of ``included`` images (bool ``[N]``,
    default all) in each group (``groups``: int64 ``[N]`` in ``0..G-1``), computed once per count tensor
    for every number read from them (:meth:`share`, :meth:`mean_of_means`).

    Example:
        Groups {a, b} (values 1, 0) and {c} (1):

        >>> sums = GroupSums(["a", "b", "c"], torch.tensor([1.0, 0.0, 1.0]), torch.tensor([0, 0, 1]))
        >>> sums.share(0).replicates([torch.tensor([[1, 1, 1], [2, 0, 1]])]).tolist()
        [0.5, 1.0]
    """

    def __init__(
        self, ids: Sequence[str], values: torch.Tensor, groups: torch.Tensor, included: torch.Tensor | None = None
    ):
        self.ids = tuple(ids)
        included = torch.ones_like(groups, dtype=torch.bool) if included is None else included.bool()
        self.kept = included.double()
        self.values = torch.where(included, values.double().nan_to_num(0.0), torch.zeros((), dtype=torch.float64))
        self.groups = groups.long()
        self.size = int(self.groups.max()) + 1 if self.groups.numel() else 0
        self._last: tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]] | None = None

    def of(self, counts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(sums, sizes)``, each ``[R, G]`` float64, of the resamples ``counts`` ``[R, N]``."""
        if self._last is not None and self._last[0] is counts:
            return self._last[1]
        weights = _weights(counts, self.values.device)
        shape = (weights.shape[0], self.size)
        sums = torch.zeros(shape, dtype=torch.float64, device=weights.device).index_add_(
            1, self.groups, weights * self.values
        )
        sizes = torch.zeros(shape, dtype=torch.float64, device=weights.device).index_add_(
            1, self.groups, weights * self.kept
        )
        self._last = (counts, (sums, sizes))
        return sums, sizes

    def share(self, group: int) -> Resampled:
        """The mean of the values of one group's included images."""

        def compute(counts: Sequence[torch.Tensor]) -> torch.Tensor:
            sums, sizes = self.of(counts[0])
            return sums[:, group] / sizes[:, group]

        return Resampled((self.ids,), compute)

    def mean_of_means(self, parents: torch.Tensor | None = None) -> Resampled:
        """The mean over groups of the group means; with ``parents`` (group -> parent, int64 ``[G]``) the group
        means are averaged within each parent first, then over the parents. A group (parent) without
        included images in a resample is left out, as in the point estimate."""

        def compute(counts: Sequence[torch.Tensor]) -> torch.Tensor:
            sums, sizes = self.of(counts[0])
            means = sums / sizes
            if parents is not None:
                means = _nanmean_by(means, parents.long().to(means.device))
            return means.nanmean(dim=1)

        return Resampled((self.ids,), compute)


def group_means(
    ids: Sequence[str],
    values: torch.Tensor,
    groups: torch.Tensor,
    included: torch.Tensor | None = None,
    parents: torch.Tensor | None = None,
) -> Resampled:
    """The mean over groups of each group's mean of ``values`` (``[N]``) over its ``included`` images
    (:meth:`GroupSums.mean_of_means`): ``groups[i]`` is image i's group (int64 ``0..G-1``); ``parents``
    (group -> parent) averages within parents first (severities within a corruption, then corruptions).

    Example:
        Groups {a, b} (means 1 and 0 -> 0.5) and {c} (1): 0.75. Drawing a twice and c once leaves b's
        group with a mean of 1:

        >>> estimate = group_means(["a", "b", "c"], torch.tensor([1.0, 0.0, 1.0]), torch.tensor([0, 0, 1]))
        >>> estimate.replicates([torch.tensor([[1, 1, 1], [2, 0, 1]])]).tolist()
        [0.75, 1.0]
    """
    return GroupSums(ids, values, groups, included).mean_of_means(parents)


def _nanmean_by(means: torch.Tensor, parents: torch.Tensor) -> torch.Tensor:
    """``[R, P]``: the mean of the non-NaN columns of ``means`` ``[R, G]`` within each parent (NaN if none)."""
    present = ~means.isnan()
    size = int(parents.max()) + 1
    sums = torch.zeros(means.shape[0], size, dtype=torch.float64, device=means.device)
    sums.index_add_(1, parents, means.nan_to_num(0.0))
    found = torch.zeros_like(sums).index_add_(1, parents, present.double())
    return sums / found


def derived(function: Callable[..., torch.Tensor], *parts: Resampled) -> Resampled:
    """A number computed from other numbers of the same images, replicate by replicate
    (``function`` takes and returns ``[R]`` tensors), e.g. CE = sqrt(ECE · ACE).

    Example:
        >>> share = proportion(["a", "b"], torch.tensor([True, False]))
        >>> double = derived(lambda value: 2 * value, share)
        >>> double.replicates([torch.tensor([[1, 1], [2, 0]])]).tolist()
        [1.0, 2.0]
    """
    samples = parts[0].samples
    if any(part.samples != samples for part in parts):
        raise ValueError("derived numbers combine numbers of the same images only")

    def compute(counts: Sequence[torch.Tensor]) -> torch.Tensor:
        return function(*(part.compute(counts) for part in parts))

    preferred = [part.chunk_elements for part in parts if part.chunk_elements is not None]
    return Resampled(samples, compute, chunk_elements=max(preferred, default=None))


def resampled(samples: Sequence[Sequence[str]], compute: Replicates, chunk_elements: int | None = None) -> Resampled:
    """A :class:`Resampled` of any function of the counts (the ``*_replicates`` functions of the metrics);
    ``chunk_elements``: see :class:`Resampled`.

    Example:
        >>> count = resampled([["a", "b"]], lambda counts: counts[0][:, 0].double())
        >>> count.replicates([torch.tensor([[1, 1], [2, 0]])]).tolist()
        [1.0, 2.0]
    """
    return Resampled(tuple(tuple(ids) for ids in samples), compute, chunk_elements=chunk_elements)


def finite_share(values: torch.Tensor | np.ndarray) -> float:
    """The share of finite values (the replicates on which a number is defined).

    Example:
        >>> finite_share(np.array([1.0, math.nan, 2.0, math.inf]))
        0.5
    """
    array = np.asarray(values, dtype=np.float64)
    return float(np.isfinite(array).mean()) if array.size else math.nan


__all__ = [
    "GroupSums",
    "Replicates",
    "Resampled",
    "Sample",
    "bootstrap_counts",
    "derived",
    "finite_share",
    "group_means",
    "ids_sha256",
    "proportion",
    "ratio",
    "resampled",
    "total",
]
