"""A leaderboard holds each run's report rows as ``ColumnRows`` (columns, each row made a dict as it is read) and
the runs' equal records once (``suite_holding``): the rows read back exactly as the dicts ``columns_to_rows`` gives
(values of every JSON type, the counts, a NaN), pickled through the worker processes and interned again, in a
fraction of the memory; and a leaderboard of runs held that way writes the same files, byte for byte, as one of
the same runs held whole."""

from __future__ import annotations

import json
import math
import pickle
import sys
import tracemalloc

import pytest

from imagenet_suite.scoring.presentation.html_leaderboard import write_leaderboard_html
from imagenet_suite.scoring.summary.column_rows import ColumnRows
from imagenet_suite.scoring.summary.leaderboard import leaderboard, load_suites, write_leaderboard
from imagenet_suite.scoring.summary.leaderboard_runs import UNREAD_REPORT_KEYS
from imagenet_suite.scoring.summary.metric_columns import columns_to_rows, rows_to_columns
from imagenet_suite.scoring.summary.suite_json import read_suite
from tests.test_leaderboard_heuillet import paper_runs
from tests.test_leaderboard_papers import ninco_reports, row, with_reports

ROWS = [
    {"metric": "top1_accuracy", "value": 0.75, "variant": "", "subgroup": "", "numerator": 3, "denominator": 4},
    {"metric": "fpr95", "value": None, "variant": "msp", "subgroup": "cat", "numerator": None, "denominator": None},
    {"metric": "fpr95", "value": -0.0, "variant": "vim", "subgroup": "cat", "numerator": None, "denominator": None},
    {"metric": "lca", "value": 2, "variant": "info", "subgroup": "", "numerator": None, "denominator": 2**60},
    {"metric": "per_class_accuracy", "value": 0.5, "variant": "", "subgroup": "n0", "numerator": 1, "denominator": 2},
]


def _same(held, rows) -> None:
    """``held`` reads as ``rows``: the same dicts, every value of the same type."""
    assert len(held) == len(rows) and held == rows and list(held) == rows
    for got, want in zip(held, rows, strict=True):
        assert list(got) == list(want) and [type(v) for v in got.values()] == [type(v) for v in want.values()]
        assert math.copysign(1, got["value"]) == math.copysign(1, want["value"]) if type(want["value"]) is float else 1


@pytest.mark.parametrize("rows", [ROWS, [dict(r, value=0.25 * k) for k, r in enumerate(ROWS)], ROWS[1:3]])
def test_column_rows_read_as_the_rows_they_hold(rows):
    columns = rows_to_columns(rows)
    held = ColumnRows.from_columns(columns)
    _same(held, columns_to_rows(columns))
    _same(ColumnRows.from_columns(columns, drop=frozenset({"fpr95"})), columns_to_rows(columns, frozenset({"fpr95"})))
    assert held[-1] == rows[-1] and held[1:3] == rows[1:3] and held[::-2] == rows[::-2]
    with pytest.raises(IndexError):
        held[len(rows)]
    back = pickle.loads(pickle.dumps(held, protocol=pickle.HIGHEST_PROTOCOL))
    _same(back, rows)
    names = [next(iter(back))["metric"], next(iter(held.interned()))["metric"]]
    assert names[0] == names[1] and back.interned()[0]["metric"] is held[0]["metric"]  # one string again
    assert held != rows[:-1] and held != [dict(rows[0], value=0.5), *rows[1:]]


def test_a_nan_value_reads_back_as_nan_not_null():
    rows = [dict(ROWS[0], value=float("nan")), ROWS[1]]
    held = ColumnRows.from_rows(rows)
    assert math.isnan(held[0]["value"]) and held[1]["value"] is None


def test_column_rows_hold_a_runs_rows_in_a_seventh_of_the_memory_of_dicts():
    """NINCO's AUROC and FPR@95 per OOD class and detector (64 × 11 × 2): most of what a leaderboard reads of a run
    at the real image counts."""
    rows = [
        {"metric": metric, "value": (c * 11 + d) / 1000 + (metric == "auroc") / 2, "variant": f"detector{d}",
         "subgroup": sys.intern(f"class{c}"), "numerator": None, "denominator": None}
        for metric in ("auroc", "fpr95") for c in range(64) for d in range(11)
    ]  # fmt: skip
    columns = rows_to_columns(rows)

    def held_bytes(make) -> int:
        tracemalloc.start()
        made = make()
        size = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        assert made == rows
        return size

    as_dicts, as_columns = (
        held_bytes(lambda: columns_to_rows(columns)),
        held_bytes(lambda: ColumnRows.from_columns(columns)),
    )
    assert as_columns * 7 < as_dicts, (as_columns, as_dicts)


