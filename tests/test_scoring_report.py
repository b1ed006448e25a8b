"""The evaluator and the ``score`` command end to end on hand-made dataset folders."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torchmetrics.functional.classification import multiclass_calibration_error

from imagenet_suite.classes import imagenet_wnids, subset_indices
from imagenet_suite.cli import main
from imagenet_suite.errors import ConfigError
from imagenet_suite.scoring import FAMILIES, CalibrationOptions, MetricFamily, MetricRow, ScoreOptions
from imagenet_suite.scoring.evaluation.report import applicable_metrics, score
from imagenet_suite.scoring.outputs import ModelOutputs
from tests.test_scoring_calibration import robustness_metrics_ace
from tests.test_scoring_class_balance import paper_reference, quba_code_reference
from tests.test_scoring_classification import numpy_topk_sets
from tests.test_scoring_join import label_feature, val_like_folder, write_dataset_folder

ROWS = 400


@pytest.fixture(scope="module")
def val(tmp_path_factory):
    """A val-like folder (id, file_name, image, label) and bf16 logits for it, rows shuffled."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 1000, ROWS)
    folder = val_like_folder(tmp_path_factory.mktemp("val"), labels.tolist())
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(ROWS, 1000, generator=generator) * 2
    logits[torch.arange(ROWS), torch.from_numpy(labels)] += torch.rand(ROWS, generator=generator) * 8
    logits = logits.to(torch.bfloat16)
    order = rng.permutation(ROWS)
    ids = [f"ILSVRC2012_val_{i + 1:08d}" for i in order]
    return folder, ModelOutputs(logits[order], ids), labels[order]


BUILT_IN = (
    "topk_accuracy",
    "per_class_accuracy",
    "calibration",
    "class_balance",
    "real_accuracy",
    "shape_bias",
    "accuracy16",
)


def test_applicable_metrics_follow_columns_and_protocol():
    def built_in(features, protocol):  # the label-column families of this module (lca etc. are tested elsewhere)
        return [name for name in applicable_metrics(features, protocol) if name in BUILT_IN]

    label = {"id": {}, "label": label_feature()}
    assert built_in(label, {}) == ["topk_accuracy", "per_class_accuracy", "calibration", "class_balance"]
    assert built_in({"id": {}, "real_labels": {}}, {"multi_label": "real_labels"}) == ["real_accuracy"]
    cue = {"id": {}, "shape_label16": {}, "texture_label16": {}}
    assert built_in(cue, {"decision_mapping": "imagenet_16"}) == ["shape_bias"]
    assert built_in({**cue, "label16": {}}, {"decision_mapping": "imagenet_16"}) == ["shape_bias", "accuracy16"]
    assert built_in(cue, {}) == []
    assert built_in({"label": {"dtype": "int64", "_type": "Value"}}, {}) == []


def test_report_matches_independent_references(val):
    folder, outputs, labels = val
    report = score(folder, outputs)
    scores = outputs.values.float()
    best = numpy_topk_sets(scores.numpy(), 5)
    assert report.value("top1_accuracy") == (best[:, 0] == labels).mean()
    assert report.value("top5_accuracy") == (best == labels[:, None]).any(1).mean()
    expected_ece = multiclass_calibration_error(scores, torch.from_numpy(labels), num_classes=1000).item()
    assert report.value("ece", "torchmetrics") == pytest.approx(expected_ece, abs=1e-6)
    probs = torch.softmax(scores, 1).numpy()
    assert report.value("ace") == pytest.approx(robustness_metrics_ace(probs, labels), abs=1e-7)
    assert report.value("calibration_error") == pytest.approx(
        np.sqrt(report.value("ece", "torchmetrics") * report.value("ace"))
    )
    correct, target = best[:, 0] == labels, probs[np.arange(ROWS), labels]
    for convention, reference in (("reference_impl", quba_code_reference), ("paper_eq11", paper_reference)):
        f_acc, f_conf = reference(correct, target.astype(np.float64), labels, 1000)
        assert report.value("class_balance_accuracy", convention) == pytest.approx(f_acc, abs=1e-9)
        assert report.value("class_balance_confidence", convention) == pytest.approx(f_conf, abs=1e-6)


def test_report_does_not_depend_on_chunks_or_worker_threads(val, monkeypatch):
    from imagenet_suite.scoring import batching
    from imagenet_suite.scoring.metrics import calibration

    folder, outputs, _ = val
    label_metrics = ["topk_accuracy", "per_class_accuracy", "calibration", "class_balance"]
    whole = score(folder, outputs, metrics=label_metrics).table
    monkeypatch.setattr(batching, "CPU_CHUNK_ELEMENTS", 1000 * 37)  # 11 row chunks
    monkeypatch.setattr(calibration, "ACE_BLOCK_ELEMENTS", ROWS * 90)  # 12 class blocks
    monkeypatch.setattr(batching, "cpu_workers", lambda: 3)
    threads = torch.get_num_threads()
    chunked = score(folder, outputs, metrics=label_metrics).table
    assert torch.get_num_threads() == threads  # restored after the workers ran single-threaded
    assert chunked[["metric", "variant", "subgroup"]].equals(whole[["metric", "variant", "subgroup"]])
    assert np.allclose(chunked["value"].to_numpy(float), whole["value"].to_numpy(float), rtol=0, atol=1e-12)


