"""LCA-on-the-Line (Shi et al. 2024) tables beyond Tables 2, 3 and 9: Table 4 (the LCA line under many K-means
hierarchies, aggregated) on small synthetic leaderboards, checked against scipy and numpy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from imagenet_suite.scoring.summary.leaderboard import leaderboard, leaderboard_markdown
from imagenet_suite.scoring.summary.papers import shi2024
from tests.test_leaderboard_papers import KMEANS, kmeans_lca_suite, lca_suite

# model -> (ImageNet top-1, OOD top-1 on imagenet_r, on imagenet_a); per hierarchy each model's K-means LCA
TOP1 = {"m:a": (0.80, 0.40, 0.10), "m:b": (0.70, 0.35, 0.05), "m:c": (0.75, 0.30, 0.08), "m:d": (0.60, 0.20, 0.02)}
LCAS = {  # hierarchy build digit -> the four models' depth_one_sided LCA
    "ab": (5.0, 6.0, 5.5, 7.0),
    "cd": (6.0, 5.0, 6.5, 7.5),
    "ef": (4.0, 4.5, 6.0, 5.0),
}


def hierarchy(digits: str) -> dict:
    return {**KMEANS, "build": {**KMEANS["build"], "build_info_sha256": digits * 32}}


def table4_suites() -> dict[str, dict]:
    """Each model once per hierarchy (a run folder each: named ``<model> (<folder>)`` by the leaderboard)."""
    suites = {}
    for digits, lcas in LCAS.items():
        for (model, (top1, r, a)), lca in zip(TOP1.items(), lcas, strict=True):
            ood = {"imagenet_r": (r, None), "imagenet_a": (a, None)}
            suites[f"{model} ({digits})"] = kmeans_lca_suite(model, top1, lca, ood, hierarchy=hierarchy(digits))
    # the WordNet tree's runs: listed per hierarchy, left out of the aggregate (the paper's is over K-means ones)
    for (model, (top1, r, a)), lca in zip(TOP1.items(), (9.0, 8.0, 7.0, 6.0), strict=True):
        suites[f"{model} (wordnet)"] = lca_suite(model, top1, lca, {"imagenet_r": (r, None), "imagenet_a": (a, None)})
    return suites


def test_table_4_over_kmeans_hierarchies_equals_scipy_and_numpy(tmp_path):
    board = leaderboard(table4_suites())
    out = tmp_path
    shi2024.write(board.on_the_line, out)
    per = pd.read_csv(out / "leaderboard_lca_per_hierarchy.csv")
    assert list(per.columns) == ["hierarchy", "kind", "ood_dataset", "indicator", "distance", "models", "pearson"]
    assert set(per.kind) == {"kmeans", "wordnet"} and set(per.models) == {4}
    pearsons = {}
    for digits, lcas in LCAS.items():
        label = f"kmeans_hierarchy/default (build {digits * 6})"
        for column, key in ((1, "imagenet_r"), (2, "imagenet_a")):
            y = [v[column] for v in TOP1.values()]
            entry = per[(per.hierarchy == label) & (per.ood_dataset == key)].set_index("indicator")
            assert entry.loc["ImageNet LCA", "distance"] == "depth_one_sided"
            r = stats.pearsonr(lcas, y).statistic
            assert entry.loc["ImageNet LCA", "pearson"] == pytest.approx(r, abs=1e-12)
            baseline = stats.pearsonr([v[0] for v in TOP1.values()], y).statistic
            assert entry.loc["ImageNet top-1", "pearson"] == pytest.approx(baseline, abs=1e-12)
            pearsons.setdefault(key, []).append(r)
    wordnet = per[per.kind == "wordnet"].set_index(["ood_dataset", "indicator"])
    assert wordnet.loc[("imagenet_r", "ImageNet LCA"), "distance"] == "info"
    table = pd.read_csv(out / "leaderboard_lca_over_hierarchies.csv").set_index(["ood_dataset", "indicator"])
    for key, values in pearsons.items():
        entry = table.loc[(key, "ImageNet LCA")]
        magnitude = np.abs(values)
        assert entry.hierarchies == 3 and entry.models_min == entry.models_max == 4  # WordNet left out
        got = entry[["abs_pearson_mean", "abs_pearson_min", "abs_pearson_max", "abs_pearson_std", "pearson_mean"]]
        want = [magnitude.mean(), magnitude.min(), magnitude.max(), np.std(magnitude), np.mean(values)]
        assert got.tolist() == pytest.approx(want, abs=1e-12)
        assert table.loc[(key, "ImageNet top-1"), "abs_pearson_std"] == pytest.approx(0.0, abs=1e-12)  # same models
    assert list(table.index.get_level_values("indicator")[:2]) == ["ImageNet top-1", "ImageNet LCA"]  # the paper's
    text = leaderboard_markdown(board)
    assert "### Table 4: the LCA line under each hierarchy" in text
    assert "| imagenet_r | LCA_corr | 3 | 4 |" in text and "| imagenet_r | Top1_corr | 3 | 4 |" in text


def test_one_hierarchy_has_no_table_4(tmp_path):
    suites = {
        m: kmeans_lca_suite(m, t, lcas[0], {"imagenet_r": (r, None)}) for (m, (t, r, _)), lcas in zip(
            TOP1.items(), zip(*LCAS.values(), strict=True), strict=True
        )
    }  # fmt: skip
    board = leaderboard(suites)
    assert board.on_the_line.per_hierarchy.empty and board.on_the_line.over_hierarchies.empty
    assert "Table 4" not in leaderboard_markdown(board)
