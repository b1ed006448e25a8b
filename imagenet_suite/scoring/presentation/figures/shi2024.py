"""LCA-on-the-Line (Shi et al. 2024): per OOD set, the ImageNet LCA of each model against its OOD top-1 with
the fitted line (and the ImageNet top-1 baseline line), drawn by
:func:`~imagenet_suite.scoring.presentation.plots.lca_on_the_line_plot`; and Fig. 11, top-1 against LCA within
each dataset across models (Table 8's points, in the paper's LCA distance for the set)."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure as MplFigure

from ...metrics.lca_on_the_line import analyze
from ...summary.papers.shi2024_within import Points, points
from ..html import Figure, drawn
from ..plots import lca_on_the_line_plot
from . import LEADERBOARD

LINE = "LCA vs OOD top-1"
WITHIN = "Fig. 11: top-1 vs LCA within a dataset"
MOST_DATASETS = 6  # panels beyond this are unreadable on one page


def _line_figure(name: str, line: Any, **labels: Any) -> Figure:
    with tempfile.TemporaryDirectory() as folder:  # the plot writes a file; read it back as SVG text
        path = lca_on_the_line_plot(line, Path(folder) / "line.svg", **labels)
        text = path.read_text()
    return Figure(name, svg=text[text.index("<svg") :])


def lines(board: Any) -> list[Figure]:
    """Per OOD set of ``board.on_the_line`` its LCA line, then its top-1 baseline line; one figure saying what
    is missing when there is none."""
    result = board.on_the_line
    if result is None or not len(result.statistics):
        return [Figure(LINE, missing="needs at least three runs with an OOD dataset in common, each with the "
                       "ImageNet-val LCA: evaluate with imagenet_val and an OOD set (e.g. objectnet), then "
                       f"{LEADERBOARD}")]  # fmt: skip
    figures = []
    for key, line in result.lines.items():
        figures.append(_line_figure(f"{key}: ImageNet LCA vs OOD top-1", line,
                                    x_label=f"ImageNet LCA ({result.line_distances.get(key, '')})",
                                    y_label=f"{key} top-1", title=key))  # fmt: skip
    for key, line in result.baselines.items():
        figures.append(_line_figure(f"{key}: ImageNet top-1 baseline", line, x_label="ImageNet top-1",
                                    y_label=f"{key} top-1", title=key))  # fmt: skip
    return figures


def within_plot(p: Points) -> MplFigure:
    """One dataset's runs: LCA on it (x) against top-1 on it (y), each point named, Pearson r in the title."""
    figure = MplFigure(figsize=(4.8, 3.6))
    axes = figure.subplots()
    axes.scatter(p.lca, p.top1, s=18, zorder=3)
    for x, y, model in zip(p.lca, p.top1, p.models):
        axes.annotate(model, (x, y), fontsize=6, xytext=(3, 3), textcoords="offset points")
    slope, intercept = np.polyfit(p.lca, p.top1, 1)
    xs = np.array([p.lca.min(), p.lca.max()])
    axes.plot(xs, slope * xs + intercept, color="gray", linestyle="--", linewidth=1)
    pearson = analyze(p.top1, p.lca).correlations.pearson
    axes.set(xlabel=f"{p.dataset} LCA ({p.distance})", ylabel=f"{p.dataset} top-1")
    axes.set_title(f"{p.dataset}: Pearson r = {pearson:.3f} ({len(p.models)} models)", fontsize=8)
    figure.tight_layout()
    return figure


def within_dataset(suites: Mapping[str, Mapping[str, Any]]) -> list[Figure]:
    """Fig. 11: per dataset (at most :data:`MOST_DATASETS`) its runs' top-1 against their LCA on it, in the
    paper's distance for the set (else the first the runs share); what is missing when no dataset qualifies."""
    chosen: dict[str, Points] = {}
    for p in points(suites):
        if p.dataset not in chosen or (p.paper and not chosen[p.dataset].paper):
            chosen[p.dataset] = p
    if not chosen:
        return [Figure(WITHIN, missing="needs at least three runs with a top-1 and an LCA on a common dataset, "
                       f"scored under one hierarchy: evaluate with imagenet_val, then {LEADERBOARD}")]  # fmt: skip
    return [drawn(f"{WITHIN}: {key}", within_plot, p) for key, p in list(chosen.items())[:MOST_DATASETS]]


__all__ = ["LINE", "WITHIN", "lines", "within_dataset", "within_plot"]
