"""Model groups from the models' own metadata (suite.json ``weights_source.family`` / ``.pretraining``) and
Heuillet et al. 2025's Table 4, the MAC per group of models (issue 37).

The metadata is what each library states, read offline without loading weights (timm's entrypoint module and
pretrained tag, torchvision's builder module and weights enum member, open_clip's architecture and pretrained
tag); ``leaderboard`` groups the models by it when no ``--groups`` file is given. Table 4 is checked by hand
and against scipy on a small leaderboard, and cell by cell against the paper's published Table 4 on the
authors' released FFT-50 measurements (``imagenet_suite.reference``'s ``heuillet2025_results``).
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from imagenet_suite import cli
from imagenet_suite.errors import RunFolderError
from imagenet_suite.inference.models import resolve_weights
from imagenet_suite.scoring.summary.groups import METADATA_SOURCE, ModelGroups, metadata_groups
from imagenet_suite.scoring.summary.leaderboard import leaderboard, load_suites, write_leaderboard
from imagenet_suite.scoring.summary.papers.heuillet2025 import PAPER_TYPES, group_mac, paper_tables
from imagenet_suite.scoring.summary.suite_json import read_suite
from tests.test_leaderboard_heuillet import attacked, common_report
from tests.test_read_runs import suite_json

FORMAT_3 = "imagenet-suite.suite/3"

# --------------------------------------------------------------------------- what the libraries state, offline


@pytest.mark.parametrize(
    ("spec", "weights", "family", "pretraining"),
    [
        ("timm:test_resnet", "none", "resnet", "in1k"),  # default tag r160_in1k
        ("timm:vit_base_patch16_224.augreg_in21k_ft_in1k", "none", "vision_transformer", "in21k_ft_in1k"),
        ("timm:convnext_base.fb_in22k", "none", "convnext", "in22k"),
        ("torchvision:resnet50.IMAGENET1K_V1", None, "resnet", "IMAGENET1K"),
        ("torchvision:vit_b_16.IMAGENET1K_SWAG_E2E_V1", None, "vision_transformer", "IMAGENET1K_SWAG_E2E"),
        ("open_clip:ViT-B-32.laion2b_s34b_b79k", "none", "ViT-B-32", "laion2b"),
        ("open_clip:ViT-B-32.openai", "none", "ViT-B-32", "openai"),
    ],
)
def test_the_weights_source_records_what_the_library_states(spec, weights, family, pretraining):
    record = resolve_weights(spec, weights).record()  # nothing downloaded
    assert (record["family"], record["pretraining"]) == (family, pretraining)


def test_a_user_model_states_nothing():
    record = resolve_weights("my_models:net", "none").record()  # the module is not imported
    assert record["family"] is None and record["pretraining"] is None


# --------------------------------------------------------------------------------- runs with recorded metadata


def source(library: str, architecture: str, tag: str, family: str, pretraining: str, kind: str) -> dict:
    return {"kind": kind, "library": library, "architecture": architecture, "tag": tag, "requested": tag,
            "loaded": kind == library, "location": None, "seed": 0 if kind == "none" else None,
            "family": family, "pretraining": pretraining}  # fmt: skip


RESNET = source("timm", "resnet50", "a1_in1k", "resnet", "in1k", "timm")
CLIP = source("open_clip", "ViT-B-32", "laion2b_s34b_b79k", "ViT-B-32", "laion2b", "none")  # a random init
# eighths; A, B, C are test_leaderboard_heuillet's PAPER_RUNS (their MAC is 0.6 + 0.2 sqrt(3), hand-checked
# there); D and E differ on every type, so each type pair has |rho| = 1 over the two
RUNS = {
    "timm:A": (RESNET, (0.75, 0.25, 0.375, 0.125, 0.5)),
    "timm:B": (RESNET, (0.625, 0.375, 0.5, 0.25, 0.375)),
    "timm:C": (RESNET, (0.875, 0.125, 0.25, 0.125, 0.875)),
    "open_clip:D": (CLIP, (0.5, 0.125, 0.25, 0.0, 0.25)),
    "open_clip:E": (CLIP, (0.625, 0.0, 0.125, 0.125, 0.5)),
}


def run_suite(model: str, weights_source: dict | None, values: tuple[float, ...]) -> dict:
    """A format-3 suite.json with the paper's five types (``values`` in :data:`PAPER_TYPES` order)."""
    accuracies = dict(zip(("clean", "autoattack-linf", "autoattack-l2", "autoattack-l1"), values[:4], strict=True))
    adversarial = attacked({**accuracies, "fgsm": 0.0, "pgd": 0.0})
    common = common_report(__import__("fractions").Fraction(values[4]))
    suite = suite_json(model, 0.5, adversarial=adversarial, **{"perturbations/common": common})
    return {**suite, "format": FORMAT_3, "weights_source": weights_source}


