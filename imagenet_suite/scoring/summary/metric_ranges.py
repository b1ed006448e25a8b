"""The range of every number a score report and suite.json's summary hold, as checks of
:mod:`~imagenet_suite.scoring.summary.json_schema`: what the suite.json reader holds each number to, so that a
hand-edited or damaged file (an accuracy of 1e300) is refused before anything ranks it.

* Shares — accuracies, error rates, AUROC, AUPR, FPR@95, ECE, ACE, class balance, shape bias, ASMA — lie in
  [0, 1] (:data:`~.json_schema.FRACTION`).
* Counts (ImageNet-M mistakes, failed unit tests) and ratios of accuracies (C-robustness, relative corruption
  accuracy, the QUBA robustness dimensions) are 0 or more (:data:`~.json_schema.NON_NEGATIVE`).
* LCA distances are 0 or more; in the ``info`` distance (bits, log2 of the classes under the LCA of a
  hierarchy over the 1000 ImageNet-1k classes) at most log2(1000) (:data:`INFO_BITS`).
* A counted row's ``numerator`` and ``denominator`` are 0 or more, the numerator at most the denominator.
* A metric this table does not know is held to being finite only.
"""

from __future__ import annotations

import functools
import math
import re
import sys
from collections.abc import Mapping
from typing import Any

from .json_schema import (
    FRACTION,
    NON_NEGATIVE,
    NUMBER,
    ROUNDING,
    TEXT,
    Check,
    Fields,
    ListOf,
    Maybe,
    Mismatch,
    Number,
    describe_json,
    json_path,
)

INFO_BITS = Number(minimum=0, maximum=math.log2(1000))
"""An LCA distance in the ``info`` distance: log2 of the classes under the LCA, of at most 1000."""

_FRACTIONS = (
    r"(real_)?top\d+_accuracy",
    r"(mean_)?per_class_accuracy",
    r"ece|ace|calibration_error",
    r"class_balance(_accuracy|_confidence)?",
    r"shape_bias|accuracy16",
    r"auroc|fpr95|fpr95_openood_v15|aupr_in|aupr_out|unit_test_failed|in21k_overlap",
    r"(mean_|pooled_)?corruption_accuracy|clean_accuracy",
    r"asma|asma_coverage|multilabel_real_accuracy|multilabel_proportion|subgroup_accuracy",
    r"multilabel_accuracy(_pooled)?|multilabel_problematic",
)
_NON_NEGATIVE = (r"c_robustness|relative_corruption_accuracy", r"imagenet_m_mistakes|unit_tests_failed")
_LCA = r"lca|top\d+_lca|elca"
REPORT_RANGES: tuple[tuple[re.Pattern[str], Number], ...] = (
    *((re.compile(pattern), FRACTION) for pattern in _FRACTIONS),
    *((re.compile(pattern), NON_NEGATIVE) for pattern in _NON_NEGATIVE),
)
"""Report metric names (full matches) and their ranges; the LCA rows' range depends on the distance
(:func:`metric_range`)."""


@functools.lru_cache(maxsize=4096)
def variant_sets_range(metric: str) -> bool:
    """Whether a ``metric`` row's range depends on its variant (:func:`metric_range`): only LCA's, whose variant
    names its distance.

    Example:
        >>> variant_sets_range("elca"), variant_sets_range("top1_accuracy")
        (True, False)
    """
    return re.fullmatch(_LCA, metric) is not None


@functools.lru_cache(maxsize=4096)  # a suite.json has thousands of rows of a few dozen metrics
def metric_range(metric: str, variant: str = "") -> Number:
    """The range of a report row's value: by its ``metric`` name (and, for LCA rows, the distance its ``variant``
    names first).

    Example:
        >>> metric_range("top5_accuracy").expected, metric_range("c_robustness").expected
        ('a number in [0, 1]', 'a finite number >= 0')
        >>> metric_range("lca", "info").expected, metric_range("elca", "depth_one_sided/all").expected
        ('a number in [0, 9.96578]', 'a finite number >= 0')
        >>> metric_range("a_new_metric").expected
        'a finite number'
    """
    if variant_sets_range(metric):
        return INFO_BITS if variant.split("/")[0] == "info" else NON_NEGATIVE
    for pattern, check in REPORT_RANGES:
        if pattern.fullmatch(metric):
            return check
    return NUMBER


