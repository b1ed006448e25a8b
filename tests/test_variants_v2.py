"""imagenet_v2: numeric class folders are class indices (not string-sorted), both re-pack layouts, bad archives;
the multi-label config of Anzaku et al. 2024 from a user-given label file, scored by hand."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch

from imagenet_suite.dataset.folder import DatasetFolder
from imagenet_suite.errors import ChecksumMismatch, InvalidSourceData
from imagenet_suite.scoring import ModelOutputs, score
from tests.fixtures import variants as fx
from tests.helpers import folder_bytes as fx_bytes

CONFIG = "matched_frequency"


def _table(folder, config=CONFIG):
    return pq.read_table(sorted((folder / config).glob("*.parquet")))


def test_numeric_folders_are_class_indices_not_string_sorted(tmp_path):
    manual = fx.write_v2(tmp_path / "m", CONFIG, fx.v2_images(CONFIG))
    labels = _table(fx.build("imagenet_v2", manual, tmp_path / "out")).column("label").to_pylist()
    assert labels == [2, 2, 10, 999, 999]
    # what an ImageFolder would have produced from the string-sorted folders "10" < "2" < "999":
    imagefolder = {name: i for i, name in enumerate(sorted(str(c) for c in fx.V2_CLASSES))}
    assert [imagefolder[str(label)] for label in labels] != labels


def test_wnid_folder_repack_gives_the_same_rows(tmp_path):
    numeric = fx.write_v2(tmp_path / "numeric", CONFIG, fx.v2_images(CONFIG, numeric=True))
    wnid = fx.write_v2(tmp_path / "wnid", CONFIG, fx.v2_images(CONFIG, numeric=False))
    tables = [_table(fx.build("imagenet_v2", m, tmp_path / m.name)) for m in (numeric, wnid)]
    for column in ("id", "label", "width", "height"):
        assert tables[0].column(column).equals(tables[1].column(column))
    image_bytes = [t.column("image").combine_chunks().field("bytes") for t in tables]
    assert image_bytes[0].equals(image_bytes[1])
    assert tables[0].column("file_name")[0].as_py().split("/")[1] == "2"
    assert tables[1].column("file_name")[0].as_py().split("/")[1] == fx.wnid(2)


def test_the_earlier_file_names_are_kept_as_released(tmp_path):
    manual = fx.write_v2(tmp_path / "m", CONFIG, fx.v2_images(CONFIG, numeric=False, hashed=False))
    ids = _table(fx.build("imagenet_v2", manual, tmp_path / "out")).column("id").to_pylist()
    assert ids == [
        f"{fx.wnid(2)}/0.jpeg",
        f"{fx.wnid(2)}/1.jpeg",
        f"{fx.wnid(10)}/2.jpeg",
        f"{fx.wnid(999)}/3.jpeg",
        f"{fx.wnid(999)}/4.jpeg",
    ]


def test_mixed_folder_conventions_are_refused(tmp_path):
    images = fx.v2_images(CONFIG)[:3] + fx.v2_images(CONFIG, numeric=False)[3:]
    manual = fx.write_v2(tmp_path / "m", CONFIG, images)
    with pytest.raises(InvalidSourceData, match=r"imagenetv2-matched-frequency.tar.gz: mixes numeric .* and wnid"):
        fx.build("imagenet_v2", manual, tmp_path / "out")


@pytest.mark.parametrize("folder", ["1000", "007", "n99999999", "tench"])
def test_unknown_class_folder_is_named(folder, tmp_path):
    images = fx.v2_images(CONFIG)
    images[0] = fx.Img(folder, images[0].file, images[0].data)
    manual = fx.write_v2(tmp_path / "m", CONFIG, images)
    with pytest.raises(
        InvalidSourceData,
        match=rf"imagenetv2-matched-frequency.tar.gz: class folder '{folder}' is "
        r"neither a class index 0..999 nor",
    ):
        fx.build("imagenet_v2", manual, tmp_path / "out")


def test_renamed_root_folder_is_named(tmp_path):
    manual = fx.write_v2(tmp_path / "m", CONFIG, fx.v2_images(CONFIG), root="imagenet-matched-frequency-format-val")
    with pytest.raises(
        InvalidSourceData,
        match=r"imagenetv2-matched-frequency.tar.gz: no imagenetv2-matched-frequency-"
        r"format-val/<class folder>/ .*imagenet-matched-frequency-format-val",
    ):
        fx.build("imagenet_v2", manual, tmp_path / "out")


def test_truncated_gzip_archive_is_named(tmp_path):
    manual = fx.write_v2(tmp_path / "m", CONFIG, fx.v2_images(CONFIG))
    archive = manual / "imagenetv2-matched-frequency.tar.gz"
    archive.write_bytes(archive.read_bytes()[:-200])
    fx.write_checksums(manual)
    with pytest.raises(InvalidSourceData, match=r"imagenetv2-matched-frequency.tar.gz: .*(truncated|corrupt)"):
        fx.build("imagenet_v2", manual, tmp_path / "out")


def test_the_pinned_size_rejects_another_file(tmp_path):
    from imagenet_suite.core.options import BuildOptions
    from imagenet_suite.core.runner import build_dataset

    manual = fx.write_v2(tmp_path / "m", CONFIG, fx.v2_images(CONFIG))
    with pytest.raises(
        ChecksumMismatch, match=r"imagenetv2-matched-frequency.tar.gz: size is \d+ bytes, expected 1264079360"
    ):
        build_dataset("imagenet_v2", tmp_path / "out", options=BuildOptions(manual_dir=manual, progress=False))


# -- matched_frequency_multilabel: the multi-labels of Anzaku et al. 2024 from a user-given file ---------------

ML = fx.V2_MULTILABEL


def _ml_build(tmp_path, labels, out="out") -> Path:
    """The multi-label config built from the fixture MatchedFrequency images (in ``tmp_path / "m"``, written
    unless there) and ``labels`` (a JSON value, written to ``<out>-labels.json``, or a file)."""
    manual = tmp_path / "m"
    if not manual.exists():
        fx.write_v2(manual, CONFIG, fx.v2_images(CONFIG))
    path = labels if isinstance(labels, Path) else fx.write_json(tmp_path / f"{out}-labels.json", labels)
    return fx.build("imagenet_v2", manual, tmp_path / out, [ML], builder_options={"labels": str(path)})


def _id(image: fx.Img) -> str:
    return f"{fx.wnid(int(image.folder))}/{image.file}"


def _expected_sets(images) -> dict[str, list[int]]:
    """What ``fx.v2_multilabels`` gives each image (the fifth is not in the file: no label)."""
    return dict(zip(map(_id, images), ([2], [2, 7], [10, 11, 500], [998, 999], []), strict=True))


def test_multilabel_config_joins_the_label_file_and_records_its_sha256(tmp_path):
    images = fx.v2_images(CONFIG)
    labels = fx.write_json(tmp_path / "labels.json", fx.v2_multilabels(images))
    folders = [_ml_build(tmp_path, labels, out=out) for out in ("a", "b")]
    assert fx_bytes(folders[0]) == fx_bytes(folders[1])  # deterministic: the same file gives the same bytes
    table = _table(folders[0], ML).to_pydict()
    assert dict(zip(table["id"], table["real_labels"], strict=True)) == _expected_sets(images)
    assert table["label"] == [2, 2, 10, 999, 999]  # the release's own label kept beside the set
    folder = DatasetFolder(folders[0])
    assert folder.protocol(ML) == {
        "num_classes": 1000,
        "multi_label": "real_labels",
        "skip_empty_label_sets": True,
        "label_count_subgroups": [1, 2, 3, 4, 5],
    }
    recorded = folder.config_info(ML)["sources"]["labels"]
    assert recorded["file"] == labels.name and recorded["sha256"] == hashlib.sha256(labels.read_bytes()).hexdigest()


def test_every_documented_way_of_naming_an_image_gives_the_same_rows(tmp_path):
    images = fx.v2_images(CONFIG)
    paper = fx.v2_multilabels(images)
    root = "imagenetv2-matched-frequency-format-val"
    forms = {
        "root folder in front": {f"{root}/{name}": labels for name, labels in paper.items()},
        "wnid folders": {_id(im): labels for im, labels in zip(images, paper.values(), strict=False)},
        "bare file names, wnid labels": {
            name.split("/")[1]: [fx.wnid(c) for c in labels] for name, labels in paper.items()
        },
    }
    expected = _table(_ml_build(tmp_path, paper, out="paper"), ML).to_pydict()["real_labels"]
    for form, labels in forms.items():
        built = _ml_build(tmp_path, labels, out=form.replace(" ", "-").replace(",", ""))
        assert _table(built, ML).to_pydict()["real_labels"] == expected, form
    repack = tmp_path / "repack"  # the December 2020 re-pack (wnid folders), named as the current archive
    repack.mkdir()
    fx.write_v2(repack / "m", CONFIG, fx.v2_images(CONFIG, numeric=False))
    assert _table(_ml_build(repack, paper), ML).to_pydict()["real_labels"] == expected


def _logits(ranked: dict[str, list[int]]) -> ModelOutputs:
    """Logits that rank each id's classes as listed, first highest (every other class 0)."""
    ids = sorted(ranked)
    values = torch.zeros(len(ids), 1000)
    for row, image_id in enumerate(ids):
        for rank, cls in enumerate(ranked[image_id]):
            values[row, cls] = 10.0 - rank
    return ModelOutputs(values, ids)


