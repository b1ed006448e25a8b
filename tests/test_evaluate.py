"""``imagenet-suite evaluate`` and ``leaderboard`` on fixture builds of every dataset QUBA reads.

The suite: ImageNet val, ReaL (images), A, R, the 16-class sketch/stylized/edge/silhouette sets and
cue-conflict, IN-9 (original, mixed_same, mixed_rand), ImageNet-C (two configs) and NINCO (classes and
unit tests), each built by its real builder from a fixture in the release's layout; the model is a
random-weight timm model. A random model is right on almost no ImageNet image, which would leave every
accuracy-normalised dimension undefined; so ten of the sixteen val images are labelled with the class the
model predicts for them (planted hits, computed with the model's own preprocessing before the build).
Summary numbers are checked against the per-dataset reports with the seed papers' formulas written out here.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import shutil
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image

from imagenet_suite import cli
from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.core.sources import read_pins_file
from imagenet_suite.inference import PredictOptions, load_model
from imagenet_suite.inference import evaluate as evaluate_module
from imagenet_suite.inference.evaluate import run_suite
from imagenet_suite.inference.models import default_transform
from imagenet_suite.inference.suite_options import SuiteOptions
from imagenet_suite.scoring.metrics.paired_tests import percentile_interval
from imagenet_suite.scoring.metrics.quba import DIMENSIONS, quba_score
from imagenet_suite.scoring.metrics.uncertainty import bootstrap_counts
from imagenet_suite.scoring.presentation.html import render
from imagenet_suite.scoring.presentation.html_run import run_page
from imagenet_suite.scoring.presentation.suite_markdown import CHART_FILES, PNG_CHART_FILES
from imagenet_suite.scoring.summary.imagenet_c import ALEXNET_CLEAN_ERROR, ALEXNET_ERRORS
from imagenet_suite.scoring.summary.suite_json import read_suite
from tests.fixtures import imagenet_layouts as val_fx
from tests.fixtures import model_vs_human as mvh
from tests.fixtures import ninco_archive as ninco_fx
from tests.fixtures import popular_ood as popular_fx
from tests.helpers import REPO_ROOT
from tests.test_builders import (
    backgrounds_challenge_sources,
    imagenet_a_sources,
    imagenet_c_sources,
    imagenet_o_sources,
    imagenet_r_sources,
)

TEST_DATA = REPO_ROOT / "tests" / "data"
MODEL = "timm:test_resnet"
VAL_ROWS, PLANTED = 16, 10


def _build(name, out, configs, sources, **options):
    return build_dataset(
        name,
        out,
        configs,
        options=BuildOptions(
            manual_dir=sources.manual_dir,
            pins=sources.pins,
            inputs=list(sources.inputs),
            builder_options={**sources.options, **options},
            offline=True,
            progress=False,
        ),
    )


def _shape_bias_manual(root: Path) -> Path:
    manual = root / "texture-vs-shape"
    shutil.copytree(TEST_DATA / "texture-vs-shape", manual)
    sample = manual / "stimuli" / "cue-conflict-sample"
    shutil.copytree(sample, manual / "stimuli" / "style-transfer-preprocessed-512")
    mvh.write_release(manual, "sketch", mvh.session_names(2))
    mvh.write_release(manual, "stylized", mvh.session_names(2, "sty"))
    return manual


SIDE = 16  # the module's model input side (timm's test_resnet is 160): the suite predicts ~13,000 NINCO images
# (the setup's predictions took 25 s at 32 px, 15 s at 16 px)


@pytest.fixture(scope="module")
def model():
    """:data:`MODEL` (random init, seed 0) with its pretrained_cfg's input size set to :data:`SIDE` pixels and its
    timm transform and data config made again from it, as ``load_model`` makes them: a hundredth of the forward cost
    (test_resnet ends on a 1 x 1 map before its global pool at 16 px as at 32 px)."""
    loaded = load_model(MODEL, "none", seed=0)
    loaded.model.pretrained_cfg = {**loaded.model.pretrained_cfg, "input_size": (3, SIDE, SIDE)}
    transform, data_config = default_transform(loaded.model, "timm", MODEL.removeprefix("timm:"))
    return dataclasses.replace(loaded, transform=transform, data_config=data_config)


def planted_val_images(loaded) -> list:
    """Fixture val images; the first :data:`PLANTED` labelled with the model's own top-1 prediction."""
    images = val_fx.make_val_images(VAL_ROWS)
    with torch.inference_mode():
        batch = torch.stack([loaded.transform(Image.open(io.BytesIO(im.data)).convert("RGB")) for im in images])
        predicted = loaded.model(batch).argmax(dim=1).tolist()
    return [dataclasses.replace(im, label=predicted[i]) if i < PLANTED else im for i, im in enumerate(images)]


