"""imagenet_val on fixtures in the exact real layouts: load_dataset round trip, layouts, boxes, errors."""

from __future__ import annotations

import io
import shutil
import tarfile

import pyarrow.parquet as pq
import pytest

from imagenet_suite.core.archives import open_archive
from imagenet_suite.errors import ChecksumMismatch, ConfigError, InvalidSourceData, ManualFileMissing
from tests.fixtures import imagenet_layouts as fx
from tests.helpers import build_val, load


@pytest.fixture(scope="module")
def built(val_layouts, tmp_path_factory):
    """imagenet_val (default + boxes) built from each layout."""
    out = tmp_path_factory.mktemp("built-val")
    folders = {}
    for layout in ("tar", "kaggle"):
        folders[layout] = build_val(val_layouts, layout, out / layout, configs=("default", "boxes"), shard_size=5)
    folders["folders"] = build_val(val_layouts, "folders", out / "folders", shard_size=5)
    return folders


def test_load_dataset_roundtrip_matches_archive_members(built, val_layouts, val_images, tmp_path):
    from datasets import ClassLabel, Image

    ds = load(built["tar"], "default", cache_dir=tmp_path)
    assert ds.num_rows == len(val_images)
    assert isinstance(ds.features["label"], ClassLabel) and ds.features["label"].num_classes == 1000
    assert ds.features["label"].names[0] == "n01440764"
    assert isinstance(ds.features["image"], Image)
    assert ds.info.version.version_str == "1.0.0"
    raw = ds.cast_column("image", Image(decode=False))
    with open_archive(val_layouts["tar"] / "ILSVRC2012_img_val.tar") as tar:
        for row, expected in zip(raw, val_images, strict=True):
            assert row["id"] == expected.image_id
            assert row["file_name"] == row["image"]["path"] == expected.file_name
            assert row["label"] == expected.label
            assert row["image"]["bytes"] == tar.read(expected.file_name) == expected.data
    modes = ds["image_mode"]
    assert modes[1] == "L" and modes[2] == "CMYK" and modes[0] == "RGB"
    assert ds[1]["image"].mode == "L"  # decodes through PIL as stored


def test_ground_truth_goes_through_meta_mat_not_sorted_index(val_layouts, val_images):
    gt = val_layouts["tar"] / "ILSVRC2012_devkit_t12.tar.gz"
    with open_archive(gt) as devkit:
        ids = devkit.read("ILSVRC2012_devkit_t12/data/ILSVRC2012_validation_ground_truth.txt").split()
    id_map = fx.ilsvrc_ids()
    assert [int(x) for x in ids] == [id_map[im.wnid] for im in val_images]
    assert any(int(x) - 1 != im.label for x, im in zip(ids, val_images))  # ILSVRC ids are not sorted-wnid indices


def test_every_layout_yields_the_same_rows(built):
    tables = {name: pq.read_table(sorted((folder / "default").glob("*.parquet"))) for name, folder in built.items()}
    assert tables["tar"].num_rows == 12
    assert tables["tar"].equals(tables["kaggle"]) and tables["tar"].equals(tables["folders"])


def test_boxes_config_same_from_csv_xml_and_tgz(built, val_layouts, val_images, tmp_path):
    import shutil

    boxes_from_csv = pq.read_table(sorted((built["kaggle"] / "boxes").glob("*.parquet")))
    boxes_from_tgz = pq.read_table(sorted((built["tar"] / "boxes").glob("*.parquet")))
    kaggle_xml_only = tmp_path / "kaggle-xml"
    shutil.copytree(val_layouts["kaggle"], kaggle_xml_only)
    (kaggle_xml_only / "LOC_val_solution.csv").unlink()
    with pytest.raises(ManualFileMissing):  # the Kaggle layout needs its solution file for labels
        build_val({"k": kaggle_xml_only}, "k", tmp_path / "out", configs=("boxes",))
    assert boxes_from_csv.equals(boxes_from_tgz)
    objects = boxes_from_tgz.column("objects").to_pylist()
    for row_objects, image in zip(objects, val_images, strict=True):
        assert [(o["xmin"], o["ymin"], o["xmax"], o["ymax"]) for o in row_objects] == image.boxes
        assert {o["label"] for o in row_objects} == {image.label}


