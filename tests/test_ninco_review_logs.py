"""read_review_logs on the authors' real cleaning_annotations (copied into tests/data).

The logs must reproduce the contamination rates of NINCO's Table 1 (Bitterwolf et al. 2023) and the
per-class row counts of the released logs, keep every decision code as written, and name malformed rows.
"""

from __future__ import annotations

import csv
import shutil

import pytest

from imagenet_suite.builders.ninco import parse_file_list
from imagenet_suite.core.ninco_review_logs import (
    SUBSAMPLED_LOGS,
    attach_released_files,
    read_review_logs,
    review_log_summary,
)
from imagenet_suite.errors import InvalidSourceData


@pytest.fixture(scope="module")
def annotations(test_data):
    return test_data / "ninco" / "data" / "cleaning_annotations"


@pytest.fixture(scope="module")
def logs(annotations):
    return read_review_logs(annotations)


def csv_rows(path):
    with open(path, newline="") as handle:
        return list(csv.reader(handle))[1:]


def test_every_row_of_every_log_as_written(logs, annotations):
    files = sorted(annotations.rglob("*.csv"))
    assert len(files) == 52 and len({r["log"] for r in logs}) == 52
    assert len(logs) == sum(len(csv_rows(f)) for f in files)
    donuts = [r for r in logs if r["log"] == "donuts"]
    first = csv_rows(annotations / "annotations_potential_OOD_classes" / "donuts.csv")[0]
    assert (donuts[0]["index"], donuts[0]["image_location"], donuts[0]["decision"]) == (
        int(first[0]),
        first[1],
        first[2],
    )
    assert donuts[0] == {
        "log": "donuts",
        "log_kind": "potential_ood_class",
        "released_class": "donuts",
        "row": 0,
        "index": 0,
        "image_location": "Food-101/images/donuts/520733.jpg",
        "decision": "i",
        "superseded": False,
    }
    codes = {r["decision"] for r in logs}
    assert {"i", "o", "u", "q"} < codes and {"", "I", "oo", "lo", "d", "b"} <= codes  # nothing normalized away
    places = next(r for r in logs if r["log"] == "OOD_Places_MOS")
    assert places["log_kind"] == "subsampled_dataset" and places["released_class"] == "Places"


# Raw row counts i / o / u / q / other of some class logs, counted in the released files
SPEC_COUNTS = {
    "Caracal caracal caracal": (0, 100, 4, 100, 0),
    "donuts": (183, 100, 15, 0, 0),
    "creme_brulee": (404, 99, 6, 0, 3),
    "haemulon_sciurus": (280, 99, 68, 0, 5),
    "spaghetti_bolognese": (928, 67, 5, 0, 0),
    "sepia_officinalis": (15, 100, 33, 111, 0),
    "darlingtonia_californica": (3, 100, 13, 0, 25),
    "s_sky": (94, 68, 21, 2, 0),
}


def test_class_logs_match_the_spec_counts(logs):
    for log, expected in SPEC_COUNTS.items():
        rows = [r["decision"] for r in logs if r["log"] == log]
        counts = tuple(rows.count(c) for c in "iouq") + (sum(c not in ("i", "o", "u", "q") for c in rows),)
        assert counts == expected, log


def test_subsampled_logs_reproduce_table1(logs):
    """Paper Table 1 "% ID" = i / (i + o) over the 400 inspected images, unclear ignored."""
    table1 = {
        "OOD_Places_MOS": 59.5,
        "OOD_iNaturalist_MOS": 2.5,
        "all_species": 57.0,
        "imagenet_o": 20.2,
        "openimage_o": 4.9,
        "textures": 25.6,
    }
    summary = review_log_summary(logs)
    for log, percent in table1.items():
        assert round(100 * summary[log]["p_id"], 1) == percent, log
    assert summary["OOD_Places_MOS"]["images"] == 405  # 410 rows, 5 images listed twice (last decision wins)
    unclear = {log: summary[log]["unclear"] for log in table1}
    assert max(unclear, key=unclear.get) == "OOD_Places_MOS" and round(100 * unclear["OOD_Places_MOS"], 1) == 6.7
    rows_only = [r for r in logs if r["log"] == "OOD_Places_MOS"]
    naive = sum(r["decision"] == "i" for r in rows_only) / sum(r["decision"] in ("i", "o") for r in rows_only)
    assert round(100 * naive, 1) == 59.3  # counting rows instead of images misses the paper's number


def test_superseded_rows_are_the_earlier_duplicates(logs):
    superseded = [r for r in logs if r["superseded"]]
    assert len(superseded) == 5 and {r["log"] for r in superseded} == {"OOD_Places_MOS"}
    ice = [r for r in logs if r["image_location"].endswith("i_ice_floe/00000212.jpg")]
    assert [(r["decision"], r["superseded"]) for r in ice] == [("i", True), ("o", False)]


def test_kept_rows_join_the_released_files(logs, test_data):
    data = test_data / "ninco" / "data"
    released = {}
    for name, top in (
        ("NINCO_OOD_classes.csv", "NINCO_OOD_classes"),
        ("NINCO_popular_datasets_subsamples.csv", "NINCO_popular_datasets_subsamples"),
    ):
        for f in parse_file_list((data / name).read_text(), top, name):
            released.setdefault(f.class_name, {})[f.original] = f.file_name
    rows = attach_released_files([dict(r) for r in logs], released)
    final = [r for r in rows if not r["superseded"]]
    for log in {r["log"] for r in rows}:
        kept = [r for r in final if r["log"] == log and r["decision"] == "o"]
        in_release = {r["file_name"] for r in final if r["log"] == log and r["in_release"]}
        assert all(r["decision"] == "o" for r in final if r["log"] == log and r["in_release"]), log
        cls = SUBSAMPLED_LOGS.get(log, log)
        assert in_release == set(released[cls].values()), log  # every released file has its log row
        assert len(kept) - len(in_release) == (3 if log == "haemulon_sciurus" else 0), log
    assert (
        next(r for r in rows if r["image_location"] == "Food-101/images/donuts/2842.jpg")["file_name"]
        == "donuts_000_2842.jpg"
    )
    assert (
        next(r for r in rows if r["image_location"].endswith("b_badlands/00000792.jpg"))["file_name"]
        == "Places_000_b_badlands_00000792.jpg"
    )


def test_malformed_logs_are_named(annotations, tmp_path):
    copy = tmp_path / "cleaning_annotations"
    shutil.copytree(annotations, copy)
    target = copy / "annotations_potential_OOD_classes" / "waffles.csv"
    lines = target.read_text().splitlines(keepends=True)
    lines[4] = "x,Food-101/images/waffles/1.jpg,o\n"
    target.write_text("".join(lines))
    with pytest.raises(InvalidSourceData, match=r"waffles.csv: line 5: expected '<index>,<image_location>,<decision>'"):
        read_review_logs(copy)
    target.write_text("idx,location,decision\n")
    with pytest.raises(InvalidSourceData, match="waffles.csv: expected the header index,image_location,decision"):
        read_review_logs(copy)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidSourceData, match="no review logs found"):
        read_review_logs(tmp_path / "empty")
