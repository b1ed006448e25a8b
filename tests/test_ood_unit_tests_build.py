"""ood_unit_tests end to end: from a built 50,000-image imagenet_val fixture (tiny images) and from a folder.

The full-length val set is what makes the upstream index selection checkable: every test must use
exactly the source indices of the released files, in torchvision ImageFolder order.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

from imagenet_suite.builders import ood_unit_tests as out
from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.errors import ConfigError, InvalidSourceData, ManualFileMissing
from tests.fixtures import ninco_imagenet_val as fx
from tests.helpers import UNRENDERED, build_val, folder_bytes, load


@pytest.fixture(scope="module")
def val_images():
    return fx.tiny_val_images()


@pytest.fixture(scope="module")
def val_dataset(val_images, tmp_path_factory):
    root = fx.write_val_tar(tmp_path_factory.mktemp("val50k"), val_images)
    return build_val({"tar": root}, "tar", tmp_path_factory.mktemp("val50k-built"))


def build_tests(val_dataset, out_dir, **options):
    options.setdefault("progress", False)
    return build_dataset("ood_unit_tests", out_dir, options=BuildOptions(inputs=[val_dataset], **options))


@pytest.fixture(scope="module")
def built(val_dataset, tmp_path_factory):
    return build_tests(val_dataset, tmp_path_factory.mktemp("unit-tests"))


def rows(folder):
    return pq.read_table(sorted((folder / "default").glob("*.parquet"))).to_pylist()


def decode(data):
    with Image.open(io.BytesIO(data)) as image:
        return image.format, np.asarray(image.convert("RGB"))


def test_all_17_tests_use_exactly_the_released_source_indices(built, test_data, val_images, tmp_path):
    released = out.released_indices(test_data / "ninco/data/NINCO_OOD_unit_tests.csv")
    ds = load(built, "default", split="test", cache_dir=tmp_path)
    names = ds.features["test"].names
    assert ds.num_rows == 6_800 and names == sorted(released)
    regenerated: dict[str, list[int]] = {}
    for test, index in zip(ds["test"], ds["source_index"], strict=True):
        regenerated.setdefault(names[test], []).append(index)
    assert regenerated == {test: sorted(indices) for test, indices in released.items()}
    ordered = fx.imagefolder_order(val_images)  # sorted wnid, then file name
    assert any(im.image_id != f"ILSVRC2012_val_{k + 1:08d}" for k, im in enumerate(ordered[:50]))
    for row in rows(built)[::97]:
        assert row["source_id"] == ordered[row["source_index"]].image_id


def test_size_format_and_pixels_follow_the_source(built, val_images):
    ordered = fx.imagefolder_order(val_images)
    checked_perm = 0
    for row in rows(built):
        source = ordered[row["source_index"]]
        fmt, pixels = decode(row["image"]["bytes"])
        source_rgb = decode(source.data)[1]
        assert pixels.shape == source_rgb.shape and (row["height"], row["width"]) == source_rgb.shape[:2]
        assert (fmt, row["file_format"]) == (("PNG", "png") if row["source_index"] % 2 == 0 else ("JPEG", "jpg"))
        assert row["file_name"] == f"{row['id']}.{row['file_format']}" == row["image"]["path"]
        if row["id"].startswith("pixel_perm_") and fmt == "PNG":
            before = np.sort(source_rgb.reshape(-1, 3).copy().view("u1,u1,u1"), axis=0)
            after = np.sort(pixels.reshape(-1, 3).copy().view("u1,u1,u1"), axis=0)
            assert (before == after).all(), row["id"]  # the source's own pixels, shuffled
            checked_perm += 1
    assert checked_perm > 150


def test_rows_are_the_pure_generator_output(built, val_images):
    ordered = fx.imagefolder_order(val_images)
    by_id = {row["id"]: row for row in rows(built)}
    for key in ("low_freq_colorrange_00228", "low_freq_pixel_perm_00093", "blobs_00055", "Gaussian_00217"):
        row = by_id[key]
        test, index = key.rsplit("_", 1)
        pixels = decode(ordered[int(index)].data)[1] / 255 if out.UNIT_TESTS[test].needs_pixels else None
        data, _extension, params = out.generate_image(test, int(index), row["height"], row["width"], pixels, seed=0)
        assert row["image"]["bytes"] == data and json.loads(row["params"]) == params


def test_two_builds_are_byte_identical_and_the_seed_matters(built, val_dataset, tmp_path):
    again = build_tests(val_dataset, tmp_path / "a", num_proc=2)
    assert folder_bytes(again) == folder_bytes(built)
    other = build_tests(val_dataset, tmp_path / "b", seed=1, builder_options={"tests": "uni,Gaussian"})
    assert other.name == "ood_unit_tests-1.0.0-seed1-" + other.name.rsplit("-", 1)[1]
    seeded = {r["id"]: r["image"]["bytes"] for r in rows(other)}
    original = {r["id"]: r["image"]["bytes"] for r in rows(built)}
    assert set(seeded) < set(original) and all(seeded[k] != original[k] for k in seeded)


def test_subset_count_and_paper_variant(val_dataset, tmp_path):
    folder = build_tests(
        val_dataset,
        tmp_path,
        builder_options={"tests": "low_freq_colorrange,white", "images_per_test": 3, "smooth_color": "paper"},
    )
    built_rows = rows(folder)
    assert [r["id"].rsplit("_", 1)[0] for r in built_rows] == ["low_freq_colorrange"] * 3 + ["white"] * 3
    for row in built_rows:
        test = row["id"].rsplit("_", 1)[0]
        assert row["source_index"] in out.source_indices(test).tolist()  # a subset of the released indices
    assert {json.loads(r["params"]).get("variant") for r in built_rows[:3]} == {"paper"}
    info = json.loads((folder / "build_info.json").read_text())["configs"]["default"]
    assert info["protocol"]["ood"]["groups"] == ["low_freq_colorrange", "white"]
    grid = Image.open(folder / "default" / out.GRID_FILE)
    card = (folder / "README.md").read_text()
    assert grid.format == "PNG" and "default/ood_unit_tests_grid.png" in card and not UNRENDERED.search(card)


def test_any_image_folder_as_source(tmp_path):
    root = tmp_path / "images"
    rng = np.random.default_rng(0)
    made = {}
    for cls in ("zebra", "aardvark", "mole"):
        for k in range(4):
            (root / cls).mkdir(parents=True, exist_ok=True)
            pixels = rng.integers(0, 256, size=(7 + k, 9 + k, 3), dtype=np.uint8)
            path = root / cls / f"img{3 - k}.png"
            Image.fromarray(pixels).save(path)
            made[f"{cls}/{path.name}"] = pixels
    (root / "notes.txt").write_text("ignored")
    folder = build_dataset(
        "ood_unit_tests",
        tmp_path / "out",
        options=BuildOptions(
            builder_options={"source": "image_folder", "tests": "pixel_perm,grey", "images_per_test": 5},
            manual_dir=root,
            progress=False,
        ),
    )
    order = sorted(made, key=lambda p: (p.split("/")[0], p))  # ImageFolder: class, then file name
    for row in rows(folder):
        assert row["source_id"] == order[row["source_index"]]
        source = made[row["source_id"]]
        assert (row["height"], row["width"]) == source.shape[:2]
        if row["id"].startswith("pixel_perm") and row["file_format"] == "png":
            pixels = decode(row["image"]["bytes"])[1]
            assert (
                np.sort(pixels.reshape(-1, 3).copy().view("u1,u1,u1"), axis=0)
                == np.sort(source.reshape(-1, 3).copy().view("u1,u1,u1"), axis=0)
            ).all()
    assert (
        sorted(r["source_index"] for r in rows(folder) if r["id"].startswith("grey"))
        == out.source_indices("grey", num_source=12, count=5).tolist()
    )


# -- bad inputs ---------------------------------------------------------------------------------------------


def test_without_an_input_dataset_the_error_says_how_to_build_one(tmp_path):
    with pytest.raises(
        ManualFileMissing,
        match="needs a built imagenet_val dataset: pass its folder as inputs.*imagenet-suite build imagenet_val",
    ):
        build_dataset("ood_unit_tests", tmp_path, options=BuildOptions(progress=False))


def test_bad_options_are_named(val_dataset, tmp_path):
    with pytest.raises(ConfigError, match=r"option tests='uni,pink'.*unknown test\(s\) \['pink'\]"):
        build_tests(val_dataset, tmp_path, builder_options={"tests": "uni,pink"})
    with pytest.raises(ConfigError, match="smooth_color='both'"):
        build_tests(val_dataset, tmp_path, builder_options={"smooth_color": "both"})
    with pytest.raises(ConfigError, match="images_per_test=50001: the source has only 50000 images"):
        build_tests(val_dataset, tmp_path, builder_options={"images_per_test": 50_001})


def test_unreadable_image_in_a_folder_is_named(tmp_path):
    root = tmp_path / "images" / "a"
    root.mkdir(parents=True)
    Image.fromarray(np.zeros((4, 4, 3), dtype=np.uint8)).save(root / "good.png")
    (root / "broken.jpg").write_bytes(b"\xff\xd8 not a jpeg")
    with pytest.raises(InvalidSourceData, match="broken.jpg: expected a JPEG marker at byte 2"):
        build_dataset(
            "ood_unit_tests",
            tmp_path / "out",
            options=BuildOptions(
                builder_options={"source": "image_folder", "tests": "grey", "images_per_test": 2},
                manual_dir=tmp_path / "images",
                progress=False,
            ),
        )
    with pytest.raises(ManualFileMissing, match="source=image_folder needs manual_dir: a folder of images"):
        build_dataset(
            "ood_unit_tests",
            tmp_path / "out2",
            options=BuildOptions(builder_options={"source": "image_folder"}, progress=False),
        )
