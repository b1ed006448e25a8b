"""suite.json format 4: each report's metric rows stored as columns (issue 38: a 300-run leaderboard at the real
image counts spent most of its reading parsing and checking per-class rows one object at a time).

The column check refuses exactly what the row check refuses, with the same message and the row's index in the
path (``metrics.value[3]``); what the leaderboard reads of a run, and every file it writes, is the same whether the
run's suite.json stores its rows as columns or as the list of objects of format 3 and before. The format itself is
written out here independently of the package: one list per field of a row, row ``i`` the ``i``-th item of each.
"""

from __future__ import annotations

import json
import re

import pytest

from imagenet_suite import cli
from imagenet_suite.scoring.summary.json_schema import Mismatch
from imagenet_suite.scoring.summary.metric_columns import MetricColumns, all_pass
from imagenet_suite.scoring.summary.metric_ranges import MetricRows, MetricRowSchema
from imagenet_suite.scoring.summary.suite_holding import Holding
from imagenet_suite.scoring.summary.suite_json import read_suite
from tests.helpers import one_line
from tests.test_read_runs import leaderboard, suite_json, write_run
from tests.test_suite_ranges import ROWS

FIELDS = ("metric", "value", "variant", "subgroup", "numerator", "denominator")
FORMAT_4 = "imagenet-suite.suite/4"


def columns_of(rows: list[dict]) -> dict[str, list]:
    """Rows as format 4 stores them: one list per field (a field a row lacks: null)."""
    return {key: [row.get(key) for row in rows] for key in FIELDS}


def as_format_4(suite: dict) -> dict:
    """A suite.json of format 2 or 3 (hand-written) as format 4: ``weights_source`` (null: not recorded) and each
    report's rows as columns."""
    datasets = {key: {**report, "metrics": columns_of(report["metrics"])} for key, report in suite["datasets"].items()}
    return {**suite, "format": FORMAT_4, "weights_source": suite.get("weights_source"), "datasets": datasets}


def _good_rows(count: int = 40) -> list[dict]:
    metrics = ("top1_accuracy", "per_class_accuracy", "lca", "auroc")
    return [
        {"metric": metrics[i % 4], "value": (i % 10) / 10, "variant": "info" if i % 4 == 2 else "",
         "subgroup": f"n{i:08d}", "numerator": i % 10 if i % 4 == 1 else None, "denominator": 10 if i % 4 == 1 else None}
        for i in range(count)
    ]  # fmt: skip


COLUMN_ROWS = [
    *(row for row in ROWS if isinstance(row, dict)),
    {"metric": "top1_accuracy", "value": 1},  # an int value in range
    {"metric": "top1_accuracy", "value": 2},
    {"metric": "a_new_metric", "value": 2**60},  # beyond 2**53: the rows are checked one by one
    {"metric": "a_new_metric", "value": 10**400},  # beyond a float
    {"metric": "a_new_metric", "value": float("inf")},
    {"metric": "top1_accuracy", "value": 0.5, "numerator": 2**60, "denominator": 2**61},
    {"metric": "top1_accuracy", "value": 0.5, "numerator": 1, "denominator": None},
    {"metric": "top1_accuracy", "value": 0.5, "numerator": True, "denominator": 2},
    {"metric": "top1_accuracy", "value": 0.5, "numerator": 10**400, "denominator": 10**401},
    {"metric": "top1_accuracy", "value": 0.5, "numerator": 2**53 - 1, "denominator": 2**53 - 2},  # exact as floats
    {"metric": "top1_accuracy", "value": 0.5, "numerator": 2**53 + 1, "denominator": 2**53},  # not exact: row by row
    {"metric": "top1_accuracy", "value": 0.5, "numerator": -1, "denominator": 2},
    {"metric": "top1_accuracy", "value": 0.5, "numerator": None, "denominator": -3},
    {"metric": "top1_accuracy", "value": 0.5, "numerator": 1.5, "denominator": 2},
    {"metric": "top1_accuracy", "value": -1e-12},  # within rounding of the bound
    {"metric": ["top1_accuracy"], "value": 0.5},  # not hashable: no string among the distinct metrics
    {"metric": "lca", "value": 0.5, "variant": {"info": 1}},
    {"metric": "top1_accuracy", "value": 0.5, "subgroup": ["n01440764"]},
]


def _row_check_message(rows: list[dict]) -> str | None:
    """The row check's message for ``rows`` with every field present (as format 4 has them), the path's ``[i].field``
    written ``field[i]``; None when it passes."""
    try:
        MetricRows(MetricRowSchema()).check([{key: row.get(key) for key in FIELDS} for row in rows], "metrics")
    except Mismatch as mismatch:
        return re.sub(r"^metrics\[(\d+)\]\.(\w+)", r"metrics.\2[\1]", str(mismatch))
    return None


