"""popular_ood: the NINCO join against the REAL review logs and released list, both layouts, the index check,
Species read from its folder.

The fixtures (tests/fixtures/popular_ood.py) hold every image the real NINCO logs name, so the counts
below are the real ones, read from tests/data/ninco, never typed in.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from imagenet_suite.builders._species import SUPERCLASSES
from imagenet_suite.builders.ninco import RepoData
from imagenet_suite.builders.popular_ood import TEXTURES43_REMOVED, ninco_columns
from imagenet_suite.core.ninco_review_logs import SUBSAMPLED_LOGS, parse_review_log
from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.core.sources import read_pins_file
from imagenet_suite.errors import ConfigError, InvalidSourceData, ManualFileMissing
from tests.fixtures import popular_ood as fx
from tests.helpers import one_line

LOGS = {
    "inaturalist": "OOD_iNaturalist_MOS",
    "places": "OOD_Places_MOS",
    "textures": "textures",
    "openimage_o": "openimage_o",
    "imagenet_o": "imagenet_o",
    "species": "all_species",
}


def build(manual: Path, out: Path, configs: list[str], **options) -> Path:
    pins = read_pins_file(manual / "checksums.tsv") if (manual / "checksums.tsv").exists() else None
    return build_dataset(
        "popular_ood",
        out,
        configs,
        options=BuildOptions(
            manual_dir=manual,
            pins=pins,
            builder_options={"strict_counts": False, **options},
            shard_size=5000,
            offline=True,
            progress=False,
        ),
    )


def rows(folder: Path, config: str) -> dict[str, dict]:
    """id -> row (image bytes included) of a built config."""
    table = pa.concat_tables([pq.read_table(f) for f in sorted((folder / config).glob("*.parquet"))])
    return {row["id"]: row for row in table.to_pylist()}


def released(dataset: str) -> set[str]:
    """File names of ``dataset`` in the real NINCO_popular_datasets_subsamples.csv."""
    with open(fx.NINCO_DATA / "data" / "NINCO_popular_datasets_subsamples.csv", newline="") as handle:
        return {r["image_location"].rsplit("/", 1)[1] for r in csv.DictReader(handle) if r["class"] == dataset}


@pytest.fixture(scope="module")
def original(tmp_path_factory) -> Path:
    """The original releases holding every logged image (plus fillers), with OpenOOD's lists."""
    root = tmp_path_factory.mktemp("popular-original")
    return build(fx.write_original_manual_dir(root / "manual", lists=True), root / "out", list(LOGS))


@pytest.mark.parametrize("config", list(LOGS))
def test_the_ninco_columns_equal_the_real_log_and_released_list(original, config):
    built = rows(original, config)
    cleaned = {r["ninco_file_name"] for r in built.values() if r["ninco_cleaned"]}
    assert cleaned == released(SUBSAMPLED_LOGS[LOGS[config]])  # 383 / 153 / 288 / 368 / 309 / 172 files
    assert sum(r["ninco_sample"] for r in built.values()) == len(fx.logged_ids(config))  # 400 / 405 / 400 / ... / 400
    assert all(
        r["ninco_file_name"] == "" and r["ninco_decision"] == "" for r in built.values() if not r["ninco_sample"]
    )
    assert all(r["ninco_file_name"] for r in built.values() if r["ninco_cleaned"])


def test_the_last_decision_of_a_twice_logged_image_wins(original):
    log = (fx.NINCO_DATA / "data/cleaning_annotations/annotations_subsampled_datasets/OOD_Places_MOS.csv").read_text()
    entries = parse_review_log(log, "OOD_Places_MOS", "subsampled_dataset", "log")
    changed = {r["image_location"] for r in entries if r["superseded"]}
    built = rows(original, "places")
    for entry in (r for r in entries if r["image_location"] in changed and not r["superseded"]):
        parts = entry["image_location"].split("/")
        assert built[f"images/{parts[2]}_{parts[3]}"]["ninco_decision"] == entry["decision"]


