"""How sure is a rank: the bootstrap distribution of a cross-model aggregate over images and over the model pool.

The papers rank models on point estimates, and none reports how a rank would move with other test images or
another pool of models. For a pool of P models (a paper's published zoo, a user's runs, or both) this module
draws B resamples and recomputes the aggregate on each:

* **over images** (``over="images"``): resample b takes replicate b of every model's number — ``evaluate``'s
  bootstrap replicates (:mod:`~imagenet_suite.scoring.summary.intervals`, ``uncertainty/replicates.parquet``;
  runs bootstrapped with the same seed resample the same images alike, so replicate b of two runs is one draw
  of the images; :func:`run_replicates` reads them). A model without replicates (a published row) keeps its
  point value;
* **over the model pool** (``over="models"``): every model is ranked among a pool drawn with replacement from
  the *other* pool models, as many as there are (P − 1 for a pool member, P for a model outside the pool, such
  as a new run placed among a paper's zoo), with itself added: the zoo as it might have been. Resample b's
  draws come from one row of uniforms, ``numpy.random.default_rng(seed).random((B, P))[b]``
  (:func:`uniform_draws`): a model outside the pool takes pool position ``floor(u_p · P)`` for each of the P
  uniforms, a member the others' position ``floor(u_p · (P − 1))`` for the first P − 1 (the others in pool
  order, itself left out);
* **both** (``over="both"``, the default): resample b takes replicate b and draw b.

Without the pool resampled every model is ranked among the whole pool (itself counted once): the point rank,
1 for the best with ties sharing the best rank (``min``), as every ranking of the leaderboard. For each model
the result gives its point rank, its rank interval (the ``(1 − level)/2`` and ``(1 + level)/2`` quantiles of
its B ranks, rounded outwards to ranks: numpy's ``lower`` and ``higher`` methods), its median rank and
P(rank ≤ k) for each k of ``top``.

* :func:`score_ranks` — ranks by a score of each model alone (QUBA with its fixed constants, an accuracy, a
  NINCO FPR@95 with ``higher_is_better=False``): 1 + the number of pool models scoring higher.
* :func:`borda_ranks` — Heuillet et al. 2025's Borda rank (the authors' code convention,
  :func:`~imagenet_suite.scoring.metrics.aggregates.borda_score_of`: each voter gives a model 1 + the number of
  models of the pool with a lower accuracy), every member's points recomputed on each drawn pool.
* :func:`delta_rank_uncertainty` — Anzaku et al. 2024's ΔRank = rank(first) − rank(second) on the same pools.
* :func:`line_uncertainty` — LCA-on-the-Line's line fitted on the pool drawn with replacement (P draws, the
  models outside the pool's draws above): its R² and every model's predicted OOD accuracy (OLS; the paper's
  min-max scaling is affine on each axis, so R² and the prediction in accuracy units do not depend on it).

Resamples are tensors, never a Python loop: Borda holds every model's pool as counts (how often each model was
drawn into it, :func:`pool_counts`), score ranks count the draws above each model; ``tests/test_rank_uncertainty.py``
checks every function against a direct resampling loop with the same seed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from ...errors import ConfigError, RunFolderError, param
from ..metrics.paired_tests import LEVEL, percentile_interval

OVER = ("images", "models", "both")
TOP = (1, 5, 10)
CHUNK_ELEMENTS = 1 << 23  # elements of one chunk of resamples (Borda: resamples x models x models x voters)


@dataclass(frozen=True)
class Resampling:
    """How many resamples, their seed, what they resample (:data:`OVER`) and the intervals' level; ConfigError
    naming the parameter otherwise.

    Example:
        >>> Resampling(over="classes")
        Traceback (most recent call last):
        ...
        imagenet_suite.errors.ConfigError: over must be one of images, models, both, got 'classes'
    """

    resamples: int = 1000
    seed: int = 0
    over: str = "both"
    level: float = LEVEL

    def __post_init__(self) -> None:
        for name, value, minimum in (("resamples", self.resamples, 1), ("seed", self.seed, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise ConfigError(f"{param(name)} must be an integer of at least {minimum}, got {value!r}")
        if self.over not in OVER:
            raise ConfigError(f"{param('over')} must be one of {', '.join(OVER)}, got {self.over!r}")
        if not 0 < self.level < 1:
            raise ConfigError(f"{param('level')} must lie between 0 and 1, got {self.level!r}")

    @property
    def images(self) -> bool:
        return self.over in ("images", "both")

    @property
    def models(self) -> bool:
        return self.over in ("models", "both")


@dataclass
class RankUncertainty:
    """``table``: per model (index, the input order) ``rank`` (point), ``rank_low``, ``rank_high``,
    ``rank_median`` and ``p_rank_le_<k>``; ``ranks``: the ``[B, M]`` ranks of every resample; ``pool``: the
    models the pools are drawn from; ``with_replicates``: the models whose values were resampled over images
    (the others kept their point values); ``resampling``: the settings."""

    table: pd.DataFrame
    ranks: np.ndarray
    pool: list[str]
    with_replicates: list[str]
    resampling: Resampling


def uniform_draws(pool_size: int, resamples: int, seed: int) -> np.ndarray:
    """``[resamples, pool_size]`` uniforms in [0, 1), ``numpy.random.default_rng(seed).random(...)``: row b
    decides resample b's pools (module docstring).

    Example:
        >>> draws = uniform_draws(4, 3, seed=0)
        >>> draws.shape, bool(((draws >= 0) & (draws < 1)).all())
        ((3, 4), True)
        >>> bool((draws == np.random.default_rng(0).random((3, 4))).all())
        True
    """
    return np.random.default_rng(seed).random((resamples, pool_size))


def pool_counts(uniforms: np.ndarray | None, pool: np.ndarray, models: int) -> np.ndarray:
    """``[B, M, M]`` counts: ``counts[b, i, e]`` is how often model e is in the pool model i is ranked among on
    resample b (model i itself not counted: it is always there once). ``uniforms``: ``[B, P]``
    (:func:`uniform_draws`), or None for the whole pool (``[1, M, M]``); ``pool``: the P pool models' positions.

    Example:
        Models 0 and 1 form the pool, model 2 is outside it. With the uniforms (0.9, 0.2): model 2 draws pool
        positions floor(0.9 · 2) = 1 and floor(0.2 · 2) = 0, i.e. models 1 and 0; model 0's only other is model 1
        (floor(0.9 · 1) = 0), model 1's is model 0. The whole pool gives the same counts here:

        >>> pool_counts(np.array([[0.9, 0.2]]), np.array([0, 1]), 3)[0].tolist()
        [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0]]
        >>> pool_counts(None, np.array([0, 1]), 3)[0].tolist()
        [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0]]
    """
    return _pool_counts(None if uniforms is None else torch.from_numpy(np.asarray(uniforms)), pool, models).numpy()


def _pool_counts(uniforms: torch.Tensor | None, pool: np.ndarray, models: int) -> torch.Tensor:
    """:func:`pool_counts` in torch (float64)."""
    size = len(pool)
    where = torch.as_tensor(pool, dtype=torch.int64)
    outside = torch.ones(models, dtype=torch.bool)
    outside[where] = False
    if uniforms is None:
        counts = torch.zeros((1, models, models), dtype=torch.float64)
        counts[:, :, where] = 1.0
        counts[:, where, where] = 0.0
        return counts
    resamples = len(uniforms)
    counts = torch.zeros((resamples, models, models), dtype=torch.float64)
    drawn = where[torch.floor(uniforms * size).to(torch.int64)]  # [B, P] models drawn
    ones = torch.ones(drawn.shape, dtype=torch.float64)
    counts[:, outside, :] = torch.zeros((resamples, models), dtype=torch.float64).scatter_add_(1, drawn, ones)[:, None]
    if size > 1:
        picks = torch.floor(uniforms[:, : size - 1] * (size - 1)).to(torch.int64)  # positions among the others
        others = torch.zeros((resamples, size - 1), dtype=torch.float64).scatter_add_(1, picks, ones[:, : size - 1])
        position = torch.arange(size)
        shifted = position[None, :] - (position[None, :] > position[:, None]).to(torch.int64)  # [member, position]
        member = others[:, shifted.clamp(0, size - 2)] * (position[None, :] != position[:, None])
        counts[:, where[:, None], where[None, :]] = member
    return counts


def summarise_ranks(
    models: Sequence[str], point: np.ndarray, ranks: np.ndarray, top: Sequence[int] = TOP, level: float = LEVEL
) -> pd.DataFrame:
    """Per model: the point ``rank``, ``rank_low`` / ``rank_high`` (the ``(1 − level)/2`` quantile with numpy's
    ``lower`` method, the ``(1 + level)/2`` one with ``higher``: ranks, never between two), ``rank_median``
    (``lower``) and ``p_rank_le_<k>`` for each k of ``top`` (the share of resamples).

    Example:
        Ten resamples of one model: ranks 1 (four times), 2 (five times) and 4; at level 0.8 the 10 % quantile
        is 1 and the 90 % one the tenth value, 4 (``higher``: position 8.1 of 0..9 rounds up):

        >>> ranks = np.array([[1, 1, 1, 1, 2, 2, 2, 2, 2, 4]]).T
        >>> summarise_ranks(["m"], np.array([1]), ranks, top=(1, 2), level=0.8).loc["m"].tolist()
        [1.0, 1.0, 4.0, 2.0, 0.4, 0.9]
    """
    ranks = np.asarray(ranks, dtype=np.float64)
    tail = (1 - level) / 2
    table = pd.DataFrame(
        {
            "rank": np.asarray(point, dtype=np.float64),
            "rank_low": np.quantile(ranks, tail, axis=0, method="lower"),
            "rank_high": np.quantile(ranks, 1 - tail, axis=0, method="higher"),
            "rank_median": np.quantile(ranks, 0.5, axis=0, method="lower"),
        },
        index=pd.Index(list(models), name="model"),
    )
    for k in top:
        table[f"p_rank_le_{k}"] = (ranks <= k).mean(axis=0)
    return table


# --------------------------------------------------------------------------------------- inputs


def _pool_positions(models: Sequence[str], pool: Sequence[str] | None) -> np.ndarray:
    if pool is None:
        return np.arange(len(models))
    position = {name: i for i, name in enumerate(models)}
    missing = [name for name in pool if name not in position]
    if missing or not len(pool) or len(set(pool)) != len(pool):
        raise ConfigError(
            f"{param('pool')} must name distinct models of the table, got {list(pool)[:5]} (unknown: {missing[:5]})"
        )
    return np.array([position[name] for name in pool])


def _values(point: np.ndarray, replicates: np.ndarray | None, resampling: Resampling, what: str) -> np.ndarray:
    """``[B, ...]`` values of every resample: over images the replicates (NaN, or no replicates at all: the point
    value, as for a published row), else the point values."""
    if not resampling.images or replicates is None:
        return np.broadcast_to(point, (resampling.resamples, *point.shape))
    replicates = np.asarray(replicates, dtype=np.float64)
    if replicates.shape != (resampling.resamples, *point.shape):
        raise ConfigError(
            f"{param('resamples')} {resampling.resamples}: the replicates of {what} have shape {replicates.shape}, "
            f"expected {(resampling.resamples, *point.shape)}"
        )
    return np.where(np.isnan(replicates), point, replicates)


def _aligned(values: pd.DataFrame | None, models: pd.Index) -> np.ndarray | None:
    """Replicates as ``[B, M]`` in ``models`` order (columns: models; absent ones NaN), or None."""
    if values is None:
        return None
    unknown = sorted(set(values.columns) - set(models), key=str)
    if unknown:
        raise ConfigError(f"{param('replicates')} has models the scores lack: {unknown[:5]}")
    return values.reindex(columns=models).to_numpy(dtype=np.float64)


def _resampled(replicates: np.ndarray | None, resampling: Resampling, models: Sequence[str]) -> list[str]:
    if replicates is None or not resampling.images:
        return []
    has = ~np.isnan(replicates).reshape(len(replicates), len(models), -1).all(axis=(0, 2))
    return [name for name, found in zip(models, has, strict=True) if found]


def _finite(series: pd.Series, what: str) -> np.ndarray:
    values = series.to_numpy(dtype=np.float64)
    if not np.isfinite(values).all() or series.index.has_duplicates:
        bad = list(series.index[~np.isfinite(values)][:5])
        raise ConfigError(f"{what} must be one finite value per model (distinct names); not finite for {bad}")
    return values


def _chunks(resamples: int, per_resample: int) -> list[tuple[int, int]]:
    size = max(1, CHUNK_ELEMENTS // max(per_resample, 1))
    return [(start, min(start + size, resamples)) for start in range(0, resamples, size)]


def _counts(uniforms: np.ndarray | None, start: int, stop: int, pool: np.ndarray, models: int) -> torch.Tensor:
    """``[stop − start, M, M]`` counts of resamples start..stop (the whole pool for each, without ``uniforms``)."""
    if uniforms is None:
        return _pool_counts(None, pool, models).expand(stop - start, models, models)
    return _pool_counts(torch.from_numpy(uniforms[start:stop]), pool, models)


def _setup(models: Sequence[str], pool: Sequence[str] | None, resampling: Resampling):
    positions = _pool_positions(models, pool)
    uniforms = uniform_draws(len(positions), resampling.resamples, resampling.seed) if resampling.models else None
    return positions, uniforms


# --------------------------------------------------------------------------------- the aggregates


def _score_ranks(values: torch.Tensor, uniforms: torch.Tensor | None, where: torch.Tensor) -> torch.Tensor:
    """``[b, M]`` ranks by score (``values`` ``[b, M]``, higher is better): 1 + the number of pool models above.
    The same pools as :func:`pool_counts`, without its ``[b, M, M]`` counts: an outsider's pool is one sorted
    draw; a member j's pool is the others' draws h (positions of the pool without j), which puts h[q] copies on
    pool position q < j and h[q − 1] on q > j."""
    size, models = len(where), values.shape[1]
    pool_values = values[:, where]
    if uniforms is None:
        ordered = torch.sort(pool_values, dim=1).values
        return (1 + size - torch.searchsorted(ordered, values.contiguous(), right=True)).to(torch.float64)
    ranks = torch.ones(values.shape, dtype=torch.float64)
    outside = torch.ones(models, dtype=torch.bool)
    outside[where] = False
    drawn = torch.gather(pool_values, 1, torch.floor(uniforms * size).to(torch.int64))
    ordered = torch.sort(drawn, dim=1).values
    ranks[:, outside] = (1 + size - torch.searchsorted(ordered, values[:, outside].contiguous(), right=True)).double()
    if size > 1:
        picks = torch.floor(uniforms[:, : size - 1] * (size - 1)).to(torch.int64)
        others = torch.zeros((len(values), size - 1), dtype=torch.float32)
        others.scatter_add_(1, picks, torch.ones(picks.shape, dtype=torch.float32))
        left, right = torch.nn.functional.pad(others, (0, 1)), torch.nn.functional.pad(others, (1, 0))
        position = torch.arange(size)
        weights = torch.where(position[None, :] < position[:, None], left[:, None, :], right[:, None, :])  # [b, j, q]
        above = pool_values[:, None, :] > pool_values[:, :, None]  # [b, j, q]: q above j
        ranks[:, where] = 1 + torch.where(above, weights, 0.0).sum(dim=2).double()
    return ranks


def score_ranks(
    scores: pd.Series,
    replicates: pd.DataFrame | None = None,
    resampling: Resampling | None = None,
    *,
    pool: Sequence[str] | None = None,
    higher_is_better: bool = True,
    top: Sequence[int] = TOP,
) -> RankUncertainty:
    """Rank uncertainty of a score of each model alone (``scores``: one value per model, the index naming
    them): QUBA (fixed constants), an accuracy, a NINCO FPR@95 (``higher_is_better=False``). ``replicates``:
    ``[B, models]`` image-bootstrap replicates (columns: the models that have them); ``pool``: the models the
    pools are drawn from (default: all); every model of ``scores`` is ranked.

    Example:
        Three models, each ranked among two draws from the other two and itself. ``a`` is first on every pool,
        ``c`` last; ``b`` is first when both its draws are ``c`` (a quarter of the pools), third when both are
        ``a`` (another quarter):

        >>> found = score_ranks(pd.Series({"a": 0.9, "b": 0.7, "c": 0.5}), resampling=Resampling(2000, over="models"))
        >>> found.table[["rank", "rank_low", "rank_high"]].values.tolist()
        [[1.0, 1.0, 1.0], [2.0, 1.0, 3.0], [3.0, 3.0, 3.0]]
        >>> abs(float(found.table.loc["b", "p_rank_le_1"]) - 1 / 4) < 0.05
        True
    """
    resampling = resampling or Resampling()
    models = list(scores.index)
    sign = 1.0 if higher_is_better else -1.0
    raw = _finite(scores, "scores")
    reps = _aligned(replicates, scores.index)
    values = torch.from_numpy(np.ascontiguousarray(sign * _values(raw, reps, resampling, "scores")))
    positions, uniforms = _setup(models, pool, resampling)
    where = torch.as_tensor(positions, dtype=torch.int64)
    point = _score_ranks(torch.from_numpy(sign * raw)[None], None, where)[0]
    draws = None if uniforms is None else torch.from_numpy(uniforms)
    ranks = torch.cat([
        _score_ranks(values[start:stop], None if draws is None else draws[start:stop], where)
        for start, stop in _chunks(resampling.resamples, len(models) * len(positions))
    ])  # fmt: skip
    table = summarise_ranks(models, point.numpy(), ranks.numpy(), top, resampling.level)
    pool_names = [models[i] for i in positions]
    return RankUncertainty(table, ranks.numpy(), pool_names, _resampled(reps, resampling, models), resampling)


def _borda_ranks(values: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """``[b, M]`` Borda ranks (``values`` ``[b, M, V]`` accuracies; ``counts`` ``[b, M, M]``): model i's pool is
    ``counts[:, i]`` and itself. ``below[b, d, e]``: the voters on which e is below d; a pool member d's points
    are V + Σ_e count_e · below[d, e] + below[d, i], model i's V + Σ_e count_e · below[i, e]."""
    voters = values.shape[2]
    below = (values[:, None, :, :] < values[:, :, None, :]).sum(dim=3).to(torch.float64)  # [b, d, e]
    members = voters + torch.bmm(counts, below.transpose(1, 2)) + below.transpose(1, 2)  # [b, i, d]
    own = voters + (counts * below).sum(dim=2)  # [b, i]
    return 1 + (counts * (members > own[:, :, None])).sum(dim=2)