@pytest.fixture(scope="module")
def suite_folders(tmp_path_factory, model) -> dict[str, Path]:
    """Every dataset of the suite, built once: ``{dataset: built folder}``."""
    root = tmp_path_factory.mktemp("suite")
    val_manual = val_fx.write_tar_layout(root / "val-src", planted_val_images(model))
    shutil.copy(TEST_DATA / "reassessed-imagenet" / "real.json", val_manual / "real.json")
    pins = read_pins_file(val_manual / "checksums.tsv")
    folders = {}
    for name, config in (("imagenet_val", "default"), ("imagenet_real", "images")):
        folders[name] = build_dataset(
            name,
            root / name,
            [config],
            options=BuildOptions(manual_dir=val_manual, pins=pins, offline=True, progress=False),
        )
    folders["imagenet_a"] = _build("imagenet_a", root / "imagenet_a", ["default"], imagenet_a_sources(root / "a"))
    folders["imagenet_r"] = _build("imagenet_r", root / "imagenet_r", ["default"], imagenet_r_sources(root / "r"))
    c_sources = imagenet_c_sources(root / "c")
    folders["imagenet_c"] = _build(
        "imagenet_c", root / "imagenet_c", ["gaussian_noise_1", "gaussian_noise_3"], c_sources
    )
    manual = _shape_bias_manual(root / "mvh")
    folders["shape_bias_sets"] = build_dataset(
        "shape_bias_sets", root / "shape_bias_sets", ["cue_conflict", "edge", "silhouette", "sketch", "stylized"],
        options=BuildOptions(manual_dir=manual, offline=True, builder_options={"strict_counts": False}, progress=False),
    )  # fmt: skip
    in9 = backgrounds_challenge_sources(root / "in9")
    folders["backgrounds_challenge"] = _build(
        "backgrounds_challenge", root / "backgrounds_challenge", ["original", "mixed_same", "mixed_rand"], in9
    )
    contents = ninco_fx.fixture_contents(TEST_DATA / "ninco" / "data")
    ninco_manual = ninco_fx.write_ninco_manual_dir(root / "ninco-src", TEST_DATA / "ninco", contents)
    folders["ninco"] = build_dataset(
        "ninco", root / "ninco", ["ninco", "unit_tests"], options=BuildOptions(manual_dir=ninco_manual, pins=read_pins_file(ninco_manual / "checksums.tsv"), offline=True, progress=False),
    )  # fmt: skip
    val_ids = [image.image_id for image in planted_val_images(model)]
    popular_manual = popular_fx.write_openood_manual_dir(root / "popular-src", val_ids)
    folders["popular_ood"] = build_dataset(
        "popular_ood", root / "popular_ood", [*BENCHMARK_SETS, "places", "species", "openood_id_split"],
        options=BuildOptions(manual_dir=popular_manual, builder_options={"strict_counts": False}, offline=True, progress=False),
    )  # fmt: skip
    return folders


BENCHMARK_SETS = ("ssb_hard", "inaturalist", "textures", "openimage_o")


@pytest.fixture(scope="module")
def detector_stats(model, tmp_path_factory) -> Path:
    """Every detector's statistics for the model (NINCO preset), fitted on 2 seeded feature rows per class
    with the model's own last layer: a file as ``ood fit-stats`` writes, without its provenance."""
    from imagenet_suite.inference.fit_stats import last_layer
    from imagenet_suite.scoring.metrics.ood_detector_fit import fit_detector_stats
    from imagenet_suite.scoring.metrics.ood_fit import FitSet

    weight, bias = last_layer(model.model)
    generator = torch.Generator().manual_seed(0)
    features = torch.rand(2000, weight.shape[1], generator=generator, dtype=torch.float64)
    labels = torch.arange(1000).repeat(2)
    logits = features @ weight.double().T + bias.double()
    stats = fit_detector_stats(FitSet(features, labels, logits), weight=weight, bias=bias)
    return stats.save(tmp_path_factory.mktemp("stats") / "stats.safetensors")


@pytest.fixture(scope="module")
def suite(suite_folders, model, detector_stats, tmp_path_factory):
    """The whole suite with features, every detector's statistics and OpenOOD v1.5's benchmark."""
    run_dir = tmp_path_factory.mktemp("run")
    suite_options = options(adversarial=VAL_ROWS, allow_partial=True, detector_stats=detector_stats, features=True)
    suite_options = dataclasses.replace(suite_options, benchmark="openood-v1.5-imagenet")
    result = run_suite(model, list(suite_folders.values()), run_dir, suite_options)
    return run_dir, result


def options(
    *, adversarial: int = 0, detector_stats: Path | None = None, allow_partial: bool = False, **predict
) -> SuiteOptions:
    """The suite's options with ``predict``'s (default: batches of 256 read in this process, no progress bars;
    200 bootstrap resamples). Batches of 256, not 32: the module's run predicts ~15,000 tiny images (NINCO's)."""
    predict = {"batch_size": 256, "workers": 0, "progress": False, **predict}
    return SuiteOptions(
        predict=PredictOptions(**predict),
        adversarial=adversarial,
        detector_stats=detector_stats,
        allow_partial=allow_partial,
        bootstrap=200,
    )


def _report(suite: dict, key: str) -> dict:
    return suite["datasets"][key]


def _value(report: dict, metric: str, variant: str | None = None, subgroup: str = "") -> float:
    for row in report["metrics"]:
        if row["metric"] == metric and row["subgroup"] == subgroup and variant in (None, row["variant"]):
            return row["value"]
    raise KeyError(metric)


def test_every_quba_dimension_is_present_and_quba_is_the_papers_formula(suite, model):
    run_dir, result = suite
    quba = result["summary"]["quba"]
    assert quba["missing"] == {}
    assert list(quba["dimensions"]) == list(DIMENSIONS)
    values = {name: entry["value"] for name, entry in quba["dimensions"].items()}
    assert quba["score"] == pytest.approx(quba_score(values), abs=1e-12)
    assert read_suite(run_dir) == result  # the file holds what evaluate returned (its rows as columns)
    assert values["params_millions"] == pytest.approx(sum(p.numel() for p in model.model.parameters()) / 1e6)
    assert quba["partial"] == {"c_robustness": "over 2 of the 75 ImageNet-C sets"}  # allow_partial: 2 configs built


