"""Heuillet et al. 2025 (robust generalization): Sum, Borda and MAC over (dataset, perturbation type) voters.

The paper's threat model (Sec. 3.1) is five perturbation types on each dataset, τ = {clean, ℓ∞, ℓ2, ℓ1,
common}; a voter is a (dataset, type) pair, and MAC the mean absolute Spearman correlation between the five
types of a dataset across the configurations. On ImageNet there is one dataset, ImageNet val:

* :func:`paper_types` — one run's accuracy on each of the paper's five types, as the authors' code measures
  them (``MaxHeuillet/robust_training``, ``distributed_experiment_final.py``), or why it has none:
  ``clean`` is the clean accuracy of the attacked images (adversarial.json's ``clean_accuracy``: their
  ``test-Linf`` job logs a(∅) on the images it attacks); ``Linf``, ``L2``, ``L1`` are AutoAttack
  ``version='standard'`` (100 iterations, 5000 Square queries) under ℓ∞ 4/255, ℓ2 2.0, ℓ1 75 in [0, 1]
  pixels (adversarial.json's ``autoattack-linf``, ``-l2``, ``-l1``; another radius or a reduced budget is
  not the paper's type); ``common`` is the accuracy over every corrupted row of a ``perturbations`` build
  of config ``common`` made with the authors' portfolio (:data:`COMMON_PLAN`: the 11 corruptions of their
  code, severity 3, one per image in blocks, corrupted at native resolution then resized to 224×224). FGSM
  and PGD (Beyond Accuracy's attacks) are not the paper's types.
* :func:`paper_tables` — the paper's Sum, Borda (``robustgen_code``) and ranks, and MAC, over the models
  that have all five types; a model lacking one is listed with what it lacks (:class:`Heuillet2025`),
  never ranked last, and casts no vote.
* :func:`perturbation_accuracies` and :func:`aggregates` — not the paper's threat model: the same
  aggregation (:mod:`imagenet_suite.scoring.metrics.aggregates`, the authors' code's conventions) over
  every (dataset, perturbation type) of the runs' reports: each corrupted set a dataset of its own (each
  corruption and severity a type), the attacks one more (clean, FGSM, PGD, each AutoAttack); a dataset in
  which a model misses a type adds nothing to its Sum and Borda (``incomplete_datasets``), as in the
  authors' code.
* :func:`dataset_level` — not the paper's quantities either: Sum and Borda with each dataset key every
  model has as one voter (its headline accuracy), and the mean absolute Spearman correlation between those
  datasets.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ....perturbations.names import HEUILLET_COMMON
from ...evaluation.preprocessing import HESSE2025
from ...metrics import aggregates as metrics
from ...metrics.quba import QUBA_ATTACK_CONVENTION
from ...metrics.robustness import CLEAN
from ..imagenet_c import RELEASED_IMAGENET_C, released_imagenet_c_accuracy
from ..quba import attack_convention_of
from ..reports import report_value, under
from ._shared import with_weights, write_csv

Voter = tuple[str, str]  # (dataset, perturbation type)
COMMON = "common"
HEUILLET_PORTFOLIO = ("perturbations", "common")  # (builder, config): one common corruption per image
ROBUSTNESS_VARIANTS = ("top1", "accuracy16")  # the robustness families' variants, in order of preference

PAPER_DATASET = "imagenet_val"
"""The paper's voters on ImageNet are one dataset: (``imagenet_val``, type) for each of :data:`PAPER_TYPES`."""
PAPER_TYPES = ("clean", "Linf", "L2", "L1", COMMON)
"""τ = {∅, ∞, 2, 1, common} (Sec. 3.1), named as the authors' code and results table name them."""
PAPER_AUTOATTACKS = {
    "Linf": ("autoattack-linf", "Linf", 4 / 255),
    "L2": ("autoattack-l2", "L2", 2.0),
    "L1": ("autoattack-l1", "L1", 75.0),
}
"""type -> (adversarial.json's AutoAttack label, norm, radius in [0, 1] pixels): "p=1,2,∞, and ϵ=75.0, 2.0,
4/255" (Sec. 3.1; the code's ``epsilon: 0.015686275``, ``distance = 2.0``, ``distance = 75.0``)."""
AUTOATTACK_STANDARD = {"version": "standard", "iterations": 100, "queries": 5000}
"""What the authors run: ``AutoAttack(..., version='standard')``, whose APGD-CE, APGD-T and FAB-T take 100
iterations and Square 5000 queries."""
COMMON_PLAN = {
    "corruptions": list(HEUILLET_COMMON),
    "severities": [3],
    "assignment": "block",
    "apply_at": "native_then_resize224",
}
"""The authors' common portfolio as a ``perturbations`` build records it (``meta.protocol.perturbation``): the
11 corruptions of ``corruptions/common.py`` (the paper's App. C lists 12 with Gaussian noise, which the code
comments out; its Sec. 3.1 counts 11, and the published measurements come from the code), severity 3, image
``i`` of N under corruption ``(i // max(1, N // 11)) % 11``, corrupted before the 224×224 resize."""


