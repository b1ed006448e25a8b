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
* :func:`group_mac` — Table 4: the MAC per group of models (groups from ``leaderboard --groups`` or the models'
  metadata, :func:`imagenet_suite.scoring.summary.groups.metadata_groups`);
  :func:`main_effects` and :func:`nested_effects` — Figs. 4 and 3: the groups' effects on the Borda score, as
  the authors' code computes them (one-way ANOVA, Tukey HSD letters; in
  :mod:`~imagenet_suite.scoring.summary.papers._heuillet2025_effects`).
* :func:`perturbation_accuracies` and :func:`aggregates` — not the paper's threat model (in
  :mod:`~imagenet_suite.scoring.summary.papers._heuillet2025_aggregates`): the same
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
from ..groups import ModelGroups
from ..reports import under
from ._heuillet2025_aggregates import (
    COMMON,
    HEUILLET_PORTFOLIO,
    ROBUSTNESS_VARIANTS,
    Voter,
    aggregates,
    aggregates_markdown,
    dataset_level,
    mac_text,
    perturbation_accuracies,
    robustness_variant,
)
from ._heuillet2025_effects import (
    CORRELATION_COLUMNS,
    EFFECT_COLUMNS,
    EFFECTS_TEXT,
    FIG5_TEXT,
    NESTED_COLUMNS,
    ODDS_COLUMNS,
    TUKEY_ALPHA,
    correlation_tests,
    effects_markdown,
    fig5_markdown,
    holm,
    main_effects,
    nested_effects,
    one_way_anova,
    published_fig5,
    published_odds_ratios,
    shows_fig5,
    tukey_letters,
    write_effects_figure,
    write_fig5,
)
from ._shared import with_weights, write_csv

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
    found = robustness_variant(builds[paper[0]])
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
    accuracies were measured on; ``group_mac``: Table 4, MAC per group of models (:func:`group_mac`; empty
    without groups); ``groups_source``: where the groups came from (None without groups); ``main_effects`` and
    ``nested_effects``: Figs. 4 and 3, the groups' effect on Borda (:func:`main_effects`, :func:`nested_effects`;
    empty without groups)."""

    accuracies: pd.DataFrame
    scores: pd.DataFrame
    correlations: pd.DataFrame
    mac: float
    missing: dict[str, dict[str, str]] = field(default_factory=dict)
    attacked: dict[str, str | None] = field(default_factory=dict)
    group_mac: pd.DataFrame = field(default_factory=pd.DataFrame)
    groups_source: str | None = None
    main_effects: pd.DataFrame = field(default_factory=pd.DataFrame)
    nested_effects: pd.DataFrame = field(default_factory=pd.DataFrame)
    correlation_tests: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def ranked(self) -> list[str]:
        """The models with all five types: those the scores rank."""
        return [name for name in self.accuracies.index if name not in self.missing]


def paper_tables(suites: Mapping[str, Mapping[str, Any]], groups: ModelGroups | None = None) -> Heuillet2025:
    """The paper's Sum, Borda and MAC on ImageNet (module docstring): the voter matrix of the models with all
    five types, one dataset (:data:`PAPER_DATASET`), through :mod:`imagenet_suite.scoring.metrics.aggregates`
    (``robustgen_code``: each type gives a model 1 + the number of models with a strictly lower accuracy;
    ranks descending, ties sharing the best). A model lacking a type is neither ranked nor a member of the
    others' pool: it is listed in ``missing``. With ``groups`` (``--groups FILE`` or the models' metadata),
    also Table 4: MAC per group (:func:`group_mac`), and Figs. 4 and 3: the groups' effects on the Borda score
    of the ranked models (:func:`main_effects`, :func:`nested_effects`)."""
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
    tests = correlation_tests(accuracies.loc[complete])
    if groups is None:
        return Heuillet2025(accuracies, scores, correlations, float(mac), missing, attacked, correlation_tests=tests)
    borda = scores["borda"].loc[complete]
    return Heuillet2025(
        accuracies, scores, correlations, float(mac), missing, attacked, group_mac(accuracies.loc[complete], groups),
        groups.source, main_effects(borda, groups), nested_effects(borda, groups), tests,
    )  # fmt: skip


ALL_MODELS = "all ranked models"
GROUP_MAC_COLUMNS = ("setup", "group", "models", "ranked", PAPER_DATASET, "mac_avg")


def group_mac(ranked: pd.DataFrame, groups: ModelGroups) -> pd.DataFrame:
    """Table 4 of Heuillet et al. 2025 on ImageNet: the MAC of the five types over each group's models.

    ``ranked``: the five types (columns :data:`PAPER_TYPES`) of the models that have all five, indexed by
    model; ``groups``: the models' groups by setup. One row per (setup, group), in the groups' order, after
    a first row over all ranked models (setup ``all``, group :data:`ALL_MODELS`, Table 4's "All 80
    configs"): ``models`` (the group's members), ``ranked`` (those with all five types: the MAC is over
    them), the MAC of :data:`PAPER_DATASET` (the mean absolute off-diagonal entry of the 5×5 Spearman matrix
    of the types across the group's ranked models, pandas' average ranks for ties; NaN with fewer than two),
    and ``mac_avg``, its average over the datasets (the authors' notebook ``paper_table4.ipynb``: ``np.mean``
    for the all row, ``np.nanmean`` for the groups; on ImageNet there is one dataset, so it equals the
    dataset's MAC). Computed by :func:`imagenet_suite.scoring.metrics.aggregates.mean_absolute_correlation`.

    Example:
        Three models ranked by clean (A, B, C = .9, .8, .7) and by every other type as (.5, .6, .4): each
        type pair is ρ = 1 (same type's ranks) or ρ = 0.5 (clean against another, ranks (3, 2, 1) vs
        (2, 3, 1)): of the 20 off-diagonal entries 8 are 0.5, 12 are 1, so MAC = (4 + 12) / 20 = 0.8. The
        group of A and B alone has two models, every |ρ| is 1; C alone has no MAC:

        >>> ranked = pd.DataFrame({"clean": [0.9, 0.8, 0.7], **{t: [0.5, 0.6, 0.4] for t in PAPER_TYPES[1:]}},
        ...                       index=["A", "B", "C"])
        >>> table = group_mac(ranked, ModelGroups.from_mapping({"A": "x", "B": "x", "C": "y", "D": "y"}))
        >>> [(row.group, row.models, row.ranked, round(row.imagenet_val, 6)) for row in table.itertuples()]
        [('all ranked models', 3, 3, 0.8), ('x', 2, 2, 1.0), ('y', 2, 1, nan)]
    """
    types = list(PAPER_TYPES)
    rows = []
    everything = ranked.assign(dataset=PAPER_DATASET)
    whole = metrics.mean_absolute_correlation(everything, "dataset", types).iloc[0]
    rows.append(("all", ALL_MODELS, len(ranked), len(ranked), whole.get(PAPER_DATASET, np.nan), whole["average"]))
    for setup, members in groups.setups().items():
        for group, models in members.items():
            unique = list(dict.fromkeys(models))
            inside = ranked.loc[[model for model in unique if model in ranked.index]]
            part = inside.assign(dataset=PAPER_DATASET, group=group)
            found = metrics.mean_absolute_correlation(part, "dataset", types, group="group") if len(part) else None
            value = float(found.iloc[0].get(PAPER_DATASET, np.nan)) if found is not None else np.nan
            average = float(found.iloc[0]["average"]) if found is not None else np.nan
            rows.append((setup, group, len(unique), len(inside), value, average))
    return pd.DataFrame(rows, columns=list(GROUP_MAC_COLUMNS)).astype({PAPER_DATASET: float, "mac_avg": float})


def markdown(board: Any) -> list[str]:
    """The paper's section of ``leaderboard.md`` (``board``: a :class:`~imagenet_suite.scoring.summary.leaderboard.Leaderboard`)."""
    from ...presentation.suite_markdown import table

    lines = ["## Heuillet et al. 2025: robust generalization", ""]
    paper = board.heuillet2025 if board.heuillet2025 is not None else paper_tables({})
    lines += paper_markdown(paper, board.models, table)
    lines += group_mac_markdown(paper, table)
    lines += effects_markdown(paper, table)
    lines += fig5_markdown(board, table)
    lines += [
        "### Sum / Borda / MAC over every (dataset, perturbation type) of the runs (not Heuillet et al. 2025's "
        "threat model)",
        "",
    ]
    matrix = board.perturbation_accuracies
    if not matrix.shape[1]:
        lines += ["No run reports perturbation types (a `perturbations` build, ImageNet-C or `--adversarial`).", ""]
    else:
        lines += aggregates_markdown(board, matrix, table)
    lines += [
        "### Dataset-level Sum / Borda (one voter per dataset's headline accuracy; not Heuillet et al. 2025's voters)",
        "",
    ]
    level = with_weights(board.dataset_level, board.models)
    lines += table(list(level.columns), level.itertuples(index=False))
    lines += [
        "Dataset-level MAC (mean absolute Spearman correlation between the datasets' headline accuracies across "
        f"models; not Heuillet et al. 2025's MAC): {mac_text(board.dataset_level_mac)}",
        "",
    ]
    return lines


def group_mac_markdown(paper: Heuillet2025, table) -> list[str]:
    """The subsection of Table 4: MAC per group of models, or what is missing and which command adds it."""
    lines = [
        "### MAC per group of models (Heuillet et al. 2025, Table 4)",
        "",
        "Per group, the mean absolute Spearman correlation (average ranks for ties) between the five types across "
        "the group's ranked models (those with all five), as the authors' `paper_table4.ipynb` computes it; the "
        "average over datasets is the dataset's MAC here (one dataset, ImageNet val). The paper's groups are the "
        "loss, the model size, the architecture type and the pretraining strategy of its fine-tuned "
        "configurations; here they are the leaderboard's groups.",
        "",
    ]
    if paper.groups_source is None:
        return lines + [
            "No groups: `imagenet-suite leaderboard RUN_DIR... --groups FILE` (a CSV of model, group and "
            "optionally setup), or runs of timm, torchvision or open_clip models evaluated by this version "
            "(suite.json records their family and pretraining data), give them.",
            "",
        ]
    lines += [f"Groups from {paper.groups_source}.", ""]
    rows = [
        (row.setup, row.group, row.models, row.ranked, row[PAPER_DATASET], row.mac_avg)
        for _, row in paper.group_mac.iterrows()
    ]
    lines += table(("setup", "group", "models", "ranked", f"MAC {PAPER_DATASET}", "MAC avg"), rows)
    undefined = [f"{row.setup}/{row.group}" for _, row in paper.group_mac.iterrows() if math.isnan(row.mac_avg)]
    if undefined:
        lines += [
            "— : fewer than two ranked models in the group (each needs all five types: see the models not ranked "
            f"above): {', '.join(undefined)}.",
            "",
        ]
    return lines


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
        if len(paper.correlation_tests):
            lines += [
                "Fig. 6: Spearman ρ between the types over the ranked models, p-values of `scipy.stats.spearmanr` "
                "(the authors' code; no multiple-testing correction, as theirs) and its stars: *** p < 0.001, "
                "** p < 0.01, * p < 0.05 (the code's thresholds; the caption states 0.01, 0.05, 0.1).",
                "",
                *table(CORRELATION_COLUMNS, paper.correlation_tests.itertuples(index=False)),
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
        if len(paper.group_mac):
            write_csv(folder, "heuillet2025_mac_groups", paper.group_mac, written, index=False)
        if len(paper.main_effects):
            write_csv(folder, "heuillet2025_main_effects", paper.main_effects, written, index=False)
            write_csv(folder, "heuillet2025_nested_effects", paper.nested_effects, written, index=False)
        written += write_effects_figure(board, folder)
        if len(paper.correlation_tests):
            write_csv(folder, "heuillet2025_correlation_tests", paper.correlation_tests, written, index=False)
        written.append(folder / "leaderboard_heuillet2025_correlations.csv")
        atomic_write_bytes(written[-1], paper.correlations.rename_axis("type").to_csv().encode())
    written += write_fig5(board, folder)
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
    "CORRELATION_COLUMNS",
    "EFFECTS_TEXT",
    "EFFECT_COLUMNS",
    "FIG5_TEXT",
    "HEUILLET_PORTFOLIO",
    "NESTED_COLUMNS",
    "ODDS_COLUMNS",
    "PAPER_AUTOATTACKS",
    "PAPER_DATASET",
    "PAPER_TYPES",
    "ROBUSTNESS_VARIANTS",
    "TUKEY_ALPHA",
    "Heuillet2025",
    "PaperTypes",
    "Voter",
    "aggregates",
    "correlation_tests",
    "dataset_level",
    "effects_markdown",
    "fig5_markdown",
    "group_mac",
    "group_mac_markdown",
    "holm",
    "main_effects",
    "markdown",
    "nested_effects",
    "one_way_anova",
    "paper_markdown",
    "paper_tables",
    "paper_types",
    "perturbation_accuracies",
    "published_fig5",
    "published_odds_ratios",
    "shows_fig5",
    "tukey_letters",
    "write",
]