def test_a_partial_score_is_marked_in_every_leaderboard_row(suite):
    from imagenet_suite.scoring.summary.leaderboard import leaderboard, leaderboard_markdown

    _, result = suite
    board = leaderboard({"partial run": result})
    assert board.quba.loc["partial run", "partial"] == "c_robustness (over 2 of the 75 ImageNet-C sets)"
    assert board.quba.loc["partial run", "quba"] == pytest.approx(result["summary"]["quba"]["score"])
    rows = [line for line in leaderboard_markdown(board).splitlines() if line.startswith("| partial run |")]
    assert any(row.endswith("| c_robustness (over 2 of the 75 ImageNet-C sets) |") for row in rows)  # QUBA's


def test_leaderboard_paper_tables_read_the_real_reports(suite):
    """NINCO's models x detectors tables and LCA-on-the-Line's inputs are the rows the families wrote."""
    from imagenet_suite.scoring.summary.leaderboard import leaderboard

    _, result = suite
    board = leaderboard({"run": result})
    ninco = _report(result, "ninco/ninco")
    assert list(board.ninco.fpr95.columns) and list(board.ninco.fpr95.columns) == list(board.ninco.auroc.columns)
    for detector in board.ninco.fpr95.columns:
        assert board.ninco.fpr95.loc["run", detector] == _value(ninco, "fpr95", f"{detector}:macro")
        assert board.ninco.auroc.loc["run", detector] == _value(ninco, "auroc", f"{detector}:macro")
        verdict = next(
            row
            for row in _report(result, "ninco/unit_tests")["metrics"]
            if row["metric"] == "unit_tests_failed" and row["variant"].startswith(f"{detector}:")
        )
        assert board.ninco.unit_tests_failed.loc["run", detector] == verdict["numerator"]
        assert board.ninco.unit_tests_of.loc["run", detector] == verdict["denominator"]
    assert board.on_the_line is None  # one model: no line


def test_dimensions_follow_beyond_accuracy_from_the_reports(suite):
    _, result = suite
    values = {name: entry["value"] for name, entry in result["summary"]["quba"]["dimensions"].items()}
    val = _report(result, "imagenet_val")
    accuracy = _value(val, "top1_accuracy", "")
    assert values["accuracy"] == accuracy == PLANTED / VAL_ROWS
    assert values["calibration_error"] == _value(val, "calibration_error")
    assert values["class_balance"] == _value(val, "class_balance", "reference_impl")
    ood = [_value(_report(result, "imagenet_r"), "top1_accuracy")] + [
        _value(_report(result, f"shape_bias_sets/{config}"), "accuracy16")
        for config in ("sketch", "stylized", "edge", "silhouette")
    ]
    gm = 0.0 if min(ood) == 0 else math.prod(ood) ** (1 / 5)
    assert values["ood_robustness"] == pytest.approx(gm / accuracy)
    c = [_value(_report(result, f"imagenet_c/gaussian_noise_{s}"), "top1_accuracy") for s in (1, 3)]
    assert values["c_robustness"] == pytest.approx(sum(c) / 2 / accuracy)
    assert "2 of the 75" in result["summary"]["quba"]["dimensions"]["c_robustness"]["note"]
    same = _value(_report(result, "backgrounds_challenge/mixed_same"), "top1_accuracy")
    rand = _value(_report(result, "backgrounds_challenge/mixed_rand"), "top1_accuracy")
    assert values["object_focus"] == pytest.approx(1 - (same - rand))
    assert values["shape_bias"] == _value(_report(result, "shape_bias_sets/cue_conflict"), "shape_bias", "pooled")
    attacks = result["summary"]["adversarial"]
    ratio = [attacks["fgsm_accuracy"] / attacks["clean_accuracy"], attacks["pgd_accuracy"] / attacks["clean_accuracy"]]
    expected = 0.0 if min(ratio) == 0 else math.sqrt(ratio[0] * ratio[1])
    assert values["adversarial_robustness"] == pytest.approx(expected)
    assert attacks["rows"] == VAL_ROWS and attacks["clean_accuracy"] == PLANTED / VAL_ROWS
    assert attacks["attack_convention"] == "hesse2025"  # Beyond Accuracy's protocol, the default


def test_mce_ninco_real_and_lca_headlines(suite):
    _, result = suite
    summary = result["summary"]
    accuracy = summary["quba"]["dimensions"]["accuracy"]["value"]
    c = [_value(_report(result, f"imagenet_c/gaussian_noise_{s}"), "top1_accuracy") for s in (1, 3)]
    error = 1 - sum(c) / 2
    assert summary["imagenet_c"]["mce"] == pytest.approx(error / ALEXNET_ERRORS["gaussian_noise"])
    assert summary["imagenet_c"]["relative_mce"] == pytest.approx(
        (error - (1 - accuracy)) / (ALEXNET_ERRORS["gaussian_noise"] - ALEXNET_CLEAN_ERROR)
    )
    ninco = summary["ninco"]["msp"]
    assert ninco["mean_auroc"] == _value(_report(result, "ninco/ninco"), "auroc", "msp:macro")
    assert ninco["unit_tests_failed"]["of"] == len(
        {
            row["subgroup"]
            for row in _report(result, "ninco/unit_tests")["metrics"]
            if row["metric"] == "unit_test_failed"
        }
    )
    assert summary["real"]["real_top1_accuracy"] == _value(_report(result, "imagenet_real"), "real_top1_accuracy")
    assert summary["lca"]["imagenet_val"] and summary["accuracies"]["imagenet_a"]["metric"] == "top1_accuracy"


