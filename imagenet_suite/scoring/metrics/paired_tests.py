"""Percentile intervals of bootstrap replicates and the paired tests of two models: exact McNemar on their
per-image correctness, the paired bootstrap test on their replicates (the conventions:
:mod:`imagenet_suite.scoring.metrics.uncertainty`, which draws the replicates).

numpy and SciPy only, no torch: the leaderboard runs these tests over hundreds of runs and never imports torch
(3 s of CPU).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

LEVEL = 0.95
"""The level of every interval: 95 %."""


def percentile_interval(replicates: Sequence[float] | np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """The percentile bootstrap interval: the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of the
    replicates (numpy's ``linear`` method).

    Example:
        Replicates 1, 2, ..., 101: the 2.5 % quantile lies at position 0.025 · 100 = 2.5 (between the
        values 3 and 4), the 97.5 % quantile at 97.5:

        >>> low, high = percentile_interval(range(1, 102))
        >>> round(low, 9), round(high, 9)
        (3.5, 98.5)
    """
    values = np.asarray(replicates, dtype=np.float64)
    low, high = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def percentile_intervals(replicates: np.ndarray, level: float = LEVEL) -> list[tuple[float, float]]:
    """:func:`percentile_interval` of every column of ``replicates`` (``[resamples, numbers]``), in one call.

    Example:
        The column 1, 2, ..., 101 gives (3.5, 98.5) as above; ten times it, ten times that:

        >>> column = np.arange(1.0, 102.0)
        >>> [(round(low, 9), round(high, 9)) for low, high in percentile_intervals(np.stack([column, 10 * column], 1))]
        [(3.5, 98.5), (35.0, 985.0)]
    """
    values = np.asarray(replicates, dtype=np.float64)
    lows, highs = np.quantile(values, [(1 - level) / 2, (1 + level) / 2], axis=0)
    return [(float(low), float(high)) for low, high in zip(lows, highs, strict=True)]


@dataclass(frozen=True)
class McNemar:
    """The exact McNemar test: ``only_first`` images right for the first model only, ``only_second`` for
    the second only, and the two-sided ``p_value``."""

    only_first: int
    only_second: int
    p_value: float


def mcnemar_test(first: Any, second: Any) -> McNemar:
    """Exact two-sided McNemar test of two models' per-image correctness (bool, the same images in the
    same order): ``p = min(1, 2 · BinomCDF(min(b, c); b + c, ½))``, 1 without discordant images
    (:func:`mcnemar_counts`, then :func:`mcnemar_p_values`).

    Example:
        Five images; the first model alone is right on three, the second alone on none:
        p = 2 · (½)³ = 0.25:

        >>> result = mcnemar_test(np.array([1, 1, 1, 0, 1], bool), np.array([0, 0, 0, 0, 1], bool))
        >>> result
        McNemar(only_first=3, only_second=0, p_value=0.25)
    """
    only_first, only_second = mcnemar_counts(first, second)
    return McNemar(only_first, only_second, float(mcnemar_p_values([only_first], [only_second])[0]))


def _on_cpu(values: Any) -> Any:
    """``values``, a tensor moved to the CPU where it has a ``cpu()`` (numpy reads it there)."""
    return values.cpu() if not isinstance(values, np.ndarray) and hasattr(values, "cpu") else values


def mcnemar_counts(first: Any, second: Any) -> tuple[int, int]:
    """``(b, c)``: the images right for the ``first`` model only, and for the ``second`` only (bool per image,
    the same images in the same order: arrays, or torch tensors on any device).

    Example:
        >>> mcnemar_counts(np.array([True, True, False, True]), np.array([False, True, True, False]))
        (2, 1)
    """
    a, b = (np.asarray(_on_cpu(v), dtype=bool) for v in (first, second))
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"McNemar needs two equal-length vectors, got shapes {a.shape} and {b.shape}")
    return int((a & ~b).sum()), int((~a & b).sum())


def mcnemar_p_values(only_first: Sequence[int] | np.ndarray, only_second: Sequence[int] | np.ndarray) -> np.ndarray:
    """The exact two-sided McNemar p-value of each pair of counts (:func:`mcnemar_counts`), in one call of the
    binomial CDF: each value is the one a call of its own gives, to the bit (the CDF is computed element by
    element). A leaderboard tests thousands of pairs, and a scalar call costs 0.25 ms in SciPy's checks.

    Example:
        >>> mcnemar_p_values([3, 0, 9], [0, 0, 2]).tolist()
        [0.25, 1.0, 0.0654296875]
    """
    first, second = np.asarray(only_first, dtype=np.int64), np.asarray(only_second, dtype=np.int64)
    discordant = first + second
    p = np.minimum(1.0, 2.0 * np.asarray(stats.binom.cdf(np.minimum(first, second), discordant, 0.5), dtype=float))
    return np.where(discordant == 0, 1.0, p)


@dataclass(frozen=True)
class PairedDifference:
    """``difference`` = first − second (point estimates), its percentile ``interval`` and the two-sided
    ``p_value`` of the paired bootstrap test, from ``resamples`` paired replicates."""

    difference: float
    interval: tuple[float, float]
    p_value: float
    resamples: int


def paired_bootstrap_test(
    first: Sequence[float] | np.ndarray,
    second: Sequence[float] | np.ndarray,
    point_first: float,
    point_second: float,
    level: float = LEVEL,
) -> PairedDifference:
    """Paired bootstrap test of two numbers from their replicates on the same resamples.

    ``d_b`` = first_b − second_b; the interval is its percentile interval and the p-value
    ``min(1, 2 · min(1 + #{d_b ≤ 0}, 1 + #{d_b ≥ 0}) / (B + 1))``: twice the share of replicates on the
    far side of 0, each count given the +1 of the observed sample.

    Example:
        Four resamples in which the first number is always higher: p = 2 · 1 / 5:

        >>> result = paired_bootstrap_test([0.5, 0.6, 0.7, 0.8], [0.4, 0.5, 0.6, 0.6], 0.65, 0.5)
        >>> round(result.difference, 12), result.p_value, result.resamples
        (0.15, 0.4, 4)
    """
    a, b = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or not len(a):
        raise ValueError(
            f"a paired bootstrap test needs two equal-length replicate vectors, got {a.shape} and {b.shape}"
        )
    d = a - b
    tail = min(int((d <= 0).sum()), int((d >= 0).sum()))
    p = min(1.0, 2.0 * (1 + tail) / (len(d) + 1))
    return PairedDifference(point_first - point_second, percentile_interval(d, level), p, len(d))


__all__ = [
    "LEVEL",
    "McNemar",
    "PairedDifference",
    "mcnemar_counts",
    "mcnemar_p_values",
    "mcnemar_test",
    "paired_bootstrap_test",
    "percentile_interval",
    "percentile_intervals",
]
