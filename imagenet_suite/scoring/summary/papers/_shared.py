"""Pieces every paper's leaderboard section uses: the model column and header arrows, the weights legend, CSV
writing, Markdown cells."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ...metrics.quba import DIMENSIONS, QUBA_SIGNS

UP, DOWN = "↑", "↓"  # in a column header: higher is better, lower is better
HEADER_DIRECTIONS: dict[str, str] = {
    **dict(zip(DIMENSIONS, (UP if sign > 0 else DOWN for sign in QUBA_SIGNS), strict=True)),
    "quba": UP,
    "quba_rank": DOWN,
    "quba_autoattack": UP,
    "quba_autoattack_rank": DOWN,
    **dict.fromkeys(("clean", "Linf", "L2", "L1", "common"), UP),  # Heuillet et al. 2025's five types' accuracies
    **dict.fromkeys(("score_sum", "borda", "dataset_level_sum", "dataset_level_borda"), UP),
    **dict.fromkeys(("sum_rank", "borda_rank", "dataset_level_sum_rank", "dataset_level_borda_rank"), DOWN),
}
"""The direction of the leaderboard's model-indexed columns that have one (ranks: 1 is best)."""


def with_weights(frame: pd.DataFrame, models: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (indexed by model) with the model as its first column, for a table of ``leaderboard.md``; the
    columns of :data:`HEADER_DIRECTIONS` get their arrow (``quba ↑``). The models' weights are not repeated in
    every table: ``leaderboard.md`` opens with one legend of them (``models``, the leaderboard's
    :func:`~imagenet_suite.scoring.summary.leaderboard.models_table`; see :func:`weights_legend`).

    Example:
        >>> frame = pd.DataFrame({"quba": [0.5], "note": ["x"]}, index=pd.Index(["m"], name="model"))
        >>> list(with_weights(frame, pd.DataFrame()).columns)
        ['model', 'quba ↑', 'note']
    """
    rows = frame.reset_index(names="model")
    return rows.rename(columns=lambda c: f"{c} {HEADER_DIRECTIONS[c]}" if c in HEADER_DIRECTIONS else c)


def weights_legend(models: pd.DataFrame) -> list[str]:
    """The ``## Models`` section of ``leaderboard.md``: each model name with its weights (tag, where they came
    from, sha256 in 12 digits), once for every table below."""
    from ...presentation.suite_markdown import table

    lines = [
        "## Models",
        "",
        "The tables below name each model by its name here; its weights: the tag its spec resolved to, where they "
        "came from and their sha256 (all of it, the tag's source and location: `leaderboard_models.csv`).",
        "",
    ]
    weights = models["weights"] if "weights" in models else pd.Series(dtype=object)
    return lines + table(("model", "weights"), weights.items())


def write_csv(folder: Path, name: str, frame: pd.DataFrame, written: list[Path], index: bool = True) -> None:
    """``frame`` as ``folder/leaderboard_<name>.csv`` (atomically), appended to ``written``."""
    from ....files import atomic_write_bytes

    written.append(folder / f"leaderboard_{name}.csv")
    text = frame.to_csv(index_label="model") if index else frame.to_csv(index=False)
    atomic_write_bytes(written[-1], text.encode())


def percent(value: float | None) -> str:
    """A fraction as a percentage with one decimal, as NINCO's and Anzaku et al.'s tables print them (— if absent).

    Example:
        >>> percent(0.51849), percent(None), percent(float("nan"))
        ('51.8', '—', '—')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{100 * value:.1f}"


def file_stem(key: str) -> str:
    """A report key as part of a file name (``/`` → ``__``)."""
    return key.replace("/", "__")


def weights_mismatch(suite: dict) -> list[str]:
    """What keeps a run's weights from being compared with a paper's published models (``leaderboard
    --reference``): a suite.json that records no weights tag (written before format 3), or a random init; empty
    when the tag is recorded (pretrained weights, or a file with the tag that chose its architecture and
    preprocessing).

    Example:
        >>> weights_mismatch({"weights": "pretrained"})
        ['weights tag not recorded (a suite.json before format 3): which weights were evaluated is unknown']
        >>> source = {"kind": "timm", "tag": "a1_in1k", "loaded": True}
        >>> weights_mismatch({"weights_source": source}), weights_mismatch({"weights_source": {**source, "kind": "none"}})
        ([], ['random init (weights none): no trained weights'])
    """
    source = suite.get("weights_source")
    if source is None or (source.get("tag") is None and source.get("kind") != "file"):
        return ["weights tag not recorded (a suite.json before format 3): which weights were evaluated is unknown"]
    if source.get("kind") == "none":
        return ["random init (weights none): no trained weights"]
    return []


__all__ = [
    "HEADER_DIRECTIONS",
    "file_stem",
    "percent",
    "weights_legend",
    "weights_mismatch",
    "with_weights",
    "write_csv",
]