def test_class_wise_ace_can_be_skipped(val):
    folder, outputs, _ = val
    options = ScoreOptions(calibration=CalibrationOptions(class_wise_ace=False))
    report = score(folder, outputs, metrics=["calibration"], options=options)
    assert list(report.table.metric) == ["ece", "ece", "ece"]


def test_per_class_rows_are_named_by_wnid_and_counted(val):
    folder, outputs, labels = val
    table = score(folder, outputs, metrics=["per_class_accuracy"]).table
    per_class = table[table.metric == "per_class_accuracy"].set_index("subgroup")
    wnids = imagenet_wnids()
    assert per_class["denominator"].sum() == ROWS
    present = np.unique(labels)
    assert sorted(per_class.index) == sorted(wnids[i] for i in present)
    assert per_class.loc[wnids[labels[0]], "denominator"] == (labels == labels[0]).sum()


def test_class_subset_protocol_slices_before_argmax(tmp_path):
    subset = list(subset_indices("imagenet_a"))
    rng = np.random.default_rng(1)
    labels = rng.choice(subset, 300)
    ids = [f"a-{i}" for i in range(300)]
    folder = write_dataset_folder(
        tmp_path,
        {"id": ids, "label": labels.tolist()},
        {"id": {"dtype": "string", "_type": "Value"}, "label": label_feature()},
        protocol={"class_subset": subset},
    )
    logits = torch.randn(300, 1000, generator=torch.Generator().manual_seed(1))
    report = score(folder, ModelOutputs(logits, ids), metrics=["topk_accuracy", "calibration"])
    best = np.array(subset)[numpy_topk_sets(logits.numpy()[:, subset], 1)[:, 0]]
    assert report.value("top1_accuracy", "class_subset") == (best == labels).mean()
    sliced = logits[:, subset]
    positions = torch.tensor([subset.index(v) for v in labels])
    expected = multiclass_calibration_error(sliced, positions, num_classes=200).item()
    assert report.value("ece", "torchmetrics") == pytest.approx(expected, abs=1e-6)
    assert report.value("ace") == pytest.approx(
        robustness_metrics_ace(torch.softmax(sliced, 1).numpy(), positions.numpy()), abs=1e-7
    )


def test_real_labels_dataset(tmp_path):
    sets = [[1], [], [2, 3], [999], [], [0, 5]]
    ids = [f"ILSVRC2012_val_{i:08d}" for i in range(1, 7)]
    folder = write_dataset_folder(
        tmp_path,
        {"id": ids, "file_name": [f"{i}.JPEG" for i in ids], "real_labels": sets},
        {
            "id": {"dtype": "string", "_type": "Value"},
            "file_name": {"dtype": "string", "_type": "Value"},
            "real_labels": {"feature": label_feature(), "_type": "List"},
        },
        protocol={"multi_label": "real_labels", "skip_empty_label_sets": True},
        config="labels",
    )
    logits = torch.zeros(6, 1000)
    logits[[0, 2, 3, 5], [1, 3, 7, 4]] = 5.0  # hits: row 0 (1), row 2 (3); misses: row 3, row 5 (top-1 is 4)
    report = score(folder, ModelOutputs(logits, ids), metrics=["real_accuracy"])
    assert (report.value("real_top1_accuracy"), report.table.loc[0, "denominator"]) == (0.5, 4)
    # top-5: row 5's set {0, 5}: class 0 is the lowest-index runner-up, so it is in the top-5
    assert report.value("real_top5_accuracy") == 0.75


def test_json_round_trip_and_nan_as_null(val, tmp_path):
    folder, outputs, _ = val
    report = score(folder, outputs, metrics=["topk_accuracy"])
    report.rows.append(MetricRow("placeholder", float("nan")))
    data = json.loads(report.to_json(tmp_path / "r.json"))
    assert data == json.loads((tmp_path / "r.json").read_text())
    assert data["metrics"][0]["metric"] == "top1_accuracy" and data["metrics"][-1]["value"] is None
    assert data["meta"]["outputs"] == {
        "kind": "logits",
        "rows": ROWS,
        "classes": 1000,
        "dtype": "bfloat16",
        "device": "cpu",
    }


def test_metric_selection_refusals(val):
    folder, outputs, _ = val
    with pytest.raises(ConfigError, match="unknown metric 'lcaa'; did you mean 'lca'\\?$"):
        score(folder, outputs, metrics=["lcaa"])
    with pytest.raises(ConfigError, match="\\['shape_bias'\\] do not apply .*decision_mapping='imagenet_16'"):
        score(folder, outputs, metrics=["shape_bias"])


