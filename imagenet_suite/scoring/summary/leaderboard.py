"""Many models side by side, from their suite evaluations (``suite.json`` of ``imagenet-suite evaluate``).

* ``quba`` — the nine dimensions per model, QUBA score and rank (Beyond Accuracy, Hesse et al. 2025;
  ranks 1 = best, ties share the best rank); a model missing a dimension gets no score and its missing dimensions are named.
* ``accuracies`` — the headline accuracy of every dataset key (model × dataset).
* ``perturbation_accuracies``, ``aggregates``, ``mac_per_dataset``, ``mac`` — Heuillet et al. 2025's Sum
  score, Borda score and Mean Absolute Correlation as the paper and its code compute them
  (:mod:`imagenet_suite.scoring.metrics.aggregates`, conventions ``robustgen_code``): a voter is a
  (dataset, perturbation type) pair, and MAC is the mean absolute Spearman correlation between the
  perturbation types of one dataset across models, averaged over the datasets. The accuracy table
  a_{model,dataset}(type) comes from the runs' reports (:func:`perturbation_accuracies`): corrupted sets
  (a ``perturbations`` build, ImageNet-C) and the adversarial attack. Sum: a dataset in which a model
  misses one perturbation type adds nothing to its Sum and Borda (``incomplete_datasets`` counts them),
  and a model without any scores 0. MAC averages, with ``nanmean``, the datasets that have at least two
  perturbation types and a defined correlation.
* ``dataset_level``, ``dataset_level_mac`` — not the paper's quantities: Sum and Borda (``robustgen_code``
  points) with each dataset key every model has as one voter (its headline accuracy), and the mean
  absolute Spearman correlation between those datasets' accuracies across models.
* ``delta_rank`` — Anzaku et al. 2024's ΔRank = rank(ImageNet top-1) − rank(PatchML ASMA, ``exact``, mean over the
  run's PatchML seeds; the Markdown says how many, and when the runs differ in seeds), when every
  model has both.
* ``lca_on_the_line`` — LCA-on-the-Line (Shi et al. 2024): for every OOD dataset key, ID LCA (ImageNet val, the first LCA
  distance reported) against OOD top-1 over the models: R², Kendall τ-b, Pearson, fitted line
  (min-max scaled, as the paper) — with at least three models.

Every model-indexed table in ``leaderboard.md`` carries a ``weights`` column after the model: the weights
tag its spec resolved to (``torchvision resnet50.IMAGENET1K_V1``, ``timm resnet50.a1_in1k``), or the
file / random init and the tag that chose its preprocessing, and the weights' sha256 (12 digits;
``leaderboard_models.csv`` has all of it, the tag, its source and location): two runs of one
architecture with other weights are never one row to a reader (``models``).

* ``significance`` — with the run folders (``folders``): the 95 % intervals of each run's numbers and a paired
  test between adjacent models of the QUBA ranking and of every dataset's accuracy
  (:mod:`imagenet_suite.scoring.summary.significance`).

Each suite.json is read with :func:`~imagenet_suite.scoring.summary.suite.read_suite` (format and structure
checked). Runs that read different builds of one dataset split (same builder, config and split, another
sha256 of build_info.json, or a run whose suite.json records no build) are refused, naming the dataset
and the runs on each build, unless ``allow_mixed_builds``; then the Markdown lists the mixed builds first.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...errors import ConfigError, RunFolderError, param
from ..metrics import aggregates
from ..metrics.lca_on_the_line import OnTheLine, analyze
from ..metrics.multilabel import DEFAULT_VARIANT, delta_rank
from ..metrics.quba import DIMENSIONS, quba_table
from ..metrics.robustness import CLEAN
from .significance import Significance, significance, significance_markdown, write_significance
from .suite import (
    ID_DATASET,
    RELEASED_IMAGENET_C,
    SUITE_JSON,
    read_suite,
    released_imagenet_c_accuracy,
    report_value,
    weights_label,
)

MIN_MODELS_ON_THE_LINE = 3
DatasetSplit = tuple[str, str, str]  # (builder, config, split)
MixedBuilds = dict[DatasetSplit, dict[str | None, list[str]]]  # {split: {build_info sha256 or None: [run names]}}
Voter = tuple[str, str]  # (dataset, perturbation type)
COMMON = "common"
HEUILLET_PORTFOLIO = ("perturbations", "common")  # (builder, config): one common corruption per image
ROBUSTNESS_VARIANTS = ("top1", "accuracy16")  # the robustness families' variants, in order of preference


@dataclass
class Leaderboard:
    """The tables of :func:`leaderboard`, indexed by model name."""

    quba: pd.DataFrame
    accuracies: pd.DataFrame
    perturbation_accuracies: pd.DataFrame  # a_{model,dataset}(type): one column per voter (dataset, type)
    aggregates: pd.DataFrame  # Heuillet et al. 2025: score_sum, sum_rank, borda, borda_rank, incomplete_datasets
    mac_per_dataset: pd.Series  # Heuillet et al. 2025's MAC of each dataset (NaN: fewer than two types)
    mac: float  # their average over the datasets (nanmean)
    dataset_level: pd.DataFrame  # not the paper's: one voter per dataset key's headline accuracy
    dataset_level_mac: float  # not the paper's MAC: between datasets' headline accuracies
    delta_rank: pd.Series | None
    lca_on_the_line: dict[str, OnTheLine] = field(default_factory=dict)
    missing: dict[str, dict[str, str]] = field(default_factory=dict)  # model -> {dimension: reason}
    mixed_builds: MixedBuilds = field(default_factory=dict)  # ranked anyway (allow_mixed_builds)
    models: pd.DataFrame = field(default_factory=pd.DataFrame)  # per model: its weights (models_table)
    significance: Significance | None = None  # intervals and adjacent-rank tests (with the run folders)


def models_table(suites: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Per model (index): ``weights`` (:func:`~imagenet_suite.scoring.summary.suite.weights_label`, sha256
    in 12 digits), ``weights_sha256``, and the ``weights_source`` record's kind, library, architecture,
    tag, requested tag, loaded and location (empty for a suite.json before format 3, which records no tag)."""
    fields = ("kind", "library", "architecture", "tag", "requested", "loaded", "location", "seed")
    rows = {}
    for name, suite in suites.items():
        source = suite.get("weights_source") or {}
        rows[name] = {
            "weights": weights_label(suite),
            "weights_sha256": suite.get("weights_sha256"),
            **{key: source.get(key) for key in fields},
        }
    columns = ["weights", "weights_sha256", *fields]
    return pd.DataFrame.from_dict(rows, orient="index", columns=columns).rename_axis("model")


