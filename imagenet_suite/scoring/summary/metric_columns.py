"""A report's metric rows as columns: how suite.json (format 4) stores each report's ``metrics``, and their check.

A report's rows (:class:`~imagenet_suite.scoring.evaluation.results.MetricRow`: ``metric``, ``value``,
``variant``, ``subgroup``, ``numerator``, ``denominator``) are stored in suite.json as one list per field,
row ``i`` being the ``i``-th item of each (:func:`rows_to_columns`; ``pandas.DataFrame(columns)`` is the table).
Most of a suite.json at the real image counts is such rows (1,000 per-class accuracies per ImageNet report, five
OOD metrics per OOD class), and a leaderboard reads hundreds of suite.json files: as columns, a file is parsed in
less than half the time, and :class:`MetricColumns` checks every row against the same ranges as
:class:`~imagenet_suite.scoring.summary.metric_ranges.MetricRowSchema` with array operations instead of a Python
loop over rows. :func:`columns_to_rows` gives the rows back (every reader in the package works on rows), leaving
out those of metrics a reader does not need.

Example:
    >>> rows = [{"metric": "top1_accuracy", "value": 0.5, "variant": "", "subgroup": "", "numerator": 1,
    ...          "denominator": 2}, {"metric": "ece", "value": None, "variant": "guo", "subgroup": "",
    ...          "numerator": None, "denominator": None}]
    >>> columns = rows_to_columns(rows)
    >>> columns["metric"], columns["value"]
    (['top1_accuracy', 'ece'], [0.5, None])
    >>> columns_to_rows(columns) == rows, columns_to_rows(columns, drop=frozenset({"ece"})) == rows[:1]
    (True, True)
    >>> MetricColumns().check({**columns, "value": [1.5, None]}, "metrics")
    Traceback (most recent call last):
    ...
    imagenet_suite.scoring.summary.json_schema.Mismatch: metrics.value[0]: expected a number in [0, 1] or null, found the number 1.5
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from itertools import compress
from operator import not_
from typing import Any

import numpy as np

from .json_schema import Check, Mismatch, describe_json, json_path
from .metric_ranges import MetricRows, MetricRowSchema, metric_limits, variant_sets_range

METRIC_KEYS = ("metric", "value", "variant", "subgroup", "numerator", "denominator")
"""The fields of a metric row, in the order :class:`~imagenet_suite.scoring.evaluation.results.MetricRow` has them:
the columns of a format-4 report's ``metrics``."""
_EXACT = 2**53  # a count or value beyond it is not exact as a float: such a column goes the row-by-row way
_TEXT, _VALUE, _COUNT = frozenset({str}), frozenset({float, int, type(None)}), frozenset({int, type(None)})