def write_runs(root: Path, runs: dict = RUNS) -> list[Path]:
    folders = []
    for model, (weights_source, values) in runs.items():
        folder = root / model.replace(":", "_")
        folder.mkdir()
        (folder / "suite.json").write_text(json.dumps(run_suite(model, weights_source, values)))
        folders.append(folder)
    return folders


def scipy_mac(rows: list[tuple[float, ...]]) -> float:
    """MAC from scipy: mean |rho| over the off-diagonal of the types' Spearman matrix (average ranks)."""
    rho = stats.spearmanr(np.array(rows)).statistic
    return float(np.abs(rho[~np.eye(len(rho), dtype=bool)]).mean())


def test_metadata_groups_give_table_4_without_a_groups_file(tmp_path):
    folders = write_runs(tmp_path)
    board = leaderboard(load_suites(folders))
    assert board.groups.source == METADATA_SOURCE
    assert board.groups.setups() == {
        "family": {"resnet": ["timm:A", "timm:B", "timm:C"], "ViT-B-32": ["open_clip:D", "open_clip:E"]},
        "pretraining": {"in1k": ["timm:A", "timm:B", "timm:C"], "random init": ["open_clip:D", "open_clip:E"]},
        "VM vs VLM": {"VM": ["timm:A", "timm:B", "timm:C"], "VLM": ["open_clip:D", "open_clip:E"]},
    }
    table = board.heuillet2025.group_mac
    assert list(table.columns) == ["setup", "group", "models", "ranked", "imagenet_val", "mac_avg"]
    assert table[["setup", "group", "models", "ranked"]].values.tolist() == [
        ["all", "all ranked models", 5, 5],
        ["family", "resnet", 3, 3], ["family", "ViT-B-32", 2, 2],
        ["pretraining", "in1k", 3, 3], ["pretraining", "random init", 2, 2],
        ["VM vs VLM", "VM", 3, 3], ["VM vs VLM", "VLM", 2, 2],
    ]  # fmt: skip
    every = [values for _, values in RUNS.values()]
    expected = [scipy_mac(every), *[0.6 + 0.2 * math.sqrt(3), 1.0] * 3]  # resnet by hand, the pair: |rho| = 1
    assert table["imagenet_val"].tolist() == pytest.approx(expected, abs=1e-12)
    assert table["mac_avg"].tolist() == pytest.approx(expected, abs=1e-12)  # one dataset: its MAC
    assert scipy_mac(every[:3]) == pytest.approx(0.6 + 0.2 * math.sqrt(3), abs=1e-12)

    write_leaderboard(board, tmp_path / "board")  # the CLI's files, without computing the board twice
    written = pd.read_csv(tmp_path / "board" / "leaderboard_heuillet2025_mac_groups.csv")
    assert written[["setup", "group", "ranked"]].values.tolist() == table[["setup", "group", "ranked"]].values.tolist()
    assert written["imagenet_val"].tolist() == pytest.approx(expected, abs=1e-12)
    text = (tmp_path / "board" / "leaderboard.md").read_text()
    section = text.split("### MAC per group of models (Heuillet et al. 2025, Table 4)", 1)[1].split("\n## ", 1)[0]
    assert f"Groups from {METADATA_SOURCE}." in section
    assert f"| family | resnet | 3 | 3 | {0.6 + 0.2 * math.sqrt(3):.4g} | {0.6 + 0.2 * math.sqrt(3):.4g} |" in section
    assert "| VM vs VLM | VLM | 2 | 2 | 1 | 1 |" in section
    assert f"Groups of models (the group tables): from {METADATA_SOURCE}." in text
    models = pd.read_csv(tmp_path / "board" / "leaderboard_models.csv", index_col="model")
    assert models.loc["timm:A", ["family", "pretraining"]].tolist() == ["resnet", "in1k"]
    assert models.loc["open_clip:D", ["family", "pretraining"]].tolist() == ["ViT-B-32", "laion2b"]


