"""``leaderboard --reference``: runs placed among a paper's published models (the reference zoos).

Run folders are suite.json files written from the template of ``tests/test_read_runs.py`` (no model is run).
Expected values come from the tests' own copies of the published tables (``tests/data/papers/``,
``tests/data/lca-on-the-line/``), never from the package's reference data.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from imagenet_suite import cli
from imagenet_suite.scoring.metrics.quba import DIMENSIONS, QUBA_MEAN, QUBA_SIGNS, QUBA_STD
from tests.helpers import one_line
from tests.test_leaderboard_papers import anzaku_reports, lca_suite, ninco_reports, with_dimensions, with_reports
from tests.test_read_runs import suite_json, write_run

WEIGHTS = {
    "kind": "timm",
    "library": "timm",
    "architecture": "resnet50",
    "tag": "a1_in1k",
    "requested": "a1_in1k",
    "loaded": True,
    "location": None,
    "seed": None,
}
ATTACKS = {"requested_rows": 8, "seed": 0, "batch_size": 4, "rows": 8, "attack": "FGSM, PGD", "ids": list("abcdefgh")}
ATTACKS |= {"clean_accuracy": 0.8, "fgsm_accuracy": 0.2, "pgd_accuracy": 0.05, "attack_convention": "hesse2025"}
EQ1_WEIGHTS = np.array([1, 1 / 3, 1 / 3, 1 / 3, 1, 1, 0.5, 0.5, 1])  # Hesse et al. 2025, Eq. 1, in DIMENSIONS order
RESAMPLES, SEED = 1000, 0  # the leaderboard's bootstrap settings (rank_uncertainty.Resampling's defaults)


def with_weights_source(suite: dict, source: dict | None = WEIGHTS) -> dict:
    """``suite`` as format 3 with the weights tag ``source`` recorded."""
    suite = {**suite, "format": "imagenet-suite.suite/3", "weights": "pretrained"}
    suite["weights_source"] = source
    return suite


def quba_run(tmp_path: Path, name: str, level: float, attacks: dict | None = ATTACKS, source=WEIGHTS) -> Path:
    """A run whose nine dimensions are each ``level`` standard deviations better than the paper's mean: its QUBA
    is ``level`` by the paper's formula (Σ w·z / Σ w with every z = level). Attacked under another convention
    than ``hesse2025``, it has no adversarial dimension, as suite.json's summary gives none then."""
    dims = dict(zip(DIMENSIONS, QUBA_MEAN + QUBA_SIGNS * level * QUBA_STD, strict=True))
    if attacks is not None and attacks.get("attack_convention") != "hesse2025":
        del dims["adversarial_robustness"]
    suite = with_dimensions(suite_json(name, 0.5), dims)
    if attacks is not None:
        suite["summary"]["adversarial"] = copy.deepcopy(attacks)
    return write_run(tmp_path, name.replace(":", "_"), with_weights_source(suite, source))


def refused(tmp_path: Path, runs: list[Path], *flags: str, capsys) -> str:
    """The one-line error (exit code 2) of ``leaderboard RUNS --out ... FLAGS``."""
    return one_line(capsys, ["leaderboard", *map(str, runs), "--out", str(tmp_path / "board"), *flags])


def run_cli(tmp_path: Path, runs: list[Path], *flags: str, capsys) -> tuple[int, str, str]:
    code = cli.main(["leaderboard", *map(str, runs), "--out", str(tmp_path / "board"), *flags])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def table12(test_data) -> pd.DataFrame:
    """Table 12 of Hesse et al. 2025 as the tests' own transcription holds it (326 rows)."""
    return pd.read_csv(test_data / "papers" / "hesse2025_table12_quba_326_models.csv")


