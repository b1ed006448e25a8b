"""Heuillet et al. 2025, Figs. 4 and 3: the groups' effects on the Borda score (issue 37).

The statistics are the authors' code's (``scipy.stats.f_oneway``, ``statsmodels`` Tukey HSD at alpha 0.1 with
their letter rule), checked against the libraries on hand-checkable cases, against the p-values the authors'
notebook (``results_analysis/paper_figure3.ipynb``, whose figures the paper publishes) printed for the published
panels, recomputed from the published Borda scores of Table 10, and through a small leaderboard.
"""

from __future__ import annotations

import gc

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.formula.api import ols
from statsmodels.stats.anova import anova_lm
from statsmodels.stats.multicomp import pairwise_tukeyhsd
from statsmodels.stats.multitest import multipletests

from imagenet_suite import cli
from imagenet_suite.scoring.summary.groups import Membership, ModelGroups
from imagenet_suite.scoring.summary.papers.heuillet2025 import (
    CORRELATION_COLUMNS,
    EFFECT_COLUMNS,
    NESTED_COLUMNS,
    ODDS_COLUMNS,
    PAPER_TYPES,
    correlation_tests,
    main_effects,
    nested_effects,
    one_way_anova,
    published_fig5,
    tukey_letters,
)
from tests.test_heuillet_groups import write_runs
from tests.test_scoring_aggregates import RANKINGS

SAMPLES = {"x": [1.0, 2.0, 3.0, 2.5], "y": [4.0, 5.0, 6.0], "z": [2.0, 3.5, 2.5]}


def test_one_way_anova_is_scipys_and_statsmodels_classic_anova():
    frame = pd.DataFrame([(g, v) for g, values in SAMPLES.items() for v in values], columns=["g", "v"])
    f, p = one_way_anova(list(SAMPLES.values()))
    assert (f, p) == pytest.approx(tuple(stats.f_oneway(*SAMPLES.values())), rel=1e-12)
    table = anova_lm(ols("v ~ C(g)", data=frame).fit(), typ=2)  # the same classic ANOVA, not Welch's
    assert (f, p) == pytest.approx((table.loc["C(g)", "F"], table.loc["C(g)", "PR(>F)"]), rel=1e-9)
    assert all(np.isnan(one_way_anova([[1.0], [2.0]])))  # no degree of freedom within the groups
    assert all(np.isnan(one_way_anova([[1.0, 2.0]])))  # one group


def test_tukey_letters_follow_statsmodels_rejections():
    values = [v for sample in SAMPLES.values() for v in sample]
    labels = [g for g, sample in SAMPLES.items() for _ in sample]
    table = pairwise_tukeyhsd(values, labels, alpha=0.1).summary().data
    rejected = {frozenset((row[0], row[1])) for row in table[1:] if row[-1]}
    letters = tukey_letters(values, labels)
    for a in SAMPLES:
        for b in SAMPLES:
            if a < b:  # a shared letter: never a significant difference
                assert bool(set(letters[a]) & set(letters[b])) <= (frozenset((a, b)) not in rejected)
    assert letters == {"x": "a", "y": "b", "z": "a"}  # y differs from both at 90 % (hand: its mean is 2 away)


def fft50_groups() -> tuple[pd.Series, ModelGroups]:
    from tests.conftest import TEST_DATA

    published = pd.read_csv(TEST_DATA / RANKINGS)
    published = published[published.protocol == "FFT-50"].reset_index(drop=True)
    names = [f"c{i}" for i in published.index]
    setups = ("loss", "model_size", "model_type", "pre_training_strategy")
    rows = [Membership(s, str(published.loc[i, s]), name, 0) for s in setups for i, name in enumerate(names)]
    return pd.Series(published["borda"].to_numpy(dtype=float), index=names), ModelGroups(tuple(rows))


