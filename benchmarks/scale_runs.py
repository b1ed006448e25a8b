"""Synthetic run folders for the leaderboard stage of ``bench_suite_scale.py``: copies of one real run of
``imagenet-suite evaluate`` with perturbed numbers, each one a run the leaderboard accepts.

Run ``i`` (:func:`write_runs`) gets a suite.json whose model is ``synthetic_<i>.py:make`` and whose headline
numbers are the real run's, moved: every dataset with per-image correctness (``uncertainty/<key>.parquet``)
has a seeded few percent of its images flipped, and its accuracy becomes the new share; every other number
with an interval becomes one of its bootstrap replicates' quantiles (between the 10th and the 90th, seeded:
a value within the number's bounds, e.g. an AUROC in [0, 1], and within its interval), its replicates kept.
The replicates of each accuracy are moved by the same amount as the accuracy (clipped to [0, 1]), and the files are written by the library's own writer
(:func:`~imagenet_suite.scoring.summary.intervals.write_uncertainty`), so the sha256 and percentile intervals
recorded in suite.json match them as the leaderboard checks. Numbers without an interval (e.g. the NINCO
unit tests failed) are left as they are: the leaderboard's work does not depend on their values.

With ``real_sizes`` (:class:`RealSizes`: the base run's scale, e.g. 0.002), the base is first grown to what a
run at the real image counts writes, in the parts whose size the leaderboard's work follows: each per-image
correctness file to its split's count at scale 1 (``rows / scale``; ImageNet-M's 68 images at most), its new
images given seeded correctness at the file's own share; each report's per-class accuracy rows to its
classes at scale 1 (1,000; 200 for ImageNet-A and -R; 113 for ObjectNet); the bootstrap replicates to
``resamples`` rows (drawn with replacement from the base's). The rest (NINCO's rows, the summary) is already
at its real size at any scale. The samples' digests are left as they are (the same in every run: what the
leaderboard compares).

The suite.json files are written as ``evaluate`` writes them now (format 4: each report's rows as columns), or
in format 3 (the rows a list of objects), which code from before format 4 reads too; :func:`rewrite_suites`
rewrites them in place from one to the other.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from imagenet_suite.scoring.metrics.paired_tests import percentile_interval
from imagenet_suite.scoring.summary.intervals import (
    ReportReplicates,
    headline_numbers,
    number_path,
    read_correct,
    read_replicates,
    value_at,
    write_uncertainty,
)
from imagenet_suite.scoring.summary.suite_json import SUITE_FORMAT_3, SUITE_JSON, read_suite, suite_file_bytes


@dataclass(frozen=True)
class RealSizes:
    """Grow the base run to the sizes of a run at the real image counts (module docstring): ``scale`` is the
    base run's (``bench_suite_scale.py --scale``), ``resamples`` the bootstrap's at scale 1."""

    scale: float
    resamples: int = 1000


CLASSES = {"imagenet_a": 200, "imagenet_r": 200, "objectnet": 113}  # per-class rows at scale 1; others 1,000
MOST_ROWS = {"imagenet_multilabel/images/imagenet_m": 68}  # a per-image file's rows at scale 1, where not rows/scale


def write_runs(
    run_dir: Path,
    out: Path,
    count: int,
    seed: int = 0,
    real_sizes: RealSizes | None = None,
    current_format: bool = True,
) -> list[Path]:
    """``count`` run folders under ``out`` made from the run folder ``run_dir`` (see the module docstring); their
    suite.json as ``evaluate`` writes it now, or (not ``current_format``) in format 3."""
    base = read_suite(run_dir / SUITE_JSON)
    uncertainty = base["summary"]["uncertainty"]
    replicates = read_replicates(run_dir, uncertainty)
    correct = {
        key: read_correct(run_dir, uncertainty, key, base["summary"]["accuracies"][key]["value"])
        for key in uncertainty["files"]["correct"]
    }
    if real_sizes is not None:
        replicates = _grown(base, replicates, correct, real_sizes, np.random.default_rng([seed, 2**32 - 1]))
    numbers = headline_numbers(base["summary"])
    folders = []
    for i in range(count):
        rng = np.random.default_rng([seed, i])
        suite = copy.deepcopy(base)
        suite["model"] = f"synthetic_{i:03d}.py:make"
        summary = suite["summary"]
        table = replicates.copy()
        replicated = {}
        for key, series in correct.items():
            flags = series.to_numpy().copy()
            flip = rng.random(len(flags)) < rng.uniform(0.0, 0.06)
            flags[flip] = ~flags[flip]
            replicated[key] = ReportReplicates(correct=(list(series.index), flags))
            old = summary["accuracies"][key]["value"]
            _move(summary, table, ("accuracies", key, "value"), float(flags.mean()) - old)
        for path, keys in numbers.items():
            if keys[:1] == ("accuracies",) and keys[1] in correct and keys[2] == "value":
                continue
            value = value_at(summary, keys)
            if path in table and isinstance(value, int | float):
                draws = table[path].to_numpy(dtype=float)
                if np.isfinite(draws).any():  # a value the real run's bootstrap gave: within the number's bounds
                    _move(summary, None, keys, float(np.nanquantile(draws, rng.uniform(0.1, 0.9))) - value)
        record = {name: value for name, value in summary["uncertainty"].items() if name != "files"}
        record["ci95"] = {path: list(percentile_interval(table[path].to_numpy())) for path in record["ci95"]}
        folder = out / f"run_{i:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        summary["uncertainty"] = write_uncertainty(folder, record, table, replicated, list(correct))
        _write_suite(folder, suite, current=current_format)
        folders.append(folder)
    return folders


def rewrite_suites(folders: list[Path], current: bool) -> None:
    """Each run's suite.json rewritten in place: ``current``, as ``evaluate`` writes it now
    (:func:`~imagenet_suite.scoring.summary.suite_json.suite_file_bytes`: format 4, the rows as columns); else in
    format 3, as :func:`write_runs` writes it."""
    for folder in folders:
        _write_suite(folder, read_suite(folder / SUITE_JSON), current)


def _write_suite(folder: Path, suite: dict, current: bool) -> None:
    if current:
        (folder / SUITE_JSON).write_bytes(suite_file_bytes(suite))
    else:  # rows as a list of objects: what baselines before format 4 read
        (folder / SUITE_JSON).write_text(json.dumps({**suite, "format": SUITE_FORMAT_3}, indent=1) + "\n")


def _grown(base: dict, replicates, correct: dict, sizes: RealSizes, rng: np.random.Generator):
    """Grow ``base`` (its per-class rows, ``uncertainty.resamples``) and ``correct`` (in place) to the real sizes;
    return the replicates grown to ``sizes.resamples`` rows, the accuracies' moved with their new shares."""
    drawn = rng.integers(0, len(replicates), sizes.resamples)
    table = replicates.iloc[drawn].reset_index(drop=True)
    base["summary"]["uncertainty"]["resamples"] = sizes.resamples
    for key, series in correct.items():
        rows = min(round(len(series) / sizes.scale), MOST_ROWS.get(key, 2**62))
        extra = rows - len(series)
        if extra <= 0:
            continue
        flags = np.concatenate([series.to_numpy(), rng.random(extra) < float(series.mean())])
        ids = [*series.index, *(f"{key}#synthetic_{j:06d}" for j in range(extra))]
        correct[key] = pd.Series(flags, index=ids)
        old = base["summary"]["accuracies"][key]["value"]
        _move(base["summary"], table, ("accuracies", key, "value"), float(flags.mean()) - old)
    for key, report in base["datasets"].items():
        per_class = [row for row in report["metrics"] if row["metric"] == "per_class_accuracy"]
        classes = CLASSES.get(key.split("/")[0], 1000)
        report["metrics"] += [
            {**per_class[j % len(per_class)], "subgroup": f"synthetic_class_{j:04d}"}
            for j in range(max(0, classes - len(per_class)) if per_class else 0)
        ]
    return table


def _move(summary: dict, table, keys: tuple[str, ...], delta: float) -> None:
    """Add ``delta`` to the number at ``keys`` and to its replicates in ``table`` (if given and it has any)."""
    entry = summary
    for key in keys[:-1]:
        entry = entry[key]
    entry[keys[-1]] = entry[keys[-1]] + delta
    path = number_path(*keys)
    if table is not None and path in table:
        moved = table[path] + delta
        was = table[path].dropna()
        if len(was) and was.min() >= 0.0 and was.max() <= 1.0:  # a fraction's replicates stay fractions
            moved = moved.clip(0.0, 1.0)
        table[path] = moved
