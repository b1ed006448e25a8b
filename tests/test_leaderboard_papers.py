"""The leaderboard's tables per paper (issue 26, items 2 and 5), each equal to a hand computation or a published table.

Run folders hold hand-written suite.json files in the format ``evaluate`` writes (``suite_json`` of
tests/test_read_runs.py: an ImageNet-val report plus the reports a test adds, the summary made by
``suite_summary``); QUBA dimensions are set in the summary directly where a test needs models with all
nine. Published values: the LCA-on-the-Line per-model results (tests/data/lca-on-the-line) for its Tables 2 and 9
through the leaderboard; the papers' other printed aggregates from the reference zoos: tests/test_reference_aggregates.py.
"""

from __future__ import annotations

import copy
import csv
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from imagenet_suite import cli
from imagenet_suite.errors import ConfigError
from imagenet_suite.scoring.metrics.lca_on_the_line import analyze, read_results_csv
from imagenet_suite.scoring.metrics.quba import DIMENSIONS, QUBA_MEAN, QUBA_SIGNS, QUBA_STD, parse_quba_weights
from imagenet_suite.scoring.summary.groups import ModelGroups, read_groups
from imagenet_suite.scoring.summary.leaderboard import leaderboard, leaderboard_markdown, load_suites
from imagenet_suite.scoring.summary.papers.hesse2025 import dimension_correlations
from imagenet_suite.scoring.summary.suite import suite_summary
from tests.test_read_runs import build, suite_json, write_run

SHA_N, SHA_P, SHA_O = "c" * 64, "d" * 64, "e" * 64


def row(metric: str, value: float, variant: str = "", subgroup: str = "", **counts) -> dict:
    return {
        "metric": metric,
        "variant": variant,
        "subgroup": subgroup,
        "value": value,
        "numerator": counts.get("numerator"),
        "denominator": counts.get("denominator"),
    }


def report(dataset: str, config: str, rows: list[dict], sha: str, **meta) -> dict:
    scored = build(sha, dataset, config)
    return {
        "meta": {"dataset": dataset, "version": "1.0.0", "config": config, "split": "validation", **meta},
        "metrics": rows,
        "provenance": {"dataset": scored, "outputs": scored, "id_outputs": None},
    }


def with_dimensions(suite: dict, values: dict[str, float]) -> dict:
    """``suite`` whose QUBA dimensions are ``values`` (those absent are missing)."""
    quba = suite["summary"]["quba"]
    quba["dimensions"] = {name: {"value": float(v), "sources": ["test"], "note": ""} for name, v in values.items()}
    quba["missing"] = {name: "not in this test" for name in DIMENSIONS if name not in values}
    return suite


def with_reports(suite: dict, **reports: dict) -> dict:
    """``suite`` with ``reports`` added and its summary recomputed from all its reports."""
    suite["datasets"].update(reports)
    suite["summary"] = suite_summary(suite["datasets"], params_millions=0.001)
    return suite


def write_groups(
    path: Path, rows: list[tuple[str, ...]], header: tuple[str, ...] = ("setup", "group", "model")
) -> Path:
    with path.open("w", newline="") as handle:
        csv.writer(handle).writerows([header, *rows])
    return path


def run_cli(tmp_path: Path, runs: list[Path], *flags: str, capsys) -> Path:
    assert cli.main(["leaderboard", *map(str, runs), "--out", str(tmp_path / "board"), *flags]) == 0
    capsys.readouterr()
    return tmp_path / "board"


# --------------------------------------------------------------------------- Beyond Accuracy (Hesse et al. 2025)


def dims_runs(tmp_path: Path, values: dict[str, list[float]]) -> list[Path]:
    """One run per model: ``values[model]`` are its nine dimensions (NaN: missing)."""
    runs = []
    for name, dims in values.items():
        suite = with_dimensions(suite_json(name, 0.5), {d: v for d, v in zip(DIMENSIONS, dims, strict=True) if v == v})
        runs.append(write_run(tmp_path, name.replace(":", "_"), suite))
    return runs


def random_dims(count: int, seed: int = 0) -> dict[str, list[float]]:
    rng = np.random.default_rng(seed)
    return {f"m:{i}": list(QUBA_MEAN + QUBA_STD * rng.normal(size=9)) for i in range(count)}


