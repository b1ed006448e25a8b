"""The leaderboard's Sum, Borda and MAC are Heuillet et al. 2025's (issue 25, items 5 and 6; issue 35, item 3).

Run folders hold hand-written suite.json files in the format ``evaluate`` writes (reports made by
:class:`ScoreReport` from robustness rows, the summary by ``suite_summary``), read back by ``leaderboard``
through ``read_suite``. Under the paper's name the voters are its five perturbation types on ImageNet val
(clean, AutoAttack ℓ∞ / ℓ2 / ℓ1 at its radii, common corruptions), one dataset; a model lacking one is
listed, not ranked. The same aggregation over every (dataset, perturbation type) of the reports is kept
under its own name: a dataset in which a model misses one perturbation type adds nothing to its Sum (the
authors' code). The whole-dataset numbers the leaderboard showed before are kept as "dataset-level".
"""

from __future__ import annotations

import dataclasses
import fractions as pyfractions
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from imagenet_suite import cli
from imagenet_suite.perturbations.names import HEUILLET_COMMON
from imagenet_suite.scoring.evaluation.results import ScoreReport
from imagenet_suite.scoring.metrics.classification import Fraction
from imagenet_suite.scoring.metrics.robustness import RobustnessSummary, summary_rows
from imagenet_suite.scoring.summary.leaderboard import leaderboard, load_suites, perturbation_accuracies
from imagenet_suite.scoring.summary.papers.heuillet2025 import (
    AUTOATTACK_STANDARD,
    COMMON_PLAN,
    PAPER_AUTOATTACKS,
    paper_types,
)
from tests.test_read_runs import SHA_A, suite_json
from tests.test_read_runs import build as val_build
from tests.test_read_runs import write_run as write_suite
from tests.test_scoring_aggregates import HAND, HAND_BORDA, HAND_MAC, HAND_SUM, MODELS, RANKINGS

FORMAT = "imagenet-suite.suite/2"
SHA = {name: f"{i:x}" * 64 for i, name in enumerate(("d1", "d2", "common", "c"), start=2)}
TYPES = ("clean", "fog/1", "snow/1", "frost/1", "contrast/1")  # five types, as the paper's five


def build(name: str, builder: str, config: str) -> dict:
    return {
        "folder": f"/data/{name}",
        "builder": builder,
        "version": "1.0.0",
        "config": config,
        "split": "validation",
        "build_info_sha256": SHA[name],
    }


def with_provenance(report: dict, scored: dict) -> dict:
    return {**report, "provenance": {"dataset": scored, "outputs": scored, "id_outputs": None}}


def tenths(value: float) -> Fraction:
    return Fraction(round(value * 10), 10)


def corrupted_report(name: str, config: str, accuracies: dict[str, float]) -> dict:
    """A ``perturbations`` report as the robustness family writes it: ``accuracies`` by type, ``clean``
    for the clean rows and ``<corruption>/<severity>`` for the corrupted splits (a type absent: no rows)."""
    splits = {}
    for type_, value in accuracies.items():
        if type_ != "clean":
            corruption, severity = type_.split("/")
            splits[(corruption, int(severity))] = tenths(value)
    clean = tenths(accuracies["clean"]) if "clean" in accuracies else None
    rows = summary_rows(RobustnessSummary(splits, clean), "top1")
    meta = {"dataset": "perturbations", "version": "1.0.0", "config": config, "split": "validation"}
    return with_provenance(ScoreReport(rows, meta, {}).to_dict(), build(name, "perturbations", config))


def write_run(root: Path, model: str, reports: dict, adversarial: dict | None = None) -> Path:
    """A run folder holding the suite.json of ``model`` (ImageNet val at 0.5 and ``reports``)."""
    return write_suite(root, model.replace(":", "_"), suite_json(model, 0.5, adversarial=adversarial, **reports))


