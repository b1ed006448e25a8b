"""Anzaku et al. 2024 ("Re-assessing ImageNet: How aligned is its single-label assumption with its
multi-label nature?"): top-1, ReaL accuracy and ASMA per model, and ΔRank.

* :func:`table` — Tables 4–10: for every multi-label set a run scored under the ``anzaku2024`` protocol
  (resized to the model's input size, no centre crop: App. B) its top-1, ReaL accuracy (top-1 in the label
  set) and ASMA (``exact``) from ``summary.anzaku2024`` — ImageNet val with the ReaL labels (the paper's
  ImageNetV1 columns) first, then any other set (the ImageNetV2 multi-label columns, when the runs have
  them) — and PatchML's ASMA, the mean over the run's PatchML builds (one per seed; the paper averages five
  seeds), rows sorted by it as the paper sorts them.
* :func:`delta_rank` — ΔRank = rank(ImageNet top-1) − rank(PatchML ASMA) (ranks 1 = best), when every model
  has both.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...metrics.multilabel import DEFAULT_VARIANT
from ...metrics.multilabel import delta_rank as delta_rank_of
from ._shared import percent, with_weights, write_csv

PATCHML = "patchml"
LABELS = {"imagenet_real": "ImageNet val (ReaL labels)"}  # builder -> column label (others: builder/config)
COLUMNS = (("top1_accuracy", "top-1"), ("real_accuracy", "ReaL"), ("asma", "ASMA"))


def patchml_asma(suite: Mapping[str, Any]) -> list[tuple[int | None, float]]:
    """``[(seed, ASMA exact)]`` of a run's PatchML reports (key order); the seed None where not recorded."""
    found = []
    summary = suite["summary"]
    for key, report in sorted(suite["datasets"].items()):
        value = summary["asma"].get(key, {}).get(DEFAULT_VARIANT)
        if report["meta"].get("dataset") == PATCHML and value is not None:
            found.append(((report["meta"].get("protocol") or {}).get("seed"), value))
    return found


def delta_rank(suites: Mapping[str, Mapping[str, Any]]) -> pd.Series | None:
    """ΔRank of Anzaku et al. 2024: rank(ImageNet top-1) − rank(PatchML ASMA ``exact``), the ASMA being the
    mean over every PatchML build of a run (one per seed; the paper averages five). ``attrs["seeds"]``:
    ``{model: [seed, ...]}`` of the builds averaged (None for a build whose seed is not recorded)."""
    top1, asma, seeds = {}, {}, {}
    for name, suite in suites.items():
        val = suite["summary"]["quba"]["dimensions"].get("accuracy", {}).get("value")
        found = patchml_asma(suite)
        if val is not None and found:
            top1[name], asma[name] = val, float(np.mean([value for _, value in found]))
            seeds[name] = [seed for seed, _ in found]
    if len(top1) != len(suites) or len(top1) < 2:
        return None
    result = delta_rank_of(pd.Series(top1), pd.Series(asma))
    result.attrs["seeds"] = seeds
    return result


def _label(meta: Mapping[str, Any]) -> str:
    dataset = str(meta.get("dataset"))
    return LABELS.get(dataset, f"{dataset}/{meta.get('config')}")


