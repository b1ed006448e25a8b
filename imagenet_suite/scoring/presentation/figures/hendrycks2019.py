"""ImageNet-C (Hendrycks & Dietterich 2019): the mCE's terms, corruptions × models heatmap of the corruption
error CE (AlexNet = 1; lower is better), each model's mCE in its column label."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure as MplFigure

from ..html import Figure, drawn
from ..plots import annotated_cells
from . import LEADERBOARD, MOST_COLUMNS

CE = "CE per corruption and model (mCE's terms)"


def ce_frame(suites: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Corruptions × models of the CE in each run's ``summary.imagenet_c`` (models without one left out);
    columns named ``model (mCE x)``."""
    columns = {}
    for model, suite in suites.items():
        corrupted = suite.get("summary", {}).get("imagenet_c")
        if not corrupted:
            continue
        ce = {name: entry.get("ce") for name, entry in corrupted["corruptions"].items()}
        if any(value is not None for value in ce.values()):
            mce = corrupted.get("mce")
            columns[f"{model} (mCE {mce:.3g})" if mce is not None else model] = ce
    return pd.DataFrame(columns, dtype=float)


def ce_plot(frame: pd.DataFrame, title: str = "") -> MplFigure:
    """``frame`` (corruptions × models of CE) as coloured cells with their values: green below AlexNet (1),
    red above."""
    values = frame.to_numpy(dtype=float)
    rows, columns = values.shape
    figure = MplFigure(figsize=(1.1 * columns + 3.2, 0.32 * rows + 1.8))
    axes = figure.subplots()
    spread = max(0.5, float(np.nanmax(np.abs(values - 1)))) if np.isfinite(values).any() else 0.5
    image = annotated_cells(axes, frame, values, cmap="RdYlGn_r", vmin=1 - spread, vmax=1 + spread, decimals=3,
                            fontsize=6)  # fmt: skip
    figure.colorbar(image, ax=axes, fraction=0.046, pad=0.04, label="CE (AlexNet = 1)")
    axes.set_title(title or "ImageNet-C: corruption error CE (lower is better)", fontsize=9)
    figure.tight_layout()
    return figure


def ce_heatmap(suites: Mapping[str, Mapping[str, Any]]) -> Figure:
    """The CE heatmap of the runs ``suites`` (``{model: suite.json content}``), or what is missing."""
    frame = ce_frame(suites)
    if not frame.shape[1]:
        return Figure(CE, missing="no run has a corruption error: evaluate with the imagenet_c builds "
                      f"(`imagenet-suite evaluate MODEL --datasets ...`), then {LEADERBOARD}")  # fmt: skip
    title = ""
    if frame.shape[1] > MOST_COLUMNS:  # the best by mCE (the mean of the column)
        title = f"ImageNet-C: CE (lower is better), the {MOST_COLUMNS} best by mCE of {frame.shape[1]} models"
        frame = frame[frame.mean().sort_values().index[:MOST_COLUMNS]]
    return drawn(CE, ce_plot, frame, title=title)


__all__ = ["CE", "ce_frame", "ce_heatmap", "ce_plot"]