def test_both_layouts_give_the_same_rows_but_file_name(original, tmp_path):
    manual = tmp_path / "manual"
    for config in ("inaturalist", "textures"):
        ids = fx.set_ids(config)
        fx.write_openood_set(manual, config, fx.textures43(ids) if config == "textures" else ids)
    fx.write_mos(manual, "inaturalist", fx.set_ids("inaturalist"))  # both layouts of iNaturalist in one folder
    fx.copy_ninco_repository(fx.NINCO_DATA, manual / "NINCO")
    with pytest.raises(ConfigError, match=r"inaturalist: manual_dir holds both .* layout=original or layout=openood"):
        build(manual, tmp_path / "ambiguous", ["inaturalist"])
    openood = build(manual, tmp_path / "out", ["inaturalist", "textures"], layout="openood")
    for config in ("inaturalist", "textures"):
        new, old = rows(openood, config), rows(original, config)
        assert new and set(new) <= set(old)
        for image_id, row in new.items():
            assert row["file_name"].startswith("images_") and old[image_id]["file_name"] != row["file_name"]
            assert {**row, "file_name": "", "image": row["image"]["bytes"]} == {
                **old[image_id],
                "file_name": "",
                "image": old[image_id]["image"]["bytes"],
            }
    removed = [i for i in fx.logged_ids("textures") if i.split("/")[0] in TEXTURES43_REMOVED]
    context = json.loads((openood / "build_info.json").read_text())["configs"]["textures"]["card_context"]
    assert removed and context["textures_ninco_logged_absent"] == len(removed)


def test_the_openood_id_split_holds_the_given_val_ids(tmp_path):
    val_ids = [f"ILSVRC2012_val_{k:08d}" for k in (9, 2, 24235, 4, 5)]
    manual = tmp_path / "manual"
    fx.write_id_split(manual, val_ids)
    built = rows(build(manual, tmp_path / "out", ["openood_id_split"]), "openood_id_split")
    assert list(built) == sorted(val_ids)
    assert {i: r["openood_v15"] for i, r in built.items()} == {
        i: "val" if k % 4 == 3 else "test" for k, i in enumerate(val_ids)
    }


def _repo(log_text: str) -> RepoData:
    entries = parse_review_log(log_text, "textures", "subsampled_dataset", "textures.csv")
    empty = {"ninco": [], "popular_subsamples": []}
    return RepoData(SimpleNamespace(path=Path("NINCO")), empty, {}, entries)


LISTING = [f"banded/banded_{k:04d}.jpg" for k in range(1, 6)]


def test_with_strict_counts_every_index_is_the_images_position():
    good = "index,image_location,decision\n1,textures/images/banded/banded_0002.jpg,o\n4,textures/images/banded/banded_0005.jpg,i\n"
    columns, absent = ninco_columns(_repo(good), "textures", LISTING, exact=True, absent_ok=lambda _: False)
    assert absent == 0 and {i: c["ninco_decision"] for i, c in columns.items()} == {
        "banded/banded_0002.jpg": "o",
        "banded/banded_0005.jpg": "i",
    }
    shifted = good.replace("4,textures", "3,textures")
    with pytest.raises(
        InvalidSourceData, match=r"textures.csv:3: index 3 but 'banded/banded_0005.jpg' is at position 4"
    ):
        ninco_columns(_repo(shifted), "textures", LISTING, exact=True, absent_ok=lambda _: False)
    ninco_columns(_repo(shifted), "textures", LISTING, exact=False, absent_ok=lambda _: False)  # order agrees
    with pytest.raises(InvalidSourceData, match=r"textures.csv:3: .*banded_0005.jpg' is not in this release"):
        ninco_columns(_repo(good), "textures", LISTING[:4], exact=False, absent_ok=lambda _: False)


