"""LCA-on-the-Line (Shi et al. 2024) tables beyond Tables 2, 3 and 9: Table 4 (the LCA line under many K-means
hierarchies, aggregated) on small synthetic leaderboards, checked against scipy and numpy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
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
    assert "Table 4: the LCA line" not in leaderboard_markdown(board)  # (Heuillet et al.'s Table 4 may be there)


# ------------------------------------------------------------- Table 3's AC and Agreement-on-the-Line baselines

SUBSET = [1, 3, 5, 7, 9]  # ImageNet-R's 200 classes, shrunk: the report's meta.protocol.class_subset
IMAGES = 12


def outputs_runs(tmp_path) -> tuple[list, dict]:
    """Four runs with ImageNet-val and ImageNet-R outputs files (random logits over 1000 classes, one row per
    image id in shuffled order) and suite.json top-1s; returns the runs and each model's logits by key."""
    from imagenet_suite.scoring.outputs import ModelOutputs
    from tests.test_read_runs import write_run

    rng = np.random.default_rng(7)
    runs, logits = [], {}
    for i, (model, (top1, r, _)) in enumerate(TOP1.items()):
        suite = lca_suite(model, top1, 5.0 + i, {"imagenet_r": (r, None)})
        suite["datasets"]["imagenet_r"]["meta"]["protocol"] = {"class_subset": SUBSET}
        run = write_run(tmp_path, model.replace(":", "_"), suite)
        (run / "outputs").mkdir()
        for key in ("imagenet_val", "imagenet_r"):
            values = rng.normal(size=(IMAGES, 1000)).astype(np.float32)
            right = rng.random(IMAGES) < (0.9, 0.75, 0.6, 0.45)[i]  # each image's class, or another, wins
            chosen = np.where(right, np.asarray(SUBSET)[np.arange(IMAGES) % 5], rng.choice(SUBSET, IMAGES))
            values[np.arange(IMAGES), chosen] += 10.0
            logits[(model, key)] = values
            order = rng.permutation(IMAGES)
            ids = [f"img{j:02d}" for j in order]
            ModelOutputs(torch.from_numpy(values[order]), ids, "logits").save(run / "outputs" / f"{key}.pt")
        runs.append(run)
    return runs, logits


def test_table_3_ac_and_agreement_on_the_line_from_the_outputs_files(tmp_path):
    from scipy.stats import linregress, norm

    from imagenet_suite.scoring.summary.leaderboard import runs_leaderboard

    runs, logits = outputs_runs(tmp_path)
    assert runs_leaderboard(runs).on_the_line.table3_baselines.empty  # not asked for: no outputs file read
    board = runs_leaderboard(runs, lca_baselines=True)
    table = board.on_the_line.table3_baselines.set_index(["ood_dataset", "group", "method"])
    models = list(TOP1)
    target = np.array([TOP1[m][1] for m in models])
    # AC: mean max softmax over the class subset (torch's softmax), against the OOD top-1
    ac = [
        torch.softmax(torch.from_numpy(logits[(m, "imagenet_r")][:, SUBSET]), dim=1).max(dim=1).values.mean()
        for m in models
    ]
    assert table.loc[("imagenet_r", "ALL", "AC"), "mae"] == pytest.approx(
        np.mean(np.abs(np.array(ac) - target)), abs=1e-6
    )
    # Agreement-on-the-Line, with scipy's line in place of statsmodels' and numpy's least squares
    test = [logits[(m, "imagenet_val")].argmax(axis=1) for m in models]
    shift = [np.asarray(SUBSET)[logits[(m, "imagenet_r")][:, SUBSET].argmax(axis=1)] for m in models]
    accuracy = np.array([TOP1[m][0] for m in models])
    scaled = (accuracy - accuracy.min()) / np.ptp(accuracy)
    pairs = [(i, j) for i in range(4) for j in range(i, 4)]
    test_agr = np.array([np.mean(test[i] == test[j]) for i, j in pairs])
    shift_agr = np.array([np.mean(shift[i] == shift[j]) for i, j in pairs])
    keep = (test_agr >= 0.05) & (test_agr <= 0.98) & (shift_agr >= 0.05) & (shift_agr <= 0.98)
    assert keep.sum() >= 2
    x, y = (v[keep] for v in (test_agr, shift_agr))
    x, y = (x - x.min()) / np.ptp(x), (y - y.min()) / np.ptp(y)
    line = linregress(x, y)
    a = np.array([[0.5 * ((k == i) + (k == j)) if i != j else 0.5 * (k == i) for k in range(4)] for i, j in pairs])[
        keep
    ]
    accs = np.array([(scaled[i] + scaled[j]) / 2 for i, j in pairs])[keep]
    w = np.linalg.lstsq(a, y + line.slope * (accs - x), rcond=None)[0]
    aline_s, aline_d = line.slope * scaled + line.intercept, norm.cdf(w)
    assert table.loc[("imagenet_r", "ALL", "Aline-S"), "mae"] == pytest.approx(
        np.mean(np.abs(aline_s - target)), abs=1e-9
    )
    assert table.loc[("imagenet_r", "ALL", "Aline-D"), "mae"] == pytest.approx(
        np.mean(np.abs(aline_d - target)), abs=1e-9
    )
    assert table.loc[("imagenet_r", "ALL", "Aline-D"), "pairs"] == keep.sum()
    text = leaderboard_markdown(board)
    assert (
        "### Table 3's other baselines: AC and Agreement-on-the-Line" in text
        and "| imagenet_r | ALL | AC | 4 |" in text
    )


