"""LCA-on-the-Line, Shi et al. 2024: ImageNet LCA (and ImageNet top-1, the baseline) against OOD accuracy.

For every OOD dataset key every model has (a report with a top-1 accuracy other than ImageNet val),
:func:`tables` fits the paper's line (:func:`~imagenet_suite.scoring.metrics.lca_on_the_line.analyze`,
both axes min-max scaled over the models, OLS, in-sample MAE in scaled units: Tables 2, 3 and 9) for

* the indicator ``ImageNet LCA``: the ImageNet-val report's LCA over mistakes in the distance the paper uses for
  that OOD set (:func:`~imagenet_suite.scoring.metrics.lca_distances.paper_distance`: with the WordNet tree the
  information content ``info`` for ImageNetV2, ImageNet-R, ObjectNet and any other set, the tree-depth path
  ``depth_two_sided`` for ImageNet-Sketch and ImageNet-A, App. E.2; ``depth_one_sided`` with a K-means
  hierarchy), its row marked ``paper``; beside it the paper's other WordNet distance, under its own name
  (``paper`` false);
* the baseline ``ImageNet top-1``;
* the target ``OOD top-1`` and, where every model's report has it, ``OOD top-5`` (Table 2's Top5 rows);
* all models (``ALL``) and each group of ``leaderboard --groups`` with at least three models (the paper's
  VLM and VM rows);

and reports R², Pearson r, Kendall τ-b (scipy's default, the paper's code), Spearman ρ and the MAE.
Correlations are signed (the paper prints absolute values; LCA's are negative). A distance some run lacks gets
no rows (``lacking`` says which). The hierarchy an LCA came from is the one its report names
(``meta.hierarchy``); a report that names none was scored on the package's WordNet tree, the only one
``evaluate`` used before it recorded hierarchies. Runs on different hierarchies get no LCA rows; instead, each
hierarchy's runs get their own Pearson r and Table 4 aggregates them over the latent hierarchies
(:mod:`.shi2024_hierarchies`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...metrics.lca_distances import PAPER_DISTANCES, paper_distance
from ...metrics.lca_on_the_line import OnTheLine, analyze
from ..groups import ModelGroups
from ..reports import ID_DATASET, OBJECTNET_HEAD_KEY, report_value
from . import shi2024_baselines, shi2024_hierarchies, shi2024_within
from ._shared import file_stem, weights_mismatch, write_csv

MIN_MODELS = 3
ALL = "ALL"
LCA, TOP1 = "ImageNet LCA", "ImageNet top-1"  # the indicators (x)
WORDNET = "the package's WordNet tree (no hierarchy recorded)"
STATISTICS = ("r2", "pearson", "kendall_tau_b", "spearman", "mae_in_sample")
REFERENCE_SETS = ("imagenet_v2", "imagenet_sketch", "imagenet_r", "imagenet_a", "objectnet")
"""The five shifted sets of LCA-on-the-Line's released results (the reference zoo), by our builder names."""
MAPPED_HEAD = "@imagenet1k_head"
"""Appended to an OOD dataset's rows where zero-shot models are scored through their ImageNet-1k head and the
dataset's class mapping, not LCA-on-the-Line's head over the dataset's own class names (ObjectNet)."""


@dataclass
class OnTheLineTables:
    """``statistics`` (long: ood_dataset, group, indicator, distance — the LCA's, empty for top-1 —, paper —
    whether the row is the paper's convention for that set —, target, models, R², Pearson, Kendall τ-b, Spearman,
    MAE), ``inputs`` (long: model, group, ood_dataset, the x values — ``id_lca`` in the paper's distance
    ``lca_distance``, ``id_lca_other`` in ``other_distance`` — and the y values), and the fitted lines of all
    models against OOD top-1 (``lines``: LCA in the paper's distance, named in ``line_distances``;
    ``baselines``: ImageNet top-1) by OOD dataset key."""

    statistics: pd.DataFrame
    inputs: pd.DataFrame
    lines: dict[str, OnTheLine] = field(default_factory=dict)
    baselines: dict[str, OnTheLine] = field(default_factory=dict)
    distances: list[str] = field(default_factory=list)  # the LCA distances of the rows
    hierarchies: list[str] = field(default_factory=list)
    model_groups: dict[str, str] = field(default_factory=dict)  # model -> its (first) group, for the figures
    small_groups: list[str] = field(default_factory=list)  # groups with fewer than three models: no rows
    line_distances: dict[str, str] = field(default_factory=dict)  # OOD key -> the distance of its LCA line
    lacking: dict[str, list[str]] = field(default_factory=dict)  # "<key> `<distance>`" -> runs without it
    per_hierarchy: pd.DataFrame = field(default_factory=pd.DataFrame)  # Table 4, per hierarchy (runs on several)
    over_hierarchies: pd.DataFrame = field(default_factory=pd.DataFrame)  # Table 4: mean/min/max/std over them
    table3_baselines: pd.DataFrame = field(default_factory=pd.DataFrame)  # AC, Aline-S, Aline-D MAE (run folders)
    table3_notes: list[str] = field(default_factory=list)  # the sets they leave out, and why
    within_dataset: pd.DataFrame = field(default_factory=pd.DataFrame)  # Table 8: top-1 vs LCA per dataset


