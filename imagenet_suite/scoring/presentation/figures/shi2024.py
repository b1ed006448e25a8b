"""LCA-on-the-Line (Shi et al. 2024): per OOD set, the ImageNet LCA of each model against its OOD top-1 with
the fitted line (and the ImageNet top-1 baseline line), drawn by
:func:`~imagenet_suite.scoring.presentation.plots.lca_on_the_line_plot`."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from ..html import Figure
from ..plots import lca_on_the_line_plot
from . import LEADERBOARD

LINE = "LCA vs OOD top-1"


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


__all__ = ["LINE", "lines"]