def table(suites: Mapping[str, Mapping[str, Any]], delta: pd.Series | None = None) -> pd.DataFrame:
    """Per model (index): ``<set> top-1``, ``<set> ReaL``, ``<set> ASMA`` for each ``anzaku2024`` multi-label
    set but PatchML (ImageNet val's first), ``PatchML ASMA`` (mean over seeds) and ``PatchML seeds``, and
    ``ΔRank`` (``delta``); rows by PatchML ASMA, best first. Empty (no columns) when no run has any."""
    rows: dict[str, dict[str, Any]] = {}
    for name, suite in suites.items():
        row: dict[str, Any] = {}
        for key, entry in sorted((suite["summary"].get("anzaku2024") or {}).items()):
            meta = suite["datasets"].get(key, {}).get("meta", {})
            if meta.get("dataset") == PATCHML:
                continue
            label = _label(meta)
            for field, column in COLUMNS:
                row.setdefault(f"{label} {column}", entry.get(field, np.nan))
        found = patchml_asma(suite)
        if found:
            row["PatchML ASMA"] = float(np.mean([value for _, value in found]))
            row["PatchML seeds"] = len(found)
        rows[name] = row
    frame = pd.DataFrame.from_dict(rows, orient="index").reindex(list(suites))
    sets = sorted(
        {c.rsplit(" ", 1)[0] for c in frame.columns if not c.startswith("PatchML")},
        key=lambda label: (label != LABELS["imagenet_real"], label),
    )
    ordered = [f"{label} {column}" for label in sets for _, column in COLUMNS if f"{label} {column}" in frame]
    frame = frame[ordered + [c for c in ("PatchML ASMA", "PatchML seeds") if c in frame]]
    if delta is not None:
        frame["ΔRank"] = delta
    if "PatchML ASMA" in frame:
        frame = frame.sort_values("PatchML ASMA", ascending=False, kind="stable", na_position="last")
    return frame.rename_axis("model")


def markdown(frame: pd.DataFrame, delta: pd.Series | None, models: pd.DataFrame) -> list[str]:
    """The paper's section of ``leaderboard.md``."""
    from ...presentation.suite_markdown import table as markdown_table

    lines = ["## Anzaku et al. 2024", "", "### Top-1, ReaL and ASMA (Tables 4–10)", ""]
    if not frame.shape[1]:
        lines += [
            "No run has a multi-label set scored under the `anzaku2024` protocol (ReaL labels, PatchML).",
            "",
        ]
    else:
        lines += [
            "Percent, resized to each model's input size without a centre crop (`anzaku2024` protocol); ASMA "
            "`exact`; PatchML ASMA is the mean over the run's PatchML seeds.",
            "",
        ]
        shown = frame.copy()
        for column in shown.columns:
            if column not in ("PatchML seeds", "ΔRank"):
                shown[column] = shown[column].map(percent)
        rows = with_weights(shown, models)
        lines += markdown_table(list(rows.columns), rows.itertuples(index=False))
    if delta is not None:
        lines += _delta_markdown(delta, models, markdown_table)
    return lines


def _delta_markdown(delta: pd.Series, models: pd.DataFrame, table) -> list[str]:
    lines = ["### ΔRank: ImageNet top-1 vs PatchML ASMA (Anzaku et al. 2024)", ""]
    seeds = delta.attrs.get("seeds", {})
    frame = delta.rename("ΔRank").to_frame()
    frame["PatchML seeds averaged"] = [len(seeds.get(model, [])) for model in frame.index]
    rows = with_weights(frame, models)
    lines += table(list(rows.columns), rows.itertuples(index=False))
    kinds = {tuple(map(str, found)) for found in seeds.values()}
    if len(kinds) > 1:
        lines += [
            "The runs differ in PatchML seeds, so their mean ASMA is over different builds: "
            + "; ".join(f"`{model}`: {', '.join(map(str, found))}" for model, found in seeds.items()),
            "",
        ]
    elif kinds:
        lines += [f"PatchML ASMA is the mean over seeds {', '.join(next(iter(kinds)))} in every run.", ""]
    return lines


def write(frame: pd.DataFrame, delta: pd.Series | None, folder: Path) -> list[Path]:
    """``leaderboard_anzaku2024.csv`` (fractions) and ``leaderboard_delta_rank.csv``, those with data."""
    written: list[Path] = []
    if frame.shape[1]:
        write_csv(folder, "anzaku2024", frame, written)
    if delta is not None:
        write_csv(folder, "delta_rank", delta.to_frame(), written)
    return written


__all__ = ["PATCHML", "delta_rank", "markdown", "patchml_asma", "table", "write"]