class MetricRowSchema(Check):
    """One row of a report's ``metrics``: its fields (``metric``, ``value``; optionally ``variant``,
    ``subgroup``, ``numerator``, ``denominator``), its value in its metric's range (:func:`metric_range`; null
    allowed: NaN is written so), and a numerator no larger than its denominator."""

    expected = "an object"
    COUNTS = Fields(
        {"metric": TEXT, "value": Maybe(NUMBER)},
        {"variant": TEXT, "subgroup": TEXT, "numerator": Maybe(NON_NEGATIVE), "denominator": Maybe(NON_NEGATIVE)},
    )

    def check(self, value: Any, path: str) -> None:
        if self.accepts(value):
            return
        self.COUNTS.check(value, path)
        Maybe(metric_range(value["metric"], value.get("variant", ""))).check(value["value"], json_path(path, "value"))
        numerator, denominator = value.get("numerator"), value.get("denominator")
        if numerator is not None and denominator is not None and numerator > denominator:
            raise Mismatch(
                json_path(path, "numerator"), f"at most the denominator ({denominator!r})", describe_json(numerator)
            )

    def accepts(self, row: Any) -> bool:
        """Whether :meth:`check` passes ``row``, tested without building the paths of its fields (a leaderboard
        reads hundreds of thousands of rows); :meth:`check` builds them only for a row this does not pass, to
        name what is wrong."""
        if type(row) is not dict or "value" not in row:
            return False
        metric, value, variant = row.get("metric"), row["value"], row.get("variant", "")
        if type(metric) is not str or type(variant) is not str or type(row.get("subgroup", "")) is not str:
            return False
        if value is not None and not metric_range(metric, variant).accepts(value):
            return False
        numerator, denominator = row.get("numerator"), row.get("denominator")
        if any(count is not None and not NON_NEGATIVE.accepts(count) for count in (numerator, denominator)):
            return False
        return numerator is None or denominator is None or numerator <= denominator


_LARGEST = sys.float_info.max
_INT_BOUND = 2**63  # an int beyond it goes the slow way (where it is refused or accepted as before)


def _limits(check: Number) -> tuple[float, float, float, float]:
    """``(float low, float high, int low, int high)`` of ``check``: a float passes ``low <= value <= high``
    exactly when :meth:`Number.accepts` passes it (NaN and ±inf fail both comparisons; :data:`ROUNDING` of slack
    at a bound), an int in the int bounds likewise."""
    low = -_LARGEST if check.minimum is None else check.minimum - ROUNDING
    high = _LARGEST if check.maximum is None else check.maximum + ROUNDING
    int_low = -_INT_BOUND if check.minimum is None else max(-_INT_BOUND, math.ceil(check.minimum))
    int_high = _INT_BOUND if check.maximum is None else min(_INT_BOUND, math.floor(check.maximum))
    return low, high, int_low, int_high


_COUNT_LIMITS = _limits(NON_NEGATIVE)


@functools.lru_cache(maxsize=4096)
def metric_limits(metric: str, variant: str = "") -> tuple[float, float, float, float]:
    """``(float low, float high, int low, int high)`` of a report row's value (:func:`metric_range`): a float value
    passes :class:`MetricRowSchema` exactly when ``low <= value <= high``, an int value of at most 2**63 in size
    when it lies in the int bounds.

    Example:
        >>> metric_limits("top1_accuracy")
        (-1e-09, 1.000000001, 0, 1)
    """
    return _limits(metric_range(metric, variant))


