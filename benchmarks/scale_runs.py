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
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np

from imagenet_suite.scoring.metrics.uncertainty import percentile_interval
from imagenet_suite.scoring.summary.intervals import (
    ReportReplicates,
    headline_numbers,
    number_path,
    read_correct,
    read_replicates,
    value_at,
    write_uncertainty,
)
from imagenet_suite.scoring.summary.suite_json import SUITE_JSON, read_suite


def write_runs(run_dir: Path, out: Path, count: int, seed: int = 0) -> list[Path]:
    """``count`` run folders under ``out`` made from the run folder ``run_dir`` (see the module docstring)."""
    base = read_suite(run_dir / SUITE_JSON)
    uncertainty = base["summary"]["uncertainty"]
    replicates = read_replicates(run_dir, uncertainty)
    correct = {
        key: read_correct(run_dir, uncertainty, key, base["summary"]["accuracies"][key]["value"])
        for key in uncertainty["files"]["correct"]
    }
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
        (folder / SUITE_JSON).write_text(json.dumps(suite, indent=1) + "\n")
        folders.append(folder)
    return folders


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
