"""NINCO (Bitterwolf et al. 2023): the models × detectors heatmap of the mean FPR@95 over NINCO's OOD classes
and the OOD classes × models heatmap of one detector's FPR@95 (leaderboard.html); a run's FPR@95 as OOD classes ×
detectors cells (report.html); Fig. 4, the cumulative distribution of the per-class FPR@95; Fig. 5, mean FPR@95 on NINCO against ImageNet top-1 (MSP and each
model's best detector), and Fig. 7, mean FPR@95 on NINCO against the mean over the full popular OOD sets (the
"previously used datasets"), for a fixed model and for a fixed detector (leaderboard.html)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure as MplFigure

from ...report_names import SUBSET_COLUMNS
from ...summary.reports import reports_of
from ..html import Figure, drawn
from ..plots import annotated_cells
from . import LEADERBOARD, MOST_COLUMNS, MOST_ROWS

HEATMAP = "Mean FPR@95 on NINCO: models × detectors (Table 3)"


def heatmap_plot(fpr95: Any, title: str = "") -> MplFigure:
    """``fpr95`` (rows × columns of fractions, e.g. models × detectors; NaN: not scored) as cells in percent,
    darker is worse."""
    values = 100 * fpr95.to_numpy(dtype=float)
    rows, columns = values.shape
    figure = MplFigure(figsize=(0.9 * columns + 3.2, 0.4 * rows + 1.6))
    axes = figure.subplots()
    image = annotated_cells(axes, fpr95, values, cmap="Reds", vmin=0, vmax=100, decimals=1, fontsize=7, white_above=60)
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


RUN_PER_CLASS = "FPR@95 per NINCO OOD class and detector"


def per_class_detectors(suite: Mapping[str, Any]) -> Figure:
    """A run's FPR@95 as OOD classes × detectors cells (%), the class worst on average over the detectors on
    top, the detectors in the run's order; or what is missing when the run has NINCO means but no per-class rows.

    One figure, not a bar chart per detector: the detectors side by side per class, in a seventh of the time
    (64 classes × 11 detectors: about 1 s of CPU against 7)."""
    found = per_class_fpr95(suite)
    if not found:
        return Figure(RUN_PER_CLASS, missing="the run's NINCO report has no per-class rows: evaluate again with "
                      "the `ninco` config of the ninco builder (`imagenet-suite evaluate MODEL --datasets ...`)")  # fmt: skip
    frame = pd.DataFrame(found)
    frame = frame.loc[frame.mean(axis=1).sort_values(ascending=False, kind="stable").index]
    title = "FPR@95 per NINCO OOD class (%, ID positive), worst on average on top"
    return drawn(RUN_PER_CLASS, heatmap_plot, frame, title=title)


PER_CLASS = "FPR@95 per NINCO OOD class and model"


def per_class_runs(suites: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """``{model: per_class_fpr95(its suite)}`` of the runs having per-class rows (read once for the page's figures:
    the ``found`` of :func:`per_class_heatmap` and :func:`per_class_cdf`)."""
    found = {model: per_class_fpr95(suite) for model, suite in suites.items()}
    return {model: per for model, per in found.items() if per}


def per_class_heatmap(
    suites: Mapping[str, Mapping[str, Any]],
    detector: str = "msp",
    found: Mapping[str, dict[str, dict[str, float]]] | None = None,
) -> Figure:
    """OOD classes × models of ``detector``'s FPR@95 (the first detector of the first run having per-class rows
    when no run has ``detector``), or what is missing. ``found``: :func:`per_class_runs` of ``suites`` when the
    caller has it."""
    found = per_class_runs(suites) if found is None else found
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


CDF = "Cumulative distribution of the FPR@95 per NINCO OOD class (Fig. 4)"


def cdf_plot(panels: list[tuple[str, dict[str, list[float]]]]) -> MplFigure:
    """Fig. 4: per panel ``(title, {curve: per-class FPR@95})`` the share of classes (%) whose FPR@95 is at most x
    (%), a step curve each, its mean in the legend (the area over the curve)."""
    figure = MplFigure(figsize=(5.2 * len(panels), 4.2))
    for axes, (title, curves) in zip(figure.subplots(1, len(panels), squeeze=False)[0], panels, strict=True):
        for name, values in sorted(curves.items(), key=lambda kv: np.mean(kv[1])):
            x = np.sort(100 * np.asarray(values))
            axes.step(np.r_[0, x], 100 * np.arange(len(x) + 1) / len(x), where="post",
                      label=f"{name} ({np.mean(x):.1f})")  # fmt: skip
        axes.set(xlim=(0, 100), ylim=(0, 100), xlabel="FPR@95 (%)", ylabel="NINCO classes with at most this FPR (%)")
        axes.set_title(title, fontsize=9)
        axes.grid(linewidth=0.3)
        axes.legend(fontsize=6, loc="lower right", title="mean FPR@95 in parentheses", title_fontsize=6)
    figure.suptitle("Bitterwolf et al. 2023, Fig. 4: the FPR@95 per OOD class, cumulated", fontsize=9)
    figure.tight_layout()
    return figure


def cdf_panels(
    suites: Mapping[str, Mapping[str, Any]], found: Mapping[str, dict[str, dict[str, float]]] | None = None
) -> list[tuple[str, dict[str, list[float]]]]:
    """Fig. 4's panels: a fixed model (the run with the most detectors having per-class rows; the first on a tie)
    over its detectors, and a fixed detector (MSP, else the one most runs have) over the runs (up to
    :data:`MOST_ROWS`: the best by their mean). ``found``: :func:`per_class_runs` of ``suites`` when the caller
    has it."""
    found = per_class_runs(suites) if found is None else found
    if not found:
        return []
    model = max(found, key=lambda m: len(found[m]))
    panels = [(f"fixed model {model}: its detectors", {d: list(v.values()) for d, v in found[model].items()})]
    detectors = [d for per in found.values() for d in per]
    detector = "msp" if "msp" in detectors else max(dict.fromkeys(detectors), key=detectors.count)
    curves = {m: list(per[detector].values()) for m, per in found.items() if detector in per}
    curves = dict(sorted(curves.items(), key=lambda kv: np.mean(kv[1]))[:MOST_ROWS])
    return panels + [(f"fixed detector {detector}: the models", curves)]


def per_class_cdf(
    suites: Mapping[str, Mapping[str, Any]], found: Mapping[str, dict[str, dict[str, float]]] | None = None
) -> Figure:
    """Fig. 4 from the runs' per-class FPR@95 rows (``found``: :func:`per_class_runs`, when the caller has it),
    or what is missing."""
    panels = cdf_panels(suites, found)
    if not panels:
        return Figure(CDF, missing="no run's NINCO report has per-class rows: evaluate with the `ninco` config of the "
                      f"ninco builder, then {LEADERBOARD}")  # fmt: skip
    return drawn(CDF, cdf_plot, panels)


ACCURACY = "Mean FPR@95 on NINCO vs ImageNet top-1 (Fig. 5)"


def accuracy_plot(accuracy: pd.Series, fpr95: pd.DataFrame) -> MplFigure:
    """Fig. 5: a point per model at (ImageNet top-1, mean FPR@95 on NINCO), in percent; left MSP (when scored),
    right each model's best detector (lowest mean FPR@95), named beside the model."""
    panels = [("MSP", fpr95["msp"], None)] if "msp" in fpr95 else []
    best = fpr95.idxmin(axis=1, skipna=True)
    panels.append(("best detector per model", fpr95.min(axis=1), best))
    figure = MplFigure(figsize=(5.2 * len(panels), 4.2))
    for axes, (title, values, which) in zip(figure.subplots(1, len(panels), squeeze=False)[0], panels, strict=True):
        shown = pd.DataFrame({"x": accuracy, "y": values}).dropna()
        axes.scatter(100 * shown["x"], 100 * shown["y"], color="#4C72B0", zorder=3)
        for model, (x, y) in shown.iterrows():
            label = model if which is None else f"{model} ({which[model]})"
            if len(shown) <= MOST_ROWS:
                axes.annotate(label, (100 * x, 100 * y), textcoords="offset points", xytext=(4, 3), fontsize=6)
        axes.set(xlabel="ImageNet top-1 (%)", ylabel="mean FPR@95 on NINCO (%, lower is better)")
        axes.set_title(title, fontsize=9)
        axes.grid(linewidth=0.3)
    figure.suptitle("Bitterwolf et al. 2023, Fig. 5: mean FPR@95 on NINCO vs accuracy", fontsize=9)
    figure.tight_layout()
    return figure


