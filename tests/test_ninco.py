"""ninco builder on a fixture NINCO_all.tar.gz built from the real released file lists (tiny images).

Counts (5,879 / 6,800 / 2,715 rows, 64 / 17 / 11 classes, 17 x 400), byte-exact images, the
unit-test source indices, the review-log join, determinism, and bad inputs that must be named.
"""

from __future__ import annotations

import csv
import shutil
from collections import Counter

import pyarrow.parquet as pq
import pytest

from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.core.sources import read_pins_file
from imagenet_suite.errors import ChecksumMismatch, InvalidSourceData, SourceError
from tests.fixtures import ninco_archive as fx
from tests.helpers import UNRENDERED, folder_bytes, load

CONFIGS = ("ninco", "unit_tests", "popular_subsamples", "review_logs")


@pytest.fixture(scope="module")
def ninco_data(test_data):
    return test_data / "ninco" / "data"


@pytest.fixture(scope="module")
def contents(ninco_data):
    return fx.fixture_contents(ninco_data)


@pytest.fixture(scope="module")
def manual(tmp_path_factory, test_data, contents):
    return fx.write_ninco_manual_dir(tmp_path_factory.mktemp("ninco-manual"), test_data / "ninco", contents)


def build(manual_dir, out, configs=CONFIGS, **options):
    pins = read_pins_file(manual_dir / "checksums.tsv") if (manual_dir / "checksums.tsv").exists() else None
    options = BuildOptions(manual_dir=manual_dir, pins=pins, progress=False, **options)
    return build_dataset("ninco", out, list(configs), options)


@pytest.fixture(scope="module")
def built(manual, tmp_path_factory):
    return build(manual, tmp_path_factory.mktemp("ninco-out"))


def table(folder, config):
    return pq.read_table(sorted((folder / config).glob("*.parquet")))


def released_rows(ninco_data, name):
    with open(ninco_data / name, newline="") as handle:
        return list(csv.reader(handle))[1:]


def test_counts_classes_and_tests(built, ninco_data, tmp_path):
    expected = {
        "ninco": (5_879, 64, "ood_class"),
        "unit_tests": (6_800, 17, "test"),
        "popular_subsamples": (2_715, 11, "source_dataset"),
    }
    for config, (rows, classes, column) in expected.items():
        ds = load(built, config, split="test", cache_dir=tmp_path)
        names = ds.features[column].names
        assert ds.num_rows == rows and len(names) == classes, config
        per_class = Counter(names[i] for i in ds[column])
        csv_name = fx.FILE_LISTS[list(expected).index(config)]
        assert per_class == Counter(row[1] for row in released_rows(ninco_data, csv_name)), config
    unit = table(built, "unit_tests").to_pydict()
    assert set(Counter(unit["test"]).values()) == {400}
    ninco = load(built, "ninco", split="test", cache_dir=tmp_path)
    assert len(set(ninco["id"])) == 5_879
    water = ninco.features["ood_class"].str2int("empty_water_dispencer")
    assert ninco["ood_class"].count(water) == 99  # not the paper's 100


def test_images_are_the_archive_members_byte_for_byte(built, contents):
    tops = {
        "ninco": ("NINCO_OOD_classes", "ood_class"),
        "unit_tests": ("NINCO_OOD_unit_tests", "test"),
        "popular_subsamples": ("NINCO_popular_datasets_subsamples", "source_dataset"),
    }
    seen = 0
    for config, (top, column) in tops.items():
        data = table(built, config).to_pydict()
        names = load_names(built, config, column)
        for file_name, image, label in zip(data["file_name"], data["image"], data[column], strict=True):
            location = f"{top}/{names[label]}/{file_name}"
            assert image["path"] == file_name
            assert image["bytes"] == contents[location], location
            seen += 1
    assert seen == len(contents) == 15_394


def test_class_metadata_from_the_repository(built):
    rows = table(built, "ninco").to_pylist()
    by_class = {r["file_name"].rsplit("_", 2)[0]: r for r in rows}
    donut = next(r for r in rows if r["file_name"].startswith("donuts_"))
    assert (donut["class_name"], donut["short_name"], donut["source_dataset"], donut["benchmark_status"]) == (
        "donuts",
        "Donuts",
        "Food-101",
        1,
    )
    amph = next(r for r in rows if r["file_name"].startswith("amphiuma_means_"))
    assert amph["class_name"] == "two-toed amphiuma (salamander)"
    assert Counter(r["source_dataset"] for r in {r["class_name"]: r for r in rows}.values()) == Counter(
        {
            "Species": 35,
            "scraped": 8,
            "Food-101": 7,
            "caltech-101": 4,
            "MyNursingHome": 4,
            "Places": 3,
            "iNat. Download": 2,
            "Imagenet-21k": 1,
        }
    )
    assert by_class and {r["image_format"] for r in rows} == {"JPEG", "PNG", "GIF"}
    popular = table(built, "popular_subsamples").to_pylist()
    assert {r["dataset_name"] for r in popular if r["file_name"].startswith("Places_")} == {
        "Places (MOS subset of Places365)"
    }


