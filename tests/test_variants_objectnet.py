"""objectnet: mapping derived from the release's mapping files and checked, folders, gated-file errors."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from imagenet_suite.builders import objectnet
from imagenet_suite.errors import InvalidSourceData, ManualFileMissing
from tests.fixtures import variants as fx


@pytest.fixture()
def manual(tmp_path):
    return fx.write_objectnet(tmp_path / "m", fx.objectnet_images())


def test_mapping_files_give_the_published_113_to_125_mapping(manual):
    derived = objectnet.read_mapping(manual / "objectnet-1.0" / "mappings")
    assert derived == objectnet.OVERLAP
    assert len(derived) == 113 and len({i for v in derived.values() for i in v}) == 125
    assert sorted(k for k, v in derived.items() if len(v) > 1) == [
        "alarm_clock",
        "bicycle",
        "chair",
        "helmet",
        "pen",
        "skirt",
        "still_camera",
        "tie",
        "wheel",
    ]


def test_only_overlap_folders_are_read_and_bytes_stay_uncropped(manual, tmp_path):
    folder = fx.build("objectnet", manual, tmp_path / "out")
    rows = pq.read_table(sorted((folder / "imagenet_overlap").glob("*.parquet"))).to_pylist()
    assert {r["id"].split("/")[0] for r in rows} == {"alarm_clock", "banana", "chair"}  # not squeegee/eyeglasses
    expected = {f"{im.folder}/{im.file}": im.data for im in fx.objectnet_images()}
    assert {r["id"]: r["image"]["bytes"] for r in rows} == expected
    chair = next(r for r in rows if r["id"].startswith("chair/"))
    assert chair["objectnet_label"] == objectnet.OBJECTNET_CLASSES.index("chair") == 17
    assert chair["imagenet_labels"] == [423, 559, 765]
    sources = json.loads((folder / "build_info.json").read_text())["configs"]["imagenet_overlap"]["sources"]
    assert set(sources) == {"images", "mappings"}


def _edit_json(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_a_mapping_that_differs_from_the_published_one_is_refused(manual, tmp_path):
    path = manual / "objectnet-1.0" / "mappings" / "objectnet_to_imagenet_1k.json"
    _edit_json(path, lambda d: d.update({"Chair": d["Chair"].split("; ")[0]}))  # only "barber chair" left
    with pytest.raises(
        InvalidSourceData,
        match=r"mappings: ObjectNet class 'chair' maps to ImageNet-1k classes \(423,\) "
        r"in the release's mapping files, expected \(423, 559, 765\)",
    ):
        fx.build("objectnet", manual, tmp_path / "out")


def test_an_ambiguous_imagenet_name_is_named(manual, tmp_path):
    names = manual / "objectnet-1.0" / "mappings" / "imagenet_to_label_2012_v2"
    lines = names.read_text().splitlines()
    from imagenet_suite.classes import imagenet_lemmas

    mapped = {imagenet_lemmas()[i] for indices in objectnet.OVERLAP.values() for i in indices}
    unmapped = next(i for i, name in enumerate(lines) if name not in mapped)
    lines[unmapped] = "banana"  # a second "banana" line, replacing a class ObjectNet does not use
    names.write_text("\n".join(lines) + "\n")
    with pytest.raises(
        InvalidSourceData,
        match=r"objectnet_to_imagenet_1k.json: ImageNet class 'banana' \(of ObjectNet "
        r"'Banana'\) is on 2 lines of imagenet_to_label_2012_v2",
    ):
        fx.build("objectnet", manual, tmp_path / "out")


def test_a_broken_index_map_is_named(manual, tmp_path):
    path = manual / "objectnet-1.0" / "mappings" / "pytorch_to_imagenet_2012_id.json"
    _edit_json(path, lambda d: d.update({"1": d["0"]}))
    with pytest.raises(InvalidSourceData, match=r"pytorch_to_imagenet_2012_id.json: expected a one-to-one map"):
        fx.build("objectnet", manual, tmp_path / "out")


def test_an_unknown_image_folder_is_named(manual, tmp_path):
    stray = manual / "objectnet-1.0" / "images" / "alarm-clock"
    stray.mkdir()
    (stray / "a.png").write_bytes(fx.encode(1, fmt="PNG"))
    with pytest.raises(
        InvalidSourceData,
        match=r"images: class folder 'alarm-clock' is not in "
        r"mappings/folder_to_objectnet_label.json",
    ):
        fx.build("objectnet", manual, tmp_path / "out")


def test_the_zip_alone_asks_for_extraction(tmp_path):
    manual = tmp_path / "m"
    manual.mkdir()
    (manual / "objectnet-1.0.zip").write_bytes(b"PK\x03\x04")
    with pytest.raises(
        ManualFileMissing,
        match=r"objectnet-1.0.zip is there but must be extracted first .*"
        r"objectnet.dev/download.html",
    ):
        fx.build("objectnet", manual, tmp_path / "out")


def test_an_incomplete_extraction_names_the_missing_file(manual, tmp_path):
    (manual / "objectnet-1.0" / "mappings" / "imagenet_to_label_2012_v2").unlink()
    with pytest.raises(ManualFileMissing, match=r"mappings/imagenet_to_label_2012_v2 is missing"):
        fx.build("objectnet", manual, tmp_path / "out")
