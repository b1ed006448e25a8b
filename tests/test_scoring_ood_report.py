"""OOD metrics inside ``score``: applicability, OodOptions, the CLI's args -> options, bad inputs, plots.

The OOD dataset is a small ood_unit_tests build from a folder (3 tests x 4 images, protocol ``ood``
with unit tests); the ID dataset is the 12-image imagenet_val fixture.
"""

from __future__ import annotations

import argparse

import numpy as np
import pytest
import torch
from PIL import Image

from imagenet_suite.commands.score import add_ood_arguments, ood_options
from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.errors import ConfigError, OutputsError
from imagenet_suite.scoring.evaluation.options import OodOptions, ScoreOptions
from imagenet_suite.scoring.evaluation.report import applicable_metrics, score
from imagenet_suite.scoring.metrics import ood
from imagenet_suite.scoring.metrics.ood_detector_fit import fit_detector_stats
from imagenet_suite.scoring.metrics.ood_detector_stats import Embeddings
from imagenet_suite.scoring.metrics.ood_fit import FitSet
from imagenet_suite.scoring.outputs import ModelOutputs
from imagenet_suite.scoring.presentation import plots
from tests.helpers import build_val

TESTS = ["black", "uni", "white"]


def with_ood(**kwargs) -> ScoreOptions:
    return ScoreOptions(ood=OodOptions(**kwargs))


@pytest.fixture(scope="module")
def ood_folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("ood-images")
    rng = np.random.default_rng(0)
    for k in range(6):
        (root / "cls").mkdir(exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (5 + k, 6, 3), dtype=np.uint8)).save(root / "cls" / f"{k}.png")
    return build_dataset(
        "ood_unit_tests",
        tmp_path_factory.mktemp("ood-built"),
        options=BuildOptions(
            progress=False,
            manual_dir=root,
            builder_options={"source": "image_folder", "tests": ",".join(TESTS), "images_per_test": 4},
        ),
    )


@pytest.fixture(scope="module")
def id_folder(val_layouts, tmp_path_factory):
    return build_val(val_layouts, "folders", tmp_path_factory.mktemp("id-built"))


@pytest.fixture(scope="module")
def outputs(ood_folder, id_folder):
    from imagenet_suite.dataset.folder import DatasetFolder

    rng = np.random.default_rng(1)
    ood_ids = DatasetFolder(ood_folder).read_table("default", "test", ["id"]).column("id").to_pylist()
    id_ids = DatasetFolder(id_folder).read_table("default", "validation", ["id"]).column("id").to_pylist()
    id_logits = torch.from_numpy(rng.normal(0, 1, (len(id_ids), 1000))).float()
    id_logits[:, 0] += 6  # confident on ID
    ood_logits = torch.from_numpy(rng.normal(0, 1, (len(ood_ids), 1000))).float()
    ood_logits[4:8, 0] += 6  # 'uni' rows look ID: that test must fail
    return ModelOutputs(id_logits, id_ids), ModelOutputs(ood_logits, ood_ids)


def test_ood_metrics_apply_by_protocol():
    assert "ood_detection" in applicable_metrics({"ood_class": {}}, {"ood": {"group_column": "ood_class"}})
    assert "ood_detection_datasets" in applicable_metrics(
        {"source_dataset": {}}, {"ood": {"group_column": "source_dataset"}}
    )
    assert "ood_unit_tests" in applicable_metrics({"test": {}}, {"ood": {"group_column": "test", "unit_tests": True}})
    assert not {"ood_detection", "ood_unit_tests"} & set(applicable_metrics({"label": {"_type": "ClassLabel"}}, {}))
    assert applicable_metrics({"id": {}}, {"ood": True}) == ["ood_detection_set"]  # ImageNet-O: no groups
    assert applicable_metrics({"id": {}}, {"ood": {"in_distribution": "imagenet_1k"}}) == ["ood_detection_set"]
    grouped = applicable_metrics({"test": {}}, {"ood": {"group_column": "test", "unit_tests": True}})
    assert "ood_detection_set" not in grouped and not set(applicable_metrics({"id": {}}, {"ood": False}))


