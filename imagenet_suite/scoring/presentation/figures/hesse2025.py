"""Beyond Accuracy (Hesse et al. 2025): the radar of the nine QUBA dimensions, one polygon per model (Fig. 1).

Each axis is a dimension's signed z-score against the paper's zoo (its μ/σ, Table 11's exact constants,
:func:`~imagenet_suite.scoring.metrics.quba.quba_z_scores`), so that 0 is the zoo mean and outward is better
on every axis (calibration error and parameters flipped), the normalisation under the QUBA score itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure as MplFigure

from ...metrics.quba import DIMENSIONS, quba_z_scores
from ..html import Figure, drawn
from . import LEADERBOARD

RADAR = "QUBA dimensions radar (Fig. 1)"
MOST_MODELS = 8  # polygons beyond this are unreadable: the best by QUBA score are drawn


def radar_plot(z_scores: Any, title: str = "") -> MplFigure:
    """A radar of ``z_scores`` (a DataFrame: models × :data:`DIMENSIONS`, signed z-scores), a polygon per row
    and a dashed circle at 0 (the zoo mean)."""
    angles = np.linspace(0, 2 * np.pi, len(DIMENSIONS), endpoint=False)
    closed = np.append(angles, angles[0])
    figure = MplFigure(figsize=(6.4, 5.2))
    axes = figure.add_subplot(projection="polar")
    values = z_scores.to_numpy(dtype=float)
    low = min(-3.0, float(np.floor(values.min())))
    high = max(2.0, float(np.ceil(values.max())))
    for name, row in zip(z_scores.index, values, strict=True):
        axes.plot(closed, np.append(row, row[0]), linewidth=1.2, label=str(name))
        axes.fill(closed, np.append(row, row[0]), alpha=0.08)
    axes.plot(closed, np.zeros_like(closed), color="0.4", linestyle="--", linewidth=0.8, label="zoo mean")
    axes.set_ylim(low, high)
    axes.set_xticks(angles, [name.replace("_", "\n") for name in DIMENSIONS], fontsize=7)
    axes.tick_params(axis="y", labelsize=6)
    axes.set_title(title or "QUBA dimensions (signed z-score; outward is better)", fontsize=9)
    axes.legend(loc="upper left", bbox_to_anchor=(1.08, 1.0), fontsize=7)
    figure.tight_layout()
    return figure


def radar(board: Any) -> Figure:
    """The radar of the models with all nine dimensions (the :data:`MOST_MODELS` best by QUBA score when more),
    or what is missing."""
    quba = board.quba
    complete = quba[list(DIMENSIONS)].dropna() if len(quba) else quba
    if not len(complete):
        return Figure(RADAR, missing="no model has all nine QUBA dimensions: evaluate each model on Beyond "
                      f"Accuracy's datasets (`imagenet-suite evaluate MODEL --protocol hesse2025 ...`), then {LEADERBOARD}")  # fmt: skip
    if len(complete) > MOST_MODELS:
        best = quba.loc[complete.index, "quba"].sort_values(ascending=False).index[:MOST_MODELS]
        complete = complete.loc[best]
    z_scores = complete.copy()
    z_scores[:] = quba_z_scores(complete.to_numpy(dtype=float))
    shown = "" if len(complete) == len(quba[list(DIMENSIONS)].dropna()) else f" (the {MOST_MODELS} best by QUBA)"
    return drawn(RADAR, radar_plot, z_scores, title=f"QUBA dimensions, signed z-score{shown}; outward is better")


__all__ = ["RADAR", "radar", "radar_plot"]