def test_group_t_tests_and_correlations_through_the_cli_equal_scipy(tmp_path, capsys):
    values = random_dims(7)
    values["m:6"][2] = np.nan  # m:6 has no C-robustness: left out of that dimension's mean, test and ρ
    runs = dims_runs(tmp_path, values)
    groups = write_groups(
        tmp_path / "groups.csv",
        [
            ("(a)", "A", "m:0"),
            ("(a)", "A", "m:1"),
            ("(a)", "A", "m:2"),
            ("(a)", "B", "m:3"),
            ("(a)", "B", "m:4"),
            ("(a)", "B", "m:6"),
            ("(a)", "B", "m:6"),
            ("(b)", "X", "m:5"),
            ("(b)", "X", "m:0"),
            ("(b)", "Y", "m:1"),
            ("(b)", "Y", "m:2"),
            ("(b)", "Z", "m:3"),
            ("(b)", "Z", "m:4"),
        ],
    )
    board = run_cli(tmp_path, runs, "--groups", str(groups), capsys=capsys)
    table = pd.read_csv(board / "leaderboard_quba_groups.csv")

    def hand(setup, group, reference, dimension):
        members = {
            ("(a)", "A"): ["m:0", "m:1", "m:2"],
            ("(a)", "B"): ["m:3", "m:4", "m:6", "m:6"],
            ("(b)", "X"): ["m:5", "m:0"],
            ("(b)", "Y"): ["m:1", "m:2"],
            ("(b)", "Z"): ["m:3", "m:4"],
        }
        index = DIMENSIONS.index(dimension)
        pick = [
            [values[m][index] for m in members[(setup, g)] if values[m][index] == values[m][index]]
            for g in (reference, group)
        ]
        return np.mean(pick[1]), stats.ttest_ind(pick[0], pick[1]).pvalue, len(pick[1])

    assert len(table) == 5 * 9
    for entry in table.itertuples():
        mean, p, count = hand(entry.setup, entry.group, entry.reference, entry.dimension)
        assert entry.mean == pytest.approx(mean, rel=1e-12) and entry.models == count
        if entry.group == entry.reference:
            assert np.isnan(entry.p_value)
        else:
            assert entry.p_value == pytest.approx(p, rel=1e-9), entry
    assert set(table[table.setup == "(b)"].reference) == {"X"}  # Y and Z each against the first group
    assert table.query("group == 'B' and dimension == 'c_robustness'").models.item() == 2  # m:6 twice, no value

    corr = pd.read_csv(board / "leaderboard_quba_correlations.csv").set_index(["dimension_a", "dimension_b"])
    frame = pd.DataFrame(values, index=list(DIMENSIONS)).T
    for a in DIMENSIONS:
        for b in DIMENSIONS:
            expected = stats.spearmanr(frame[a], frame[b], nan_policy="omit")
            assert corr.loc[(a, b), "rho"] == pytest.approx(expected.statistic, abs=1e-12), (a, b)
            assert corr.loc[(a, b), "p_value"] == pytest.approx(expected.pvalue, abs=1e-12), (a, b)
    full = stats.spearmanr(frame.dropna())  # the six complete models: scipy's matrix form
    sub = dimension_correlations(frame.dropna())[0].to_numpy()
    assert sub == pytest.approx(full.statistic, abs=1e-12)
    assert (board / "leaderboard_quba_correlations.png").read_bytes()[:4] == b"\x89PNG"
    text = (board / "leaderboard.md").read_text()
    assert "### Group comparisons (Table 2)" in text and "### Spearman correlations of the nine dimensions" in text
    b_accuracy = table.query("group == 'B' and dimension == 'accuracy'").iloc[0]
    p_b = b_accuracy.p_value
    mark = "***" if p_b < 0.05 else "**" if p_b < 0.1 else "*" if p_b < 0.2 else ""
    b_row = next(line for line in text.splitlines() if line.startswith("| (a) | B | "))
    assert b_row.split(" | ")[3] == f"{b_accuracy['mean']:.4g}" + (f" {mark}" if mark else "")


def hand_quba(dims: list[float], weights: dict[str, float]) -> float:
    w = np.array([weights[name] for name in DIMENSIONS])
    return float(np.sum(w * QUBA_SIGNS * (np.array(dims) - QUBA_MEAN) / QUBA_STD) / w.sum())


DEFAULTS = dict(zip(DIMENSIONS, (1, 1 / 3, 1 / 3, 1 / 3, 1, 1, 1 / 2, 1 / 2, 1), strict=True))