def borda_ranks(
    matrix: pd.DataFrame,
    replicates: np.ndarray | None = None,
    resampling: Resampling | None = None,
    *,
    pool: Sequence[str] | None = None,
    top: Sequence[int] = TOP,
) -> RankUncertainty:
    """Rank uncertainty of Heuillet et al. 2025's Borda ranking. ``matrix``: the voter matrix (one row per model,
    one column per voter, no missing accuracy: :func:`~imagenet_suite.scoring.metrics.aggregates.voter_matrix`);
    ``replicates``: ``[B, models, voters]`` image-bootstrap accuracies (NaN: the point value). A model's rank in
    a pool is its Borda rank there (``min`` ties, as
    :func:`~imagenet_suite.scoring.metrics.aggregates.global_rank`): every member's points are those of that pool.

    Example:
        Two voters on which ``a`` beats ``b`` beats ``c``: ``a`` is first on every pool, ``c`` last, ``b`` first
        to third as for a score; the point ranks are ``global_rank(borda_score_of(matrix))``:

        >>> matrix = pd.DataFrame({("d", "clean"): [0.9, 0.8, 0.7], ("d", "common"): [0.6, 0.5, 0.4]}, index=list("abc"))
        >>> found = borda_ranks(matrix, resampling=Resampling(200, over="models"))
        >>> found.table[["rank", "rank_low", "rank_high"]].values.tolist()
        [[1.0, 1.0, 1.0], [2.0, 1.0, 3.0], [3.0, 3.0, 3.0]]
    """
    resampling = resampling or Resampling()
    models = list(matrix.index)
    point = matrix.to_numpy(dtype=np.float64)
    if not np.isfinite(point).all() or matrix.index.has_duplicates:
        raise ConfigError(
            f"{param('matrix')} must hold every model's accuracy on every voter (no NaN, distinct models)"
        )
    values = torch.from_numpy(np.ascontiguousarray(_values(point, replicates, resampling, "the voter matrix")))
    positions, uniforms = _setup(models, pool, resampling)
    point_ranks = _borda_ranks(torch.tensor(point)[None], _counts(None, 0, 1, positions, len(models)))[0]
    ranks = torch.cat([
        _borda_ranks(values[start:stop], _counts(uniforms, start, stop, positions, len(models)))
        for start, stop in _chunks(resampling.resamples, len(models) ** 2 * point.shape[1])
    ])  # fmt: skip
    table = summarise_ranks(models, point_ranks.numpy(), ranks.numpy(), top, resampling.level)
    with_replicates = _resampled(replicates, resampling, models)
    return RankUncertainty(table, ranks.numpy(), [models[i] for i in positions], with_replicates, resampling)


