"""Which rank differences of a leaderboard are real: the 95 % intervals of the ranked numbers, and a paired
test between each two adjacent models of every ranking.

None of the papers tests its rankings (they rank on point estimates); the intervals and the replicates come
from ``evaluate``'s bootstrap (:mod:`imagenet_suite.scoring.summary.intervals`, ``summary.uncertainty``):

* rankings — the QUBA score (Beyond Accuracy, Hesse et al. 2025) and the headline accuracy of every dataset
  that two or more runs have; models in descending order, ties in the leaderboard's order;
* tests between a model and the next one below it — the exact McNemar test
  (:func:`~imagenet_suite.scoring.metrics.paired_tests.mcnemar_test`) when the accuracy is a share of images
  and both runs recorded which images they got right (``uncertainty/<key>.parquet``), else the paired
  bootstrap test (:func:`~imagenet_suite.scoring.metrics.paired_tests.paired_bootstrap_test`) on the two runs'
  replicates of the number (``uncertainty/replicates.parquet``). p-values are per pair, not corrected for
  the many pairs of a leaderboard.

Pairing needs the same images resampled alike: both runs bootstrapped with the same resamples and seed
(else RunFolderError naming both), and every dataset both runs read resampled over the same ids (else
RunFolderError, or with ``allow_mixed_builds`` a test marked not paired). A run without intervals
(``evaluate --bootstrap 0``, a suite.json written before them) is listed with the reason, its tests left
out. Heuillet et al. 2025's Sum/Borda, ΔRank and LCA-on-the-Line are not tested: they aggregate over models
(a rank or a correlation across the leaderboard), not a number of one run that the run's replicates give.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...errors import RunFolderError
from ...forked import Forks
from ..metrics.paired_tests import mcnemar_counts, mcnemar_p_values, paired_bootstrap_test
from .number_paths import headline_numbers, number_path, value_at
from .suite_json import PARALLEL_FROM
from .uncertainty_files import Correctness, read_correctness, replicate_columns

TEST_COLUMNS = (
    "ranking",
    "number",
    "rank",
    "model",
    "value",
    "value_ci_low",
    "value_ci_high",
    "next_model",
    "test",
    "difference",
    "p_value",
    "note",
)


@dataclass
class Significance:
    """``tests``: one row per model of each ranking (:data:`TEST_COLUMNS`; the test against the next model
    below, empty for the last); ``intervals``: per model (index) every number with an interval, as
    ``<number>``, ``<number>_ci_low``, ``<number>_ci_high``; ``absent``: ``{model: why it has no intervals}``."""

    tests: pd.DataFrame
    intervals: pd.DataFrame
    absent: dict[str, str] = field(default_factory=dict)


@dataclass
class _Run:
    """One run's uncertainty record and its files, each read once: of the replicates only the columns of
    ``ranked`` (the numbers a ranking may test) are kept, and a dataset's per-image correctness only until
    its ranking no longer needs it (:func:`_ranking_row` drops it), so what is held does not grow with the
    images times the runs. In a worker process (:func:`significance`), what it holds is the worker's copy."""

    name: str
    folder: Path
    suite: Mapping[str, Any]
    ranked: Sequence[str] = ()
    replicates: dict[str, np.ndarray] | None = None
    correct: dict[str, Correctness] = field(default_factory=dict)

    @property
    def uncertainty(self) -> Mapping[str, Any] | None:
        return self.suite["summary"].get("uncertainty")

    def replicate(self, number: str) -> np.ndarray | None:
        if number not in self.uncertainty["ci95"]:
            return None
        if self.replicates is None:  # every column checked, the ranked ones kept
            self.replicates = replicate_columns(self.folder, self.uncertainty, self.ranked)
        return self.replicates[number]

    def correctness(self, key: str) -> Correctness | None:
        if key not in self.uncertainty["files"]["correct"]:
            return None
        if key not in self.correct:
            accuracy = self.suite["summary"]["accuracies"][key]["value"]
            self.correct[key] = read_correctness(self.folder, self.uncertainty, key, accuracy)
        return self.correct[key]


_Ranking = tuple[str, tuple[str, str | None], pd.Series]  # its title, (number path, dataset key or None), values