def issue_example_runs(root: Path) -> list[Path]:
    """A misses one accuracy of d1 (fog/1); B has all; C has no perturbation type at all."""
    a1 = dict(zip(TYPES, (0.9, None, 0.5, 0.4, 0.6), strict=True))
    a1.pop("fog/1")
    a2 = dict(zip(TYPES, (0.8, 0.3, 0.4, 0.3, 0.5), strict=True))
    b = dict(zip(TYPES, (0.7, 0.2, 0.3, 0.2, 0.4), strict=True))
    config = "imagenet_c_regenerated"
    return [
        write_run(root, "timm:A", {"d1": corrupted_report("d1", config, a1), "d2": corrupted_report("d2", config, a2)}),
        write_run(root, "timm:B", {"d1": corrupted_report("d1", config, b), "d2": corrupted_report("d2", config, b)}),
        write_run(root, "timm:C", {}),
    ]


def test_the_issue_example_sum_through_the_leaderboard(tmp_path):
    board = leaderboard(load_suites(issue_example_runs(tmp_path)))
    assert board.perturbation_accuracies.shape == (3, 10)  # 3 models x (2 datasets x 5 types)
    assert np.isnan(board.perturbation_accuracies.loc["timm:A", ("d1", "fog/1")])
    aggregates = board.aggregates
    # A: d1 is incomplete and adds nothing; d2: 0.8 + 0.3 + 0.4 + 0.3 + 0.5. B: 2 x 1.8. C: nothing, kept at 0.
    assert aggregates["score_sum"].to_dict() == pytest.approx({"timm:A": 2.3, "timm:B": 3.6, "timm:C": 0.0})
    assert aggregates["sum_rank"].to_dict() == {"timm:B": 1, "timm:A": 2, "timm:C": 3}
    assert aggregates["incomplete_datasets"].to_dict() == {"timm:A": 1, "timm:B": 0, "timm:C": 2}
    # Borda: A tops every voter it has but gets d2's only (5 x 2); B gets 5 x 1 on each dataset
    assert aggregates["borda"].to_dict() == {"timm:A": 10.0, "timm:B": 10.0, "timm:C": 0.0}


def test_a_hand_computed_borda_sum_and_mac_through_the_leaderboard(tmp_path):
    runs = []
    for k, model in enumerate(MODELS):
        reports = {
            name: corrupted_report(name, "imagenet_c_regenerated", {t: values[k] for t, values in types.items()})
            for name, types in HAND.items()
        }
        runs.append(write_run(tmp_path, model, reports))
    board = leaderboard(load_suites(runs))
    assert board.aggregates["borda"].to_dict() == HAND_BORDA
    assert board.aggregates["borda_rank"].to_dict() == {"M1": 2, "M2": 1, "M3": 3}
    assert board.aggregates["score_sum"].to_dict() == pytest.approx(HAND_SUM, abs=1e-12)
    assert board.mac_per_dataset.to_dict() == pytest.approx(HAND_MAC, abs=1e-12)
    assert board.mac == pytest.approx(0.25 + (0.5 + np.sqrt(3)) / 6, abs=1e-12)  # 0.622008...
    # the dataset-level numbers are another quantity: one voter per report's headline accuracy
    assert board.dataset_level["datasets"].iloc[0] == 3  # imagenet_val, d1, d2
    assert "borda" not in board.dataset_level.columns and "dataset_level_borda" in board.dataset_level.columns


def test_perturbation_types_of_each_kind_of_report(tmp_path):
    common = corrupted_report("common", "common", {"clean": 0.8, "snow/3": 0.4, "fog/3": 0.6})
    released = {}
    for config, value in (("fog_2", 0.3), ("snow_1", 0.6)):
        meta = {"dataset": "imagenet_c", "version": "1.0.0", "config": config, "split": "validation"}
        rows = summary_rows(RobustnessSummary({(config[:-2], int(config[-1])): tenths(value)}, None), "top1")
        report = ScoreReport(rows, meta, {}).to_dict()
        report["metrics"].insert(0, {"metric": "top1_accuracy", "variant": "", "subgroup": "", "value": value})
        released[f"imagenet_c/{config}"] = with_provenance(report, build("c", "imagenet_c", config))
    adversarial = {
        "requested_rows": 8,
        "seed": 0,
        "batch_size": 4,
        "rows": 8,
        "clean_accuracy": 0.75,
        "fgsm_accuracy": 0.25,
        "pgd_accuracy": 0.125,
        "attack": "torchattacks FGSM eps=8/255; PGD eps=8/255 alpha=2/255 steps=10 random_start on the normalised inputs, clamped to [0,1] (hesse2025: Beyond Accuracy's code)",
        "attack_convention": "hesse2025",
        "ids": [f"v{i}" for i in range(8)],
        "dataset": val_build(SHA_A),  # the ImageNet-val build of the run's val report
    }
    run = write_run(tmp_path, "timm:m", {"perturbations/common": common, **released}, adversarial)
    (suite,) = load_suites([run]).values()
    assert perturbation_accuracies(suite) == {
        ("imagenet_c", "fog/2"): 0.3,
        ("imagenet_c", "snow/1"): 0.6,
        # the paper's portfolio: clean and common (all corrupted rows pooled: (4 + 6) / 20), not per corruption
        ("perturbations/common", "clean"): 0.8,
        ("perturbations/common", "common"): 0.5,
        ("adversarial (8 rows, seed 0)", "clean"): 0.75,
        ("adversarial (8 rows, seed 0)", "fgsm"): 0.25,
        ("adversarial (8 rows, seed 0)", "pgd"): 0.125,
    }  # imagenet_val's top-1 is no perturbation type


