"""imagenet_a / imagenet_r / imagenet_o / imagenet_sketch: subsets, metadata columns and bad releases."""

from __future__ import annotations

import json
import tarfile

import pyarrow.parquet as pq
import pytest

from imagenet_suite import classes
from imagenet_suite.errors import ChecksumMismatch, ConfigError, InvalidSourceData, SourceError
from tests.fixtures import variants as fx


def _tar_with(tmp_path, root, images, readme=True):
    return fx.write_hendrycks_tar(tmp_path / "m", root, images, readme=readme)


def test_a_class_folder_outside_the_200_is_named(tmp_path):
    outside = next(i for i in range(1000) if i not in classes.subset_indices("imagenet_a"))
    images = fx.imagenet_a_images() + [fx.Img(fx.wnid(outside), "x.jpg", fx.encode(1))]
    manual = _tar_with(tmp_path, "imagenet-a", images)
    with pytest.raises(
        InvalidSourceData,
        match=rf"imagenet-a.tar: class folder '{fx.wnid(outside)}' is an ImageNet-1k "
        r"wnid but not one of the 200 imagenet_a classes",
    ):
        fx.build("imagenet_a", manual, tmp_path / "out")


def test_a_renamed_class_folder_is_named(tmp_path):
    images = fx.imagenet_a_images() + [fx.Img("n0149804", "x.jpg", fx.encode(1))]  # a digit lost
    manual = _tar_with(tmp_path, "imagenet-a", images)
    with pytest.raises(InvalidSourceData, match=r"imagenet-a.tar: class folder 'n0149804' is not one of the 1000"):
        fx.build("imagenet_a", manual, tmp_path / "out")


def test_a_renamed_root_folder_is_named(tmp_path):
    manual = _tar_with(tmp_path, "imagenet_a", fx.imagenet_a_images())
    (manual / "imagenet_a.tar").rename(manual / "imagenet-a.tar")
    fx.write_checksums(manual)
    with pytest.raises(
        InvalidSourceData,
        match=r"imagenet-a.tar: no imagenet-a/<class folder>/ folders; top-level "
        r"entries are \['imagenet_a'\]",
    ):
        fx.build("imagenet_a", manual, tmp_path / "out")