@dataclass
class _Rankings:
    """Every ranking (``rankings``) and what their rows are computed from: the runs, those without intervals
    (``absent``: why), and whether runs of other builds are ranked anyway. A pool's worker processes get it
    when forked (:data:`_FORKED`), not pickled."""

    rankings: list[_Ranking]
    runs: dict[str, _Run]
    absent: dict[str, str]
    allow_mixed_builds: bool

    def rows(self, position: int) -> list[dict[str, Any]]:
        """The models of ranking ``position`` in descending order of its values (ties in the leaderboard's
        order), each with its interval and its test against the next model."""
        ranking, ranked, values = self.rankings[position]
        order = sorted(values.index, key=lambda name: -values[name])
        rows = [
            _ranking_row(ranking, ranked, order, at, values, self.runs, self.absent, self.allow_mixed_builds)
            for at in range(len(order))
        ]
        return _with_mcnemar_p_values(rows)

    def batches(self) -> list[list[int]]:
        """The rankings (positions) in the calls of a pool: those that read a run's replicates together, first
        (each run's replicates are read once per process, and checked column by column: 17 ms at the real
        counts), then each other ranking alone (they read per-image files, each read once)."""
        present = [run for name, run in self.runs.items() if name not in self.absent]
        replicated = [
            position
            for position, (_, (_, key), _) in enumerate(self.rankings)
            if any(key not in run.uncertainty["files"]["correct"] for run in present)
        ]
        return [replicated, *([position] for position in range(len(self.rankings)) if position not in replicated)]


_FORKED: _Rankings | None = None  # in a worker process of significance's pool: what the pool was forked with


def _fork_with(rankings: _Rankings) -> None:
    global _FORKED
    _FORKED = rankings


def _rows_in_worker(positions: Sequence[int]) -> list[tuple[list[dict[str, Any]] | None, Exception | None]]:
    """Per ranking of ``positions`` (in order) its rows or its error; none after the first error."""
    outcomes = []
    for position in positions:
        try:
            outcomes.append((_FORKED.rows(position), None))
        except Exception as err:  # raised by the command's process when it takes this ranking's rows
            outcomes.append((None, err))
            break
    return outcomes


def significance(
    suites: Mapping[str, Mapping[str, Any]],
    folders: Mapping[str, str | Path],
    quba: pd.DataFrame,
    accuracies: pd.DataFrame,
    allow_mixed_builds: bool = False,
) -> Significance:
    """Intervals and adjacent-rank tests of the QUBA ranking (``quba``: the leaderboard's table, ``quba``
    column) and of every dataset's accuracy (``accuracies``: model x dataset key), for ``{model: suite.json
    content}`` evaluated into ``folders`` (``{model: run folder}``)."""
    with significance_started(suites, folders, quba, accuracies, allow_mixed_builds) as tested:
        return tested()


@contextlib.contextmanager
def significance_started(
    suites: Mapping[str, Mapping[str, Any]],
    folders: Mapping[str, str | Path],
    quba: pd.DataFrame,
    accuracies: pd.DataFrame,
    allow_mixed_builds: bool = False,
) -> Iterator[Callable[[], Significance]]:
    """:func:`significance`, started while the block runs: the block calls what it is given for the result,
    and for the error, if any (the one :func:`significance` raises). With two CPUs or more and
    :data:`~.suite_json.PARALLEL_FROM` runs with intervals or more, each ranking's tests (and the files they
    read) run in worker processes forked as the block starts (:class:`~imagenet_suite.forked.Forks`;
    :meth:`_Rankings.batches`), and the results are taken in the rankings' order, so the error raised is the
    first ranking's first, as in one process. Otherwise they are computed when the result is asked for."""
    rankings = [("QUBA score", "quba.score", quba["quba"], None)]
    rankings += [
        (f"accuracy: {key}", number_path("accuracies", key, "value"), accuracies[key], key)
        for key in accuracies.columns
        if accuracies[key].notna().sum() >= 2
    ]
    ranked = [number for _, number, _, _ in rankings]
    runs = {name: _Run(name, Path(folders[name]), suite, ranked) for name, suite in suites.items()}
    absent = {name: _why_absent(run.suite) for name, run in runs.items() if not run.uncertainty}
    present = [run for name, run in runs.items() if name not in absent]
    jobs = [(ranking, (number, key), values.dropna()) for ranking, number, values, key in rankings]
    shared = _Rankings(jobs, runs, absent, allow_mixed_builds)
    settled = _settings_problem(present)
    forking = settled is None and len(present) >= PARALLEL_FROM
    with Forks(forking=forking, initializer=_fork_with, initargs=(shared,)) as forks:
        where = {}  # ranking position -> (the call computing it, its place in the call's outcomes)
        for batch in shared.batches() if forks.forking else []:
            started = forks.submit(_rows_in_worker, batch) if batch else None
            where.update({position: (started, at) for at, position in enumerate(batch)})

        def tested() -> Significance:
            if settled is not None:
                raise settled
            rows = []
            for position in range(len(jobs)):
                if position not in where:
                    rows += shared.rows(position)
                    continue
                found, error = where[position][0].result()[where[position][1]]
                if error is not None:
                    raise error
                rows += found
            return Significance(pd.DataFrame(rows, columns=list(TEST_COLUMNS)), _intervals(runs, absent), absent)

        yield tested