def test_a_dataset_no_metric_applies_to_is_refused(tmp_path):
    folder = write_dataset_folder(
        tmp_path,
        {"id": ["a", "b"], "caption": ["x", "y"]},
        {"id": {"dtype": "string", "_type": "Value"}, "caption": {"dtype": "string", "_type": "Value"}},
    )
    with pytest.raises(ConfigError, match="no metric family applies"):
        score(folder, ModelOutputs(torch.zeros(2, 1000), ["a", "b"]))


def test_report_value_names_a_missing_row(val):
    folder, outputs, _ = val
    report = score(folder, outputs, metrics=["topk_accuracy"])
    with pytest.raises(KeyError, match="metric='ece'"):
        report.value("ece")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_cli_refuses_cuda_without_a_device(val, tmp_path, capsys):
    folder, outputs, _ = val
    path = outputs.save(tmp_path / "o.pt")
    assert main(["score", str(folder), "--outputs", str(path), "--device", "cuda"]) == 2
    assert "no CUDA device is available" in capsys.readouterr().err


def test_a_family_of_ones_own_is_passed_explicitly(val):
    folder, outputs, _ = val

    def mean_confidence(ctx, options):
        assert options is None  # the family declares no options type
        return [MetricRow("mean_confidence", float(ctx.row_stats.confidence.double().mean()))]

    family = MetricFamily("mean_confidence", ("label",), lambda f, p: "label" in f, mean_confidence)
    assert "mean_confidence" not in score(folder, outputs).meta["metrics"]  # creating a family registers nothing
    report = score(folder, outputs, families=(*FAMILIES, family))
    assert report.meta["metrics"][-1] == "mean_confidence"
    expected = torch.softmax(outputs.values.float(), 1).amax(1).double().mean().item()
    assert report.value("mean_confidence") == pytest.approx(expected, abs=1e-6)
    with pytest.raises(ConfigError, match="two metric families are named 'topk_accuracy'"):
        score(folder, outputs, families=(*FAMILIES, FAMILIES[0]))


def test_cli_scores_and_writes_json_and_plots(val, tmp_path, capsys):
    folder, outputs, _labels = val
    path = outputs.save(tmp_path / "outputs.npz")
    code = main(
        [
            "score",
            str(folder),
            "--outputs",
            str(path),
            "--json",
            str(tmp_path / "r.json"),
            "--plots",
            str(tmp_path / "plots"),
            "--metrics",
            "topk_accuracy",
            "calibration",
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "top1_accuracy" in printed and "ece" in printed and "per_class_accuracy" not in printed
    data = json.loads((tmp_path / "r.json").read_text())
    top1 = next(row for row in data["metrics"] if row["metric"] == "top1_accuracy")
    assert top1["denominator"] == ROWS
    png = (tmp_path / "plots" / "reliability_diagram.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_errors_are_one_line_with_exit_code_2(val, tmp_path, capsys):
    folder, outputs, _ = val
    short = ModelOutputs(outputs.values[:10], outputs.ids[:10])
    path = short.save(tmp_path / "short.pt")
    assert main(["score", str(folder), "--outputs", str(path)]) == 2
    error = capsys.readouterr().err.strip()
    assert (
        error.startswith(f"imagenet-suite score: error: {path}: 'logits' holds 10 rows, expected 400")
        and "\n" not in error
    )


def test_shape_bias_plot_from_the_cli(tmp_path, capsys):
    from imagenet_suite.scoring.metrics.shape import CATEGORIES16, CATEGORY_INDICES

    shapes, textures = [0, 1, 2, 3, 3], [1, 2, 3, 0, 3]
    ids = [f"c{i}" for i in range(5)]
    label = {"names": list(CATEGORIES16), "_type": "ClassLabel"}
    folder = write_dataset_folder(
        tmp_path,
        {"id": ids, "shape_label16": shapes, "texture_label16": textures},
        {"id": {"dtype": "string", "_type": "Value"}, "shape_label16": label, "texture_label16": label},
        protocol={"decision_mapping": "imagenet_16"},
    )
    logits = torch.zeros(5, 1000)
    for row, category in enumerate([0, 2, 2, 3, 5]):  # shape, texture, shape, shape, (excluded row)
        logits[row, CATEGORY_INDICES[CATEGORIES16[category]][0]] = 20
    path = ModelOutputs(logits, ids).save(tmp_path / "o.pt")
    assert main(["score", str(folder), "--outputs", str(path), "--plots", str(tmp_path / "p")]) == 0
    assert "0.750000" in capsys.readouterr().out
    assert (tmp_path / "p" / "shape_bias_per_category.png").stat().st_size > 1000


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_report_equals_cpu_report(val):
    folder, outputs, _ = val
    cpu = score(folder, outputs).table
    gpu = score(folder, outputs.to("cuda")).table
    assert (cpu[["metric", "variant", "subgroup"]] == gpu[["metric", "variant", "subgroup"]]).all().all()
    assert np.allclose(cpu["value"].to_numpy(float), gpu["value"].to_numpy(float), atol=1e-6, equal_nan=True)
