"""Robust generalization (Heuillet et al. 2025): Borda and Sum per model on the paper's five perturbation types,
the MAC (mean absolute Spearman correlation of the types) in the title."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from matplotlib.figure import Figure as MplFigure

from ..html import Figure, drawn
from . import LEADERBOARD, MOST_ROWS

BORDA = "Borda and Sum per model (the paper's five types)"


def borda_plot(scores: Any, mac: float, title: str = "") -> MplFigure:
    """Two panels of horizontal bars, best on top: ``scores["borda"]`` and ``scores["score_sum"]`` per model."""
    ranked = scores.sort_values("borda", ascending=False)
    figure = MplFigure(figsize=(8, 0.35 * len(ranked) + 1.5))
    left, right = figure.subplots(1, 2, sharey=True)
    positions = np.arange(len(ranked))
    left.barh(positions, ranked["borda"].to_numpy(dtype=float), color="#4C72B0")
    right.barh(positions, ranked["score_sum"].to_numpy(dtype=float), color="#55A868")
    left.set_yticks(positions, [str(name) for name in ranked.index], fontsize=7)
    left.invert_yaxis()
    left.set(xlabel="Borda count (higher is better)")
    right.set(xlabel="Sum of the five accuracies (higher is better)")
    mac_text = "—" if math.isnan(mac) else f"{mac:.3f}"
    figure.suptitle(title or f"Heuillet et al. 2025: Borda and Sum; MAC = {mac_text}", fontsize=9)
    figure.tight_layout()
    return figure


def borda_bars(board: Any) -> Figure:
    """Borda and Sum of the models with all five types (``board.heuillet2025``), or what is missing."""
    paper = board.heuillet2025
    scores = None if paper is None else paper.scores.dropna(subset=["borda"]) if "borda" in paper.scores else None
    if scores is None or len(scores) < 2:
        return Figure(BORDA, missing="needs at least two models with all five of the paper's perturbation types on "
                      "ImageNet val: evaluate each with `--adversarial N --attack autoattack-linf,autoattack-l2,"
                      f"autoattack-l1` and a `perturbations` build of config `common`, then {LEADERBOARD}")  # fmt: skip
    mac_text = "—" if math.isnan(paper.mac) else f"{paper.mac:.3f}"
    title = f"Heuillet et al. 2025: Borda and Sum; MAC = {mac_text}"
    if len(scores) > MOST_ROWS:
        title += f" (the {MOST_ROWS} best by Borda of {len(scores)})"
        scores = scores.sort_values("borda", ascending=False).iloc[:MOST_ROWS]
    return drawn(BORDA, borda_plot, scores, paper.mac, title=title)


__all__ = ["BORDA", "borda_bars", "borda_plot"]
