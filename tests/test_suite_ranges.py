"""suite.json's numbers are checked for their metric's range, not only for being finite (issue 40: ``leaderboard``
ranked a hand-edited accuracy of 1e300 with a 95 % interval of [0, 0]).

Each bad file is ranked by ``leaderboard`` in this process: exit code 2, one stderr line naming the file, the
JSON path and the range, and no leaderboard written. The ranges themselves: ``imagenet_suite.scoring.summary.
metric_ranges``; every metric name the package's metric families write has one (read from the source).
"""

from __future__ import annotations

import ast
import json
import math
import re

import pytest

from imagenet_suite.scoring.summary.metric_columns import all_pass
from imagenet_suite.scoring.summary.metric_ranges import metric_range
from imagenet_suite.scoring.summary.suite_json import read_suite
from tests.helpers import REPO_ROOT, one_line
from tests.test_read_runs import leaderboard, suite_json, write_run

ACC = 'accuracies["imagenet_val"].value'
ACC_AT = ("summary", "accuracies", "imagenet_val", "value")


def _uncertainty(ci95: dict) -> dict:
    """A ``summary.uncertainty`` of the right structure holding the intervals ``ci95``."""
    return {
        "method": "percentile bootstrap over images",
        "resamples": 10,
        "seed": 0,
        "ci95": ci95,
        "no_interval": {},
        "samples": {},
        "files": {"replicates": {"path": "uncertainty/replicates.parquet", "sha256": "0" * 64}, "correct": {}},
    }


def _at(*path):
    """A change of the suite.json: the value at ``path`` (keys and list indices) set to the last argument."""
    *keys, last, value = path

    def mutate(suite: dict) -> None:
        node = suite
        for key in keys:
            node = node[key]
        node[last] = value

    return mutate


def _interval(number: str, low: float, high: float):
    return _at("summary", "uncertainty", _uncertainty({number: [low, high]}))


def _bins(**changed) -> dict:
    """Two calibration bins as ``CalibrationBins.to_json`` writes them, with ``changed`` lists."""
    bins = {"lower": [0.0, 0.5], "upper": [0.5, 1.0], "count": [2, 1], "correct": [1, 1], "confidence_sum": [0.6, 0.9]}
    return {**bins, **changed}


