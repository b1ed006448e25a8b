"""The leaderboard's Sum, Borda and MAC are Heuillet et al. 2025's (issue 25, items 5 and 6).

Run folders hold hand-written suite.json files in the format ``evaluate`` writes (reports made by
:class:`ScoreReport` from robustness rows, the summary by ``suite_summary``), read back by ``leaderboard``
through ``read_suite``. A voter is a (dataset, perturbation type) pair taken from the reports; a dataset
in which a model misses one perturbation type adds nothing to its Sum (the authors' code). The
whole-dataset numbers the leaderboard showed before are kept as "dataset-level", under other names.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from imagenet_suite import cli
from imagenet_suite.scoring.evaluation.results import ScoreReport
from imagenet_suite.scoring.metrics.classification import Fraction
from imagenet_suite.scoring.metrics.robustness import RobustnessSummary, summary_rows
from imagenet_suite.scoring.summary.leaderboard import leaderboard, load_suites, perturbation_accuracies
from tests.test_read_runs import SHA_A, suite_json
from tests.test_read_runs import build as val_build
from tests.test_read_runs import write_run as write_suite
from tests.test_scoring_aggregates import HAND, HAND_BORDA, HAND_MAC, HAND_SUM, MODELS

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
    assert "## Sum / Borda / MAC (Heuillet et al. 2025: voters are dataset × perturbation type)" in text
    assert "10 voters (dataset, perturbation type) over 2 datasets" in text
    paper = text.split("## Sum / Borda / MAC (Heuillet", 1)[1].split("\n## ", 1)[0]
    row = next(line for line in paper.splitlines() if line.startswith("| timm:A | "))  # model, weights, ...
    assert row.endswith(" | 2.3 | 2 | 10 | 1 | 1 |"), row
    assert "MAC (Heuillet et al. 2025: mean absolute Spearman correlation between the perturbation types" in text
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
