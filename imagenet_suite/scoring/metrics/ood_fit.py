"""The train-set statistics of the OOD detectors, accumulated over passes of row chunks (bounded memory).

A train set is a :class:`FitSet` (tensors in memory) or a :class:`FitChunks` (a source that yields
the same :class:`FitSet` chunks, in the same order, on every pass: ``ood fit-stats`` reads predict's
batches from disk). Each statistic is a :class:`PassStatistic` that accumulates, in float64, what its
estimator needs over as many passes as the estimator takes; :func:`run_passes` walks them together,
so the features of 1.28 M images are never all in memory. The estimators are the in-memory ones,
pass by pass, so a chunked fit equals an in-memory fit up to the order of float64 sums:

==============================  ======  ====================================================================
statistic                       passes  what each pass accumulates
==============================  ======  ====================================================================
:class:`ClassMoments`           2       1: Σ h and counts per class → μ_c; 2: Σ (h − μ_y)(h − μ_y)ᵀ → its
                                        pseudo-inverse (sklearn ``EmpiricalCovariance(assume_centered=True)``
                                        on class-centred features). One class: the global mean and precision.
:class:`VimSpace`               2       1: Σ (h − u)(h − u)ᵀ about the fixed origin u = −pinv(W) b and
                                        Σ max logit → the null space of the top-D eigenvectors;
                                        2: Σ ‖(h − u)·NS‖ → α = Σ max logit / Σ ‖(h − u)·NS‖
:class:`PredictedSoftmax`       1       Σ softmax and counts per predicted class → the KL-matching templates
:class:`RadixQuantile`          2 / 4   one 16-bit digit of the order-preserving integer keys of every value
                                        per pass (float32 values: 2 passes, float64: 4): ``numpy.quantile``
                                        exactly, in two 65,536-bin histograms
:class:`RowSample`              1       the L2-normalized rows at positions fixed before the pass: all, or
                                        a seeded uniform sample (:func:`sample_positions`): the KNN bank
==============================  ======  ====================================================================

Memory: O(C·d + d² + C²) float64 plus the KNN bank (its rows × d) and one chunk, whatever N is.
Which of them each detector and anchor fits, and on which set: :mod:`.ood_detector_fit`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from tqdm.auto import tqdm

from ...errors import ConfigError, OutputsError, param
from ...seeding import example_rng
from ..batching import row_chunks

QUERY_ELEMENTS = 1 << 22  # elements of a [rows, C] or [rows, d] block handled at once
DIGIT = 16  # bits of a radix-select digit
BINS = 1 << DIGIT


@dataclass(frozen=True, eq=False)
class FitSet:
    """Tensors of one set of ID images that :func:`~.ood_detector_fit.fit_detector_stats` fits on, row ``i``
    the same image in each.

    Attributes:
        features: ``[N, d]`` penultimate features (any float dtype), or None.
        labels: ``[N]`` true class indices (integers), or None. The train set needs them (class means).
        logits: ``[N, C]`` raw logits, or None.

    Checked when made (OutputsError naming the field and both shapes).

    Example:
        >>> import torch
        >>> from imagenet_suite.scoring.metrics.ood_fit import FitSet
        >>> train = FitSet(torch.randn(100, 16), labels=torch.arange(100) % 4)
        >>> train.rows
        100
        >>> FitSet(torch.randn(100, 16), labels=torch.zeros(99, dtype=torch.long))
        Traceback (most recent call last):
        ...
        imagenet_suite.errors.OutputsError: labels must be [N] = [100] (one per features row), got (99,)
    """

    features: torch.Tensor | None = None
    labels: torch.Tensor | None = None
    logits: torch.Tensor | None = None

    def __post_init__(self) -> None:
        for name in ("features", "labels", "logits"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, torch.Tensor):
                raise OutputsError(f"{param(name)} must be a torch tensor or None, got {type(value).__name__}")
        for name, layout in (("features", "[N, d]"), ("logits", "[N, C]")):
            value = getattr(self, name)
            if value is not None and value.ndim != 2:
                raise OutputsError(f"{param(name)} must be {layout}, got {tuple(value.shape)}")
        if self.features is not None and self.logits is not None and len(self.logits) != len(self.features):
            raise OutputsError(
                f"{param('logits')} have {len(self.logits)} rows for {len(self.features)} {param('features')} rows"
            )
        if self.labels is not None and self.labels.shape != (self.rows,):
            raise OutputsError(
                f"{param('labels')} must be [N] = [{self.rows}] (one per {self._rows_of} row), "
                f"got {tuple(self.labels.shape)}"
            )

    @property
    def _rows_of(self) -> str:
        return "features" if self.features is not None else "logits" if self.logits is not None else "labels"

    @property
    def rows(self) -> int | None:
        """N (None when the set holds no tensor)."""
        first = next((t for t in (self.features, self.logits, self.labels) if t is not None), None)
        return None if first is None else len(first)

    def rows_of(self, rows: slice | torch.Tensor) -> FitSet:
        """The same rows of every tensor."""
        return FitSet(*(None if t is None else t[rows] for t in (self.features, self.labels, self.logits)))


@dataclass(frozen=True, eq=False)
class FitChunks:
    """A train set read in chunks: ``chunks()`` yields its :class:`FitSet` chunks (together ``rows`` rows),
    the same chunks in the same order on every call (one call per pass), every chunk with the same fields.
    ``num_classes``: C, where neither logits nor the last layer say it (labels are checked against it).

    Example:
        An in-memory set as chunks of at most 4 rows (:meth:`of`):

        >>> source = FitChunks.of(FitSet(torch.zeros(10, 2), labels=torch.zeros(10, dtype=torch.long)), max_elements=8)
        >>> source.rows, [chunk.rows for chunk in source.chunks()]
        (10, [4, 4, 2])
    """

    chunks: Callable[[], Iterable[FitSet]]
    rows: int
    num_classes: int | None = None

    @classmethod
    def of(cls, fit_set: FitSet, max_elements: int = QUERY_ELEMENTS) -> FitChunks:
        """An in-memory :class:`FitSet` as consecutive row chunks of at most ``max_elements`` feature elements."""
        if not isinstance(fit_set, FitSet):
            raise OutputsError(f"{param('train')} must be a FitSet or FitChunks, got {type(fit_set).__name__}")
        width = fit_set.features.shape[1] if fit_set.features is not None else 1
        slices = list(row_chunks(fit_set.rows or 0, width, max_elements))
        return cls(lambda: (fit_set.rows_of(rows) for rows in slices), fit_set.rows or 0)

    def first(self) -> FitSet | None:
        """The first chunk (what the chunks hold: shapes, dtype, device), or None when there is none."""
        return next(iter(self.chunks()), None)


class PassStatistic:
    """A statistic accumulated over passes of row chunks: :func:`run_passes` calls :meth:`add` with every
    chunk of pass ``step`` (0-based) and its first row's position, then :meth:`end_pass`, for each of
    the first :attr:`passes` passes."""

    passes: int = 1

    def add(self, step: int, chunk: FitSet, start: int) -> None:
        raise NotImplementedError

    def end_pass(self, step: int, rows: int) -> None:
        """After pass ``step`` over ``rows`` rows in all."""


def run_passes(source: FitChunks, statistics: Sequence[PassStatistic], progress: bool = False) -> None:
    """Feed every chunk of ``source`` to the ``statistics`` that still need a pass, pass after pass, until
    none does; OutputsError when a pass yields other than ``source.rows`` rows (the source changed).

    Example:
        Class 0 at (0, 0) and (2, 0), class 1 at (0, 2) and (2, 2), one row per chunk: means (1, 0) and
        (1, 2); the class-centred rows (±1, 0) have variance 1 along the first axis only:

        >>> features = torch.tensor([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0]])
        >>> source = FitChunks.of(FitSet(features, torch.tensor([0, 0, 1, 1])), max_elements=2)
        >>> moments = ClassMoments(2)
        >>> run_passes(source, [moments])
        >>> moments.means
        tensor([[1., 0.],
                [1., 2.]], dtype=torch.float64)
        >>> moments.precision
        tensor([[1., 0.],
                [0., 0.]], dtype=torch.float64)
    """
    step = 0
    while active := [statistic for statistic in statistics if step < statistic.passes]:
        passes = max(statistic.passes for statistic in statistics)
        start = 0
        with tqdm(total=source.rows, unit="row", disable=not progress, desc=f"fit pass {step + 1}/{passes}") as bar:
            for chunk in source.chunks():
                for statistic in active:
                    statistic.add(step, chunk, start)
                start += chunk.rows
                bar.update(chunk.rows)
        if start != source.rows:
            raise OutputsError(f"pass {step + 1} over the train set read {start} rows, expected {source.rows}")
        for statistic in active:
            statistic.end_pass(step, start)
        step += 1


def gram(x: torch.Tensor) -> torch.Tensor:
    """``xᵀx``: on the CPU by numpy, whose ``a.T @ a`` is BLAS's symmetric rank-k update (half the work of
    the general product torch runs, and exactly symmetric); elsewhere by torch.

    Example:
        >>> gram(torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64))
        tensor([[10., 14.],
                [14., 20.]], dtype=torch.float64)
    """
    if x.device.type != "cpu":
        return x.T @ x
    array = x.detach().contiguous().numpy()
    return torch.from_numpy(array.T @ array)


def l2_normalize(x: torch.Tensor) -> torch.Tensor:
    """Each row divided by its L2 norm.

    Example:
        >>> l2_normalize(torch.tensor([[3.0, 4.0]]))
        tensor([[0.6000, 0.8000]])
    """
    return x / torch.linalg.vector_norm(x, dim=1, keepdim=True)


# -- the statistics ------------------------------------------------------------------------------------


class ClassMoments(PassStatistic):
    """Class means ``[C, d]`` and the pseudo-inverse of the shared class-centred covariance
    ``(1/N) Σ (h − μ_y)(h − μ_y)ᵀ`` (float64; two passes). ``num_classes`` None: one class, whatever the
    labels: the global mean ``[1, d]`` and the precision of ``(1/N) Σ (h − μ)(h − μ)ᵀ``."""

    passes = 2

    def __init__(self, num_classes: int | None):
        self.num_classes = num_classes
        self.sums = self.counts = self.means = self.scatter = self.precision = None

    def add(self, step: int, chunk: FitSet, start: int) -> None:
        h = chunk.features.double()
        labels = self._labels(chunk, start)
        if step == 0:
            if self.sums is None:
                self.sums = torch.zeros(self.num_classes or 1, h.shape[1], dtype=torch.float64, device=h.device)
                self.counts = torch.zeros(self.num_classes or 1, dtype=torch.float64, device=h.device)
            self.sums.index_add_(0, labels, h)
            self.counts += torch.bincount(labels, minlength=self.num_classes or 1)
            return
        scatter = gram(h - self.means[labels])
        self.scatter = scatter if self.scatter is None else self.scatter + scatter

    def _labels(self, chunk: FitSet, start: int) -> torch.Tensor:
        if self.num_classes is None:
            return torch.zeros(chunk.rows, dtype=torch.long, device=chunk.features.device)
        labels = chunk.labels.long()
        wrong = (labels < 0) | (labels >= self.num_classes)
        if bool(wrong.any()):
            row = int(wrong.nonzero()[0, 0])
            raise OutputsError(
                f"train label {int(labels[row])} of row {start + row} is not a class index 0..{self.num_classes - 1}"
            )
        return labels

    def end_pass(self, step: int, rows: int) -> None:
        if step == 0:
            empty = (self.counts == 0).nonzero().flatten()
            if len(empty):
                raise OutputsError(
                    f"class {int(empty[0])} has no train features ({len(empty)} empty classes): every class needs a mean"
                )
            self.means = self.sums / self.counts[:, None]
            return
        self.precision = torch.linalg.pinv(self.scatter / rows, hermitian=True)


class VimSpace(PassStatistic):
    """ViM (Wang et al. 2022): origin ``u = −pinv(W) b``, the null space ``[d, d − D]`` of the top-D
    eigenvectors of ``(1/N) Σ (h − u)(h − u)ᵀ``, and ``α = Σ max_c o_c / Σ ‖(h − u)·NS‖`` over the train
    set, ``o`` the given logits (``given_logits``) or ``W h + b``. Two passes, float64."""

    passes = 2

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor, dim: int, given_logits: bool):
        self.weight, self.bias, self.dim, self.given_logits = weight, bias, dim, given_logits
        self.origin = -(torch.linalg.pinv(weight) @ bias)
        self.scatter = self.null_space = self.alpha = None
        self.max_logits = self.norms = 0.0

    def add(self, step: int, chunk: FitSet, start: int) -> None:
        h = chunk.features.double()
        shifted = h - self.origin
        if step == 0:
            scatter = gram(shifted)
            self.scatter = scatter if self.scatter is None else self.scatter + scatter
            logits = chunk.logits.double() if self.given_logits else h @ self.weight.T + self.bias
            self.max_logits += float(logits.max(dim=1).values.sum())
            return
        self.norms += float(torch.linalg.vector_norm(shifted @ self.null_space, dim=1).sum())

    def end_pass(self, step: int, rows: int) -> None:
        if step == 0:
            eigenvalues, eigenvectors = torch.linalg.eigh(self.scatter / rows)
            order = torch.argsort(eigenvalues, descending=True, stable=True)
            self.null_space = eigenvectors[:, order[self.dim :]].contiguous()
            return
        self.alpha = self.max_logits / self.norms


class PredictedSoftmax(PassStatistic):
    """KL-matching templates ``[C, C]``: row c is the mean softmax of the rows *predicted* as c, one-hot
    ``e_c`` if none is (OpenOOD; Hendrycks et al. 2022). One pass, float64."""

    def __init__(self, num_classes: int):
        self.num_classes = num_classes
        self.sums = self.counts = self.templates = None

    def add(self, step: int, chunk: FitSet, start: int) -> None:
        for rows in row_chunks(chunk.rows, self.num_classes, QUERY_ELEMENTS):
            probs = torch.softmax(chunk.logits[rows].double(), dim=1)
            if self.sums is None:
                self.sums = torch.zeros(self.num_classes, self.num_classes, dtype=torch.float64, device=probs.device)
                self.counts = torch.zeros(self.num_classes, dtype=torch.float64, device=probs.device)
            predicted = probs.argmax(dim=1)
            self.sums.index_add_(0, predicted, probs)
            self.counts += torch.bincount(predicted, minlength=self.num_classes)

    def end_pass(self, step: int, rows: int) -> None:
        self.templates = torch.eye(self.num_classes, dtype=torch.float64, device=self.sums.device)
        seen = self.counts > 0
        self.templates[seen] = self.sums[seen] / self.counts[seen, None]


class RadixQuantile(PassStatistic):
    """``numpy.quantile(values, q)`` (linear interpolation) over every element of every chunk's
    ``values(chunk)`` (default: the features), exactly, by radix select.

    The two order statistics it interpolates between are found digit by digit: each pass counts, in a
    65,536-bin histogram, the next 16-bit digit of the order-preserving integer keys of the values
    whose higher digits match the one found so far (:func:`order_keys`). float32 values take two
    passes, float64 four (known from the first chunk).
    """

    def __init__(self, q: float, values: Callable[[FitSet], torch.Tensor] = lambda chunk: chunk.features):
        self.q, self.values = q, values
        self.passes, self.width, self.count = 2, 32, 0
        self.ranks: list[int] = []  # per order statistic: its rank among the values that share its prefix
        self.prefixes: list[int | None] = [None, None]
        self.histograms: dict[int | None, torch.Tensor] = {}
        self.value: float | None = None

    def add(self, step: int, chunk: FitSet, start: int) -> None:
        flat = self.values(chunk).reshape(-1)
        if step == 0 and self.count == 0:
            self.width = 64 if flat.dtype == torch.float64 else 32
            self.passes = self.width // DIGIT
        if step == 0:
            self.count += flat.numel()
        shift = self.width - DIGIT * (step + 1)
        for start_at in range(0, flat.numel(), 1 << 24):
            keys = order_keys(flat[start_at : start_at + (1 << 24)])
            for prefix in set(self.prefixes):
                selected = keys if prefix is None else keys[(keys >> (shift + DIGIT)) == prefix]
                digits = (selected >> shift) + BINS // 2 if prefix is None else (selected >> shift) & (BINS - 1)
                counts = torch.bincount(digits, minlength=BINS)
                self.histograms[prefix] = counts if prefix not in self.histograms else self.histograms[prefix] + counts

    def end_pass(self, step: int, rows: int) -> None:
        if step == 0:
            if self.count == 0:
                raise OutputsError("cannot take a quantile of no values")
            position = (self.count - 1) * self.q
            self.low, self.gamma = int(np.floor(position)), position - int(np.floor(position))
            self.ranks = [self.low, min(self.low + 1, self.count - 1)]
        for target, prefix in enumerate(self.prefixes):
            cumulative = torch.cumsum(self.histograms[prefix], 0)
            digit = int(torch.searchsorted(cumulative, torch.tensor(self.ranks[target] + 1, device=cumulative.device)))
            self.ranks[target] -= int(cumulative[digit - 1]) if digit > 0 else 0
            value = digit - BINS // 2 if prefix is None else digit
            self.prefixes[target] = value if prefix is None else (prefix << DIGIT) | value
        self.histograms = {}
        if step == self.passes - 1:
            below, above = (key_value(prefix, self.width) for prefix in self.prefixes)
            self.value = numpy_lerp(below, above, self.gamma)


def order_keys(chunk: torch.Tensor) -> torch.Tensor:
    """Signed integers ordered like the floats (IEEE bits; negatives have their magnitude bits flipped):
    int64 keys of float64 values, int32-range keys (as int64) of any other float dtype (read as float32).

    Example:
        >>> values = torch.tensor([-2.0, -0.5, 0.0, 0.25, 3.0])
        >>> bool((order_keys(values).diff() > 0).all()), bool((order_keys(values.double()).diff() > 0).all())
        (True, True)
    """
    if chunk.dtype == torch.float64:
        bits = chunk.contiguous().view(torch.int64)
        return torch.where(bits < 0, bits ^ 0x7FFFFFFFFFFFFFFF, bits)
    bits = chunk.float().contiguous().view(torch.int32).to(torch.int64)
    return torch.where(bits < 0, bits ^ 0x7FFFFFFF, bits)


def key_value(key: int, width: int) -> float:
    """The float whose :func:`order_keys` key is ``key`` (``width``: 64 for float64 keys, 32 for float32).

    Example:
        >>> key_value(int(order_keys(torch.tensor([-0.75]))[0]), 32), key_value(int(order_keys(torch.tensor([2.5]).double())[0]), 64)
        (-0.75, 2.5)
    """
    bits = torch.tensor([key], dtype=torch.int64)
    if width == 64:
        return float(torch.where(bits < 0, bits ^ 0x7FFFFFFFFFFFFFFF, bits).view(torch.float64)[0])
    return float(torch.where(bits < 0, bits ^ 0x7FFFFFFF, bits).to(torch.int32).view(torch.float32)[0])


def numpy_lerp(below: float, above: float, gamma: float) -> float:
    """numpy's quantile interpolation, bit for bit (it switches formula at gamma = 0.5).

    Example:
        >>> numpy_lerp(1.0, 3.0, 0.25), numpy_lerp(1.0, 3.0, 0.75)
        (1.5, 2.5)
    """
    diff = above - below
    return above - diff * (1 - gamma) if gamma >= 0.5 else below + diff * gamma


class RowSample(PassStatistic):
    """The rows at ``positions`` (ascending; None: every row), L2-normalized, in ``dtype``: the KNN bank
    (Sun et al. 2022: normalized train features; float32, like faiss). One pass."""

    def __init__(self, positions: np.ndarray | None, dtype: torch.dtype = torch.float32):
        self.positions, self.dtype = positions, dtype
        self.parts: list[torch.Tensor] = []
        self.bank: torch.Tensor | None = None

    def add(self, step: int, chunk: FitSet, start: int) -> None:
        features = chunk.features
        if self.positions is not None:
            wanted = self.positions[
                np.searchsorted(self.positions, start) : np.searchsorted(self.positions, start + chunk.rows)
            ]
            features = features[torch.as_tensor(wanted - start, device=features.device)]
        for rows in row_chunks(len(features), features.shape[1], QUERY_ELEMENTS):
            self.parts.append(l2_normalize(features[rows].to(self.dtype)))

    def end_pass(self, step: int, rows: int) -> None:
        self.bank, self.parts = torch.cat(self.parts), []


def sample_positions(rows: int, keep: int | None, seed: int) -> np.ndarray | None:
    """Which of ``rows`` rows a bounded KNN bank keeps: None (all) when ``keep`` is None or at least
    ``rows``, else ``keep`` positions drawn uniformly without replacement by ``example_rng(seed, "knn
    bank", rows)``, ascending.

    Example:
        >>> sample_positions(10, None, seed=0) is None, sample_positions(10, 10, seed=0) is None
        (True, True)
        >>> chosen = sample_positions(10, 4, seed=0)
        >>> len(chosen), bool((np.diff(chosen) > 0).all()), bool((chosen == sample_positions(10, 4, seed=0)).all())
        (4, True, True)
    """
    if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 1):
        raise ConfigError(
            f"{param('knn_rows')} must be a number of train rows, at least 1, or None (all); got {keep!r}"
        )
    if keep is None or keep >= rows:
        return None
    return np.sort(example_rng(seed, "knn bank", rows).choice(rows, size=keep, replace=False))


__all__ = [
    "ClassMoments",
    "FitChunks",
    "FitSet",
    "PassStatistic",
    "PredictedSoftmax",
    "RadixQuantile",
    "RowSample",
    "VimSpace",
    "gram",
    "key_value",
    "l2_normalize",
    "numpy_lerp",
    "order_keys",
    "run_passes",
    "sample_positions",
]
