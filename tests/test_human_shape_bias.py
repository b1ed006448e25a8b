"""The human observers' shape bias (``scoring/metrics/human_shape_bias.py``, reference table
``geirhos2019_cue_conflict_humans``): the packaged counts are what this package's shape-bias formula gives on
model-vs-human's raw trial files — re-derived here from one observer's real file (tests/data/model-vs-human) —
and model-vs-human's pooling (sum the observers' counts, then divide) gives the plot's human points.
"""

from __future__ import annotations

import csv

import pytest

from imagenet_suite.errors import InvalidSourceData
from imagenet_suite.reference import load, table
from imagenet_suite.scoring.metrics.human_shape_bias import counts_per_category, pooled
from imagenet_suite.scoring.metrics.shape import CATEGORIES16
from imagenet_suite.scoring.presentation.figures.geirhos2019 import HUMAN_TABLE, human_shape_bias

RAW = "model-vs-human/cue-conflict_subject-01_session_1.csv"


def test_subject_01s_packaged_counts_are_rederived_from_its_raw_trials(test_data):
    with open(test_data / RAW, encoding="utf-8", newline="") as handle:
        trials = list(csv.DictReader(handle))
    assert len(trials) == 1280
    derived = counts_per_category(trials, source=RAW)
    packaged = load(HUMAN_TABLE).set_index(["subject", "category"])
    for category in CATEGORIES16:
        row = packaged.loc[("subject-01", category)]
        assert (row.shape_hits, row.texture_hits, row.conflict_images, row.excluded_images) == (
            derived[category].shape_hits,
            derived[category].texture_hits,
            derived[category].conflict_images,
            derived[category].excluded_images,
        )
    # hand-checked on the file: 80 trials a category; shape hits are the answers equal to `category` where the
    # texture differs, whatever the category
    conflict = [
        t for t in trials if t["category"] != t["imagename"].rsplit("-", 1)[-1].rstrip(".png").rstrip("0123456789")
    ]
    assert sum(c.conflict_images for c in derived.values()) == len(conflict)
    assert sum(c.shape_hits for c in derived.values()) == sum(t["object_response"] == t["category"] for t in conflict)


def test_the_humans_pooled_as_model_vs_human_pools_them():
    frame = load(HUMAN_TABLE)
    assert len(frame) == table(HUMAN_TABLE).rows == 160 and frame["subject"].nunique() == 10
    assert (frame.conflict_images + frame.excluded_images == 80).all()  # 1,280 trials = 16 categories x 80
    overall, per_category = human_shape_bias()
    totals = frame[["shape_hits", "texture_hits"]].sum()
    assert overall == pytest.approx(totals.shape_hits / (totals.shape_hits + totals.texture_hits))
    dog = frame[frame.category == "dog"]
    assert per_category["dog"] == dog.shape_hits.sum() / (dog.shape_hits.sum() + dog.texture_hits.sum())
    assert 0.9 < overall < 1.0  # humans decide by shape (Geirhos et al. 2019), unlike ImageNet CNNs


def test_an_unknown_category_names_the_file_and_line():
    rows = [
        {"subj": "s", "object_response": "cat", "category": "cat", "imagename": "1_cat1-dog1.png"},
        {"subj": "s", "object_response": "cat", "category": "zebra", "imagename": "2_zebra1-dog1.png"},
    ]
    with pytest.raises(InvalidSourceData, match=r"^trials.csv:3: 'zebra' is not one of the 16 categories"):
        counts_per_category(rows, source="trials.csv")
    assert pooled([]).value != pooled([]).value  # no hits: NaN
