"""Texture-vs-shape (Geirhos et al. 2019; model-vs-human's plot): shape bias on cue-conflict images per shape
category, a marker per model, each model's pooled shape bias a vertical line.

Without the human points: the repository holds no human observers' shape-bias values (model-vs-human's raw
human data is not among ``tests/data`` nor the reference zoos), so the figure says so instead of drawing them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from matplotlib.figure import Figure as MplFigure

from ...summary.reports import reports_of
from ..html import Figure, drawn
from . import LEADERBOARD

SHAPE_BIAS = "Shape bias per category (cue-conflict; model-vs-human's plot, no human points)"
MOST_MODELS = 8  # markers beyond this are unreadable: the first models by name are drawn
NO_HUMANS = "the human observers' values are not in the repository: this plot has no human points"


def shape_bias_values(suite: Mapping[str, Any]) -> tuple[float | None, dict[str, float]]:
    """``(pooled, {category: shape bias})`` of a run's ``shape_bias_sets`` / ``cue_conflict`` report (the
    rows the ``shape_bias`` family writes); ``(None, {})`` without one."""
    pooled, categories = None, {}
    for _, report in reports_of(suite.get("datasets", {}), "shape_bias_sets", "cue_conflict"):
        for row in report.get("metrics", ()):
            if row["metric"] != "shape_bias" or row.get("value") is None:
                continue
            if row.get("subgroup"):
                categories[row["subgroup"]] = float(row["value"])
            else:
                pooled = float(row["value"])
        break
    return pooled, categories


def shape_bias_plot(values: Mapping[str, tuple[float | None, Mapping[str, float]]], title: str = "") -> MplFigure:
    """``values``: ``{model: (pooled, {category: shape bias})}``; categories on the y axis, shape bias (the
    fraction of shape decisions) on the x axis, one colour per model."""
    categories = sorted({name for _, per in values.values() for name in per})
    figure = MplFigure(figsize=(6, 0.3 * max(len(categories), 4) + 1.6))
    axes = figure.subplots()
    colours = [f"C{i}" for i in range(10)]
    for i, (model, (pooled, per)) in enumerate(values.items()):
        colour = colours[i % len(colours)]
        points = [(per[name], position) for position, name in enumerate(categories) if name in per]
        if points:
            xs, ys = np.array(points).T
            axes.scatter(xs, ys, color=colour, s=18, zorder=3, label=str(model))
        if pooled is not None:
            label = f"{model} pooled {pooled:.3f}" if points else f"{model} (pooled only) {pooled:.3f}"
            axes.axvline(pooled, color=colour, linestyle="--", linewidth=1, label=label)
    if categories:
        axes.set_yticks(range(len(categories)), categories, fontsize=7)
        axes.invert_yaxis()
    else:
        axes.set_yticks([])
    axes.set(xlim=(0, 1), xlabel="shape bias: fraction of shape decisions (1 = all shape)")
    axes.grid(axis="x", alpha=0.3)
    axes.set_title(title or "shape bias on cue-conflict images (no human points: not in the repository)", fontsize=8)
    axes.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=7)
    figure.tight_layout()
    return figure


def shape_bias(suites: Mapping[str, Mapping[str, Any]]) -> Figure:
    """The shape-bias plot of the runs ``suites`` (``{model: suite.json content}``; the first
    :data:`MOST_MODELS` models having one), or what is missing."""
    values = {}
    for model, suite in suites.items():
        pooled, per = shape_bias_values(suite)
        if pooled is None:
            entry = (suite.get("summary", {}).get("quba", {}).get("dimensions") or {}).get("shape_bias")
            pooled = None if entry is None else entry.get("value")
        if pooled is not None or per:
            values[model] = (pooled, per)
    if not values:
        return Figure(SHAPE_BIAS, missing="no run has a shape bias: evaluate with the `shape_bias_sets` builder's "
                      f"`cue_conflict` config (`imagenet-suite evaluate MODEL --datasets ...`), then {LEADERBOARD}")  # fmt: skip
    shown = dict(list(values.items())[:MOST_MODELS])
    return drawn(SHAPE_BIAS, shape_bias_plot, shown)


__all__ = ["NO_HUMANS", "SHAPE_BIAS", "shape_bias", "shape_bias_plot", "shape_bias_values"]