@pytest.mark.parametrize(
    "flag", ["shape_bias=-0.5,accuracy=2", "2,0.3333333333333333,0.3333333333333333,0.3333333333333333,1,1,0.5,-0.5,1"]
)
def test_quba_weights_and_the_weightings_of_fig_5(tmp_path, capsys, flag):
    values = random_dims(7, seed=1)
    board = run_cli(tmp_path, dims_runs(tmp_path, values), "--quba-weights", flag, capsys=capsys)
    weights = {**DEFAULTS, "accuracy": 2.0, "shape_bias": -0.5}
    quba = pd.read_csv(board / "leaderboard_quba.csv", index_col="model")
    for model, dims in values.items():
        assert quba.loc[model, "quba"] == pytest.approx(hand_quba(dims, weights), abs=1e-12)
    assert list(quba.index) == sorted(values, key=lambda m: -hand_quba(values[m], weights))
    text = (board / "leaderboard.md").read_text()
    assert "Weights (`--quba-weights`; the score divides by their sum, 6): accuracy 2, " in text
    # Fig. 5: the weights in force, those of a group doubled
    top = pd.read_csv(board / "leaderboard_quba_weightings.csv")
    for setup, doubled in (
        ("robustness", ("adversarial_robustness", "c_robustness", "ood_robustness")),
        ("shortcut learning", ("object_focus", "shape_bias")),
    ):
        scaled = {name: w * (2 if name in doubled else 1) for name, w in weights.items()}
        ranked = sorted(values, key=lambda m: -hand_quba(values[m], scaled))[:5]
        part = top[top.setup == setup]
        assert list(part.model) == ranked and list(part["rank"]) == [1, 2, 3, 4, 5]
        assert list(part.quba) == pytest.approx([hand_quba(values[m], scaled) for m in ranked], abs=1e-12)
    assert list(dict.fromkeys(top.setup)) == [
        "accuracy",
        "robustness",
        "calibration",
        "class balance",
        "shortcut learning",
        "parameters",
    ]


def test_table_8_autoattack_quba_is_ranked_beside_quba(tmp_path):
    values = random_dims(3, seed=2)
    suites = {
        model: with_dimensions(suite_json(model, dims[0]), dict(zip(DIMENSIONS, dims)))
        for model, dims in values.items()
    }
    robustness = dict(zip(values, (0.10, 0.04, 0.01)))
    for model, suite in list(suites.items())[:2]:  # the third run attacked without AutoAttack
        suite["summary"]["quba_autoattack"] = {"adversarial_robustness": robustness[model]}
    table = leaderboard(suites).quba
    adversarial = DIMENSIONS.index("adversarial_robustness")
    expected = {}
    for model in list(values)[:2]:  # AA-A/A z-scored with Table 8's 0.04/0.03, mapped onto QUBA's scale
        dims = list(values[model])
        dims[adversarial] = QUBA_MEAN[adversarial] + (robustness[model] - 0.04) / 0.03 * QUBA_STD[adversarial]
        expected[model] = hand_quba(dims, DEFAULTS)
        assert table.loc[model, "quba_autoattack"] == pytest.approx(expected[model], abs=1e-12)
    assert math.isnan(table.loc[list(values)[2], "quba_autoattack"])
    best = max(expected, key=expected.get)
    assert table.loc[best, "quba_autoattack_rank"] == 1 and set(table["quba_autoattack_rank"].dropna()) == {1, 2}


def test_parse_quba_weights_refuses_bad_values():
    assert parse_quba_weights("accuracy = 3") == {"accuracy": 3.0}
    for text, message in (
        ("1,2,3", "takes 9 comma-separated numbers"),
        ("accurac=1", "unknown QUBA dimension 'accurac'"),
        ("accuracy=x", "'x' is not a finite number"),
        ("accuracy=nan", "'nan' is not a finite number"),
        ("0,0,0,0,0,0,0,0,0", "the nine weights sum to 0"),
    ):
        with pytest.raises(ConfigError, match=message):
            parse_quba_weights(text)


# --------------------------------------------------------------------------- NINCO (Bitterwolf et al. 2023)


def ninco_reports(base: float) -> dict[str, dict]:
    """NINCO reports as the OOD families write them: per detector macro rows (NINCO classes, popular sets),
    per-source rows and the unit-test count."""
    classes = [
        row(m, base + k / 10 + (0.5 if m == "auroc" else 0), f"{d}:macro")
        for k, d in enumerate(("msp", "vim"))
        for m in ("auroc", "fpr95")
    ]
    classes += [row("fpr95", 0.9, "msp:pooled")]  # pooled over samples: not the paper's mean
    popular = [row("fpr95", base / 2 + k / 10, f"{d}:macro") for k, d in enumerate(("vim", "msp"))]
    popular += [row("fpr95", base / 3, "msp", "Textures"), row("auroc", 0.8, "msp", "Textures")]
    tests = [
        row("unit_tests_failed", 3.0, "msp:fpr95>0.1", numerator=3, denominator=17),
        row("unit_tests_failed", 0.0, "vim:fpr95>0.1", numerator=0, denominator=17),
    ]
    return {
        "ninco/ninco": report("ninco", "ninco", classes, SHA_N),
        "ninco/popular_subsamples": report("ninco", "popular_subsamples", popular, SHA_P),
        "ninco/unit_tests": report("ninco", "unit_tests", tests, SHA_O),
    }