def test_leaderboard_markdown_and_csvs_name_each_convention(tmp_path, capsys):
    runs = issue_example_runs(tmp_path)
    assert cli.main(["leaderboard", *map(str, runs), "--out", str(tmp_path / "board")]) == 0
    capsys.readouterr()
    text = (tmp_path / "board" / "leaderboard.md").read_text()
    heading = "### Sum / Borda / MAC over every (dataset, perturbation type) of the runs (not Heuillet et al. 2025's"
    assert heading in text and "10 voters (dataset, perturbation type) over 2 datasets" in text
    every = text.split(heading, 1)[1].split("\n### ", 1)[0]
    row = next(line for line in every.splitlines() if line.startswith("| timm:A | "))  # model, ...
    assert row.endswith(" | 2.3 | 2 | 10 | 1 | 1 |"), row
    assert "MAC over every perturbation type (Heuillet et al. 2025's recipe: mean absolute Spearman correlation" in text
    # the paper's own section: none of these runs has an attack or a `common` build, so none is ranked
    assert "### Sum / Borda / MAC (Heuillet et al. 2025: the paper's five perturbation types on ImageNet val)" in text
    assert "No run has any of the five types: each needs `evaluate --adversarial N --attack autoattack-linf," in text
    assert "- `timm:C`: clean: no attacked images" in text  # no table of dashes, but why each model has none
    assert "## Dataset-level Sum / Borda (one voter per dataset's headline accuracy; not Heuillet et al. 2025's" in text
    assert "Dataset-level MAC (mean absolute Spearman correlation between the datasets' headline accuracies" in text
    assert "4.7" not in text  # A's Sum when only the missing accuracy is skipped
    board = tmp_path / "board"
    header = (board / "leaderboard_aggregates.csv").read_text().splitlines()[0]
    assert header == "model,score_sum,sum_rank,borda,borda_rank,incomplete_datasets"
    assert (board / "leaderboard_dataset_level.csv").read_text().startswith("model,dataset_level_sum,")
    long = (board / "leaderboard_perturbation_accuracies.csv").read_text().splitlines()
    assert long[0] == "model,dataset,perturbation,accuracy" and len(long) == 1 + 9 + 10  # A misses one
    assert (board / "leaderboard_mac.csv").read_text().splitlines()[0] == "dataset,mac"


def test_runs_without_perturbation_types_have_no_paper_aggregates(tmp_path, capsys):
    runs = [write_run(tmp_path, f"timm:m{i}", {}) for i in range(2)]
    board = leaderboard(load_suites(runs))
    assert board.perturbation_accuracies.shape == (2, 0) and list(board.aggregates.columns) == []
    assert np.isnan(board.mac) and board.dataset_level["datasets"].tolist() == [1, 1]
    assert cli.main(["leaderboard", *map(str, runs), "--out", str(tmp_path / "board")]) == 0
    capsys.readouterr()
    text = (tmp_path / "board" / "leaderboard.md").read_text()
    assert "No run reports perturbation types" in text
    assert board.heuillet2025.ranked == [] and set(board.heuillet2025.missing) == {"timm:m0", "timm:m1"}


ADVERSARIAL_TYPES = ("clean", "fgsm", "pgd", "autoattack-linf", "autoattack-l2", "autoattack-l1")


