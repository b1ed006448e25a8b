"""What a leaderboard of many runs holds of each run: ``load_suites`` drops the report rows no part of the
leaderboard reads (``UNREAD_ROWS``: most of a suite.json's rows) and the report keys it does not read
(``UNREAD_REPORT_KEYS``: the reliability bins), so nothing the leaderboard runs may read them.

The modules a leaderboard runs (its tables, figures and page, the ``leaderboard`` and ``report`` commands and
the sweep that ends with one) are read here, and a string naming one of those metrics fails the test unless it
is listed below with what it names instead (the same names as columns of ``summary.benchmarks``, which suite.json's
summary holds whole).
"""

from __future__ import annotations

import ast

import pytest

from imagenet_suite.errors import RunFolderError
from imagenet_suite.scoring.summary.leaderboard import UNREAD_ROWS, load_suites
from imagenet_suite.scoring.summary.leaderboard_runs import UNREAD_REPORT_KEYS
from tests.helpers import REPO_ROOT
from tests.test_read_runs import suite_json, write_run

PACKAGE = REPO_ROOT / "imagenet_suite"
READERS = [
    *sorted((PACKAGE / "scoring" / "summary").rglob("*.py")),
    *sorted((PACKAGE / "scoring" / "presentation").rglob("*.py")),
    PACKAGE / "inference" / "sweep.py",
    PACKAGE / "commands" / "leaderboard.py",
    PACKAGE / "commands" / "report.py",
]
NOT_ROWS = {
    "scoring/summary/leaderboard_runs.py": "UNREAD_ROWS and UNREAD_REPORT_KEYS themselves",
    "scoring/summary/metric_ranges.py": "the ranges every row is checked against before it is dropped",
    "scoring/summary/suite_json.py": "BENCHMARK_ROW: the fields of summary.benchmarks; the reports' schema",
    "scoring/summary/papers/zhang2023.py": "OpenOOD v1.5's table: columns of summary.benchmarks",
    "scoring/presentation/html_leaderboard.py": "the directions of summary.benchmarks' columns",
}


def test_no_module_the_leaderboard_runs_reads_a_row_it_drops():
    named = []
    for path in READERS:
        where = str(path.relative_to(PACKAGE))
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            string = isinstance(node, ast.Constant) and isinstance(node.value, str)
            if string and node.value in UNREAD_ROWS | UNREAD_REPORT_KEYS and where not in NOT_ROWS:
                named.append(f"{where}:{node.lineno}: {node.value!r}")
    assert not named, (
        f"remove it from UNREAD_ROWS / UNREAD_REPORT_KEYS (leaderboard_runs.py) or read it another way: {named}"
    )
    assert len(READERS) > 40  # the packages were found


def test_load_suites_drops_those_rows_after_checking_them(tmp_path):
    suite = suite_json("timm:m0", 0.5)
    rows = suite["datasets"]["imagenet_val"]["metrics"]
    kept = [row["metric"] for row in rows]
    rows += [
        {"metric": "per_class_accuracy", "value": 0.25, "variant": "top1", "subgroup": "n01440764"},
        {"metric": "aupr_in", "value": 0.75, "variant": "msp", "subgroup": "class_1"},
    ]
    loaded = next(iter(load_suites([write_run(tmp_path, "m0", suite)]).values()))
    assert [row["metric"] for row in loaded["datasets"]["imagenet_val"]["metrics"]] == kept
    rows[-1]["value"] = 1.5  # checked before it is dropped
    with pytest.raises(
        RunFolderError, match=r'datasets\["imagenet_val"\]\.metrics\[\d+\]\.value: expected a number in'
    ):
        load_suites([write_run(tmp_path, "m1", suite)])
