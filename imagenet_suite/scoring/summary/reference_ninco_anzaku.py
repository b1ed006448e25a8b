"""``leaderboard --reference bitterwolf2023|anzaku2024``: the runs among NINCO's and Anzaku et al.'s published models.

* ``bitterwolf2023`` — NINCO's Tables 3 and 4: per detector, each run's mean FPR@95 (lower is better) and mean
  AUROC over the 64 NINCO classes, and its rank among the published models that have that detector (28, or 26
  where the two zero-shot CLIP models have no score), with the rank interval and P(rank ≤ 1, 5) of a bootstrap
  over the published pool (:func:`~imagenet_suite.scoring.summary.rank_uncertainty.score_ranks`); a published
  row keeps its rank among the published.
* ``anzaku2024`` — Tables 4–10's 315 models: each run's ImageNet-val top-1 (resized, no centre crop) and PatchML
  ASMA, their ranks among the published values as the printed ΔRank has them (``tests/test_reference_aggregates.py``):
  top-1 a dense rank (1 + the distinct published top-1 values above it), ASMA the position in the tables (1 +
  the published rows above it), and ΔRank = top-1 rank − ASMA rank. A published row keeps its printed ΔRank; ``same_model`` names
  the published row whose timm name is the run's weights tag (``<architecture>.<tag>``), a re-measurement of a
  model of the paper.

Numbers are fractions (the papers' percentages divided by 100). Called by
:func:`~imagenet_suite.scoring.summary.reference_rows.reference_sections`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...reference import NINCO_DETECTORS, PAPERS, REFERENCE_VERSION, load
from .papers import anzaku2024
from .papers.bitterwolf2023 import PAPER_COLUMNS
from .rank_uncertainty import Resampling, score_ranks
from .reference_tables import (
    PUBLISHED,
    THIS_RUN,
    ReferenceSection,
    check_names,
    number_text,
    protocol_text,
    shown_rows,
)
from .suite_json import weights_label

NINCO_METRICS = (("fpr95", "mean_fpr95", "bitterwolf2023_table3_fpr95", False),
                 ("auroc", "mean_auroc", "bitterwolf2023_table4_auroc", True))  # fmt: skip
"""(column, summary.ninco key, reference table, higher is better) of NINCO's Tables 3 and 4."""
NINCO_TOP = (1, 5)