def test_a_truncated_jpeg_member_is_named(tmp_path):
    images = fx.imagenet_a_images()
    images[3] = fx.Img(images[3].folder, images[3].file, images[3].data[: len(images[3].data) // 2])
    manual = _tar_with(tmp_path, "imagenet-a", images)
    member = f"imagenet-a/{images[3].folder}/{images[3].file}"
    with pytest.raises(InvalidSourceData, match=rf"imagenet-a.tar:{member}: JPEG .*truncated"):
        fx.build("imagenet_a", manual, tmp_path / "out")


def test_a_truncated_tar_is_named(tmp_path):
    manual = _tar_with(tmp_path, "imagenet-a", fx.imagenet_a_images())
    archive = manual / "imagenet-a.tar"
    with tarfile.open(archive) as tar:
        last = tar.getmembers()[-1]
    archive.write_bytes(archive.read_bytes()[: last.offset_data + 100])  # cut inside the last image
    fx.write_checksums(manual)
    with pytest.raises(InvalidSourceData, match=r"imagenet-a.tar"):
        fx.build("imagenet_a", manual, tmp_path / "out")


def test_a_non_image_file_in_a_class_folder_is_named(tmp_path):
    images = fx.imagenet_a_images() + [fx.Img(fx.imagenet_a_images()[0].folder, "notes.txt", b"hello")]
    manual = _tar_with(tmp_path, "imagenet-a", images)
    with pytest.raises(InvalidSourceData, match=r"member 'imagenet-a/n\d{8}/notes.txt' is not an image"):
        fx.build("imagenet_a", manual, tmp_path / "out")


def test_a_pinned_size_and_offline_download(tmp_path):
    from imagenet_suite.core.options import BuildOptions
    from imagenet_suite.core.runner import build_dataset

    manual = _tar_with(tmp_path, "imagenet-a", fx.imagenet_a_images())
    with pytest.raises(ChecksumMismatch, match=r"imagenet-a.tar: size is \d+ bytes, expected 687552512"):
        build_dataset("imagenet_a", tmp_path / "out", options=BuildOptions(manual_dir=manual, progress=False))
    with pytest.raises(SourceError, match=r"imagenet-a.tar is not in the cache .* offline"):
        build_dataset(
            "imagenet_a",
            tmp_path / "out",
            options=BuildOptions(manual_dir=tmp_path / "empty", offline=True, progress=False),
        )


def test_r_rendition_comes_from_the_file_name(tmp_path):
    from imagenet_suite.builders.imagenet_r import rendition_of

    assert rendition_of("n01443537/deviantart_12.jpg") == "deviantart" and rendition_of("n01443537/x.jpg") == ""
    manual = _tar_with(tmp_path, "imagenet-r", fx.imagenet_r_images(), readme=False)
    table = pq.read_table(sorted((fx.build("imagenet_r", manual, tmp_path / "out") / "default").glob("*.parquet")))
    by_id = dict(zip(table.column("id").to_pylist(), table.column("rendition").to_pylist(), strict=True))
    assert by_id == {f"{im.folder}/{im.file}": im.file.split("_")[0] for im in fx.imagenet_r_images()}
    assert set(table.column("label").to_pylist()) <= set(classes.subset_indices("imagenet_r"))


def test_o_has_no_label_so_no_accuracy_is_ever_computed(tmp_path):
    import torch

    from imagenet_suite.scoring import ModelOutputs, score

    manual = _tar_with(tmp_path, "imagenet-o", fx.imagenet_o_images())
    folder = fx.build("imagenet_o", manual, tmp_path / "out")
    table = pq.read_table(sorted((folder / "default").glob("*.parquet")))
    assert "label" not in table.column_names
    assert table.column("filtered_against").to_pylist() == [3, 3, 600, 999]
    outputs = ModelOutputs(torch.zeros(4, 1000), table.column("id").to_pylist())
    with pytest.raises(ConfigError, match=r"need the model's outputs on the in-distribution set too"):
        score(folder, outputs)


def test_o_is_scored_as_one_ood_set_against_the_id_outputs(tmp_path):
    """ImageNet-O (protocol ``ood: true``, no groups): AUROC, both FPR@95 and AUPR per detector, as the
    metric functions give them on the same scores; no accuracy row."""
    import torch

    from imagenet_suite.scoring import ModelOutputs, OodOptions, ScoreOptions, score
    from imagenet_suite.scoring.metrics import ood

    manual = _tar_with(tmp_path, "imagenet-o", fx.imagenet_o_images())
    folder = fx.build("imagenet_o", manual, tmp_path / "out")
    ids = pq.read_table(sorted((folder / "default").glob("*.parquet"))).column("id").to_pylist()
    generator = torch.Generator().manual_seed(0)
    id_logits = torch.randn(50, 1000, generator=generator)
    id_logits[:, 7] += torch.linspace(0, 8, 50)  # confident on most ID images
    ood_logits = torch.randn(len(ids), 1000, generator=generator)
    ood_logits[0, 3] += 9  # one OOD image looks ID
    id_outputs = ModelOutputs(id_logits, [f"val_{i}" for i in range(50)])
    report = score(folder, ModelOutputs(ood_logits, ids), options=ScoreOptions(ood=OodOptions(id_outputs=id_outputs)))
    assert report.meta["metrics"] == ["ood_detection_set"]
    assert set(report.table.metric) == set(ood.METRIC_NAMES) and set(report.table.subgroup) == {""}
    id_msp, ood_msp = (torch.softmax(x.float(), 1).max(1).values.double() for x in (id_logits, ood_logits))  # float32
    expected = ood.grouped_ood_metrics(id_msp, ood_msp, torch.zeros(len(ids), dtype=torch.long), ["imagenet_o"]).pooled
    assert report.value("auroc", "msp") == pytest.approx(expected["auroc"], abs=1e-12)
    assert report.value("fpr95", "msp") == expected["fpr95"].value
    assert report.value("aupr_out", "msp") == pytest.approx(expected["aupr_out"], abs=1e-12)
    assert {row.variant for row in report.rows} == {"msp", "maxlogit", "energy"}

    from imagenet_suite.cli import main

    torch.save({"ids": ids, "logits": ood_logits}, tmp_path / "o.pt")
    torch.save({"ids": list(id_outputs.ids), "logits": id_logits}, tmp_path / "val.pt")
    argv = ["score", str(folder), "--outputs", str(tmp_path / "o.pt"), "--id-outputs", str(tmp_path / "val.pt")]
    assert main([*argv, "--json", str(tmp_path / "o.json")]) == 0
    rows = json.loads((tmp_path / "o.json").read_text())["metrics"]
    assert {(r["metric"], r["variant"]): r["value"] for r in rows}[("auroc", "msp")] == report.value("auroc", "msp")


def test_sketch_unknown_folder_in_the_zip_is_named(tmp_path):
    images = fx.sketch_images() + [fx.Img("n0144O764", "sketch_9.JPEG", fx.encode(3))]  # letter O for zero
    manual = fx.write_sketch_zip(tmp_path / "m", images)
    with pytest.raises(
        InvalidSourceData, match=r"ImageNet-Sketch.zip: class folder 'n0144O764' is not one of the 1000"
    ):
        fx.build("imagenet_sketch", manual, tmp_path / "out")


def test_sketch_corrupt_zip_is_named(tmp_path):
    manual = fx.write_sketch_zip(tmp_path / "m", fx.sketch_images())
    archive = manual / "ImageNet-Sketch.zip"
    archive.write_bytes(archive.read_bytes()[:-300])  # the central directory is at the end
    fx.write_checksums(manual)
    with pytest.raises(InvalidSourceData, match=r"ImageNet-Sketch.zip: not a readable zip archive"):
        fx.build("imagenet_sketch", manual, tmp_path / "out")