def test_every_report_names_the_builds_it_read_and_suite_json_reads_back(suite, suite_folders):
    from imagenet_suite.files import sha256_file

    run_dir, result = suite

    def build(dataset: str, config: str, split: str) -> dict:
        folder = suite_folders[dataset]
        info = json.loads((folder / "build_info.json").read_text())
        return {"folder": str(folder.resolve()), "builder": dataset, "version": info["version"], "config": config,
                "split": split, "build_info_sha256": sha256_file(folder / "build_info.json")}  # fmt: skip

    val = build("imagenet_val", "default", "validation")
    for key, report in result["datasets"].items():
        meta, provenance = report["meta"], report["provenance"]
        assert provenance["dataset"] == provenance["outputs"] == build(meta["dataset"], meta["config"], meta["split"])
        assert provenance["id_outputs"] == (val if meta["dataset"] in ("ninco", "popular_ood") else None), key
    assert result["summary"]["adversarial"]["dataset"] == val
    assert read_suite(run_dir) == result == read_suite(run_dir / "suite.json")
    r = result["datasets"]["imagenet_r"]["provenance"]["dataset"]
    row = f"| imagenet_r | imagenet_r | {r['version']} | {r['config']}/{r['split']} | {r['build_info_sha256'][:12]} |"
    assert row in (run_dir / "suite.md").read_text()


def test_suite_markdown_and_plots_are_written(suite):
    run_dir, result = suite
    text = (run_dir / "suite.md").read_text()
    assert f"**QUBA score: {result['summary']['quba']['score']:.3f} — partial**" in text
    assert "- `c_robustness`: over 2 of the 75 ImageNet-C sets" in text
    assert "## ImageNet-C" in text and "## NINCO" in text and "| imagenet_r |" in text
    assert "## QUBA (Beyond Accuracy, Hesse et al. 2025)" in text  # papers cited, not named by us
    assert "## NINCO (Bitterwolf et al. 2023): means over the OOD classes" in text
    page = (run_dir / "report.html").read_text()  # the same as one self-contained page (tests/test_report_html.py)
    assert page.startswith("<!DOCTYPE html>") and '<section id="imagenet-c">' in page and "<svg" in page
    # suite.md's charts: standalone SVG files, each drawn once and shown on the page as the same element
    for chart, name in CHART_FILES.items():
        assert f"]({name})" in text
        document = (run_dir / name).read_bytes()
        assert ElementTree.fromstring(document).tag == "{http://www.w3.org/2000/svg}svg"
        assert document.startswith(b"<?xml ") and document[document.index(b"<svg") :].decode() in page, chart
    # the page drawn afresh from suite.json (its own charts, not suite.md's) is the page evaluate wrote
    assert render(run_page(read_suite(run_dir / "suite.json"))) == page
    # the val accuracy's interval: the planted hits of the per-image file, on the seeded resamples of their ids
    uncertainty = result["summary"]["uncertainty"]
    hits = pd.read_parquet(run_dir / uncertainty["files"]["correct"]["imagenet_val"]["path"])
    shares = (
        bootstrap_counts(0, list(hits["id"]), range(200)).double() @ torch.tensor(hits["correct"]).double() / VAL_ROWS
    )
    low, high = uncertainty["ci95"]["quba.dimensions.accuracy.value"]
    assert hits["correct"].sum() == PLANTED and [low, high] == list(percentile_interval(shares.numpy()))
    assert f"| accuracy | {PLANTED / VAL_ROWS:.4g} [{low:.4g}, {high:.4g}] |" in text


def test_a_second_run_reuses_outputs_and_a_deleted_dataset_is_a_missing_dimension(
    suite, suite_folders, model, monkeypatch
):
    run_dir, first = suite
    monkeypatch.setattr(evaluate_module, "predict", lambda *a, **k: pytest.fail("outputs should have been reused"))
    monkeypatch.setattr(evaluate_module.PredictionStore, "predict", lambda *a, **k: pytest.fail("reused, not copied"))
    without = [path for name, path in suite_folders.items() if name != "backgrounds_challenge"]
    for stale in PNG_CHART_FILES:  # suite.md's charts as an older release wrote them, with that run's numbers
        (run_dir / stale).write_bytes(b"\x89PNG\r\n\x1a\n")
    again = run_suite(model, without, run_dir, options(adversarial=VAL_ROWS))  # allow_partial=False
    assert not any((run_dir / stale).exists() for stale in PNG_CHART_FILES)
    missing = again["summary"]["quba"]["missing"]
    assert list(missing) == ["c_robustness", "object_focus"] and "backgrounds_challenge" in missing["object_focus"]
    assert missing["c_robustness"].startswith("needs all 75 ImageNet-C sets (corruption × severity), found 2")
    assert again["summary"]["quba"]["partial"] == {}
    assert again["summary"]["quba"]["score"] is None
    assert again["datasets"]["imagenet_val"] == first["datasets"]["imagenet_val"]
    assert "QUBA score: not computed" in (run_dir / "suite.md").read_text()