def test_report_rows_equal_the_metric_functions(ood_folder, outputs):
    id_outputs, ood_outputs = outputs
    report = score(ood_folder, ood_outputs, options=with_ood(id_outputs=id_outputs))
    assert report.meta["metrics"] == ["ood_unit_tests"]
    detectors = {row.variant.split(":")[0] for row in report.rows}
    assert detectors == {"msp", "maxlogit", "energy"}  # all that logits alone allow
    # MSP: the float32 softmax, as NINCO's and OpenOOD's code compute it
    id_msp = torch.softmax(id_outputs.values.float(), 1).max(1).values.double()
    ood_msp = torch.softmax(ood_outputs.values.float(), 1).max(1).values.double()
    groups = torch.tensor([TESTS.index(i.rsplit("_", 1)[0]) for i in ood_outputs.ids])
    expected = ood.grouped_ood_metrics(id_msp, ood_msp, groups, TESTS)
    assert report.value("auroc", "msp:macro") == pytest.approx(expected.macro["auroc"], abs=1e-15)
    assert report.value("fpr95", "msp:pooled") == expected.pooled["fpr95"].value
    assert report.value("fpr95_openood_v15", "msp", subgroup="uni") == expected.per_group["uni"]["fpr95_openood_v15"]
    failed = next(r for r in report.rows if r.metric == "unit_tests_failed" and r.variant.startswith("msp"))
    assert (failed.numerator, failed.denominator) == (1, 3) and failed.variant == "msp:fpr95>0.1"
    assert report.value("unit_test_failed", "msp:fpr95>0.1", subgroup="uni") == 1.0
    table = report.table
    assert set(table[table.subgroup == ""].metric) == {*ood.METRIC_NAMES, "unit_tests_failed"}


def test_feature_detectors_through_score(ood_folder, outputs):
    id_outputs, ood_outputs = outputs
    rng = np.random.default_rng(2)
    train = torch.from_numpy(rng.normal(0, 1, (3000, 16)))
    labels = torch.from_numpy(rng.integers(0, 1000, 3000))
    labels[:1000] = torch.arange(1000)  # every class present
    weight, bias = torch.from_numpy(rng.normal(0, 1, (1000, 16))), torch.zeros(1000, dtype=torch.float64)
    stats = fit_detector_stats(FitSet(train, labels, train @ weight.T), weight=weight, bias=bias)
    id_features = Embeddings(torch.from_numpy(rng.normal(0, 1, (id_outputs.num_rows, 16))), id_outputs.ids)
    ood_features = Embeddings(torch.from_numpy(rng.normal(0, 3, (ood_outputs.num_rows, 16))), ood_outputs.ids[::-1])
    options = with_ood(id_outputs=id_outputs, id_features=id_features, ood_features=ood_features, stats=stats)
    report = score(ood_folder, ood_outputs, options=options)
    ran = {row.variant.split(":")[0] for row in report.rows}
    assert ran == set(ood.DETECTORS)  # ViM, Mahalanobis, KNN (K=1000 of 3,000), ... all run
    assert "id/mahalanobis" in options.ood.cache  # ID scores computed once, reused for the next OOD dataset
    maha = report.artifacts["ood/mahalanobis"]
    from imagenet_suite.scoring.metrics.ood_detectors import detector_scores

    id_scores = detector_scores("mahalanobis", id_outputs.values, "logits", id_features.values, stats)
    ood_scores = detector_scores(
        "mahalanobis", ood_outputs.values, "logits", ood_features.aligned(ood_outputs.ids, "x"), stats
    )  # features given in another order
    assert maha.pooled["auroc"] == ood.auroc(id_scores, ood_scores)
    with pytest.raises(ConfigError, match=r"detector\(s\) cannot run: \{'vim': 'needs penultimate features"):
        score(ood_folder, ood_outputs, options=with_ood(id_outputs=id_outputs, stats=stats, detectors=("vim",)))


def test_without_id_outputs_the_error_says_what_to_pass(ood_folder, outputs):
    with pytest.raises(ConfigError, match="need the model's outputs on the in-distribution set too: pass id_outputs"):
        score(ood_folder, outputs[1])