def test_a_groups_file_overrides_the_metadata_and_a_small_group_has_no_mac(tmp_path, capsys):
    folders = write_runs(tmp_path)
    groups = tmp_path / "groups.csv"
    groups.write_text("group,model\nmixed,timm:A\nmixed,open_clip:D\nmixed,timm:C\nalone,timm:B\n")
    assert cli.main(["leaderboard", *map(str, folders), "--groups", str(groups), "--out", str(tmp_path / "b")]) == 0
    capsys.readouterr()
    written = pd.read_csv(tmp_path / "b" / "leaderboard_heuillet2025_mac_groups.csv")
    assert written[["setup", "group", "models"]].values.tolist() == [
        ["all", "all ranked models", 5], ["all", "mixed", 3], ["all", "alone", 1]
    ]  # fmt: skip
    rows = [RUNS[name][1] for name in ("timm:A", "open_clip:D", "timm:C")]
    assert written["imagenet_val"].iloc[1] == pytest.approx(scipy_mac(rows), abs=1e-12)
    assert np.isnan(written["imagenet_val"].iloc[2])
    text = (tmp_path / "b" / "leaderboard.md").read_text()
    assert f"Groups from {groups}." in text and "fewer than two ranked models in the group" in text
    assert "all/alone" in text


def test_runs_without_metadata_have_no_groups_and_the_section_says_what_adds_them(tmp_path, capsys):
    old = {model: (None, values) for model, (_, values) in RUNS.items()}
    folders = write_runs(tmp_path, old)
    legacy = run_suite(
        "timm:F", {k: v for k, v in RESNET.items() if k not in ("family", "pretraining")}, RUNS["timm:A"][1]
    )
    (tmp_path / "F").mkdir()
    (tmp_path / "F" / "suite.json").write_text(json.dumps(legacy))  # a weights_source written before: still read
    board = leaderboard(load_suites([*folders, tmp_path / "F"]))
    assert board.groups is None and board.heuillet2025.group_mac.empty
    assert cli.main(["leaderboard", *map(str, folders), "--out", str(tmp_path / "board")]) == 0
    capsys.readouterr()
    text = (tmp_path / "board" / "leaderboard.md").read_text()
    assert "No groups: `imagenet-suite leaderboard RUN_DIR... --groups FILE`" in text
    assert "No groups (see Table 4 above for what gives them)." in text  # Figs. 4 and 3: no figure drawn
    assert not (tmp_path / "board" / "leaderboard_heuillet2025_main_effects.png").exists()
    assert not (tmp_path / "board" / "leaderboard_heuillet2025_mac_groups.csv").exists()


def test_a_malformed_family_is_refused_naming_its_json_path(tmp_path):
    suite = run_suite("timm:A", {**RESNET, "family": 3}, RUNS["timm:A"][1])
    (tmp_path / "suite.json").write_text(json.dumps(suite))
    with pytest.raises(RunFolderError, match=r"weights_source\.family: expected a string or null, found the number 3"):
        read_suite(tmp_path / "suite.json")


def test_metadata_groups_of_a_file_or_user_model():
    file_source = {**RESNET, "kind": "file", "loaded": False}
    user = {**RESNET, "library": None, "family": None, "pretraining": None, "kind": "file", "loaded": False}
    groups = metadata_groups({"a": {"weights_source": file_source}, "u": {"weights_source": user}})
    assert groups.setups() == {
        "family": {"resnet": ["a"]},
        "pretraining": {"weights file": ["a"]},
        "VM vs VLM": {"VM": ["a"]},
    }


# ------------------------------------------------------------- Table 4 as published, from the authors' table

