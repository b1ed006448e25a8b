"""The runs of a leaderboard, read: each run folder's suite.json, checked, named, with only the rows a leaderboard
reads. This module imports no more than reading needs (pandas, not torch or matplotlib), so that the ``leaderboard``
command can start reading in worker processes (:func:`loading_suites`) and import the rest while they read."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from .suite_holding import Holding
from .suite_json import SUITE_JSON, reading_suites

UNREAD_ROWS = frozenset({"per_class_accuracy", "aupr_in", "aupr_out", "fpr95_openood_v15", "unit_test_failed"})
"""Report rows (by ``metric``) that no table, figure or page of the leaderboard reads: :func:`load_suites` drops
them once checked. They are most of a suite.json's rows (per-class accuracies; per OOD class, the AUPRs and
OpenOOD's FPR@95; each OOD unit test's verdict), so a leaderboard of many runs holds of each run what it reads.
``tests/test_leaderboard_scale.py`` fails when a module the leaderboard runs names one of them."""


UNREAD_REPORT_KEYS = frozenset({"reliability"})
"""Keys of a report no part of the leaderboard reads (the calibration bins of a run's reliability diagram, which
``report.html`` draws from the run's own suite.json): :func:`load_suites` drops them once checked."""
LEADERBOARD_HOLDING = Holding(UNREAD_ROWS, UNREAD_REPORT_KEYS, compact=True)
"""What a leaderboard keeps of each run: what it reads, compactly (about 0.36 MiB a run at the real image counts,
instead of 1.4 MiB)."""


def load_suites(run_dirs: Sequence[str | Path], processes: int | None = None) -> dict[str, dict[str, Any]]:
    """``{model name: suite.json content}``; the name is the model spec, plus the run folder's name when
    two runs evaluate the same spec. RunFolderError names a suite.json that is unreadable, of another
    format or malformed (:func:`~imagenet_suite.scoring.summary.suite_json.read_suite`). Each is checked whole,
    and its reports' rows of :data:`UNREAD_ROWS` left out (what the leaderboard holds of a run is what it reads);
    the rows kept are held as :class:`~imagenet_suite.scoring.summary.column_rows.ColumnRows` (a tenth of the
    memory of dicts: a run at the real image counts 0.1 MiB instead of 0.9), read as the same dicts; the
    reports' :data:`UNREAD_REPORT_KEYS` are dropped, their equal records held once (:data:`LEADERBOARD_HOLDING`).
    Many runs are read in ``processes`` worker processes
    (:func:`~imagenet_suite.scoring.summary.suite_json.read_suites`; None: the CPUs this process may use)."""
    with loading_suites(run_dirs, processes) as loaded:
        return loaded()


@contextlib.contextmanager
def loading_suites(
    run_dirs: Sequence[str | Path], processes: int | None = None
) -> Iterator[Callable[[], dict[str, dict[str, Any]]]]:
    """:func:`load_suites`, started as the block starts (in worker processes, for many runs), while the block runs:
    the block calls what it is given for the result, and for the error, if any (the first bad file's)."""
    run_dirs = list(map(Path, run_dirs))
    paths = [run_dir / SUITE_JSON if run_dir.is_dir() else run_dir for run_dir in run_dirs]
    with reading_suites(paths, LEADERBOARD_HOLDING, processes) as read:
        yield lambda: _named(run_dirs, read())


def _named(run_dirs: Sequence[Path], read: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    suites = [(suite["model"], run_dir, suite) for run_dir, suite in zip(run_dirs, read, strict=True)]
    specs = [spec for spec, _, _ in suites]
    named = {}
    for spec, run_dir, suite in suites:
        name = spec if specs.count(spec) == 1 else f"{spec} ({run_dir.name})"
        if name in named:
            raise ConfigError(f"two runs are both named {name!r}; give each run folder a distinct name")
        named[name] = suite
    return named


__all__ = ["LEADERBOARD_HOLDING", "UNREAD_REPORT_KEYS", "UNREAD_ROWS", "load_suites", "loading_suites"]