def test_pixel_space_attacks_are_no_quba_dimension_and_each_run_says_its_convention(
    suite, suite_folders, model, tmp_path, monkeypatch
):
    """``attack_convention="pixel"`` attacks in [0, 1] pixels: recorded, shown in suite.md and the leaderboard's
    QUBA table, never z-scored with QUBA's μ/σ (Beyond Accuracy's protocol, ``hesse2025``, the module's run)
    and never reused by a run of the other convention; an adversarial.json that records none is ``pixel``."""
    import imagenet_suite.inference.adversarial as adversarial
    from imagenet_suite.scoring.summary.leaderboard import leaderboard, leaderboard_markdown

    _, hesse = suite
    attacked = []
    real = adversarial.adversarial_accuracy
    monkeypatch.setattr(adversarial, "adversarial_accuracy", lambda *a, **k: attacked.append(a[2]) or real(*a, **k))
    run_dir = tmp_path / "pixel"

    def evaluate(convention: str) -> dict:
        attacked.clear()
        chosen = dataclasses.replace(options(adversarial=VAL_ROWS), attack_convention=convention)
        return run_suite(model, [suite_folders["imagenet_val"]], run_dir, chosen)

    pixel = evaluate("pixel")
    record = json.loads((run_dir / "adversarial.json").read_text())
    assert pixel["summary"]["adversarial"] == record and record["attack_convention"] == "pixel"
    assert [o.attack_convention for o in attacked] == ["pixel"]
    assert record["attack"].endswith("steps=10 random_start in [0,1] pixel space (pixel)")
    # the same clean predictions under both conventions (the model's Normalize, on the device or in the model)
    assert record["correct"]["clean"] == hesse["summary"]["adversarial"]["correct"]["clean"]
    assert record["ids"] == hesse["summary"]["adversarial"]["ids"]
    why = pixel["summary"]["quba"]["missing"]["adversarial_robustness"]
    assert why.startswith("attacked under the 'pixel' convention") and "--attack-convention hesse2025" in why
    assert "adversarial_robustness" not in pixel["summary"]["quba"]["dimensions"]
    clean, fgsm, pgd = (record[f"{name}_accuracy"] for name in ("clean", "fgsm", "pgd"))
    ar = 0.0 if min(fgsm, pgd) == 0 else math.sqrt(fgsm / clean * pgd / clean)
    text = (run_dir / "suite.md").read_text()
    assert "FGSM/PGD attack convention `pixel`: FGSM/PGD in [0,1] pixel space" in text
    assert f"AR = GM(FGSM-A / A, PGD-A / A) = {ar:.4g} (not a QUBA dimension" in text
    hesse_md = (suite[0] / "suite.md").read_text()
    assert "FGSM/PGD attack convention `hesse2025`: FGSM/PGD on the model's normalised inputs" in hesse_md
    assert "(QUBA's adversarial robustness)" in hesse_md

    # the leaderboard: a convention column, no adversarial dimension (so no score) for the pixel run, and
    # Heuillet et al.'s voters of the two conventions kept apart
    board = leaderboard({"hesse": hesse, "pixel": pixel})
    assert board.quba["attack_convention"].to_dict() == {"hesse": "hesse2025", "pixel": "pixel"}
    assert math.isnan(board.quba.loc["pixel", "adversarial_robustness"]) and math.isnan(board.quba.loc["pixel", "quba"])
    assert board.quba.loc["hesse", "adversarial_robustness"] == hesse["summary"]["quba"]["dimensions"][
        "adversarial_robustness"]["value"]  # fmt: skip
    assert board.missing["pixel"]["adversarial_robustness"] == why
    markdown = leaderboard_markdown(board)
    assert "`attack_convention`: where a model's FGSM/PGD perturbed. Only `hesse2025`" in markdown
    assert f"`adversarial_robustness` ({why})" in markdown
    subset = f"adversarial ({VAL_ROWS} rows, seed 0)"
    voters = board.perturbation_accuracies
    assert voters.loc["pixel", (subset, "fgsm@pixel")] == fgsm and math.isnan(voters.loc["pixel", (subset, "fgsm")])
    assert voters.loc["hesse", (subset, "pgd")] == hesse["summary"]["adversarial"]["pgd_accuracy"]
    assert math.isnan(voters.loc["hesse", (subset, "pgd@pixel")])

    # the other convention's adversarial.json is not reused: attacked afresh, the module's run again
    again = evaluate("hesse2025")
    assert [o.attack_convention for o in attacked] == ["hesse2025"]
    assert again["summary"]["adversarial"] == hesse["summary"]["adversarial"]  # same images, seed, batches
    # a file that records no convention was attacked in pixels: reused by a pixel run only
    older = {key: value for key, value in record.items() if key != "attack_convention"}
    (run_dir / "adversarial.json").write_text(json.dumps(older))
    assert evaluate("pixel")["summary"]["adversarial"] == record and attacked == []
    (run_dir / "adversarial.json").write_text(json.dumps(older))
    assert evaluate("hesse2025")["summary"]["adversarial"] == again["summary"]["adversarial"]
    assert [o.attack_convention for o in attacked] == ["hesse2025"]