def test_unit_test_rows_carry_the_released_source_index(built, ninco_data):
    from imagenet_suite.builders.ood_unit_tests import released_indices

    rows = table(built, "unit_tests").to_pylist()
    names = load_names(built, "unit_tests", "test")
    by_test: dict[str, list[int]] = {}
    for row in rows:
        test = names[row["test"]]
        by_test.setdefault(test, []).append(row["source_index"])
        assert row["file_format"] == ("png" if row["source_index"] % 2 == 0 else "jpg")
        assert row["file_name"].endswith(f"_{test}_{row['source_index']:05d}.{row['file_format']}")
    assert by_test == {
        test: sorted(indices) for test, indices in released_indices(ninco_data / fx.FILE_LISTS[1]).items()
    }


def load_names(folder, config, column):
    from imagenet_suite.dataset.folder import DatasetFolder

    return DatasetFolder(folder).config_info(config)["features"][column]["names"]


def test_review_logs_join_the_released_files_on_file_name(built, ninco_data):
    logs = table(built, "review_logs").to_pylist()
    assert len(logs) == sum(
        len(released_rows(p.parent, p.name)) for p in (ninco_data / "cleaning_annotations").rglob("*.csv")
    )
    assert {r["decision"] for r in logs if r["log"] == "creme_brulee"} == {"i", "o", "u", "I", ""}  # kept as written
    released = {
        r["file_name"]
        for c in ("ninco", "popular_subsamples")
        for r in table(built, c).select(["file_name"]).to_pylist()
    }
    joined = {r["file_name"] for r in logs if r["in_release"]}
    assert joined <= released
    logged_classes = {r["released_class"] for r in logs}
    ninco = table(built, "ninco").to_pylist()
    names = load_names(built, "ninco", "ood_class")
    in_logged = {r["file_name"] for r in ninco if names[r["ood_class"]] in logged_classes}
    assert len(in_logged) == sum(1 for r in ninco if r["benchmark_status"] == 1) > 4_000  # status 1 = has a log
    assert in_logged <= joined
    for row in logs:
        if row["in_release"] and not row["superseded"]:
            assert row["decision"] == "o", row
    grunt = [r for r in logs if r["log"] == "haemulon_sciurus" and r["decision"] == "o"]
    assert (len(grunt), sum(r["in_release"] for r in grunt)) == (99, 96)


def test_card_reports_table1_contamination(built):
    card = (built / "README.md").read_text()
    for line in (
        "| OOD_Places_MOS | 405 | 225 | 153 | 27 | 0 | 0 | 59.5 |",
        "| all_species | 400 | 228 | 172 | 0 | 0 | 0 | 57.0 |",
    ):
        assert line in card
    assert not UNRENDERED.search(card)


def test_two_builds_are_byte_identical(built, manual, tmp_path):
    again = build(manual, tmp_path, configs=("popular_subsamples", "review_logs"), num_proc=2)
    first = {k: v for k, v in folder_bytes(built).items() if k.startswith(("popular_subsamples/", "review_logs/"))}
    second = {k: v for k, v in folder_bytes(again).items() if k.startswith(("popular_subsamples/", "review_logs/"))}
    assert len(first) == 4 and first == second


def test_repository_from_the_github_archive_gives_the_same_rows(built, test_data, tmp_path):
    from imagenet_suite.builders.ninco import NINCO_REPO, REPO_COMMIT

    manual = tmp_path / "m"
    manual.mkdir()
    fx.write_repo_archive(manual / NINCO_REPO.filename, test_data / "ninco", REPO_COMMIT)
    fx.write_checksums(manual, [NINCO_REPO.filename])
    folder = build(manual, tmp_path / "out", configs=("review_logs",))
    assert table(folder, "review_logs").equals(table(built, "review_logs"))


def test_repacked_archive_with_a_leading_folder(test_data, contents, tmp_path):
    manual = fx.write_ninco_manual_dir(tmp_path / "m", test_data / "ninco", contents, prefix="NINCO_all/")
    folder = build(manual, tmp_path / "out", configs=("popular_subsamples",))
    assert table(folder, "popular_subsamples").num_rows == 2_715
    assert (
        not UNRENDERED.search((folder / "README.md").read_text())
        and "| textures | 400 |" in (folder / "README.md").read_text()
    )


