"""Beyond Accuracy (Hesse et al. 2025): the radar of the nine QUBA dimensions, one polygon per model (Fig. 1), and
the Spearman matrices per subgroup of models (Fig. 13) and with AutoAttack (Fig. 14).

Radar: each axis is a dimension's signed z-score against the paper's zoo (its μ/σ, Table 11's exact constants,
:func:`~imagenet_suite.scoring.metrics.quba.quba_z_scores`), so that 0 is the zoo mean and outward is better
on every axis (calibration error and parameters flipped), the normalisation under the QUBA score itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure as MplFigure

from ...metrics.quba import DIMENSIONS, quba_z_scores
from ..html import Figure, drawn
from ..plots import correlation_triangle
from . import LEADERBOARD

RADAR = "QUBA dimensions radar (Fig. 1)"
MOST_MODELS = 8  # polygons beyond this are unreadable: the best by QUBA score are drawn


def radar_plot(z_scores: Any, title: str = "") -> MplFigure:
    """A radar of ``z_scores`` (a DataFrame: models × :data:`DIMENSIONS`, signed z-scores), a polygon per row
    and a dashed circle at 0 (the zoo mean)."""
    angles = np.linspace(0, 2 * np.pi, len(DIMENSIONS), endpoint=False)
    closed = np.append(angles, angles[0])
    figure = MplFigure(figsize=(6.4, 5.2))
    axes = figure.add_subplot(projection="polar")
    values = z_scores.to_numpy(dtype=float)
    low = min(-3.0, float(np.floor(values.min())))
    high = max(2.0, float(np.ceil(values.max())))
    for name, row in zip(z_scores.index, values, strict=True):
        axes.plot(closed, np.append(row, row[0]), linewidth=1.2, label=str(name))
        axes.fill(closed, np.append(row, row[0]), alpha=0.08)
    axes.plot(closed, np.zeros_like(closed), color="0.4", linestyle="--", linewidth=0.8, label="zoo mean")
    axes.set_ylim(low, high)
    axes.set_xticks(angles, [name.replace("_", "\n") for name in DIMENSIONS], fontsize=7)
    axes.tick_params(axis="y", labelsize=6)
    axes.set_title(title or "QUBA dimensions (signed z-score; outward is better)", fontsize=9)
    axes.legend(loc="upper left", bbox_to_anchor=(1.08, 1.0), fontsize=7)
    figure.tight_layout()
    return figure


def radar(board: Any) -> Figure:
    """The radar of the models with all nine dimensions (the :data:`MOST_MODELS` best by QUBA score when more),
    or what is missing."""
    quba = board.quba
    complete = quba[list(DIMENSIONS)].dropna() if len(quba) else quba
    if not len(complete):
        return Figure(RADAR, missing="no model has all nine QUBA dimensions: evaluate each model on Beyond "
                      f"Accuracy's datasets (`imagenet-suite evaluate MODEL --protocol hesse2025 ...`), then {LEADERBOARD}")  # fmt: skip
    if len(complete) > MOST_MODELS:
        best = quba.loc[complete.index, "quba"].sort_values(ascending=False).index[:MOST_MODELS]
        complete = complete.loc[best]
    z_scores = complete.copy()
    z_scores[:] = quba_z_scores(complete.to_numpy(dtype=float))
    shown = "" if len(complete) == len(quba[list(DIMENSIONS)].dropna()) else f" (the {MOST_MODELS} best by QUBA)"
    return drawn(RADAR, radar_plot, z_scores, title=f"QUBA dimensions, signed z-score{shown}; outward is better")


SUBGROUPS = "Spearman correlations per group of models (Fig. 13)"
PUBLISHED = "Spearman correlations per subgroup of the published zoo (Fig. 13)"
AUTOATTACK = "Spearman correlations with AutoAttack as the adversarial dimension (Fig. 14)"
ALPHA = 0.05  # crossed out: p above it (Figs. 4, 13, 14)
MOST_PANELS = 12
_DRAWN: dict[int, tuple[Any, Figure]] = {}  # id(published matrices) -> (them, their figure): the zoo's is static


def correlation_panels_plot(panels: Sequence[tuple[str, Any, Any]], alpha: float = ALPHA, title: str = "") -> MplFigure:
    """One lower-triangle Spearman matrix per panel (``(title, rho, p)``, square DataFrames), three to a row, as
    Beyond Accuracy's Figs. 13 and 14 draw them: red positive, blue negative, a cross over every entry whose
    p-value is above ``alpha``; the first :data:`MOST_PANELS` panels."""
    panels = list(panels)[:MOST_PANELS]
    columns = min(3, len(panels))
    rows = -(-len(panels) // columns)
    size = len(panels[0][1])
    figure = MplFigure(figsize=(columns * (0.62 * size + 1.6), rows * (0.58 * size + 1.6)))
    grid = figure.subplots(rows, columns, squeeze=False)
    image = None
    for axes, (name, rho, p) in zip(grid.flat, panels, strict=False):
        image = _triangle(axes, rho, p, alpha)
        axes.set_title(name, fontsize=8)
    for axes in list(grid.flat)[len(panels) :]:
        axes.set_axis_off()
    if image is not None:
        figure.colorbar(image, ax=grid.ravel().tolist(), fraction=0.02, pad=0.02)
    figure.suptitle(title or f"Spearman ρ (crossed out: p > {alpha:g})", fontsize=9)
    return figure


def _triangle(axes: Any, rho: Any, p_values: Any, alpha: float) -> Any:
    short = [name.replace("_robustness", "").replace("_", " ") for name in rho.index]
    return correlation_triangle(axes, rho, p_values, alpha, fontsize=5, labels=short)


def _defined(matrices: Any) -> bool:
    return matrices is not None and bool(matrices[0].notna().to_numpy().any())


def subgroup_panels(board: Any) -> list[tuple[str, Any, Any]]:
    """Fig. 13's panels over the runs: one per group of ``--groups`` with a defined entry."""
    found = getattr(board.hesse2025, "group_correlations", None) or {}
    return [(f"{setup}: {group}" if setup else group, m[0], m[1]) for (setup, group), m in found.items() if _defined(m)]


