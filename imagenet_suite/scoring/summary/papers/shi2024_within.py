"""LCA-on-the-Line, Shi et al. 2024, Table 8: top-1 against LCA within one dataset, across models.

"Corr(ImageNet Top1 Acc, ImageNet LCA) or Corr(ImageNet-A Top1 Acc, ImageNet-A LCA)": for every dataset every
run reports a top-1 and an LCA for (ImageNet val and the OOD sets), R², Pearson r, Kendall τ-b and Spearman ρ of
the runs' top-1 on it against their LCA on it (:func:`~imagenet_suite.scoring.metrics.lca_on_the_line.analyze`:
scipy's statistics, both axes min-max scaled as for Table 2), one row per LCA distance the runs report, the
paper's for the set (App. E.2: :func:`~imagenet_suite.scoring.metrics.lca_distances.paper_distance`) marked.
Signed (the paper prints absolute values). Over all models, as the paper's Table 8.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...metrics.lca_distances import PAPER_DISTANCES, paper_distance
from ...metrics.lca_on_the_line import analyze
from ..reports import OBJECTNET_HEAD_KEY

COLUMNS = ["dataset", "distance", "paper", "models", "r2", "pearson", "kendall_tau_b", "spearman"]


def _lcas(report: Mapping[str, Any]) -> dict[str, float]:
    return {
        row.get("variant", ""): float(row["value"])
        for row in report.get("metrics", [])
        if row["metric"] == "lca" and not row.get("subgroup") and row.get("value") is not None
    }


@dataclass(frozen=True)
class Points:
    """One dataset's runs on one LCA distance: their top-1 and their LCA on it (Table 8's and Fig. 11's inputs)."""

    dataset: str
    distance: str
    paper: bool  # App. E.2's distance for the set
    models: tuple[str, ...]
    top1: np.ndarray
    lca: np.ndarray


def points(suites: Mapping[str, Mapping[str, Any]], min_models: int = 3) -> list[Points]:
    """Per dataset key every run reports a top-1 and an LCA for (scored under one hierarchy), per LCA distance:
    the runs' values; none for fewer than ``min_models`` runs, a constant axis or a missing top-1."""
    found: list[Points] = []
    if len(suites) < min_models:
        return found
    keys = sorted(set.intersection(*(set(s["summary"]["accuracies"]) for s in suites.values())))
    for key in keys:
        if key.endswith(OBJECTNET_HEAD_KEY):
            continue
        reports = [s["datasets"].get(key, {}) for s in suites.values()]
        if len({json.dumps(r.get("meta", {}).get("hierarchy"), sort_keys=True) for r in reports}) > 1:
            continue  # LCAs under different hierarchies are not one axis
        distances = set.intersection(*(set(_lcas(r)) for r in reports))
        dataset = reports[0].get("meta", {}).get("dataset")
        kinds = {_kind(r) for r in reports}
        paper = paper_distance(kinds.pop(), dataset) if len(kinds) == 1 else None
        top1 = np.array([s["summary"]["accuracies"][key]["value"] for s in suites.values()], dtype=np.float64)
        for distance in sorted(distances):
            lca = np.array([_lcas(r)[distance] for r in reports])
            if np.ptp(lca) == 0 or np.ptp(top1) == 0 or np.isnan(top1).any():
                continue
            found.append(Points(key, distance, distance == paper, tuple(suites), top1, lca))
    return found


def table(suites: Mapping[str, Mapping[str, Any]], min_models: int = 3) -> pd.DataFrame:
    """Table 8 over the runs (module docstring): columns :data:`COLUMNS`; a dataset key some run lacks (a top-1
    or that distance), a constant axis, or runs scored under different hierarchies, gets no row.

    Example:
        Three models whose top-1 falls as their LCA rises, except the third: Pearson of (0.8, 0.7, 0.6) against
        (5, 6, 5.5) is −0.5 (centred (0.1, 0, −0.1) and (−0.5, 0.5, 0): Σxy = −0.05, √(0.02 · 0.5) = 0.1):

        >>> def suite(top1, lca):
        ...     report = {"meta": {"dataset": "imagenet_val"}, "metrics": [
        ...         {"metric": "lca", "variant": "info", "value": lca}]}
        ...     return {"datasets": {"imagenet_val": report},
        ...             "summary": {"accuracies": {"imagenet_val": {"value": top1}}}}
        >>> rows = table({"a": suite(0.8, 5.0), "b": suite(0.7, 6.0), "c": suite(0.6, 5.5)})
        >>> rows[["dataset", "distance", "paper", "models"]].values.tolist(), round(float(rows.pearson[0]), 6)
        ([['imagenet_val', 'info', True, 3]], -0.5)
    """
    rows = []
    for p in points(suites, min_models):
        c = analyze(p.top1, p.lca).correlations
        rows.append((p.dataset, p.distance, p.paper, c.n, c.r2, c.pearson, c.kendall_tau_b, c.spearman))
    return pd.DataFrame(rows, columns=COLUMNS)


def _kind(report: Mapping[str, Any]) -> str:
    recorded = report.get("meta", {}).get("hierarchy")
    kind = recorded.get("kind") if isinstance(recorded, Mapping) else None
    return kind if kind in PAPER_DISTANCES else "wordnet"


def markdown(frame: pd.DataFrame) -> list[str]:
    """The Table 8 part of the paper's section."""
    from ...presentation.suite_markdown import table as markdown_table

    lines = ["### Table 8: top-1 vs LCA within each dataset (all models)", ""]
    if not len(frame):
        return lines + [
            "Needs at least three runs with a top-1 and an LCA on a common dataset, scored under one hierarchy.",
            "",
        ]
    lines += [
        "R², Pearson r, Kendall τ-b and Spearman ρ across models of a dataset's top-1 against the LCA on the same "
        "dataset, per LCA distance (`paper`: App. E.2's for the set); signed. `leaderboard_lca_within_dataset.csv`.",
        "",
    ]
    rows = [
        (r.dataset, f"`{r.distance}`", "paper" if r.paper else "other", r.models, r.r2, r.pearson, r.kendall_tau_b,
         r.spearman)
        for r in frame.itertuples()
    ]  # fmt: skip
    header = ("dataset", "LCA distance", "convention", "models", "R²", "Pearson r", "Kendall τ-b", "Spearman ρ")
    return lines + markdown_table(header, rows)


__all__ = ["COLUMNS", "Points", "markdown", "points", "table"]
