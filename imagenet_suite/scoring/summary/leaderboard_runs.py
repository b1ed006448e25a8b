"""The runs of a leaderboard, read: each run folder's suite.json, checked, named, with only the rows a leaderboard
reads. This module imports no more than reading needs (pandas, not torch or matplotlib), so that the ``leaderboard``
command can start reading in worker processes (:func:`loading_suites`) and import the rest while they read."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from .suite_json import SUITE_JSON, reading_suites

UNREAD_ROWS = frozenset({"per_class_accuracy", "aupr_in", "aupr_out", "fpr95_openood_v15", "unit_test_failed"})
"""Report rows (by ``metric``) that no table, figure or page of the leaderboard reads: :func:`load_suites` drops
them once checked. They are most of a suite.json's rows (per-class accuracies; per OOD class, the AUPRs and
OpenOOD's FPR@95; each OOD unit test's verdict), so a leaderboard of many runs holds of each run what it reads.
``tests/test_leaderboard_scale.py`` fails when a module the leaderboard runs names one of them."""


def load_suites(run_dirs: Sequence[str | Path], processes: int | None = None) -> dict[str, dict[str, Any]]:
    """``{model name: suite.json content}``; the name is the model spec, plus the run folder's name when
    two runs evaluate the same spec. RunFolderError names a suite.json that is unreadable, of another
    format or malformed (:func:`~imagenet_suite.scoring.summary.suite_json.read_suite`). Each is checked whole,
    and its reports' rows of :data:`UNREAD_ROWS` left out (what the leaderboard holds of a run is what it reads).
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
    with reading_suites(paths, drop_metrics=UNREAD_ROWS, processes=processes) as read:
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


__all__ = ["UNREAD_ROWS", "load_suites", "loading_suites"]