@pytest.mark.parametrize("row", COLUMN_ROWS, ids=[str(i) for i in range(len(COLUMN_ROWS))])
def test_columns_are_refused_exactly_when_their_rows_are_with_the_same_message(row):
    """Among 40 good rows of four metrics, one row: the column check passes it when the row check does and otherwise
    raises the row check's message with the row's index in the column's path; the array test (``all_pass``) never
    passes what the row check refuses."""
    for at in (0, 17, 40):
        rows = _good_rows()
        rows.insert(at, {"variant": "", "subgroup": "", **row})
        expected = _row_check_message(rows)
        columns = columns_of(rows)
        if expected is None:
            MetricColumns().check(columns, "metrics")
        else:
            assert not all_pass(columns)
            with pytest.raises(Mismatch) as raised:
                MetricColumns().check(columns, "metrics")
            assert str(raised.value) == expected
            assert str(raised.value).startswith("metrics.") and f"[{at}]:" in str(raised.value)


def test_a_report_of_good_rows_passes_without_a_row_by_row_check(monkeypatch):
    """The array test passes a report of good rows alone: the row-by-row check is not called."""
    columns = columns_of(_good_rows(5000))
    assert all_pass(columns)
    monkeypatch.setattr(MetricColumns, "_check_rows", lambda *args: pytest.fail("checked row by row"))
    MetricColumns().check(columns, "metrics")
    MetricColumns().check(columns_of([]), "metrics")


def test_the_array_test_passes_good_counts_up_to_two_to_the_53():
    """Counts are tested as floats: every int below 2**53 is exact as one, so good counts up to there pass without
    the row-by-row check, and a numerator one above its denominator there is refused."""
    rows = _good_rows()
    rows[3].update(numerator=2**53 - 2, denominator=2**53 - 1)
    rows[5].update(numerator=2**53 - 1, denominator=2**53 - 1)
    assert all_pass(columns_of(rows))
    rows[5].update(numerator=2**53 - 1, denominator=2**53 - 2)
    assert not all_pass(columns_of(rows))


BAD_COLUMNS = {
    "a report row's accuracy above 1": (
        lambda metrics: metrics["value"].__setitem__(0, 1.5),
        r'datasets\["imagenet_val"\]\.metrics\.value\[0\]: expected a number in \[0, 1\] or null, found the number '
        r"1\.5$",
    ),
    "more hits than images": (
        lambda metrics: metrics.update(numerator=[5], denominator=[3]),
        r'datasets\["imagenet_val"\]\.metrics\.numerator\[0\]: expected at most the denominator \(3\), found the '
        r"number 5$",
    ),
    "a subgroup that is not a string": (
        lambda metrics: metrics["subgroup"].__setitem__(0, 7),
        r'datasets\["imagenet_val"\]\.metrics\.subgroup\[0\]: expected a string, found the number 7$',
    ),
    "a column missing": (
        lambda metrics: metrics.pop("denominator"),
        r'datasets\["imagenet_val"\]\.metrics\.denominator: missing; expected a list$',
    ),
    "a column that is not a list": (
        lambda metrics: metrics.update(variant="top1"),
        r'datasets\["imagenet_val"\]\.metrics\.variant: expected a list, found the string "top1"$',
    ),
    "columns of different lengths": (
        lambda metrics: metrics["value"].append(0.5),
        r'datasets\["imagenet_val"\]\.metrics: expected lists \[.metric., .value., .variant., .subgroup., '
        r".numerator., .denominator.\] of one length, found lengths \{'metric': 1, 'value': 2,",
    ),
    "rows as a list of objects, in format 4": (
        lambda metrics: (metrics.clear(), metrics.update(rows=[])),
        r'datasets\["imagenet_val"\]\.metrics\.metric: missing; expected a list$',
    ),
}


@pytest.mark.parametrize("case", list(BAD_COLUMNS))
def test_a_bad_column_is_one_line_naming_the_file_and_the_row(case, tmp_path, capsys):
    mutate, expected = BAD_COLUMNS[case]
    good = write_run(tmp_path, "good", as_format_4(suite_json("timm:good", 0.6)))
    suite = as_format_4(suite_json("timm:bad", 0.5))
    mutate(suite["datasets"]["imagenet_val"]["metrics"])
    bad = write_run(tmp_path, "bad", suite)
    line = one_line(capsys, leaderboard(tmp_path, good, bad))
    assert re.search(re.escape(str(bad / "suite.json")) + ": " + expected, line), line
    assert not (tmp_path / "board").exists()


