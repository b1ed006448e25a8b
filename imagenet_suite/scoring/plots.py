"""Plots people look at rather than read: reliability diagram, shape bias per category.

Both build a bare ``matplotlib.figure.Figure`` (rendered by Agg; no pyplot, no display, no global
backend change) and return it; pass ``path`` to also write it (PNG/PDF/SVG by suffix).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from matplotlib.figure import Figure

from .calibration import CalibrationBins
from .shape import ShapeBias


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
    axes.bar(lower[filled], accuracy[filled], width=width[filled], align="edge", color="#4C72B0",
             edgecolor="black", linewidth=0.5, label="accuracy")
    axes.bar(lower[filled], confidence[filled] - accuracy[filled], bottom=accuracy[filled], width=width[filled],
             align="edge", color="#DD8452", alpha=0.45, edgecolor="#DD8452", label="gap to confidence")
    axes.plot([0, 1], [0, 1], linestyle="--", color="gray", linewidth=1)
    axes.set(xlim=(0, 1.02), ylim=(0, 1), xlabel="confidence (top-1 softmax probability)", ylabel="accuracy")
    axes.set_title(title or f"reliability diagram ({bins.convention} bins)")
    axes.text(0.03, 0.93, f"ECE = {bins.expected_calibration_error:.4f}\nN = {bins.total}", transform=axes.transAxes,
              va="top", fontsize=9)
    axes.legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    if path is not None:
        figure.savefig(path, dpi=150)
    return figure


def shape_bias_per_category_plot(
    per_category: Mapping[str, ShapeBias], pooled: ShapeBias | None = None,
    path: str | Path | None = None, label: str = "model",
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
        figure.savefig(path, dpi=150)
    return figure