@dataclass(frozen=True)
class PaperTypes:
    """One run's accuracy on each of the paper's types it has (``accuracies``), why it lacks the others
    (``missing``), and the images its clean and AutoAttack accuracies are measured on (``attacked``: rows,
    seed and sha256 of the sorted ids; None without attacks)."""

    accuracies: dict[str, float]
    missing: dict[str, str]
    attacked: str | None = None


def paper_types(suite: Mapping[str, Any]) -> PaperTypes:
    """The paper's five perturbation types of one run (module docstring), each with its accuracy or the reason
    it has none.

    Example:
        A run attacked with FGSM, PGD and AutoAttack ℓ∞ at the paper's radius and ℓ2 at another (0.5), with
        no common-corruption build: clean and ℓ∞ are the paper's types, FGSM and PGD are no type, ℓ2 at 0.5
        is not the paper's ℓ2:

        >>> linf = {"accuracy": 0.25, "norm": "Linf", "eps": 4 / 255, "version": "standard", "iterations": 100,
        ...         "queries": 5000}
        >>> l2 = {**linf, "norm": "L2", "eps": 0.5, "accuracy": 0.5}
        >>> adversarial = {"rows": 4, "seed": 0, "ids": ["a", "b", "c", "d"], "clean_accuracy": 0.75,
        ...                "fgsm_accuracy": 0.5, "pgd_accuracy": 0.25,
        ...                "autoattack": {"autoattack-linf": linf, "autoattack-l2:eps=0.5": l2}}
        >>> found = paper_types({"datasets": {}, "summary": {"adversarial": adversarial}})
        >>> found.accuracies
        {'clean': 0.75, 'Linf': 0.25}
        >>> list(found.missing)
        ['L2', 'L1', 'common']
        >>> found.missing["L2"]
        'no AutoAttack L2 at eps 2 (adversarial.json has autoattack-l2:eps=0.5; evaluate --attack autoattack-l2)'
    """
    accuracies: dict[str, float] = {}
    missing: dict[str, str] = {}
    adversarial = suite["summary"].get("adversarial")
    attacked = None
    if adversarial:
        accuracies["clean"] = float(adversarial["clean_accuracy"])
        ids = hashlib.sha256("\n".join(sorted(adversarial.get("ids") or ())).encode()).hexdigest()[:12]
        attacked = f"{adversarial['rows']} rows, seed {adversarial['seed']}, ids sha256 {ids}"
    else:
        missing["clean"] = (
            "no attacked images (evaluate --adversarial N): a(∅) is the clean accuracy of the attacked images"
        )
    for type_, (label, norm, eps) in PAPER_AUTOATTACKS.items():
        found = _autoattack(adversarial, label, norm, eps)
        if isinstance(found, float):
            accuracies[type_] = found
        else:
            missing[type_] = found
    common = _common(suite["datasets"])
    if isinstance(common, float):
        accuracies[COMMON] = common
    else:
        missing[COMMON] = common
    return PaperTypes(
        {t: accuracies[t] for t in PAPER_TYPES if t in accuracies},
        {t: missing[t] for t in PAPER_TYPES if t in missing},
        attacked,
    )