def published_panels(board: Any) -> list[tuple[str, Any, Any]]:
    """Fig. 13's six panels over the published zoo (with ``--reference hesse2025``)."""
    found = getattr(board.hesse2025, "published_correlations", None) or {}
    return [(name, m[0], m[1]) for (name,), m in found.items() if _defined(m)]


def autoattack_panels(board: Any) -> list[tuple[str, Any, Any]]:
    """Fig. 14's two panels over the runs: the paper's adversarial robustness (left), AutoAttack's (right)."""
    analyses = board.hesse2025
    matrices = getattr(analyses, "autoattack_correlations", None)
    if not _defined(matrices) or not analyses.correlations.notna().to_numpy().any():
        return []
    return [
        ("adversarial robustness (the paper's protocol)", analyses.correlations, analyses.correlation_p),
        ("adversarial robustness = AutoAttack", matrices[0], matrices[1]),
    ]


def appendix(board: Any) -> list[Figure]:
    """Figs. 13 (per group of runs; per subgroup of the published zoo) and 14, each drawn or saying what is
    missing."""
    found = []
    for name, panels, missing in (
        (SUBGROUPS, subgroup_panels(board), "needs `--groups FILE` with a group of at least three models having "
         f"the dimensions: {LEADERBOARD} `--groups FILE`"),
        (PUBLISHED, published_panels(board), f"drawn from the published zoo with {LEADERBOARD} `--reference hesse2025`"),
        (AUTOATTACK, autoattack_panels(board), "needs at least three runs attacked with AutoAttack (`imagenet-suite "
         f"evaluate ... --adversarial N --attack fgsm,pgd,autoattack-linf`), then {LEADERBOARD}"),
    ):  # fmt: skip
        if not panels:
            found.append(Figure(name, missing=missing))
        elif name == PUBLISHED:  # package data only: drawn once per process
            source = board.hesse2025.published_correlations
            if id(source) not in _DRAWN:
                _DRAWN[id(source)] = (source, drawn(name, correlation_panels_plot, panels))
            found.append(_DRAWN[id(source)][1])
        else:
            found.append(drawn(name, correlation_panels_plot, panels))
    return found


__all__ = [
    "AUTOATTACK",
    "PUBLISHED",
    "RADAR",
    "SUBGROUPS",
    "appendix",
    "autoattack_panels",
    "correlation_panels_plot",
    "published_panels",
    "radar",
    "radar_plot",
    "subgroup_panels",
]