def attacked(accuracies: dict[str, float]) -> dict:
    """adversarial.json as ``evaluate --attack fgsm,pgd,autoattack-...`` writes it, with ``accuracies`` by type."""
    record = {"requested_rows": 8, "seed": 0, "batch_size": 4, "rows": 8, "attack": "FGSM, PGD, AutoAttack"}
    record["attack_convention"] = "hesse2025"
    record |= {f"{type_}_accuracy": accuracies[type_] for type_ in ("clean", "fgsm", "pgd")}
    autoattack = {}
    for type_, norm, eps in (
        ("autoattack-linf", "Linf", 4 / 255),
        ("autoattack-l2", "L2", 2.0),
        ("autoattack-l1", "L1", 75.0),
    ):
        if type_ in accuracies:
            autoattack[type_] = {"accuracy": accuracies[type_], "norm": norm, "eps": eps, "version": "standard",
                                 "attacks": ["apgd-ce", "apgd-t", "fab-t", "square"], "iterations": 100,
                                 "queries": 5000, "library": "pyautoattack 0.2.0"}  # fmt: skip
    return {**record, "autoattack": autoattack, "ids": [f"v{i}" for i in range(8)], "dataset": val_build(SHA_A)}


def test_autoattack_types_are_voters_of_the_attacked_subset(tmp_path):
    accuracies = {
        "timm:A": dict(zip(ADVERSARIAL_TYPES, (0.75, 0.25, 0.125, 0.0, 0.125, 0.25), strict=True)),
        "timm:B": dict(zip(ADVERSARIAL_TYPES, (0.5, 0.375, 0.25, 0.125, 0.25, 0.375), strict=True)),
        "timm:C": dict(zip(ADVERSARIAL_TYPES[:-1], (0.625, 0.125, 0.0, 0.25, 0.0), strict=True)),  # no L1 run
    }
    runs = [write_run(tmp_path, model, {}, attacked(values)) for model, values in accuracies.items()]
    board = leaderboard(load_suites(runs))
    name = "adversarial (8 rows, seed 0)"
    assert list(board.perturbation_accuracies.columns) == [(name, type_) for type_ in sorted(ADVERSARIAL_TYPES)]
    for model, values in accuracies.items():
        assert board.perturbation_accuracies.loc[model].dropna().to_dict() == {(name, t): v for t, v in values.items()}
    aggregates = board.aggregates
    # Sum: the six types of the one dataset; C misses autoattack-l1, so the dataset adds nothing to it
    assert aggregates["score_sum"].to_dict() == pytest.approx({"timm:A": 1.5, "timm:B": 1.875, "timm:C": 0.0})
    assert aggregates["incomplete_datasets"].to_dict() == {"timm:A": 0, "timm:B": 0, "timm:C": 1}
    # Borda (rank points, the authors' code): A 3+2+2+1+2+1 (L1: A and B only), B 1+3+3+2+3+2, C none
    assert aggregates["borda"].to_dict() == {"timm:A": 11.0, "timm:B": 14.0, "timm:C": 0.0}


# ------------------------------------------------------------ the paper's five types on ImageNet (issue 35, item 3)

AUTHORS_PLAN = {  # what a `perturbations --config common` build records (meta.protocol.perturbation)
    "flavor": "imagecorruptions",
    "corruptions": list(HEUILLET_COMMON),
    "severities": [3],
    "assignment": "block",
    "apply_at": "native_then_resize224",
    "encoding": "png",
    "clean": True,
    "augmenter": "",
}


def common_report(accuracy: pyfractions.Fraction, plan: dict | None = None) -> dict:
    """A `perturbations` build of config `common` as evaluate reports it: ``accuracy`` over its corrupted rows
    (one split, all rows pooled) and clean rows at 0.9, with the plan the build records."""
    corrupted = Fraction(accuracy.numerator, accuracy.denominator)
    rows = summary_rows(RobustnessSummary({("snow", 3): corrupted}, Fraction(9, 10)), "top1")
    meta = {
        "dataset": "perturbations",
        "version": "2.0.0",
        "config": "common",
        "split": "validation",
        "protocol": {"perturbation": AUTHORS_PLAN if plan is None else plan},
    }
    return with_provenance(ScoreReport(rows, meta, {}).to_dict(), build("common", "perturbations", "common"))