def delta_rank_uncertainty(
    first: pd.Series,
    second: pd.Series,
    replicates_first: pd.DataFrame | None = None,
    replicates_second: pd.DataFrame | None = None,
    resampling: Resampling | None = None,
    *,
    pool: Sequence[str] | None = None,
) -> tuple[pd.DataFrame, np.ndarray]:
    """Anzaku et al. 2024's ΔRank = rank(first) − rank(second) (higher is better in both, e.g. top-1 and PatchML
    ASMA) on every resample, both ranks among the same pools. Returns ``(table, draws)``: per model
    ``delta_rank`` (point), ``delta_rank_low`` / ``delta_rank_high`` (the level's quantiles, ``lower`` /
    ``higher``), ``p_positive`` (P(ΔRank > 0): better under ``second``), ``p_negative``; and the ``[B, M]``
    ΔRanks.

    Example:
        By the first metric only ``a`` is above ``b``; by the second nobody is. ``b``'s ΔRank is the number of
        copies of ``a`` among its two draws from (``a``, ``c``): 1 on the whole pool, never negative, positive
        unless both draws are ``c`` (a quarter of the pools):

        >>> first, second = pd.Series({"a": 0.9, "b": 0.8, "c": 0.1}), pd.Series({"a": 0.5, "b": 0.6, "c": 0.1})
        >>> table, draws = delta_rank_uncertainty(first, second, resampling=Resampling(2000, over="models"))
        >>> int(table.loc["b", "delta_rank"]), float(table.loc["b", "p_negative"]), round(float(table.loc["b", "p_positive"]), 1)
        (1, 0.0, 0.8)
    """
    resampling = resampling or Resampling()
    if not first.index.equals(second.index):
        raise ConfigError("delta_rank_uncertainty needs the same models, in the same order, in both metrics")
    ranked = [
        score_ranks(scores, replicates, resampling, pool=pool)
        for scores, replicates in ((first, replicates_first), (second, replicates_second))
    ]
    point = ranked[0].table["rank"].to_numpy() - ranked[1].table["rank"].to_numpy()
    draws = ranked[0].ranks - ranked[1].ranks
    tail = (1 - resampling.level) / 2
    table = pd.DataFrame(
        {
            "delta_rank": point,
            "delta_rank_low": np.quantile(draws, tail, axis=0, method="lower"),
            "delta_rank_high": np.quantile(draws, 1 - tail, axis=0, method="higher"),
            "p_positive": (draws > 0).mean(axis=0),
            "p_negative": (draws < 0).mean(axis=0),
        },
        index=first.index.rename("model"),
    )
    return table, draws