def test_the_command_reads_only_outputs_files_their_runs_recorded(tmp_path, capsys):
    """``leaderboard --lca-baselines`` reuses the runs' outputs files: each must have the record and sha256
    ``evaluate`` wrote (``inference.run_folder.check_outputs_files``), else one line naming it, before any work."""
    from imagenet_suite import cli

    runs, _ = outputs_runs(tmp_path)  # files put there by hand: no builds/<key>.json
    code = cli.main(["leaderboard", *map(str, runs), "--out", str(tmp_path / "board"), "--lca-baselines"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "outputs/" in err and "no record of the dataset build it was predicted from" in err
    assert not (tmp_path / "board").exists()


def test_table_3_baselines_without_outputs_files_say_what_is_missing(tmp_path):
    from imagenet_suite.scoring.summary.leaderboard import runs_leaderboard
    from tests.test_read_runs import write_run

    runs = [
        write_run(tmp_path, m.replace(":", "_"), lca_suite(m, t, 5.0 + i, {"imagenet_r": (r, None)}))
        for i, (m, (t, r, _)) in enumerate(TOP1.items())
    ]
    board = runs_leaderboard(runs, lca_baselines=True)
    assert board.on_the_line.table3_baselines.empty
    assert "does not exist" in " ".join(board.on_the_line.table3_notes)
    assert "--lca-baselines" in leaderboard_markdown(board)


# ------------------------------------------------------------------- Table 8: top-1 vs LCA within one dataset


def test_table_8_top1_vs_lca_within_each_dataset_equals_scipy(tmp_path):
    models = list(TOP1)
    ood_lca = dict(zip(models, (4.0, 4.5, 5.5, 5.0), strict=True))  # the LCA on ImageNet-R itself
    suites = {}
    for i, (model, (top1, r, _)) in enumerate(TOP1.items()):
        suite = lca_suite(model, top1, 5.0 + 0.3 * i * i, {"imagenet_r": (r, None)})
        suite["datasets"]["imagenet_r"]["metrics"].append(
            {"metric": "lca", "variant": "info", "subgroup": "", "value": ood_lca[model]}
        )
        suites[model] = suite
    board = leaderboard(suites)
    within = board.on_the_line.within_dataset.set_index(["dataset", "distance"])
    r = [TOP1[m][1] for m in models]
    want = stats.pearsonr(r, [ood_lca[m] for m in models]).statistic
    entry = within.loc[("imagenet_r", "info")]
    assert entry.pearson == pytest.approx(want, abs=1e-12) and entry.paper and entry.models == 4
    assert entry.spearman == pytest.approx(stats.spearmanr(r, [ood_lca[m] for m in models]).statistic, abs=1e-12)
    val = within.loc[("imagenet_val", "depth_two_sided")]  # ImageNet: every distance its reports have
    top1 = [TOP1[m][0] for m in models]
    depth = [5.0 + 0.3 * i * i + 1 for i in range(4)]
    assert val.kendall_tau_b == pytest.approx(stats.kendalltau(top1, depth).statistic, abs=1e-12) and not val.paper
    assert within.loc[("imagenet_val", "info"), "paper"]
    shi2024.write(board.on_the_line, tmp_path)
    assert pd.read_csv(tmp_path / "leaderboard_lca_within_dataset.csv").columns.tolist() == [
        "dataset", "distance", "paper", "models", "r2", "pearson", "kendall_tau_b", "spearman"
    ]  # fmt: skip
    assert "### Table 8: top-1 vs LCA within each dataset" in leaderboard_markdown(board)
    # Fig. 11: the same points, one scatter per dataset in the paper's distance, Pearson r of Table 8 in the title
    from imagenet_suite.scoring.presentation.figures import shi2024 as shi_figures

    figures = {f.name: f.svg for f in shi_figures.within_dataset(suites)}
    assert set(figures) == {f"{shi_figures.WITHIN}: imagenet_r", f"{shi_figures.WITHIN}: imagenet_val"}
    svg = figures[f"{shi_figures.WITHIN}: imagenet_r"]
    assert f"imagenet_r: Pearson r = {entry.pearson:.3f} (4 models)" in svg and all(f">{m}<" in svg for m in models)
    assert "imagenet_val LCA (info)" in figures[f"{shi_figures.WITHIN}: imagenet_val"]  # the paper's, not depth
    assert shi_figures.within_dataset(dict(list(suites.items())[:2]))[0].missing  # two runs: what is missing


def test_table_4_is_in_leaderboard_html():
    from imagenet_suite.scoring.presentation.html_leaderboard import _shi_section

    suites = table4_suites()
    section = _shi_section(leaderboard(suites), suites)
    names = [table.name for table in section.tables]
    assert "Table 4: the LCA line over the latent hierarchies" in names and "Table 4, per hierarchy" in names
