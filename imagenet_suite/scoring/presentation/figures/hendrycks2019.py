"""ImageNet-C (Hendrycks & Dietterich 2019): the mCE's terms, the corruption error CE (AlexNet = 1; lower is better)
per corruption and model, each model's mCE in its column name: leaderboard.html shades it as a table, green below
AlexNet, red above."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..shading import Shading
from . import LEADERBOARD, MOST_COLUMNS

CE = "CE per corruption and model (mCE's terms)"
NO_CE = (
    "no run has a corruption error: evaluate with the imagenet_c builds (`imagenet-suite evaluate MODEL --datasets "
    f"...`), then {LEADERBOARD}"
)


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


def ce_shown(suites: Mapping[str, Mapping[str, Any]]) -> tuple[pd.DataFrame, str]:
    """``(frame, note)``: :func:`ce_frame` of ``suites``, at most :data:`MOST_COLUMNS` models (the best by mCE, the
    mean of a column, when there are more), and a sentence saying which; an empty frame when no run has a CE."""
    frame = ce_frame(suites)
    if frame.shape[1] <= MOST_COLUMNS:
        return frame, ""
    best = frame[frame.mean().sort_values(kind="stable").index[:MOST_COLUMNS]]
    return best, f"The {MOST_COLUMNS} models with the lowest mCE of {frame.shape[1]}."


def ce_shading(frame: pd.DataFrame) -> Shading:
    """Green below AlexNet's CE (1), red above, over a range symmetric about 1 that holds every value (at least
    0.5 to 1.5).

    Example:
        >>> shading = ce_shading(pd.DataFrame({"m (mCE 1.2)": [0.5, 2.0]}))
        >>> shading.cmap, shading.vmin, shading.vmax
        ('RdYlGn_r', 0.0, 2.0)
    """
    values = frame.to_numpy(dtype=float)
    spread = max(0.5, float(np.nanmax(np.abs(values - 1)))) if np.isfinite(values).any() else 0.5
    return Shading([str(column) for column in frame.columns], "RdYlGn_r", 1 - spread, 1 + spread)


__all__ = ["CE", "NO_CE", "ce_frame", "ce_shading", "ce_shown"]
