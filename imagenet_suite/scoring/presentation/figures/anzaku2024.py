"""Anzaku et al. 2024: ΔRank, each model's rank by ImageNet top-1 (resized, no centre crop) against its rank by
PatchML ASMA (a model above the diagonal ranks better by ASMA than by top-1, ΔRank > 0); and the paper's figures:

* Fig. 4 — the images of each multi-label set by label count (1, …, 5, >5), a pie per set (:func:`label_count_pies`);
* Fig. 5 — top-1, ReaL accuracy and ASMA per model on each set, models by ImageNetV1 top-1, with the absolute
  difference between two sets (:func:`accuracy_lines`: the runs; :func:`published_accuracy_lines`: the 315
  published models of Tables 4–10, the paper's own figure);
* Fig. 6 — ReaL accuracy (a) and subgroup accuracy (b) per label count 1–5 over the models, a box per set and
  label count (:func:`subgroup_boxes`);
* Fig. 7 — PatchML subgroup accuracy per label count over models × seeds, with the top five models by
  ImageNetV1 top-1 and by PatchML ASMA as lines (:func:`patchml_boxes`).

Every number is read from the runs' ``anzaku2024`` reports (their ``subgroup_accuracy`` rows, ``labels=g``: the
``exact`` variant, ``N_g`` the denominator; ``asma_coverage``: labelled images with 1–5 labels / labelled images).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure as MplFigure
from matplotlib.ticker import MaxNLocator

from ....reference import load as load_reference
from ...report_names import DEFAULT_MULTILABEL_VARIANT as DEFAULT_VARIANT
from ...summary.papers.anzaku2024 import (
    IMAGENET_V1,
    LABELS,
    PATCHML,
    delta_rank_frame,
    patchml_asma,
    resize_only_top1,
    set_label,
)
from ..html import Figure, drawn
from . import LEADERBOARD, MOST_ROWS

V1_LABEL = LABELS[IMAGENET_V1]
EVALUATE = "evaluate with an `imagenet_real` build (`--protocol anzaku2024`)"

DELTA_RANK = "ΔRank: top-1 rank vs PatchML ASMA rank"


def delta_rank_plot(frame: Any, title: str = "") -> MplFigure:
    """``frame`` (:func:`~imagenet_suite.scoring.summary.papers.anzaku2024.delta_rank_frame`): a point per model
    at (top-1 rank, ASMA rank), named (up to :data:`MOST_ROWS` models), with the diagonal ΔRank = 0; rank 1 (best) at the top right."""
    top1, asma = frame["top-1 rank"].to_numpy(dtype=float), frame["ASMA rank"].to_numpy(dtype=float)
    figure = MplFigure(figsize=(5, 4.6))
    axes = figure.subplots()
    last = max(top1.max(), asma.max()) + 0.5
    axes.plot([0.5, last], [0.5, last], color="0.5", linestyle="--", linewidth=0.8, label="ΔRank = 0")
    colours = ["#55A868" if d > 0 else "#C44E52" if d < 0 else "#4C72B0" for d in frame["ΔRank"]]
    axes.scatter(top1, asma, c=colours, zorder=3)
    named = len(frame) <= MOST_ROWS  # beyond, names overlap: only the points (the table names them)
    for name, x, y, delta in zip(frame.index, top1, asma, frame["ΔRank"], strict=True):
        if not named:
            break
        axes.annotate(f"{name} ({int(delta):+d})", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    axes.set(
        xlim=(last, 0.5 - 0.15 * last),
        ylim=(last, 0.5),
        xlabel="rank by ImageNet top-1 (1 = best)",
        ylabel="rank by PatchML ASMA (1 = best)",
    )  # room on the right for the best model's name
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_title(title or "Anzaku et al. 2024: ΔRank = top-1 rank − ASMA rank", fontsize=9)
    axes.legend(loc="lower right", fontsize=7)
    figure.tight_layout()
    return figure


def delta_rank_scatter(board: Any) -> Figure:
    """The ΔRank scatter of ``board.delta_rank``, or what is missing."""
    if board.delta_rank is None:
        return Figure(DELTA_RANK, missing="needs every run (at least two) with an `imagenet_real` report and a "
                      "PatchML build scored under the `anzaku2024` protocol: evaluate with those builds "
                      f"(`--protocol anzaku2024`), then {LEADERBOARD}")  # fmt: skip
    return drawn(DELTA_RANK, delta_rank_plot, delta_rank_frame(board.delta_rank))


def label_counts(report: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``{label count: {"images": N_g, "accuracy": subgroup accuracy (exact), "real": ReaL accuracy}}`` of a
    multi-label report's ``subgroup_accuracy`` and per-label-count ``multilabel_real_accuracy`` rows (``"1"``, …;
    ``real`` None in a report without the latter), and ``">5"`` (``images`` only) from its ``asma_coverage`` row:
    the labelled images beyond the subgroups. Empty without subgroup rows.

    Example:
        Table 1's ImageNetV1 counts: 39,394 images with one label, …, 161 with five; 46,837 labelled, 46,693 of them
        with 1–5 labels, so 144 with more than five.

        >>> rows = [{"metric": "subgroup_accuracy", "variant": "exact", "subgroup": f"labels={g}", "value": 0.5,
        ...          "denominator": n} for g, n in ((1, 39394), (2, 5408), (3, 1319), (4, 411), (5, 161))]
        >>> rows.append({"metric": "asma_coverage", "variant": "", "subgroup": "", "value": 0.9969,
        ...              "numerator": 46693, "denominator": 46837})
        >>> {g: entry["images"] for g, entry in label_counts({"metrics": rows}).items()}
        {'1': 39394, '2': 5408, '3': 1319, '4': 411, '5': 161, '>5': 144}
    """
    found: dict[str, dict[str, Any]] = {}
    coverage = None
    for row in report.get("metrics", ()):
        subgroup = row.get("subgroup") or ""
        if (
            row["metric"] == "subgroup_accuracy"
            and row.get("variant") == DEFAULT_VARIANT
            and subgroup.startswith("labels=")
        ):
            entry = found.setdefault(subgroup.removeprefix("labels="), {"real": None})
            entry.update(images=row.get("denominator"), accuracy=row.get("value"))
        elif row["metric"] == "multilabel_real_accuracy" and subgroup.startswith("labels="):
            entry = found.setdefault(subgroup.removeprefix("labels="), {"images": None, "accuracy": None})
            entry["real"] = row.get("value")
        elif row["metric"] == "asma_coverage" and row.get("numerator") is not None:
            coverage = int(row["denominator"]) - int(row["numerator"])
    found = dict(sorted(found.items(), key=lambda kv: int(kv[0])))
    if found and coverage is not None:
        found[f">{max(map(int, found))}"] = {"images": coverage, "accuracy": None, "real": None}
    return found