def test_ninco_models_by_detectors(tmp_path, capsys):
    runs = [
        write_run(tmp_path, f"m{i}", with_reports(suite_json(f"timm:m{i}", 0.5 + i / 10), **ninco_reports(0.2 * i)))
        for i in range(2)
    ]
    board = leaderboard(load_suites(runs))
    ninco = board.ninco
    for i, name in enumerate(("timm:m0", "timm:m1")):
        assert ninco.fpr95.loc[name].to_dict() == pytest.approx({"msp": 0.2 * i, "vim": 0.2 * i + 0.1})
        assert ninco.auroc.loc[name].to_dict() == pytest.approx({"msp": 0.2 * i + 0.5, "vim": 0.2 * i + 0.6})
        assert ninco.popular_fpr95.loc[name].to_dict() == pytest.approx({"msp": 0.1 * i + 0.1, "vim": 0.1 * i})
        assert ninco.unit_tests_failed.loc[name].to_dict() == {"msp": 3, "vim": 0}
    assert list(ninco.fpr95.columns) == ["msp", "vim"] and ninco.unit_test_rules == ["fpr95>0.1"]
    per_source = ninco.popular.query("model == 'timm:m1' and dataset == 'Textures'").iloc[0]
    assert (per_source.fpr95, per_source.auroc) == pytest.approx((0.2 / 3, 0.8))
    out = run_cli(tmp_path, runs, capsys=capsys)
    text = (out / "leaderboard.md").read_text()
    section = text.split("### Mean FPR@95 on NINCO (%, ↓ lower is better; Table 3)", 1)[1]
    assert "| model | ImageNet top-1 (%) | MSP | ViM |" in section
    assert next(line for line in section.splitlines() if line.startswith("| timm:m1 |")).endswith(
        "| 60.0 | 20.0 | 30.0 |"
    )
    tests = text.split("### OOD unit tests failed", 1)[1]
    assert "a unit test counts as failed under the rule `fpr95>0.1`" in tests.split("\n\n", 2)[1]
    assert next(line for line in tests.splitlines() if line.startswith("| timm:m0 |")).endswith("| 3/17 | 0/17 |")
    assert "Table 14" in text and (out / "leaderboard_ninco_popular.csv").is_file()
    unit = pd.read_csv(out / "leaderboard_ninco_unit_tests.csv")
    assert unit.to_dict("records")[0] == {"model": "timm:m0", "detector": "msp", "failed": 3, "of": 17}


def test_runs_without_paper_data_say_what_is_needed(tmp_path, capsys):
    runs = [write_run(tmp_path, f"m{i}", suite_json(f"timm:m{i}", 0.5)) for i in range(2)]
    text = (run_cli(tmp_path, runs, capsys=capsys) / "leaderboard.md").read_text()
    assert "No run has a NINCO report" in text and "No groups given (`--groups FILE`" in text
    assert "Needs at least three runs with an OOD dataset in common" in text
    assert "No run has a multi-label set scored under the `anzaku2024` protocol" in text
    assert "No run was evaluated with `--benchmark openood-v1.5-imagenet`" in text
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings == [
        "## Models",
        "## Beyond Accuracy (QUBA), Hesse et al. 2025",
        "## Accuracy per dataset",
        "## Heuillet et al. 2025: robust generalization",
        "## NINCO, Bitterwolf et al. 2023",
        "## LCA-on-the-Line, Shi et al. 2024",
        "## Anzaku et al. 2024",
        "## OpenOOD v1.5 ImageNet-1k, Zhang et al. 2023",
        "## Are the rank differences real? 95 % intervals and paired tests of adjacent models",
    ]


# --------------------------------------------------------------------------- LCA-on-the-Line (Shi et al. 2024)


