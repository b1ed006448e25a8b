"""Sum, Borda and MAC of Heuillet et al. 2025; reproduces the paper's 240 ranking rows (tests/data/papers)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from imagenet_suite.scoring.metrics.aggregates import (
    ROBUSTGEN_METRICS,
    borda_score,
    global_rank,
    mean_absolute_correlation,
    sum_score,
    voter_points,
)

# The paper's Tables 10, 11 and 12 (FFT-50, FFT-5 and LP-50 rankings, 240 rows); provenance in
# tests/data/README.md.
RANKINGS = "papers/heuillet2025_tables10-12_rankings_240_rows.csv"

# Per-dataset accuracies of FFT-50's winner (convnext_base.fb_in22k, TRADES), computed from the paper's
# results CSV (MaxHeuillet/robust_training): dataset, clean, linf, l2, l1, common, sum.
TOP_CONFIGURATION = [
    ("caltech101", 0.959, 0.841, 0.888, 0.860, 0.854, 4.402),
    ("fgvc-aircraft-2013b", 0.663, 0.370, 0.342, 0.133, 0.590, 2.098),
    ("flowers-102", 0.907, 0.677, 0.769, 0.639, 0.821, 3.813),
    ("oxford-iiit-pet", 0.820, 0.439, 0.494, 0.236, 0.690, 2.679),
    ("stanford_cars", 0.742, 0.449, 0.444, 0.17333, 0.635, 2.443333),
    ("uc-merced-land-use-dataset", 0.96667, 0.800, 0.900, 0.82381, 0.86349, 4.353968),
]


@pytest.fixture(scope="module")
def ranking_rows(test_data) -> pd.DataFrame:
    return pd.read_csv(test_data / RANKINGS)


def test_appendix_has_240_rows_in_three_protocols(ranking_rows):
    assert len(ranking_rows) == 240
    assert ranking_rows.groupby("protocol").size().to_dict() == {"FFT-5": 80, "FFT-50": 80, "LP-50": 80}


@pytest.mark.parametrize(("score", "rank"), [("borda", "rank_borda"), ("score_sum", "rank_sum")])
def test_global_ranks_reproduce_all_240_rows(ranking_rows, score, rank):
    for _, rows in ranking_rows.groupby("protocol"):
        assert global_rank(rows[score]).tolist() == rows[rank].tolist()


def test_tied_borda_scores_share_the_best_rank(ranking_rows):
    fft50 = ranking_rows[ranking_rows.protocol == "FFT-50"]
    ranks = global_rank(fft50.borda)
    tied = fft50.borda.duplicated(keep=False)
    assert tied.any()
    for value in fft50.borda[tied].unique():
        same = ranks[fft50.borda == value]
        assert same.nunique() == 1 and same.iloc[0] == (fft50.borda > value).sum() + 1


def top_configuration_table() -> pd.DataFrame:
    """Section 5.2: per-dataset accuracies of FFT-50's winner (clean, Linf, L2, L1, common, sum)."""
    frame = pd.DataFrame(TOP_CONFIGURATION, columns=["dataset", *ROBUSTGEN_METRICS, "sum"])
    frame["config"] = "convnext_b,sup,in22k TRADES"
    return frame


def test_sum_score_reproduces_the_winners_total(ranking_rows):
    table = top_configuration_table()
    assert len(table) == 6
    rounding = 5e-6  # the section prints a few accuracies to 5 decimals (0.96667, 0.17333, ...)
    per_dataset = table.set_index("dataset")[list(ROBUSTGEN_METRICS)].sum(axis=1)
    assert np.abs(per_dataset.to_numpy() - table["sum"].to_numpy()).max() <= 5 * rounding
    winner = ranking_rows[(ranking_rows.protocol == "FFT-50") & (ranking_rows.rank_sum == 1)].iloc[0]
    assert sum_score(table).iloc[0] == pytest.approx(winner.score_sum, abs=30 * rounding)


def test_borda_conventions_on_the_specs_tie_example():
    accuracies = pd.Series([0.5, 0.5, 0.2], index=list("ABC"))
    assert voter_points(accuracies, "robustgen_code").tolist() == [2, 2, 1]
    assert voter_points(accuracies, "paper_literal").tolist() == [1, 1, 0]
    assert voter_points(accuracies, "n_minus_rank").tolist() == [2, 2, 0]
    with pytest.raises(ValueError, match="unknown Borda convention"):
        voter_points(accuracies, "dowdall")


def synthetic_table(seed: int, configs: int = 12, datasets: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for config, dataset in itertools.product(range(configs), range(datasets)):
        values = np.round(rng.uniform(0, 1, len(ROBUSTGEN_METRICS)), 1)  # coarse: many ties
        values[rng.random(len(values)) < 0.2] = 0.0
        rows.append(
            {"config": f"c{config}", "dataset": f"d{dataset}", **dict(zip(ROBUSTGEN_METRICS, values, strict=True))}
        )
    return pd.DataFrame(rows)


def test_borda_code_convention_counts_strictly_worse_configurations():
    table = synthetic_table(0)
    expected = {}
    for config in table.config.unique():
        points = 0
        for (_, group), metric in itertools.product(table.groupby("dataset"), ROBUSTGEN_METRICS):
            mine = group.loc[group.config == config, metric].iloc[0]
            points += 1 + (group[metric] < mine).sum()
        expected[config] = points
    result = borda_score(table)
    assert result.to_dict() == expected


def test_borda_skips_datasets_with_a_missing_accuracy():
    table = synthetic_table(1)
    complete = borda_score(table)
    table.loc[(table.config == "c3") & (table.dataset == "d1"), "L1_acc"] = np.nan
    partial = borda_score(table)
    only_d1 = borda_score(table[table.dataset != "d1"])
    assert partial["c3"] == only_d1["c3"]  # c3's whole d1 contribution is dropped
    assert partial["c3"] < complete["c3"]


def test_mac_is_the_mean_absolute_spearman_off_diagonal():
    table = synthetic_table(2, configs=15)
    result = mean_absolute_correlation(table)
    for name, group in table.groupby("dataset"):
        rho = spearmanr(group[list(ROBUSTGEN_METRICS)].to_numpy()).statistic
        expected = np.abs(rho[~np.eye(5, dtype=bool)]).mean()
        assert result.loc["all", name] == pytest.approx(expected, abs=1e-12)
    assert result.loc["all", "average"] == pytest.approx(result.loc["all", ["d0", "d1", "d2"]].mean())


def test_mac_per_group_needs_two_configurations_and_averages_with_nanmean():
    table = synthetic_table(3, configs=6)
    table["loss"] = np.where(table.config.isin(["c0", "c1", "c2"]), "TRADES", "Classic AT")
    table.loc[table.config == "c5", "loss"] = "solo"  # a one-configuration group
    result = mean_absolute_correlation(table, group="loss")
    assert result.loc["solo"].isna().all()
    trades = table[table.loss == "TRADES"]
    assert result.loc["TRADES", "d0"] == pytest.approx(mean_absolute_correlation(trades).loc["all", "d0"])
    assert result.loc["Classic AT", "average"] == pytest.approx(result.loc["Classic AT", ["d0", "d1", "d2"]].mean())


def test_aggregates_refuse_malformed_tables():
    table = synthetic_table(4)
    with pytest.raises(ValueError, match="lacks columns \\['L1_acc'\\]"):
        sum_score(table.drop(columns="L1_acc"))
    with pytest.raises(ValueError, match="repeated"):
        borda_score(pd.concat([table, table.iloc[:1]]))