def test_hesse2025_a_run_is_ranked_among_the_326_published_models(tmp_path, capsys, table12):
    run = quba_run(tmp_path, "timm:new_model", 0.955)
    code, out, err = run_cli(tmp_path, [run], "--reference", "hesse2025", capsys=capsys)
    assert code == 0, err
    found = pd.read_csv(tmp_path / "board" / "leaderboard_reference_hesse2025_quba.csv", index_col="model")
    published = found[found["source"] == "published"]
    ours = found.loc["timm:new_model"]
    # Table 12's 326 rows, their printed QUBA unchanged; the run's QUBA is its level (module helper)
    assert len(published) == 326 and len(found) == 327
    assert sorted(published["quba"]) == sorted(table12["quba"])
    assert ours["source"] == "this run" and ours["quba"] == pytest.approx(0.955, abs=1e-12)
    # its rank: 1 + the published models above it; a published row keeps its rank among the 326 (ties share
    # the best rank): the runs are placed among the zoo, they do not move it
    above = int((table12["quba"] > 0.955).sum())
    assert ours["rank"] == 1 + above
    higher = (table12["quba"].to_numpy()[None, :] > published["quba"].to_numpy()[:, None]).sum(axis=1)
    assert (published["rank"].to_numpy() == 1 + higher).all()
    # rank uncertainty: a direct resampling of the published pool with the same draws (326 with replacement)
    # (pool position p of resample b: floor(u[b, p] * 326), positions in Table 12's order read from the best)
    uniforms = np.random.default_rng(SEED).random((RESAMPLES, 326))
    pool = table12["quba"].to_numpy()[::-1]
    ranks = np.array([1 + (pool[np.floor(row * 326).astype(int)] > 0.955).sum() for row in uniforms])
    assert ours["p_rank_le_10"] == pytest.approx((ranks <= 10).mean(), abs=1e-12)
    assert 0 < ours["p_rank_le_10"] < 1
    assert ours["rank_low"] == np.quantile(ranks, 0.025, method="lower")
    assert ours["rank_high"] == np.quantile(ranks, 0.975, method="higher")
    assert ours["rank_low"] <= ours["rank"] <= ours["rank_high"]
    # Fig. 5's weightings: with every z = 0.955 the run's QUBA stays 0.955 under any weights; its rank is 1 + the
    # published models above it under the same weights, recomputed by hand (Eq. 1) from their nine dimensions (the
    # project page's values, which the reference data holds and the tests' copy of the PDF rounds)
    from imagenet_suite.reference import load

    page = load("hesse2025_table12")[list(DIMENSIONS)].to_numpy(dtype=float)
    weighted = pd.read_csv(tmp_path / "board" / "leaderboard_reference_hesse2025_weightings.csv")
    assert len(weighted) == 6 and np.allclose(weighted["quba"], 0.955)
    for row in weighted.itertuples():
        doubled = row.doubled.split(", ")
        weights = np.array([2.0 if d in doubled else 1.0 for d in DIMENSIONS]) * EQ1_WEIGHTS
        pool = (QUBA_SIGNS * (page - QUBA_MEAN) / QUBA_STD) @ weights / weights.sum()
        assert row.rank == 1 + (pool > 0.955).sum() and row.best_quba == pytest.approx(pool.max()), row
    # leaderboard.md: the run's row among published rows, marked as such; stdout: the run's row
    text = (tmp_path / "board" / "leaderboard.md").read_text()
    section = text.split("### Among the published models (Beyond Accuracy")[1]
    assert "| timm:new_model | this run |" in section and "| published |" in section
    assert f"| {1 + above} | timm:new_model |" in section
    assert "among the published models of hesse2025" in out and "timm:new_model" in out
    page = (tmp_path / "board" / "leaderboard.html").read_text()  # the same tables in the HTML page
    assert "Among the published models of Beyond Accuracy" in page and "timm:new_model" in page


def test_hesse2025_refuses_or_flags_another_attack_convention_or_an_unknown_weights_tag(tmp_path, capsys):
    pixel = quba_run(tmp_path, "timm:pixel_model", 0.5, attacks={**ATTACKS, "attack_convention": "pixel"})
    untagged = quba_run(tmp_path, "timm:untagged", 0.2, source=None)
    good = quba_run(tmp_path, "timm:good", 0.1)
    line = refused(tmp_path, [good, pixel], "--reference", "hesse2025", capsys=capsys)
    assert "'timm:pixel_model'" in line and "attack convention 'pixel', not 'hesse2025'" in line
    assert "--allow-protocol-mismatch" in line
    line = refused(tmp_path, [untagged], "--reference", "hesse2025", capsys=capsys)
    assert "'timm:untagged'" in line and "weights tag not recorded" in line
    code, _, err = run_cli(
        tmp_path, [good, pixel, untagged], "--reference", "hesse2025", "--allow-protocol-mismatch", capsys=capsys
    )
    assert code == 0, err
    found = pd.read_csv(tmp_path / "board" / "leaderboard_reference_hesse2025_quba.csv", index_col="model")
    assert found.loc["timm:good", "protocol"] != found.loc["timm:good", "protocol"]  # empty: NaN in the CSV
    assert "attack convention 'pixel'" in found.loc["timm:pixel_model", "protocol"]
    assert "weights tag not recorded" in found.loc["timm:untagged", "protocol"]
    # the pixel run's adversarial dimension is its attacks' GM(FGSM/clean, PGD/clean), on another scale
    assert found.loc["timm:pixel_model", "adversarial_robustness"] == pytest.approx(math.sqrt(0.25 * 0.0625))
    assert not math.isnan(found.loc["timm:pixel_model", "rank"])
    text = (tmp_path / "board" / "leaderboard.md").read_text()
    assert "attack convention 'pixel', not 'hesse2025'" in text


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (("--reference", "hese2025"), "--reference: no reference zoo 'hese2025'; did you mean 'hesse2025'?"),
        (("--reference", "hesse2025,nope"), "--reference: no reference zoo 'nope'; known reference zoos: hesse2025"),
    ],
)
def test_an_unknown_reference_is_one_line(tmp_path, capsys, flags, expected):
    run = quba_run(tmp_path, "timm:m", 0.0)
    assert expected in refused(tmp_path, [run], *flags, capsys=capsys)