def _autoattack(adversarial: Mapping[str, Any] | None, label: str, norm: str, eps: float) -> float | str:
    """The accuracy of the paper's AutoAttack ``label`` in adversarial.json, or why it is not there."""
    how = f"evaluate --attack {label}"
    if not adversarial:
        return f"no attacks ({how}, with --adversarial N)"
    entries = adversarial.get("autoattack") or {}
    entry = entries.get(label)
    if entry is None:
        others = sorted(name for name in entries if name.split(":")[0] == label)
        has = f"adversarial.json has {', '.join(others)}; " if others else ""
        return f"no AutoAttack {norm} at eps {eps:.6g} ({has}{how})"
    if entry.get("norm") != norm or not math.isclose(float(entry.get("eps", math.nan)), eps, rel_tol=1e-6):
        return f"{label} ran under {entry.get('norm')} eps {entry.get('eps')}, not {norm} eps {eps:.6g}"
    changed = [f"{name} {entry.get(name)!r}" for name, value in AUTOATTACK_STANDARD.items() if entry.get(name) != value]
    if changed:
        return (
            f"{label} ran with {', '.join(changed)}; the paper's is AutoAttack standard (100 iterations, 5000 queries)"
        )
    return float(entry["accuracy"])


def _common(reports: Mapping[str, Mapping[str, Any]]) -> float | str:
    """The pooled corrupted accuracy of the run's ``perturbations``/``common`` build made with the authors'
    portfolio, or why there is none."""
    builds = {
        key: report
        for key, report in under(reports, HESSE2025).items()
        if (report["meta"].get("dataset"), report["meta"].get("config")) == HEUILLET_PORTFOLIO
    }
    if not builds:
        return "no `perturbations` build of config `common` of ImageNet val among the run's datasets"
    others = {key: _plan_differences(report) for key, report in builds.items()}
    paper = sorted(key for key, differences in others.items() if not differences)
    if len(paper) > 1:
        return f"{len(paper)} `common` builds ({', '.join(paper)}): which one is the run's a(common) is ambiguous"
    if not paper:
        key = sorted(others)[0]
        return f"the `common` build {key} is not the authors' portfolio: {others[key]}"
    found = _robustness_variant(builds[paper[0]])
    if found is None:
        return f"the `common` build {paper[0]} has no corrupted accuracy (no robustness rows)"
    return found[1]


def _plan_differences(report: Mapping[str, Any]) -> str:
    """How a ``common`` build's recorded plan differs from :data:`COMMON_PLAN` ('' when it does not, or records
    none: a suite.json written before builds recorded their plan)."""
    plan = ((report["meta"].get("protocol") or {}).get("perturbation")) or {}
    differences = []
    for name, value in COMMON_PLAN.items():
        if name not in plan:
            continue
        recorded = list(plan[name]) if isinstance(value, list) else plan[name]
        if recorded != value:
            differences.append(f"{name} {recorded!r} (the authors': {value!r})")
    return "; ".join(differences)


@dataclass
class Heuillet2025:
    """The paper's tables on ImageNet (:func:`paper_tables`), indexed by model.

    ``accuracies``: the five types (columns :data:`PAPER_TYPES`; NaN where a model lacks one);
    ``scores``: ``score_sum``, ``sum_rank``, ``borda``, ``borda_rank`` of the models with all five (NaN /
    NA for the others); ``correlations``: the 5×5 Spearman matrix of the types across those models;
    ``mac``: its mean absolute off-diagonal entry (NaN with fewer than two models); ``missing``: per model
    lacking a type, ``{type: why}``; ``attacked``: per model, the images its clean and AutoAttack
    accuracies were measured on."""

    accuracies: pd.DataFrame
    scores: pd.DataFrame
    correlations: pd.DataFrame
    mac: float
    missing: dict[str, dict[str, str]] = field(default_factory=dict)
    attacked: dict[str, str | None] = field(default_factory=dict)

    @property
    def ranked(self) -> list[str]:
        """The models with all five types: those the scores rank."""
        return [name for name in self.accuracies.index if name not in self.missing]