class MetricRows(ListOf):
    """A report's ``metrics``: a list of :class:`MetricRowSchema` rows, tested in one loop without a call or a
    path per row (a 300-run leaderboard at the real image counts reads about 7 million rows); a row that loop
    does not pass at once is given to :meth:`MetricRowSchema.check`, which names what is wrong (or passes it:
    the loop handles plain ``float``/``int``/``None`` values only)."""

    def __init__(self, item: MetricRowSchema) -> None:
        super().__init__(item)
        object.__setattr__(self, "_bounds", {})

    def check(self, value: Any, path: str) -> None:
        if type(value) is not list:
            super().check(value, path)
            return
        start = 0
        while (index := self.first_unsure(value, start)) is not None:
            self.item.check(value[index], f"{path}[{index}]")
            start = index + 1

    def first_unsure(self, rows: list, start: int = 0) -> int | None:
        """The index of the first row from ``start`` that the loop cannot pass at once (None: all pass): a value
        that is a float or int (a bool is neither) within its metric's :func:`_limits`, counts that are ints in
        theirs; tested inline, since a call per row costs as much as the rest of the loop."""
        bounds, lowest, highest, missing = self._bounds, _COUNT_LIMITS[2], _COUNT_LIMITS[3], _MISSING
        for index in range(start, len(rows)):
            row = rows[index]
            if type(row) is not dict:
                return index
            get = row.get
            metric, variant, value = get("metric"), get("variant", ""), get("value", missing)
            if type(metric) is not str or type(variant) is not str or type(get("subgroup", "")) is not str:
                return index
            limits = bounds.get((metric, variant))
            if limits is None:
                limits = bounds[(metric, variant)] = metric_limits(metric, variant)
            if value is not None:
                kind = type(value)
                if kind is float:
                    if not limits[0] <= value <= limits[1]:
                        return index
                elif kind is not int or not limits[2] <= value <= limits[3]:  # also the missing value
                    return index
            numerator, denominator = get("numerator"), get("denominator")
            if numerator is None and denominator is None:
                continue
            if numerator is not None and (type(numerator) is not int or not lowest <= numerator <= highest):
                return index  # a float count or a bad one: the full check decides
            if denominator is not None and (type(denominator) is not int or not lowest <= denominator <= highest):
                return index
            if numerator is not None and denominator is not None and numerator > denominator:
                return index
        return None


_MISSING = object()  # a row without "value": not an int, so the loop hands it to the full check


def intern_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` (checked metric rows) with their ``metric``, ``variant`` and ``subgroup`` strings interned, in
    place (equal strings, one object: the rows a leaderboard keeps of hundreds of runs repeat the same few
    hundred)."""
    intern = sys.intern
    for row in rows:
        row["metric"] = intern(row["metric"])
        if "variant" in row:
            row["variant"] = intern(row["variant"])
        if "subgroup" in row:
            row["subgroup"] = intern(row["subgroup"])
    return rows


DIMENSION_RANGES: Mapping[str, Number] = {
    "accuracy": FRACTION,
    "adversarial_robustness": NON_NEGATIVE,  # attacked accuracy over clean accuracy: FGSM may beat clean
    "c_robustness": NON_NEGATIVE,
    "ood_robustness": NON_NEGATIVE,
    "calibration_error": FRACTION,
    "class_balance": FRACTION,
    "object_focus": Number(minimum=0, maximum=2),  # 1 - (mixed_same - mixed_rand) accuracy
    "shape_bias": FRACTION,
    "params_millions": NON_NEGATIVE,
}
"""The range of each QUBA dimension's value (:data:`~imagenet_suite.scoring.metrics.quba.DIMENSIONS`, Hesse et al.
2025; :mod:`imagenet_suite.scoring.summary.quba`)."""


def expert_label_range(key: str) -> Number:
    """``summary.expert_labels``' entries: ``imagenet_m_mistakes/<variant>`` counts, the others shares."""
    return NON_NEGATIVE if key.startswith("imagenet_m_mistakes") else FRACTION


def lca_range(distance: str) -> Number:
    """``summary.lca``'s entries, by distance (:func:`metric_range` of an ``lca`` row)."""
    return metric_range("lca", distance)


__all__ = [
    "DIMENSION_RANGES",
    "INFO_BITS",
    "REPORT_RANGES",
    "MetricRowSchema",
    "MetricRows",
    "expert_label_range",
    "lca_range",
    "metric_limits",
    "metric_range",
    "variant_sets_range",
]