def test_cli_evaluate_and_its_bad_inputs(suite_folders, tmp_path, capsys):
    val, r = str(suite_folders["imagenet_val"]), str(suite_folders["imagenet_r"])
    common = ["--weights", "none", "--batch-size", "8", "--workers", "0", "--no-progress", "--bootstrap", "200"]

    def evaluate(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = cli.main(["evaluate", *args, *common])
        out, err = capsys.readouterr()
        return code, out, err

    code, out, _ = evaluate("--model", MODEL, "--datasets", val, r, "--out", str(tmp_path / "run"))
    assert code == 0 and out.strip().splitlines()[-1] == str(tmp_path / "run" / "suite.json")
    assert "shape_bias               missing: needs a shape_bias_sets/cue_conflict report" in out
    code, _, err = evaluate("--model", "timm:resnet18", "--datasets", val, "--out", str(tmp_path / "run"))
    assert code == 2 and "holds the run of timm:test_resnet" in err
    code, _, err = evaluate("--model", MODEL, "--datasets", str(tmp_path), "--out", str(tmp_path / "x"))
    assert code == 2 and "not a built dataset folder" in err and len(err.strip().splitlines()) == 1
    code, _, err = evaluate("--model", MODEL, "--datasets", r, "--out", str(tmp_path / "y"), "--adversarial", "4")
    assert code == 2 and "add a built imagenet_val folder" in err and len(err.strip().splitlines()) == 1


def test_leaderboard_ranks_models_and_fits_lca_on_the_line(suite_folders, tmp_path, capsys):
    from imagenet_suite.scoring.metrics.aggregates import borda_score
    from imagenet_suite.scoring.summary.leaderboard import leaderboard, load_suites
    from imagenet_suite.scoring.summary.papers.heuillet2025 import PAPER_TYPES

    datasets = [suite_folders[name] for name in ("imagenet_val", "imagenet_a", "imagenet_r", "imagenet_c")]
    runs = []
    for seed in range(3):
        run_dir = tmp_path / f"seed{seed}"
        run_suite(load_model(MODEL, "none", seed=seed), datasets, run_dir, options())
        runs.append(run_dir)
    capsys.readouterr()
    assert cli.main(["leaderboard", *map(str, runs), "--out", str(tmp_path / "board")]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == str(tmp_path / "board" / "leaderboard.md")
    tests = pd.read_csv(tmp_path / "board" / "leaderboard_significance.csv")
    assert set(tests.loc[tests["ranking"] == "accuracy: imagenet_val", "test"].dropna()) == {"McNemar (exact)"}
    board = leaderboard(load_suites(runs))
    names = [f"{MODEL} (seed{seed})" for seed in range(3)]
    assert sorted(board.accuracies.index) == names
    # Heuillet et al.'s aggregation over every perturbation type of the runs: the released ImageNet-C sets are
    # one dataset, one type per set (not the paper's five types, which need attacks and a `common` build)
    voters = [("imagenet_c", "gaussian_noise/1"), ("imagenet_c", "gaussian_noise/3")]
    assert list(board.perturbation_accuracies.columns) == voters
    c_sets = board.accuracies[["imagenet_c/gaussian_noise_1", "imagenet_c/gaussian_noise_3"]]
    assert board.perturbation_accuracies.to_numpy().tolist() == c_sets.to_numpy().tolist()
    assert board.aggregates["score_sum"].to_dict() == pytest.approx(c_sets.sum(axis=1).to_dict())
    assert board.aggregates["incomplete_datasets"].tolist() == [0, 0, 0]
    # the dataset-level numbers: every dataset key's headline accuracy is one voter
    sums = board.accuracies.sum(axis=1)
    assert board.dataset_level["dataset_level_sum"].to_dict() == pytest.approx(sums.to_dict())
    long = board.accuracies.stack().rename("accuracy").reset_index().set_axis(["model", "dataset", "accuracy"], axis=1)
    borda = borda_score(long, "model", "dataset", ("accuracy",))
    assert board.dataset_level["dataset_level_borda"].to_dict() == borda.to_dict()
    assert board.quba["quba"].isna().all() and set(board.missing) == set(names)
    text = (tmp_path / "board" / "leaderboard.md").read_text()
    assert "has no QUBA score; missing:" in text
    assert "## QUBA (Beyond Accuracy, Hesse et al. 2025)" in text
    assert "### Sum / Borda / MAC over every (dataset, perturbation type) of the runs (not Heuillet" in text
    assert board.heuillet2025.ranked == [] and list(board.heuillet2025.missing[names[0]]) == list(PAPER_TYPES)
    assert "2 voters (dataset, perturbation type) over 1 dataset." in text
    assert "## Dataset-level Sum / Borda (one voter per dataset's headline accuracy; not Heuillet" in text
    assert ("## LCA-on-the-Line (Shi et al. 2024): ImageNet LCA vs OOD top-1" in text) == bool(board.lca_on_the_line)
    for key, result in board.lca_on_the_line.items():
        assert key != "imagenet_val" and result.correlations.n == 3
        assert (tmp_path / "board" / f"lca_on_the_line_{key.replace('/', '__')}.png").is_file()
    # LCA-on-the-Line's inputs are the reports' rows: ImageNet-val LCA in the paper's distance for the set (App.
    # E.2: `depth_two_sided` for ImageNet-A, `info` for ImageNet-R), the other beside it, OOD top-1 and top-5
    suites = load_suites(runs)
    inputs = board.on_the_line.inputs.set_index(["model", "ood_dataset"])
    assert {key for _, key in inputs.index} >= {"imagenet_a", "imagenet_r"}
    for (model, key), row in inputs.iterrows():
        report = _report(suites[model], key)
        assert row.ood_top1 == _value(report, "top1_accuracy") and row.ood_top5 == _value(report, "top5_accuracy")
        paper, other = ("depth_two_sided", "info") if key == "imagenet_a" else ("info", "depth_two_sided")
        assert (row.lca_distance, row.other_distance) == (paper, other)
        assert row.id_lca == _value(_report(suites[model], "imagenet_val"), "lca", paper)
        assert row.id_lca_other == _value(_report(suites[model], "imagenet_val"), "lca", other)
    for table in ("aggregates", "dataset_level", "perturbation_accuracies", "mac"):
        assert (tmp_path / "board" / f"leaderboard_{table}.csv").is_file()


def test_ood_sets_without_imagenet_val_are_skipped_with_the_reason(suite_folders, model, tmp_path, monkeypatch):
    monkeypatch.setattr(evaluate_module, "predict", lambda *a, **k: pytest.fail("nothing should be predicted"))
    monkeypatch.setattr(evaluate_module.PredictionStore, "predict", lambda *a, **k: pytest.fail("nor copied"))
    result = run_suite(model, [suite_folders["ninco"]], tmp_path / "run", SuiteOptions(PredictOptions(progress=False)))
    assert set(result["skipped"]) == {"ninco/ninco", "ninco/unit_tests"}
    assert all("add a built imagenet_val folder" in reason for reason in result["skipped"].values())
    assert result["summary"]["quba"]["missing"]["accuracy"] == "needs an imagenet_val report (top-1 accuracy)"


def test_features_and_detector_stats_reach_the_feature_based_detectors(suite_folders, model, tmp_path):
    from imagenet_suite.scoring.metrics.ood_detector_fit import fit_detector_stats
    from imagenet_suite.scoring.metrics.ood_fit import FitSet

    o = _build("imagenet_o", tmp_path / "imagenet_o", ["default"], imagenet_o_sources(tmp_path / "o"))
    val_run = run_suite(
        model, [suite_folders["imagenet_val"]], tmp_path / "run", options(features=True, batch_size=256)
    )
    assert val_run["skipped"] == {}
    saved = torch.load(tmp_path / "run" / "outputs" / "imagenet_val.pt", weights_only=True)
    labels = torch.tensor([im.label for im in planted_val_images(model)])
    stats = fit_detector_stats(FitSet(saved["features"], labels), detectors=["knn"])  # means would need 1000 classes
    stats = dataclasses.replace(stats, knn_k=3)  # a bank of 16 val rows
    stats.save(tmp_path / "stats.pt")
    both = [suite_folders["imagenet_val"], o]
    result = run_suite(
        model, both, tmp_path / "run", options(features=True, batch_size=256, detector_stats=tmp_path / "stats.pt")
    )
    variants = {row["variant"] for row in result["datasets"]["imagenet_o"]["metrics"] if row["metric"] == "auroc"}
    assert {"msp", "energy", "knn"} <= variants


def _outputs(run_dir: Path, key: str) -> dict:
    return torch.load(run_dir / "outputs" / f"{key.replace('/', '__')}.pt", weights_only=True)


def _rows(folder: Path, config: str, columns: list[str], split: str = "test") -> dict[str, list]:
    from imagenet_suite.dataset.folder import DatasetFolder

    return DatasetFolder(folder).read_table(config, split, columns).to_pydict()


def _msp(saved: dict) -> np.ndarray:
    """MSP as OpenOOD v1.5's ``BasePostprocessor`` computes it: ``torch.softmax`` of the float32 logits."""
    return torch.softmax(saved["logits"].float(), dim=1).max(dim=1).values.numpy()


def _ninco_msp(saved: dict) -> np.ndarray:
    """MSP as NINCO's ``evaluate.py`` computes it: ``scipy.special.softmax`` of the float32 logits (float32)."""
    from scipy.special import softmax

    return softmax(saved["logits"].float().numpy(), axis=-1).max(axis=-1)


def test_openood_benchmark_reports_every_detector_on_every_set_as_openoods_code(suite, suite_folders, detector_stats):
    from imagenet_suite.scoring.metrics.ood_detector_stats import DetectorStats, Embeddings
    from imagenet_suite.scoring.metrics.ood_detectors import DETECTORS, detector_scores
    from imagenet_suite.scoring.presentation.suite_markdown import suite_markdown
    from tests.test_ood_benchmark import ninco_fpr, openood_compute_all_metrics

    run_dir, result = suite
    record = result["summary"]["benchmarks"]["openood-v1.5-imagenet"]
    assert list(record["detectors"]) == list(DETECTORS)  # all 11, every one on every set
    split = _rows(suite_folders["popular_ood"], "openood_id_split", ["id", "openood_v15"])
    test_ids = {i for i, s in zip(split["id"], split["openood_v15"], strict=True) if s == "test"}
    val = _outputs(run_dir, "imagenet_val")
    id_mask = np.array([i in test_ids for i in val["ids"]])
    assert record["id"]["rows"] == len(test_ids) == int(id_mask.sum()) < len(val["ids"])
    labels = dict(zip(*_rows(suite_folders["imagenet_val"], "default", ["id", "label"], "validation").values()))
    correct = val["logits"].argmax(dim=1).numpy() == np.array([labels[i] for i in val["ids"]])
    assert record["id"]["accuracy"] == pytest.approx(correct[id_mask].mean())
    stats = DetectorStats.load(detector_stats)
    keys = {"ssb_hard": "popular_ood/ssb_hard", "ninco": "ninco/ninco", "inaturalist": "popular_ood/inaturalist",
            "textures": "popular_ood/textures", "openimage_o": "popular_ood/openimage_o"}  # fmt: skip

    def scores(key: str, detector: str) -> np.ndarray:
        saved = _outputs(run_dir, key)
        if detector == "msp":
            return _msp(saved)
        features = Embeddings(saved["features"], saved["ids"]).values
        return detector_scores(detector, saved["logits"], "logits", features, stats).double().numpy()

    for detector in ("msp", "mahalanobis", "vim", "knn"):
        id_scores = scores("imagenet_val", detector)[id_mask]
        expected = {}
        for name, key in keys.items():
            saved = _outputs(run_dir, key)
            if key.startswith("popular_ood"):
                listed = _rows(suite_folders["popular_ood"], key.split("/")[1], ["id", "openood_v15_test"])
                chosen = dict(zip(*listed.values()))
                mask = np.array([chosen[i] for i in saved["ids"]])
                assert 0 < mask.sum() == record["sets"][name]["rows"]
            else:
                mask = np.ones(len(saved["ids"]), dtype=bool)
            ood = scores(key, detector)[mask]
            conf = np.concatenate([id_scores, ood])
            label = np.concatenate([np.zeros(len(id_scores), dtype=int), -np.ones(len(ood), dtype=int)])
            expected[name] = {**openood_compute_all_metrics(conf, label), "fpr95": ninco_fpr(id_scores, ood)}
        expected["nearood"] = {m: np.mean([expected[n][m] for n in ("ssb_hard", "ninco")]) for m in expected["ninco"]}
        far = ("inaturalist", "textures", "openimage_o")
        expected["farood"] = {m: np.mean([expected[n][m] for n in far]) for m in expected["ninco"]}
        rows = record["detectors"][detector]
        assert [row["set"] for row in rows] == ["ssb_hard", "ninco", "nearood", *far, "farood"]
        for row in rows:
            for metric, value in expected[row["set"]].items():
                assert row[metric] == pytest.approx(value, rel=1e-9, abs=1e-12), (detector, row["set"], metric)
    markdown = suite_markdown(result)  # suite.md as the run wrote it (a later test runs the folder again)
    assert "## Benchmark openood-v1.5-imagenet" in markdown and "| nearood |" in markdown


def test_full_vs_cleaned_table_equals_a_hand_computation(suite, suite_folders, tmp_path):
    from sklearn.metrics import roc_auc_score

    from imagenet_suite.scoring.summary.leaderboard import runs_leaderboard, write_leaderboard
    from tests.test_ood_benchmark import ninco_fpr

    run_dir, _ = suite
    board = runs_leaderboard([run_dir])
    write_leaderboard(board, tmp_path / "board")
    table = pd.read_csv(tmp_path / "board" / "leaderboard_ninco_cleaning.csv")
    id_scores = _ninco_msp(_outputs(run_dir, "imagenet_val"))
    checked = 0
    for config in ("places", "inaturalist", "textures", "species"):
        key = f"popular_ood/{config}"
        saved = _outputs(run_dir, key)
        columns = _rows(suite_folders["popular_ood"], config, ["id", "ninco_sample", "ninco_cleaned"])
        sample = dict(zip(columns["id"], columns["ninco_sample"], strict=True))
        cleaned = dict(zip(columns["id"], columns["ninco_cleaned"], strict=True))
        ood = _ninco_msp(saved)
        masks = {
            "full": np.ones(len(ood), dtype=bool),
            "sample": np.array([sample[i] for i in saved["ids"]]),
            "cleaned": np.array([cleaned[i] for i in saved["ids"]]),
        }
        assert masks["cleaned"].sum() < masks["sample"].sum() < len(ood)  # the fixture holds all three parts
        rows = table[(table["dataset"] == key) & (table["detector"] == "msp")].set_index("metric")
        for part, mask in masks.items():
            assert rows.loc["fpr95", part] == pytest.approx(ninco_fpr(id_scores, ood[mask]))
            labels = np.r_[np.ones(len(id_scores)), np.zeros(int(mask.sum()))]
            assert rows.loc["auroc", part] == pytest.approx(roc_auc_score(labels, np.r_[id_scores, ood[mask]]))
            assert rows.loc["fpr95", f"rows_{part}"] == mask.sum()
        for metric in ("fpr95", "auroc"):
            assert rows.loc[metric, "full_minus_cleaned"] == pytest.approx(
                rows.loc[metric, "full"] - rows.loc[metric, "cleaned"]
            )
            assert rows.loc[metric, "sample_minus_cleaned"] == pytest.approx(
                rows.loc[metric, "sample"] - rows.loc[metric, "cleaned"]
            )
        checked += 1
    assert checked == 4 and set(table["detector"]) == set(board.ninco.cleaning["detector"])
    assert "popular_ood/ssb_hard" not in set(table["dataset"])  # NINCO's SSB-hard sample is not in OpenOOD's set
    markdown = (tmp_path / "board" / "leaderboard.md").read_text()
    assert (
        "### Full vs cleaned popular OOD sets (%, Tables 15–18)" in markdown and "#### popular_ood/places" in markdown
    )
    assert "#### popular_ood/species (OOD images: " in markdown  # NINCO's "Spc-f" / "Spc-c" columns
    assert "## OpenOOD v1.5 ImageNet-1k, Zhang et al. 2023" in markdown