def paper_tables(suites: Mapping[str, Mapping[str, Any]]) -> Heuillet2025:
    """The paper's Sum, Borda and MAC on ImageNet (module docstring): the voter matrix of the models with all
    five types, one dataset (:data:`PAPER_DATASET`), through :mod:`imagenet_suite.scoring.metrics.aggregates`
    (``robustgen_code``: each type gives a model 1 + the number of models with a strictly lower accuracy;
    ranks descending, ties sharing the best). A model lacking a type is neither ranked nor a member of the
    others' pool: it is listed in ``missing``."""
    names = list(suites)
    found = {name: paper_types(suite) for name, suite in suites.items()}
    accuracies = pd.DataFrame(
        [[found[name].accuracies.get(t, np.nan) for t in PAPER_TYPES] for name in names],
        index=pd.Index(names, name="model"),
        columns=list(PAPER_TYPES),
        dtype=float,
    )
    missing = {name: found[name].missing for name in names if found[name].missing}
    complete = [name for name in names if name not in missing]
    matrix = accuracies.loc[complete]
    matrix.columns = pd.MultiIndex.from_tuples([(PAPER_DATASET, t) for t in PAPER_TYPES], names=metrics.VOTER_LEVELS)
    scores = pd.DataFrame(index=accuracies.index)
    scores["score_sum"] = metrics.sum_score_of(matrix).reindex(names) if complete else np.nan
    scores["sum_rank"] = metrics.global_rank(scores["score_sum"].dropna()).reindex(names).astype("Int64")
    scores["borda"] = metrics.borda_score_of(matrix).reindex(names) if complete else np.nan
    scores["borda_rank"] = metrics.global_rank(scores["borda"].dropna()).reindex(names).astype("Int64")
    correlations = accuracies.loc[complete].corr(method="spearman") if len(complete) > 1 else pd.DataFrame()
    mac = metrics.mac_per_dataset(matrix).get(PAPER_DATASET, np.nan) if len(complete) > 1 else np.nan
    attacked = {name: found[name].attacked for name in names}
    return Heuillet2025(accuracies, scores, correlations, float(mac), missing, attacked)


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
        found_variant = _robustness_variant(report)
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


def _robustness_variant(report: Mapping[str, Any]) -> tuple[str, float] | None:
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


def markdown(board: Any) -> list[str]:
    """The paper's section of ``leaderboard.md`` (``board``: a :class:`~imagenet_suite.scoring.summary.leaderboard.Leaderboard`)."""
    from ...presentation.suite_markdown import table

    lines = ["## Heuillet et al. 2025: robust generalization", ""]
    paper = board.heuillet2025 if board.heuillet2025 is not None else paper_tables({})
    lines += paper_markdown(paper, board.models, table)
    lines += [
        "### Sum / Borda / MAC over every (dataset, perturbation type) of the runs (not Heuillet et al. 2025's "
        "threat model)",
        "",
    ]
    matrix = board.perturbation_accuracies
    if not matrix.shape[1]:
        lines += ["No run reports perturbation types (a `perturbations` build, ImageNet-C or `--adversarial`).", ""]
    else:
        lines += _aggregates_markdown(board, matrix, table)
    lines += [
        "### Dataset-level Sum / Borda (one voter per dataset's headline accuracy; not Heuillet et al. 2025's voters)",
        "",
    ]
    level = with_weights(board.dataset_level, board.models)
    lines += table(list(level.columns), level.itertuples(index=False))
    lines += [
        "Dataset-level MAC (mean absolute Spearman correlation between the datasets' headline accuracies across "
        f"models; not Heuillet et al. 2025's MAC): {_mac_text(board.dataset_level_mac)}",
        "",
    ]
    return lines


def _mac_text(mac: float) -> str:
    """A MAC as leaderboard.md prints it: — with the reason when undefined, never ``nan``."""
    return "— (needs two voters with values of at least two models)" if math.isnan(mac) else f"{mac:.4g}"


