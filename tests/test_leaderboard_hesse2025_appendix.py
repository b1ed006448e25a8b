"""Beyond Accuracy (Hesse et al. 2025), appendix: Table 7 (adversarial robustness vs AutoAttack per group),
Fig. 13 (Spearman matrices per subgroup: over the runs' groups and over the published zoo) and Fig. 14 (the
matrix with AutoAttack as the adversarial dimension), on a small synthetic leaderboard, against scipy."""

from __future__ import annotations

import html
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from imagenet_suite.reference import load
from imagenet_suite.scoring.metrics.quba import DIMENSIONS
from imagenet_suite.scoring.presentation.figures import hesse2025 as figures
from imagenet_suite.scoring.summary.groups import read_groups
from imagenet_suite.scoring.summary.leaderboard import leaderboard, leaderboard_markdown
from imagenet_suite.scoring.summary.papers import hesse2025
from imagenet_suite.scoring.summary.papers import hesse2025_correlations as correlations
from imagenet_suite.scoring.summary.papers.hesse2025_correlations import PUBLISHED_SUBGROUPS, published_subgroups
from tests.test_leaderboard_papers import random_dims, with_dimensions, write_groups
from tests.test_read_runs import suite_json

GROUP_A, GROUP_B = ["m:0", "m:1", "m:2"], ["m:3", "m:4", "m:5"]
AUTOATTACK = dict(zip(GROUP_A + GROUP_B, (0.02, 0.05, 0.01, 0.09, 0.12, 0.07), strict=True))


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    values = random_dims(6, seed=3)
    suites = {m: with_dimensions(suite_json(m, d[0]), dict(zip(DIMENSIONS, d, strict=True))) for m, d in values.items()}
    for model, suite in suites.items():
        suite["summary"]["quba_autoattack"] = {"adversarial_robustness": AUTOATTACK[model]}
    path = tmp_path_factory.mktemp("groups") / "groups.csv"
    rows = [("(a)", "IN-1k", m) for m in GROUP_A] + [("(a)", "IN-21k", m) for m in GROUP_B]
    return leaderboard(suites, groups=read_groups(write_groups(path, rows)))


def test_table_7_group_means_and_marks_equal_scipys_t_test(board):
    table = board.hesse2025.autoattack_groups.set_index(["group", "dimension"])
    quba = board.quba
    for column in ("adversarial_robustness", "autoattack_robustness"):
        a, b = quba.loc[GROUP_A, column].to_numpy(float), quba.loc[GROUP_B, column].to_numpy(float)
        entry = table.loc[("IN-21k", column)]
        assert entry["mean"] == pytest.approx(b.mean(), abs=1e-12) and entry["models"] == 3
        assert entry["p_value"] == pytest.approx(stats.ttest_ind(a, b).pvalue, abs=1e-12)
        assert table.loc[("IN-1k", column), "mean"] == pytest.approx(a.mean(), abs=1e-12)
    # hand-checked: AutoAttack (0.02, 0.05, 0.01) vs (0.09, 0.12, 0.07): means 0.02667 and 0.09333, p < 0.05
    assert table.loc[("IN-21k", "autoattack_robustness"), "stars"] == "***"
    assert quba.loc["m:4", "autoattack_robustness"] == 0.12
    text = leaderboard_markdown(board)
    assert "### Adversarial robustness vs AutoAttack per group (Table 7)" in text
    assert re.search(r"\| \(a\) \| IN-21k \| 3/3 \| [\d.]+( \*+)? \| 0\.09333 \*\*\* \|", text)


def test_fig_13_per_group_and_fig_14_equal_scipys_spearman(board):
    quba = board.quba
    for key, models in ((("(a)", "IN-1k"), GROUP_A), (("(a)", "IN-21k"), GROUP_B)):
        rho, p, n = board.hesse2025.group_correlations[key]
        want = stats.spearmanr(quba.loc[models, "accuracy"], quba.loc[models, "shape_bias"])
        assert (rho.loc["accuracy", "shape_bias"], p.loc["accuracy", "shape_bias"]) == pytest.approx(
            (want.statistic, want.pvalue), abs=1e-12
        )
        assert n.loc["accuracy", "shape_bias"] == 3
    rho, p, _ = board.hesse2025.autoattack_correlations
    want = stats.spearmanr(list(AUTOATTACK.values()), quba.loc[list(AUTOATTACK), "accuracy"])
    assert rho.loc["adversarial_robustness", "accuracy"] == pytest.approx(want.statistic, abs=1e-12)
    assert rho.loc["c_robustness", "accuracy"] == board.hesse2025.correlations.loc["c_robustness", "accuracy"]


def test_fig_13_and_14_files(board, tmp_path):
    result = board.hesse2025
    standard = (result.correlations, result.correlation_p, result.correlation_models)
    written = correlations.write(result.group_correlations, {}, result.autoattack_correlations, standard, tmp_path)
    for name in ("quba_group_correlations", "quba_autoattack_correlations"):
        png = tmp_path / f"leaderboard_{name}.png"
        assert png in written and png.read_bytes()[:4] == b"\x89PNG"
    assert not (tmp_path / "leaderboard_quba_published_subgroup_correlations.png").exists()  # no --reference
    groups = pd.read_csv(tmp_path / "leaderboard_quba_group_correlations.csv")
    assert list(groups.columns) == ["setup", "group", "dimension_a", "dimension_b", "rho", "p_value", "models"]
    assert len(groups) == 2 * 81
    aa = pd.read_csv(tmp_path / "leaderboard_quba_autoattack_correlations.csv").set_index(
        ["adversarial_dimension", "dimension_a", "dimension_b"]
    )
    want = stats.spearmanr(list(AUTOATTACK.values()), board.quba.loc[list(AUTOATTACK), "accuracy"]).statistic
    assert aa.loc[("autoattack", "adversarial_robustness", "accuracy"), "rho"] == pytest.approx(want, abs=1e-12)
    text = leaderboard_markdown(board)
    assert (
        "](leaderboard_quba_group_correlations.png)" in text
        and "](leaderboard_quba_autoattack_correlations.png)" in text
    )
    assert "`leaderboard ... --reference hesse2025`" in text