def _runs(root):
    """Four runs with NINCO's reports and per-class rows and the paper runs' attacks."""
    runs = paper_runs(root)
    for i, run in enumerate(runs):
        suite = json.loads((run / "suite.json").read_text())
        adversarial = suite["summary"]["adversarial"]
        suite = with_reports(suite, **ninco_reports(0.1 * i))
        suite["summary"]["adversarial"] = adversarial
        suite["datasets"]["ninco/ninco"]["metrics"] += [
            row(metric, (c + i) / 20, detector, f"class_{c}") for metric in ("fpr95", "auroc") for c in range(5)
            for detector in ("msp", "vim")
        ]  # fmt: skip
        suite["datasets"]["ninco/ninco"]["metrics"] += [
            row("in21k_overlap", float(c % 2), "", f"class_{c}") for c in range(5)
        ]
        (run / "suite.json").write_text(json.dumps(suite))
    return runs


def test_a_leaderboard_of_runs_held_compactly_writes_the_files_of_one_of_runs_held_whole(tmp_path):
    (tmp_path / "runs").mkdir()
    runs = _runs(tmp_path / "runs")
    held = load_suites(runs)
    whole = {name: read_suite(run) for name, run in zip(held, runs, strict=True)}
    report = next(iter(held.values()))["datasets"]["ninco/ninco"]
    assert isinstance(report["metrics"], ColumnRows) and isinstance(
        next(iter(whole.values()))["datasets"]["ninco/ninco"]["metrics"], list
    )
    first, second = (suite["datasets"]["ninco/ninco"] for suite in list(held.values())[:2])
    assert (
        first["meta"] is second["meta"]
        and first["meta"] == next(iter(whole.values()))["datasets"]["ninco/ninco"]["meta"]
    )
    written = {}
    for name, suites in (("held", held), ("whole", whole)):
        board = leaderboard(suites)
        folder = tmp_path / name
        files = [*write_leaderboard(board, folder), write_leaderboard_html(board, suites, folder)]
        written[name] = {path.name: path.read_bytes() for path in files}
    assert len(written["held"]) > 10 and written["held"] == written["whole"]
    html = written["held"]["leaderboard.html"].decode()
    assert "FPR@95 per NINCO OOD class and model (msp)" in html and "class_4" in html  # the per-class rows were read


def test_the_leaderboard_drops_the_report_keys_it_never_reads(tmp_path):
    (tmp_path / "runs").mkdir()
    runs = _runs(tmp_path / "runs")
    suite = json.loads((runs[0] / "suite.json").read_text())
    import torch

    from imagenet_suite.scoring.metrics.calibration import calibration_bins

    bins = calibration_bins(torch.linspace(0.05, 0.95, 20), torch.arange(20) % 3 == 0)
    suite["datasets"]["imagenet_val"]["reliability"] = {bins.convention: bins.to_json()}
    (runs[0] / "suite.json").write_text(json.dumps(suite))
    assert "reliability" in read_suite(runs[0])["datasets"]["imagenet_val"] and {"reliability"} == UNREAD_REPORT_KEYS
    loaded = load_suites(runs[:1])
    assert all("reliability" not in report for report in next(iter(loaded.values()))["datasets"].values())


def test_rows_of_an_older_format_lacking_a_field_are_held_as_read(tmp_path):
    """A format-2 row may lack ``variant`` (read as "" by ``row.get("variant", "")``); held as columns it would read
    as null, so such a report's rows stay the dicts read. Complete rows are held as columns."""
    (tmp_path / "runs").mkdir()
    runs = _runs(tmp_path / "runs")[:1]
    suite = json.loads((runs[0] / "suite.json").read_text())
    suite["datasets"]["imagenet_val"]["metrics"].append({"metric": "top5_accuracy", "value": 0.75, "subgroup": ""})
    (runs[0] / "suite.json").write_text(json.dumps(suite))
    reports = next(iter(load_suites(runs).values()))["datasets"]
    rows = reports["imagenet_val"]["metrics"]
    assert isinstance(rows, list) and rows[-1] == {"metric": "top5_accuracy", "value": 0.75, "subgroup": ""}
    assert isinstance(reports["ninco/ninco"]["metrics"], ColumnRows)
