"""NINCO (Bitterwolf et al. 2023): the models × detectors heatmap of the mean FPR@95 over NINCO's OOD classes
and the OOD classes × models heatmap of one detector's FPR@95 (leaderboard.html); a run's FPR@95 per OOD class,
one bar chart per detector (report.html)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure as MplFigure

from ...families.ood import SUBSET_COLUMNS
from ...summary.reports import reports_of
from ..html import Figure, drawn
from ..plots import horizontal_bars
from . import LEADERBOARD, MOST_COLUMNS, MOST_ROWS

HEATMAP = "Mean FPR@95 on NINCO: models × detectors (Table 3)"


def heatmap_plot(fpr95: Any, title: str = "") -> MplFigure:
    """``fpr95`` (rows × columns of fractions, e.g. models × detectors; NaN: not scored) as cells in percent,
    darker is worse."""
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
    fpr95 = ninco.fpr95
    title = ""
    if len(fpr95) > MOST_ROWS:  # the best by their mean over the detectors
        fpr95 = fpr95.loc[fpr95.mean(axis=1).sort_values().index[:MOST_ROWS]]
        title = f"mean FPR@95 over NINCO's OOD classes (%): the {MOST_ROWS} best of {len(ninco.fpr95)} models"
    return drawn(HEATMAP, heatmap_plot, fpr95, title=title)


def per_class_fpr95(suite: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """``{detector: {OOD class: FPR@95}}`` of a run's ``ninco`` / ``ninco`` report (the per-group rows the
    ``ood`` family writes: variant the detector, subgroup the class)."""
    found: dict[str, dict[str, float]] = {}
    for _, report in reports_of(suite.get("datasets", {}), "ninco", "ninco"):
        for row in report.get("metrics", ()):
            group, variant = row.get("subgroup") or "", row.get("variant") or ""
            usable = row.get("value") is not None  # NaN is written as null
            if usable and row["metric"] == "fpr95" and group and group not in SUBSET_COLUMNS and ":" not in variant:
                found.setdefault(variant, {})[group] = float(row["value"])
    return found


def per_class_bars(suite: Mapping[str, Any]) -> list[Figure]:
    """A run's FPR@95 per NINCO OOD class, worst on top, one figure per detector; a figure saying what is
    missing when the run has NINCO means but no per-class rows."""
    found = per_class_fpr95(suite)
    if not found:
        return [Figure("FPR@95 per NINCO OOD class", missing="the run's NINCO report has no per-class rows: "
                       "evaluate again with the `ninco` config of the ninco builder (`imagenet-suite evaluate MODEL "
                       "--datasets ...`)")]  # fmt: skip
    figures = []
    for detector, per_class in found.items():
        ordered = dict(sorted(per_class.items(), key=lambda kv: -kv[1]))
        name = f"FPR@95 per NINCO OOD class: {detector}"
        figures.append(drawn(name, horizontal_bars, ordered, None, title=f"{detector}: FPR@95 per OOD class",
                             xlabel="FPR@95 (%, ID positive; lower is better)", signed=False, fontsize=6))  # fmt: skip
    return figures


PER_CLASS = "FPR@95 per NINCO OOD class and model"


def per_class_heatmap(suites: Mapping[str, Mapping[str, Any]], detector: str = "msp") -> Figure:
    """OOD classes × models of ``detector``'s FPR@95 (the first detector of the first run having per-class rows
    when no run has ``detector``), or what is missing."""
    found = {model: per_class_fpr95(suite) for model, suite in suites.items()}
    found = {model: per for model, per in found.items() if per}
    if not found:
        return Figure(PER_CLASS, missing="no run's NINCO report has per-class rows: evaluate with the `ninco` config "
                      f"of the ninco builder, then {LEADERBOARD}")  # fmt: skip
    if not any(detector in per for per in found.values()):
        detector = next(iter(next(iter(found.values()))))
    columns = {model: per[detector] for model, per in found.items() if detector in per}
    frame = pd.DataFrame(columns).sort_index()
    title = f"{detector}: FPR@95 per NINCO OOD class (%)"
    if frame.shape[1] > MOST_COLUMNS:  # the best by their mean over the classes
        frame = frame[frame.mean().sort_values().index[:MOST_COLUMNS]]
        title += f", the {MOST_COLUMNS} best of {len(columns)} models"
    return drawn(f"{PER_CLASS} ({detector})", heatmap_plot, frame, title=title)


__all__ = [
    "HEATMAP",
    "PER_CLASS",
    "fpr95_heatmap",
    "heatmap_plot",
    "per_class_bars",
    "per_class_fpr95",
    "per_class_heatmap",
]