def paper_run(root: Path, model: str, values: dict[str, float], budget: dict | None = None) -> Path:
    """A run with the attacks of ``attacked`` (FGSM, PGD and AutoAttack, ``values`` by type; ``budget``: the
    L1 attack's iterations and queries when not AutoAttack standard's) and, with ``common`` in ``values``, a
    `common` build."""
    adversarial = attacked(values)
    if budget is not None:
        adversarial["autoattack"]["autoattack-l1"].update(budget)
    reports = {}
    if "common" in values:
        reports["perturbations/common"] = common_report(pyfractions.Fraction(values["common"]))
    return write_run(root, model, reports, adversarial)


# accuracies (eighths: sums exact in binary); FGSM and PGD put A first, were they voters
PAPER_RUNS = {
    "timm:A": {"clean": 0.75, "autoattack-linf": 0.25, "autoattack-l2": 0.375, "autoattack-l1": 0.125, "common": 0.5},
    "timm:B": {"clean": 0.625, "autoattack-linf": 0.375, "autoattack-l2": 0.5, "autoattack-l1": 0.25, "common": 0.375},
    "timm:C": {
        "clean": 0.875,
        "autoattack-linf": 0.125,
        "autoattack-l2": 0.25,
        "autoattack-l1": 0.125,
        "common": 0.875,
    },
    # D: lowest on every type it has, but its L1 attack ran with a reduced budget: not the paper's type
    "timm:D": {"clean": 0.5, "autoattack-linf": 0.0, "autoattack-l2": 0.125, "autoattack-l1": 0.0, "common": 0.25},
}
FGSM_PGD = {"timm:A": (0.5, 0.5), "timm:B": (0.25, 0.125), "timm:C": (0.125, 0.0), "timm:D": (0.0, 0.0)}


def paper_runs(root: Path) -> list[Path]:
    runs = []
    for model, values in PAPER_RUNS.items():
        fgsm, pgd = FGSM_PGD[model]
        budget = {"iterations": 5, "queries": 10} if model == "timm:D" else None
        runs.append(paper_run(root, model, {**values, "fgsm": fgsm, "pgd": pgd}, budget))
    return runs