def lca_suite(
    name: str,
    id_top1: float,
    id_lca: float,
    ood: dict[str, tuple[float, float | None]],
    depth: float | None = None,
    **meta,
) -> dict:
    """A run with ImageNet-val top-1 and LCA (``info``; and ``depth_two_sided``, default ``id_lca`` + 1) and OOD
    top-1 (and top-5) on sets keyed and named by their builder."""
    suite = suite_json(name, id_top1)
    val = suite["datasets"]["imagenet_val"]
    depth = id_lca + 1 if depth is None else depth
    val["metrics"] += [row("lca", depth, "depth_two_sided"), row("lca", id_lca, "info")]
    val["meta"].update(meta)
    reports = {}
    for key, (top1, top5) in ood.items():
        rows = [row("top1_accuracy", top1, "class_subset")] + (
            [row("top5_accuracy", top5, "class_subset")] if top5 is not None else []
        )
        reports[key] = report(key, "default", rows, SHA_O)
    return with_reports(suite, **reports)


@pytest.fixture(scope="module")
def objectnet(test_data) -> pd.DataFrame:
    return read_results_csv(test_data / "lca-on-the-line" / "imagenet_lca_vs_objectnet_top1.csv")


# Table 2 (R², Pearson) and Table 9 (Kendall, Spearman), ObjectNet, absolute values as the paper prints them
PAPER_ROWS = {
    ("VLM", "ImageNet LCA"): (0.936, 0.968, 0.870, 0.972),
    ("VLM", "ImageNet top-1"): (0.945, 0.972, 0.905, 0.982),
    ("VM", "ImageNet top-1"): (0.900, 0.949, 0.822, 0.927),
    ("ALL", "ImageNet LCA"): (0.915, 0.956, 0.867, 0.967),
    ("ALL", "ImageNet top-1"): (0.273, 0.522, 0.317, 0.339),
}


def test_lca_on_the_line_per_group_reproduces_the_papers_objectnet_rows(objectnet):
    suites = {
        f"{m} #{i}": lca_suite(f"{m} #{i}", r.id_top1, r.id_lca, {"objectnet": (r.ood_top1, None)})
        for i, (m, r) in enumerate(zip(objectnet.model, objectnet.itertuples(), strict=True))
    }
    groups = ModelGroups.from_mapping(
        {name: "VLM" if vlm else "VM" for name, vlm in zip(suites, objectnet.is_vlm, strict=True)}
    )
    statistics = leaderboard(suites, groups=groups).on_the_line.statistics
    # ObjectNet: the paper's distance is `info`; `depth_two_sided` (here info + 1: the same statistics) beside it
    assert set(statistics.loc[statistics.paper & (statistics.indicator == "ImageNet LCA"), "distance"]) == {"info"}
    assert set(statistics.loc[~statistics.paper, "distance"]) == {"depth_two_sided"}
    stats_table = statistics[statistics.paper].set_index(["group", "indicator"])
    assert set(stats_table.target) == {"OOD top-1"}  # no top-5 in these results
    for key, published in PAPER_ROWS.items():
        entry = stats_table.loc[key]
        got = (entry.r2, abs(entry.pearson), abs(entry.kendall_tau_b), abs(entry.spearman))
        assert got == pytest.approx(published, abs=0.0011), key
    assert (
        stats_table.loc[("VLM", "ImageNet LCA")].models == 39 and stats_table.loc[("VM", "ImageNet LCA")].models == 36
    )
    assert stats_table.loc[("VLM", "ImageNet top-1")].mae_in_sample == pytest.approx(0.052, abs=0.0011)  # Table 3