def rows_to_columns(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """``{field: [its value in each row]}`` over :data:`METRIC_KEYS` (a field a row lacks: null)."""
    rows = list(rows)
    return {key: [row.get(key) for row in rows] for key in METRIC_KEYS}


def columns_to_rows(columns: Mapping[str, list[Any]], drop: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """The rows of checked ``columns`` (:class:`MetricColumns`), each a dict of :data:`METRIC_KEYS`, but those whose
    ``metric`` is in ``drop``; their ``metric``, ``variant`` and ``subgroup`` strings interned (one object per
    distinct string: the rows a leaderboard keeps of hundreds of runs repeat the same few hundred)."""
    intern = sys.intern
    metric, value, variant, subgroup, numerator, denominator = (columns[key] for key in METRIC_KEYS)
    kept = compress(range(len(metric)), map(not_, map(drop.__contains__, metric))) if drop else range(len(metric))
    return [
        {"metric": intern(metric[i]), "value": value[i], "variant": intern(variant[i]),
         "subgroup": intern(subgroup[i]), "numerator": numerator[i], "denominator": denominator[i]}
        for i in kept
    ]  # fmt: skip


class MetricColumns(Check):
    """A format-4 report's ``metrics``: an object with a list per :data:`METRIC_KEYS` field, all of one length, row
    ``i`` holding what :class:`~imagenet_suite.scoring.summary.metric_ranges.MetricRowSchema` holds a row to
    (``metric``, ``variant`` and ``subgroup`` strings, the value null or in its metric's range, the counts null or
    numbers ≥ 0, the numerator at most the denominator). Tested a column at a time; where that test is not sure of a column (a type it does not
    handle, an integer beyond 2**53), the rows are checked one by one, so that the first wrong row is named:
    ``metrics.value[3]``."""

    expected = f"an object of lists {list(METRIC_KEYS)} of one length"

    def __init__(self) -> None:
        self.rows = MetricRows(MetricRowSchema())

    def check(self, value: Any, path: str) -> None:
        if type(value) is not dict:
            raise Mismatch(path, self.expected, describe_json(value))
        for key in METRIC_KEYS:
            if type(value.get(key)) is not list:
                raise Mismatch(json_path(path, key), "a list", None if key not in value else describe_json(value[key]))
        lengths = {key: len(value[key]) for key in METRIC_KEYS}
        if len(set(lengths.values())) != 1:
            raise Mismatch(path, f"lists {list(METRIC_KEYS)} of one length", f"lengths {lengths}")
        if not all_pass(value):
            self._check_rows(value, path)

    def _check_rows(self, columns: Mapping[str, list[Any]], path: str) -> None:
        """The row-by-row check of :class:`MetricRows`, its path ``[i].field`` written ``field[i]``."""
        rows = [dict(zip(METRIC_KEYS, row, strict=True)) for row in zip(*(columns[k] for k in METRIC_KEYS))]
        try:
            self.rows.check(rows, "")
        except Mismatch as mismatch:
            index, _, field = mismatch.path.removeprefix("[").partition("]")
            at = f"{json_path(path, field.removeprefix('.')) if field else path}[{index}]"
            raise Mismatch(at, mismatch.expected, mismatch.found) from mismatch


def all_pass(columns: Mapping[str, list[Any]]) -> bool:
    """Whether every row of ``columns`` (lists of one length) passes :class:`MetricRowSchema`, tested a column at a
    time (no Python code runs per row); False also when this test cannot tell (the caller then checks row by row).

    Example:
        >>> columns = {"metric": ["top1_accuracy", "lca"], "value": [0.5, 12.0], "variant": ["", "info"],
        ...            "subgroup": ["", ""], "numerator": [1, None], "denominator": [2, None]}
        >>> all_pass(columns), all_pass({**columns, "variant": ["", "depth_one_sided"]})
        (False, True)
    """
    metric = columns["metric"]
    if not metric:
        return True
    try:  # the metrics told apart once: their types tested on the distinct names only
        names = dict.fromkeys(metric)
    except TypeError:  # an unhashable value (a list, an object) is not a string
        return False
    if not all(type(name) is str for name in names):
        return False  # (a string equals no other type: one among the distinct names if any)
    if not (set(map(type, columns["variant"])) <= _TEXT and set(map(type, columns["subgroup"])) <= _TEXT):
        return False
    limits = _row_limits(metric, columns["variant"], names)
    return _values_pass(columns["value"], limits) and _counts_pass(columns["numerator"], columns["denominator"])


def _row_limits(metric: list[str], variant: list[str], names: dict[str, None]) -> np.ndarray:
    """Each row's :func:`~.metric_ranges.metric_limits` (an ``[N, 4]`` array, or ``[1, 4]`` when all rows share one)
    from the rows' metrics, their distinct ``names`` in the order first seen, and the variants of the rows whose
    metric's range depends on it (:func:`~.metric_ranges.variant_sets_range`: LCA's, a few rows a report)."""
    table = np.array([metric_limits(name) for name in names])
    if len(names) == 1 and not variant_sets_range(metric[0]):
        return table
    index = {name: i for i, name in enumerate(names)}
    codes = np.fromiter(map(index.__getitem__, metric), np.intp, len(metric))
    limits = table[codes]
    by_variant = [i for i, name in enumerate(names) if variant_sets_range(name)]
    for row in np.flatnonzero(np.isin(codes, by_variant)) if by_variant else ():
        limits[row] = metric_limits(metric[row], variant[row])
    return limits


def _values_pass(value: list[Any], limits: np.ndarray) -> bool:
    types = set(map(type, value))
    if not types <= _VALUE:
        return False
    try:
        values = np.array(value, dtype=float)  # null: NaN
    except OverflowError:  # an int beyond a float's range
        return False
    nulls = value.count(None) if type(None) in types else 0
    if int(np.isnan(values).sum()) != nulls:  # a NaN that is not a null (read with a NaN literal)
        return False
    low, high = limits[:, 0], limits[:, 1]
    if int in types:
        if np.nanmax(np.abs(values)) >= _EXACT:
            return False
        integral = np.fromiter((type(item) is int for item in value), bool, len(value))
        low, high = np.where(integral, limits[:, 2], low), np.where(integral, limits[:, 3], high)
    with np.errstate(invalid="ignore"):
        return int(((low <= values) & (values <= high)).sum()) + nulls == len(values)


def _counts_pass(numerator: list[Any], denominator: list[Any]) -> bool:
    """Each count null or an int in [0, 2**53), the numerator at most the denominator where both are given.

    Tested as floats (null: NaN, which fails every comparison): an int below 2**53 is exact as a float, and one at
    or above it is a float at or above it (conversion rounds monotonically), refused."""
    columns = (numerator, denominator)
    if not all(set(map(type, column)) <= _COUNT for column in columns):
        return False
    try:
        counts = [np.array(column, dtype=float) for column in columns]
    except OverflowError:  # an int beyond a float's range
        return False
    with np.errstate(invalid="ignore"):
        if any(bool(((found < 0) | (found >= _EXACT)).any()) for found in counts):
            return False
        return not bool((counts[0] > counts[1]).any())


__all__ = ["METRIC_KEYS", "MetricColumns", "all_pass", "columns_to_rows", "rows_to_columns"]