def test_boxes_config_without_box_source_is_a_clear_error(val_layouts, tmp_path):
    with pytest.raises(ManualFileMissing, match="LOC_val_solution.csv"):
        build_val(val_layouts, "folders", tmp_path, configs=("boxes",))


def test_missing_manual_files_lists_accepted_layouts(tmp_path):
    from imagenet_suite.core.options import BuildOptions
    from imagenet_suite.core.runner import build_dataset

    with pytest.raises(ManualFileMissing) as err:
        build_dataset("imagenet_val", tmp_path / "out", options=BuildOptions(manual_dir=tmp_path, progress=False))
    message = str(err.value)
    for expected in (
        "ILSVRC2012_img_val.tar",
        "ILSVRC2012_devkit_t12.tar.gz",
        "LOC_val_solution.csv",
        "val/<wnid>/*.JPEG",
    ):
        assert expected in message


def test_missing_devkit_names_it(val_layouts, tmp_path):
    import shutil

    manual = tmp_path / "m"
    manual.mkdir()
    shutil.copy(val_layouts["tar"] / "ILSVRC2012_img_val.tar", manual)
    fx.write_checksums(manual)
    with pytest.raises(ManualFileMissing, match="ILSVRC2012_devkit_t12.tar.gz"):
        build_val({"m": manual}, "m", tmp_path / "out")


def test_wrong_sha256_names_file_and_both_hashes(val_layouts, tmp_path):
    from imagenet_suite.core.options import BuildOptions
    from imagenet_suite.core.runner import build_dataset
    from imagenet_suite.core.sources import read_pins_file

    pins = read_pins_file(val_layouts["tar"] / "checksums.tsv")
    pins["ILSVRC2012_img_val.tar"] = {**pins["ILSVRC2012_img_val.tar"], "sha256": "0" * 64}
    with pytest.raises(ChecksumMismatch) as err:
        build_dataset(
            "imagenet_val", tmp_path, options=BuildOptions(manual_dir=val_layouts["tar"], pins=pins, progress=False)
        )
    assert "ILSVRC2012_img_val.tar" in str(err.value) and "0" * 64 in str(err.value)
    assert not list(tmp_path.rglob("*.parquet")) and not list(tmp_path.rglob("build_info.json"))