def load_suites(run_dirs: Sequence[str | Path]) -> dict[str, dict[str, Any]]:
    """``{model name: suite.json content}``; the name is the model spec, plus the run folder's name when
    two runs evaluate the same spec. RunFolderError names a suite.json that is unreadable, of another
    format or malformed (:func:`~imagenet_suite.scoring.summary.suite.read_suite`)."""
    suites: list[tuple[str, Path, dict[str, Any]]] = []
    for run_dir in map(Path, run_dirs):
        suite = read_suite(run_dir / SUITE_JSON if run_dir.is_dir() else run_dir)
        suites.append((suite["model"], run_dir, suite))
    specs = [spec for spec, _, _ in suites]
    named = {}
    for spec, run_dir, suite in suites:
        name = spec if specs.count(spec) == 1 else f"{spec} ({run_dir.name})"
        if name in named:
            raise ConfigError(f"two runs are both named {name!r}; give each run folder a distinct name")
        named[name] = suite
    return named


def leaderboard(
    suites: Mapping[str, Mapping[str, Any]],
    allow_mixed_builds: bool = False,
    folders: Mapping[str, str | Path] | None = None,
) -> Leaderboard:
    """All tables for ``{model name: suite.json content}`` (at least one model); with ``folders`` (``{model
    name: run folder}``) also the intervals and paired tests, read from the run folders.

    RunFolderError when the runs read different builds of one dataset split (:func:`mixed_builds`),
    unless ``allow_mixed_builds``."""
    if not suites:
        raise ConfigError("a leaderboard needs at least one run")
    mixed = mixed_builds(suites)
    if mixed and not allow_mixed_builds:
        raise RunFolderError(describe_mixed_builds(mixed) + f"; pass {param('allow_mixed_builds')} to rank them anyway")
    names = list(suites)
    quba, missing = _quba(suites)
    accuracies = pd.DataFrame(
        {name: {k: v["value"] for k, v in suites[name]["summary"]["accuracies"].items()} for name in names}
    ).T.reindex(names)
    accuracies = accuracies[sorted(accuracies.columns)]
    matrix, scores, per_dataset, mac = _heuillet(suites)
    dataset_level, dataset_level_mac = _dataset_level(accuracies)
    return Leaderboard(
        quba=quba,
        accuracies=accuracies,
        perturbation_accuracies=matrix,
        aggregates=scores,
        mac_per_dataset=per_dataset,
        mac=mac,
        dataset_level=dataset_level,
        dataset_level_mac=dataset_level_mac,
        delta_rank=_delta_rank(suites),
        lca_on_the_line=_on_the_line(suites),
        missing=missing,
        mixed_builds=mixed,
        models=models_table(suites),
        significance=significance(suites, folders, quba, accuracies, allow_mixed_builds) if folders else None,
    )


