"""Anzaku et al. 2024 ("Re-assessing ImageNet: How aligned is its single-label assumption with its
multi-label nature?"): top-1, ReaL accuracy and ASMA per model, and ΔRank.

* :func:`table` — Tables 4–10: for every multi-label set a run scored under the ``anzaku2024`` protocol
  (resized to the model's input size, no centre crop: App. B) its top-1, ReaL accuracy (top-1 in the label
  set) and ASMA (``exact``) from ``summary.anzaku2024`` — ImageNet val with the ReaL labels (the paper's
  ImageNetV1 columns) first, then any other set (the ImageNetV2 multi-label columns, when the runs have
  them) — and PatchML's ASMA, the mean over the run's PatchML builds (one per seed; the paper averages five
  seeds), rows sorted by it as the paper sorts them.
* :func:`delta_rank` — ΔRank = rank(ImageNet top-1) − rank(PatchML ASMA), dense ranks 1 = best
  (:func:`~imagenet_suite.scoring.metrics.multilabel.delta_rank`), when every model has both. The top-1 is the
  one of the table beside it: ImageNet val resized to the input size without a centre crop (the ``anzaku2024``
  report of ``imagenet_real``, the paper's ImageNetV1 top-1: App. B preprocesses every number of Tables 4–10 so),
  not the run's centre-crop top-1.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...metrics.delta_rank import delta_rank as delta_rank_of
from ...report_names import DEFAULT_MULTILABEL_VARIANT as DEFAULT_VARIANT
from ._shared import percent, weights_mismatch, with_weights, write_csv

PATCHML = "patchml"
IMAGENET_V1 = "imagenet_real"  # the ImageNet val build whose anzaku2024 report is the paper's ImageNetV1 columns
LABELS = {IMAGENET_V1: "ImageNet val (ReaL labels)"}  # builder -> column label (others: builder/config)
TOP1_COLUMN = "ImageNet val top-1 (resized, no centre crop)"
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


def resize_only_top1(suite: Mapping[str, Any]) -> float | None:
    """The run's ImageNet-val top-1 resized without a centre crop: ``top1_accuracy`` of its first (by key)
    ``anzaku2024`` report of an ``imagenet_real`` build — the paper's ImageNetV1 top-1 (App. B); None without
    one."""
    for key, entry in sorted((suite["summary"].get("anzaku2024") or {}).items()):
        if (
            suite["datasets"].get(key, {}).get("meta", {}).get("dataset") == IMAGENET_V1
            and entry.get("top1_accuracy") is not None
        ):
            return float(entry["top1_accuracy"])
    return None


def delta_rank(suites: Mapping[str, Mapping[str, Any]]) -> pd.Series | None:
    """ΔRank of Anzaku et al. 2024: rank(ImageNet top-1, :func:`resize_only_top1`) − rank(PatchML ASMA
    ``exact``), dense ranks, the ASMA being the mean over every PatchML build of a run (one per seed; the paper
    averages five); None unless every run (at least two) has both. ``attrs``: ``seeds`` (``{model: [seed, ...]}``
    of the builds averaged, None for a build whose seed is not recorded), ``top1`` and ``asma`` (``{model:
    value}``: the two metrics ranked)."""
    top1, asma, seeds = {}, {}, {}
    for name, suite in suites.items():
        val = resize_only_top1(suite)
        found = patchml_asma(suite)
        if val is not None and found:
            top1[name], asma[name] = val, float(np.mean([value for _, value in found]))
            seeds[name] = [seed for seed, _ in found]
    if len(top1) != len(suites) or len(top1) < 2:
        return None
    result = delta_rank_of(pd.Series(top1), pd.Series(asma))
    result.attrs.update(seeds=seeds, top1=top1, asma=asma)
    return result


def delta_rank_frame(delta: pd.Series) -> pd.DataFrame:
    """Per model the two metrics ranked, their dense ranks and ΔRank (``leaderboard_delta_rank.csv``)."""
    top1 = pd.Series(delta.attrs["top1"]).reindex(delta.index)
    asma = pd.Series(delta.attrs["asma"]).reindex(delta.index)
    return pd.DataFrame(
        {
            TOP1_COLUMN: top1,
            "top-1 rank": top1.rank(ascending=False, method="dense").astype("int64"),
            "PatchML ASMA": asma,
            "ASMA rank": asma.rank(ascending=False, method="dense").astype("int64"),
            "ΔRank": delta,
        },
        index=delta.index,
    ).rename_axis("model")


def set_label(meta: Mapping[str, Any]) -> str:
    """The column label of a multi-label set from its report's ``meta``: ``ImageNet val (ReaL labels)`` for
    ``imagenet_real`` (the paper's ImageNetV1), else ``<builder>/<config>``."""
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
            label = set_label(meta)
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
        key=lambda label: (label != LABELS[IMAGENET_V1], label),
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
    elif "PatchML ASMA" in frame:
        lines += [
            "No ΔRank: it needs at least two runs, each with a PatchML ASMA and the ImageNet-val top-1 resized without "
            "a centre crop (an `imagenet_real` build scored under the `anzaku2024` protocol).",
            "",
        ]
    return lines


def _delta_markdown(delta: pd.Series, models: pd.DataFrame, table) -> list[str]:
    lines = [
        "### ΔRank: ImageNet top-1 (resized, no centre crop) vs PatchML ASMA (Anzaku et al. 2024)",
        "",
        "ΔRank = rank(ImageNet val top-1) − rank(PatchML ASMA `exact`): positive ranks better by ASMA. The top-1 is "
        "the table's above, resized to the input size without a centre crop (`anzaku2024`, App. B), not the "
        "centre-crop top-1; ranks are dense (tied models share a rank, the next takes the next), as the paper's.",
        "",
    ]
    seeds = delta.attrs.get("seeds", {})
    frame = delta_rank_frame(delta)
    for column in (TOP1_COLUMN, "PatchML ASMA"):
        frame[column] = frame[column].map(percent)
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
        write_csv(folder, "delta_rank", delta_rank_frame(delta), written)
    return written


def reference_mismatches(suite: Mapping[str, Any]) -> list[str]:
    """What keeps a run from getting a ΔRank among the 315 models of Tables 4–10 (``leaderboard --reference
    anzaku2024``): the run must record its weights tag and have both sides of ΔRank measured as the paper
    measured them: the ImageNet-val top-1 resized without a centre crop (:func:`resize_only_top1`, the
    ``anzaku2024`` protocol) and PatchML's ASMA (:func:`patchml_asma`). Empty when it matches.

    Example:
        >>> source = {"kind": "timm", "tag": "a1_in1k", "loaded": True}
        >>> reference_mismatches({"weights_source": source, "datasets": {}, "summary": {"asma": {}}})
        ['no ImageNet-val top-1 resized without a centre crop (the anzaku2024 protocol on an imagenet_real folder)', 'no PatchML ASMA (a patchml folder)']
    """
    found = weights_mismatch(suite)
    if resize_only_top1(suite) is None:
        found.append(
            "no ImageNet-val top-1 resized without a centre crop (the anzaku2024 protocol on an imagenet_real folder)"
        )
    if not patchml_asma(suite):
        found.append("no PatchML ASMA (a patchml folder)")
    return found


__all__ = [
    "IMAGENET_V1",
    "PATCHML",
    "TOP1_COLUMN",
    "delta_rank",
    "delta_rank_frame",
    "markdown",
    "patchml_asma",
    "reference_mismatches",
    "resize_only_top1",
    "set_label",
    "table",
    "write",
]