def paper_markdown(paper: Heuillet2025, models: pd.DataFrame, table) -> list[str]:
    """The subsection of the paper's own quantities: the five types, Sum, Borda, their ranks, MAC, and the models
    that lack a type."""
    lines = [
        "### Sum / Borda / MAC (Heuillet et al. 2025: the paper's five perturbation types on ImageNet val)",
        "",
        "Voters: (ImageNet val, type) for τ = {clean, ℓ∞ 4/255, ℓ2 2.0, ℓ1 75, common}: the clean accuracy of the "
        "attacked images, AutoAttack standard under each norm (adversarial.json), and the accuracy over the "
        "corrupted rows of a `perturbations` build of config `common` (the authors' code's 11 corruptions at "
        "severity 3, one per image). FGSM and PGD are not the paper's types. Sum: the five accuracies added; "
        "Borda (`robustgen_code`): each type gives a model 1 + the number of models with a strictly lower "
        "accuracy; MAC: the mean absolute Spearman correlation between the five types across the ranked models. "
        "A model lacking a type is not ranked and casts no vote (listed below).",
        "",
    ]
    if paper.accuracies.empty:
        return [*lines, "No runs.", ""]
    if paper.accuracies.isna().all().all():  # no table of dashes: say what is missing and what adds it
        lines += [
            "No run has any of the five types: each needs `evaluate --adversarial N --attack autoattack-linf,"
            "autoattack-l2,autoattack-l1` and a `perturbations` build of config `common` among `--datasets`, then "
            "`imagenet-suite leaderboard RUN_DIR... --out DIR`.",
            "",
        ]
    else:
        shown = paper.accuracies.join(paper.scores).astype(object)
        shown = with_weights(shown.where(shown.notna(), None), models)
        lines += table(list(shown.columns), shown.itertuples(index=False))
        mac = "—" if math.isnan(paper.mac) else f"{paper.mac:.4g}"
        lines += [
            f"MAC over the {len(paper.ranked)} ranked model(s) (Heuillet et al. 2025, Table 4's recipe): {mac}",
            "",
        ]
    if paper.missing:
        lines += ["Not ranked (a type missing):", ""]
        for name, why in paper.missing.items():
            lines += [f"- `{name}`: " + "; ".join(f"{type_}: {reason}" for type_, reason in why.items())]
        lines.append("")
    subsets = {paper.attacked[name] for name in paper.ranked}
    if len(subsets) > 1:
        lines += [
            "**The ranked models' clean and AutoAttack accuracies come from different attacked images** "
            "(evaluate --adversarial N --adversarial-seed S): "
            + "; ".join(f"`{name}`: {paper.attacked[name]}" for name in paper.ranked),
            "",
        ]
    return lines


def _aggregates_markdown(board: Any, matrix: pd.DataFrame, table) -> list[str]:
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
        f"{_mac_text(board.mac)}",
        "",
    ]
    return lines


def write(board: Any, folder: Path) -> list[Path]:
    """The paper's ``leaderboard_heuillet2025.csv`` (per model: the five types, Sum, Borda, their ranks, what it
    lacks) and ``_heuillet2025_correlations.csv`` (the Spearman matrix of the five types); over every
    perturbation type of the runs, ``leaderboard_aggregates.csv``, ``_perturbation_accuracies.csv`` (long) and
    ``_mac.csv``; ``_dataset_level.csv``."""
    from ....files import atomic_write_bytes

    written: list[Path] = []
    if board.heuillet2025 is not None:
        paper = board.heuillet2025
        missing = pd.Series(
            {name: "; ".join(f"{t}: {why}" for t, why in paper.missing.get(name, {}).items()) for name in paper.scores.index},
            name="missing", dtype=object,
        )  # fmt: skip
        write_csv(folder, "heuillet2025", paper.accuracies.join(paper.scores).join(missing), written)
        written.append(folder / "leaderboard_heuillet2025_correlations.csv")
        atomic_write_bytes(written[-1], paper.correlations.rename_axis("type").to_csv().encode())
    write_csv(folder, "aggregates", board.aggregates, written)
    write_csv(folder, "dataset_level", board.dataset_level, written)
    long = board.perturbation_accuracies.melt(ignore_index=False, value_name="accuracy").dropna()
    write_csv(folder, "perturbation_accuracies", long.reset_index(), written, index=False)
    written.append(folder / "leaderboard_mac.csv")
    atomic_write_bytes(written[-1], board.mac_per_dataset.to_csv().encode())
    return written


__all__ = [
    "AUTOATTACK_STANDARD",
    "COMMON",
    "COMMON_PLAN",
    "HEUILLET_PORTFOLIO",
    "PAPER_AUTOATTACKS",
    "PAPER_DATASET",
    "PAPER_TYPES",
    "ROBUSTNESS_VARIANTS",
    "Heuillet2025",
    "PaperTypes",
    "Voter",
    "aggregates",
    "dataset_level",
    "markdown",
    "paper_markdown",
    "paper_tables",
    "paper_types",
    "perturbation_accuracies",
    "write",
]