def test_lca_top5_baseline_hierarchy_and_figures(tmp_path, capsys):
    ood = {  # model -> (ImageNet top-1, LCA, {key: (OOD top-1, top-5)})
        "m:a": (0.80, 5.0, {"imagenet_r": (0.40, 0.60), "imagenet_a": (0.10, 0.30)}),
        "m:b": (0.70, 6.0, {"imagenet_r": (0.35, 0.62), "imagenet_a": (0.05, 0.20)}),
        "m:c": (0.75, 5.5, {"imagenet_r": (0.30, 0.50), "imagenet_a": (0.08, None)}),
        "m:d": (0.60, 7.0, {"imagenet_r": (0.20, 0.40), "imagenet_a": (0.02, 0.10)}),
    }
    runs = [write_run(tmp_path, m.replace(":", "_"), kmeans_lca_suite(m, t, lca, o)) for m, (t, lca, o) in ood.items()]
    groups = write_groups(
        tmp_path / "g.csv", [("VM", m) for m in ("m:a", "m:b", "m:c")] + [("VLM", "m:d")], ("group", "model")
    )
    out = run_cli(tmp_path, runs, "--groups", str(groups), capsys=capsys)
    table = pd.read_csv(out / "leaderboard_lca_on_the_line.csv")
    for entry in table.itertuples():
        models = list(ood) if entry.group == "ALL" else ["m:a", "m:b", "m:c"]
        x = [ood[m][1] if entry.indicator == "ImageNet LCA" else ood[m][0] for m in models]
        y = [ood[m][2][entry.ood_dataset][0 if entry.target == "OOD top-1" else 1] for m in models]
        result = analyze(x, y)
        c = result.correlations
        assert (entry.r2, entry.pearson, entry.kendall_tau_b, entry.spearman, entry.mae_in_sample) == pytest.approx(
            (c.r2, c.pearson, c.kendall_tau_b, c.spearman, result.mae_in_sample), abs=1e-12
        )
    # top-5 only where every model has it; both indicators; all models and the VM group (VLM has one model)
    assert set(zip(table.indicator, table.distance.fillna(""), table.paper, strict=True)) == {
        ("ImageNet LCA", "depth_one_sided", True),  # K-means: the paper's distance on every set, no other
        ("ImageNet top-1", "", True),
    }
    combos = set(zip(table.ood_dataset, table.indicator, table.target, strict=True))
    assert combos == set(
        zip(*(table[table.group == "VM"][c] for c in ("ood_dataset", "indicator", "target")), strict=True)
    )
    assert combos == {
        (k, i, t)
        for k in ("imagenet_a", "imagenet_r")
        for i in ("ImageNet LCA", "ImageNet top-1")
        for t in ("OOD top-1", "OOD top-5")
        if (k, t) != ("imagenet_a", "OOD top-5")
    }
    assert set(table.group) == {"ALL", "VM"}
    text = (out / "leaderboard.md").read_text()
    assert "No rows for the groups with fewer than 3 models: VLM." in text
    assert "(hierarchy: kmeans_hierarchy/default (build abababababab)) in the distance the paper uses" in text
    assert "| imagenet_r | VM | ImageNet LCA | `depth_one_sided` | paper | OOD top-1 | 3 |" in text
    for name in ("lca_on_the_line_imagenet_r.png", "top1_on_the_line_imagenet_r.png", "lca_on_the_line_imagenet_a.png"):
        assert (out / name).read_bytes()[:4] == b"\x89PNG" and f"]({name})" in text
    inputs = pd.read_csv(out / "leaderboard_lca_inputs.csv")
    assert inputs.query("model == 'm:c' and ood_dataset == 'imagenet_r'").ood_top5.item() == 0.5
    assert set(inputs.lca_distance) == {"depth_one_sided"}  # the K-means hierarchy's paper distance, not info


KMEANS = {
    "kind": "kmeans",
    "build": {"builder": "kmeans_hierarchy", "config": "default", "build_info_sha256": "ab" * 32},
}


def kmeans_lca_suite(name, id_top1, id_lca, ood, hierarchy=KMEANS) -> dict:
    """:func:`lca_suite` scored under a K-means hierarchy: ``id_lca`` is its paper distance (depth_one_sided);
    ``info`` is another value."""
    suite = lca_suite(name, id_top1, id_lca, ood, hierarchy={**hierarchy, "paper_distance": "depth_one_sided"})
    metrics = suite["datasets"]["imagenet_val"]["metrics"]
    for entry in metrics:
        if entry["metric"] == "lca" and entry.get("variant") == "info":
            entry["value"] = id_lca + 2
    metrics.append(row("lca", id_lca, "depth_one_sided"))
    return suite


