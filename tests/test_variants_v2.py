"""imagenet_v2: numeric class folders are class indices (not string-sorted), both re-pack layouts, bad archives."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from imagenet_suite.errors import ChecksumMismatch, InvalidSourceData
from tests.fixtures import variants as fx

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