def accuracy_scatter(board: Any) -> Figure:
    """Fig. 5 from ``board.ninco`` (ImageNet top-1 and the mean FPR@95 per detector), or what is missing."""
    ninco = board.ninco
    usable = None if ninco is None else ninco.fpr95[ninco.accuracy.reindex(ninco.fpr95.index).notna()]
    if usable is None or not usable.shape[1] or not usable.notna().to_numpy().any():
        return Figure(ACCURACY, missing="no run has both an ImageNet top-1 and NINCO's mean FPR@95: evaluate with "
                      f"`imagenet_val` and the `ninco` config of the ninco builder, then {LEADERBOARD}")  # fmt: skip
    return drawn(ACCURACY, accuracy_plot, ninco.accuracy, usable.dropna(how="all"))


PREVIOUS = "Mean FPR@95 on NINCO vs on the previously used OOD sets (Fig. 7)"


def previous_means(cleaning: pd.DataFrame) -> dict[tuple[str, str], dict[str, float]]:
    """``{(model, detector): {dataset: FPR@95 on the full set}}`` of
    :func:`~imagenet_suite.scoring.summary.papers.bitterwolf2023.cleaning_frame` (the "previously used" sets)."""
    found: dict[tuple[str, str], dict[str, float]] = {}
    fpr95 = cleaning[cleaning["metric"] == "fpr95"]
    columns = (fpr95[name].tolist() for name in ("model", "detector", "dataset", "full"))
    for model, detector, dataset, full in zip(*columns, strict=True):  # no pandas row objects: 300 runs, 15,600 rows
        if not np.isnan(full):
            found.setdefault((model, detector), {})[dataset] = float(full)
    return found


