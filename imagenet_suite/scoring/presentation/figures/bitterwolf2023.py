"""NINCO (Bitterwolf et al. 2023): the per-class FPR@95 the pages show as shaded tables — OOD classes × models of one
detector (leaderboard.html), a run's OOD classes × detectors (report.html) —; Fig. 4, the cumulative distribution of
the per-class FPR@95; Fig. 5, mean FPR@95 on NINCO against ImageNet top-1 (MSP and each model's best detector), and
Fig. 7, mean FPR@95 on NINCO against the mean over the full popular OOD sets (the "previously used datasets"), for a
fixed model and for a fixed detector (leaderboard.html)."""

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
from . import LEADERBOARD, MOST_COLUMNS, MOST_ROWS


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
NO_PER_CLASS_ROWS = (
    "the run's NINCO report has no per-class rows: evaluate again with the `ninco` config of the ninco builder "
    "(`imagenet-suite evaluate MODEL --datasets ...`)"
)


def per_class_detectors(suite: Mapping[str, Any]) -> pd.DataFrame:
    """A run's FPR@95 (fractions) as OOD classes (the index) × detectors, NaN where a detector lacks a class: the
    class worst on average over the detectors first, the detectors in the run's order; empty when the run has no
    per-class rows (report.html shades it as a table: :data:`RUN_PER_CLASS`)."""
    frame = pd.DataFrame(per_class_fpr95(suite), dtype=float)
    if frame.empty:
        return frame
    return frame.loc[frame.mean(axis=1).sort_values(ascending=False, kind="stable").index]


PER_CLASS = "FPR@95 per NINCO OOD class and model"


def per_class_runs(suites: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """``{model: per_class_fpr95(its suite)}`` of the runs having per-class rows (read once for the page: the
    ``found`` of :func:`per_class_models` and :func:`per_class_cdf`)."""
    found = {model: per_class_fpr95(suite) for model, suite in suites.items()}
    return {model: per for model, per in found.items() if per}


def per_class_models(
    found: Mapping[str, dict[str, dict[str, float]]], detector: str = "msp"
) -> tuple[str, pd.DataFrame]:
    """``(detector, OOD classes × models of its FPR@95)`` from ``found`` (:func:`per_class_runs`): the first
    detector of the first run when no run has ``detector``; the classes sorted by name, the models in the runs'
    order, or when there are more than :data:`MOST_COLUMNS`, the best of them by their mean over the classes,
    best first. Empty when ``found`` is (leaderboard.html shades it as a table: :data:`PER_CLASS`)."""
    if not found:
        return detector, pd.DataFrame(dtype=float)
    if not any(detector in per for per in found.values()):
        detector = next(iter(next(iter(found.values()))))
    columns = {model: per[detector] for model, per in found.items() if detector in per}
    frame = pd.DataFrame(columns, dtype=float).sort_index()
    if frame.shape[1] > MOST_COLUMNS:
        frame = frame[frame.mean().sort_values(kind="stable").index[:MOST_COLUMNS]]
    return detector, frame


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
    "NO_PER_CLASS_ROWS",
    "PER_CLASS",
    "PREVIOUS",
    "RUN_PER_CLASS",
    "accuracy_plot",
    "accuracy_scatter",
    "cdf_panels",
    "cdf_plot",
    "per_class_cdf",
    "per_class_detectors",
    "per_class_fpr95",
    "per_class_models",
    "per_class_runs",
    "previous_means",
    "previous_panels",
    "previous_plot",
    "previous_scatter",
]