# --------------------------------------------------------------------------- LCA-on-the-Line (Shi et al. 2024)


def test_shi2024_predicted_and_measured_ood_top1_on_the_published_line(tmp_path, capsys, test_data):
    suite = lca_suite("timm:lca_model", 0.8, 6.0, {"imagenet_r": (0.3, None), "imagenet_a": (0.2, None)})
    run = write_run(tmp_path, "lca_model", with_weights_source(suite))
    code, _, err = run_cli(tmp_path, [run], "--reference", "shi2024", capsys=capsys)
    assert code == 0, err
    board = tmp_path / "board"
    lines = pd.read_csv(board / "leaderboard_reference_shi2024_lines.csv", index_col="ood_dataset")
    predictions = pd.read_csv(board / "leaderboard_reference_shi2024_predictions.csv", index_col="model")
    for ood, measured, file in (("imagenet_r", 0.3, "imagenet_r"), ("imagenet_a", 0.2, "imagenet_a")):
        released = pd.read_csv(test_data / "lca-on-the-line" / f"imagenet_lca_vs_{file}_top1.csv", sep=";")
        slope, intercept = np.polyfit(released["indicator_axis"], released["target_axis"], 1)
        r2 = np.corrcoef(released["indicator_axis"], released["target_axis"])[0, 1] ** 2
        assert lines.loc[ood, "r2"] == pytest.approx(r2, rel=1e-9) and lines.loc[ood, "runs"] == 1
        assert lines.loc[ood, "r2_low"] <= lines.loc[ood, "r2"] <= lines.loc[ood, "r2_high"]
        row = predictions[(predictions["ood_dataset"] == ood) & (predictions.index == "timm:lca_model")].iloc[0]
        assert row["source"] == "this run" and row["measured"] == measured
        assert row["predicted"] == pytest.approx(intercept + slope * 6.0, rel=1e-9)
        assert row["residual"] == pytest.approx(measured - row["predicted"], abs=1e-12)
        assert row["predicted_low"] <= row["predicted"] <= row["predicted_high"]
        published = predictions[(predictions["ood_dataset"] == ood) & (predictions["source"] == "published")]
        assert sorted(published["measured"]) == pytest.approx(sorted(released["target_axis"]))
    # the three other sets: the published line, no run
    assert lines.loc["imagenet_v2", "runs"] == 0 and lines.loc["imagenet_v2", "models"] == 75
    text = (board / "leaderboard.md").read_text()
    assert "### Among the published models (LCA-on-the-Line" in text and "| imagenet_r | timm:lca_model |" in text


def test_shi2024_refuses_a_run_without_an_imagenet_lca(tmp_path, capsys):
    run = write_run(tmp_path, "plain", with_weights_source(suite_json("timm:plain", 0.7)))
    line = refused(tmp_path, [run], "--reference", "shi2024", capsys=capsys)
    assert "'timm:plain'" in line and "no ImageNet-val LCA" in line and "none of the shifted sets" in line


# --------------------------------------------------------------------------- NINCO (Bitterwolf et al. 2023)


def test_bitterwolf2023_detector_ranks_among_the_published_models(tmp_path, capsys):
    """MSP at 0.2 + 0 and ViM at 0.2 + 0.1 mean FPR@95 (``ninco_reports(0.2)``), AUROC 0.5 higher: ranked among
    NINCO's published models (Table 3, Table 4) that have the detector, lower FPR@95 first."""
    suite = with_reports(suite_json("timm:ood_model", 0.8), **ninco_reports(0.2))
    run = write_run(tmp_path, "ood_model", with_weights_source(suite))
    code, _, err = run_cli(tmp_path, [run], "--reference", "bitterwolf2023", capsys=capsys)
    assert code == 0, err
    found = pd.read_csv(tmp_path / "board" / "leaderboard_reference_bitterwolf2023_detectors.csv", index_col="model")
    ours = found.loc["timm:ood_model"].set_index("detector")
    assert sorted(ours.index) == ["msp", "vim"] and (ours["source"] == "this run").all()
    published = found[found["source"] == "published"]
    for detector, fpr, auroc in (("msp", 0.2, 0.7), ("vim", 0.3, 0.8)):
        pool = published[published["detector"] == detector]
        assert ours.loc[detector, "fpr95"] == pytest.approx(fpr)
        assert ours.loc[detector, "fpr95_rank"] == 1 + (pool["fpr95"] < fpr).sum()
        assert ours.loc[detector, "auroc_rank"] == 1 + (pool["auroc"] > auroc).sum()
        assert (
            ours.loc[detector, "fpr95_rank_low"]
            <= ours.loc[detector, "fpr95_rank"]
            <= ours.loc[detector, "fpr95_rank_high"]
        )
    # the published rows: Table 3's MSP column of ViT-B-384-21k (51.8 %) unchanged, 26 models with MSP
    assert published[published["detector"] == "msp"].loc["ViT-B-384-21k", "fpr95"] == pytest.approx(0.518)
    assert (published["detector"] == "msp").sum() == 26
    text = (tmp_path / "board" / "leaderboard.md").read_text()
    assert "### Among the published models (NINCO" in text and "| timm:ood_model | MSP | 20.0 |" in text