def id_lcas(suite: Mapping[str, Any]) -> tuple[dict[str, float], str, str] | None:
    """``({distance: LCA}, kind, hierarchy)`` of a run's ImageNet-val report: every distance it reports, the kind
    of the recorded hierarchy (``wordnet`` without a record) and its label (:func:`hierarchy_label`); None
    without LCA rows."""
    for report in suite["datasets"].values():
        meta = report.get("meta", {})
        if meta.get("dataset") != ID_DATASET:
            continue
        found = {
            row.get("variant", ""): float(row["value"])
            for row in report["metrics"]
            if row["metric"] == "lca" and not row.get("subgroup") and row.get("value") is not None
        }
        if found:
            recorded = meta.get("hierarchy")
            kind = recorded.get("kind") if isinstance(recorded, Mapping) else None
            return found, kind if kind in PAPER_DISTANCES else "wordnet", hierarchy_label(meta)
    return None


def id_lca(suite: Mapping[str, Any], dataset: str | None = None) -> tuple[float, str, str] | None:
    """``(LCA, distance, hierarchy)`` of a run's ImageNet-val report in the distance LCA-on-the-Line correlates
    with OOD set ``dataset`` (a builder name; None: the paper's default for the hierarchy's kind); None without
    LCA rows or without that distance."""
    found = id_lcas(suite)
    if found is None:
        return None
    values, kind, hierarchy = found
    distance = paper_distance(kind, dataset)
    return (values[distance], distance, hierarchy) if distance in values else None


def hierarchy_label(meta: Mapping[str, Any]) -> str:
    """The hierarchy a report's ``meta.hierarchy`` names (the record of
    :func:`~imagenet_suite.scoring.metrics.lca_distances.hierarchy_record`): a build as
    ``<builder>/<config> (build <12 digits of build_info.json's sha256>)``, the shipped tree as
    ``shipped WordNet tree (<12 digits>)``; :data:`WORDNET` when the report records none.

    Example:
        >>> build = {"builder": "kmeans_hierarchy", "config": "default", "build_info_sha256": "ab" * 32}
        >>> hierarchy_label({"hierarchy": {"kind": "kmeans", "build": build}})
        'kmeans_hierarchy/default (build abababababab)'
        >>> hierarchy_label({"hierarchy": {"kind": "wordnet", "build": None, "shipped_sha256": "cd" * 32}})
        'shipped WordNet tree (cdcdcdcdcdcd)'
        >>> hierarchy_label({})
        "the package's WordNet tree (no hierarchy recorded)"
    """
    recorded = meta.get("hierarchy")
    if recorded is None:
        return WORDNET
    if isinstance(recorded, Mapping):
        build = recorded.get("build")
        if isinstance(build, Mapping):
            return f"{build.get('builder')}/{build.get('config')} (build {str(build.get('build_info_sha256'))[:12]})"
        if recorded.get("shipped_sha256"):
            return f"shipped WordNet tree ({str(recorded['shipped_sha256'])[:12]})"
        return json.dumps(recorded, sort_keys=True)
    return str(recorded)