def _panel(points: dict[str, tuple[float, dict[str, float]]]) -> tuple[pd.DataFrame, list[str]]:
    """Points ``{name: (NINCO mean FPR@95, {dataset: full-set FPR@95})}`` → frame (``ninco``, ``previous``: the
    mean over the datasets every point has) and those datasets; empty when they share none."""
    shared = sorted(set.intersection(*(set(per) for _, per in points.values()))) if points else []
    if not shared:
        return pd.DataFrame(columns=["ninco", "previous"]), []
    rows = {name: (ninco, float(np.mean([per[d] for d in shared]))) for name, (ninco, per) in points.items()}
    return pd.DataFrame.from_dict(rows, orient="index", columns=["ninco", "previous"]), shared


def previous_panels(ninco: Any) -> list[tuple[str, pd.DataFrame, list[str]]]:
    """Fig. 7's panels ``(title, frame, datasets)``: a fixed model (the one with the most detectors having both
    means; the first such model on a tie) over its detectors, and a fixed detector (MSP, else the one most models
    have) over the models; a panel whose points share no full popular OOD set is left out."""
    previous = previous_means(ninco.cleaning)
    fpr95 = {  # NINCO's mean FPR@95 by (model, detector): no .loc per pair
        (model, detector): value
        for model, row in zip(ninco.fpr95.index, ninco.fpr95.to_numpy(dtype=float).tolist(), strict=True)
        for detector, value in zip(ninco.fpr95.columns, row, strict=True)
    }
    both = {key: per for key, per in previous.items() if key in fpr95 and not np.isnan(fpr95[key])}
    panels = []
    if both:
        detectors_of = Counter(m for m, _ in both)  # one pass: a scan of `both` per model grew with runs²
        models = [m for m in ninco.fpr95.index if m in detectors_of]
        model = max(models, key=detectors_of.__getitem__)
        points = {d: (fpr95[m, d], per) for (m, d), per in both.items() if m == model}
        frame, shared = _panel(points)
        panels.append((f"fixed model {model}: its detectors", frame, shared))
        detectors = [k[1] for k in both]
        detector = "msp" if "msp" in detectors else max(dict.fromkeys(detectors), key=detectors.count)
        points = {m: (fpr95[m, d], per) for (m, d), per in both.items() if d == detector}
        frame, shared = _panel(points)
        panels.append((f"fixed detector {detector}: the models", frame, shared))
    return [panel for panel in panels if len(panel[1])]