def test_id_and_ood_outputs_from_different_models(ood_folder, outputs):
    id_outputs, ood_outputs = outputs
    narrower = ModelOutputs(id_outputs.values[:, :999], id_outputs.ids)
    with pytest.raises(OutputsError, match="ID outputs have C=999 scores per row but the OOD outputs have C=1000"):
        score(ood_folder, ood_outputs, options=with_ood(id_outputs=narrower))
    probs = ModelOutputs(torch.softmax(id_outputs.values, 1), id_outputs.ids, "probs")
    with pytest.raises(OutputsError, match="ID outputs are 'probs' but OOD outputs are 'logits'"):
        score(ood_folder, ood_outputs, options=with_ood(id_outputs=probs))


def test_nan_outputs_are_refused(ood_folder, outputs):
    id_outputs, ood_outputs = outputs
    broken = id_outputs.values.clone()
    broken[3, 7] = float("nan")
    with pytest.raises(OutputsError, match="outputs row 3 .* contains NaN"):
        score(ood_folder, ood_outputs, options=with_ood(id_outputs=ModelOutputs(broken, id_outputs.ids)))
    broken = ood_outputs.values.clone()
    broken[0, 0] = float("nan")
    with pytest.raises(OutputsError, match="NaN"):
        score(ood_folder, ModelOutputs(broken, ood_outputs.ids), options=with_ood(id_outputs=id_outputs))


def test_cli_turns_ood_flags_into_ood_options(ood_folder, id_folder, outputs, tmp_path):
    id_outputs, ood_outputs = outputs
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    add_ood_arguments(parser)
    id_outputs.save(tmp_path / "id.pt")
    args = parser.parse_args(
        [
            "--id-outputs",
            str(tmp_path / "id.pt"),
            "--id-dataset",
            str(id_folder),
            "--detectors",
            "energy",
            "--fail-threshold",
            "0.5",
        ]
    )
    options = ood_options(args)
    assert isinstance(options, OodOptions) and options.detectors == ("energy",) and options.fail_threshold == 0.5
    report = score(ood_folder, ood_outputs, options=ScoreOptions(ood=options))
    assert {r.variant for r in report.rows if r.metric == "unit_tests_failed"} == {"energy:fpr95>0.5"}
    assert ood_options(parser.parse_args([])) == OodOptions()
    with pytest.raises(ConfigError, match="--id-features needs --id-outputs"):
        ood_options(parser.parse_args(["--id-features", "x.pt"]))
    with pytest.raises(ConfigError, match="--detectors: unknown \\['odin'\\]"):
        ood_options(parser.parse_args(["--id-outputs", str(tmp_path / "id.pt"), "--detectors", "odin"]))
    ModelOutputs(id_outputs.values[1:], id_outputs.ids[1:]).save(tmp_path / "short.pt")
    with pytest.raises(OutputsError, match="outputs miss 1 of the 12 rows"):
        ood_options(parser.parse_args(["--id-outputs", str(tmp_path / "short.pt"), "--id-dataset", str(id_folder)]))


def test_per_group_fpr_plot(ood_folder, outputs, tmp_path):
    id_outputs, ood_outputs = outputs
    report = score(ood_folder, ood_outputs, options=with_ood(id_outputs=id_outputs, detectors=("msp",)))
    written = plots.write_ood_plots(report, tmp_path / "plots")
    assert [p.name for p in written] == ["ood_fpr_msp.png"]
    with Image.open(written[0]) as image:
        assert image.format == "PNG" and image.width > 300
    figure = plots.per_group_fpr_plot(report.artifacts["ood/msp"], threshold=0.1)
    labels = [t.get_text() for t in figure.axes[0].get_yticklabels()]
    assert sorted(labels) == TESTS and labels[-1] == "uni"  # sorted by FPR, the failing test last


def _plotted_threshold(figure) -> float | None:
    """The x of the dotted threshold line of a per-group FPR plot (in %), None without one."""
    dotted = [line for line in figure.axes[0].get_lines() if line.get_linestyle() == ":"]
    return dotted[0].get_xdata()[0] if dotted else None