def test_the_authors_printed_p_values_from_the_published_borda_of_table_10():
    borda, groups = fft50_groups()
    effects = main_effects(borda, groups, tukey=False)  # the letters: checked against statsmodels above
    assert list(effects.columns) == list(EFFECT_COLUMNS)
    pretraining = effects[effects.setup == "pre_training_strategy"].iloc[0]
    # paper_figure3.ipynb / load_results_table_fft50.ipynb: anova_lm of borda ~ C(pre_training_strategy)
    assert (pretraining.anova_f, pretraining.anova_p) == pytest.approx((1.993961, 0.089397), abs=5e-7)
    means = effects[effects.setup == "pre_training_strategy"].set_index("group")["mean_borda"]
    assert means["self-supervised (multimodal)"] == pytest.approx(1566.833333, abs=1e-6)
    nested = (
        nested_effects(borda, groups, tukey=False).drop_duplicates(["outer", "inner"]).set_index(["outer", "inner"])
    )
    assert list(nested.reset_index().columns) == list(NESTED_COLUMNS)
    printed = {  # the p-values paper_figure3.ipynb printed for the published Fig. 3 panels
        ("loss", "model_type"): 0.005198919606017721,
        ("model_type", "pre_training_strategy"): 0.04036336819364573,
        ("model_size", "pre_training_strategy"): 0.00012731104487519258,
    }
    for pair, p in printed.items():
        assert nested.loc[pair, "anova_p"] == pytest.approx(p, rel=1e-9), pair
    # Holm (the extra) over the four main-effect ANOVAs is statsmodels'
    tests = effects.drop_duplicates("setup")
    assert tests["anova_p_holm"].tolist() == pytest.approx(multipletests(tests["anova_p"], method="holm")[1].tolist())


def test_figs_4_and_3_through_a_small_leaderboard(tmp_path, capsys):
    folders = write_runs(tmp_path)
    groups = tmp_path / "groups.csv"
    rows = [("size", "large", "timm:A"), ("size", "large", "timm:B"), ("size", "small", "timm:C"),
            ("size", "small", "open_clip:D"), ("size", "small", "open_clip:E"), ("loss", "L1", "timm:A"),
            ("loss", "L2", "timm:B"), ("loss", "L1", "timm:C"), ("loss", "L2", "open_clip:D")]  # fmt: skip
    groups.write_text("setup,group,model\n" + "".join(",".join(row) + "\n" for row in rows))
    board = tmp_path / "board"
    assert cli.main(["leaderboard", *map(str, folders), "--groups", str(groups), "--out", str(board)]) == 0
    capsys.readouterr()
    borda = pd.read_csv(board / "leaderboard_heuillet2025.csv", index_col="model")["borda"]
    effects = pd.read_csv(board / "leaderboard_heuillet2025_main_effects.csv", keep_default_na=False)
    assert list(effects.columns) == list(EFFECT_COLUMNS)
    assert effects[["setup", "group", "models"]].values.tolist() == [
        ["size", "large", 2], ["size", "small", 3], ["loss", "L1", 2], ["loss", "L2", 2]
    ]  # fmt: skip
    samples = {
        "size": (borda[["timm:A", "timm:B"]], borda[["timm:C", "open_clip:D", "open_clip:E"]]),
        "loss": (borda[["timm:A", "timm:C"]], borda[["timm:B", "open_clip:D"]]),
    }
    tests = {setup: stats.f_oneway(*values) for setup, values in samples.items()}
    holm = dict(zip(tests, multipletests([t.pvalue for t in tests.values()], method="holm")[1], strict=True))
    for row in effects.itertuples():
        assert (row.anova_f, row.anova_p) == pytest.approx((tests[row.setup].statistic, tests[row.setup].pvalue))
        assert row.anova_p_holm == pytest.approx(holm[row.setup])
    assert effects["mean_borda"].tolist() == pytest.approx([v.mean() for pair in samples.values() for v in pair])
    size = samples["size"]
    letters = tukey_letters([*size[0], *size[1]], ["large"] * 2 + ["small"] * 3)
    assert effects["tukey"].tolist()[:2] == [letters["large"], letters["small"]]
    nested = pd.read_csv(board / "leaderboard_heuillet2025_nested_effects.csv")
    assert list(nested.columns) == list(NESTED_COLUMNS)
    cells = {
        "large | L1": ["timm:A"],
        "large | L2": ["timm:B"],
        "small | L1": ["timm:C"],
        "small | L2": ["open_clip:D"],
    }
    assert nested["anova_p"].isna().all()  # four cells of one model each: no degree of freedom within them
    assert [f"{r.outer_group} | {r.inner_group}" for r in nested.itertuples()] == list(cells)
    for figure in ("leaderboard_heuillet2025_main_effects.png", "leaderboard_heuillet2025_fig5.png"):
        assert (board / figure).stat().st_size > 1000, figure
    assert len(pd.read_csv(board / "leaderboard_heuillet2025_fig5.csv")) == 9
    text = (board / "leaderboard.md").read_text()
    assert "### Effects of the groups on Borda (Heuillet et al. 2025, Figs. 4 and 3)" in text
    assert "`scipy.stats.f_oneway`, the classic one-way ANOVA (the captions say Welch's)" in text
    assert "`anova_p_holm` is an extra, Holm's adjustment" in text
    assert "Mean Borda per group of models, Tukey letters, ANOVA p (Fig. 4)" in (board / "leaderboard.html").read_text()