def test_heuillet_borda_and_mac_on_imagenet_with_the_papers_five_types_hand_checked(tmp_path, capsys):
    runs = paper_runs(tmp_path)
    board = leaderboard(load_suites(runs))
    paper = board.heuillet2025
    assert list(paper.accuracies.columns) == ["clean", "Linf", "L2", "L1", "common"]
    assert paper.accuracies.loc["timm:A"].tolist() == [0.75, 0.25, 0.375, 0.125, 0.5]
    # D's L1 ran with 5 iterations and 10 queries: not the paper's L1, so D is listed, not ranked
    assert list(paper.missing) == ["timm:D"] and list(paper.missing["timm:D"]) == ["L1"]
    assert "iterations 5, queries 10" in paper.missing["timm:D"]["L1"]
    assert np.isnan(paper.accuracies.loc["timm:D", "L1"]) and paper.ranked == ["timm:A", "timm:B", "timm:C"]
    # Sum: A .75+.25+.375+.125+.5 = 2.0; B .625+.375+.5+.25+.375 = 2.125; C .875+.125+.25+.125+.875 = 2.25
    scores = paper.scores
    assert scores["score_sum"].loc[["timm:A", "timm:B", "timm:C"]].tolist() == [2.0, 2.125, 2.25]
    assert scores["sum_rank"].loc[["timm:A", "timm:B", "timm:C"]].tolist() == [3, 2, 1]
    # Borda (robustgen_code: 1 + the models strictly below, among A, B, C):
    #   clean  .75 .625 .875 -> A 2, B 1, C 3      L1      .125 .25 .125 -> A 1, B 3, C 1 (A = C: neither below)
    #   Linf   .25 .375 .125 -> A 2, B 3, C 1      common  .5 .375 .875  -> A 2, B 1, C 3
    #   L2     .375 .5 .25   -> A 2, B 3, C 1
    # A 2+2+2+1+2 = 9, B 1+3+3+3+1 = 11, C 3+1+1+1+3 = 9: B first, A and C share second. D, below everyone on
    # its four types, would add 1 to each of them per type (13, 15, 13) had it voted; FGSM and PGD (A first
    # on both) would add 3, 2, 1 each (15, 15, 11) had they been voters.
    assert scores["borda"].loc[["timm:A", "timm:B", "timm:C"]].tolist() == [9, 11, 9]
    assert scores["borda_rank"].loc[["timm:A", "timm:B", "timm:C"]].tolist() == [2, 1, 2]
    assert scores.loc["timm:D"].isna().all()
    # MAC: Spearman on the ranks (ties averaged) of A, B, C, centred: clean (0,-1,1), Linf (0,1,-1),
    # L2 (0,1,-1), L1 (-.5,1,-.5), common (0,-1,1). The six pairs without L1 have |rho| = 1; each pair with L1
    # has |rho| = 1.5 / (sqrt(2) sqrt(1.5)) = sqrt(3)/2. MAC = (6 + 4 sqrt(3)/2) / 10 = 0.6 + 0.2 sqrt(3)
    assert paper.mac == pytest.approx(0.6 + 0.2 * np.sqrt(3), abs=1e-12)
    assert paper.correlations.loc["clean", "L1"] == pytest.approx(-np.sqrt(3) / 2, abs=1e-12)
    # FGSM, PGD and every attack stay voters of the aggregation over all the runs' types, under its own name
    assert ("adversarial (8 rows, seed 0)", "fgsm") in board.perturbation_accuracies.columns

    assert cli.main(["leaderboard", *map(str, runs), "--out", str(tmp_path / "board")]) == 0
    capsys.readouterr()
    text = (tmp_path / "board" / "leaderboard.md").read_text()
    section = text.split("### Sum / Borda / MAC (Heuillet et al. 2025: the paper's five perturbation types", 1)[1]
    section = section.split("\n### ", 1)[0]
    rows = {line.split(" | ")[0]: line for line in section.splitlines() if line.startswith("| timm:")}
    assert rows["| timm:B"].endswith(" | 0.625 | 0.375 | 0.5 | 0.25 | 0.375 | 2.125 | 2 | 11 | 1 |")
    assert rows["| timm:D"].endswith(" | 0.5 | 0 | 0.125 | — | 0.25 | — | — | — | — |")
    assert "MAC over the 3 ranked model(s) (Heuillet et al. 2025, Table 4's recipe): 0.9464" in section
    assert "- `timm:D`: L1: autoattack-l1 ran with iterations 5, queries 10" in section
    header = "| model | clean ↑ | Linf ↑ | L2 ↑ | L1 ↑ | common ↑ | score_sum ↑ | sum_rank ↓ | borda ↑ | borda_rank ↓ |"
    assert header in section and "different attacked images" not in section  # no FGSM/PGD column
    assert "### Sum / Borda / MAC over every (dataset, perturbation type) of the runs (not Heuillet" in text
    table = pd.read_csv(tmp_path / "board" / "leaderboard_heuillet2025.csv", index_col="model")
    assert table.loc["timm:C", ["score_sum", "borda", "borda_rank"]].tolist() == [2.25, 9, 2]
    assert table.loc["timm:D", "missing"].startswith("L1: autoattack-l1 ran with iterations 5")
    correlations = pd.read_csv(tmp_path / "board" / "leaderboard_heuillet2025_correlations.csv", index_col="type")
    assert correlations.shape == (5, 5) and correlations.loc["Linf", "L2"] == pytest.approx(1.0)


def test_what_is_not_the_papers_type_is_named(tmp_path):
    values = {"clean": 0.5, "fgsm": 0.25, "pgd": 0.125, "autoattack-linf": 0.25}
    adversarial = attacked(values)
    adversarial["autoattack"]["autoattack-l2:eps=0.5"] = {**adversarial["autoattack"]["autoattack-linf"], "norm": "L2",
                                                          "eps": 0.5}  # fmt: skip
    twelve = {**AUTHORS_PLAN, "corruptions": ["gaussian_noise", *HEUILLET_COMMON]}  # the paper's App. C list
    reports = {"perturbations/common": common_report(pyfractions.Fraction(1, 2), twelve)}
    (suite,) = load_suites([write_run(tmp_path, "timm:m", reports, adversarial)]).values()
    found = paper_types(suite)
    assert found.accuracies == {"clean": 0.5, "Linf": 0.25}
    assert found.missing["L2"].startswith("no AutoAttack L2 at eps 2 (adversarial.json has autoattack-l2:eps=0.5;")
    assert found.missing["L1"] == "no AutoAttack L1 at eps 75 (evaluate --attack autoattack-l1)"
    assert found.missing["common"].startswith("the `common` build perturbations/common is not the authors' portfolio")
    assert "corruptions ['gaussian_noise', 'shot_noise'" in found.missing["common"]
    (bare,) = load_suites([write_run(tmp_path, "timm:bare", {})]).values()
    assert list(paper_types(bare).missing) == ["clean", "Linf", "L2", "L1", "common"]


