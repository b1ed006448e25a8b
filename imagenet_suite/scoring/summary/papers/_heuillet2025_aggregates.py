"""Heuillet et al. 2025's aggregation over every (dataset, perturbation type) of the runs — not the paper's
threat model (:mod:`~imagenet_suite.scoring.summary.papers.heuillet2025` has the paper's five types): split from
that module along its seam and re-exported by it.

* :func:`perturbation_accuracies` and :func:`aggregates` — the same aggregation
  (:mod:`imagenet_suite.scoring.metrics.aggregates`, the authors' code's conventions) over every (dataset,
  perturbation type) of the runs' reports: each corrupted set a dataset of its own (each corruption and
  severity a type), the attacks one more (clean, FGSM, PGD, each AutoAttack); a dataset in which a model
  misses a type adds nothing to its Sum and Borda (``incomplete_datasets``), as in the authors' code.
* :func:`dataset_level` — not the paper's quantities either: Sum and Borda with each dataset key every model
  has as one voter (its headline accuracy), and the mean absolute Spearman correlation between those datasets.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...metrics import aggregates as metrics
from ...metrics.quba import QUBA_ATTACK_CONVENTION
from ...report_names import CLEAN
from ..imagenet_c import RELEASED_IMAGENET_C, released_imagenet_c_accuracy
from ..quba import attack_convention_of
from ..reports import report_value
from ._shared import with_weights

Voter = tuple[str, str]  # (dataset, perturbation type)
COMMON = "common"
HEUILLET_PORTFOLIO = ("perturbations", "common")  # (builder, config): one common corruption per image
ROBUSTNESS_VARIANTS = ("top1", "accuracy16")  # the robustness families' variants, in order of preference


def perturbation_accuracies(suite: Mapping[str, Any]) -> dict[Voter, float]:
    """One run's accuracy per (dataset, perturbation type) of its reports: the voters of :func:`aggregates`, Heuillet
    et al. 2025's aggregation over every perturbation type of the run (not the paper's threat model:
    :func:`paper_types` is).

    * A report with the robustness rows of a corrupted set (variant ``top1``, else ``accuracy16``) is a
      dataset named by its key: type ``clean`` is its ``clean_accuracy`` (the build's clean rows); a
      ``perturbations`` build of config ``common`` (Heuillet et al.'s portfolio, one corruption per
      image) has the paper's type ``common``, its ``pooled_corruption_accuracy``; any other corrupted set
      (``imagenet_c_regenerated``, ``imgaug``) has one type per ``<corruption>/<severity>``, its
      ``corruption_accuracy`` row of that subgroup.
    * The released ImageNet-C (one report per ``<corruption>_<severity>`` config) is one dataset,
      ``imagenet_c``, with one type per ``<corruption>/<severity>``: its top-1 accuracy.
    * The adversarial attack (``summary.adversarial``) is one dataset, ``adversarial (<rows> rows, seed
      <seed>)`` (the attacked subset), with types ``clean``, ``fgsm`` and ``pgd`` (those run; ``fgsm@pixel``
      and ``pgd@pixel`` when attacked under the ``pixel`` attack convention, so two conventions never share a
      voter) and one per AutoAttack run (``autoattack-linf``, ``autoattack-l2``, ``autoattack-l1``: Heuillet et al.'s
      adversarial types at their radii; another radius is part of the name, ``autoattack-l2:eps=0.5``).

    Other reports (ImageNet val, ImageNet-R, ...) have no perturbation types: they are no voters.

    Example:
        >>> def rows(variant, values):
        ...     return [{"metric": m, "variant": variant, "subgroup": g, "value": v} for (m, g), v in values.items()]
        >>> common = {"meta": {"dataset": "perturbations", "config": "common"}, "metrics": rows("top1", {
        ...     ("clean_accuracy", ""): 0.8, ("pooled_corruption_accuracy", ""): 0.5,
        ...     ("corruption_accuracy", "snow/3"): 0.4})}
        >>> fog = {"meta": {"dataset": "imagenet_c", "config": "fog_2"}, "metrics": rows("", {("top1_accuracy", ""): 0.3})}
        >>> suite = {"datasets": {"pert/common": common, "imagenet_c/fog_2": fog}, "summary": {"adversarial": None}}
        >>> perturbation_accuracies(suite)
        {('imagenet_c', 'fog/2'): 0.3, ('pert/common', 'clean'): 0.8, ('pert/common', 'common'): 0.5}
    """
    found: dict[Voter, float] = {}
    reports = suite["datasets"]
    for key in sorted(reports):
        report, meta = reports[key], reports[key]["meta"]
        if meta.get("dataset") == RELEASED_IMAGENET_C:
            released = released_imagenet_c_accuracy(report)
            if released is not None:
                found.setdefault((RELEASED_IMAGENET_C, f"{released[0]}/{released[1]}"), released[2])
            continue
        found_variant = robustness_variant(report)
        if found_variant is None:
            continue
        variant, pooled = found_variant
        clean = report_value(report, "clean_accuracy", variant)
        if clean is not None:
            found[(key, CLEAN)] = clean
        if (meta.get("dataset"), meta.get("config")) == HEUILLET_PORTFOLIO:
            found[(key, COMMON)] = pooled
            continue
        for row in report["metrics"]:
            subgroup, value = row.get("subgroup", ""), row.get("value")
            split = row["metric"] == "corruption_accuracy" and row.get("variant", "") == variant and "/" in subgroup
            if split and value is not None and not math.isnan(value):
                found.setdefault((key, subgroup), float(value))
    adversarial = suite["summary"].get("adversarial")
    if adversarial:
        name = f"adversarial ({adversarial['rows']} rows, seed {adversarial['seed']})"
        convention = attack_convention_of(adversarial)
        for type_ in ("clean", "fgsm", "pgd"):
            if f"{type_}_accuracy" in adversarial:
                named = type_ if type_ == CLEAN or convention == QUBA_ATTACK_CONVENTION else f"{type_}@{convention}"
                found[(name, named)] = float(adversarial[f"{type_}_accuracy"])
        for type_, entry in (adversarial.get("autoattack") or {}).items():
            found[(name, type_)] = float(entry["accuracy"])
    return found


def robustness_variant(report: Mapping[str, Any]) -> tuple[str, float] | None:
    """``(variant, pooled corrupted accuracy)`` of a report with robustness rows (``top1`` first); else None."""
    for variant in ROBUSTNESS_VARIANTS:
        pooled = report_value(report, "pooled_corruption_accuracy", variant)
        if pooled is not None:
            return variant, pooled
    return None


def aggregates(suites: Mapping[str, Mapping[str, Any]]) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series, float]:
    """``(voter matrix, scores, MAC per dataset, MAC)`` over every perturbation type of the runs
    (:func:`perturbation_accuracies`; not the paper's threat model): the matrix a_{model,dataset}(type) (one
    column per voter), Sum and Borda with their ranks and ``incomplete_datasets``, MAC per dataset and its
    nanmean, in the authors' code's conventions."""
    names = list(suites)
    rows = [
        (name, dataset, type_, value)
        for name in names
        for (dataset, type_), value in perturbation_accuracies(suites[name]).items()
    ]
    long = pd.DataFrame(rows, columns=["model", "dataset", "perturbation", "accuracy"])
    matrix = metrics.voter_matrix_from_long(long, "model").reindex(names).rename_axis("model")
    table = pd.DataFrame(index=pd.Index(names, name="model"))
    if matrix.shape[1]:
        table["score_sum"] = metrics.sum_score_of(matrix)
        table["sum_rank"] = metrics.global_rank(table["score_sum"])
        table["borda"] = metrics.borda_score_of(matrix)
        table["borda_rank"] = metrics.global_rank(table["borda"])
        table["incomplete_datasets"] = metrics.incomplete_datasets(matrix)
    per_dataset = metrics.mac_per_dataset(matrix)
    defined = per_dataset.dropna()
    return matrix, table, per_dataset, float(defined.mean()) if len(defined) else np.nan


def dataset_level(accuracies: pd.DataFrame) -> tuple[pd.DataFrame, float]:
    """Not Heuillet et al.'s voters: Sum and Borda over the dataset keys every model has (one voter each,
    its headline accuracy), their ranks, and the MAC between those datasets."""
    voters = [key for key in accuracies.columns if accuracies[key].notna().all()]
    long = pd.DataFrame(
        [
            {"model": model, "dataset": key, "accuracy": float(accuracies.loc[model, key])}
            for model in accuracies.index
            for key in voters
        ],
        columns=["model", "dataset", "accuracy"],
    )
    table = pd.DataFrame(index=accuracies.index)
    if len(long):
        table["dataset_level_sum"] = metrics.sum_score(long, "model", "dataset", ("accuracy",))
        table["dataset_level_sum_rank"] = metrics.global_rank(table["dataset_level_sum"])
        table["dataset_level_borda"] = metrics.borda_score(long, "model", "dataset", ("accuracy",))
        table["dataset_level_borda_rank"] = metrics.global_rank(table["dataset_level_borda"])
    table["datasets"] = len(voters)
    wide = accuracies[voters].assign(group="suite")
    mac = (
        float(metrics.mean_absolute_correlation(wide, "group", voters)["average"].iloc[0])
        if len(voters) > 1
        else np.nan
    )
    return table, mac


def mac_text(mac: float) -> str:
    """A MAC as leaderboard.md prints it: — with the reason when undefined, never ``nan``."""
    return "— (needs two voters with values of at least two models)" if math.isnan(mac) else f"{mac:.4g}"


def aggregates_markdown(board: Any, matrix: pd.DataFrame, table) -> list[str]:
    datasets = list(board.mac_per_dataset.index)
    lines = [
        f"{matrix.shape[1]} voters (dataset, perturbation type) over {len(datasets)} "
        f"dataset{'s' if len(datasets) != 1 else ''}. Sum: per dataset the "
        "sum over its perturbation types, then over datasets; a dataset in which a model misses a perturbation "
        "type adds nothing to its Sum and Borda (`incomplete_datasets`), as in the authors' code. Borda "
        "(`robustgen_code`): each voter gives a model 1 + the number of models with a lower accuracy.",
        "",
    ]
    agg = with_weights(board.aggregates, board.models)
    lines += table(list(agg.columns), agg.itertuples(index=False))
    rows = []
    for dataset in datasets:
        types = list(matrix[dataset].columns)
        shown = ", ".join(map(str, types)) if len(types) <= 6 else f"{types[0]}, …, {types[-1]}"
        complete = int(matrix[dataset].notna().all(axis=1).sum())
        rows.append((dataset, len(types), shown, complete, board.mac_per_dataset[dataset]))
    lines += table(("dataset", "perturbation types", "types", "models with all", "MAC"), rows)
    lines += [
        "MAC over every perturbation type (Heuillet et al. 2025's recipe: mean absolute Spearman correlation between "
        f"the perturbation types of a dataset across models, averaged over the datasets where it is defined): "
        f"{mac_text(board.mac)}",
        "",
    ]
    return lines


__all__ = [
    "COMMON",
    "HEUILLET_PORTFOLIO",
    "ROBUSTNESS_VARIANTS",
    "Voter",
    "aggregates",
    "aggregates_markdown",
    "dataset_level",
    "mac_text",
    "perturbation_accuracies",
    "robustness_variant",
]
