"""What a reader keeps of a suite.json it reads (:func:`~imagenet_suite.scoring.summary.suite_json.read_suite`): all
of it — a run's page, its summary — or, for a reader of many runs (the leaderboard), only what it reads, in less
memory.

A :class:`Holding` names the report rows (by metric) and report keys to leave out once checked, and whether to
hold the rest compactly: each report's rows as :class:`~imagenet_suite.scoring.summary.column_rows.ColumnRows`, and
equal records one object (:func:`share_records`: the runs of a zoo read the same builds with the same protocols,
so their reports' ``meta`` and ``provenance`` records repeat hundreds of times). A run at the real image counts
is then held in about 0.36 MiB instead of 1.4 (tracemalloc), read the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Holding:
    """What :func:`~imagenet_suite.scoring.summary.suite_json.read_suite` keeps: every report without its rows of
    ``metrics_dropped`` and its keys ``report_keys_dropped`` (both checked first); ``compact``: rows as
    :class:`~imagenet_suite.scoring.summary.column_rows.ColumnRows` and equal records one object
    (:func:`share_records`), to be read, never changed."""

    metrics_dropped: frozenset[str] = frozenset()
    report_keys_dropped: frozenset[str] = frozenset()
    compact: bool = False


KEEP_ALL = Holding()
SHARED_RECORDS = ("meta", "provenance")
"""The records of a report :func:`share_records` holds once: ``meta`` (and each of its records, such as the
preprocessing), and each record of ``provenance`` (the build read)."""


def share_records(suites: Iterable[MutableMapping[str, Any]], shared: dict[str, Any] | None = None) -> None:
    """Make equal :data:`SHARED_RECORDS` of the reports of ``suites`` one object, in place (equal: the same JSON,
    keys in the same order). ``shared``: the records already held, by their JSON (default: a new table).

    Example:
        >>> build = {"builder": "imagenet_val", "version": "1.0.0"}
        >>> runs = [{"datasets": {"val": {"meta": {"dataset": "imagenet_val", "hierarchy": {"kind": "wordnet"}},
        ...                                "provenance": {"dataset": dict(build)}}}} for _ in range(2)]
        >>> share_records(runs)
        >>> first, second = (run["datasets"]["val"] for run in runs)
        >>> first["meta"] is second["meta"], first["provenance"]["dataset"] is second["provenance"]["dataset"]
        (True, True)
        >>> first["meta"] == {"dataset": "imagenet_val", "hierarchy": {"kind": "wordnet"}}
        True
    """
    shared = {} if shared is None else shared

    def one(record: Any) -> Any:
        if not isinstance(record, dict):
            return record
        for key, value in record.items():
            if isinstance(value, dict):
                record[key] = shared.setdefault(json.dumps(value), value)
        return shared.setdefault(json.dumps(record), record)

    for suite in suites:
        for report in suite["datasets"].values():
            if "meta" in report:
                report["meta"] = one(report["meta"])
            provenance = report.get("provenance")
            if isinstance(provenance, dict):
                report["provenance"] = {key: one(record) for key, record in provenance.items()}


__all__ = ["KEEP_ALL", "SHARED_RECORDS", "Holding", "share_records"]
