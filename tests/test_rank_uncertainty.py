"""Rank uncertainty (``scoring.summary.rank_uncertainty``): every vectorised resampling equals a direct loop over
resamples and models with the same seed (ranks exactly; R² and predictions to 1e-9), which recomputes each
aggregate with the leaderboard's own functions (``rank_descending``, ``borda_score_of`` + ``global_rank``,
``analyze``) on the pool it builds; plus properties checked by hand (a model no pool can beat, binomial ranks,
the identity resample, seeds) and the image bootstrap read from run folders written as ``evaluate`` writes them.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from imagenet_suite import reference
from imagenet_suite.errors import ConfigError, RunFolderError
from imagenet_suite.scoring.metrics import aggregates
from imagenet_suite.scoring.metrics.lca_on_the_line import analyze
from imagenet_suite.scoring.metrics.quba import DIMENSIONS, quba_score, rank_descending
from imagenet_suite.scoring.metrics.uncertainty import bootstrap_counts
from imagenet_suite.scoring.summary.intervals import number_path
from imagenet_suite.scoring.summary.rank_uncertainty import (
    Resampling,
    borda_ranks,
    delta_rank_uncertainty,
    line_uncertainty,
    run_replicates,
    score_ranks,
)
from tests.test_leaderboard_significance import IDS, RESAMPLES, _hits, write_bootstrapped_run

MODELS = ["m0", "m1", "m2", "m3", "m4", "new"]
POOL = ["m0", "m1", "m2", "m3", "m4"]  # "new" is placed among them, never drawn
B = 40


def naive_pools(models: list[str], pool: list[str], resampling: Resampling) -> list[dict[str, list[str]]]:
    """Per resample, the pool each model is ranked among (itself excluded), built one draw at a time: a member draws
    P − 1 of the others (pool order, itself left out) by floor(u · (P − 1)), an outsider P by floor(u · P)."""
    size = len(pool)
    if not resampling.models:
        return [{m: [p for p in pool if p != m] for m in models} for _ in range(resampling.resamples)]
    uniforms = np.random.default_rng(resampling.seed).random((resampling.resamples, size))
    pools = []
    for row in uniforms:
        found = {}
        for model in models:
            others = [p for p in pool if p != model]
            draws = row[: len(others)] if model in pool else row
            found[model] = [others[int(np.floor(u * len(others)))] for u in draws]
        pools.append(found)
    return pools


def replicate_values(point: pd.Series, replicates: pd.DataFrame | None, b: int, resampling: Resampling) -> pd.Series:
    if not resampling.images or replicates is None:
        return point
    row = replicates.iloc[b].reindex(point.index)
    return row.where(row.notna(), point)


@pytest.fixture(scope="module")
def scores() -> tuple[pd.Series, pd.DataFrame]:
    rng = np.random.default_rng(1)
    point = pd.Series(rng.normal(size=len(MODELS)).round(1), index=MODELS)  # rounded: ties happen
    replicates = pd.DataFrame(
        {m: (point[m] + rng.normal(scale=0.5, size=B)).round(1) for m in ("m1", "m3", "new")}
    )  # m0, m2, m4: published rows without per-image data
    return point, replicates


@pytest.mark.parametrize("over", ["images", "models", "both"])
def test_score_ranks_equal_a_direct_resampling_loop(scores, over):
    point, replicates = scores
    resampling = Resampling(B, seed=7, over=over)
    found = score_ranks(point, replicates, resampling, pool=POOL)
    expected = np.zeros((B, len(MODELS)))
    for b, pools in enumerate(naive_pools(MODELS, POOL, resampling)):
        values = replicate_values(point, replicates, b, resampling)
        for i, model in enumerate(MODELS):
            members = pd.Series([values[m] for m in pools[model]] + [values[model]])
            expected[b, i] = rank_descending(members).iloc[-1]  # the leaderboard's rank, ties sharing the best
    assert np.array_equal(found.ranks, expected)
    assert found.with_replicates == ([] if over == "models" else ["m1", "m3", "new"])
    assert found.pool == POOL
    lower = score_ranks(-point, -replicates, resampling, pool=POOL, higher_is_better=False)
    assert np.array_equal(lower.ranks, found.ranks)


@pytest.mark.parametrize("over", ["images", "models", "both"])
def test_borda_ranks_equal_a_direct_resampling_loop(over):
    rng = np.random.default_rng(2)
    columns = pd.MultiIndex.from_tuples([("d1", "clean"), ("d1", "common"), ("d2", "clean"), ("d2", "common")])
    matrix = pd.DataFrame(rng.integers(0, 6, size=(len(MODELS), 4)) / 10, index=MODELS, columns=columns)
    replicates = np.where(rng.random((B, len(MODELS), 4)) < 0.5, np.nan, rng.integers(0, 6, (B, len(MODELS), 4)) / 10)
    resampling = Resampling(B, seed=3, over=over)
    found = borda_ranks(matrix, replicates, resampling, pool=POOL)
    expected = np.zeros((B, len(MODELS)))
    for b, pools in enumerate(naive_pools(MODELS, POOL, resampling)):
        values = matrix.copy()
        if resampling.images:
            values[:] = np.where(np.isnan(replicates[b]), matrix.to_numpy(), replicates[b])
        for i, model in enumerate(MODELS):
            rows = values.loc[[*pools[model], model]]
            rows.index = [f"{k}:{name}" for k, name in enumerate(rows.index)]  # copies of one model are rows apart
            ranks = aggregates.global_rank(aggregates.borda_score_of(rows))
            expected[b, i] = ranks.iloc[-1]
    assert np.array_equal(found.ranks, expected)


def test_delta_rank_equals_the_difference_of_two_direct_loops(scores):
    point, replicates = scores
    second = point.iloc[::-1].set_axis(point.index)
    resampling = Resampling(B, seed=5, over="both")
    table, draws = delta_rank_uncertainty(point, second, replicates, None, resampling, pool=POOL)
    first_ranks = score_ranks(point, replicates, resampling, pool=POOL).ranks
    second_ranks = score_ranks(second, None, resampling, pool=POOL).ranks
    assert np.array_equal(draws, first_ranks - second_ranks)
    point_delta = rank_descending(point[POOL]).reindex(MODELS)  # the pool members' ΔRank is the paper's
    assert table.loc[POOL, "delta_rank"].tolist() == (point_delta - rank_descending(second[POOL])).dropna().tolist()
    assert ((table.p_positive + table.p_negative) <= 1).all()


@pytest.mark.parametrize("over", ["images", "models", "both"])
def test_line_equals_analyze_on_each_drawn_pool(over):
    rng = np.random.default_rng(4)
    x = pd.Series(rng.uniform(5, 8, len(MODELS)), index=MODELS)
    y = pd.Series(1.5 - 0.15 * x + rng.normal(scale=0.03, size=len(MODELS)), index=MODELS)
    rep_y = pd.DataFrame(
        {"new": y["new"] + rng.normal(scale=0.01, size=B), "m0": y["m0"] + rng.normal(scale=0.01, size=B)}
    )
    resampling = Resampling(B, seed=9, over=over)
    found = line_uncertainty(x, y, None, rep_y, resampling, pool=POOL)
    uniforms = np.random.default_rng(9).random((B, len(POOL)))
    checked = 0
    for b in range(B):
        drawn = [POOL[int(np.floor(u * len(POOL)))] for u in uniforms[b]] if resampling.models else POOL
        values = replicate_values(y, rep_y, b, resampling)
        if len(set(drawn)) < 2:
            assert np.isnan(found.r2_draws[b])
            continue
        result = analyze(x[drawn].to_numpy(), values[drawn].to_numpy(), scale="minmax")
        assert found.r2_draws[b] == pytest.approx(result.correlations.r2, rel=1e-9, abs=1e-12)
        span_x, span_y = np.ptp(x[drawn]), np.ptp(values[drawn])
        scaled = result.line.predict((x - x[drawn].min()) / span_x)
        predicted = values[drawn].min() + scaled * span_y
        assert found.predicted_draws[b] == pytest.approx(np.asarray(predicted), rel=1e-9)
        checked += 1
    assert checked > B // 2
    whole = analyze(x[POOL].to_numpy(), y[POOL].to_numpy())
    assert found.r2["r2"] == pytest.approx(whole.correlations.r2, rel=1e-12)
    assert found.r2["r2_low"] <= found.r2["r2_high"] and found.pool == POOL
    assert found.table.residual.to_numpy() == pytest.approx((found.table.measured - found.table.predicted).to_numpy())


# --------------------------------------------------------------------------- properties checked by hand


def test_a_model_above_the_whole_zoo_ranks_first_on_every_pool_and_point_ranks_are_the_leaderboards():
    zoo = reference.load("hesse2025_table12").set_index("id")
    quba = pd.Series(quba_score(zoo[list(DIMENSIONS)].to_numpy()), index=zoo.index)
    found = score_ranks(quba, resampling=Resampling(200, over="models"))
    assert found.table["rank"].tolist() == rank_descending(quba).tolist()
    best = quba.idxmax()
    assert found.table.loc[best, "p_rank_le_1"] == 1.0 and found.table.loc[best, "rank_high"] == 1
    worst = quba.idxmin()
    assert (found.ranks[:, zoo.index.get_loc(worst)] == 326).all()
    assert (found.table.rank_low <= found.table.rank_median).all()
    assert (found.table.rank_median <= found.table.rank_high).all()
    for k_low, k_high in ((1, 5), (5, 10)):
        assert (found.table[f"p_rank_le_{k_low}"] <= found.table[f"p_rank_le_{k_high}"]).all()


def test_a_new_models_rank_among_a_resampled_zoo_is_one_plus_a_binomial():
    """Placed among P models drawn with replacement from a zoo where a share q scores higher, a new model's rank
    − 1 is Binomial(P, q): mean P·q, variance P·q·(1 − q)."""
    zoo = pd.Series(np.linspace(0, 1, 100), index=[f"z{i}" for i in range(100)])
    scores = pd.concat([zoo, pd.Series({"new": 0.705})])  # 30 of the 100 (70/99 ... 99/99) above it
    found = score_ranks(scores, resampling=Resampling(4000, seed=11, over="models"), pool=list(zoo.index))
    ranks = found.ranks[:, -1] - 1
    assert found.table.loc["new", "rank"] == 31
    assert ranks.mean() == pytest.approx(100 * 0.3, abs=4 * np.sqrt(100 * 0.3 * 0.7 / 4000))
    assert ranks.var() == pytest.approx(100 * 0.3 * 0.7, rel=0.1)


def test_without_replicates_or_pool_resampling_every_rank_is_the_point_rank():
    matrix = reference.load("heuillet2025_results").query("protocol == 'FFT-50'")
    voters = aggregates.voter_matrix(matrix, config=["backbone", "loss"], dataset="dataset")
    voters.index = [f"{backbone} {loss}" for backbone, loss in voters.index]
    found = borda_ranks(voters, resampling=Resampling(3, over="images"))
    published = aggregates.global_rank(aggregates.borda_score_of(voters))
    assert found.table["rank"].tolist() == published.tolist()
    assert (found.ranks == found.table["rank"].to_numpy()).all()
    assert (found.table.rank_low == found.table.rank_high).all() and found.with_replicates == []


def test_resamples_are_seeded(scores):
    point, replicates = scores
    first = score_ranks(point, replicates, Resampling(B, seed=1), pool=POOL)
    again = score_ranks(point, replicates, Resampling(B, seed=1), pool=POOL)
    other = score_ranks(point, replicates, Resampling(B, seed=2), pool=POOL)
    assert np.array_equal(first.ranks, again.ranks) and not np.array_equal(first.ranks, other.ranks)


def test_bad_settings_are_refused_naming_the_parameter(scores):
    point, replicates = scores
    for kwargs, name in (({"resamples": 0}, "resamples"), ({"seed": -1}, "seed"), ({"level": 1.0}, "level")):
        with pytest.raises(ConfigError) as err:
            Resampling(**kwargs)
        assert err.value.parameters == (name,)
    with pytest.raises(ConfigError, match="pool must name distinct models") as err:
        score_ranks(point, pool=["m0", "unknown"])
    with pytest.raises(ConfigError, match=r"resamples 10: the replicates of scores have shape \(40, 6\)"):
        score_ranks(point, replicates, Resampling(10, over="images"))
    with pytest.raises(ConfigError, match="scores must be one finite value per model"):
        score_ranks(pd.Series({"a": 1.0, "b": np.nan}))


# ------------------------------------------------------------------- the image bootstrap from run folders


def test_run_replicates_are_paired_draws_of_the_same_images(tmp_path):
    """Three runs bootstrapped by ``evaluate``'s code with one seed: replicate b of each is its accuracy on the
    same draw b of the images (:func:`bootstrap_counts`), so ranking the replicates ranks the runs on one draw."""
    hits = {"timm:a": _hits(list(range(0, 60, 10))), "timm:b": _hits(list(range(0, 60, 6))), "timm:c": _hits([1, 2])}
    runs = {name: write_bootstrapped_run(tmp_path, name, found, _hits([0], 30)) for name, found in hits.items()}
    suites = {name: json.loads((folder / "suite.json").read_text()) for name, folder in runs.items()}
    number = number_path("accuracies", "imagenet_val", "value")
    replicates = run_replicates(suites, runs, number)
    counts = bootstrap_counts(0, IDS, range(RESAMPLES)).double()
    for name, found in hits.items():
        assert replicates[name].to_numpy() == pytest.approx((counts @ found.double() / len(IDS)).numpy())
    point = pd.Series({name: float(found.double().mean()) for name, found in hits.items()})
    ranked = score_ranks(point, replicates, Resampling(RESAMPLES, over="images"))
    by_hand = torch.stack([counts @ hits[name].double() for name in point.index], dim=1).numpy()
    expected = np.stack([rank_descending(pd.Series(row)).to_numpy() for row in by_hand]).astype(float)
    assert np.array_equal(ranked.ranks, expected)
    other = write_bootstrapped_run(tmp_path, "timm:d", _hits([3]), _hits([0], 30), seed=1)
    suites["timm:d"], runs["timm:d"] = json.loads((other / "suite.json").read_text()), other
    with pytest.raises(RunFolderError, match="not the same draws of the images"):
        run_replicates(suites, runs, number)