def bitterwolf2023_section(
    suites: Mapping[str, Mapping[str, Any]],
    mismatches: Mapping[str, list[str]],
    replicates: Mapping[str, pd.DataFrame | None],
    resampling: Resampling,
) -> ReferenceSection:
    """The runs among NINCO's models (module docstring); one long table, ``detectors``: per model (index) and
    ``detector``, ``source``, ``weights`` (a published row: its pre-training and timm model), and for ``fpr95``
    and ``auroc`` the value, ``<metric>_rank``, ``<metric>_rank_low`` / ``_high`` and ``<metric>_p_rank_le_<k>``;
    ``protocol``."""
    del replicates  # NINCO's per-class means have no image replicates in suite.json
    frames = []
    for column, key, name, higher in NINCO_METRICS:
        zoo = load(name, fractions=True).set_index("model")
        check_names(zoo.index, list(suites))
        runs = {
            run: {d: (suite["summary"].get("ninco") or {}).get(d, {}).get(key) for d in NINCO_DETECTORS}
            for run, suite in suites.items()
        }
        runs_frame = pd.DataFrame.from_dict(runs, orient="index", columns=list(NINCO_DETECTORS)).astype(float)
        values = pd.concat([zoo[list(NINCO_DETECTORS)], runs_frame])
        for detector in NINCO_DETECTORS:
            column_values = values[detector].dropna()
            pool = [model for model in zoo.index if model in column_values.index]
            found = score_ranks(column_values, None, resampling, pool=pool, higher_is_better=higher, top=NINCO_TOP)
            ranks = found.table.drop(columns="rank_median").add_prefix(f"{column}_")
            frames.append(
                pd.DataFrame({"detector": detector, column: column_values})
                .join(ranks)
                .rename_axis("model")
                .reset_index()
                .assign(metric=column)
            )
    long = pd.concat(frames)
    merged = None
    for column, *_ in NINCO_METRICS:
        part = long[long["metric"] == column].drop(columns="metric").dropna(axis=1, how="all")
        merged = part if merged is None else merged.merge(part, on=["model", "detector"], how="outer")
    zoo = load("bitterwolf2023_table3_fpr95").set_index("model")
    published = {m: f"NINCO: {zoo.loc[m, 'pretraining']}, timm {zoo.loc[m, 'timm_model']}" for m in zoo.index}
    merged.insert(2, "source", [THIS_RUN if m in suites else PUBLISHED for m in merged["model"]])
    merged.insert(3, "weights", [weights_label(suites[m]) if m in suites else published[m] for m in merged["model"]])
    merged["protocol"] = [protocol_text(mismatches, m) for m in merged["model"]]
    order = {d: i for i, d in enumerate(NINCO_DETECTORS)}
    merged = merged.sort_values(["detector", "fpr95_rank"], key=lambda c: c.map(order) if c.name == "detector" else c)
    table = merged.set_index("model")
    notes = [
        f"Per detector, each run's NINCO mean FPR@95 and AUROC (over the 64 classes; Tables 3 and 4, reference data "
        f"{REFERENCE_VERSION}, the published values unchanged) ranked among the published models with that "
        f"detector (1 = lowest FPR@95, highest AUROC). Rank intervals: {round(100 * resampling.level)} % over "
        f"{resampling.resamples} resamples of the published model pool (seed {resampling.seed}).",
    ]
    section = ReferenceSection("bitterwolf2023", PAPERS["bitterwolf2023"], {"detectors": table}, notes=notes)
    section.shown["detectors"] = table[table["source"] == THIS_RUN]
    section.mismatches = dict(mismatches)
    return section


def bitterwolf2023_markdown(section: ReferenceSection, table) -> list[str]:
    """The runs' rows: per run and detector, FPR@95 and AUROC (%) with their ranks and intervals among N."""
    full = section.tables["detectors"]
    counts = full[full["source"] == PUBLISHED].groupby("detector")["fpr95"].count()
    rows = []
    for model, r in section.shown["detectors"].iterrows():
        rows.append((
            model, PAPER_COLUMNS.get(r.detector, r.detector), _percent(r.fpr95), _rank(r, "fpr95"),
            _percent(r.auroc), _rank(r, "auroc"), int(counts.get(r.detector, 0)), r.protocol,
        ))  # fmt: skip
    header = ("model", "detector", "FPR@95 %", "rank [95 %]", "AUROC %", "rank [95 %]", "published", "protocol")
    if not rows:
        return ["No run has a NINCO number of the paper's detectors.", ""]
    return table(header, rows) + ["Every row: `leaderboard_reference_bitterwolf2023_detectors.csv`.", ""]


def _percent(value: float) -> str | None:
    return number_text(100 * value if value == value else value, "{:.1f}")


def _rank(row: pd.Series, metric: str) -> str | None:
    rank = row[f"{metric}_rank"]
    if rank != rank:
        return None
    return f"{rank:.0f} [{row[f'{metric}_rank_low']:.0f}, {row[f'{metric}_rank_high']:.0f}]"


# ----------------------------------------------------------------------------------- Anzaku et al. 2024


