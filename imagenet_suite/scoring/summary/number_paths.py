"""The headline numbers of a suite summary by their JSON paths (``quba.score``,
``accuracies["imagenet_c/fog_2"].value``): the names of ``summary.uncertainty.ci95``, ``no_interval`` and the
replicates' columns (:mod:`~imagenet_suite.scoring.summary.intervals`), of the report page's headline table and
of the leaderboard's paired tests (:mod:`~imagenet_suite.scoring.summary.significance`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .json_schema import json_path


def number_path(*keys: str) -> str:
    """The JSON path of a number in ``summary`` (``quba.score``, ``accuracies["imagenet_c/fog_2"].value``):
    the names of ``summary.uncertainty.ci95``, ``no_interval`` and of the replicates' columns.

    Example:
        >>> number_path("quba", "dimensions", "accuracy", "value")
        'quba.dimensions.accuracy.value'
        >>> number_path("accuracies", "imagenet_c/fog_2", "value")
        'accuracies["imagenet_c/fog_2"].value'
    """
    path = ""
    for key in keys:
        path = json_path(path, key)
    return path


def headline_numbers(summary: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """``{number_path: keys}`` of every number ``suite.md`` shows in ``summary`` (not None)."""
    found: dict[str, tuple[str, ...]] = {}

    def add(entry: Mapping[str, Any] | None, *keys: str) -> None:
        if entry is not None and isinstance(entry.get(keys[-1]), int | float):
            found[number_path(*keys)] = keys

    quba = summary["quba"]
    add(quba, "quba", "score")
    for name, entry in quba["dimensions"].items():
        add(entry, "quba", "dimensions", name, "value")
    for key, entry in summary["accuracies"].items():
        add(entry, "accuracies", key, "value")
        add(entry, "accuracies", key, "clean_accuracy")
    corrupted = summary.get("imagenet_c") or {}
    if corrupted:
        add(corrupted, "imagenet_c", "mce")
        add(corrupted, "imagenet_c", "relative_mce")
    for name, entry in corrupted.get("corruptions", {}).items():
        for column in ("accuracy", "ce", "relative_ce"):
            add(entry, "imagenet_c", "corruptions", name, column)
    for name, entry in (summary.get("ninco") or {}).items():
        add(entry, "ninco", name, "mean_auroc")
        add(entry, "ninco", name, "mean_fpr95")
    for section in ("expert_labels", "anzaku2024", "asma", "lca"):
        for key, entry in (summary.get(section) or {}).items():
            for name in entry:
                add(entry, section, key, name)
    real = summary.get("real")
    add(real, "real", "real_top1_accuracy")
    add(real, "real", "real_top5_accuracy")
    return found


def value_at(summary: Mapping[str, Any], keys: Iterable[str]) -> Any:
    """The value at ``keys`` (a number's path in ``summary``: :func:`headline_numbers`), None where absent."""
    value: Any = summary
    for key in keys:
        if not isinstance(value, Mapping) or key not in value:
            return None
        value = value[key]
    return value


__all__ = ["headline_numbers", "number_path", "value_at"]