def test_score_gives_real_style_and_asma_accuracy_by_hand(tmp_path):
    images = fx.v2_images(CONFIG)
    folder = _ml_build(tmp_path, fx.v2_multilabels(images))
    a, b, c, d, e = map(_id, images)
    # label sets: a {2}, b {2, 7}, c {10, 11, 500}, d {998, 999}, e none (skipped)
    ranked = {a: [2], b: [7, 3], c: [500, 10, 11], d: [5, 999], e: [999]}
    report = score(folder, _logits(ranked), ML)
    # top-1 in the set: a, b, c yes, d no -> 3/4; variable top-k exact: a yes, b {7,3} no, c yes, d no
    assert report.value("multilabel_real_accuracy", "all") == 0.75
    assert report.value("real_top1_accuracy") == 0.75
    assert report.value("top1_accuracy") == 2 / 5  # the release's single label: a (2) and e (999)
    # ASMA = mean over the label counts present (1, 2, 3) of the subgroup accuracies
    assert report.value("asma", "exact") == pytest.approx((1 + 0 + 1) / 3)
    assert report.value("asma", "jaccard") == pytest.approx((1 + (1 / 3 + 1 / 3) / 2 + 1) / 3)  # m/(2k-m)
    assert report.value("asma", "recall") == pytest.approx((1 + (1 / 2 + 1 / 2) / 2 + 1) / 3)  # m/k
    assert report.value("multilabel_proportion") == 3 / 4  # b, c, d of the four labelled images