@pytest.mark.parametrize("num_proc", [1, 2])
def test_a_changed_byte_in_the_tar_publishes_nothing(val_layouts, tmp_path, num_proc):
    """The tar is hashed while shards are generated from it: a file that fails its pin (same size,
    one image byte changed, so everything else reads fine) leaves no shard, card or build_info."""
    manual = tmp_path / "m"
    shutil.copytree(val_layouts["tar"], manual)
    tar = bytearray((manual / "ILSVRC2012_img_val.tar").read_bytes())
    tar[len(tar) // 2] ^= 0x01
    (manual / "ILSVRC2012_img_val.tar").write_bytes(bytes(tar))
    with pytest.raises(ChecksumMismatch, match="ILSVRC2012_img_val.tar: sha256 is [0-9a-f]{64}, expected"):
        build_val({"m": manual}, "m", tmp_path / "out", shard_size=4, num_proc=num_proc)
    published = [p.name for p in (tmp_path / "out").rglob("*") if p.is_file() and not p.name.endswith(".incomplete")]
    assert published == []


def test_real_md5_pin_rejects_a_fixture_tar(val_layouts, tmp_path):
    from imagenet_suite.core.options import BuildOptions
    from imagenet_suite.core.runner import build_dataset

    with pytest.raises(ChecksumMismatch, match="md5 .* expected 29b22e2961454d5413ddabcf34fc5622"):
        build_dataset("imagenet_val", tmp_path, options=BuildOptions(manual_dir=val_layouts["tar"], progress=False))


def test_truncated_jpeg_inside_tar_is_named(val_images, tmp_path):
    images = list(val_images)
    images[4] = fx.ValImage(
        images[4].image_id, images[4].data[: len(images[4].data) // 2], images[4].label, images[4].boxes
    )
    manual = fx.write_tar_layout(tmp_path / "m", images)
    with pytest.raises(InvalidSourceData, match="ILSVRC2012_val_00000005.JPEG.*truncated"):
        build_val({"m": manual}, "m", tmp_path / "out")


def test_truncated_tar_archive_is_named(val_layouts, tmp_path):
    manual = tmp_path / "m"
    manual.mkdir()
    data = (val_layouts["tar"] / "ILSVRC2012_img_val.tar").read_bytes()
    (manual / "ILSVRC2012_img_val.tar").write_bytes(data[:20_000])
    (manual / "ILSVRC2012_devkit_t12.tar.gz").write_bytes(
        (val_layouts["tar"] / "ILSVRC2012_devkit_t12.tar.gz").read_bytes()
    )
    fx.write_checksums(manual)
    with pytest.raises(InvalidSourceData, match="ILSVRC2012_img_val.tar"):
        build_val({"m": manual}, "m", tmp_path / "out")


def test_ground_truth_that_does_not_match_images(val_images, tmp_path):
    manual = fx.write_tar_layout(tmp_path / "m", val_images[:-1])  # devkit labels 11 images
    with tarfile.open(manual / "ILSVRC2012_img_val.tar", "a") as tar:  # but the tar holds 12
        info = tarfile.TarInfo(val_images[-1].file_name)
        info.size = len(val_images[-1].data)
        tar.addfile(info, io.BytesIO(val_images[-1].data))
    fx.write_checksums(manual)
    with pytest.raises(InvalidSourceData, match="11 labels but .* 12 images"):
        build_val({"m": manual}, "m", tmp_path / "out")


def test_kaggle_solution_missing_a_row(val_layouts, tmp_path):
    import shutil

    manual = tmp_path / "k"
    shutil.copytree(val_layouts["kaggle"], manual)
    lines = (manual / "LOC_val_solution.csv").read_text().splitlines(keepends=True)
    dropped = lines.pop(3).split(",")[0]
    (manual / "LOC_val_solution.csv").write_text("".join(lines))
    with pytest.raises(InvalidSourceData, match=f"LOC_val_solution.csv: no label for 1 image.*{dropped}"):
        build_val({"k": manual}, "k", tmp_path / "out")


def test_folder_that_is_not_a_wnid(val_layouts, tmp_path):
    import shutil

    manual = tmp_path / "f"
    shutil.copytree(val_layouts["folders"], manual)
    (manual / "val" / "n99999999").mkdir()
    with pytest.raises(InvalidSourceData, match="n99999999.*not one of the 1000"):
        build_val({"f": manual}, "f", tmp_path / "out")


def test_unknown_config_name(val_layouts, tmp_path):
    with pytest.raises(ConfigError, match="no config 'boxs'; did you mean 'boxes'"):
        build_val(val_layouts, "tar", tmp_path, configs=("boxs",))
    with pytest.raises(ConfigError, match="no config 'labels'; known configs: default, boxes"):
        build_val(val_layouts, "tar", tmp_path, configs=("labels",))


def test_one_label_space_for_every_builder():
    """``classes.imagenet_class_label`` is the 1000-way label; ``classes.index_of`` names where a bad wnid came from."""
    from imagenet_suite import classes

    label = classes.imagenet_class_label()
    assert label.num_classes == 1000 and tuple(label.names) == classes.imagenet_wnids()
    assert classes.index_of("n01440764") == 0 and classes.index_of("n15075141") == 999
    with pytest.raises(
        InvalidSourceData,
        match=r"^LOC_val_solution.csv: row 7: box class 'n0144O764' is not one of "
        r"the 1000 ImageNet-1k wnids$",
    ):
        classes.index_of("n0144O764", "LOC_val_solution.csv: row 7", "box class")
    with pytest.raises(InvalidSourceData, match=r"^'n1' is not one of the 1000"):
        classes.index_of("n1")