def _red_bars(figure) -> set[str]:
    axes = figure.axes[0]
    labels = [t.get_text() for t in axes.get_yticklabels()]
    return {
        label
        for label, bar in zip(labels, axes.patches, strict=True)
        if tuple(round(c, 3) for c in bar.get_facecolor()[:3]) == (0.769, 0.306, 0.322)
    }  # #C44E52


@pytest.mark.parametrize("threshold", [None, 0.05, 0.5, 1.0])
def test_ood_plot_marks_the_threshold_the_verdict_used(ood_folder, outputs, threshold):
    """The plot and the verdict read one threshold: --fail-threshold when given, else the dataset's (0.10)."""
    id_outputs, ood_outputs = outputs
    report = score(
        ood_folder, ood_outputs, options=with_ood(id_outputs=id_outputs, detectors=("msp",), fail_threshold=threshold)
    )
    used = 0.1 if threshold is None else threshold
    verdict = {r.subgroup for r in report.rows if r.metric == "unit_test_failed" and r.value == 1.0}
    assert {r.variant for r in report.rows if r.metric == "unit_tests_failed"} == {f"msp:fpr95>{used:g}"}
    figure = plots.ood_fpr_figures(report)["msp"]
    assert _plotted_threshold(figure) == pytest.approx(100 * used)
    assert _red_bars(figure) == verdict  # the bars marked failed are exactly the failed tests
    fprs = report.artifacts["ood/msp"].fpr_per_group()
    assert verdict == {name for name, fpr in fprs.items() if fpr > used}


def test_ood_plot_without_unit_tests_marks_no_threshold(outputs, tmp_path):
    """A NINCO-like set (OOD classes, no unit tests): no verdict rows, no threshold on the plot."""
    from tests.test_scoring_join import write_dataset_folder

    id_outputs, ood_outputs = outputs
    classes = ["a", "b", "c"]
    folder = write_dataset_folder(
        tmp_path,
        {"id": list(ood_outputs.ids), "ood_class": [k % 3 for k in range(ood_outputs.num_rows)]},
        {"id": {"dtype": "string", "_type": "Value"}, "ood_class": {"names": classes, "_type": "ClassLabel"}},
        protocol={"ood": {"group_column": "ood_class"}},
    )
    report = score(folder, ood_outputs, options=with_ood(id_outputs=id_outputs, detectors=("msp",), fail_threshold=0.5))
    assert report.meta["metrics"] == ["ood_detection"] and "ood_fail_threshold" not in report.artifacts
    assert not [r for r in report.rows if r.metric.startswith("unit_test")]
    figure = plots.ood_fpr_figures(report)["msp"]
    assert _plotted_threshold(figure) is None and _red_bars(figure) == set()


def test_score_cli_computes_ood_metrics_and_plots(ood_folder, id_folder, outputs, tmp_path):
    from tests.helpers import run_cli

    id_outputs, ood_outputs = outputs
    id_path, ood_path = id_outputs.save(tmp_path / "id.npz"), ood_outputs.save(tmp_path / "ood.npz")
    result = run_cli(
        "score",
        str(ood_folder),
        "--outputs",
        str(ood_path),
        "--id-outputs",
        str(id_path),
        "--id-dataset",
        str(id_folder),
        "--detectors",
        "msp",
        "energy",
        "--plots",
        str(tmp_path / "p"),
    )
    assert "unit_tests_failed" in result.stdout and "msp:fpr95>0.1" in result.stdout
    assert sorted(p.name for p in (tmp_path / "p").iterdir())  # per-test FPR bar plots
    missing = run_cli("score", str(ood_folder), "--outputs", str(ood_path), check=False)
    assert missing.returncode == 2 and "--id-outputs" in missing.stderr
    unknown = run_cli(
        "score",
        str(ood_folder),
        "--outputs",
        str(ood_path),
        "--id-outputs",
        str(id_path),
        "--detectors",
        "odin",
        check=False,
    )
    assert unknown.returncode == 2 and "unknown ['odin']" in unknown.stderr