def test_fig_13_and_14_in_leaderboard_html(board):
    drawn = {figure.name: figure for figure in figures.appendix(board)}
    svg = drawn[figures.SUBGROUPS].svg
    assert svg.startswith("<svg") and ">(a): IN-1k<" in html.unescape(svg)
    value = board.hesse2025.group_correlations[("(a)", "IN-1k")][0].loc["shape_bias", "accuracy"]
    assert f">{value:.2f}<".replace("-", "−") in svg or f">{value:.2f}<" in svg
    assert drawn[figures.AUTOATTACK].svg.startswith("<svg")
    assert drawn[figures.PUBLISHED].svg is None and "--reference hesse2025" in drawn[figures.PUBLISHED].missing


def test_fig_13_over_the_published_zoo_is_scipys_and_reads_as_the_paper_says():
    panels = published_subgroups()
    zoo = load("hesse2025_table12")
    sizes = {name: int(m[2].loc["accuracy", "accuracy"]) for (name,), m in panels.items()}
    assert sizes == {
        "all CNNs": 170,
        "CNNs trained on ImageNet-1k": 140,
        "CNNs trained on ImageNet-21k": 16,
        "all Transformers": 115,
        "Transformers trained on ImageNet-1k": 84,
        "Transformers trained on ImageNet-21k": 19,
    }
    cnn21k = zoo[(zoo.architecture == "CNN") & (zoo.train_data == "IN21k")]
    want = stats.spearmanr(cnn21k.calibration_error, cnn21k.ood_robustness)
    rho, p, _ = panels[("CNNs trained on ImageNet-21k",)]
    assert (rho.loc["calibration_error", "ood_robustness"], p.loc["calibration_error", "ood_robustness"]) == (
        pytest.approx(want.statistic, abs=1e-12),
        pytest.approx(want.pvalue, abs=1e-12),
    )

    def entry(panel, a, b):
        rho, p, _ = panels[(panel,)]
        return rho.loc[a, b], p.loc[a, b]

    # App. of Hesse et al. 2025 on Fig. 13: "for CNNs, C-robustness and OOD robustness are negatively correlated
    # with adversarial robustness, while the opposite holds for Transformers" ...
    for other in ("c_robustness", "ood_robustness"):
        assert (
            entry("all CNNs", "adversarial_robustness", other)[0]
            < 0
            < entry("all Transformers", "adversarial_robustness", other)[0]
        )
        # ... "only apparent when trained on ImageNet-1k but not when trained on ImageNet-21k"
        assert entry("CNNs trained on ImageNet-1k", "adversarial_robustness", other)[0] < 0
        assert entry("CNNs trained on ImageNet-21k", "adversarial_robustness", other)[0] > 0
    # "the calibration error is positively correlated with accuracy for CNNs and negatively for Transformers
    # (however, both correlations are not statistically significant)"
    cnn, transformer = (
        entry("all CNNs", "accuracy", "calibration_error"),
        entry("all Transformers", "accuracy", "calibration_error"),
    )
    assert cnn[0] > 0 > transformer[0] and cnn[1] > 0.05 and transformer[1] > 0.05
    # "accuracy and shape bias are strongly correlated for CNN-based models, ... only a weak correlation for Transformer"
    assert entry("all CNNs", "accuracy", "shape_bias")[0] > entry("all Transformers", "accuracy", "shape_bias")[0]
    assert np.isfinite(entry("all Transformers", "params_millions", "accuracy")[0])


def test_fig_13_of_the_published_zoo_with_reference(board, tmp_path):
    analyses = hesse2025.analyses(board.quba, published=True)
    assert set(analyses.published_correlations) == {(name,) for name in PUBLISHED_SUBGROUPS}
    text = "\n".join(hesse2025.markdown(board.quba, {}, analyses, board.models))
    assert "CNNs trained on ImageNet-21k (16)" in text
    written = correlations.write({}, analyses.published_correlations, None, (None, None, None), tmp_path)
    png = tmp_path / "leaderboard_quba_published_subgroup_correlations.png"
    assert png in written and png.read_bytes()[:4] == b"\x89PNG"
    table = pd.read_csv(tmp_path / "leaderboard_quba_published_subgroup_correlations.csv")
    assert table.subgroup.nunique() == 6 and len(table) == 6 * 81


def test_reference_hesse2025_asks_for_the_published_panels():
    values = random_dims(3, seed=4)
    suites = {m: with_dimensions(suite_json(m, d[0]), dict(zip(DIMENSIONS, d, strict=True))) for m, d in values.items()}
    assert not leaderboard(suites).hesse2025.published_correlations
    placed = leaderboard(suites, reference=["hesse2025"], allow_protocol_mismatch=True)
    assert set(placed.hesse2025.published_correlations) == {(name,) for name in PUBLISHED_SUBGROUPS}
