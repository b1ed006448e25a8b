"""``uncertainty/replicates.parquet`` read back: ``read_replicates`` (a DataFrame) and ``replicate_columns`` (the
arrays a leaderboard's paired tests take) give the same numbers and refuse the same files, each with one line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from imagenet_suite.errors import RunFolderError
from imagenet_suite.scoring.metrics.paired_tests import percentile_interval
from imagenet_suite.scoring.summary.uncertainty_files import read_replicates, replicate_columns, write_uncertainty

READERS = {"read_replicates": read_replicates, "replicate_columns": replicate_columns}


def _replicates(resamples: int = 200) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame(
        {"accuracies.imagenet_val.value": rng.uniform(0.7, 0.8, resamples), "quba.score": rng.normal(0, 1, resamples),
         "lca.imagenet_val.value": rng.integers(0, 9, resamples).astype(float)}
    )  # fmt: skip


def _written(run_dir, frame: pd.DataFrame, **changes) -> dict:
    """The ``summary.uncertainty`` record of ``frame`` written by evaluate's writer, its intervals computed from it;
    ``changes`` replace entries of the record."""
    record = write_uncertainty(run_dir, {"resamples": len(frame), "seed": 7}, frame, {}, [])
    ci95 = {}
    for column in frame.columns:
        if pd.api.types.is_numeric_dtype(frame[column]):
            ci95[column] = list(percentile_interval(frame[column].to_numpy()))
        else:
            ci95[column] = [0.0, 1.0]
    return {**record, "ci95": ci95, **changes}


def test_the_columns_are_the_frames(tmp_path):
    frame = _replicates()
    record = _written(tmp_path, frame)
    read = read_replicates(tmp_path, record)
    pd.testing.assert_frame_equal(read, frame)
    columns = replicate_columns(tmp_path, record)
    assert list(columns) == list(frame.columns)
    for name, values in columns.items():
        assert values.dtype == np.float64 and np.array_equal(values, frame[name].to_numpy())
    kept = replicate_columns(tmp_path, record, ["quba.score", "not.a.column", "accuracies.imagenet_val.value"])
    assert list(kept) == ["accuracies.imagenet_val.value", "quba.score"]  # the file's order


BAD = {
    "an interval the file does not give": (
        lambda frame, record: record["ci95"].update({"quba.score": [-9.0, 9.0]}),
        r"replicates.parquet: column quba.score gives the interval \[-?\d.*\], suite.json \[-9.0, 9.0\]$",
    ),
    "a number with an interval and no column": (
        lambda frame, record: record["ci95"].update({"ece.imagenet_val.value": [0.0, 0.1]}),
        r"replicates.parquet: no column ece.imagenet_val.value, which suite.json gives an interval$",
    ),
    "other resamples than suite.json's": (
        lambda frame, record: record.update(resamples=199),
        r"replicates.parquet: resamples/seed 200/7, suite.json says 199/7$",
    ),
    "a column of text": (
        lambda frame, record: None,
        r"replicates.parquet: column note holds (large_)?string, expected numbers \(float64\)$",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
@pytest.mark.parametrize("reader", list(READERS))
def test_a_file_that_disagrees_with_suite_json_is_one_line(tmp_path, case, reader):
    frame = _replicates()
    if case == "a column of text":
        frame["note"] = "x"
    record = _written(tmp_path, frame)
    damage, message = BAD[case]
    damage(frame, record)
    with pytest.raises(RunFolderError, match=message) as raised:
        READERS[reader](tmp_path, record)
    assert "\n" not in str(raised.value)