def run_builds(suite: Mapping[str, Any]) -> dict[DatasetSplit, set[str | None]]:
    """``{(builder, config, split): {build_info.json sha256}}`` of every split a run read: the splits its
    reports scored, the outputs they used, the ID outputs of OOD sets and the attacked split; ``None``
    for a report of a suite.json that records no build (written before builds were recorded)."""
    found: dict[DatasetSplit, set[str | None]] = {}
    builds: list[Mapping[str, Any]] = []
    for report in suite["datasets"].values():
        provenance = report.get("provenance")
        if provenance is None:
            meta = report["meta"]
            found.setdefault((meta["dataset"], meta["config"], meta["split"]), set()).add(None)
        else:
            builds += [build for build in provenance.values() if build is not None]
    adversarial = suite["summary"].get("adversarial") or {}
    if adversarial.get("dataset") is not None:
        builds.append(adversarial["dataset"])
    for build in builds:
        found.setdefault((build["builder"], build["config"], build["split"]), set()).add(build["build_info_sha256"])
    return found


def mixed_builds(suites: Mapping[str, Mapping[str, Any]]) -> MixedBuilds:
    """The dataset splits that two or more runs read in different builds (or in a build one of them did not
    record): ``{(builder, config, split): {build_info sha256 or None: [run names]}}``."""
    per_run = {name: run_builds(suite) for name, suite in suites.items()}
    mixed: MixedBuilds = {}
    for split in sorted({split for builds in per_run.values() for split in builds}):
        having = {name: builds[split] for name, builds in per_run.items() if split in builds}
        if len(having) < 2:
            continue
        sets = list(having.values())
        if any(other != sets[0] for other in sets) or any(None in builds for builds in sets):
            by_build: dict[str | None, list[str]] = {}
            for name, builds in having.items():
                for sha in sorted(builds, key=str):
                    by_build.setdefault(sha, []).append(name)
            mixed[split] = by_build
    return mixed


def describe_mixed_builds(mixed: MixedBuilds) -> str:
    """One line: the first dataset split read in different builds, the runs on each, how many more."""
    (builder, config, split), by_build = next(iter(mixed.items()))
    runs = "; ".join(f"{_build_name(sha)} in {', '.join(map(repr, names))}" for sha, names in by_build.items())
    more = f" (and {len(mixed) - 1} more dataset split(s): {_split_names(list(mixed)[1:])})" if len(mixed) > 1 else ""
    return f"the runs read different builds of {builder} (config {config}, split {split}): {runs}{more}"


def _build_name(sha: str | None) -> str:
    return f"build_info.json sha256 {sha[:12]}" if sha else "a build not recorded (suite.json without provenance)"


