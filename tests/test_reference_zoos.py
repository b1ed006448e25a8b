"""The reference zoos (``imagenet_suite.reference``): the papers' published per-model results as package data.

The loader's contract (every table loads, checked against its sha256, in the columns and units the manifest
states), the data's version history, the column names the leaderboard shares, and each table compared with an
independent transcription or copy (DEVELOPERS.md, "Real data in tests"): Beyond Accuracy's project-page values
with the PDF's Table 12 (tests/data/papers), LCA-on-the-Line's table with the upstream CSVs (tests/data/
lca-on-the-line), Heuillet et al.'s with the winner's per-dataset accuracies its Section 5.2 prints, Anzaku et
al.'s Tables 4-10 with the paper's Table 3, NINCO's Table 3 with its Table 7 mean rows.
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources

import numpy as np
import pandas as pd
import pytest

from imagenet_suite import reference
from imagenet_suite.errors import ConfigError, InvalidSourceData
from imagenet_suite.scoring.metrics.aggregates import ROBUSTGEN_METRICS
from imagenet_suite.scoring.metrics.lca_on_the_line import read_results_csv
from imagenet_suite.scoring.metrics.quba import DIMENSIONS
from imagenet_suite.scoring.summary.papers.bitterwolf2023 import PAPER_COLUMNS
from tests.test_scoring_aggregates import TOP_CONFIGURATION
from tests.test_scoring_quba import COLUMNS, TABLE12

EXPECTED_ROWS = {  # the papers' own counts
    "hesse2025_table12": 326,  # "326 models"
    "shi2024_results": 75 * 5,  # 75 models, five shifted sets
    "bitterwolf2023_table3_fpr95": 28,  # 26 models + 2 zero-shot CLIP rows
    "bitterwolf2023_table4_auroc": 28,
    "bitterwolf2023_table14_popular_fpr95": 28,
    "heuillet2025_results": 3 * 80 * 6,  # protocols x configurations x datasets
    "anzaku2024_tables4_10": 315,  # "315 checkpoints"
    "geirhos2019_cue_conflict_humans": 10 * 16,  # observers x shape categories
}


@pytest.fixture(scope="module")
def hesse() -> pd.DataFrame:
    return reference.load("hesse2025_table12")


def test_every_table_loads_with_its_manifest_rows_columns_and_unique_keys():
    assert {t.name for t in reference.tables()} == set(EXPECTED_ROWS)
    assert {t.paper for t in reference.tables()} == set(reference.PAPERS) | set(reference.HUMAN_DATA)
    for entry in reference.tables():
        frame = reference.load(entry.name)
        assert len(frame) == entry.rows == EXPECTED_ROWS[entry.name], entry.name
        assert list(frame.columns) == list(entry.columns), entry.name
        key = [entry.key] if isinstance(entry.key, str) else list(entry.key)
        assert not frame.duplicated(key).any(), entry.name
        assert entry.sources and entry.licence and entry.units and entry.precision, entry.name
        for source in entry.sources:
            assert len(source["sha256"]) == 64 and ("commit" in source or "document" in source), source


def test_the_manifest_names_each_file_by_its_sha256_and_the_current_version_lists_them():
    manifest = reference.manifest()
    versions = [entry["version"] for entry in manifest["versions"]]
    assert versions[-1] == manifest["version"] == reference.REFERENCE_VERSION
    assert versions == sorted(versions, key=lambda v: tuple(map(int, v.split("."))))
    data = resources.files("imagenet_suite.reference").joinpath("data")
    for entry in reference.tables():
        assert hashlib.sha256(data.joinpath(entry.file).read_bytes()).hexdigest() == entry.sha256
    assert manifest["versions"][-1]["sha256"] == {t.name: t.sha256 for t in reference.tables()}
    files = {p.name for p in data.iterdir()} - {"manifest.json"}
    assert files == {t.file for t in reference.tables()}


def test_a_changed_file_or_an_unknown_name_is_refused(monkeypatch):
    entry = reference.manifest()["tables"]["bitterwolf2023_table3_fpr95"]
    monkeypatch.setitem(entry, "sha256", "0" * 64)
    with pytest.raises(InvalidSourceData, match=r"bitterwolf2023_table3_fpr95.csv: sha256 \w{64}, manifest.json"):
        reference.load("bitterwolf2023_table3_fpr95")
    with pytest.raises(ConfigError, match="no reference table 'table99'") as err:
        reference.load("table99")
    assert err.value.parameters == ("table",)
    with pytest.raises(ConfigError, match="no reference zoo 'imagenet'; known: hesse2025, shi2024") as err:
        reference.load_paper("imagenet")
    assert err.value.parameters == ("reference",)


def test_fractions_divide_the_percent_columns_only():
    percent = reference.load("anzaku2024_tables4_10")
    fractions = reference.load("anzaku2024_tables4_10", fractions=True)
    assert fractions["top1_v1"].tolist() == pytest.approx((percent["top1_v1"] / 100).tolist())
    assert fractions["delta_rank"].tolist() == percent["delta_rank"].tolist()
    assert reference.load("hesse2025_table12", fractions=True).equals(reference.load("hesse2025_table12"))
    tables = reference.load_paper("bitterwolf2023", fractions=True)
    assert list(tables) == [t.name for t in reference.tables("bitterwolf2023")]
    assert tables["bitterwolf2023_table3_fpr95"]["msp"].max() <= 1


def test_column_names_are_the_leaderboards():
    assert set(DIMENSIONS) <= set(reference.table("hesse2025_table12").columns)
    assert tuple(PAPER_COLUMNS) == reference.NINCO_DETECTORS
    for name in ("bitterwolf2023_table3_fpr95", "bitterwolf2023_table4_auroc", "bitterwolf2023_table14_popular_fpr95"):
        assert set(reference.NINCO_DETECTORS) <= set(reference.table(name).columns)
    assert set(ROBUSTGEN_METRICS) <= set(reference.table("heuillet2025_results").columns)
    lca_inputs = {"model", "group", "ood_dataset", "id_top1", "id_lca", "lca_distance", "ood_top1", "ood_top5"}
    assert lca_inputs <= set(reference.table("shi2024_results").columns)


def test_the_manifest_is_valid_json_in_the_wheel_layout():
    text = resources.files("imagenet_suite.reference").joinpath("data", "manifest.json").read_text(encoding="utf-8")
    assert json.loads(text)["version"] == reference.REFERENCE_VERSION


# ------------------------------------------------------------------ Hesse et al. 2025 (Beyond Accuracy)


def test_the_project_page_values_round_to_table_12(hesse, test_data):
    """Every value of the package (the project page's four decimals, parameters one) rounds to the PDF's Table 12
    (tests/data transcription), but those exactly halfway between two printed values (x.xx5, x.5 million
    parameters), which the PDF rounds either way: the page's values are themselves rounded from more digits.
    Names, configurations and QUBA scores are Table 12's."""
    pdf = pd.read_csv(test_data / TABLE12).rename(columns=COLUMNS)
    pdf["paper_rank"] = len(pdf) - np.arange(len(pdf))
    merged = hesse.merge(pdf, on="paper_rank", suffixes=("", "_pdf"))
    assert len(merged) == 326
    assert (merged.quba == merged.quba_pdf).all() and (merged.paradigm == merged.paradigm_pdf).all()
    halfway = 0
    for dimension in DIMENSIONS:
        unit = 10.0 ** -{"calibration_error": 4, "params_millions": 0}.get(dimension, 2)
        scaled, printed = merged[dimension].to_numpy() / unit, np.round(merged[f"{dimension}_pdf"].to_numpy() / unit)
        half = np.isclose(scaled % 1, 0.5)
        assert np.allclose(np.round(scaled[~half]), printed[~half]), dimension
        assert np.isin(printed[half] - np.floor(scaled[half] + 1e-6), [0, 1]).all(), dimension
        halfway += int(half.sum())
    assert 0 < halfway < 0.03 * 326 * 9


def test_the_page_names_steiners_vit_l16_and_vit_b32_the_other_way_round(hesse):
    steiner = hesse[(hesse.source == "Steiner") & hesse.model.isin(["ViT-l/16", "ViT-b/32"])].set_index("model")
    assert steiner.loc["ViT-l/16", "params_millions"] > 300 > 100 > steiner.loc["ViT-b/32", "params_millions"]
    assert steiner.loc["ViT-l/16", "page_model"] == "ViT-b/32" and steiner.loc["ViT-b/32", "page_model"] == "ViT-l/16"


# ------------------------------------------------------------------------------ Shi et al. 2024


def test_lca_table_is_the_released_csvs(test_data):
    """The package's per-model table holds the released top-1 CSVs' values (tests/data/lca-on-the-line copies)."""
    table = reference.load("shi2024_results")
    assert set(table.lca_distance) == {"info"} and table.groupby("ood_dataset").size().eq(75).all()
    names = {"imagenet_v2": "imagenetv2"}
    for key, part in table.groupby("ood_dataset"):
        released = read_results_csv(test_data / "lca-on-the-line" / f"imagenet_lca_vs_{names.get(key, key)}_top1.csv")
        merged = part.merge(released, on="model", suffixes=("", "_released"))
        assert len(merged) == 75
        for column in ("ood_top1", "id_lca", "id_top1"):
            assert (merged[column] == merged[f"{column}_released"]).all(), (key, column)
        assert (merged.group == np.where(merged.is_vlm, "VLM", "VM")).all()
    assert (table.ood_top5 >= table.ood_top1).all() and (table.id_top5 >= table.id_top1).all()


# ------------------------------------------------------------------------ Heuillet et al. 2025


def test_heuillet_table_holds_the_winners_accuracies_of_section_5_2():
    """Section 5.2 prints FFT-50's winner's (convnext_base.fb_in22k, TRADES) accuracies per dataset."""
    table = reference.load("heuillet2025_results")
    winner = table[
        (table.protocol == "FFT-50") & (table.backbone == "convnext_base.fb_in22k") & (table.loss == "TRADES")
    ]
    winner = winner.set_index("dataset")
    assert len(winner) == 6
    for dataset, *accuracies, _ in TOP_CONFIGURATION:
        assert winner.loc[dataset, list(ROBUSTGEN_METRICS)].tolist() == pytest.approx(accuracies, abs=5e-4), dataset


# ------------------------------------------------------------------------- Anzaku et al. 2024

# Anzaku et al. 2024, Table 3 (the ten best by PatchML ASMA): model, ImageNetV1 top-1, PatchML ASMA
TABLE3 = [
    ("eva_large_patch14_336.in22k_ft_in1k", 88.50, 74.50),
    ("convnextv2_huge.fcmae_ft_in22k_in1k_512", 88.84, 71.45),
    ("volo_d5_448.sail_in1k", 87.05, 70.30),
    ("volo_d5_512.sail_in1k", 87.04, 70.17),
    ("volo_d4_448.sail_in1k", 86.86, 69.18),
    ("volo_d3_448.sail_in1k", 86.60, 69.16),  # Table 4 prints 68.16
    ("convnextv2_huge.fcmae_ft_in22k_in1k_384", 88.60, 67.92),
    ("eva_large_patch14_196.in22k_ft_in1k", 87.77, 67.20),
    ("beitv2_large_patch16_224.in1k_ft_in1k", 87.23, 67.16),
    ("cait_m48_448.fb_dist_in1k", 86.32, 67.11),
]


def test_anzaku_tables_4_10_agree_with_table_3():
    table = reference.load("anzaku2024_tables4_10").set_index("model")
    assert table.index[:10].tolist() == [model for model, _, _ in TABLE3]
    assert table.paper_order.tolist() == list(range(1, 316))
    assert sorted(table.table.unique()) == list(range(4, 11))
    for model, top1, asma in TABLE3:
        assert table.loc[model, "top1_v1"] == top1, model
        expected = 68.16 if model == "volo_d3_448.sail_in1k" else asma  # the paper's two tables disagree here
        assert table.loc[model, "asma_patchml"] == expected, model


# ------------------------------------------------------------------------ Bitterwolf et al. 2023

# NINCO Table 7's mean rows (per-class FPR@95 averaged over the 64 classes): ViT-B-384-21k and CnvNxt-B-21k
TABLE7_MEANS = {
    "ViT-B-384-21k": (51.8, 37.8, 36.9, 50.3, 27.5, 31.2, 32.5, 38.5, 62.7, 46.0, 45.0),
    "CnvNxt-B-21k": (47.2, 41.1, 43.3, 54.9, 49.6, 42.4, 41.5, 40.5, 51.8, 44.2, 42.6),
}


def test_ninco_table_3_rows_are_table_7s_means():
    table = reference.load("bitterwolf2023_table3_fpr95").set_index("model")
    for model, means in TABLE7_MEANS.items():
        assert table.loc[model, list(reference.NINCO_DETECTORS)].tolist() == list(means), model
    zero_shot = table[table.pretraining == "zero-shot"]
    assert len(zero_shot) == 2 and zero_shot[["cosine", "rcos"]].notna().all().all()
    assert zero_shot.drop(columns=["cosine", "rcos"]).filter(items=reference.NINCO_DETECTORS).isna().all().all()