# -- bad inputs: each error names the file and what was expected ------------------------------------


def test_missing_released_file_is_named(test_data, contents, tmp_path):
    dropped = "NINCO_OOD_unit_tests/blobs/blobs_017_blobs_02052.png"
    assert dropped in contents
    smaller = {k: v for k, v in contents.items() if k != dropped}
    manual = fx.write_ninco_manual_dir(tmp_path / "m", test_data / "ninco", smaller)
    with pytest.raises(InvalidSourceData, match=f"NINCO_all.tar.gz: 1 released file.*missing.*{dropped}"):
        build(manual, tmp_path / "out", configs=("unit_tests",))


def test_unlisted_image_is_named(test_data, contents, tmp_path):
    extra = {
        **contents,
        "NINCO_OOD_classes/donuts/donuts_100_123.jpg": contents[next(iter(contents))],
        "NINCO_OOD_classes/donuts/notes.txt": b"not an image, ignored",
    }
    manual = fx.write_ninco_manual_dir(tmp_path / "m", test_data / "ninco", extra)
    with pytest.raises(InvalidSourceData, match="1 image.*not in the released file list.*donuts_100_123.jpg"):
        build(manual, tmp_path / "out", configs=("ninco",))


def test_corrupt_image_is_named(test_data, contents, tmp_path):
    bad = "NINCO_popular_datasets_subsamples/Textures/Textures_000_banded_0021.jpg"
    manual = fx.write_ninco_manual_dir(tmp_path / "m", test_data / "ninco", {**contents, bad: b"\xff\xd8 truncated"})
    with pytest.raises(InvalidSourceData, match=f"{bad}: expected a JPEG marker at byte 2"):
        build(manual, tmp_path / "out", configs=("popular_subsamples",))


def test_truncated_archive_is_named(manual, tmp_path):
    cut = tmp_path / "m"
    cut.mkdir()
    data = (manual / "NINCO_all.tar.gz").read_bytes()
    (cut / "NINCO_all.tar.gz").write_bytes(data[: len(data) // 2])
    fx.copy_ninco_repository(manual / "NINCO", cut / "NINCO")
    fx.write_checksums(cut, ["NINCO_all.tar.gz"])
    with pytest.raises(InvalidSourceData, match="NINCO_all.tar.gz: not a readable tar archive, or truncated"):
        build(cut, tmp_path / "out", configs=("popular_subsamples",))


def test_wrong_pin_names_both_hashes(manual, tmp_path):
    pins = read_pins_file(manual / "checksums.tsv")
    pins["NINCO_all.tar.gz"]["sha256"] = "0" * 64
    with pytest.raises(ChecksumMismatch, match="NINCO_all.tar.gz.*expected " + "0" * 64):
        build_dataset(
            "ninco",
            tmp_path,
            ["popular_subsamples"],
            options=BuildOptions(manual_dir=manual, pins=pins, progress=False),
        )


def test_offline_without_the_repository_names_it(tmp_path):
    with pytest.raises(
        SourceError, match=r"NINCO-8f42ce7b7cccf4304421e551dcbbfe64ce090a9a\.tar\.gz is not in the cache.*offline"
    ):
        build_dataset(
            "ninco",
            tmp_path / "out",
            ["review_logs"],
            options=BuildOptions(manual_dir=tmp_path, offline=True, progress=False),
        )


def test_offline_without_the_images_names_them(test_data, tmp_path):
    fx.copy_ninco_repository(test_data / "ninco", tmp_path / "NINCO")
    with pytest.raises(SourceError, match=r"NINCO_all\.tar\.gz is not in the cache.*zenodo\.org/record/8013288"):
        build_dataset(
            "ninco",
            tmp_path / "out",
            ["ninco"],
            options=BuildOptions(manual_dir=tmp_path, offline=True, progress=False),
        )


def test_file_list_that_does_not_match_the_release(test_data, tmp_path):
    clone = tmp_path / "m" / "NINCO"
    shutil.copytree(test_data / "ninco", clone)
    lines = (clone / "data" / "NINCO_popular_datasets_subsamples.csv").read_text().splitlines(keepends=True)
    (clone / "data" / "NINCO_popular_datasets_subsamples.csv").write_text("".join(lines[:-1]))
    with pytest.raises(
        InvalidSourceData,
        match="NINCO_popular_datasets_subsamples.csv: 2714 images in 11 classes; the NINCO release has 2,715",
    ):
        build(tmp_path / "m", tmp_path / "out", configs=("review_logs",))