def previous_plot(panels: list[tuple[str, pd.DataFrame, list[str]]]) -> MplFigure:
    """Fig. 7: per panel a point per detector or model at (mean FPR@95 over the full popular OOD sets, mean FPR@95
    on NINCO), in percent, named, with the diagonal."""
    figure = MplFigure(figsize=(5.2 * len(panels), 4.4))
    for axes, (title, frame, shared) in zip(figure.subplots(1, len(panels), squeeze=False)[0], panels, strict=True):
        x, y = 100 * frame["previous"], 100 * frame["ninco"]
        axes.plot([0, 100], [0, 100], color="0.6", linestyle="--", linewidth=0.8)
        axes.scatter(x, y, color="#C44E52", zorder=3)
        if len(frame) <= MOST_ROWS:
            for name, xv, yv in zip(frame.index, x, y, strict=True):
                axes.annotate(str(name), (xv, yv), textcoords="offset points", xytext=(4, 3), fontsize=6)
        axes.set(xlim=(0, 100), ylim=(0, 100), ylabel="mean FPR@95 on NINCO (%)",
                 xlabel=f"mean FPR@95 on the full {', '.join(shared)} (%)")  # fmt: skip
        axes.xaxis.label.set_fontsize(7)
        axes.set_title(title, fontsize=9)
        axes.grid(linewidth=0.3)
    figure.suptitle("Bitterwolf et al. 2023, Fig. 7: NINCO vs the previously used OOD sets", fontsize=9)
    figure.tight_layout()
    return figure


def previous_scatter(board: Any) -> Figure:
    """Fig. 7 from ``board.ninco`` (NINCO's mean FPR@95 and the full popular OOD sets' FPR@95), or what is
    missing."""
    panels = [] if board.ninco is None else previous_panels(board.ninco)
    if not panels:
        return Figure(PREVIOUS, missing="needs runs with NINCO's mean FPR@95 and the FPR@95 of the same detector on "
                      "a full popular OOD set: evaluate with the `ninco` config of the ninco builder and `popular_ood` "
                      f"builds (e.g. `places`, `textures`), then {LEADERBOARD}")  # fmt: skip
    return drawn(PREVIOUS, previous_plot, panels)


__all__ = [
    "ACCURACY",
    "CDF",
    "HEATMAP",
    "PER_CLASS",
    "PREVIOUS",
    "RUN_PER_CLASS",
    "accuracy_plot",
    "accuracy_scatter",
    "cdf_panels",
    "cdf_plot",
    "fpr95_heatmap",
    "heatmap_plot",
    "per_class_cdf",
    "per_class_detectors",
    "per_class_fpr95",
    "per_class_heatmap",
    "per_class_runs",
    "previous_means",
    "previous_panels",
    "previous_plot",
    "previous_scatter",
]