def test_lca_distance_per_shifted_set_is_the_papers(tmp_path, capsys):
    """Shi et al. App. E.2: the ImageNet LCA of ImageNet-Sketch and ImageNet-A is the tree-depth one
    (`depth_two_sided`), of ImageNet-R (and V2, ObjectNet) the information-based one; each row names its distance,
    the other beside it. Here depth and info order the models differently, so the two lines differ."""
    ood = {"imagenet_sketch": (0.3, None), "imagenet_a": (0.1, None), "imagenet_r": (0.4, None)}
    values = {  # model -> (ImageNet top-1, info, depth_two_sided, OOD top-1 shift)
        "m:a": (0.80, 6.0, 11.0, 0.00),
        "m:b": (0.70, 6.5, 10.0, 0.05),
        "m:c": (0.75, 6.2, 12.5, -0.02),
        "m:d": (0.60, 7.0, 12.0, -0.04),
    }
    runs = [
        write_run(
            tmp_path,
            m.replace(":", "_"),
            lca_suite(m, top1, info, {k: (y + shift, None) for k, (y, _) in ood.items()}, depth=depth),
        )
        for m, (top1, info, depth, shift) in values.items()
    ]
    out = run_cli(tmp_path, runs, capsys=capsys)
    table = pd.read_csv(out / "leaderboard_lca_on_the_line.csv").query("indicator == 'ImageNet LCA'")
    papers = {"imagenet_sketch": "depth_two_sided", "imagenet_a": "depth_two_sided", "imagenet_r": "info"}
    for entry in table.itertuples():
        assert entry.paper == (entry.distance == papers[entry.ood_dataset]), entry
        x = [values[m][1 if entry.distance == "info" else 2] for m in values]
        y = [ood[entry.ood_dataset][0] + values[m][3] for m in values]
        assert entry.r2 == pytest.approx(analyze(x, y).correlations.r2, abs=1e-12)
    assert len(table) == 6  # per set: the paper's distance and the other
    inputs = pd.read_csv(out / "leaderboard_lca_inputs.csv").set_index(["model", "ood_dataset"])
    assert inputs.loc[("m:c", "imagenet_a"), ["id_lca", "lca_distance", "id_lca_other", "other_distance"]].tolist() == [
        12.5, "depth_two_sided", 6.2, "info"
    ]  # fmt: skip
    assert inputs.loc[("m:c", "imagenet_r"), ["id_lca", "lca_distance"]].tolist() == [6.2, "info"]
    text = (out / "leaderboard.md").read_text()
    assert "`depth_two_sided` for ImageNet-Sketch and ImageNet-A" in text
    assert "| imagenet_a | ALL | ImageNet LCA | `depth_two_sided` | paper | OOD top-1 | 4 |" in text
    assert "| imagenet_a | ALL | ImageNet LCA | `info` | other | OOD top-1 | 4 |" in text
    assert "| imagenet_r | ALL | ImageNet LCA | `info` | paper | OOD top-1 | 4 |" in text
    board = leaderboard(load_suites(runs))
    assert board.on_the_line.line_distances == papers
    depth_a = [values[m][2] for m in values]
    assert board.lca_on_the_line["imagenet_a"].correlations.r2 == pytest.approx(
        analyze(depth_a, [0.1 + values[m][3] for m in values]).correlations.r2, abs=1e-12
    )
    # a run without the depth-based LCA: no paper rows for Sketch and A, said so; the info rows stay
    del_depth = load_suites(runs)
    for suite in list(del_depth.values())[:1]:
        metrics = suite["datasets"]["imagenet_val"]["metrics"]  # held read-only (ColumnRows): a new list
        suite["datasets"]["imagenet_val"]["metrics"] = [r for r in metrics if r.get("variant") != "depth_two_sided"]
    board = leaderboard(del_depth)
    assert set(board.lca_on_the_line) == {"imagenet_r"}
    assert sorted(board.on_the_line.lacking) == [f"{k} `depth_two_sided`" for k in sorted(ood)]  # R: the other
    assert "No LCA rows for imagenet_a `depth_two_sided`: `m:a` lack that distance." in leaderboard_markdown(board)


def test_runs_under_different_hierarchies_get_no_lca_line(tmp_path):
    other = {**KMEANS, "build": {**KMEANS["build"], "build_info_sha256": "cd" * 32}}
    suites = {
        m: kmeans_lca_suite(m, t, lca, {"imagenet_r": (o, None)}, hierarchy=other if m == "c" else KMEANS)
        for m, (t, lca, o) in {"a": (0.8, 5.0, 0.4), "b": (0.7, 6.0, 0.35), "c": (0.6, 7.0, 0.2)}.items()
    }
    board = leaderboard(suites)
    assert set(board.on_the_line.statistics.indicator) == {"ImageNet top-1"}
    assert len(board.on_the_line.hierarchies) == 2
    assert "different hierarchies: no LCA line" in leaderboard_markdown(board)


# --------------------------------------------------------------------------- Anzaku et al. 2024


def anzaku_reports(top1: float, real: float, asma: float, patch: tuple[float, ...], v2: bool) -> dict[str, dict]:
    protocol = {"preprocessing": {"protocol": "anzaku2024"}}
    rows = [row("top1_accuracy", top1), row("multilabel_real_accuracy", real, "all"), row("asma", asma, "exact")]
    reports = {"imagenet_real@anzaku2024": report("imagenet_real", "labels", rows, SHA_N, **protocol)}
    if v2:
        shifted = [{**r, "value": r["value"] - 0.1} for r in rows]
        reports["v2@anzaku2024"] = report("imagenet_v2", "multilabel", shifted, SHA_P, **protocol)
    for seed, value in enumerate(patch):
        reports[f"patchml-s{seed}"] = report(
            "patchml",
            f"s{seed}",
            [row("asma", value, "exact")],
            f"{seed + 1:x}" * 64,
            protocol={"seed": seed},
            **protocol,
        )
    return reports


