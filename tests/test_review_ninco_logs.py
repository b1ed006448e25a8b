"""The NINCO authors' review logs imported onto a real ninco build: mapping, contamination rates, disagreements.

The ``popular_subsamples`` config is built by the ninco builder from a fixture NINCO_all.tar.gz (tiny
images at the real released paths) and the real repository data in ``tests/data/ninco``, then
loaded into FiftyOne; the real ``cleaning_annotations`` logs are imported onto it.
"""

from __future__ import annotations

import csv
from collections import Counter

import pytest

from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.core.sources import read_pins_file
from imagenet_suite.review.errors import DecisionTableError
from imagenet_suite.review.load import LoadOptions, load_for_review
from imagenet_suite.review.ninco_logs import import_authors_logs
from imagenet_suite.review.status import format_status, review_status
from tests.fixtures import ninco_archive as fx
from tests.fixtures.review_mongo import fiftyone_on_private_db

# NINCO's Table 1 (Bitterwolf et al. 2023): "% ID samples, p = ID/(ID+OOD)" of 400 random samples.
TABLE1 = {
    "OOD_Places_MOS": 59.5,
    "OOD_iNaturalist_MOS": 2.5,
    "all_species": 57.0,
    "imagenet_o": 20.2,
    "openimage_o": 4.9,
    "textures": 25.6,
}
RELEASED_AS = {
    "OOD_Places_MOS": "Places",
    "OOD_iNaturalist_MOS": "iNaturalist_OOD_Plants",
    "all_species": "Species",
    "imagenet_o": "ImageNet_O",
    "openimage_o": "OpenImage_O",
    "textures": "Textures",
}
CODES = {"i": "id", "o": "ood", "u": "unsure", "q": "q"}


@pytest.fixture(scope="module")
def logs(test_data):
    return test_data / "ninco" / "data" / "cleaning_annotations"


@pytest.fixture(scope="module")
def dataset(test_data, tmp_path_factory):
    fo = fiftyone_on_private_db()
    root = tmp_path_factory.mktemp("ninco-review")
    data = test_data / "ninco" / "data"
    contents = {
        loc: fx.tiny_image(loc, i)
        for i, loc in enumerate(fx.released_locations(data))
        if loc.startswith("NINCO_popular_datasets_subsamples/")
    }
    manual = fx.write_ninco_manual_dir(root / "manual", test_data / "ninco", contents)
    folder = build_dataset(
        "ninco",
        root / "out",
        ["popular_subsamples"],
        options=BuildOptions(manual_dir=manual, progress=False, pins=read_pins_file(manual / "checksums.tsv")),
    )
    loaded = load_for_review(folder, options=LoadOptions(name="ninco-popular", cache_dir=root / "cache"))
    return fo, loaded


def _raw_final_codes(logs, name):
    """The log read independently: last code per image, as written."""
    with open(logs / "annotations_subsampled_datasets" / f"{name}.csv", newline="", encoding="utf-8-sig") as handle:
        return {row["image_location"]: row["decision"] for row in csv.DictReader(handle)}


def test_logs_reproduce_the_papers_contamination_rates(dataset, logs):
    _fo, ds = dataset
    summary = import_authors_logs(ds, logs)

    for name, percent in TABLE1.items():
        assert round(100 * summary[name]["p_id"], 1) == percent, name
        raw = Counter(CODES.get(c.lower(), "other") for c in _raw_final_codes(logs, name).values())
        assert {k: summary[name][k] for k in ("id", "ood", "unsure", "q", "other")} == {
            k: raw[k] for k in ("id", "ood", "unsure", "q", "other")
        }, name
    assert round(100 * summary["OOD_Places_MOS"]["unsure_fraction"], 1) == 6.7  # "at most 6.7% (for PLACES)"
    assert summary["imagenet_o"]["q"] == 3  # q kept as its own value
    status = review_status(ds)
    assert status["authors_logs"]["textures"]["p_id"] == summary["textures"]["p_id"]
    assert "59.5" in format_status(status)


def test_released_images_get_the_authors_decision(dataset, logs):
    _fo, ds = dataset
    import_authors_logs(ds, logs)
    per_class = Counter(zip(ds.values("ground_truth.raw_label"), ds.values("authors_decision")))
    sizes = Counter(ds.values("ground_truth.raw_label"))
    for name, released in RELEASED_AS.items():
        kept = sum(1 for code in _raw_final_codes(logs, name).values() if code == "o")
        assert per_class[(released, "ood")] == sizes[released] == kept, name  # every released image was kept: "o"
    for unlogged in ("COOD", "SSB_easy", "SSB_hard", "360OpenSet", "ImageNet_1k_OOD_400_ood"):
        assert per_class[(unlogged, None)] == sizes[unlogged]


def test_disagreements_compare_our_decisions_with_the_logs(dataset, logs):
    fo, ds = dataset
    import_authors_logs(ds, logs)
    places = ds.match(fo.ViewField("ground_truth.raw_label") == "Places").values("row_id")[:3]
    ds.match(fo.ViewField("row_id").is_in(places[:2])).tag_samples("id")
    ds.match(fo.ViewField("row_id") == places[2]).tag_samples("ood")
    assert sorted(ds.load_saved_view("disagreements").values("row_id")) == sorted(places[:2])
    ds.untag_samples(["id", "ood"])


def test_logs_of_other_datasets_are_refused(dataset, logs):
    _fo, ds = dataset
    with pytest.raises(DecisionTableError, match="none of the .* logged images is a sample of FiftyOne dataset"):
        import_authors_logs(ds, logs / "annotations_potential_OOD_classes" / "donuts.csv")