TABLE_4 = {  # Heuillet et al. 2025, Table 4 (FFT-50): caltech101, aircraft, flowers, pet, cars, land-use
    ("loss", "Classic AT"): (0.876, 0.702, 0.842, 0.778, 0.844, 0.890),
    ("loss", "TRADES"): (0.823, 0.884, 0.830, 0.669, 0.896, 0.777),
    ("model_size", "large"): (0.825, 0.882, 0.860, 0.859, 0.871, 0.803),
    ("model_size", "medium"): (0.743, 0.628, 0.743, 0.436, 0.701, 0.833),
    ("model_size", "small"): (0.911, 0.531, 0.503, 0.467, 0.575, 0.678),
    ("model_type", "fully attention"): (0.884, 0.800, 0.761, 0.713, 0.856, 0.882),
    ("model_type", "fully convolutional"): (0.762, 0.756, 0.811, 0.574, 0.818, 0.719),
    ("model_type", "hybrid"): (0.951, 0.815, 0.892, 0.798, 0.889, 0.879),
    ("pre_training_strategy", "fusion"): (0.760, 0.760, 0.920, 0.660, 0.920, 1.000),
    ("pre_training_strategy", "self-supervised"): (0.821, 0.902, 0.860, 0.619, 0.878, 0.668),
    ("pre_training_strategy", "self-supervised (multimodal)"): (0.911, 0.742, 0.760, 0.589, 0.855, 0.703),
    ("pre_training_strategy", "supervised"): (0.937, 0.760, 0.727, 0.682, 0.806, 0.789),
    ("pre_training_strategy", "supervised (multistep)"): (0.867, 0.809, 0.846, 0.893, 0.856, 0.798),
    ("pre_training_strategy", "supervised (robust)"): (0.568, 0.641, 0.841, 0.670, 0.685, 0.877),
}
TABLE_4_ALL = (0.847, 0.782, 0.805, 0.681, 0.849, 0.807)


def test_table_4_per_group_on_the_authors_fft50_measurements():
    """Each dataset of the authors' FFT-50 measurements as the ImageNet of 80 runs (accuracies only: the MAC
    needs nothing else), grouped by the configurations' loss, size, type and pretraining strategy: every
    cell of Table 4 to its three printed decimals."""
    from imagenet_suite import reference

    results = reference.load("heuillet2025_results")
    results = results[results.protocol == "FFT-50"]
    template = run_suite("timm:x", None, (0.5,) * 5)
    for column, (dataset, part) in enumerate(results.groupby("dataset", sort=True)):
        suites, rows = {}, []
        for row in part.itertuples():
            name = f"{row.backbone} {row.loss} {row.model_size} {row.pre_training_strategy}"
            suite = copy.deepcopy(template)
            adversarial = suite["summary"]["adversarial"]
            adversarial["clean_accuracy"] = row.clean_acc
            for label, value in (("linf", row.Linf_acc), ("l2", row.L2_acc), ("l1", row.L1_acc)):
                adversarial["autoattack"][f"autoattack-{label}"]["accuracy"] = value
            common = suite["datasets"]["perturbations/common"]
            for metric in common["metrics"]:
                if metric["metric"] == "pooled_corruption_accuracy":
                    metric["value"] = row.common_acc
            suites[name] = suite
            rows += [(setup, getattr(row, setup), name) for setup in ("loss", "model_size", "model_type",
                                                                       "pre_training_strategy")]  # fmt: skip
        groups = ModelGroups(tuple(m for m in _memberships(rows)), "Table 4's columns")
        paper = paper_tables(suites)  # as paper_tables(suites, groups) does, without Figs. 4 and 3's statistics
        assert len(paper.ranked) == 80 and list(paper.accuracies.columns) == list(PAPER_TYPES)
        table = group_mac(paper.accuracies.loc[paper.ranked], groups).set_index(["setup", "group"])["imagenet_val"]
        assert table[("all", "all ranked models")] == pytest.approx(TABLE_4_ALL[column], abs=0.0005), dataset
        for key, published in TABLE_4.items():
            assert table[key] == pytest.approx(published[column], abs=0.0005), (dataset, key)


def _memberships(rows):
    from imagenet_suite.scoring.summary.groups import Membership

    return [Membership(setup, str(group), name, number) for number, (setup, group, name) in enumerate(rows, 2)]
