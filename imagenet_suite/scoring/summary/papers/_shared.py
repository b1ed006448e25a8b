"""Pieces every paper's leaderboard section uses: the weights column, CSV writing, Markdown cells."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd


def with_weights(frame: pd.DataFrame, models: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (indexed by model) with the model and its weights (``models["weights"]``, the leaderboard's
    :func:`~imagenet_suite.scoring.summary.leaderboard.models_table`) as the first two columns."""
    rows = frame.reset_index(names="model")
    weights = models["weights"] if "weights" in models else pd.Series(dtype=object)
    rows.insert(1, "weights", rows["model"].map(weights))
    return rows


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


__all__ = ["file_stem", "percent", "weights_mismatch", "with_weights", "write_csv"]