def test_imagenet_o_rows_equal_the_imagenet_o_builders_plus_the_joins(original, tmp_path):
    """Same tar, same ids, bytes, file names and ``filtered_against`` as the ``imagenet_o`` builder; the
    README of the release is skipped; every image is in OpenOOD's test list."""
    manual = tmp_path / "manual"
    fx.write_imagenet_o(manual, fx.set_ids("imagenet_o"))
    alone = build_dataset(
        "imagenet_o",
        tmp_path / "alone",
        ["default"],
        options=BuildOptions(manual_dir=manual, builder_options={"strict_counts": False}, offline=True, progress=False),
    )
    reference, built = rows(alone, "default"), rows(original, "imagenet_o")
    assert list(built) == list(reference) == fx.set_ids("imagenet_o")
    for image_id, row in built.items():
        same = ("file_name", "image", "filtered_against", "width", "height")
        assert {k: row[k] for k in same} == {k: reference[image_id][k] for k in same}
        assert row["openood_v15"] == "test" and row["openood_v15_test"]
    assert built["n01443537/zebra_0.99.JPEG"]["filtered_against"] == 1  # goldfish: the 2nd sorted wnid
    assert built["n01443537/zebra_0.99.JPEG"]["file_name"] == "imagenet-o/n01443537/zebra_0.99.JPEG"


def test_imagenet_o_from_openood_gives_the_original_rows(original, tmp_path):
    manual = tmp_path / "manual"
    fx.write_openood_set(manual, "imagenet_o", fx.set_ids("imagenet_o"))
    fx.copy_ninco_repository(fx.NINCO_DATA, manual / "NINCO")
    built, old = rows(build(manual, tmp_path / "out", ["imagenet_o"]), "imagenet_o"), rows(original, "imagenet_o")
    assert list(built) == list(old)
    for image_id, row in built.items():
        assert row["file_name"] == f"images_largescale/imagenet_o/{image_id}"
        same = {**row, "file_name": "", "image": row["image"]["bytes"]}
        assert same == {**old[image_id], "file_name": "", "image": old[image_id]["image"]["bytes"]}


# -- bad inputs through the command line: one line, exit 2 ---------------------------------------------------


@pytest.fixture(scope="module")
def small_manual_dirs(tmp_path_factory) -> dict[str, Path]:
    """iNaturalist in OpenOOD's layout and OpenImage-O in ViM's (list + ``test/`` folder), each with a NINCO
    clone: the two ways a listed image is read straight from a folder of --manual-dir."""
    root = tmp_path_factory.mktemp("popular-small")
    openood = root / "openood"
    fx.write_openood_set(openood, "inaturalist", fx.set_ids("inaturalist", 6))
    fx.copy_ninco_repository(fx.NINCO_DATA, openood / "NINCO")
    vim = fx.write_vim(root / "vim", fx.set_ids("openimage_o", 6))
    fx.copy_ninco_repository(fx.NINCO_DATA, vim / "NINCO")
    fx.write_checksums(vim, ["openimage_o.txt"])
    return {"inaturalist": openood, "openimage_o": vim}


def _build_argv(manual: Path, config: str, out: Path) -> list[str]:
    pins = ["--pins", str(manual / "checksums.tsv")] if (manual / "checksums.tsv").exists() else []
    return ["build", "popular_ood", "--config", config, "--manual-dir", str(manual), *pins,
            "--option", "strict_counts=false", "--offline", "--no-progress", "--out", str(out)]  # fmt: skip