ROW = ("datasets", "imagenet_val", "metrics", 0)
BAD = {
    "the probe: an accuracy of 1e300 with an interval of [0, 0]": (
        lambda suite: [change(suite) for change in (_at(*ACC_AT, 1e300), _interval(ACC, 0.0, 0.0))],
        r'summary\.accuracies\["imagenet_val"\]\.value: expected a number in \[0, 1\], found the number 1e\+300$',
    ),
    "a report row's accuracy above 1": (
        _at(*ROW, "value", 1.5),
        r'datasets\["imagenet_val"\]\.metrics\[0\]\.value: expected a number in \[0, 1\] or null, found the number '
        r"1\.5$",
    ),
    "a QUBA dimension out of its range": (
        _at("summary", "quba", "dimensions", "accuracy", "value", 7),
        r'summary\.quba\.dimensions\["accuracy"\]\.value: expected a number in \[0, 1\], found the number 7$',
    ),
    "a negative parameter count in millions": (
        _at("summary", "quba", "dimensions", "params_millions", "value", -1.0),
        r'summary\.quba\.dimensions\["params_millions"\]\.value: expected a finite number >= 0, found the number '
        r"-1\.0$",
    ),
    "more hits than images": (
        lambda suite: suite["datasets"]["imagenet_val"]["metrics"][0].update(numerator=5, denominator=3),
        r'datasets\["imagenet_val"\]\.metrics\[0\]\.numerator: expected at most the denominator \(3\), found the '
        r"number 5$",
    ),
    "a negative count": (
        _at(*ROW, "denominator", -3),
        r'datasets\["imagenet_val"\]\.metrics\[0\]\.denominator: expected a finite number >= 0 or null, found the '
        r"number -3$",
    ),
    "an LCA distance beyond log2 1000 bits": (
        _at("summary", "lca", {"imagenet_val": {"info": 12.0}}),
        r'summary\.lca\["imagenet_val"\]\["info"\]: expected a number in \[0, 9\.96578\], found the number 12\.0$',
    ),
    "a negative mCE": (
        _at("summary", "imagenet_c", {"mce": -0.5, "relative_mce": None, "sets": 1, "corruptions": {}, "sources": []}),
        r"summary\.imagenet_c\.mce: expected a finite number >= 0, found the number -0\.5$",
    ),
    "a negative ImageNet-M mistake count": (
        _at("summary", "expert_labels", {"imagenet_multilabel": {"imagenet_m_mistakes/lenient": -2}}),
        r'summary\.expert_labels\["imagenet_multilabel"\]\["imagenet_m_mistakes/lenient"\]: expected a finite '
        r"number >= 0, found the number -2$",
    ),
    "a reliability bin with more right answers than images": (
        _at("datasets", "imagenet_val", "reliability", {"torchmetrics": _bins(count=[2, 1], correct=[1, 3])}),
        r'datasets\["imagenet_val"\]\.reliability\["torchmetrics"\]\.correct\[1\]: expected at most the bin\'s count 1, '
        r"found 3$",
    ),
    "reliability bins of different lengths": (
        _at("datasets", "imagenet_val", "reliability", {"guo": _bins(lower=[0.0])}),
        r'datasets\["imagenet_val"\]\.reliability\["guo"\]: expected bin lists of one length, found lengths',
    ),
    "an interval whose low end is above its high end": (
        _interval(ACC, 0.6, 0.4),
        r'summary\.uncertainty\.ci95\["accuracies\[\\"imagenet_val\\"\]\.value"\]: expected \[low, high\] with '
        r"low <= high, found \[0\.6, 0\.4\]$",
    ),
    "an accuracy's interval beyond 1": (
        _interval(ACC, 0.2, 1.7),
        r'summary\.uncertainty\.ci95\["accuracies\[\\"imagenet_val\\"\]\.value"\]\[1\]: expected a number in '
        r"\[0, 1\], found the number 1\.7$",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_number_out_of_its_range_is_one_line_naming_the_file_the_path_and_the_range(case, tmp_path, capsys):
    mutate, expected = BAD[case]
    good = write_run(tmp_path, "good", suite_json("timm:good", 0.6))
    suite = suite_json("timm:bad", 0.5)
    mutate(suite)
    bad = write_run(tmp_path, "bad", suite)
    line = one_line(capsys, leaderboard(tmp_path, good, bad))
    assert re.search(re.escape(str(bad / "suite.json")) + ": " + expected, line), line
    assert not (tmp_path / "board").exists()


def test_numbers_at_their_bounds_and_within_rounding_are_read(tmp_path):
    suite = suite_json("timm:edge", 1.0)
    suite["datasets"]["imagenet_val"]["metrics"][0].update(value=1 + 1e-12, numerator=3, denominator=3)
    suite["summary"]["lca"] = {"imagenet_val": {"info": math.log2(1000), "depth_two_sided": 30.0}}
    suite["summary"]["uncertainty"] = _uncertainty({ACC: [0.97, 0.99], "quba.score": [-3.0, -1.0]})
    suite["datasets"]["imagenet_val"]["reliability"] = {
        "torchmetrics": _bins(correct=[2, 1], confidence_sum=[2.0, 1.0])
    }
    read_suite(write_run(tmp_path, "edge", suite))  # an interval need not hold its number (ECE's, say)


def _emitted_metric_names() -> set[str]:
    """The ``metric`` of every ``MetricRow(...)`` / ``MetricRow.fraction(...)`` the package writes, read from its
    source: string constants, f-strings with ``5`` for each placeholder (``top{k}_accuracy``), and the OOD
    metric names where the name is a variable."""
    from imagenet_suite.scoring.metrics.ood import METRIC_NAMES

    names: set[str] = set(METRIC_NAMES)
    for path in (REPO_ROOT / "imagenet_suite" / "scoring").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            called = node.func
            name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", None)
            owner = called.value if isinstance(called, ast.Attribute) else None
            if not (name == "MetricRow" or (name == "fraction" and getattr(owner, "id", None) == "MetricRow")):
                continue
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                names.add(first.value)
            elif isinstance(first, ast.JoinedStr):
                names.add("".join(part.value if isinstance(part, ast.Constant) else "5" for part in first.values))
    return names


def test_every_metric_the_families_write_has_a_range():
    names = _emitted_metric_names()
    assert {"top5_accuracy", "ece", "lca", "top5_lca", "unit_tests_failed", "imagenet_m_mistakes"} <= names
    assert not [name for name in sorted(names) if metric_range(name).expected == "a finite number"]


def test_a_suite_json_written_by_evaluate_passes(tmp_path):
    """The ranges hold for the numbers a real run writes (a tiny build, a random-init model, intervals on)."""
    from imagenet_suite import cli
    from imagenet_suite.testing import tiny_val_build

    folder = tiny_val_build(tmp_path / "data")
    run = tmp_path / "run"
    argv = ["evaluate", "--model", "timm:test_resnet", "--weights", "none", "--datasets", str(folder), "--out",
            str(run), "--device", "cpu", "--workers", "0", "--bootstrap", "20", "--no-progress"]  # fmt: skip
    assert cli.main(argv) == 0
    suite = read_suite(run)
    assert suite["summary"]["uncertainty"]["ci95"], "the run has intervals, all of them checked"
    stored = json.loads((run / "suite.json").read_text())  # format 4: each report's rows as columns
    assert stored["format"] == "imagenet-suite.suite/4"
    for key, report in stored["datasets"].items():
        rows = json.loads((run / "reports" / f"{key.replace('/', '__')}.json").read_text())["metrics"]
        assert len(rows) > 5 and report["metrics"] == {field: [row[field] for row in rows] for field in rows[0]}
        assert all_pass(report["metrics"]), key  # checked by array operations alone, not row by row
        assert suite["datasets"][key]["metrics"] == rows  # read back as the score report's rows


ROWS = [
    {"metric": "top1_accuracy", "value": 0.5, "numerator": 1, "denominator": 2},
    {"metric": "top1_accuracy", "value": None},
    {"metric": "top1_accuracy", "value": 1.0 + 1e-12, "variant": "", "subgroup": "n01440764"},
    {"metric": "top1_accuracy", "value": 1.1},
    {"metric": "top1_accuracy", "value": float("nan")},
    {"metric": "top1_accuracy", "value": True},
    {"metric": "top1_accuracy", "value": "0.5"},
    {"metric": "top1_accuracy", "value": 0.5, "numerator": 3, "denominator": 2},
    {"metric": "top1_accuracy", "value": 0.5, "numerator": -1, "denominator": 2},
    {"metric": "top1_accuracy", "value": 0.5, "variant": 3},
    {"metric": "top1_accuracy", "value": 0.5, "subgroup": None},
    {"metric": "top1_accuracy"},
    {"metric": 7, "value": 0.5},
    {"metric": "lca", "value": 9.9, "variant": "info"},
    {"metric": "lca", "value": 10.5, "variant": "info"},
    {"metric": "lca", "value": 10.5, "variant": "depth"},
    {"metric": "c_robustness", "value": -0.1},
    {"metric": "a_new_metric", "value": -3},
    {"metric": "top1_accuracy", "value": 0.5, "numerator": 1.0, "denominator": 2},
    {"metric": "top1_accuracy", "value": 0.5, "numerator": None, "denominator": -2},
    {"metric": "top1_accuracy", "value": 0.5, "numerator": 2**70, "denominator": 2**71},
    ["not", "a", "row"],
]


@pytest.mark.parametrize("row", ROWS, ids=[str(i) for i in range(len(ROWS))])
def test_the_fast_test_of_a_report_row_passes_exactly_the_rows_the_full_check_passes(row):
    """``MetricRowSchema.accepts`` (no paths built: what makes a 300-run leaderboard read fast) agrees with
    ``check``, which names the failing field; ``MetricRows``' loop passes at once only rows the full check
    passes, and with the full check behind it refuses exactly those."""
    from imagenet_suite.scoring.summary.json_schema import Maybe, Mismatch
    from imagenet_suite.scoring.summary.metric_ranges import MetricRows, MetricRowSchema

    schema = MetricRowSchema()
    fast = schema.accepts(row)
    try:
        MetricRowSchema.COUNTS.check(row, "row")  # the full check, without the fast path
        Maybe(metric_range(row["metric"], row.get("variant", ""))).check(row["value"], "row.value")
        full = not (
            row.get("numerator") is not None
            and row.get("denominator") is not None
            and row["numerator"] > row["denominator"]
        )
    except Mismatch:
        full = False
    assert fast == full
    if not fast:
        with pytest.raises(Mismatch):
            schema.check(row, "row")
    rows = MetricRows(schema)
    assert rows.first_unsure([row]) is not None or full  # passed at once: the full check passes it too
    if full:
        rows.check([row], "rows")
    else:
        with pytest.raises(Mismatch, match=r"^rows\[0\]"):
            rows.check([row], "rows")


def test_a_reports_rows_checked_in_one_loop_name_the_first_bad_row_and_share_their_strings():
    """``MetricRows`` (the loop a 300-run leaderboard reads its rows with) refuses exactly what the row-by-row
    check refuses, naming the first bad row's index among many good ones; rows it cannot pass at once (an int
    subclass) go through the full check. ``intern_rows`` (what the leaderboard keeps of them) makes equal strings
    one object."""
    from imagenet_suite.scoring.summary.json_schema import ListOf, Mismatch
    from imagenet_suite.scoring.summary.metric_ranges import MetricRows, MetricRowSchema, intern_rows

    def rows() -> list[dict]:
        good = [{"metric": "top1_accuracy", "value": i / 1000, "variant": "top1", "subgroup": f"c{i % 3}",
                 "numerator": i, "denominator": 1000} for i in range(1000)]  # fmt: skip
        return [*good, {"metric": "lca", "value": 10.5, "variant": "info"}]  # more bits than log2(1000)

    fast, slow = MetricRows(MetricRowSchema()), ListOf(MetricRowSchema())
    for index, change in ((0, {"value": 1.5}), (517, {"numerator": 1001.0}), (999, {"subgroup": None})):
        bad = rows()[:-1]
        bad[index] = {**bad[index], **change}
        messages = []
        for schema in (fast, slow):
            with pytest.raises(Mismatch) as raised:
                schema.check(bad, "metrics")
            messages.append(str(raised.value))
        assert messages[0] == messages[1] and messages[0].startswith(f"metrics[{index}].")
    with pytest.raises(Mismatch, match=r"^metrics\[1000\]\.value: expected a number in \[0, 9\.96578\] or null, found"):
        fast.check(rows(), "metrics")

    class Count(int):
        pass

    passing = [*rows()[:-1], {"metric": "lca", "value": 9.9, "variant": "info"}, {"metric": "x", "value": Count(3)}]
    fast.check(passing, "metrics")  # the last two: not passed by the loop at once, passed by the full check
    again = [dict(row) for row in rows()[:-1]]
    fast.check(again, "metrics")
    intern_rows(passing[:-2])
    assert intern_rows(again) is again
    assert again[5]["subgroup"] is passing[5]["subgroup"] and again[5]["metric"] is passing[7]["metric"]
    assert fast.check([], "metrics") is None
    with pytest.raises(Mismatch, match=r"^metrics: expected a list of an object, found an object$"):
        fast.check({}, "metrics")
