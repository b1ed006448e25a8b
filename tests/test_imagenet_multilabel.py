"""imagenet_multilabel: the release's JSON layout, row alignment with imagenet_val, and the
``multilabel_accuracy`` family against a hand computation (tests/fixtures/human_accuracy.py)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

from imagenet_suite.builders.imagenet_multilabel import HUMAN_ACCURACY_JSON, read_human_accuracy
from imagenet_suite.cli import main
from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.core.sources import read_pins_file
from imagenet_suite.dataset.folder import DatasetFolder
from imagenet_suite.errors import InvalidSourceData, ManualFileMissing
from imagenet_suite.scoring import ModelOutputs, score
from imagenet_suite.scoring.metrics.multilabel_accuracy import imagenet_m_mistakes, multilabel_accuracy
from tests.fixtures import human_accuracy as fx
from tests.fixtures.imagenet_layouts import write_checksums, write_folders_layout, write_kaggle_layout
from tests.helpers import UNRENDERED, load

NUM_CLASSES = 1000
ANNOTATED = sorted(fx.ANNOTATIONS)  # image numbers of the validation split


def val_id(number: int) -> str:
    return f"ILSVRC2012_val_{number:08d}"


@pytest.fixture(scope="module")
def manual(tmp_path_factory):
    return fx.write_multilabel_manual_dir(tmp_path_factory.mktemp("multilabel") / "manual")


@pytest.fixture(scope="module")
def pins(manual):
    return read_pins_file(manual / "checksums.tsv")


def build(out, configs, **options):
    return build_dataset("imagenet_multilabel", out, configs, BuildOptions(offline=True, progress=False, **options))


@pytest.fixture(scope="module")
def built(manual, pins, tmp_path_factory):
    return build(tmp_path_factory.mktemp("built"), ["labels", "images"], manual_dir=manual, pins=pins)


@pytest.fixture(scope="module")
def built_val(manual, tmp_path_factory):
    """imagenet_val built from the same fixture images (the reference the rows must align with)."""
    return build_dataset(
        "imagenet_val",
        tmp_path_factory.mktemp("val"),
        ["default"],
        options=BuildOptions(
            manual_dir=manual, pins=read_pins_file(manual / "checksums.tsv"), offline=True, progress=False
        ),
    )


def rows(folder, config, split="validation", columns=None):
    return DatasetFolder(folder).read_table(config, split, columns=columns).to_pylist()


# ----------------------------------------------------------------------------- the labels config


def test_labels_config_holds_every_key_pattern(built, tmp_path):
    ds = load(built, "labels", cache_dir=tmp_path)
    assert ds.column_names == [
        "id",
        "file_name",
        "label",
        "correct_labels",
        "wrong_labels",
        "unclear_labels",
        "is_problematic",
    ]
    assert ds["id"] == [val_id(n) for n in ANNOTATED]  # id order; the ImageNetV2 entry is skipped
    assert ds["file_name"] == [fx.file_name(n) for n in ANNOTATED]
    assert ds["label"] == [fx.LABELS[n - 1] for n in ANNOTATED]
    for row, number in zip(ds, ANNOTATED, strict=True):
        entry = fx.ANNOTATIONS[number]
        assert row["correct_labels"] == entry.get("correct", []), number  # release order kept
        assert row["wrong_labels"] == entry.get("wrong", []), number
        assert row["unclear_labels"] == entry.get("unclear", []), number
        assert row["is_problematic"] == (number in fx.PROBLEMATIC), number
    assert ds[3]["correct_labels"] == ds[3]["wrong_labels"] == ds[3]["unclear_labels"] == []  # no key at all
    assert ds.features["correct_labels"].feature.names[5] == fx.wnid(5)
    imagenet_m = load(built, "labels", split="imagenet_m", cache_dir=tmp_path)
    assert imagenet_m["id"] == [val_id(n) for n in sorted(fx.IMAGENET_M)]
    assert imagenet_m[1]["unclear_labels"] == [31]


def test_build_info_records_the_json_and_the_real_pin(built, manual):
    info = json.loads((built / "build_info.json").read_text())
    source = info["configs"]["labels"]["sources"]["human_accuracy_json"]
    assert source["file"] == "human_accuracy_v3.0.0.json"
    assert source["size"] == (manual / fx.FILE_NAME).stat().st_size  # the fixture, pinned with pins=
    assert info["configs"]["labels"]["protocol"]["multilabel_accuracy"]["default_variant"] == "lenient"
    assert HUMAN_ACCURACY_JSON.size == 200_417_830
    assert HUMAN_ACCURACY_JSON.sha256 == "d5b2b6111fc9efea16aaebd21bc5a401d16ad18285d3fd99635d8b32ebdb6287"
    card = (built / "README.md").read_text()
    assert "9 ILSVRC2012 validation images" in card and not UNRENDERED.search(card)


# ----------------------------------------------------------------------------- alignment with imagenet_val


def test_images_config_is_imagenet_val_joined_with_the_labels(built, built_val):
    val = {row["id"]: row for row in rows(built_val, "default")}
    labels = rows(built, "labels")
    for split in ("validation", "imagenet_m"):
        joined = rows(built, "images", split)
        assert [row["id"] for row in joined] == [row["id"] for row in rows(built, "labels", split)]
        for row in joined:
            reference = val[row["id"]]
            assert {k: row[k] for k in reference} == reference  # the val row, image bytes included
    assert [row["label"] for row in labels] == [val[row["id"]]["label"] for row in labels]
    names = pq.read_schema(next((built / "images").glob("validation-*.parquet"))).names
    val_names = pq.read_schema(next((built_val / "default").glob("validation-*.parquet"))).names
    assert names == val_names + ["correct_labels", "wrong_labels", "unclear_labels", "is_problematic"]


def test_input_of_a_built_imagenet_val_gives_the_same_rows(built, built_val, manual, pins, tmp_path):
    only_json = tmp_path / "json"
    only_json.mkdir()
    shutil.copy(manual / fx.FILE_NAME, only_json / fx.FILE_NAME)
    folder = build(tmp_path / "out", ["labels", "images"], manual_dir=only_json, pins=pins, inputs=[built_val])
    for config in ("labels", "images"):
        for split in ("validation", "imagenet_m"):
            assert rows(folder, config, split) == rows(built, config, split), (config, split)
    info = json.loads((folder / "build_info.json").read_text())
    assert "imagenet_val" in info["configs"]["labels"]["sources"]


@pytest.mark.parametrize("layout", ["kaggle", "folders"])
def test_labels_config_from_the_other_label_sources(layout, built, manual, tmp_path):
    images = fx.multilabel_val_images()
    root = tmp_path / layout
    (write_kaggle_layout if layout == "kaggle" else write_folders_layout)(root, images)
    fx.write_human_accuracy(root)
    write_checksums(root)
    folder = build(tmp_path / "out", ["labels"], manual_dir=root, pins=read_pins_file(root / "checksums.tsv"))
    assert rows(folder, "labels") == rows(built, "labels")


def test_labels_need_the_original_labels(manual, pins, tmp_path):
    only_json = tmp_path / "json"
    only_json.mkdir()
    shutil.copy(manual / fx.FILE_NAME, only_json / fx.FILE_NAME)
    with pytest.raises(ManualFileMissing, match="(?s)the original val labels were not found .*ILSVRC2012_devkit_t12"):
        build(tmp_path / "out", ["labels"], manual_dir=only_json, pins=pins)


# ----------------------------------------------------------------------------- bad JSON, named


def write(tmp_path, content) -> object:
    return fx.write_human_accuracy(tmp_path, content)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda c: c.pop("initial_annots"), r"key 'initial_annots' is missing"),
        (lambda c: c.pop("problematic_images"), r"key 'problematic_images' is missing"),
        (
            lambda c: c["initial_annots"]["ILSVRC2012_val_00000002.JPEG"].update(unclear=["n0000"]),
            r"initial_annots\['ILSVRC2012_val_00000002.JPEG'\]\['unclear'\]: wnid 'n0000' is not one of the 1000",
        ),
        (
            lambda c: c["initial_annots"]["ILSVRC2012_val_00000002.JPEG"].update(notes=["x"]),
            r"initial_annots\['ILSVRC2012_val_00000002.JPEG'\]: unknown key\(s\) \['notes'\]",
        ),
        (
            lambda c: c["initial_annots"].update({"ILSVRC2012_val_1.JPEG": {}}),
            r"initial_annots names 'ILSVRC2012_val_1.JPEG', which is not an ImageNet val file name",
        ),
        (
            lambda c: c["initial_annots"].update({"ILSVRC2012_val_00050001.JPEG": {}}),
            r"'ILSVRC2012_val_00050001.JPEG', which is not an ImageNet val file name .*1..50000",
        ),
        (
            lambda c: c["imagenet_m"].append("ILSVRC2012_val_00000010.JPEG"),
            r"imagenet_m lists ILSVRC2012_val_00000010.JPEG, which has no entry in initial_annots",
        ),
        (
            lambda c: c["imagenet_m"].append("ILSVRC2012_val_00000002.JPEG"),
            r"imagenet_m lists ILSVRC2012_val_00000002.JPEG twice",
        ),
        (lambda c: c.update(imagenet_m="ILSVRC2012_val_00000002.JPEG"), r"'imagenet_m' must be a list of file names"),
    ],
    ids=[
        "no initial_annots",
        "no problematic_images",
        "unknown wnid",
        "unknown key",
        "malformed name",
        "beyond 50000",
        "imagenet_m unannotated",
        "imagenet_m twice",
        "imagenet_m not a list",
    ],
)
def test_malformed_json_is_named(edit, message, tmp_path):
    content = fx.human_accuracy_json()
    edit(content)
    path = write(tmp_path, content)
    with pytest.raises(InvalidSourceData, match=f"{fx.FILE_NAME}: .*{message}"):
        read_human_accuracy(path)


def test_not_json_is_named(tmp_path):
    path = tmp_path / fx.FILE_NAME
    path.write_text("{not json")
    with pytest.raises(InvalidSourceData, match="not valid JSON"):
        read_human_accuracy(path)


def test_a_bad_input_is_one_line_on_the_command_line(manual, tmp_path, capsys):
    bad = tmp_path / "manual"
    shutil.copytree(manual, bad)
    content = fx.human_accuracy_json()
    content["initial_annots"]["ILSVRC2012_val_00000013.JPEG"] = {"correct": [fx.wnid(1)]}
    fx.write_human_accuracy(bad, content)
    write_checksums(bad)
    argv = ["build", "imagenet_multilabel", "--config", "labels", "--out", str(tmp_path / "out")]
    argv += ["--manual-dir", str(bad), "--pins", str(bad / "checksums.tsv"), "--offline", "--no-progress"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "initial_annots names ILSVRC2012_val_00000013.JPEG (1 such), which is not among the 12 validation" in err[0]


# ----------------------------------------------------------------------------- scoring, by hand

# Crafted top-1 per image (in the validation split's order); a pair means a tie of the two top scores,
# which the lowest class index wins.
TOP = {
    1: 6,  # in correct: lenient and strict right
    2: 20,  # in unclear only: lenient right, strict wrong
    3: 999,  # problematic: left out
    4: 7,  # no label at all: wrong in both
    5: (8, 7),  # tie 7 = 8 -> 7, in unclear: lenient right, strict wrong
    6: (9, 8),  # tie 8 = 9 -> 8 (9 is correct but loses the tie): wrong in both
    7: 31,  # in unclear: lenient right, strict wrong
    8: 11,  # in correct: right in both
    9: 301,  # problematic (class 300 has no other image: not in the class average)
}
# Hand computation over the non-problematic rows (classes 5: rows 1, 2; 7: rows 4, 5; 9: rows 6, 7; 11: row 8):
LENIENT_PER_CLASS = {5: 2 / 2, 7: 1 / 2, 9: 1 / 2, 11: 1 / 1}
STRICT_PER_CLASS = {5: 1 / 2, 7: 0 / 2, 9: 0 / 2, 11: 1 / 1}


def crafted_outputs(numbers, dtype=torch.float32) -> ModelOutputs:
    logits = torch.zeros(len(numbers), NUM_CLASSES, dtype=dtype)
    for row, number in enumerate(numbers):
        top = TOP[number]
        for cls in top if isinstance(top, tuple) else (top,):
            logits[row, cls] = 5.0
    return ModelOutputs(logits, [val_id(n) for n in numbers])


def save(outputs: ModelOutputs, path):
    np.savez(path, ids=np.asarray(outputs.ids, dtype=str), logits=outputs.values.float().numpy())
    return path


def metric(report_json, name, variant):
    matches = [r for r in report_json["metrics"] if r["metric"] == name and r["variant"] == variant]
    assert len(matches) == 1, (name, variant)
    return matches[0]


def test_score_command_gives_the_hand_computed_multilabel_accuracy(built, tmp_path):
    outputs = save(crafted_outputs(ANNOTATED), tmp_path / "val.npz")
    out = tmp_path / "report.json"
    argv = ["score", str(built), "--outputs", str(outputs), "--config", "labels", "--split", "validation"]
    assert main([*argv, "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert "multilabel_accuracy" in report["meta"]["metrics"]
    lenient = metric(report, "multilabel_accuracy", "lenient")["value"]
    strict = metric(report, "multilabel_accuracy", "strict")["value"]
    assert lenient == pytest.approx(sum(LENIENT_PER_CLASS.values()) / 4) == pytest.approx(0.75)
    assert strict == pytest.approx(sum(STRICT_PER_CLASS.values()) / 4) == pytest.approx(0.375)
    pooled = metric(report, "multilabel_accuracy_pooled", "lenient")
    assert (pooled["numerator"], pooled["denominator"]) == (5, 7)
    pooled = metric(report, "multilabel_accuracy_pooled", "strict")
    assert (pooled["numerator"], pooled["denominator"]) == (2, 7)
    problematic = metric(report, "multilabel_problematic", "")
    assert (problematic["numerator"], problematic["denominator"]) == (2, 9)
    assert [r["variant"] for r in report["metrics"] if r["metric"] == "multilabel_accuracy"] == ["lenient", "strict"]
    top1 = metric(report, "top1_accuracy", "")  # the original labels, for contrast: rows 4, 5 (7) and 8 (11)
    assert (top1["numerator"], top1["denominator"]) == (3, 9)


def test_score_on_imagenet_m_counts_the_mistakes(built, tmp_path):
    numbers = sorted(fx.IMAGENET_M)
    report = score(built, crafted_outputs(numbers), config="labels", split="imagenet_m")
    assert report.value("imagenet_m_mistakes", "lenient") == 0  # rows 2 (20) and 7 (31) are in unclear
    assert report.value("imagenet_m_mistakes", "strict") == 2
    row = next(r for r in report.rows if r.metric == "imagenet_m_mistakes" and r.variant == "strict")
    assert (row.numerator, row.denominator) == (2, 2)
    assert report.value("imagenet_m_mistakes") == 0  # lenient is the default (first)


def test_the_suite_summary_reports_the_expert_label_numbers(built):
    from imagenet_suite.scoring.summary.suite import suite_summary

    reports = {
        "imagenet_multilabel/labels/validation": score(built, crafted_outputs(ANNOTATED), "labels", "validation"),
        "imagenet_multilabel/labels/imagenet_m": score(built, crafted_outputs(sorted(fx.IMAGENET_M)), "labels",
                                                       "imagenet_m"),
    }  # fmt: skip
    summary = suite_summary({key: report.to_dict() for key, report in reports.items()})
    validation = summary["expert_labels"]["imagenet_multilabel/labels/validation"]
    assert validation["multilabel_accuracy/lenient"] == pytest.approx(0.75)
    assert validation["multilabel_accuracy/strict"] == pytest.approx(0.375)
    assert validation["multilabel_accuracy_pooled/strict"] == pytest.approx(2 / 7)
    assert summary["expert_labels"]["imagenet_multilabel/labels/imagenet_m"]["imagenet_m_mistakes/strict"] == 2
    assert summary["accuracies"]["imagenet_multilabel/labels/validation"]["metric"] == "multilabel_accuracy"


def test_the_images_config_scores_the_same(built, tmp_path):
    outputs = crafted_outputs(ANNOTATED, torch.bfloat16)  # ties stay ties in bf16
    on_images = score(built, outputs, config="images", split="validation", metrics=["multilabel_accuracy"])
    on_labels = score(built, outputs, config="labels", split="validation", metrics=["multilabel_accuracy"])
    assert on_images.rows == on_labels.rows
    assert on_labels.value("multilabel_accuracy") == pytest.approx(0.75)


def test_the_family_applies_only_to_expert_labels(built_val, tmp_path):
    outputs = ModelOutputs(torch.zeros(12, NUM_CLASSES), [val_id(n) for n in range(1, 13)])
    assert "multilabel_accuracy" not in score(built_val, outputs).meta["metrics"]


# ----------------------------------------------------------------------------- the metric functions


def test_metric_functions_on_tensors():
    top1 = torch.tensor([3, 4, 5, 6])
    correct = torch.tensor([[3, -1], [1, 2], [-1, -1], [6, 7]])
    unclear = torch.tensor([[-1], [4], [5], [-1]])
    labels = torch.tensor([3, 3, 5, 6])
    problematic = torch.tensor([False, False, False, True])
    result = multilabel_accuracy(top1, correct, unclear, labels, problematic, 10)
    assert result.variants["lenient"].value == pytest.approx(1.0)  # classes 3 (2/2) and 5 (1/1); 6 only problematic
    assert result.variants["strict"].value == pytest.approx((1 / 2 + 0) / 2)
    assert result.variants["lenient"].num_classes == 2
    everything_out = multilabel_accuracy(top1, correct, unclear, labels, torch.ones(4, dtype=torch.bool), 10)
    assert np.isnan(everything_out.variants["lenient"].value)
    mistakes = imagenet_m_mistakes(top1, correct, unclear)
    assert (mistakes["lenient"].numerator, mistakes["strict"].numerator) == (0, 2)