def ood_keys(suites: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The dataset keys every run reports a top-1 headline for, except ImageNet val and a zero-shot model's
    ObjectNet report with LCA-on-the-Line's head (``<key>@objectnet113``: it stands in for ``<key>``) (sorted)."""
    keys = set.intersection(*(set(suite["summary"]["accuracies"]) for suite in suites.values()))
    found = []
    for key in sorted(keys):
        entries = [suite["summary"]["accuracies"][key] for suite in suites.values()]
        datasets = {suite["datasets"].get(key, {}).get("meta", {}).get("dataset") for suite in suites.values()}
        if key.endswith(OBJECTNET_HEAD_KEY) or datasets == {ID_DATASET}:
            continue
        if all(entry["metric"] == "top1_accuracy" for entry in entries):
            found.append(key)
    return found


def _inputs(suites: Mapping[str, Mapping[str, Any]], model_groups: Mapping[str, str]) -> pd.DataFrame:
    """One row per model and OOD dataset. A zero-shot model's ObjectNet top-1 and top-5 are those of its
    113-way head (``<key>@objectnet113``, LCA-on-the-Line's) under ``<key>``; when any run has one, the rows of
    ``<key>`` through the 1000-way head and the class mapping follow, under ``<key>`` + :data:`MAPPED_HEAD`."""
    rows, keys = [], ood_keys(suites)
    twins = {
        key for key in keys if any(key + OBJECTNET_HEAD_KEY in s["summary"]["accuracies"] for s in suites.values())
    }
    for name, suite in suites.items():
        lcas = id_lcas(suite)
        values, kind, hierarchy = lcas if lcas is not None else ({}, "wordnet", None)
        top1 = suite["summary"]["quba"]["dimensions"].get("accuracy", {}).get("value")
        for key in keys:
            for label, source in _sources(suite, key, key in twins):
                report = suite["datasets"].get(source, {})
                distance = paper_distance(kind, report.get("meta", {}).get("dataset"))
                other = next((d for d in PAPER_DISTANCES[kind] if d != distance), None)
                rows.append(
                    {
                        "model": name,
                        "group": model_groups.get(name, ""),
                        "ood_dataset": label,
                        "zero_shot_head": _head_text(report),
                        "id_top1": np.nan if top1 is None else float(top1),
                        "id_lca": values.get(distance, np.nan),
                        "lca_distance": None if lcas is None else distance,
                        "id_lca_other": values.get(other, np.nan) if other else np.nan,
                        "other_distance": None if lcas is None else other,
                        "hierarchy": hierarchy,
                        "ood_top1": float(suite["summary"]["accuracies"][source]["value"]),
                        "ood_top5": _or_nan(report_value(report, "top5_accuracy")),
                    }
                )
    columns = [
        "model",
        "group",
        "ood_dataset",
        "zero_shot_head",
        "id_top1",
        "id_lca",
        "lca_distance",
        "id_lca_other",
        "other_distance",
        "hierarchy",
        "ood_top1",
        "ood_top5",
    ]
    return pd.DataFrame(rows, columns=columns)


def _sources(suite: Mapping[str, Any], key: str, twinned: bool) -> list[tuple[str, str]]:
    """``[(row label, report key)]`` of one run's OOD dataset ``key``: the paper's (a zero-shot run's 113-way
    head when it has one), and, when some run has a 113-way head, the 1000-way head + mapping beside it."""
    twin = key + OBJECTNET_HEAD_KEY
    paper = twin if twin in suite["summary"]["accuracies"] else key
    return [(key, paper), (key + MAPPED_HEAD, key)] if twinned else [(key, paper)]


def _head_text(report: Mapping[str, Any]) -> str:
    head = report.get("meta", {}).get("zero_shot_head")
    return "113-way: ObjectNet's class names" if head else ""


def _or_nan(value: float | None) -> float:
    return np.nan if value is None else float(value)


def tables(
    suites: Mapping[str, Mapping[str, Any]],
    groups: ModelGroups | None = None,
    folders: Mapping[str, str | Path] | None = None,
) -> OnTheLineTables | None:
    """The LCA-on-the-Line tables of the runs (module docstring); None with fewer than three models or no
    OOD dataset every model has. With ``folders`` (``{model: run folder}``) also Table 3's AC and
    Agreement-on-the-Line baselines from the runs' outputs files (:mod:`.shi2024_baselines`)."""
    if len(suites) < MIN_MODELS or not ood_keys(suites):
        return None
    members = {ALL: list(suites), **(groups.group_members() if groups is not None else {})}
    model_groups = {}
    for group, models in list(members.items())[1:]:
        for model in models:
            model_groups.setdefault(model, group)
    inputs = _inputs(suites, model_groups)
    mixed = inputs["hierarchy"].dropna().nunique() > 1
    rows, lines, baselines, line_distances, lacking = [], {}, {}, {}, {}
    for key, part in inputs.groupby("ood_dataset", sort=True):
        part = part.set_index("model")
        indicators = [] if mixed else _lca_indicators(key, part, lacking)
        indicators.append((TOP1, "", True, "id_top1"))
        for group, models in members.items():
            if len(models) < MIN_MODELS:
                continue
            for indicator, distance, paper, x_column in indicators:
                for target, y_column in (("OOD top-1", "ood_top1"), ("OOD top-5", "ood_top5")):
                    result = _fit(part.loc[models, x_column], part.loc[models, y_column])
                    if result is None:
                        continue
                    rows.append(_statistics_row(key, group, indicator, distance, paper, target, result))
                    if group == ALL and target == "OOD top-1" and paper:
                        (lines if indicator == LCA else baselines)[key] = result
                        if indicator == LCA:
                            line_distances[key] = distance
    statistics = pd.DataFrame(
        rows, columns=["ood_dataset", "group", "indicator", "distance", "paper", "target", "models", *STATISTICS]
    )
    kinds = {found[2]: found[1] for found in map(id_lcas, suites.values()) if found is not None}
    per_hierarchy = shi2024_hierarchies.per_hierarchy(inputs, kinds)
    mae, notes = (
        shi2024_baselines.table(suites, folders, ood_keys(suites), members, MIN_MODELS) if folders else (None, [])
    )
    return OnTheLineTables(
        statistics=statistics,
        inputs=inputs,
        lines=lines,
        baselines=baselines,
        distances=sorted(set(statistics["distance"]) - {""}),
        hierarchies=sorted(set(inputs["hierarchy"].dropna())),
        model_groups=model_groups,
        small_groups=[group for group, models in members.items() if len(models) < MIN_MODELS],
        line_distances=line_distances,
        lacking=lacking,
        per_hierarchy=per_hierarchy,
        over_hierarchies=shi2024_hierarchies.aggregate(per_hierarchy),
        table3_baselines=mae if mae is not None else pd.DataFrame(columns=shi2024_baselines.COLUMNS),
        table3_notes=notes,
        within_dataset=shi2024_within.table(suites, MIN_MODELS),
    )


def _lca_indicators(key: str, part: pd.DataFrame, lacking: dict[str, list[str]]) -> list[tuple[str, str, bool, str]]:
    """``(indicator, distance, paper, x column)`` of the LCA rows of one OOD key: the paper's distance, then the
    other; a distance some run lacks is left out and noted in ``lacking``."""
    found = []
    for x_column, distance_column, paper in (
        ("id_lca", "lca_distance", True),
        ("id_lca_other", "other_distance", False),
    ):
        distances = set(part[distance_column].dropna())
        if len(distances) != 1:
            continue
        distance = distances.pop()
        without = sorted(part.index[part[x_column].isna()])
        if without:
            lacking[f"{key} `{distance}`"] = without
            continue
        found.append((LCA, distance, paper, x_column))
    return found


def _fit(x: pd.Series, y: pd.Series) -> OnTheLine | None:
    """The paper's fit over these models; None when a value is missing or an axis is constant (no line)."""
    if x.isna().any() or y.isna().any() or np.ptp(x.to_numpy()) == 0 or np.ptp(y.to_numpy()) == 0:
        return None
    return analyze(x.to_numpy(), y.to_numpy(), scale="minmax")


def _statistics_row(
    key: str, group: str, indicator: str, distance: str, paper: bool, target: str, result: OnTheLine
) -> dict[str, Any]:
    c = result.correlations
    return {
        "ood_dataset": key,
        "group": group,
        "indicator": indicator,
        "distance": distance,
        "paper": paper,
        "target": target,
        "models": c.n,
        "r2": c.r2,
        "pearson": c.pearson,
        "kendall_tau_b": c.kendall_tau_b,
        "spearman": c.spearman,
        "mae_in_sample": result.mae_in_sample,
    }


def markdown(result: OnTheLineTables | None) -> list[str]:
    """The paper's section of ``leaderboard.md``."""
    from ...presentation.suite_markdown import table

    lines = ["## LCA-on-the-Line, Shi et al. 2024", ""]
    if result is None or not len(result.statistics):
        return lines + [
            "Needs at least three runs with an OOD dataset in common and an ImageNet-val top-1 (and LCA) in each.",
            "",
        ]
    hierarchy = "; ".join(result.hierarchies) or "—"
    lines += [
        f"x: ImageNet-val LCA over mistakes (hierarchy: {hierarchy}) in the distance the paper uses for each OOD set "
        "(App. E.2: information content `info` for ImageNetV2, ImageNet-R and ObjectNet — and here for any other "
        "set —, the tree-depth path through the LCA `depth_two_sided` for ImageNet-Sketch and ImageNet-A; "
        '`depth_one_sided` with a K-means hierarchy), marked "paper", the other WordNet distance beside it '
        "under its own name; or ImageNet top-1 (the baseline). y: OOD top-1 or top-5. Both axes min-max scaled "
        "over the models, OLS line; correlations signed (the paper prints absolute values); MAE in-sample, in "
        "scaled units (Table 3).",
        "",
    ]
    if len(result.hierarchies) > 1:
        lines += [
            "**The runs' LCAs come from different hierarchies: no LCA line, the baseline only** (each hierarchy's "
            "line: Table 4 below).",
            "",
        ]
    for which, models in result.lacking.items():
        named = ", ".join(f"`{m}`" for m in models[:5]) + (f" and {len(models) - 5} more" if len(models) > 5 else "")
        lines += [f"No LCA rows for {which}: {named} lack that distance.", ""]
    mapped = sorted({key for key in result.statistics["ood_dataset"] if key.endswith(MAPPED_HEAD)})
    if mapped:
        rows = ", ".join(f"`{key.removesuffix(MAPPED_HEAD)}`" for key in mapped)
        lines += [
            f"Zero-shot models on {rows}: ObjectNet's 113 class names prompted as the paper's code does (a 113-way "
            f"head, the paper's); on {', '.join(f'`{key}`' for key in mapped)}: the 1000-way ImageNet head and "
            "the class mapping (max over each class's ImageNet logits), as the other models (not the paper's).",
            "",
        ]
    if result.lines:
        heading = "LCA-on-the-Line (Shi et al. 2024): ImageNet LCA vs OOD top-1, min-max scaled, with the baseline"
    else:
        heading = "ImageNet top-1 vs OOD accuracy, min-max scaled (not every run has an ImageNet-val LCA)"
    lines += [f"### {heading}: R², Pearson, Kendall τ-b, Spearman, MAE (Tables 2, 3 and 9)", ""]
    rows = [
        (
            r.ood_dataset,
            r.group,
            r.indicator,
            f"`{r.distance}`" if r.distance else "—",
            "paper" if r.paper else "other",
            r.target,
            r.models,
            r.r2,
            r.pearson,
            r.kendall_tau_b,
            r.spearman,
            r.mae_in_sample,
        )
        for r in result.statistics.itertuples()
    ]
    header = (
        "OOD dataset",
        "group",
        "x",
        "LCA distance",
        "convention",
        "y",
        "models",
        "R²",
        "Pearson r",
        "Kendall τ-b",
        "Spearman ρ",
        "MAE (in-sample)",
    )
    lines += table(header, rows)
    if result.small_groups:
        lines += [f"No rows for the groups with fewer than {MIN_MODELS} models: {', '.join(result.small_groups)}.", ""]
    lines += shi2024_hierarchies.markdown(result.per_hierarchy, result.over_hierarchies)
    lines += _baselines_markdown(result, table)
    lines += shi2024_within.markdown(result.within_dataset)
    for key in result.lines:
        lines.append(f"![{key}](lca_on_the_line_{file_stem(key)}.png)")
    for key in result.baselines:
        lines.append(f"![{key}: ImageNet top-1 baseline](top1_on_the_line_{file_stem(key)}.png)")
    return [*lines, ""]


def _baselines_markdown(result: OnTheLineTables, table) -> list[str]:
    lines = ["### Table 3's other baselines: AC and Agreement-on-the-Line (MAE of the predicted OOD top-1)", ""]
    if not len(result.table3_baselines):
        return lines + [
            *result.table3_notes,
            "From the run folders' outputs files (ImageNet val and the OOD sets predicted by `evaluate`): "
            "`imagenet-suite leaderboard RUN_DIR... --lca-baselines`.",
            "",
        ]
    lines += [
        "As the authors' `utils/agreement_utils.py`: AC = mean max softmax on the OOD set (no temperature); "
        "Aline-S / Aline-D = `aline` on the pairs of models with both agreements in [0.05, 0.98]; MAE against the "
        "OOD top-1, in accuracy units.",
        "",
    ]
    rows = [(r.ood_dataset, r.group, r.method, r.models, r.pairs, r.mae) for r in result.table3_baselines.itertuples()]
    lines += table(("OOD dataset", "group", "method", "models", "pairs kept", "MAE"), rows)
    return lines + [*(f"- {note}" for note in result.table3_notes), ""]


def write(result: OnTheLineTables | None, folder: Path) -> list[Path]:
    """``leaderboard_lca_on_the_line.csv`` (statistics), ``leaderboard_lca_inputs.csv``, with runs on several
    hierarchies ``leaderboard_lca_per_hierarchy.csv`` and ``leaderboard_lca_over_hierarchies.csv`` (Table 4), and per OOD dataset
    ``lca_on_the_line_<key>.png`` and ``top1_on_the_line_<key>.png`` (groups in colours)."""
    from ...presentation.plots import lca_on_the_line_plot

    written: list[Path] = []
    if result is None:
        return written
    write_csv(folder, "lca_on_the_line", result.statistics, written, index=False)
    write_csv(folder, "lca_inputs", result.inputs, written, index=False)
    if len(result.table3_baselines):
        write_csv(folder, "lca_baselines_ac_aline", result.table3_baselines, written, index=False)
    if len(result.within_dataset):
        write_csv(folder, "lca_within_dataset", result.within_dataset, written, index=False)
    if len(result.per_hierarchy):
        write_csv(folder, "lca_per_hierarchy", result.per_hierarchy, written, index=False)
        write_csv(folder, "lca_over_hierarchies", result.over_hierarchies, written, index=False)
    for prefix, fits in (("lca", result.lines), ("top1", result.baselines)):
        for key, line in fits.items():
            x_label = f"{LCA} ({result.line_distances[key]})" if prefix == "lca" else TOP1
            models = result.inputs.loc[result.inputs["ood_dataset"] == key, "model"]
            groups = [result.model_groups.get(m, "other") for m in models] if result.model_groups else None
            written.append(
                lca_on_the_line_plot(
                    line,
                    folder / f"{prefix}_on_the_line_{file_stem(key)}.png",
                    x_label=x_label,
                    y_label=f"{key} top-1",
                    groups=groups,
                    title=key,
                )
            )
    return written


def reference_mismatches(suite: Mapping[str, Any]) -> list[str]:
    """What keeps a run from being placed on the lines of LCA-on-the-Line's 75 published models (``leaderboard
    --reference shi2024``): the run must record its weights tag, have the ImageNet-val LCA in the released
    results' distance (``info``, information content, on the WordNet tree: a K-means or other hierarchy is
    another axis) and a top-1 on at least one of :data:`REFERENCE_SETS`. Empty when it matches.

    Example:
        >>> source = {"kind": "timm", "tag": "a1_in1k", "loaded": True}
        >>> reference_mismatches({"weights_source": source, "datasets": {}, "summary": {"accuracies": {}}})
        ['no ImageNet-val LCA (evaluate with an imagenet_val folder scores it on the WordNet tree)', 'none of the shifted sets imagenet_v2, imagenet_sketch, imagenet_r, imagenet_a, objectnet']
    """
    found = weights_mismatch(suite)
    lcas = id_lcas(suite)
    if lcas is None:
        found.append("no ImageNet-val LCA (evaluate with an imagenet_val folder scores it on the WordNet tree)")
    elif lcas[1] != "wordnet" or "info" not in lcas[0]:
        found.append(f"ImageNet-val LCA on {lcas[2]} ({', '.join(sorted(lcas[0]))}), not `info` on the WordNet tree")
    datasets = {suite["datasets"].get(key, {}).get("meta", {}).get("dataset") for key in suite["summary"]["accuracies"]}
    if not datasets & set(REFERENCE_SETS):
        found.append(f"none of the shifted sets {', '.join(REFERENCE_SETS)}")
    return found


__all__ = [
    "ALL",
    "LCA",
    "MAPPED_HEAD",
    "TOP1",
    "OnTheLineTables",
    "hierarchy_label",
    "id_lca",
    "id_lcas",
    "markdown",
    "ood_keys",
    "reference_mismatches",
    "tables",
    "write",
]