def multilabel_sets(suite: Mapping[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """``{set label: label_counts(report)}`` of a run's ``anzaku2024`` multi-label reports but PatchML (ImageNet
    val with ReaL labels first), the first report of each set (by key)."""
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for key in sorted(suite["summary"].get("anzaku2024") or {}):
        report = suite["datasets"].get(key, {})
        meta = report.get("meta", {})
        if meta.get("dataset") != PATCHML and set_label(meta) not in found:
            counts = label_counts(report)
            if counts:
                found[set_label(meta)] = counts
    return dict(sorted(found.items(), key=lambda kv: kv[0] != V1_LABEL))


PIES = "Images by label count (Fig. 4)"


def pies_plot(counts: dict[str, dict[str, int]]) -> MplFigure:
    """A pie per set (``{set: {label count: images}}``), each wedge labelled with its count and share."""
    figure = MplFigure(figsize=(4.6 * len(counts), 4.4))
    for axes, (name, per) in zip(figure.subplots(1, len(counts), squeeze=False)[0], counts.items(), strict=True):
        total = sum(per.values())
        labels = [f"{g} label{'s' if g != '1' else ''}: {n:,} ({100 * n / total:.1f} %)" for g, n in per.items()]
        wedges, _ = axes.pie(list(per.values()), startangle=90, counterclock=False)
        axes.legend(wedges, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), fontsize=7, frameon=False)
        axes.set_title(f"{name}: {total:,} labelled images", fontsize=9)
    figure.suptitle("Anzaku et al. 2024, Fig. 4: images by number of labels", fontsize=9)
    figure.tight_layout()
    return figure


def label_count_pies(suites: Mapping[str, Mapping[str, Any]]) -> Figure:
    """Fig. 4 from the first run (by name) having each multi-label set's label-count rows, or what is missing."""
    counts: dict[str, dict[str, int]] = {}
    for name in sorted(suites):
        for label, per in multilabel_sets(suites[name]).items():
            counts.setdefault(label, {g: int(e["images"]) for g, e in per.items() if e["images"] is not None})
    if not counts:
        return Figure(
            PIES, missing=f"no run has a multi-label set with label-count rows: {EVALUATE}, then {LEADERBOARD}"
        )
    return drawn(PIES, pies_plot, dict(sorted(counts.items(), key=lambda kv: kv[0] != V1_LABEL)))


ACCURACIES = "Top-1, ReaL and ASMA per model (Fig. 5)"
PUBLISHED = "Top-1, ReaL and ASMA of the 315 published models (Fig. 5, Tables 4–10)"
METRICS = (("top-1", "(a) top-1 accuracy"), ("ReaL", "(b) ReaL accuracy"), ("ASMA", "(c) ASMA"))


def lines_plot(frame: pd.DataFrame, sets: list[str], title: str) -> MplFigure:
    """Fig. 5: ``frame`` (rows: models sorted by the first set's top-1; columns ``<set> <metric>``, fractions) as a
    line per set and metric panel, in percent, and the absolute difference between the first two sets."""
    figure = MplFigure(figsize=(13, 3.8))
    x = np.arange(len(frame))
    marker = "." if len(frame) <= MOST_ROWS else None  # 315 models: lines only (a marker each weighs on the SVG)
    for axes, (metric, name) in zip(figure.subplots(1, 3, squeeze=False)[0], METRICS, strict=True):
        for label in sets:
            axes.plot(x, 100 * frame[f"{label} {metric}"].to_numpy(dtype=float), marker=marker, label=label)
        if len(sets) > 1:
            difference = (frame[f"{sets[0]} {metric}"] - frame[f"{sets[1]} {metric}"]).abs()
            axes.plot(
                x, 100 * difference.to_numpy(dtype=float), color="#C44E52", marker=marker, label="absolute difference"
            )
        axes.set(xlabel=f"models, by {sets[0]} top-1 (ascending)", ylabel="%")
        if len(frame) <= MOST_ROWS:
            axes.set_xticks(x, [str(m) for m in frame.index], rotation=60, ha="right", fontsize=6)
        axes.set_title(name, fontsize=9)
        axes.grid(linewidth=0.3)
        axes.legend(fontsize=6)
    figure.suptitle(title, fontsize=9)
    figure.tight_layout()
    return figure


def accuracy_lines(board: Any) -> Figure:
    """Fig. 5 from the runs' table (``board.anzaku2024``): every set with all three columns, or what is missing."""
    frame = board.anzaku2024
    sets = [c.removesuffix(" top-1") for c in frame.columns if c.endswith(" top-1")]
    sets = [s for s in sets if all(f"{s} {m}" in frame for m, _ in METRICS)]
    if V1_LABEL not in sets:
        return Figure(ACCURACIES, missing=f"no run has ImageNet val with ReaL labels under the `anzaku2024` protocol: "
                      f"{EVALUATE}, then {LEADERBOARD}")  # fmt: skip
    shown = frame.dropna(subset=[f"{V1_LABEL} top-1"]).sort_values(f"{V1_LABEL} top-1", kind="stable")
    title = "Anzaku et al. 2024, Fig. 5: the runs"
    if len(sets) == 1:
        title += " (ImageNetV1 only: no run has a second multi-label set)"
    return drawn(ACCURACIES, lines_plot, shown, sets, title)


@functools.cache  # the same package data every time: drawn once per process
def published_accuracy_lines() -> Figure:
    """Fig. 5 as the paper draws it, from its published Tables 4–10 (the reference zoo ``anzaku2024_tables4_10``):
    the 315 models by ImageNetV1 top-1, their V1 and V2 top-1, ReaL and ASMA."""
    zoo = load_reference("anzaku2024_tables4_10", fractions=True).set_index("model")
    columns = {}
    for label, version in (("ImageNetV1", "v1"), ("ImageNetV2", "v2")):
        for (metric, _), column in zip(METRICS, ("top1", "real", "asma"), strict=True):
            columns[f"{label} {metric}"] = zoo[f"{column}_{version}"]
    frame = pd.DataFrame(columns).sort_values("ImageNetV1 top-1", kind="stable")
    title = f"Anzaku et al. 2024, Fig. 5: the {len(frame)} published models (Tables 4–10)"
    return drawn(PUBLISHED, lines_plot, frame, ["ImageNetV1", "ImageNetV2"], title)


SUBGROUPS = "ReaL and subgroup accuracy per label count (Fig. 6)"


def boxes_plot(values: dict[str, dict[str, list[float]]], lines: dict[str, dict[str, dict[str, float]]], title: str,
               ylabel: str) -> MplFigure:  # fmt: skip
    """Boxes of ``values`` (``{series: {label count: [fractions]}}``, side by side per label count) with their
    points, and ``lines`` (``{legend: {model: {label count: fraction}}}``) drawn over them; in percent."""
    counts = sorted({g for per in values.values() for g in per}, key=int)
    figure = MplFigure(figsize=(max(5.0, 1.1 * len(counts) * len(values) + 2), 4.4))
    _boxes(figure.subplots(), values, lines, title, ylabel)
    figure.tight_layout()
    return figure


def panels_plot(panels: list[tuple[dict[str, dict[str, list[float]]], str, str]]) -> MplFigure:
    """Fig. 6: one box panel (:func:`boxes_plot`'s, no lines) per ``(values, title, ylabel)``."""
    figure = MplFigure(figsize=(5.6 * len(panels), 4.4))
    for axes, (values, title, ylabel) in zip(figure.subplots(1, len(panels), squeeze=False)[0], panels, strict=True):
        _boxes(axes, values, {}, title, ylabel)
    figure.tight_layout()
    return figure


def _boxes(axes: Any, values: dict[str, dict[str, list[float]]], lines: dict[str, dict[str, dict[str, float]]],
           title: str, ylabel: str) -> None:  # fmt: skip
    counts = sorted({g for per in values.values() for g in per}, key=int)
    width = 0.8 / len(values)
    colours = ("#4C72B0", "#DD8452", "#55A868", "#8172B2")
    for k, (series, per) in enumerate(values.items()):
        where = [i + (k - (len(values) - 1) / 2) * width for i, g in enumerate(counts) if g in per]
        data = [100 * np.asarray(per[g]) for g in counts if g in per]
        boxes = axes.boxplot(data, positions=where, widths=0.8 * width, patch_artist=True, showfliers=False)
        for patch in boxes["boxes"]:
            patch.set(facecolor=colours[k % len(colours)], alpha=0.35)
        for position, points in zip(where, data, strict=True):
            axes.scatter(np.full(len(points), position), points, s=6, color=colours[k % len(colours)], zorder=3)
        axes.plot([], [], color=colours[k % len(colours)], linewidth=6, alpha=0.35, label=series)
    styles = {0: ("#1f4e9c", "-"), 1: ("#d9730d", "--")}
    for k, (legend, models) in enumerate(lines.items()):
        colour, style = styles.get(k, ("0.3", ":"))
        for j, per in enumerate(models.values()):
            x = [i for i, g in enumerate(counts) if g in per]
            axes.plot(x, [100 * per[counts[i]] for i in x], color=colour, linestyle=style, linewidth=0.9,
                      label=legend if j == 0 else None)  # fmt: skip
    axes.set_xticks(range(len(counts)), counts)
    axes.set(xlabel="number of labels", ylabel=ylabel, ylim=(0, 100))
    axes.legend(fontsize=7)
    axes.grid(axis="y", linewidth=0.3)
    axes.set_title(title, fontsize=9)


def subgroup_boxes(suites: Mapping[str, Mapping[str, Any]]) -> Figure:
    """Fig. 6: per multi-label set and label count 1–5 the runs' ReaL accuracy (a) and subgroup accuracy (b,
    ``exact``), a box each over the runs; (a) left out when no run's report has ReaL accuracy per label count (a
    report written before those rows); or what is missing."""
    values: dict[str, dict[str, dict[str, list[float]]]] = {"real": {}, "accuracy": {}}
    for suite in suites.values():
        for label, per in multilabel_sets(suite).items():
            for g, entry in per.items():
                for field in values:
                    if entry.get(field) is not None:
                        values[field].setdefault(label, {}).setdefault(g, []).append(float(entry[field]))
    if not values["accuracy"]:
        return Figure(SUBGROUPS, missing=f"no run has a multi-label set with subgroup-accuracy rows: {EVALUATE}, "
                      f"then {LEADERBOARD}")  # fmt: skip
    runs = max(len(v) for per in values["accuracy"].values() for v in per.values())
    panels = [(values["real"], "(a) ReaL accuracy per label count", "ReaL accuracy (%)")] if values["real"] else []
    title = f"(b) subgroup accuracy per label count, {runs} run(s)"
    panels.append((values["accuracy"], title, "subgroup accuracy (%)"))
    return drawn(SUBGROUPS, panels_plot, panels)


PATCHML_BOXES = "PatchML subgroup accuracy per label count (Fig. 7)"
TOP = 5  # the paper's top five by ImageNetV1 top-1 and by PatchML ASMA


def patchml_subgroups(suite: Mapping[str, Any]) -> list[dict[str, float]]:
    """``[{label count: subgroup accuracy (exact)}]``, one per PatchML report (seed) of a run."""
    found = []
    for key in sorted(suite["datasets"]):
        report = suite["datasets"][key]
        if report.get("meta", {}).get("dataset") == PATCHML:
            per = {g: float(e["accuracy"]) for g, e in label_counts(report).items() if e["accuracy"] is not None}
            if per:
                found.append(per)
    return found


def patchml_boxes(suites: Mapping[str, Mapping[str, Any]]) -> Figure:
    """Fig. 7: PatchML subgroup accuracy per label count over every run and seed, with the runs' mean over seeds
    drawn as lines for the top five by ImageNetV1 top-1 (resized, no centre crop) and by PatchML ASMA; or what is
    missing."""
    per_run = {name: patchml_subgroups(suite) for name, suite in suites.items()}
    per_run = {name: found for name, found in per_run.items() if found}
    if not per_run:
        return Figure(PATCHML_BOXES, missing="no run has a PatchML report with subgroup-accuracy rows: evaluate with "
                      f"`patchml` builds (one per seed), then {LEADERBOARD}")  # fmt: skip
    values: dict[str, list[float]] = {}
    for found in per_run.values():
        for per in found:
            for g, value in per.items():
                values.setdefault(g, []).append(value)
    means = {name: pd.DataFrame(found).mean().to_dict() for name, found in per_run.items()}
    top1 = {name: resize_only_top1(suites[name]) for name in per_run}
    asma = {name: float(np.mean([v for _, v in patchml_asma(suites[name])] or [np.nan])) for name in per_run}
    lines = {}
    for legend, ranked in ((f"top {TOP} by ImageNetV1 top-1", top1), (f"top {TOP} by PatchML ASMA", asma)):
        best = sorted((m for m, v in ranked.items() if v is not None and not np.isnan(v)), key=lambda m: -ranked[m])
        if best:
            lines[legend] = {m: means[m] for m in best[:TOP]}
    title = f"Anzaku et al. 2024, Fig. 7: PatchML, {len(per_run)} run(s) × their seeds"
    return drawn(PATCHML_BOXES, boxes_plot, {"PatchML": values}, lines, title, "subgroup accuracy (%)")


def figures(board: Any, suites: Mapping[str, Mapping[str, Any]]) -> list[Figure]:
    """Figs. 4, 5 (the runs, then the published models), 6 and 7, in the paper's order."""
    return [
        label_count_pies(suites),
        accuracy_lines(board),
        published_accuracy_lines(),
        subgroup_boxes(suites),
        patchml_boxes(suites),
    ]


__all__ = [
    "ACCURACIES",
    "DELTA_RANK",
    "PATCHML_BOXES",
    "PIES",
    "PUBLISHED",
    "SUBGROUPS",
    "accuracy_lines",
    "boxes_plot",
    "delta_rank_plot",
    "delta_rank_scatter",
    "figures",
    "label_count_pies",
    "label_counts",
    "lines_plot",
    "multilabel_sets",
    "panels_plot",
    "patchml_boxes",
    "patchml_subgroups",
    "pies_plot",
    "published_accuracy_lines",
    "subgroup_boxes",
]