@dataclass
class LineUncertainty:
    """``r2``: the point R² and its percentile interval (``{"r2", "r2_low", "r2_high"}``); ``table``: per model
    its ``measured`` y, ``predicted`` y (the pool's line), ``predicted_low`` / ``predicted_high``, ``residual``
    (measured − predicted) and ``p_below`` (the share of resamples predicting more than was measured);
    ``r2_draws`` ``[B]`` and ``predicted_draws`` ``[B, M]`` (NaN for a drawn pool with one x or y value only)."""

    r2: dict[str, float]
    table: pd.DataFrame
    r2_draws: np.ndarray
    predicted_draws: np.ndarray
    pool: list[str] = field(default_factory=list)


def line_fits(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """OLS of y on x over each pool given as counts: ``(r2 [B], intercept [B], slope [B])`` (``x``, ``y``,
    ``weights``: ``[B, M]``, ``weights[b, m]`` how often model m is in pool b); NaN for a pool whose x (or y)
    values are all equal.

    Example:
        x (−1, 0, 1), y (0, 2, 1), each once (the example of
        :func:`~imagenet_suite.scoring.metrics.lca_on_the_line.fit_line`: slope 1/2, intercept 1, Pearson 1/2):

        >>> r2, intercept, slope = line_fits(np.array([[-1.0, 0.0, 1.0]]), np.array([[0.0, 2.0, 1.0]]), np.ones((1, 3)))
        >>> r2.tolist(), intercept.tolist(), slope.tolist()
        ([0.25], [1.0], [0.5])
    """
    x, y, w = (np.asarray(a, dtype=np.float64) for a in (x, y, weights))
    total = w.sum(axis=1, keepdims=True)
    xc = x - (w * x).sum(axis=1, keepdims=True) / total
    yc = y - (w * y).sum(axis=1, keepdims=True) / total
    sxx, syy, sxy = (w * xc * xc).sum(axis=1), (w * yc * yc).sum(axis=1), (w * xc * yc).sum(axis=1)
    present = w > 0
    spread = lambda v: np.where(present, v, -np.inf).max(axis=1) - np.where(present, v, np.inf).min(axis=1)  # noqa: E731
    flat = (spread(x) == 0) | (spread(y) == 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = np.where(flat, np.nan, sxy / sxx)
        r2 = np.where(flat, np.nan, sxy * sxy / (sxx * syy))
    intercept = (w * y).sum(axis=1) / total[:, 0] - slope * (w * x).sum(axis=1) / total[:, 0]
    return r2, intercept, slope


def line_uncertainty(
    x: pd.Series,
    y: pd.Series,
    replicates_x: pd.DataFrame | None = None,
    replicates_y: pd.DataFrame | None = None,
    resampling: Resampling | None = None,
    *,
    pool: Sequence[str] | None = None,
) -> LineUncertainty:
    """The LCA-on-the-Line line (y, OOD accuracy, on x, ImageNet LCA or top-1) fitted on the pool — a paper's
    published models, say — and every model's predicted y, on each resample. ``pool``: the models the line is
    fitted on (default: all; drawn with replacement, P of them, when the pool is resampled); the others are
    predicted only. The point values equal those of :func:`~imagenet_suite.scoring.metrics.lca_on_the_line.analyze`
    on the pool (its R², and its scaled line mapped back to accuracy units).

    Example:
        Three published models on the line y = 1 − x/10 and a new model at x = 5 measured at 0.4: predicted 0.5
        on every pool with two distinct x values, R² 1:

        >>> x, y = pd.Series({"a": 2.0, "b": 4.0, "c": 6.0, "new": 5.0}), pd.Series({"a": 0.8, "b": 0.6, "c": 0.4, "new": 0.4})
        >>> found = line_uncertainty(x, y, resampling=Resampling(100, over="models"), pool=["a", "b", "c"])
        >>> found.r2["r2"], round(float(found.table.loc["new", "predicted"]), 6), round(float(found.table.loc["new", "residual"]), 6)
        (1.0, 0.5, -0.1)
    """
    resampling = resampling or Resampling()
    if not x.index.equals(y.index):
        raise ConfigError("line_uncertainty needs the same models, in the same order, in x and y")
    models = list(x.index)
    px, py = _finite(x, "x"), _finite(y, "y")
    vx = _values(px, _aligned(replicates_x, x.index), resampling, "x")
    vy = _values(py, _aligned(replicates_y, y.index), resampling, "y")
    positions, uniforms = _setup(models, pool, resampling)
    whole = np.zeros((1, len(models)))
    whole[0, positions] = 1.0
    if uniforms is None:
        weights = np.broadcast_to(whole, (resampling.resamples, len(models)))
    else:
        weights = np.zeros((resampling.resamples, len(models)))
        drawn = positions[np.floor(uniforms * len(positions)).astype(np.int64)]
        np.add.at(weights, (np.arange(resampling.resamples)[:, None], drawn), 1.0)
    (r2_point,), (a0,), (b0,) = line_fits(px[None], py[None], whole)
    r2, intercept, slope = line_fits(vx, vy, weights)
    predicted = intercept[:, None] + slope[:, None] * vx
    low, high = percentile_interval(r2[np.isfinite(r2)], resampling.level)
    bounds = np.array([percentile_interval(column[np.isfinite(column)], resampling.level) for column in predicted.T])
    point_prediction = a0 + b0 * px
    with np.errstate(invalid="ignore"):
        above = np.where(np.isnan(predicted), np.nan, (predicted > vy).astype(float))
    table = pd.DataFrame(
        {
            "measured": py,
            "predicted": point_prediction,
            "predicted_low": bounds[:, 0],
            "predicted_high": bounds[:, 1],
            "residual": py - point_prediction,
            "p_below": np.nanmean(above, axis=0),
        },
        index=x.index.rename("model"),
    )
    r2_summary = {"r2": float(r2_point), "r2_low": low, "r2_high": high}
    return LineUncertainty(r2_summary, table, r2, predicted, [models[i] for i in positions])


# ------------------------------------------------------------------------------------- run folders


def run_replicates(
    suites: Mapping[str, Mapping[str, Any]], folders: Mapping[str, str | Path], number: str
) -> pd.DataFrame | None:
    """``[B, runs]`` replicates of ``number`` (a :func:`~imagenet_suite.scoring.summary.intervals.number_path`,
    e.g. ``quba.score``) of every run that has them (``evaluate``'s ``uncertainty/replicates.parquet``, read and
    checked by :func:`~imagenet_suite.scoring.summary.intervals.read_replicates`); None when no run has them.
    RunFolderError when two runs were bootstrapped with other resamples or seeds (their replicate b would be
    other draws of the images)."""
    from .intervals import read_replicates

    found, settings = {}, {}
    for name, suite in suites.items():
        uncertainty = suite["summary"].get("uncertainty")
        if not uncertainty or number not in uncertainty.get("ci95", {}):
            continue
        settings[name] = (uncertainty["resamples"], uncertainty["seed"])
        found[name] = read_replicates(folders[name], uncertainty)[number].to_numpy(dtype=np.float64)
    if len(set(settings.values())) > 1:
        described = "; ".join(f"{name!r}: {b} resamples, seed {seed}" for name, (b, seed) in settings.items())
        raise RunFolderError(
            f"the runs' bootstraps are not the same draws of the images ({described}): evaluate them with the same "
            "number of bootstrap resamples and the same bootstrap seed"
        )
    return pd.DataFrame(found) if found else None


__all__ = [
    "OVER",
    "TOP",
    "LineUncertainty",
    "RankUncertainty",
    "Resampling",
    "borda_ranks",
    "delta_rank_uncertainty",
    "line_fits",
    "line_uncertainty",
    "pool_counts",
    "run_replicates",
    "score_ranks",
    "summarise_ranks",
    "uniform_draws",
]