def _why_absent(suite: Mapping[str, Any]) -> str:
    if "uncertainty" in suite["summary"]:
        return "evaluated without intervals (evaluate --bootstrap 0)"
    return "its suite.json was written before intervals: evaluate it again"


def _settings_problem(runs: Sequence[_Run]) -> RunFolderError | None:
    """The error when two runs with intervals were bootstrapped with other resamples or seeds, else None."""
    settings = {run.name: (run.uncertainty["resamples"], run.uncertainty["seed"]) for run in runs}
    if len(set(settings.values())) > 1:
        described = "; ".join(f"{name!r}: {b} resamples, seed {seed}" for name, (b, seed) in settings.items())
        return RunFolderError(
            f"the runs' bootstraps cannot be paired ({described}): evaluate them with the same number of "
            "bootstrap resamples and the same bootstrap seed"
        )


def _ranking_row(ranking, ranked, order, position, values, runs, absent, allow_mixed_builds) -> dict[str, Any]:
    """The row of ``order[position]``: its value, interval and test against the model below it."""
    number, key = ranked
    name = order[position]
    interval = runs[name].uncertainty["ci95"].get(number) if name not in absent else None
    row = dict.fromkeys(TEST_COLUMNS)
    row.update(ranking=ranking, number=number, rank=position + 1, model=name, value=float(values[name]), note="")
    row["value_ci_low"], row["value_ci_high"] = interval or (np.nan, np.nan)
    if position + 1 < len(order):
        below = order[position + 1]
        row.update(next_model=below, **_test(number, key, runs[name], runs[below], values, absent, allow_mixed_builds))
    if key is not None:  # tested against the models above and below it: its images are not needed again
        runs[name].correct.pop(key, None)
    return row


def _test(number, key, first: _Run, second: _Run, values, absent, allow_mixed_builds) -> dict[str, Any]:
    """The paired test of ``first`` (ranked higher) against ``second`` on ``number``: ``test``, ``difference``,
    ``p_value`` and a ``note`` (or only a note saying why there is none). A McNemar test gives its discordant counts
    (``_MCNEMAR``) instead of its p-value, which :func:`_with_mcnemar_p_values` computes for a ranking's tests at once."""
    for run in (first, second):
        if run.name in absent:
            return {"note": f"no test: {run.name!r} has no intervals ({absent[run.name]})"}
    difference = float(values[first.name] - values[second.name])
    problem = _pairing_problem(first, second, [key] if key is not None else None)
    if problem is None and key is not None:
        correct = first.correctness(key), second.correctness(key)
        if correct[0] is not None and correct[1] is not None:
            paired = correct[0].aligned(correct[1])
            if paired is None:
                problem = f"the runs counted other images of {key}"
            else:
                only_first, only_second = mcnemar_counts(*paired)
                note = f"{only_first} images right only for the first, {only_second} only for the second"
                return {"test": "McNemar (exact)", "difference": difference, _MCNEMAR: (only_first, only_second),
                        "note": note}  # fmt: skip
    if problem is not None:
        if not allow_mixed_builds:
            raise RunFolderError(f"{first.name!r} and {second.name!r} cannot be paired on {number}: {problem}")
        return {"note": f"not paired: {problem}"}
    replicates = first.replicate(number), second.replicate(number)
    for run, found in zip((first, second), replicates, strict=True):
        if found is None:
            reason = run.uncertainty["no_interval"].get(number, "no interval recorded")
            return {"note": f"no test: {run.name!r} has no interval of it ({reason})"}
    result = paired_bootstrap_test(*replicates, values[first.name], values[second.name])
    low, high = result.interval
    note = f"95 % interval of the difference [{low:.4g}, {high:.4g}] over {result.resamples} paired resamples"
    return {"test": "paired bootstrap", "difference": difference, "p_value": result.p_value, "note": note}