def _split_names(splits: Sequence[DatasetSplit]) -> str:
    return ", ".join(f"{builder}/{config}/{split}" for builder, config, split in splits)


def _quba(suites: Mapping[str, Mapping[str, Any]]) -> tuple[pd.DataFrame, dict[str, dict[str, str]]]:
    rows, missing, partial = {}, {}, {}
    for name, suite in suites.items():
        quba = suite["summary"]["quba"]
        rows[name] = {dim: quba["dimensions"].get(dim, {}).get("value", np.nan) for dim in DIMENSIONS}
        partial[name] = ", ".join(f"{dim} ({note})" for dim, note in (quba.get("partial") or {}).items())
        if quba["missing"]:
            missing[name] = dict(quba["missing"])
    table = pd.DataFrame.from_dict(rows, orient="index", columns=list(DIMENSIONS)).astype(float)
    complete = table.dropna()
    scored = quba_table(complete) if len(complete) else complete.assign(quba=[], quba_rank=[])
    table = table.join(scored[["quba", "quba_rank"]]).assign(partial=pd.Series(partial))
    return table.sort_values("quba", ascending=False, na_position="last"), missing


def perturbation_accuracies(suite: Mapping[str, Any]) -> dict[Voter, float]:
    """One run's accuracy per (dataset, perturbation type), the voters of Heuillet et al. 2025's aggregates.

    * A report with the robustness rows of a corrupted set (variant ``top1``, else ``accuracy16``) is a
      dataset named by its key: type ``clean`` is its ``clean_accuracy`` (the build's clean rows); a
      ``perturbations`` build of config ``common`` (Heuillet et al.'s portfolio, one corruption per
      image) has the paper's type ``common``, its ``pooled_corruption_accuracy``; any other corrupted set
      (``imagenet_c_regenerated``, ``imgaug``) has one type per ``<corruption>/<severity>``, its
      ``corruption_accuracy`` row of that subgroup.
    * The released ImageNet-C (one report per ``<corruption>_<severity>`` config) is one dataset,
      ``imagenet_c``, with one type per ``<corruption>/<severity>``: its top-1 accuracy.
    * The adversarial attack (``summary.adversarial``) is one dataset, ``adversarial (<rows> rows, seed
      <seed>)`` (the attacked subset), with types ``clean``, ``fgsm`` and ``pgd``.

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
        for type_ in ("clean", "fgsm", "pgd"):
            found[(name, type_)] = float(adversarial[f"{type_}_accuracy"])
    return found


def _robustness_variant(report: Mapping[str, Any]) -> tuple[str, float] | None:
    """``(variant, pooled corrupted accuracy)`` of a report with robustness rows (``top1`` first); else None."""
    for variant in ROBUSTNESS_VARIANTS:
        pooled = report_value(report, "pooled_corruption_accuracy", variant)
        if pooled is not None:
            return variant, pooled
    return None


def _heuillet(suites: Mapping[str, Mapping[str, Any]]) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series, float]:
    """The voter matrix, Sum and Borda with their ranks, MAC per dataset and its nanmean."""
    names = list(suites)
    rows = [
        (name, dataset, type_, value)
        for name in names
        for (dataset, type_), value in perturbation_accuracies(suites[name]).items()
    ]
    long = pd.DataFrame(rows, columns=["model", "dataset", "perturbation", "accuracy"])
    matrix = aggregates.voter_matrix_from_long(long, "model").reindex(names).rename_axis("model")
    table = pd.DataFrame(index=pd.Index(names, name="model"))
    if matrix.shape[1]:
        table["score_sum"] = aggregates.sum_score_of(matrix)
        table["sum_rank"] = aggregates.global_rank(table["score_sum"])
        table["borda"] = aggregates.borda_score_of(matrix)
        table["borda_rank"] = aggregates.global_rank(table["borda"])
        table["incomplete_datasets"] = aggregates.incomplete_datasets(matrix)
    per_dataset = aggregates.mac_per_dataset(matrix)
    defined = per_dataset.dropna()
    return matrix, table, per_dataset, float(defined.mean()) if len(defined) else np.nan


def _dataset_level(accuracies: pd.DataFrame) -> tuple[pd.DataFrame, float]:
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
        table["dataset_level_sum"] = aggregates.sum_score(long, "model", "dataset", ("accuracy",))
        table["dataset_level_sum_rank"] = aggregates.global_rank(table["dataset_level_sum"])
        table["dataset_level_borda"] = aggregates.borda_score(long, "model", "dataset", ("accuracy",))
        table["dataset_level_borda_rank"] = aggregates.global_rank(table["dataset_level_borda"])
    table["datasets"] = len(voters)
    wide = accuracies[voters].assign(group="suite")
    mac = (
        float(aggregates.mean_absolute_correlation(wide, "group", voters)["average"].iloc[0])
        if len(voters) > 1
        else np.nan
    )
    return table, mac


def _delta_rank(suites: Mapping[str, Mapping[str, Any]]) -> pd.Series | None:
    """ΔRank of Anzaku et al. 2024: rank(ImageNet top-1) − rank(PatchML ASMA ``exact``), the ASMA being the
    mean over every PatchML build of a run (one per seed; the paper averages five). ``attrs["seeds"]``:
    ``{model: [seed, ...]}`` of the builds averaged (None for a build whose seed is not recorded)."""
    top1, asma, seeds = {}, {}, {}
    for name, suite in suites.items():
        summary = suite["summary"]
        val = _id_top1(summary)
        found = []  # (seed, ASMA) per PatchML report; suite.json's summary ASMA is of the anzaku2024 reports
        for key, report in sorted(suite["datasets"].items()):
            value = summary["asma"].get(key, {}).get(DEFAULT_VARIANT)
            if report["meta"].get("dataset") == "patchml" and value is not None:
                found.append(((report["meta"].get("protocol") or {}).get("seed"), value))
        if val is not None and found:
            top1[name], asma[name] = val, float(np.mean([value for _, value in found]))
            seeds[name] = [seed for seed, _ in found]
    if len(top1) != len(suites) or len(top1) < 2:
        return None
    result = delta_rank(pd.Series(top1), pd.Series(asma))
    result.attrs["seeds"] = seeds
    return result


def _id_top1(summary: Mapping[str, Any]) -> float | None:
    return summary["quba"]["dimensions"].get("accuracy", {}).get("value")


def _id_lca(suite: Mapping[str, Any]) -> float | None:
    """ImageNet-val LCA (the first distance reported) of one run, from its datasets' reports."""
    for report in suite["datasets"].values():
        if report["meta"].get("dataset") == ID_DATASET:
            for row in report["metrics"]:
                if row["metric"] == "lca" and not row.get("subgroup") and row.get("value") is not None:
                    return float(row["value"])
    return None