def test_fig5_from_the_published_measurements_is_the_authors_printed_table():
    """The table results_analysis/paper_figure5.ipynb printed (the published Fig. 5's bars and p-values),
    recomputed from the released measurements through scipy.stats.fisher_exact."""
    printed = [  # protocol, size, TRADES wins, Classic AT wins, odds ratio, p
        ("FFT-50", "small", 5, 2, 6.25, 2.861305e-01), ("FFT-5", "small", 4, 3, 1.777778, 1.0),
        ("LP-50", "small", 3, 4, 0.5625, 1.0), ("FFT-50", "medium", 11, 4, 7.5625, 2.683773e-02),
        ("FFT-5", "medium", 7, 8, 0.765625, 1.0), ("LP-50", "medium", 10, 5, 4.0, 1.431110e-01),
        ("FFT-50", "large", 18, 0, np.inf, 2.203824e-10), ("FFT-5", "large", 15, 3, 25.0, None),
        ("LP-50", "large", 15, 3, 25.0, None),
    ]  # fmt: skip
    table = published_fig5().set_index(["protocol", "model_size"])
    assert list(table.reset_index().columns) == list(ODDS_COLUMNS) and len(table) == 9
    for protocol, size, trades, classic, odds, p in printed:
        row = table.loc[(protocol, size)]
        assert (row.trades_wins, row.classic_wins) == (trades, classic)
        assert row.odds_ratio == pytest.approx(odds, rel=1e-6)
        expected = stats.fisher_exact([[trades, classic], [classic, trades]]).pvalue if p is None else p
        assert row.p_value == pytest.approx(expected, rel=1e-6)


def test_fig6_correlations_over_the_published_fft50_rows_and_a_small_leaderboard(tmp_path, capsys):
    """Fig. 6 pools the 480 FFT-50 (configuration, dataset) rows; its values (recomputed by hand with scipy
    from the released results_dataset.csv) and scipy's spearmanr on the runs of a small leaderboard."""
    from imagenet_suite import reference

    results = reference.load("heuillet2025_results")
    rows = results[results.protocol == "FFT-50"][["clean_acc", "Linf_acc", "L2_acc", "L1_acc", "common_acc"]]
    tests = correlation_tests(rows.set_axis(list(PAPER_TYPES), axis=1)).set_index(["type_a", "type_b"])
    assert list(tests.reset_index().columns) == list(CORRELATION_COLUMNS) and len(tests) == 10
    pooled = {("clean", "common"): 0.983, ("clean", "Linf"): 0.793, ("clean", "L2"): 0.804, ("clean", "L1"): 0.753,
              ("Linf", "L2"): 0.966, ("L2", "L1"): 0.923}  # fmt: skip
    for pair, rho in pooled.items():
        assert tests.loc[pair, "rho"] == pytest.approx(rho, abs=0.0005), pair
    assert set(tests["stars"]) == {"***"} and (tests["models"] == 480).all()

    folders = write_runs(tmp_path)
    assert cli.main(["leaderboard", *map(str, folders), "--out", str(tmp_path / "board")]) == 0
    assert gc.get_freeze_count() == 0  # the command froze its runs out of the collector's reach, and let them go
    capsys.readouterr()
    accuracies = pd.read_csv(tmp_path / "board" / "leaderboard_heuillet2025.csv", index_col="model")
    written = pd.read_csv(tmp_path / "board" / "leaderboard_heuillet2025_correlation_tests.csv", keep_default_na=False)
    for row in written.itertuples():
        rho, p = stats.spearmanr(accuracies[row.type_a], accuracies[row.type_b])
        assert (row.rho, row.p_value) == pytest.approx((rho, p)), (row.type_a, row.type_b)
    assert (
        "Fig. 6: Spearman ρ between the types over the ranked models"
        in (tmp_path / "board" / "leaderboard.md").read_text()
    )