_MCNEMAR = "mcnemar_counts"  # a row's discordant counts until its p-value is given (:func:`_with_mcnemar_p_values`)


def _with_mcnemar_p_values(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with the p-value of each McNemar test, all computed in one call (:func:`mcnemar_p_values`; the
    same values as a call per test)."""
    tested = [row for row in rows if _MCNEMAR in row]
    if tested:
        only_first, only_second = zip(*(row.pop(_MCNEMAR) for row in tested), strict=True)
        for row, p_value in zip(tested, mcnemar_p_values(only_first, only_second).tolist(), strict=True):
            row["p_value"] = p_value
    return rows


def _pairing_problem(first: _Run, second: _Run, keys: Sequence[str] | None) -> str | None:
    """Why two runs' resamples are not the same draws of the same images (None when they are): a dataset
    (of ``keys``; None: any) both resampled over other ids."""
    samples = first.uncertainty["samples"], second.uncertainty["samples"]
    common = set(samples[0]) & set(samples[1])
    for key in sorted(common if keys is None else common & set(keys)):
        if samples[0][key] != samples[1][key]:
            return f"the runs resampled other images of {key}"
    return None


def _intervals(runs: Mapping[str, _Run], absent: Mapping[str, str]) -> pd.DataFrame:
    """Per model with intervals: every number with one, its low and its high end."""
    rows = {}
    for name, run in runs.items():
        if name in absent:
            continue
        numbers = headline_numbers(run.suite["summary"])
        row = {}
        for number, (low, high) in run.uncertainty["ci95"].items():
            row[number] = value_at(run.suite["summary"], numbers[number]) if number in numbers else np.nan
            row[f"{number}_ci_low"], row[f"{number}_ci_high"] = low, high
        rows[name] = row
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("model")


def significance_markdown(found: Significance | None) -> list[str]:
    """The leaderboard's section: per ranking, each model's value with its interval and the test against the
    next model below."""
    from ..presentation.suite_markdown import WithInterval, table

    lines = ["## Are the rank differences real? 95 % intervals and paired tests of adjacent models", ""]
    if found is None:
        return [*lines, "Not computed: the leaderboard was given no run folders to read the replicates from.", ""]
    lines += [
        "None of the papers reports uncertainty: they rank on point estimates. Intervals: evaluate's percentile "
        "bootstrap over images. Each model is tested against the next one below it: exact McNemar on the images "
        "both runs scored (an accuracy that is a share of images), else the paired bootstrap test on the runs' "
        "replicates (same images, same resamples). p-values are per pair, not corrected for the many pairs. "
        "Heuillet et al. 2025's Sum/Borda, ΔRank and LCA-on-the-Line are not tested: they are computed across "
        "models, not from one run's images.",
        "",
    ]
    lines += [f"- `{model}`: no intervals, {reason}" for model, reason in found.absent.items()]
    if found.absent:
        lines += [""]
    for (ranking, _), rows in found.tests.groupby(["ranking", "number"], sort=False):
        lines += [f"### {ranking}", ""]
        cells = []
        for row in rows.itertuples(index=False):
            value = (
                row.value
                if np.isnan(row.value_ci_low)
                else WithInterval(row.value, (row.value_ci_low, row.value_ci_high))
            )
            cells.append((row.rank, row.model, value, row.next_model, row.test, row.p_value, row.note))
        lines += table(("rank", "model", "value [95 % interval]", "vs next", "test", "p", "note"), cells)
    return lines


def write_significance(found: Significance | None, folder: str | Path) -> list[Path]:
    """``leaderboard_significance.csv`` (the tests) and ``leaderboard_intervals.csv`` (the intervals) into
    ``folder``; none without a :class:`Significance`."""
    from ...files import atomic_write_bytes

    if found is None:
        return []
    folder = Path(folder)
    written = [folder / "leaderboard_significance.csv", folder / "leaderboard_intervals.csv"]
    atomic_write_bytes(written[0], found.tests.to_csv(index=False).encode())
    atomic_write_bytes(written[1], found.intervals.to_csv(index_label="model").encode())
    return written


__all__ = [
    "TEST_COLUMNS",
    "Significance",
    "significance",
    "significance_markdown",
    "significance_started",
    "write_significance",
]