def _on_the_line(suites: Mapping[str, Mapping[str, Any]]) -> dict[str, OnTheLine]:
    """Per OOD dataset key (not ImageNet val) every model has: ID LCA vs its top-1."""
    x = {name: _id_lca(suite) for name, suite in suites.items()}
    if any(value is None for value in x.values()) or len(x) < MIN_MODELS_ON_THE_LINE:
        return {}
    results = {}
    keys = set.intersection(*(set(suite["summary"]["accuracies"]) for suite in suites.values()))
    for key in sorted(keys):
        entries = [suites[name]["summary"]["accuracies"][key] for name in suites]
        datasets = {suites[name]["datasets"].get(key, {}).get("meta", {}).get("dataset") for name in suites}
        if datasets == {ID_DATASET} or any(e["metric"] != "top1_accuracy" for e in entries):
            continue
        y = [entry["value"] for entry in entries]
        if np.ptp(y) == 0 or np.ptp(list(x.values())) == 0:
            continue  # a constant axis has no line
        results[key] = analyze(list(x.values()), y, scale="minmax")
    return results


def leaderboard_markdown(board: Leaderboard) -> str:
    """The leaderboard as Markdown (plots referenced by file name)."""
    from ..presentation.suite_markdown import table

    lines = ["# Leaderboard", ""]
    if board.mixed_builds:
        lines += [
            "## Mixed builds",
            "",
            "These runs read different builds of the same dataset split (ranked anyway, `--allow-mixed-builds`); "
            "their numbers on it were not measured on the same data:",
            "",
        ]
        for (builder, config, split), by_build in board.mixed_builds.items():
            runs = "; ".join(
                f"{_build_name(sha)}: {', '.join(f'`{n}`' for n in names)}" for sha, names in by_build.items()
            )
            lines.append(f"- `{builder}` config `{config}` split `{split}`: {runs}")
        lines.append("")
    lines += ["## QUBA (Beyond Accuracy, Hesse et al. 2025)", ""]
    quba = _with_weights(board.quba, board)
    lines += table(list(quba.columns), quba.itertuples(index=False))
    for model, dims in board.missing.items():
        lines += [f"- `{model}` has no QUBA score; missing: " + ", ".join(f"`{d}` ({r})" for d, r in dims.items())]
    lines += ["", "![QUBA ranks](leaderboard_quba.png)", "", "## Accuracy per dataset", ""]
    acc = _with_weights(board.accuracies, board)
    lines += table(list(acc.columns), acc.itertuples(index=False))
    lines += _heuillet_markdown(board, table)
    lines += [
        "## Dataset-level Sum / Borda (one voter per dataset's headline accuracy; not Heuillet et al. 2025's voters)",
        "",
    ]
    level = _with_weights(board.dataset_level, board)
    lines += table(list(level.columns), level.itertuples(index=False))
    lines += [
        "Dataset-level MAC (mean absolute Spearman correlation between the datasets' headline accuracies across "
        f"models; not Heuillet et al. 2025's MAC): {board.dataset_level_mac:.4g}",
        "",
    ]
    if board.delta_rank is not None:
        lines += ["## ΔRank: ImageNet top-1 vs PatchML ASMA (Anzaku et al. 2024)", ""]
        seeds = board.delta_rank.attrs.get("seeds", {})
        delta = board.delta_rank.rename("ΔRank").to_frame()
        delta["PatchML seeds averaged"] = [len(seeds.get(model, [])) for model in delta.index]
        delta = _with_weights(delta, board)
        lines += table(list(delta.columns), delta.itertuples(index=False))
        kinds = {tuple(map(str, found)) for found in seeds.values()}
        if len(kinds) > 1:
            lines += [
                "The runs differ in PatchML seeds, so their mean ASMA is over different builds: "
                + "; ".join(f"`{model}`: {', '.join(map(str, found))}" for model, found in seeds.items()),
                "",
            ]
        elif kinds:
            lines += [f"PatchML ASMA is the mean over seeds {', '.join(next(iter(kinds)))} in every run.", ""]
    if board.lca_on_the_line:
        lines += ["## LCA-on-the-Line (Shi et al. 2024): ImageNet LCA vs OOD top-1, min-max scaled", ""]
        rows = [
            (
                key,
                r.correlations.r2,
                r.correlations.kendall_tau_b,
                r.correlations.pearson,
                r.mae_in_sample,
                r.correlations.n,
            )
            for key, r in board.lca_on_the_line.items()
        ]
        lines += table(("OOD dataset", "R²", "Kendall τ-b", "Pearson r", "MAE (in-sample)", "models"), rows)
        lines += [f"![{key}](lca_on_the_line_{_file_stem(key)}.png)" for key in board.lca_on_the_line]
    lines += significance_markdown(board.significance)
    return "\n".join(lines).rstrip() + "\n"