def _runs_with_many_rows(tmp_path) -> list:
    """Three runs whose imagenet_val reports have per-class rows and an OOD report's per-class AUROC (rows the
    leaderboard leaves out once checked), in format 2."""
    runs = []
    for i in range(3):
        suite = suite_json(f"timm:m{i}", 0.5 + i / 10)
        rows = suite["datasets"]["imagenet_val"]["metrics"]
        rows += [{"metric": "per_class_accuracy", "value": (c + i) % 3 / 2, "variant": "", "subgroup": f"n{c:08d}",
                  "numerator": (c + i) % 3, "denominator": 2} for c in range(50)]  # fmt: skip
        runs.append(write_run(tmp_path, f"m{i}", suite))
    return runs


def test_the_leaderboard_of_runs_is_the_same_whatever_format_stores_their_rows(tmp_path, capsys):
    """The same runs in format 2 and, rewritten in place, in format 4: every file the leaderboard writes is
    byte-identical; ``read_suite`` gives the same rows, without the dropped ones in both."""
    runs = _runs_with_many_rows(tmp_path)
    assert cli.main(leaderboard(tmp_path, *runs)) == 0
    before = {path.name: path.read_bytes() for path in sorted((tmp_path / "board").iterdir())}
    rows_before = [read_suite(run)["datasets"]["imagenet_val"]["metrics"] for run in runs]
    kept_before = [read_suite(run, Holding(frozenset({"per_class_accuracy"})))["datasets"] for run in runs]
    for run in runs:
        suite = json.loads((run / "suite.json").read_text())
        (run / "suite.json").write_text(json.dumps(as_format_4(suite), indent=1))
    for path in (tmp_path / "board").iterdir():
        path.unlink()
    assert cli.main(leaderboard(tmp_path, *runs)) == 0
    capsys.readouterr()
    after = {path.name: path.read_bytes() for path in sorted((tmp_path / "board").iterdir())}
    assert after.keys() == before.keys() and [n for n in before if before[n] != after[n]] == []
    assert [read_suite(run)["datasets"]["imagenet_val"]["metrics"] for run in runs] == rows_before
    kept = [read_suite(run, Holding(frozenset({"per_class_accuracy"})))["datasets"] for run in runs]
    assert kept == kept_before and len(kept[0]["imagenet_val"]["metrics"]) == 1
    assert len(rows_before[0]) == 51


def test_a_dropped_row_is_still_checked(tmp_path):
    """Rows a reader leaves out (``Holding.metrics_dropped``) are checked first: a bad per-class accuracy is refused."""
    from imagenet_suite.errors import RunFolderError

    suite = as_format_4(json.loads((_runs_with_many_rows(tmp_path)[0] / "suite.json").read_text()))
    suite["datasets"]["imagenet_val"]["metrics"]["value"][30] = 3.0
    run = write_run(tmp_path, "bad", suite)
    with pytest.raises(RunFolderError, match=r'datasets\["imagenet_val"\]\.metrics\.value\[30\]: expected a number'):
        read_suite(run, Holding(frozenset({"per_class_accuracy"})))


def test_the_python_api_takes_the_content_of_a_format_4_file_read_without_read_suite(tmp_path):
    """``leaderboard()``, ``leaderboard.html`` and ``report.html`` given suite.json content parsed with ``json`` (rows
    as columns) are as from ``read_suite``; a bad column there is a RunFolderError naming the model and the row."""
    from imagenet_suite.errors import RunFolderError
    from imagenet_suite.scoring.presentation.html import render
    from imagenet_suite.scoring.presentation.html_leaderboard import write_leaderboard_html
    from imagenet_suite.scoring.presentation.html_run import run_page
    from imagenet_suite.scoring.summary.leaderboard import leaderboard as rank
    from imagenet_suite.scoring.summary.leaderboard import load_suites

    runs = _runs_with_many_rows(tmp_path)
    raw = {}
    for run in runs:
        suite = as_format_4(json.loads((run / "suite.json").read_text()))
        (run / "suite.json").write_text(json.dumps(suite))
        raw[suite["model"]] = suite
    read = load_suites(runs)
    assert rank(raw).accuracies.equals(rank(read).accuracies) and rank(raw).quba.equals(rank(read).quba)
    pages = [write_leaderboard_html(rank(read), suites, tmp_path / name).read_bytes() for name, suites in
             (("raw", raw), ("read", read))]  # fmt: skip
    assert pages[0] == pages[1]
    assert render(run_page(raw["timm:m0"])) == render(run_page(read["timm:m0"]))
    raw["timm:m1"]["datasets"]["imagenet_val"]["metrics"]["numerator"][3] = 7
    with pytest.raises(
        RunFolderError, match=r'^timm:m1: datasets\["imagenet_val"\]\.metrics\.numerator\[3\]: expected at'
    ):
        rank(raw)