def _copy_with_first_image_replaced(manual: Path, config: str, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of ``manual`` and the path of its first listed image (removed, for the test to replace)."""
    copy = Path(shutil.copytree(manual, tmp_path / "manual"))
    folder = copy / ("images_largescale/inaturalist/images" if config == "inaturalist" else "test")
    image = sorted(folder.iterdir())[0]
    image.unlink()
    return copy, image


@pytest.mark.parametrize("config", ["inaturalist", "openimage_o"])
@pytest.mark.parametrize("target", ["a JPEG", "a text file"])
def test_a_listed_image_symlinked_out_of_the_manual_dir_is_refused(small_manual_dirs, config, target, tmp_path, capsys):
    """As docs/building.md says (and imagenet_train does): never built from the file outside."""
    manual, image = _copy_with_first_image_replaced(small_manual_dirs[config], config, tmp_path)
    outside = tmp_path / ("outside.jpg" if target == "a JPEG" else "outside.txt")
    outside.write_bytes(fx.image_bytes("anything") if target == "a JPEG" else b"not an image\n")
    image.symlink_to(outside)
    err = one_line(capsys, _build_argv(manual, config, tmp_path / "out"))
    assert f"{image} is a symlink to {outside}, outside " in err and "symlinks leaving" in err, err
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("*.parquet"))


def test_a_listed_file_that_is_no_image_is_named_without_pillows_buffer(small_manual_dirs, tmp_path, capsys):
    manual, image = _copy_with_first_image_replaced(small_manual_dirs["inaturalist"], "inaturalist", tmp_path)
    image.write_bytes(b"not an image\n")
    err = one_line(capsys, _build_argv(manual, "inaturalist", tmp_path / "out"))
    assert f"images/{image.name}: not a readable image (not an image format Pillow knows)" in err, err
    assert "BytesIO" not in err and "0x" not in err


def test_an_openood_list_that_is_not_utf8_is_named_with_its_line(small_manual_dirs, tmp_path, capsys):
    manual = Path(shutil.copytree(small_manual_dirs["inaturalist"], tmp_path / "manual"))
    listed = manual / "benchmark_imglist/imagenet/test_inaturalist.txt"
    lines = listed.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b"images/", b"images/caf\xe9-", 1)  # Latin-1, as a careless editor saves it
    listed.write_bytes(b"".join(lines))
    column = lines[2].index(b"\xe9") + 1
    err = one_line(capsys, _build_argv(manual, "inaturalist", tmp_path / "out"))
    assert re.search(
        rf"benchmark_imglist:imagenet/test_inaturalist.txt:3: byte 0xe9 at column {column} is not UTF-8; expected "
        r"an OpenOOD image list \('<folder>/<path> <int label>' lines\), UTF-8 encoded$",
        err,
    ), err


def test_vims_list_that_is_not_utf8_is_named_with_its_line(small_manual_dirs, tmp_path, capsys):
    manual = Path(shutil.copytree(small_manual_dirs["openimage_o"], tmp_path / "manual"))
    listed = manual / "openimage_o.txt"
    listed.write_bytes(listed.read_bytes() + b"\xff\xfe.jpg\n")
    fx.write_checksums(manual, ["openimage_o.txt"])
    lines = len(listed.read_bytes().splitlines())
    err = one_line(capsys, _build_argv(manual, "openimage_o", tmp_path / "out"))
    assert f"openimage_o.txt:{lines}: byte 0xff at column 1 is not UTF-8; expected ViM's OpenImage-O list" in err, err


# -- Species: a species/ folder in --manual-dir, NINCO's all_species.csv ---------------------------------------


def _folder_sha256(folder: Path) -> str:
    """The fingerprint of a folder source, computed here: sha256 of the sorted '<path>\t<sha256>' lines."""
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    lines = "".join(f"{f}\t{hashlib.sha256((folder / f).read_bytes()).hexdigest()}\n" for f in files)
    return hashlib.sha256(lines.encode()).hexdigest()


@pytest.fixture(scope="module")
def species_manual(tmp_path_factory) -> Path:
    """Every image of the real all_species.csv (400, in the 10 superclasses) and 3 more, with a NINCO clone."""
    manual = tmp_path_factory.mktemp("species") / "manual"
    fx.write_species(manual, fx.set_ids("species"))
    fx.copy_ninco_repository(fx.NINCO_DATA, manual / "NINCO")
    return manual


def test_species_builds_with_strict_counts_every_index_its_position_among_the_logged(species_manual, tmp_path):
    """strict_counts on (the default): the 10 superclass folders are there and every index of the real log is its
    image's position among the 400 logged images (the log's own order); rows are the files, byte for byte."""
    logged = fx.logged_ids("species")
    assert len(logged) == 400 and {i.split("/")[0] for i in logged} == set(SUPERCLASSES)
    built = build(species_manual, tmp_path / "out", ["species"], strict_counts=True)
    table = rows(built, "species")
    assert list(table) == fx.set_ids("species")
    for image_id, row in table.items():
        assert row["file_name"] == f"species/{image_id}"
        assert row["image"]["bytes"] == (species_manual / "species" / image_id).read_bytes()
    assert table["mammals/zalophus_wollebaeki/1000002.png"]["image"]["bytes"].startswith(b"\x89PNG")  # as released
    log = (fx.NINCO_DATA / "data/cleaning_annotations/annotations_subsampled_datasets/all_species.csv").read_text()
    decisions = {r["image_location"]: r["decision"] for r in csv.DictReader(log.splitlines())}
    assert {i: r["ninco_decision"] for i, r in table.items() if r["ninco_sample"]} == {
        loc.removeprefix("species/"): d for loc, d in decisions.items()
    }
    record = json.loads((built / "build_info.json").read_text())["configs"]["species"]["sources"]["species"]
    assert record["kind"] == "folder" and record["sha256"] == _folder_sha256(species_manual / "species")


def test_species_refuses_a_partial_copy_and_a_log_out_of_order(species_manual, tmp_path):
    partial = Path(shutil.copytree(species_manual, tmp_path / "partial"))
    shutil.rmtree(partial / "species" / "protozoa")
    with pytest.raises(
        InvalidSourceData, match=r"species: the superclass folders are not Species' 10 \(missing protozoa\)"
    ):
        build(partial, tmp_path / "out", ["species"], strict_counts=True)
    built = rows(build(partial, tmp_path / "lenient", ["species"]), "species")  # strict_counts=false: built anyway
    present = [i for i in fx.logged_ids("species") if not i.startswith("protozoa/")]
    assert sum(r["ninco_sample"] for r in built.values()) == len(present) < 400  # the log's protozoa are absent
    repo = _species_repo("0,species/fish/a/1.jpg,o\n1,species/fish/b/2.jpg,i\n")
    listing = ["fish/a/1.jpg", "fish/aa/0.jpg", "fish/b/2.jpg"]  # a non-logged image between them: positions 0, 1
    columns, _ = ninco_columns(repo, "species", listing, exact=True, absent_ok=lambda _: False)
    assert {i: c["ninco_decision"] for i, c in columns.items()} == {"fish/a/1.jpg": "o", "fish/b/2.jpg": "i"}
    swapped = _species_repo("1,species/fish/a/1.jpg,o\n0,species/fish/b/2.jpg,i\n")
    with pytest.raises(
        InvalidSourceData,
        match=r"all_species.csv:2: index 1 but 'fish/a/1.jpg' is at position 0 of the sorted logged images",
    ):
        ninco_columns(swapped, "species", listing, exact=False, absent_ok=lambda _: False)


def _species_repo(rows_text: str) -> RepoData:
    entries = parse_review_log("index,image_location,decision\n" + rows_text, "all_species", "subsampled_dataset", "x")
    return RepoData(SimpleNamespace(path=Path("NINCO")), {"ninco": [], "popular_subsamples": []}, {}, entries)


def test_species_without_its_folder_says_how_to_get_it(tmp_path, capsys):
    manual = tmp_path / "manual"
    fx.copy_ninco_repository(fx.NINCO_DATA, manual / "NINCO")
    with pytest.raises(
        ManualFileMissing, match=r"species/ is not in manual_dir: download the Google Drive folder https://drive"
    ):
        build(manual, tmp_path / "out", ["species"])
    err = one_line(capsys, _build_argv(manual, "species", tmp_path / "out"))
    assert "species/ is not in --manual-dir: " in err and "species/<superclass>/<species>/<image>" in err, err