def _with_weights(frame: pd.DataFrame, board: Leaderboard) -> pd.DataFrame:
    """``frame`` (indexed by model) with the model and its weights as the first two columns."""
    rows = frame.reset_index(names="model")
    weights = board.models["weights"] if "weights" in board.models else pd.Series(dtype=object)
    rows.insert(1, "weights", rows["model"].map(weights))
    return rows


def _heuillet_markdown(board: Leaderboard, table) -> list[str]:
    lines = ["## Sum / Borda / MAC (Heuillet et al. 2025: voters are dataset × perturbation type)", ""]
    matrix = board.perturbation_accuracies
    if not matrix.shape[1]:
        return lines + [
            "No run reports perturbation types (a `perturbations` build, ImageNet-C or `--adversarial`): "
            "the paper's Sum, Borda and MAC need them.",
            "",
        ]
    datasets = list(board.mac_per_dataset.index)
    lines += [
        f"{matrix.shape[1]} voters (dataset, perturbation type) over {len(datasets)} "
        f"dataset{'s' if len(datasets) != 1 else ''}. Sum: per dataset the "
        "sum over its perturbation types, then over datasets; a dataset in which a model misses a perturbation "
        "type adds nothing to its Sum and Borda (`incomplete_datasets`), as in the authors' code. Borda "
        "(`robustgen_code`): each voter gives a model 1 + the number of models with a lower accuracy.",
        "",
    ]
    agg = _with_weights(board.aggregates, board)
    lines += table(list(agg.columns), agg.itertuples(index=False))
    rows = []
    for dataset in datasets:
        types = list(matrix[dataset].columns)
        shown = ", ".join(map(str, types)) if len(types) <= 6 else f"{types[0]}, …, {types[-1]}"
        complete = int(matrix[dataset].notna().all(axis=1).sum())
        rows.append((dataset, len(types), shown, complete, board.mac_per_dataset[dataset]))
    lines += table(("dataset", "perturbation types", "types", "models with all", "MAC"), rows)
    lines += [
        "MAC (Heuillet et al. 2025: mean absolute Spearman correlation between the perturbation types of a dataset "
        f"across models, averaged over the datasets where it is defined): {board.mac:.4g}",
        "",
    ]
    return lines


