"""imagenet_real on the real real.json (tests/data) and joined onto fixture val images."""

from __future__ import annotations

import json

import pytest

from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.core.sources import read_pins_file
from imagenet_suite.errors import InvalidSourceData
from tests.helpers import load


@pytest.fixture(scope="module")
def real_json(test_data):
    return test_data / "reassessed-imagenet" / "real.json"


@pytest.fixture(scope="module")
def labels_folder(real_json, tmp_path_factory):
    return build_dataset(
        "imagenet_real",
        tmp_path_factory.mktemp("real"),
        ["labels"],
        options=BuildOptions(manual_dir=real_json.parent, offline=True, progress=False),
    )


def test_real_labels_from_the_real_file(labels_folder, tmp_path):
    ds = load(labels_folder, "labels", cache_dir=tmp_path)
    assert ds.num_rows == 50_000
    assert sum(1 for labels in ds["real_labels"] if labels) == 46_837
    row = ds[1]
    assert row["id"] == "ILSVRC2012_val_00000002" and row["file_name"] == "ILSVRC2012_val_00000002.JPEG"
    assert set(row["real_labels"]) == {970, 795}
    assert ds[0]["real_labels"] == []  # empty sets kept so rows align with the images
    from imagenet_suite.classes import lemma

    assert lemma(ds.features["real_labels"].feature.names[970]) == "alp"


def test_build_info_records_the_pinned_source(labels_folder):
    info = json.loads((labels_folder / "build_info.json").read_text())
    source = info["configs"]["labels"]["sources"]["real_json"]
    assert source["sha256"] == "d83e9bff374c631aae8439eb064c7019acc56e1b3bc3f56b8380c2a710b0220b"
    assert source["size"] == 388_478
    assert info["configs"]["labels"]["protocol"]["skip_empty_label_sets"] is True


def test_offline_default_uses_timms_copy(tmp_path):
    folder = build_dataset("imagenet_real", tmp_path, ["labels"], options=BuildOptions(offline=True, progress=False))
    info = json.loads((folder / "build_info.json").read_text())
    assert info["configs"]["labels"]["sources"]["real_json"]["file"] == "imagenet_real_labels.json"


def test_images_config_joins_real_labels_onto_val_images(real_json, val_layouts, val_images, tmp_path):
    pins = read_pins_file(val_layouts["tar"] / "checksums.tsv")
    folder = build_dataset(
        "imagenet_real",
        tmp_path / "out",
        ["images"],
        options=BuildOptions(manual_dir=val_layouts["tar"], pins=pins, offline=True, progress=False),
    )
    ds = load(folder, "images", cache_dir=tmp_path / "cache")
    real = json.loads(real_json.read_text())
    assert ds["id"] == [im.image_id for im in val_images]
    assert ds["label"] == [im.label for im in val_images]
    assert ds["real_labels"] == real[: len(val_images)]


def test_malformed_real_json_is_named(tmp_path):
    bad = tmp_path / "real.json"
    bad.write_text(json.dumps([[1, 2]] * 49_999 + [[1000]]))
    pins_file = tmp_path / "pins.tsv"
    import hashlib

    pins_file.write_text(f"real.json\t{bad.stat().st_size}\t{hashlib.sha256(bad.read_bytes()).hexdigest()}\n")
    with pytest.raises(InvalidSourceData, match="entry 49999 .*ILSVRC2012_val_00050000"):
        build_dataset(
            "imagenet_real",
            tmp_path / "out",
            ["labels"],
            options=BuildOptions(manual_dir=tmp_path, offline=True, pins=read_pins_file(pins_file), progress=False),
        )