def test_evaluate_puts_the_v2_columns_in_the_anzaku2024_summary(tmp_path):
    """Labels planted from the model's own resize-only ranking, so the expected numbers are set by hand."""
    from imagenet_suite.inference import PredictOptions, load_model, predict
    from imagenet_suite.inference.evaluate import run_suite
    from imagenet_suite.inference.suite_options import SuiteOptions

    images = fx.v2_images(CONFIG)
    model = load_model("timm:test_resnet", "none", seed=0)
    plain = fx.build("imagenet_v2", fx.write_v2(tmp_path / "m", CONFIG, images), tmp_path / "plain", [CONFIG])
    predict_options = PredictOptions(batch_size=8, workers=0, progress=False)
    predict(plain, model, tmp_path / "ranks.pt", options=replace(predict_options, resize_only=True))
    outputs = ModelOutputs.load(tmp_path / "ranks.pt")
    ranks = {i: row.argsort(descending=True)[:6].tolist() for i, row in zip(outputs.ids, outputs.values, strict=True)}
    a, b, c, d, _ = map(_id, images)
    planted = {  # exact / top-1 in the set: a yes/yes; b no/yes (its 6th class); c yes/yes; d no/no
        a: ranks[a][:1],
        b: [ranks[b][0], ranks[b][5]],
        c: ranks[c][:3],
        d: ranks[d][3:5],
    }
    name = {_id(im): f"{im.folder}/{im.file}" for im in images}
    folder = _ml_build(tmp_path, {name[i]: labels for i, labels in planted.items()}, out="ml")
    suite = run_suite(model, [folder], tmp_path / "run", SuiteOptions(predict=predict_options, bootstrap=0))
    labels = {_id(im): int(im.folder) for im in images}
    top1 = sum(ranks[i][0] == labels[i] for i in ranks) / len(ranks)
    assert suite["summary"]["anzaku2024"] == {
        "imagenet_v2@anzaku2024": {"top1_accuracy": top1, "real_accuracy": 0.75, "asma": pytest.approx(2 / 3)}
    }
    assert suite["summary"]["asma"]["imagenet_v2@anzaku2024"]["jaccard"] == pytest.approx((1 + (1 / 3 + 0) / 2 + 1) / 3)
    assert suite["summary"]["real"] is None  # ImageNet val's ReaL (Beyer et al. 2020) only
    assert "imagenet_v2@anzaku2024" in (tmp_path / "run" / "suite.md").read_text()