def _file_stem(key: str) -> str:
    return key.replace("/", "__")


def write_leaderboard(board: Leaderboard, folder: str | Path) -> list[Path]:
    """``leaderboard.md``, one CSV per table and the plots, into ``folder`` (created); returns the files."""
    from ...files import atomic_write_bytes
    from ..presentation.plots import lca_on_the_line_plot, quba_ranks_plot

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    tables = (
        ("quba", board.quba),
        ("accuracies", board.accuracies),
        ("aggregates", board.aggregates),
        ("dataset_level", board.dataset_level),
    )
    for name, frame in tables:
        written.append(folder / f"leaderboard_{name}.csv")
        atomic_write_bytes(written[-1], frame.to_csv(index_label="model").encode())
    written.append(folder / "leaderboard_models.csv")
    atomic_write_bytes(written[-1], board.models.to_csv(index_label="model").encode())
    written.append(folder / "leaderboard_perturbation_accuracies.csv")
    long = board.perturbation_accuracies.melt(ignore_index=False, value_name="accuracy").dropna()
    atomic_write_bytes(written[-1], long.reset_index().to_csv(index=False).encode())
    written.append(folder / "leaderboard_mac.csv")
    atomic_write_bytes(written[-1], board.mac_per_dataset.to_csv().encode())
    if board.delta_rank is not None:
        written.append(folder / "leaderboard_delta_rank.csv")
        atomic_write_bytes(written[-1], board.delta_rank.to_csv(index_label="model").encode())
    written.append(folder / "leaderboard_quba.png")
    quba_ranks_plot(board.quba, written[-1])
    for key, result in board.lca_on_the_line.items():
        written.append(
            lca_on_the_line_plot(
                result, folder / f"lca_on_the_line_{_file_stem(key)}.png", y_label=f"{key} top-1", title=key
            )
        )
    written += write_significance(board.significance, folder)
    written.append(folder / "leaderboard.md")
    atomic_write_bytes(written[-1], leaderboard_markdown(board).encode())
    return written


__all__ = [
    "Leaderboard",
    "describe_mixed_builds",
    "leaderboard",
    "leaderboard_markdown",
    "load_suites",
    "mixed_builds",
    "models_table",
    "perturbation_accuracies",
    "run_builds",
    "write_leaderboard",
]
