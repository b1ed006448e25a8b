"""NINCO (Bitterwolf et al. 2023): the models × detectors heatmap of the mean FPR@95 over NINCO's OOD classes."""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure as MplFigure

from ..html import Figure, drawn
from . import LEADERBOARD

HEATMAP = "Mean FPR@95 on NINCO: models × detectors (Table 3)"


def heatmap_plot(fpr95: Any, title: str = "") -> MplFigure:
    """``fpr95`` (models × detectors, fractions; NaN: not scored) as cells in percent, darker is worse."""
    values = 100 * fpr95.to_numpy(dtype=float)
    rows, columns = values.shape
    figure = MplFigure(figsize=(0.9 * columns + 3.2, 0.4 * rows + 1.6))
    axes = figure.subplots()
    image = axes.imshow(np.ma.masked_invalid(values), cmap="Reds", vmin=0, vmax=100, aspect="auto")
    for i in range(rows):
        for j in range(columns):
            text = "—" if np.isnan(values[i, j]) else f"{values[i, j]:.1f}"
            colour = "white" if not np.isnan(values[i, j]) and values[i, j] > 60 else "black"
            axes.text(j, i, text, ha="center", va="center", fontsize=7, color=colour)
    axes.set_xticks(range(columns), [str(c) for c in fpr95.columns], rotation=30, ha="right", fontsize=7)
    axes.set_yticks(range(rows), [str(r) for r in fpr95.index], fontsize=7)
    figure.colorbar(image, ax=axes, fraction=0.046, pad=0.04, label="FPR@95 (%, lower is better)")
    axes.set_title(title or "mean FPR@95 over NINCO's OOD classes (%)", fontsize=9)
    figure.tight_layout()
    return figure


def fpr95_heatmap(board: Any) -> Figure:
    """The heatmap of ``board.ninco.fpr95``, or what is missing."""
    ninco = board.ninco
    if ninco is None or not ninco.fpr95.shape[1] or not ninco.fpr95.notna().to_numpy().any():
        return Figure(HEATMAP, missing="no run has NINCO's mean FPR@95: evaluate with the `ninco` config of the "
                      f"ninco builder, then {LEADERBOARD}")  # fmt: skip
    return drawn(HEATMAP, heatmap_plot, ninco.fpr95)


__all__ = ["HEATMAP", "fpr95_heatmap", "heatmap_plot"]