def test_anzaku_top1_real_asma_table_and_delta_rank(tmp_path, capsys):
    """ΔRank ranks the top-1 of the table beside it, resized without a centre crop (Anzaku et al. App. B): m1 is
    first there (79 % against 78 %) though second by the centre-crop top-1 (70 % against 80 %)."""
    runs = [
        write_run(
            tmp_path,
            "m0",
            with_reports(suite_json("timm:m0", 0.8), **anzaku_reports(0.78, 0.85, 0.6, (0.3, 0.4), True)),
        ),
        write_run(
            tmp_path,
            "m1",
            with_reports(suite_json("timm:m1", 0.7), **anzaku_reports(0.79, 0.80, 0.55, (0.5, 0.6), True)),
        ),
    ]
    board = leaderboard(load_suites(runs))
    table = board.anzaku2024
    assert list(table.index) == ["timm:m1", "timm:m0"]  # by PatchML ASMA, best first, as the paper sorts
    assert list(table.columns) == [
        "ImageNet val (ReaL labels) top-1",
        "ImageNet val (ReaL labels) ReaL",
        "ImageNet val (ReaL labels) ASMA",
        "imagenet_v2/multilabel top-1",
        "imagenet_v2/multilabel ReaL",
        "imagenet_v2/multilabel ASMA",
        "PatchML ASMA",
        "PatchML seeds",
        "ΔRank",
    ]
    assert table.loc["timm:m0"].tolist() == pytest.approx([0.78, 0.85, 0.6, 0.68, 0.75, 0.5, 0.35, 2, 0])
    assert table.loc["timm:m1", "PatchML ASMA"] == pytest.approx(0.55) and table.loc["timm:m1", "ΔRank"] == 0
    assert board.delta_rank.to_dict() == {"timm:m0": 0, "timm:m1": 0}  # by the centre-crop top-1: -1 and +1
    out = run_cli(tmp_path, runs, capsys=capsys)
    text = (out / "leaderboard.md").read_text()
    line = next(
        line for line in text.split("### Top-1, ReaL and ASMA", 1)[1].splitlines() if line.startswith("| timm:m0 |")
    )
    assert line.endswith("| 78.0 | 85.0 | 60.0 | 68.0 | 75.0 | 50.0 | 35.0 | 2 | 0 |")
    section = text.split("### ΔRank: ImageNet top-1 (resized, no centre crop) vs PatchML ASMA", 1)[1]
    assert "not the centre-crop top-1; ranks are dense" in section
    lines = [line for line in section.splitlines() if line.startswith("| timm:m")]
    assert lines[0].endswith("| 78.0 | 2 | 35.0 | 2 | 0 | 2 |") and lines[1].endswith("| 79.0 | 1 | 55.0 | 1 | 0 | 2 |")
    csv = pd.read_csv(out / "leaderboard_delta_rank.csv", index_col="model")
    assert list(csv.columns) == [
        "ImageNet val top-1 (resized, no centre crop)", "top-1 rank", "PatchML ASMA", "ASMA rank", "ΔRank"
    ]  # fmt: skip
    assert csv.loc["timm:m1"].tolist() == pytest.approx([0.79, 1, 0.55, 1, 0])
    assert "PatchML ASMA is the mean over seeds 0, 1 in every run" in text


# --------------------------------------------------------------------------- the groups file


def test_groups_file_rows(tmp_path):
    path = write_groups(tmp_path / "g.csv", [("VM", "timm:a"), ("VLM", "clip")], header=("group", "model"))
    groups = read_groups(path)
    assert groups.setups() == {"all": {"VM": ["timm:a"], "VLM": ["clip"]}}
    assert [m.row for m in groups.memberships] == [2, 3]
    with pytest.raises(ConfigError, match=r"g.csv: row 3: model 'clip' is not one of the leaderboard's models"):
        groups.check_models(["timm:a", "other"])
    suite = suite_json("timm:a", 0.5)
    with pytest.raises(ConfigError, match="row 3: model 'clip'"):
        leaderboard({"timm:a": suite, "other": copy.deepcopy(suite)}, groups=groups)


def test_the_documented_groups_example_reads(tmp_path):
    text = (Path(__file__).parents[1] / "docs" / "papers" / "hesse2025.md").read_text()
    example = text.split("```csv\n", 1)[1].split("```", 1)[0]
    (tmp_path / "groups.csv").write_text(example)
    setups = read_groups(tmp_path / "groups.csv").setups()
    assert len(setups) >= 2 and all(len(members) == 2 for members in setups.values())
    json.dumps(setups)  # plain data
