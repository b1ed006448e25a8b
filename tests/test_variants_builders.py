"""Every ImageNet-variant builder on a fixture in its release's exact layout.

One table of cases (builder, configs, fixture writer, expected rows) drives the shared checks:
``load_dataset`` round trip (row count, ids, labels, byte-exact images, file names), the protocol
published in ``build_info.json``, determinism (two builds and ``num_proc`` 2 byte-identical),
extracted-folder copies giving the same rows as the archives, and the published image counts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from imagenet_suite import classes
from imagenet_suite.core import registry
from imagenet_suite.dataset.folder import DatasetFolder
from imagenet_suite.errors import InvalidSourceData
from tests.fixtures import variants as fx
from tests.helpers import folder_bytes, load

C_CONTENTS = {
    ("gaussian_noise", 1): fx.c_images("gaussian_noise", 1),
    ("gaussian_noise", 3): fx.c_images("gaussian_noise", 3, n=4),
    ("shot_noise", 5): fx.c_images("shot_noise", 5),
}


def _write_v2(manual: Path) -> Path:
    for config in fx.V2_STEMS:
        fx.write_v2(manual, config, fx.v2_images(config))
    return manual


def _v2_rows(config: str) -> list[dict]:
    stem = fx.V2_STEMS[config]
    rows = [
        {
            "id": f"{fx.wnid(int(im.folder))}/{im.file}",
            "file_name": f"{stem}-format-val/{im.folder}/{im.file}",
            "data": im.data,
            "label": int(im.folder),
        }
        for im in fx.v2_images(config)
    ]
    return sorted(rows, key=lambda r: r["id"])


def _folder_rows(root: str, images: list[fx.Img], column: str = "label", **extra: Callable) -> list[dict]:
    rows = [
        {
            "id": f"{im.folder}/{im.file}",
            "file_name": f"{root}/{im.folder}/{im.file}",
            "data": im.data,
            column: classes.index_of(im.folder),
            **{k: f(im) for k, f in extra.items()},
        }
        for im in images
    ]
    return sorted(rows, key=lambda r: r["id"])


def _c_rows(config: str) -> list[dict]:
    corruption, severity = config.rsplit("_", 1)
    images = C_CONTENTS[(corruption, int(severity))]
    return [
        {
            "id": f"{corruption}/{severity}/{im.folder}/{im.file}",
            "file_name": f"{corruption}/{severity}/{im.folder}/{im.file}",
            "data": im.data,
            "label": classes.index_of(im.folder),
            "val_id": im.file[:-5],
            "corruption": corruption,
            "severity": int(severity),
        }
        for im in sorted(images, key=lambda im: im.file)
    ]


def _objectnet_rows(config: str) -> list[dict]:
    from imagenet_suite.builders.objectnet import OBJECTNET_CLASSES, OVERLAP

    rows = [
        {
            "id": f"{im.folder}/{im.file}",
            "file_name": f"objectnet-1.0/images/{im.folder}/{im.file}",
            "data": im.data,
            "objectnet_label": OBJECTNET_CLASSES.index(im.folder),
            "imagenet_labels": list(OVERLAP[im.folder]),
        }
        for im in fx.objectnet_images()
    ]
    return sorted(rows, key=lambda r: r["id"])


def _protocol_a(protocol: dict) -> bool:
    return (
        protocol["class_subset"] == list(classes.subset_indices("imagenet_a")) and len(protocol["class_subset"]) == 200
    )


def _protocol_r(protocol: dict) -> bool:
    return (
        protocol["class_subset"] == list(classes.subset_indices("imagenet_r"))
        and protocol["class_subset_name"] == "imagenet_r"
    )


def _protocol_objectnet(protocol: dict) -> bool:
    from imagenet_suite.builders.objectnet import OVERLAP

    mapping = protocol["class_mapping"]
    return (
        protocol["mapping_rule"] == "max_over_mapped_logits"
        and protocol["border_crop_px"] == 2
        and len(mapping) == 113
        and sum(map(len, mapping.values())) == 125
        and mapping["chair"] == list(OVERLAP["chair"])
    )


@dataclass(frozen=True)
class Case:
    name: str
    configs: tuple[str, ...]
    write: Callable[[Path], Path]
    rows: Callable[[str], list[dict]]  # expected rows of a config, in output order
    protocol_ok: Callable[[dict], bool]
    archive: str | None = None  # archive whose extracted copy must give the same rows


CASES = {
    "imagenet_v2": Case(
        "imagenet_v2",
        tuple(fx.V2_STEMS),
        _write_v2,
        _v2_rows,
        lambda p: p == {"num_classes": 1000},
        "imagenetv2-matched-frequency.tar.gz",
    ),
    "imagenet_a": Case(
        "imagenet_a",
        ("default",),
        lambda m: fx.write_hendrycks_tar(m, "imagenet-a", fx.imagenet_a_images()),
        lambda c: _folder_rows("imagenet-a", fx.imagenet_a_images()),
        _protocol_a,
        "imagenet-a.tar",
    ),
    "imagenet_r": Case(
        "imagenet_r",
        ("default",),
        lambda m: fx.write_hendrycks_tar(m, "imagenet-r", fx.imagenet_r_images()),
        lambda c: _folder_rows("imagenet-r", fx.imagenet_r_images(), rendition=lambda im: im.file.split("_")[0]),
        _protocol_r,
    ),
    "imagenet_o": Case(
        "imagenet_o",
        ("default",),
        lambda m: fx.write_hendrycks_tar(m, "imagenet-o", fx.imagenet_o_images()),
        lambda c: _folder_rows("imagenet-o", fx.imagenet_o_images(), column="filtered_against"),
        lambda p: p["ood"] is True and p["metadata_column"] == "filtered_against",
    ),
    "imagenet_sketch": Case(
        "imagenet_sketch",
        ("default",),
        lambda m: fx.write_sketch_zip(m, fx.sketch_images()),
        lambda c: _folder_rows("sketch", fx.sketch_images()),
        lambda p: p == {"num_classes": 1000},
        "ImageNet-Sketch.zip",
    ),
    "imagenet_c": Case(
        "imagenet_c",
        ("gaussian_noise_3", "shot_noise_5"),
        lambda m: fx.write_imagenet_c(m, "noise", C_CONTENTS),
        _c_rows,
        lambda p: p["family"] == "noise" and p["benchmark_corruption"] is True,
    ),
    "objectnet": Case(
        "objectnet",
        ("imagenet_overlap",),
        lambda m: fx.write_objectnet(m, fx.objectnet_images()),
        _objectnet_rows,
        _protocol_objectnet,
    ),
}


@pytest.fixture(scope="module")
def manuals(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("variant-releases")
    return {name: case.write(root / name) for name, case in CASES.items()}


@pytest.fixture(scope="module")
def built(manuals, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("variant-builds")
    return {name: fx.build(name, manuals[name], out, case.configs, shard_size=3) for name, case in CASES.items()}


def test_every_variant_builder_is_registered_with_a_card():
    from imagenet_suite.core import card, registry

    builders = registry.all_builders()
    for name in CASES:
        cls = builders[name]
        assert cls.VERSION in cls.RELEASE_NOTES and cls.HOMEPAGE and cls.CITATION
        assert "strict_counts" in cls.OPTIONS and cls.SOURCES
        assert "## Terms of use" in card.load_template(name)


@pytest.mark.parametrize("name,config", [(n, c) for n, case in CASES.items() for c in case.configs])
def test_load_dataset_round_trip(name, config, built, tmp_path):
    from datasets import ClassLabel, Image

    case = CASES[name]
    ds = load(built[name], config, split="test", cache_dir=tmp_path)
    expected = case.rows(config)
    assert ds.num_rows == len(expected) and ds.info.version.version_str == registry.get(name).VERSION
    label_column = next(k for k in ("label", "filtered_against", "objectnet_label") if k in expected[0])
    assert isinstance(ds.features[label_column], ClassLabel)
    if label_column != "objectnet_label":
        assert ds.features[label_column].names == list(classes.imagenet_wnids())
    assert ("label" in ds.features) == (label_column == "label")  # O and ObjectNet publish no 1000-way label
    raw = ds.cast_column("image", Image(decode=False))
    for row, want in zip(raw, expected, strict=True):
        assert row["image"]["bytes"] == want["data"]  # original bytes, never re-encoded (nor cropped)
        assert row["file_name"] == row["image"]["path"] == want["file_name"]
        for column, value in want.items():
            if column not in ("data", "file_name"):
                assert row[column] == value, (column, row["id"])
        assert row["width"] > 0 and row["height"] > 0 and row["image_mode"] in ("RGB", "L")
    assert case.protocol_ok(DatasetFolder(built[name]).protocol(config))


@pytest.mark.parametrize("name", list(CASES))
def test_two_builds_and_two_workers_are_byte_identical(name, manuals, tmp_path):
    configs = CASES[name].configs[:1]
    first = fx.build(name, manuals[name], tmp_path / "a", configs, shard_size=2)
    second = fx.build(name, manuals[name], tmp_path / "b", configs, shard_size=2)
    parallel = fx.build(name, manuals[name], tmp_path / "c", configs, shard_size=2, num_proc=2)
    files = folder_bytes(first)
    assert len([f for f in files if f.endswith(".parquet")]) >= 2
    assert files == folder_bytes(second) == folder_bytes(parallel)


@pytest.mark.parametrize("name", [n for n, case in CASES.items() if case.archive])
def test_an_extracted_copy_gives_the_same_rows(name, manuals, built, tmp_path):
    manual = fx.extract(manuals[name] / CASES[name].archive, tmp_path / "extracted")
    config = CASES[name].configs[0]
    folder = fx.build(name, manual, tmp_path / "out", [config], shard_size=3)
    tables = [pq.read_table(sorted((f / config).glob("*.parquet"))) for f in (built[name], folder)]
    assert tables[0].num_rows > 0 and tables[0].equals(tables[1])
    assert "extracted folder" in (folder / "README.md").read_text()


@pytest.mark.parametrize("name", list(CASES))
def test_published_counts_are_enforced_by_default(name, manuals, tmp_path):
    with pytest.raises(InvalidSourceData, match=r"found [\d,]+ .*the release has [\d,]+.*strict_counts=false"):
        fx.build(name, manuals[name], tmp_path, CASES[name].configs[:1], strict=True)


def test_card_names_release_layout_protocol_and_sources(built):
    text = (built["imagenet_a"] / "README.md").read_text()
    assert "# ImageNet-A" in text and "read from the release's archive" in text
    assert "### Evaluation protocol of `default`" in text and '"class_subset_name": "imagenet_a"' in text
    assert "imagenet-a.tar" in text and "config_name: default" in text
    assert not list(built["imagenet_a"].rglob("*.py"))
