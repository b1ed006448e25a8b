"""Plots people look at rather than read: reliability diagram, shape bias per category, OOD FPR per
group, LCA on the line, a model's QUBA dimensions and its accuracy per dataset.

Every plot function builds a bare ``matplotlib.figure.Figure`` (rendered by Agg; no pyplot, no
display, no global backend change) and returns it; pass ``path`` to also write it (PNG/PDF/SVG by
suffix). :func:`write_report_plots` writes every plot a :class:`ScoreReport` supports, from its
``artifacts``; the OOD plots mark the unit-test threshold the report's verdict used.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.figure import Figure

from ...errors import ShapeMismatch
from ..evaluation.results import ScoreReport
from ..metrics.shape_bias_counts import ShapeBias
from ..report_names import DEFAULT_ECE_CONVENTION, FAIL_THRESHOLD_ARTIFACT
from .figure_files import save_png

if TYPE_CHECKING:  # the scorers' types: torch, which the leaderboard's figures do not import
    from ..metrics.calibration import CalibrationBins
    from ..metrics.ood import GroupedOOD


def reliability_diagram(bins: CalibrationBins, path: str | Path | None = None, title: str | None = None) -> Figure:
    """Per-bin accuracy (bars) against mean confidence, with the diagonal of perfect calibration.

    Bars span each bin's edges; the gap to the bin's mean confidence is shaded. The ECE of the
    bins' convention is printed in the corner.
    """
    figure = Figure(figsize=(4.5, 4.5))
    axes = figure.subplots()
    lower, upper = bins.lower.numpy(), bins.upper.numpy()
    width = upper - lower
    filled = bins.count.numpy() > 0
    width[width == 0] = 0.01  # the torchmetrics conf == 1.0 bin has no width
    accuracy, confidence = bins.accuracy.numpy(), bins.mean_confidence.numpy()
    axes.bar(
        lower[filled],
        accuracy[filled],
        width=width[filled],
        align="edge",
        color="#4C72B0",
        edgecolor="black",
        linewidth=0.5,
        label="accuracy",
    )
    axes.bar(
        lower[filled],
        confidence[filled] - accuracy[filled],
        bottom=accuracy[filled],
        width=width[filled],
        align="edge",
        color="#DD8452",
        alpha=0.45,
        edgecolor="#DD8452",
        label="gap to confidence",
    )
    axes.plot([0, 1], [0, 1], linestyle="--", color="gray", linewidth=1)
    axes.set(xlim=(0, 1.02), ylim=(0, 1), xlabel="confidence (top-1 softmax probability)", ylabel="accuracy")
    axes.set_title(title or f"reliability diagram ({bins.convention} bins)")
    axes.text(
        0.03,
        0.93,
        f"ECE = {bins.expected_calibration_error:.4f}\nN = {bins.total}",
        transform=axes.transAxes,
        va="top",
        fontsize=9,
    )
    axes.legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    if path is not None:
        save_png(figure, path, dpi=150)
    return figure


def shape_bias_per_category_plot(
    per_category: Mapping[str, ShapeBias],
    pooled: ShapeBias | None = None,
    path: str | Path | None = None,
    label: str = "model",
) -> Figure:
    """Shape bias of each shape category (dots) and the pooled value (line), as model-vs-human draws it.

    x = fraction of shape decisions among shape-or-texture decisions (1 = all shape); categories
    without hits are left out.
    """
    names = [name for name, result in per_category.items() if result.shape_hits + result.texture_hits]
    values = [per_category[name].value for name in names]
    figure = Figure(figsize=(4.5, 0.32 * max(len(names), 4) + 1.2))
    axes = figure.subplots()
    positions = list(range(len(names)))
    axes.scatter(values, positions, color="#C44E52", zorder=3, label=label)
    if pooled is not None and pooled.shape_hits + pooled.texture_hits:
        axes.axvline(pooled.value, color="#C44E52", linestyle="--", linewidth=1, label=f"pooled {pooled.value:.3f}")
    axes.set_yticks(positions, names)
    axes.invert_yaxis()
    axes.set(xlim=(0, 1), xlabel="shape bias: fraction of shape decisions")
    secondary = axes.secondary_xaxis("top", functions=(lambda x: 1 - x, lambda x: 1 - x))
    secondary.set_xlabel("fraction of texture decisions")
    axes.grid(axis="x", alpha=0.3)
    axes.legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    if path is not None:
        save_png(figure, path, dpi=150)
    return figure


def lca_on_the_line_plot(
    result: Any,
    path: str | Path,
    *,
    x_label: str = "ImageNet LCA",
    y_label: str = "OOD top-1",
    groups: Any = None,
    title: str | None = None,
) -> Path:
    """LCA-on-the-line: scatter of ``result.x``/``result.y`` with the fitted line, written to ``path``
    (PNG, SVG, PDF…); returns ``path``. ``result``: an
    :class:`~imagenet_suite.scoring.metrics.lca_on_the_line.OnTheLine` (from ``lca_on_the_line.analyze``).

    ``groups``: optional per-model labels (e.g. "VM"/"VLM") drawn in different colours.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig = Figure(figsize=(5, 4))  # Agg canvas, no pyplot: the caller's backend is left alone
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    labels = np.asarray(groups) if groups is not None else np.full(len(result.x), "models")
    if labels.shape != result.x.shape:
        raise ShapeMismatch(f"groups has {labels.shape[0]} entries for {len(result.x)} models")
    for group in dict.fromkeys(labels.tolist()):
        mask = labels == group
        ax.scatter(result.x[mask], result.y[mask], s=14, label=str(group))
    xs = np.linspace(result.x.min(), result.x.max(), 50)
    c = result.correlations
    ax.plot(
        xs,
        result.line.predict(xs),
        color="black",
        lw=1,
        label=f"fit: R²={c.r2:.3f}, τb={c.kendall_tau_b:.3f}, MAE={result.mae_in_sample:.3f}",
    )
    suffix = " (min-max scaled)" if result.scale == "minmax" else ""
    ax.set_xlabel(x_label + suffix)
    ax.set_ylabel(y_label + suffix)
    if title:
        ax.set_title(title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_png(fig, path, dpi=120)
    return path


def per_group_fpr_plot(
    grouped: GroupedOOD, path: str | Path | None = None, title: str = "", threshold: float | None = None
) -> Figure:
    """Horizontal bars of FPR@95 per OOD group (sorted), with the macro mean.

    With a unit-test ``threshold``, bars above it (failed tests) are red and a dotted line marks it.
    """
    fprs = sorted(grouped.fpr_per_group().items(), key=lambda kv: kv[1])
    figure = Figure(figsize=(6, max(2.5, 0.18 * len(fprs) + 1)))
    axes = figure.subplots()
    positions = np.arange(len(fprs))
    colours = ["#C44E52" if threshold is not None and v > threshold else "#4C72B0" for _, v in fprs]
    axes.barh(positions, [100 * v for _, v in fprs], color=colours)
    axes.set_yticks(positions, [name for name, _ in fprs], fontsize=6 if len(fprs) > 30 else 8)
    axes.axvline(
        100 * grouped.macro["fpr95"],
        color="black",
        linestyle="--",
        linewidth=1,
        label=f"mean over groups {100 * grouped.macro['fpr95']:.1f} %",
    )
    if threshold is not None:
        axes.axvline(
            100 * threshold, color="#C44E52", linestyle=":", linewidth=1, label=f"fail > {100 * threshold:g} %"
        )
    axes.set(xlim=(0, 100), xlabel="FPR at 95 % TPR (%, ID positive; lower is better)")
    axes.set_title(title or "FPR@95 per OOD group")
    axes.legend(loc="lower right", fontsize=7)
    figure.tight_layout()
    if path is not None:
        save_png(figure, path, dpi=120)
    return figure


def ood_fpr_figures(report: ScoreReport) -> dict[str, Figure]:
    """``{detector: per-group FPR plot}`` of a report's OOD results.

    On unit-test sets each plot marks the threshold the report's verdict rows used (the report's
    ``ood_fail_threshold`` artifact: ``--fail-threshold``, else the dataset's, else 0.10).
    """
    threshold = report.artifacts.get(FAIL_THRESHOLD_ARTIFACT)
    where = f"{report.meta.get('dataset')} / {report.meta.get('config')}"
    return {
        key.split("/", 1)[1]: per_group_fpr_plot(grouped, title=f"{where}: {key.split('/', 1)[1]}", threshold=threshold)
        for key, grouped in report.artifacts.items()
        if key.startswith("ood/")
    }


def write_ood_plots(report: ScoreReport, folder: str | Path) -> list[Path]:
    """One per-group FPR bar plot per detector (``ood_fpr_<detector>.png``); returns the files written."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for detector, figure in ood_fpr_figures(report).items():
        written.append(folder / f"ood_fpr_{detector}.png")
        save_png(figure, written[-1], dpi=120)
    return written


def write_report_plots(report: ScoreReport, folder: str | Path) -> list[Path]:
    """Every plot a report supports, written into ``folder`` (created); returns the files written.

    ``reliability_diagram.png`` (torchmetrics bins), ``shape_bias_per_category.png`` and
    ``ood_fpr_<detector>.png``, each when the report holds the results it needs.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    bins = report.artifacts.get(f"calibration_bins/{DEFAULT_ECE_CONVENTION}")
    if bins is not None:
        written.append(folder / "reliability_diagram.png")
        reliability_diagram(bins, written[-1])
    per_category = report.artifacts.get("shape_bias_per_category")
    if per_category is not None:
        written.append(folder / "shape_bias_per_category.png")
        shape_bias_per_category_plot(per_category, _pooled(per_category), written[-1])
    return written + write_ood_plots(report, folder)


def horizontal_bars(
    values: Mapping[str, float], path: str | Path | None, *, title: str, xlabel: str, signed: bool, fontsize: int = 8
) -> Figure:
    """Horizontal bars, one per ``values`` entry in order, top to bottom; ``signed``: a zero line, negative
    bars red; else blue bars on a 0–100 % axis (``values`` as fractions), which says so when every value is 0
    (no blank plot)."""
    figure = Figure(figsize=(6, 0.32 * len(values) + 1.2))
    axes = figure.subplots()
    positions = np.arange(len(values))
    heights = np.array(list(values.values()), dtype=float) * (1 if signed else 100)
    colours = ["#C44E52" if signed and value < 0 else "#4C72B0" for value in heights]
    axes.barh(positions, heights, color=colours)
    axes.set_yticks(positions, list(values), fontsize=fontsize)
    if signed:
        axes.axvline(0, color="black", linewidth=0.8)
    else:
        axes.set(xlim=(0, 100))
        if len(heights) and not np.any(heights):  # bars of width 0: say so instead of a blank plot
            axes.text(50, (len(heights) - 1) / 2, "every value is 0 %", ha="center", va="center", color="#C44E52")
    axes.invert_yaxis()
    axes.set(xlabel=xlabel)
    axes.set_title(title)
    figure.tight_layout()
    if path is not None:
        save_png(figure, path, dpi=120)
    return figure


def quba_dimensions_plot(values: Mapping[str, float], path: str | Path | None = None, title: str = "") -> Figure:
    """Bars of the signed z-score of each present QUBA dimension (0 = the zoo mean of Beyond Accuracy,
    Hesse et al. 2025; right is better); ``values``: ``{dimension: value}``, absent dimensions left out."""
    from ..metrics.quba import DIMENSIONS, quba_z_scores

    full = np.array([values.get(name, np.nan) for name in DIMENSIONS], dtype=float)
    scores = dict(zip(DIMENSIONS, quba_z_scores(full), strict=True))
    present = {name: float(scores[name]) for name in DIMENSIONS if name in values}
    xlabel = "signed z-score against the QUBA zoo (right is better)"
    return horizontal_bars(present, path, title=title or "QUBA dimensions", xlabel=xlabel, signed=True)


def accuracy_bars_plot(accuracies: Mapping[str, float], path: str | Path | None = None, title: str = "") -> Figure:
    """Horizontal bars of one accuracy per dataset (``{label: accuracy in [0, 1]}``), in the given order."""
    title = title or "accuracy per dataset"
    return horizontal_bars(accuracies, path, title=title, xlabel="accuracy (%)", signed=False, fontsize=7)


def quba_ranks_plot(table: Any, path: str | Path | None = None, title: str = "") -> Figure:
    """Horizontal bars of the QUBA score per model (a leaderboard's ``quba`` table, best on top); models
    without a score are left out."""
    scored = table["quba"].dropna().sort_values(ascending=False)
    ranked = {f"{rank}. {name}": float(value) for rank, (name, value) in enumerate(scored.items(), 1)}
    xlabel = "QUBA (0 = the zoo mean of Hesse et al. 2025)"
    return horizontal_bars(ranked, path, title=title or "QUBA ranking", xlabel=xlabel, signed=True, fontsize=7)


def correlation_heatmap(
    rho: Any, p_values: Any, path: str | Path | None = None, *, alpha: float = 0.05, title: str = ""
) -> Figure:
    """Lower triangle of a correlation matrix (``rho``, a square DataFrame) as coloured cells with their
    values, as Beyond Accuracy's Fig. 4 draws it: red positive, blue negative, and a cross over every
    entry whose p-value (``p_values``, same shape) is above ``alpha``; empty cells are undefined."""
    size = len(rho.index)
    figure = Figure(figsize=(0.75 * size + 2.2, 0.65 * size + 1.6))
    axes = figure.subplots()
    image = correlation_triangle(axes, rho, p_values, alpha)
    figure.colorbar(image, ax=axes, fraction=0.046, pad=0.04)
    axes.set_title(title or f"Spearman correlation (crossed out: p > {alpha:g})", fontsize=9)
    figure.tight_layout()
    if path is not None:
        save_png(figure, path, dpi=120)
    return figure


CELLS = {"interpolation": "none"}
"""How a heatmap's cells are drawn (``imshow``): one pixel a cell, unresampled. An SVG holds the rows × columns image
and a transform (drawn pixelated), not the image resampled to the figure's size and encoded as a PNG (a heatmap
of 40 × 64 cells: about 1.5 s of CPU less). Agg draws it with the nearest cell, as matplotlib's default
does for cells of three pixels or more: such a PNG is the same."""


def correlation_triangle(
    axes: Any, rho: Any, p_values: Any, alpha: float, *, fontsize: float = 7, labels: list[str] | None = None
) -> Any:
    """Draw the lower triangle of ``rho`` into ``axes`` (:func:`correlation_heatmap`'s cells, values and crosses
    over p > ``alpha``; ``labels``: the tick labels, default ``rho``'s index); return the image for a colour bar."""
    names = labels or list(rho.index)
    values, p = rho.to_numpy(dtype=float), p_values.to_numpy(dtype=float)
    size = len(values)
    image = axes.imshow(np.where(np.tril(np.ones((size, size), dtype=bool)), values, np.nan), cmap="RdBu_r",
                        vmin=-1, vmax=1, **CELLS)  # fmt: skip
    crosses_x, crosses_y = [], []  # one line artist for all crosses (NaN-separated strokes)
    for i in range(size):
        for j in range(i + 1):
            if np.isnan(values[i, j]):
                continue
            axes.text(j, i, f"{values[i, j]:.2f}", ha="center", va="center", fontsize=fontsize)
            if p[i, j] > alpha:
                crosses_x += [j - 0.4, j + 0.4, np.nan, j - 0.4, j + 0.4, np.nan]
                crosses_y += [i - 0.4, i + 0.4, np.nan, i + 0.4, i - 0.4, np.nan]
    if crosses_x:
        axes.plot(crosses_x, crosses_y, color="0.35", linewidth=0.6)
    axes.set_xticks(range(size), names, rotation=45 if fontsize >= 7 else 60, ha="right", fontsize=fontsize)
    axes.set_yticks(range(size), names, fontsize=fontsize)
    return image


def _pooled(per_category: Mapping[str, ShapeBias]) -> ShapeBias:
    """The pooled shape bias of all categories (sums of their counts)."""
    return ShapeBias(
        *(
            sum(getattr(r, f) for r in per_category.values())
            for f in ("shape_hits", "texture_hits", "conflict_images", "excluded_images")
        )
    )


__all__ = [
    "accuracy_bars_plot",
    "correlation_heatmap",
    "correlation_triangle",
    "lca_on_the_line_plot",
    "ood_fpr_figures",
    "per_group_fpr_plot",
    "quba_dimensions_plot",
    "quba_ranks_plot",
    "reliability_diagram",
    "shape_bias_per_category_plot",
    "write_ood_plots",
    "write_report_plots",
]
