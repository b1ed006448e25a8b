"""Texture-vs-shape (Geirhos et al. 2019; model-vs-human's matrix plot): shape bias on cue-conflict images per
shape category, a marker per model, each model's pooled shape bias a vertical line, and the ten human observers
pooled as model-vs-human draws them ("humans": red diamonds, their pooled shape bias a red line), from the
reference table ``geirhos2019_cue_conflict_humans`` (:mod:`imagenet_suite.reference`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from matplotlib.figure import Figure as MplFigure

from ....reference import load
from ...metrics.shape_bias_counts import ShapeBias
from ...metrics.shape_bias_counts import pooled as pooled_counts
from ...summary.reports import reports_of
from ..html import Figure, drawn
from . import LEADERBOARD

SHAPE_BIAS = "Shape bias per category (cue-conflict; model-vs-human's plot, with the human observers)"
MOST_MODELS = 8  # markers beyond this are unreadable: the first models by name are drawn
HUMANS = "humans (10 observers, Geirhos et al. 2019)"
HUMAN_TABLE = "geirhos2019_cue_conflict_humans"


def human_shape_bias() -> tuple[float, dict[str, float]]:
    """``(pooled, {category: shape bias})`` of the ten observers, pooled as model-vs-human's matrix plot pools
    them (the counts summed over observers, then shape hits / (shape + texture hits)).

    Example:
        >>> pooled, per_category = human_shape_bias()
        >>> round(pooled, 4), len(per_category), round(per_category["bicycle"], 3)
        (0.9587, 16, 0.997)
    """
    table = load(HUMAN_TABLE)
    fields = list(ShapeBias.__dataclass_fields__)
    counts = lambda rows: [ShapeBias(*map(int, row)) for row in rows[fields].itertuples(index=False)]  # noqa: E731
    per = {category: pooled_counts(counts(rows)).value for category, rows in table.groupby("category", sort=True)}
    return pooled_counts(counts(table)).value, per


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


def shape_bias_plot(
    values: Mapping[str, tuple[float | None, Mapping[str, float]]],
    title: str = "",
    humans: tuple[float, Mapping[str, float]] | None = None,
) -> MplFigure:
    """``values``: ``{model: (pooled, {category: shape bias})}``; categories on the y axis, shape bias (the
    fraction of shape decisions) on the x axis, one colour per model; ``humans`` (``(pooled, per category)``,
    :func:`human_shape_bias`) drawn as model-vs-human draws them, red diamonds and a red line."""
    categories = sorted({name for _, per in values.values() for name in per} | set(humans[1] if humans else ()))
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
    if humans is not None:
        human_pooled, human_per = humans
        points = [(human_per[name], position) for position, name in enumerate(categories) if name in human_per]
        xs, ys = np.array(points).T
        axes.scatter(xs, ys, color="red", marker="D", s=22, zorder=4, label=HUMANS)
        axes.axvline(human_pooled, color="red", linewidth=1.2, label=f"humans pooled {human_pooled:.3f}")
    if categories:
        axes.set_yticks(range(len(categories)), categories, fontsize=7)
        axes.invert_yaxis()
    else:
        axes.set_yticks([])
    axes.set(xlim=(0, 1), xlabel="shape bias: fraction of shape decisions (1 = all shape)")
    axes.grid(axis="x", alpha=0.3)
    axes.set_title(title or "shape bias on cue-conflict images", fontsize=8)
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
    return drawn(SHAPE_BIAS, shape_bias_plot, shown, humans=human_shape_bias())


__all__ = ["HUMANS", "SHAPE_BIAS", "human_shape_bias", "shape_bias", "shape_bias_plot", "shape_bias_values"]
