"""Anzaku et al. 2024: ΔRank, each model's rank by ImageNet top-1 (resized, no centre crop) against its rank by
PatchML ASMA; a model above the diagonal ranks better by ASMA than by top-1 (ΔRank > 0)."""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure as MplFigure
from matplotlib.ticker import MaxNLocator

from ...summary.papers.anzaku2024 import delta_rank_frame
from ..html import Figure, drawn
from . import LEADERBOARD, MOST_ROWS

DELTA_RANK = "ΔRank: top-1 rank vs PatchML ASMA rank"


def delta_rank_plot(frame: Any, title: str = "") -> MplFigure:
    """``frame`` (:func:`~imagenet_suite.scoring.summary.papers.anzaku2024.delta_rank_frame`): a point per model
    at (top-1 rank, ASMA rank), named (up to :data:`MOST_ROWS` models), with the diagonal ΔRank = 0; rank 1 (best) at the top right."""
    top1, asma = frame["top-1 rank"].to_numpy(dtype=float), frame["ASMA rank"].to_numpy(dtype=float)
    figure = MplFigure(figsize=(5, 4.6))
    axes = figure.subplots()
    last = max(top1.max(), asma.max()) + 0.5
    axes.plot([0.5, last], [0.5, last], color="0.5", linestyle="--", linewidth=0.8, label="ΔRank = 0")
    colours = ["#55A868" if d > 0 else "#C44E52" if d < 0 else "#4C72B0" for d in frame["ΔRank"]]
    axes.scatter(top1, asma, c=colours, zorder=3)
    named = len(frame) <= MOST_ROWS  # beyond, names overlap: only the points (the table names them)
    for name, x, y, delta in zip(frame.index, top1, asma, frame["ΔRank"], strict=True):
        if not named:
            break
        axes.annotate(f"{name} ({int(delta):+d})", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    axes.set(
        xlim=(last, 0.5 - 0.15 * last),
        ylim=(last, 0.5),
        xlabel="rank by ImageNet top-1 (1 = best)",
        ylabel="rank by PatchML ASMA (1 = best)",
    )  # room on the right for the best model's name
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_title(title or "Anzaku et al. 2024: ΔRank = top-1 rank − ASMA rank", fontsize=9)
    axes.legend(loc="lower right", fontsize=7)
    figure.tight_layout()
    return figure


def delta_rank_scatter(board: Any) -> Figure:
    """The ΔRank scatter of ``board.delta_rank``, or what is missing."""
    if board.delta_rank is None:
        return Figure(DELTA_RANK, missing="needs every run (at least two) with an `imagenet_real` report and a "
                      "PatchML build scored under the `anzaku2024` protocol: evaluate with those builds "
                      f"(`--protocol anzaku2024`), then {LEADERBOARD}")  # fmt: skip
    return drawn(DELTA_RANK, delta_rank_plot, delta_rank_frame(board.delta_rank))


__all__ = ["DELTA_RANK", "delta_rank_plot", "delta_rank_scatter"]