# --------------------------------------------------------------------------- Anzaku et al. 2024


def test_anzaku2024_delta_rank_among_the_published_models(tmp_path, capsys):
    reports = anzaku_reports(0.85, 0.9, 0.7, (0.7, 0.72), False)
    run = write_run(
        tmp_path, "ml_model", with_weights_source(with_reports(suite_json("timm:ml_model", 0.8), **reports))
    )
    code, _, err = run_cli(tmp_path, [run], "--reference", "anzaku2024", capsys=capsys)
    assert code == 0, err
    found = pd.read_csv(tmp_path / "board" / "leaderboard_reference_anzaku2024_delta_rank.csv", index_col="model")
    published = found[found["source"] == "published"]
    ours = found.loc["timm:ml_model"]
    assert len(published) == 315 and ours["top1"] == pytest.approx(0.85) and ours["asma_patchml"] == pytest.approx(0.71)
    # the printed ΔRank's convention: top-1 dense (distinct published values above), ASMA the position
    top1_rank = 1 + len(set(published["top1"][published["top1"] > 0.85].round(6)))
    asma_rank = 1 + (published["asma_patchml"] > 0.71).sum()
    assert ours["top1_rank"] == top1_rank and ours["asma_rank"] == asma_rank
    assert ours["delta_rank"] == top1_rank - asma_rank
    # published rows keep their printed ΔRank
    assert (published["delta_rank"] == published["top1_rank"] - published["asma_rank"]).all()
    text = (tmp_path / "board" / "leaderboard.md").read_text()
    assert "### Among the published models (Anzaku et al. 2024" in text and "| timm:ml_model | this run |" in text


def test_heuillet2025_has_no_comparable_published_row(tmp_path, capsys):
    run = quba_run(tmp_path, "timm:m", 0.0)
    line = refused(tmp_path, [run], "--reference", "heuillet2025", capsys=capsys)
    assert "--reference: heuillet2025:" in line and "not evaluated on ImageNet" in line


def test_hesse2025_rank_interval_over_images_and_the_pool_is_a_direct_resampling(table12):
    """With a run's image-bootstrap replicates of its QUBA, resample b ranks replicate b among pool draw b (the
    library call; the replicates are made up here, as ``run_replicates`` reads them from ``--bootstrap`` runs)."""
    from imagenet_suite.scoring.summary.rank_uncertainty import Resampling
    from imagenet_suite.scoring.summary.reference_rows import reference_sections

    dims = dict(zip(DIMENSIONS, QUBA_MEAN + QUBA_SIGNS * 0.905 * QUBA_STD, strict=True))
    suite = with_weights_source(with_dimensions(suite_json("timm:r", 0.5), dims))
    suite["summary"]["adversarial"] = dict(ATTACKS)
    resamples, seed = 200, 3
    draws = 0.905 + np.random.default_rng(7).normal(0, 0.05, resamples)
    found = reference_sections(
        {"timm:r": suite},
        ["hesse2025"],
        replicates={"quba.score": pd.DataFrame({"timm:r": draws})},
        resampling=Resampling(resamples, seed),
    )["hesse2025"].tables["quba"]
    pool = table12["quba"].to_numpy()[::-1]  # Table 12's order read from the best: the pool's order
    uniforms = np.random.default_rng(seed).random((resamples, 326))
    ranks = np.array(
        [1 + (pool[np.floor(u * 326).astype(int)] > d).sum() for u, d in zip(uniforms, draws, strict=True)]
    )
    ours = found.loc["timm:r"]
    assert ours["rank"] == 1 + (pool > 0.905).sum()
    assert ours["p_rank_le_10"] == pytest.approx((ranks <= 10).mean(), abs=1e-12)
    assert (ours["rank_low"], ours["rank_high"]) == (
        np.quantile(ranks, 0.025, method="lower"),
        np.quantile(ranks, 0.975, method="higher"),
    )