def test_the_paper_constants_are_the_attacks_and_the_build_evaluate_runs():
    from builders.perturbations import DEFAULT_PLANS
    from imagenet_suite.inference.autoattack import AUTOATTACK_EPS, AUTOATTACK_NORMS, ITERATIONS, QUERIES

    for label, norm, eps in PAPER_AUTOATTACKS.values():
        assert (AUTOATTACK_NORMS[label], AUTOATTACK_EPS[label]) == (norm, eps)
    assert (AUTOATTACK_STANDARD["iterations"], AUTOATTACK_STANDARD["queries"]) == (ITERATIONS, QUERIES)
    plan = dataclasses.asdict(DEFAULT_PLANS["common"])
    assert {
        name: list(plan[name]) if name in ("corruptions", "severities") else plan[name] for name in COMMON_PLAN
    } == (COMMON_PLAN)


def test_fft50_per_dataset_through_the_leaderboard_gives_table_10_and_table_4(robustgen_fft50, test_data):
    """Each dataset of Heuillet et al.'s FFT-50 measurements (the released table, `imagenet_suite.reference`) as
    the ImageNet of 80 synthetic runs: each run's MAC is Table 4's "All 80 configs" cell of that dataset, and the
    per-dataset Borda and Sum of each configuration, added over the six datasets, are Table 10's."""
    published = pd.read_csv(test_data / RANKINGS)
    published = published[published.protocol == "FFT-50"].set_index(["backbone_name", "loss", "model_size",
                                                                      "pre_training_strategy"])  # fmt: skip
    names = {}
    borda, total = pd.Series(0.0, index=published.index), pd.Series(0.0, index=published.index)
    for (dataset, part), mac in zip(robustgen_fft50.groupby("dataset", sort=True), TABLE_4_ALL, strict=True):
        suites = {}
        for row in part.itertuples():
            name = f"{row.backbone} {row.loss}"
            names[name] = (row.backbone_name, row.loss, row.model_size, row.pre_training_strategy)
            values = {"clean": row.clean_acc, "autoattack-linf": row.Linf_acc, "autoattack-l2": row.L2_acc,
                      "autoattack-l1": row.L1_acc, "fgsm": 0.0, "pgd": 0.0}  # fmt: skip
            common = common_report(pyfractions.Fraction(repr(row.common_acc)))
            suites[name] = suite_json(name, 0.5, adversarial=attacked(values), **{"perturbations/common": common})
        paper = leaderboard(suites).heuillet2025
        assert not paper.missing and len(paper.ranked) == 80
        assert paper.accuracies["common"].tolist() == part["common_acc"].tolist()  # every value as released
        assert paper.mac == pytest.approx(mac, abs=0.0005), dataset
        keys = pd.MultiIndex.from_tuples([names[name] for name in paper.scores.index])
        borda += pd.Series(paper.scores["borda"].to_numpy(), index=keys).reindex(published.index)
        total += pd.Series(paper.scores["score_sum"].to_numpy(), index=keys).reindex(published.index)
    assert (borda == published["borda"]).all()
    assert np.abs(total - published["score_sum"]).max() <= 5e-7


TABLE_4_ALL = (0.847, 0.782, 0.805, 0.681, 0.849, 0.807)  # Table 4, "All 80 configs", datasets in name order


@pytest.fixture(scope="module")
def robustgen_fft50() -> pd.DataFrame:
    from imagenet_suite import reference

    results = reference.load("heuillet2025_results")
    return results[results.protocol == "FFT-50"]
