"""Robust generalization (Heuillet et al. 2025): Borda and Sum per model on the paper's five perturbation types,
the MAC (mean absolute Spearman correlation of the types) in the title (:func:`borda_bars`); Fig. 4, the mean
Borda per group of models with the Tukey letters and each setup's one-way ANOVA p-value (:func:`effects_bars`,
:func:`effects_figure`)."""

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


EFFECTS = "Mean Borda per group of models, Tukey letters, ANOVA p (Fig. 4)"
NO_EFFECTS = (
    "needs groups (`--groups FILE`, or runs of library models, whose suite.json records their family and "
    "pretraining data) and, within a setup, ranked models (all five of the paper's types) in two groups or more, "
    f"one of them with two models or more; then {LEADERBOARD}"
)


def effects_plot(effects: Any) -> MplFigure:
    """One panel per setup of ``effects`` (:func:`~imagenet_suite.scoring.summary.papers.heuillet2025.main_effects`
    with a defined ANOVA): a bar per group, its mean Borda, its Tukey letters above it, the ANOVA p in the title."""
    setups = list(dict.fromkeys(effects["setup"]))
    figure = MplFigure(figsize=(3.2 * len(setups) + 1, 3.6))
    axes = np.atleast_1d(figure.subplots(1, len(setups), sharey=True))
    for axis, setup in zip(axes, setups, strict=True):
        part = effects[effects["setup"] == setup]
        positions = np.arange(len(part))
        means = part["mean_borda"].to_numpy(dtype=float)
        axis.bar(positions, means, color="#4C72B0")
        for x, mean, letter in zip(positions, means, part["tukey"], strict=True):
            axis.text(x, mean, str(letter), ha="center", va="bottom", fontsize=9, fontweight="bold")
        axis.set_xticks(positions, [str(group) for group in part["group"]], rotation=30, ha="right", fontsize=7)
        axis.set_title(f"{setup}: p = {float(part['anova_p'].iloc[0]):.3g}", fontsize=8)
    axes[0].set_ylabel("mean Borda (higher is better)")
    figure.suptitle("Heuillet et al. 2025, Fig. 4: one-way ANOVA, Tukey HSD letters at 90 %", fontsize=9)
    figure.tight_layout()
    return figure


FIG5 = "Odds ratio of TRADES outperforming Classic AT (Fig. 5, the published configurations)"


def odds_ratio_plot(odds: Any) -> MplFigure:
    """Fig. 5 of ``odds`` (:func:`~imagenet_suite.scoring.summary.papers.heuillet2025.published_odds_ratios`): per
    model size, one bar per protocol, its odds ratio (an infinite one drawn 10 % above the largest finite one, as
    the authors do, and labelled ∞) and Fisher's p above it."""
    sizes = list(dict.fromkeys(odds["model_size"]))
    protocols = list(dict.fromkeys(odds["protocol"]))
    ratios = odds["odds_ratio"].to_numpy(dtype=float)
    finite = ratios[np.isfinite(ratios)]
    cap = (finite.max() if len(finite) else 1.0) * 1.1
    figure = MplFigure(figsize=(6, 3.6))
    axis = figure.subplots()
    width = 0.8 / max(1, len(protocols))
    for index, protocol in enumerate(protocols):
        part = odds[odds["protocol"] == protocol].set_index("model_size").reindex(sizes)
        x = np.arange(len(sizes)) + (index - (len(protocols) - 1) / 2) * width
        values = part["odds_ratio"].to_numpy(dtype=float)
        shown = np.where(np.isinf(values), cap, values)
        axis.bar(x, shown, width, label=protocol)
        for left, height, value, p in zip(x, shown, values, part["p_value"].to_numpy(dtype=float), strict=True):
            label = "∞" if np.isinf(value) else f"{value:.3g}"
            axis.text(left, height, f"{label}\np={p:.3g}", ha="center", va="bottom", fontsize=6)
    axis.axhline(1.0, color="black", linestyle=":", linewidth=1)
    axis.set_xticks(np.arange(len(sizes)), sizes)
    axis.set(xlabel="model size", ylabel="odds ratio (TRADES vs Classic AT)")
    axis.legend(fontsize=7, frameon=False)
    figure.suptitle("Heuillet et al. 2025, Fig. 5: Fisher's exact test (the authors' table)", fontsize=9)
    figure.tight_layout()
    return figure


def odds_ratio_bars(odds: Any) -> Figure:
    """Fig. 5 for ``leaderboard.html`` (the published configurations: always drawn)."""
    return drawn(FIG5, odds_ratio_plot, odds)


def _defined_effects(board: Any) -> Any:
    paper = board.heuillet2025
    effects = None if paper is None else paper.main_effects
    if effects is None or effects.empty:
        return None
    defined = effects[np.isfinite(effects["anova_p"].to_numpy(dtype=float))]
    return defined if len(defined) else None


def effects_figure(board: Any) -> MplFigure | None:
    """Fig. 4 of the leaderboard (:func:`effects_plot`), or None when no setup's ANOVA is defined."""
    effects = _defined_effects(board)
    return None if effects is None else effects_plot(effects)


def effects_bars(board: Any) -> Figure:
    """Fig. 4 for ``leaderboard.html``: drawn, or what is missing and which command adds it."""
    effects = _defined_effects(board)
    if effects is None:
        return Figure(EFFECTS, missing=NO_EFFECTS)
    return drawn(EFFECTS, effects_plot, effects)


__all__ = [
    "BORDA",
    "EFFECTS",
    "NO_EFFECTS",
    "borda_bars",
    "borda_plot",
    "effects_bars",
    "effects_figure",
    "effects_plot",
]