def anzaku2024_section(
    suites: Mapping[str, Mapping[str, Any]],
    mismatches: Mapping[str, list[str]],
    replicates: Mapping[str, pd.DataFrame | None],
    resampling: Resampling,
) -> ReferenceSection:
    """The runs among Tables 4–10's models (module docstring); one table, ``delta_rank``: per model (index)
    ``source``, ``weights`` (a published row: its table), ``top1`` (ImageNetV1, resized), ``asma_patchml``,
    ``top1_rank`` and ``asma_rank`` (module docstring; a published row's from its printed ΔRank: position +
    ΔRank, and its position), ``delta_rank``, ``same_model`` and ``protocol``; by PatchML
    ASMA, best first."""
    del replicates, resampling  # the paper's dense ranks have no bootstrap here
    zoo = load("anzaku2024_tables4_10", fractions=True).set_index("model")
    check_names(zoo.index, list(suites))
    top1_pool, asma_pool = np.unique(zoo["top1_v1"]), zoo["asma_patchml"].to_numpy()
    rows = {
        model: {
            "source": PUBLISHED,
            "weights": f"Table {int(r.table)}",
            "top1": r.top1_v1,
            "asma_patchml": r.asma_patchml,
            "top1_rank": float(r.paper_order + r.delta_rank),  # the published top-1 rank behind ΔRank
            "asma_rank": float(r.paper_order),
            "delta_rank": float(r.delta_rank),
            "same_model": "",
            "protocol": "",
        }
        for model, r in zoo.iterrows()
    }
    for name, suite in suites.items():
        top1 = anzaku2024.resize_only_top1(suite)
        found = anzaku2024.patchml_asma(suite)
        asma = float(np.mean([value for _, value in found])) if found else None
        top1_rank = _dense_rank(top1, top1_pool)
        asma_rank = _dense_rank(asma, asma_pool)  # every published row counts: the position in the tables
        source = suite.get("weights_source") or {}
        tag = f"{source.get('architecture')}.{source.get('tag')}" if source.get("tag") else ""
        rows[name] = {
            "source": THIS_RUN,
            "weights": weights_label(suite),
            "top1": math.nan if top1 is None else top1,
            "asma_patchml": math.nan if asma is None else asma,
            "top1_rank": top1_rank,
            "asma_rank": asma_rank,
            "delta_rank": top1_rank - asma_rank,
            "same_model": tag if tag in zoo.index else "",
            "protocol": protocol_text(mismatches, name),
        }
    table = pd.DataFrame.from_dict(rows, orient="index").rename_axis("model")
    table = table.sort_values(["asma_patchml", "asma_rank"], ascending=[False, True], na_position="last", kind="stable")
    notes = [
        "Each run's ImageNet-val top-1 (resized to the input size, no centre crop) and PatchML ASMA ranked among the "
        f"{len(zoo)} models of Tables 4–10 (reference data {REFERENCE_VERSION}), as the printed ΔRank ranks: top-1 "
        "1 + the distinct published values above it, ASMA 1 + the published rows above it; ΔRank = top-1 rank − ASMA rank (positive: better by ASMA "
        "than by top-1). A published row keeps its printed ΔRank: ASMA rank = its position in the tables, top-1 "
        "rank = position + ΔRank."
    ]
    section = ReferenceSection("anzaku2024", PAPERS["anzaku2024"], {"delta_rank": table}, notes=notes)
    section.shown["delta_rank"] = shown_rows(table)
    section.mismatches = dict(mismatches)
    return section


def _dense_rank(value: float | None, published: np.ndarray) -> float:
    """1 + the number of ``published`` values above ``value`` (NaN for None): a dense rank for distinct values."""
    return math.nan if value is None else float(1 + (published > value).sum())


def anzaku2024_markdown(section: ReferenceSection, table) -> list[str]:
    """The runs' rows and the published ones around them."""
    rows = []
    for model, r in section.shown["delta_rank"].iterrows():
        rows.append((
            model, r.source, r.weights, _percent(r.top1), number_text(r.top1_rank, "{:.0f}"), _percent(r.asma_patchml),
            number_text(r.asma_rank, "{:.0f}"), number_text(r.delta_rank, "{:+.0f}"), r.same_model, r.protocol,
        ))  # fmt: skip
    header = ("model", "source", "weights", "top-1 %", "top-1 rank", "PatchML ASMA %", "ASMA rank", "ΔRank",
              "same model", "protocol")  # fmt: skip
    return table(header, rows) + ["Every row: `leaderboard_reference_anzaku2024_delta_rank.csv`.", ""]


__all__ = [
    "NINCO_METRICS",
    "anzaku2024_markdown",
    "anzaku2024_section",
    "bitterwolf2023_markdown",
    "bitterwolf2023_section",
]
