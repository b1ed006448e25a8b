"""LCA-on-the-line: predict OOD accuracy from in-distribution LCA across a pool of models.

Given one (x = ID metric, y = OOD accuracy) pair per model:

* :func:`correlations` — Pearson r, R² (= r², which is what the paper's OLS R² reduces to),
  Kendall τ-b (scipy's default, what the paper's code reports; Eq. 3 prints τ-a) and Spearman ρ.
  Signed; the paper reports absolute values (LCA correlations are negative).
* :func:`minmax` — min-max scaling to [0, 1] over the pool, the paper's choice instead of probit.
* :func:`fit_line` — OLS line ``y = intercept + slope·x``.
* :func:`leave_one_out_errors` — exact leave-one-out prediction errors of that line.
* :func:`analyze` — all of the above; ``scale="minmax"`` + in-sample MAE reproduces the paper's
  Table 3 ("MAE" there is an in-sample residual in scaled units); ``scale="none"`` gives MAE in
  accuracy units and the honest leave-one-out MAE.
* :func:`plot` — scatter plot with the fitted line, saved to a file
  (:func:`imagenet_suite.scoring.presentation.plots.lca_on_the_line_plot`).
* :func:`read_results_csv` — the per-model CSVs of the paper's code (``;``-separated).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import HierarchyError, ShapeMismatch

SCALES = ("minmax", "none")


@dataclass(frozen=True)
class Correlations:
    pearson: float
    r2: float
    kendall_tau_b: float
    spearman: float
    n: int


@dataclass(frozen=True)
class Line:
    intercept: float
    slope: float

    def predict(self, x: Any) -> np.ndarray:
        return self.intercept + self.slope * np.asarray(x, dtype=np.float64)


@dataclass(frozen=True)
class OnTheLine:
    """Result of :func:`analyze`; errors are in the units of ``scale`` (scaled or accuracy)."""

    scale: str
    correlations: Correlations
    line: Line  # fitted in ``scale`` units
    mae_in_sample: float
    mae_leave_one_out: float
    x: np.ndarray  # the (scaled) inputs the line was fitted on
    y: np.ndarray


def _pair(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.ndim != 1 or x.shape != y.shape:
        raise ShapeMismatch(
            f"x and y must be 1-D of equal length (one value per model), got shapes {x.shape} and {y.shape}"
        )
    if len(x) < 3:
        raise HierarchyError(f"need at least 3 models for a line and its leave-one-out errors, got {len(x)}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise HierarchyError("x and y must be finite (one value per model)")
    return x, y


def minmax(values: Any) -> np.ndarray:
    """(v − min) / (max − min) over the pool.

    Example:
        >>> minmax([2.0, 4.0, 6.0])
        array([0. , 0.5, 1. ])
    """
    values = np.asarray(values, dtype=np.float64)
    span = values.max() - values.min()
    if span == 0:
        raise HierarchyError("cannot min-max scale: all values are equal")
    return (values - values.min()) / span


def correlations(x: Any, y: Any) -> Correlations:
    """Pearson, R² = Pearson², Kendall τ-b and Spearman of paired values (signed).

    Example:
        Three models; centred, x is (-1, 0, 1) and y (-1, 1, 0): Pearson = 1 / sqrt(2 * 2); two of
        the three pairs are concordant: τ = (2 - 1) / 3; ranks (1, 2, 3) against (1, 3, 2):
        Spearman = 1 - 6 * 2 / (3 * 8):

        >>> c = correlations([-1.0, 0.0, 1.0], [0.0, 2.0, 1.0])
        >>> round(c.pearson, 6), round(c.r2, 6), round(c.kendall_tau_b, 6), round(c.spearman, 6), c.n
        (0.5, 0.25, 0.333333, 0.5, 3)
    """
    from scipy import stats

    x, y = _pair(x, y)
    pearson = float(stats.pearsonr(x, y).statistic)
    return Correlations(
        pearson=pearson,
        r2=pearson**2,
        kendall_tau_b=float(stats.kendalltau(x, y, variant="b").statistic),
        spearman=float(stats.spearmanr(x, y).statistic),
        n=len(x),
    )


def fit_line(x: Any, y: Any) -> Line:
    """Ordinary least squares ``y ≈ intercept + slope·x``.

    Example:
        slope = sum (x - x̄)(y - ȳ) / sum (x - x̄)² = 1 / 2, intercept = ȳ - slope · x̄ = 1:

        >>> line = fit_line([-1.0, 0.0, 1.0], [0.0, 2.0, 1.0])
        >>> line
        Line(intercept=1.0, slope=0.5)
        >>> line.predict([2.0])
        array([2.])
    """
    x, y = _pair(x, y)
    xc = x - x.mean()
    if not np.any(xc):
        raise HierarchyError("cannot fit a line: all x values are equal")
    slope = float(np.dot(xc, y - y.mean()) / np.dot(xc, xc))
    return Line(intercept=float(y.mean() - slope * x.mean()), slope=slope)


def leave_one_out_errors(x: Any, y: Any) -> np.ndarray:
    """``y_i − ŷ_(−i)``: error predicting model i from the line fitted without it (closed form
    ``e_i / (1 − h_ii)`` with leverage ``h_ii = 1/n + (x_i − x̄)² / Σ(x − x̄)²``).

    Example:
        Without the first model the line through (0, 2) and (1, 1) predicts 3 at x = -1 (error
        0 - 3); without the second, the line through (-1, 0) and (1, 1) predicts 0.5 at 0 (error
        2 - 0.5); without the third, 2 + 2x predicts 4 at 1 (error 1 - 4):

        >>> leave_one_out_errors([-1.0, 0.0, 1.0], [0.0, 2.0, 1.0]).round(6)
        array([-3. ,  1.5, -3. ])
    """
    x, y = _pair(x, y)
    residuals = y - fit_line(x, y).predict(x)
    xc = x - x.mean()
    leverage = 1.0 / len(x) + xc**2 / np.dot(xc, xc)
    return residuals / (1.0 - leverage)


def analyze(x_id: Any, y_ood: Any, *, scale: str = "minmax") -> OnTheLine:
    """Correlations, fitted line, in-sample and leave-one-out MAE of predicting ``y_ood`` from ``x_id``.

    ``scale="minmax"`` scales both axes to [0, 1] first (the paper); ``"none"`` keeps raw units.
    Correlations are scale-invariant; the line and MAEs are in the chosen units.

    Example:
        The three models of :func:`leave_one_out_errors`: in-sample residuals (-0.5, 1, -0.5),
        leave-one-out errors (-3, 1.5, -3). Min-max scaling halves both axes here (each spans 2),
        so the errors halve too:

        >>> result = analyze([-1.0, 0.0, 1.0], [0.0, 2.0, 1.0], scale="none")
        >>> round(result.mae_in_sample, 6), round(result.mae_leave_one_out, 6)
        (0.666667, 2.5)
        >>> scaled = analyze([-1.0, 0.0, 1.0], [0.0, 2.0, 1.0])
        >>> scaled.x.tolist(), scaled.y.tolist()
        ([0.0, 0.5, 1.0], [0.0, 1.0, 0.5])
        >>> round(scaled.mae_in_sample, 6), round(scaled.mae_leave_one_out, 6), round(scaled.correlations.pearson, 6)
        (0.333333, 1.25, 0.5)
    """
    if scale not in SCALES:
        raise HierarchyError(f"unknown scale {scale!r}; expected one of {list(SCALES)}")
    x, y = _pair(x_id, y_ood)
    if scale == "minmax":
        x, y = minmax(x), minmax(y)
    line = fit_line(x, y)
    return OnTheLine(
        scale=scale,
        correlations=correlations(x, y),
        line=line,
        mae_in_sample=float(np.mean(np.abs(y - line.predict(x)))),
        mae_leave_one_out=float(np.mean(np.abs(leave_one_out_errors(x, y)))),
        x=x,
        y=y,
    )


def plot(
    result: OnTheLine,
    path: str | Path,
    *,
    x_label: str = "ImageNet LCA",
    y_label: str = "OOD top-1",
    groups: Any = None,
    title: str | None = None,
) -> Path:
    """:func:`imagenet_suite.scoring.presentation.plots.lca_on_the_line_plot` (kept here by name; plots live in plots.py).

    Example:
        >>> import pathlib, tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = plot(analyze([-1.0, 0.0, 1.0], [0.0, 2.0, 1.0]), pathlib.Path(folder) / "line.png")
        ...     path.name, path.read_bytes()[1:4]
        ('line.png', b'PNG')
    """
    from ..presentation.plots import lca_on_the_line_plot

    return lca_on_the_line_plot(result, path, x_label=x_label, y_label=y_label, groups=groups, title=title)


def read_results_csv(path: str | Path):
    """A per-model results CSV of the LCA-on-the-line code as a pandas DataFrame.

    Columns: ``model``, ``ood_top1`` (target_axis), ``id_lca`` (indicator_axis: information LCA
    over ImageNet-val mistakes), ``id_top1`` (baseline_indicator), ``is_vlm`` (bool).

    Example:
        The paper code's columns, written with an unnamed index column as the code writes them:

        >>> import pathlib, tempfile
        >>> import pandas as pd
        >>> columns = ["models_name_list", "target_axis", "indicator_axis", "baseline_indicator", "is_VLM"]
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = pathlib.Path(folder) / "results.csv"
        ...     pd.DataFrame([["resnet50", 0.25, 6.8, 0.76, False]], columns=columns).to_csv(path, sep=";")
        ...     read_results_csv(path)
              model  ood_top1  id_lca  id_top1  is_vlm
        0  resnet50      0.25     6.8     0.76   False
    """
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise HierarchyError(f"results CSV {path} does not exist")
    frame = pd.read_csv(path, sep=";", index_col=0)
    columns = {
        "models_name_list": "model",
        "target_axis": "ood_top1",
        "indicator_axis": "id_lca",
        "baseline_indicator": "id_top1",
        "is_VLM": "is_vlm",
    }
    missing = sorted(set(columns) - set(frame.columns))
    if missing:
        raise HierarchyError(f"{path}: missing column(s) {missing}; expected {sorted(columns)} (';'-separated)")
    frame = frame.rename(columns=columns)[list(columns.values())]
    frame["is_vlm"] = frame["is_vlm"].astype(str).str.lower().map({"true": True, "false": False})
    if frame["is_vlm"].isna().any():
        raise HierarchyError(f"{path}: is_VLM must be True/False")
    return frame.reset_index(drop=True)
