"""Sum, Borda and MAC of Heuillet et al. 2025; reproduces the paper's 240 ranking rows (tests/data/papers).

Missing accuracies follow the authors' code (RobustGen's ``load_results.py`` and ``process_database.py``):
the expected numbers of the missing-value tests are those that code prints for the same tables.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from imagenet_suite.scoring.metrics.aggregates import (
    ROBUSTGEN_METRICS,
    borda_score,
    borda_score_of,
    global_rank,
    incomplete_datasets,
    mac_per_dataset,
    mean_absolute_correlation,
    sum_score,
    sum_score_of,
    voter_matrix,
    voter_matrix_from_long,
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


# -- missing accuracies (issue 25, item 5) -------------------------------------------------------------------

NAN = np.nan
# A misses one accuracy of d1 (its L-inf); B has all; C has none (RobustGen's loader gives it NaN rows).
MISSING_ONE = {
    ("A", "d1"): (0.9, NAN, 0.5, 0.4, 0.6),
    ("A", "d2"): (0.8, 0.3, 0.4, 0.3, 0.5),
    ("B", "d1"): (0.7, 0.2, 0.3, 0.2, 0.4),
    ("B", "d2"): (0.7, 0.2, 0.3, 0.2, 0.4),
    ("C", "d1"): (NAN,) * 5,
    ("C", "d2"): (NAN,) * 5,
}


def robustgen_table(accuracies: dict) -> pd.DataFrame:
    rows = [
        {"config": c, "dataset": d, **dict(zip(ROBUSTGEN_METRICS, v, strict=True))} for (c, d), v in accuracies.items()
    ]
    return pd.DataFrame(rows)


def test_sum_drops_a_dataset_with_a_missing_accuracy_as_the_authors_code():
    table = robustgen_table(MISSING_ONE)
    scores = sum_score(table)
    # A: d1 is incomplete, so only d2 counts: 0.8 + 0.3 + 0.4 + 0.3 + 0.5; B: 2 x (0.7 + 0.2 + 0.3 + 0.2 + 0.4)
    assert scores.to_dict() == pytest.approx({"A": 2.3, "B": 3.6, "C": 0.0}, abs=1e-12)
    assert scores["A"] < scores["B"]
    assert global_rank(scores).to_dict() == {"B": 1, "A": 2, "C": 3}  # C is kept, ranked last
    assert incomplete_datasets(voter_matrix(table)).to_dict() == {"A": 1, "B": 0, "C": 2}


def test_skip_missing_is_the_old_sum_under_its_own_name():
    table = robustgen_table(MISSING_ONE)
    scores = sum_score(table, convention="skip_missing")
    # A: 0.9 + 0.5 + 0.4 + 0.6 (d1 without the missing one) + 2.3 (d2)
    assert scores.to_dict() == pytest.approx({"A": 4.7, "B": 3.6, "C": 0.0}, abs=1e-12)
    with pytest.raises(ValueError, match="unknown Sum convention 'nansum'"):
        sum_score(table, convention="nansum")


def test_borda_with_a_missing_accuracy_as_the_authors_code():
    # Every voter ranks A and B (C has nothing): A is above B on all 9 voters it has; d1's (L-inf) voter
    # ranks B alone. A's d1 is incomplete: A gets 5 x 2 from d2 only, B 5 x 1 from each dataset.
    assert borda_score(robustgen_table(MISSING_ONE)).to_dict() == {"A": 10.0, "B": 10.0, "C": 0.0}


def test_a_voter_no_configuration_has_is_no_voter():
    # Nobody has L1 on d1: pandas pivot_table drops that column in the authors' code, and d1 still counts
    # with its four other voters (A: 4 x 2 + 5 x 2 = 18, B: 4 x 1 + 5 x 1 = 9). The per-dataset sums are
    # missing for both (sums_from_dict), so only d2 adds to Sum.
    accuracies = {
        ("A", "d1"): (0.9, 0.3, 0.5, NAN, 0.6),
        ("A", "d2"): (0.8, 0.3, 0.4, 0.3, 0.5),
        ("B", "d1"): (0.7, 0.2, 0.3, NAN, 0.4),
        ("B", "d2"): (0.7, 0.2, 0.3, 0.2, 0.4),
    }
    table = robustgen_table(accuracies)
    assert borda_score(table).to_dict() == {"A": 18.0, "B": 9.0}
    assert sum_score(table).to_dict() == pytest.approx({"A": 2.3, "B": 1.8}, abs=1e-12)


def long_table(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["config", "dataset", "perturbation", "accuracy"])


def test_the_voter_matrix_of_the_long_and_robustgen_layouts_agree():
    table = robustgen_table(MISSING_ONE)
    rows = [(c, d, z, v) for (c, d), values in MISSING_ONE.items() for z, v in zip(ROBUSTGEN_METRICS, values)]
    from_long = voter_matrix_from_long(long_table(rows))
    pd.testing.assert_frame_equal(from_long, voter_matrix(table)[from_long.columns])
    assert sum_score_of(from_long).to_dict() == pytest.approx({"A": 2.3, "B": 3.6, "C": 0.0}, abs=1e-12)
    with pytest.raises(ValueError, match="1 repeated \\(configuration, dataset, perturbation\\) rows"):
        voter_matrix_from_long(long_table([*rows, rows[0]]))


# -- a hand computation: 2 datasets x 3 perturbation types x 3 models ------------------------------------------

HAND = {  # dataset -> perturbation type -> (M1, M2, M3)
    "d1": {"clean": (0.9, 0.8, 0.7), "fog/1": (0.5, 0.6, 0.4), "snow/1": (0.3, 0.3, 0.1)},
    "d2": {"clean": (0.6, 0.7, 0.5), "fog/1": (0.2, 0.4, 0.3), "snow/1": (0.1, 0.2, 0.3)},
}
MODELS = ("M1", "M2", "M3")
# Borda, 1 + #models strictly below per voter:
#   d1: clean (3, 2, 1), fog (2, 3, 1), snow (2, 2, 1: M1 and M2 tie) -> (7, 7, 3)
#   d2: clean (2, 3, 1), fog (1, 3, 2), snow (1, 2, 3)                -> (4, 8, 6)
HAND_BORDA = {"M1": 11.0, "M2": 15.0, "M3": 9.0}
# Sum: M1 1.7 + 0.9, M2 1.7 + 1.3, M3 1.2 + 1.1
HAND_SUM = {"M1": 2.6, "M2": 3.0, "M3": 2.3}
# MAC, Spearman on average ranks (ascending) across the three models:
#   d1: clean (3, 2, 1), fog (2, 3, 1), snow (2.5, 2.5, 1): rho(clean, fog) = 1 - 6 * 2 / 24 = 0.5,
#       rho(clean, snow) = rho(fog, snow) = 1.5 / sqrt(2 * 1.5) = sqrt(3) / 2 -> (0.5 + sqrt(3)) / 3
#   d2: clean (2, 3, 1), fog (1, 3, 2), snow (1, 2, 3): rho = 0.5, -0.5, 0.5 -> 0.5
HAND_MAC = {"d1": (0.5 + np.sqrt(3)) / 3, "d2": 0.5}


def hand_rows() -> list[tuple[str, str, str, float]]:
    return [
        (model, dataset, type_, value)
        for dataset, types in HAND.items()
        for type_, values in types.items()
        for model, value in zip(MODELS, values, strict=True)
    ]


def test_hand_computed_borda_sum_and_mac():
    matrix = voter_matrix_from_long(long_table(hand_rows()))
    assert borda_score_of(matrix).to_dict() == HAND_BORDA
    assert global_rank(borda_score_of(matrix)).to_dict() == {"M1": 2, "M2": 1, "M3": 3}
    assert sum_score_of(matrix).to_dict() == pytest.approx(HAND_SUM, abs=1e-12)
    mac = mac_per_dataset(matrix)
    assert mac.to_dict() == pytest.approx(HAND_MAC, abs=1e-12)
    assert mac.mean() == pytest.approx(0.25 + (0.5 + np.sqrt(3)) / 6, abs=1e-12)  # 0.622008...
    # the same through the RobustGen layout (both datasets have the same three types)
    wide = long_table(hand_rows()).pivot_table(index=["config", "dataset"], columns="perturbation", values="accuracy")
    wide = wide.reset_index()
    types = ("clean", "fog/1", "snow/1")
    assert borda_score(wide, metrics=types).to_dict() == HAND_BORDA
    mac_table = mean_absolute_correlation(wide, metrics=types)
    assert mac_table.loc["all", ["d1", "d2"]].to_dict() == pytest.approx(HAND_MAC, abs=1e-12)
