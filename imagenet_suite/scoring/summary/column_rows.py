"""A report's metric rows held as columns, each row made a dict only while it is read: what a leaderboard keeps of
each of hundreds of runs.

A run at the real image counts has about 3,100 rows the leaderboard reads (NINCO's AUROC and FPR@95 per OOD
class and detector are most of them). As dicts they cost about 300 bytes each (the dict, its float), about 0.9 MiB
a run; as :class:`ColumnRows` — a tuple of interned strings per text field, the values as doubles, the counts only
where a row has one — about 32 bytes each. Reading is unchanged: iterating gives the same dicts
:func:`~imagenet_suite.scoring.summary.metric_columns.columns_to_rows` gives, made as they are read (about 1 ms
for a run's rows), so every reader of ``report["metrics"]`` works on either.

Example:
    >>> rows = [{"metric": "fpr95", "value": 0.25, "variant": "msp", "subgroup": "cat", "numerator": None,
    ...          "denominator": None}, {"metric": "top1_accuracy", "value": None, "variant": "", "subgroup": "",
    ...          "numerator": 3, "denominator": 4}]
    >>> held = ColumnRows.from_rows(rows)
    >>> len(held), list(held) == rows, held[1]["numerator"], held == rows
    (2, True, 3, True)
    >>> ColumnRows.from_columns(rows_to_columns(rows), drop=frozenset({"fpr95"})) == rows[1:]
    True
"""

from __future__ import annotations

import math
import sys
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import compress, repeat
from typing import Any, overload

from .metric_columns import METRIC_KEYS, rows_to_columns


class ColumnRows(Sequence):
    """Checked metric rows as columns (:data:`~imagenet_suite.scoring.summary.metric_columns.METRIC_KEYS`); a
    sequence of row dicts, each made when it is read (a changed dict changes nothing held). Equal to any sequence
    of the same rows. Values are held as doubles when every one is a float or null (null as NaN, and a NaN
    value is never held that way), else as they are; the counts only when a row has one."""

    __slots__ = ("_counts", "_metric", "_subgroup", "_value", "_variant")

    def __init__(
        self,
        metric: tuple[str, ...],
        value: array | tuple[Any, ...],
        variant: tuple[str, ...],
        subgroup: tuple[str, ...],
        counts: tuple[tuple[Any, ...], tuple[Any, ...]] | None,
    ) -> None:
        """Held as given (use :meth:`from_columns` or :meth:`from_rows`): ``value`` an ``array("d")`` (NaN: null)
        or a tuple, ``counts`` the numerators and denominators, or None when every one is null."""
        self._metric, self._value, self._counts = metric, value, counts
        self._variant, self._subgroup = variant, subgroup

    @classmethod
    def from_columns(cls, columns: Mapping[str, list[Any]], drop: frozenset[str] = frozenset()) -> ColumnRows:
        """The rows of checked ``columns`` (a format-4 report's ``metrics``), but those whose ``metric`` is in
        ``drop``; their strings interned (the runs of a leaderboard repeat the same few hundred)."""
        metric = columns["metric"]
        kept = list(compress(range(len(metric)), [name not in drop for name in metric])) if drop else None

        def column(key: str) -> list[Any]:
            found = columns[key]
            return found if kept is None else [found[i] for i in kept]

        intern = sys.intern
        texts = [tuple(map(intern, column(key))) for key in ("metric", "variant", "subgroup")]
        numerator, denominator = column("numerator"), column("denominator")
        counts = None
        if any(count is not None for count in numerator) or any(count is not None for count in denominator):
            counts = (tuple(numerator), tuple(denominator))
        return cls(texts[0], _held_values(column("value")), texts[1], texts[2], counts)

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping[str, Any]]) -> ColumnRows:
        """``rows`` (checked metric rows; a field a row lacks: null) held as columns."""
        return cls.from_columns(rows_to_columns(rows))

    @staticmethod
    def holds_as_read(rows: Iterable[Mapping[str, Any]]) -> bool:
        """Whether every row has all six fields, its ``metric``, ``variant`` and ``subgroup`` strings (as format 4
        has them), so that :meth:`from_rows` gives back exactly these dicts (a row of an older format may lack a
        field, which ``row.get(field, "")`` reads as "" and a held row would hold as null).

        Example:
            >>> full = {"metric": "lca", "value": 2.0, "variant": "", "subgroup": "", "numerator": None, "denominator": None}
            >>> ColumnRows.holds_as_read([full]), ColumnRows.holds_as_read([{"metric": "lca", "value": 2.0}])
            (True, False)
        """
        texts = ("metric", "variant", "subgroup")
        return all(len(row) == len(METRIC_KEYS) and row.keys() == set(METRIC_KEYS) and all(type(row[key]) is str
                   for key in texts) for row in rows)  # fmt: skip

    def interned(self) -> ColumnRows:
        """The same rows, their strings interned in this process (after unpickling: one object per distinct
        string)."""
        intern = sys.intern
        texts = [tuple(map(intern, found)) for found in (self._metric, self._variant, self._subgroup)]
        return ColumnRows(texts[0], self._value, texts[1], texts[2], self._counts)

    def first(self, metric: str, variant: str | None, subgroup: str) -> dict[str, Any] | None:
        """The first row of ``metric`` (any variant when None) and ``subgroup``, or None: what
        :func:`~imagenet_suite.scoring.summary.reports.report_row` looks for, found without making a dict of each
        row before it.

        Example:
            >>> held = ColumnRows.from_rows([{"metric": "lca", "value": 2.0, "variant": "info", "subgroup": ""},
            ...                              {"metric": "lca", "value": 3.0, "variant": "depth", "subgroup": ""}])
            >>> held.first("lca", "depth", "")["value"], held.first("lca", None, "")["value"], held.first("ece", None, "")
            (3.0, 2.0, None)
        """
        for index, (name, group) in enumerate(zip(self._metric, self._subgroup, strict=True)):
            if name == metric and group == subgroup and (variant is None or self._variant[index] == variant):
                return self[index]
        return None

    def __len__(self) -> int:
        return len(self._metric)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        size = len(self._metric)
        values: Iterable[Any] = self._value
        if isinstance(values, array):
            values = (None if value != value else value for value in values)  # NaN: null
        numerators, denominators = self._counts or (repeat(None, size), repeat(None, size))
        for metric, value, variant, subgroup, numerator, denominator in zip(
            self._metric, values, self._variant, self._subgroup, numerators, denominators, strict=True
        ):
            yield {"metric": metric, "value": value, "variant": variant, "subgroup": subgroup,
                   "numerator": numerator, "denominator": denominator}  # fmt: skip

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        value = self._value[index]
        if value != value and isinstance(self._value, array):  # NaN held for null
            value = None
        numerator, denominator = (None, None) if self._counts is None else (c[index] for c in self._counts)
        return {"metric": self._metric[index], "value": value,
                "variant": self._variant[index], "subgroup": self._subgroup[index], "numerator": numerator,
                "denominator": denominator}  # fmt: skip

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # equal to lists, which are not hashable either

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return ColumnRows, (self._metric, self._value, self._variant, self._subgroup, self._counts)

    def __repr__(self) -> str:
        return f"<ColumnRows: {len(self)} metric rows>"


def _held_values(values: list[Any]) -> array | tuple[Any, ...]:
    """``values`` as doubles (null: NaN) when each is a float or null and none is NaN; else as a tuple."""
    if all(type(value) is float or value is None for value in values) and not any(
        value is not None and math.isnan(value) for value in values
    ):
        return array("d", [math.nan if value is None else value for value in values])
    return tuple(values)


__all__ = ["ColumnRows"]
