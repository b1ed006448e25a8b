"""Many models side by side, from their suite evaluations (``suite.json`` of ``imagenet-suite evaluate``).

:func:`leaderboard` reads the runs and computes every paper's tables, one module per paper
(:mod:`imagenet_suite.scoring.summary.papers`); :func:`leaderboard_markdown` writes one section per paper and
:func:`write_leaderboard` the Markdown, the CSVs and the figures:

* Beyond Accuracy (QUBA), Hesse et al. 2025 (:mod:`~imagenet_suite.scoring.summary.papers.hesse2025`):
  ``quba`` — the nine dimensions per model, QUBA score and rank (ranks 1 = best, ties share the best rank;
  ``quba_weights``: other weights than the paper's); a model missing a dimension gets no score and its
  missing dimensions are named; ``hesse2025`` — group comparisons with t-tests (Table 2, ``groups``), the
  Spearman matrix of the nine dimensions (Table 10, Fig. 4), the top five under other weightings (Fig. 5).
* ``accuracies`` — the headline accuracy of every dataset key (model × dataset).
* Heuillet et al. 2025 (:mod:`~imagenet_suite.scoring.summary.papers.heuillet2025`): ``heuillet2025`` — Sum,
  Borda and Mean Absolute Correlation over the paper's five perturbation types on ImageNet val (clean,
  AutoAttack ℓ∞ / ℓ2 / ℓ1 at its radii, common corruptions) as the paper and its code compute them;
  ``perturbation_accuracies``, ``aggregates``, ``mac_per_dataset``, ``mac`` — not the paper's threat model:
  the same aggregation over every (dataset, perturbation type) of the runs; ``dataset_level``,
  ``dataset_level_mac`` — not the paper's quantities: one voter per dataset key.
* NINCO, Bitterwolf et al. 2023 (:mod:`~imagenet_suite.scoring.summary.papers.bitterwolf2023`): ``ninco`` —
  models × detectors: mean FPR@95 and AUROC on NINCO, unit tests failed, the cleaned popular datasets.
* LCA-on-the-Line, Shi et al. 2024 (:mod:`~imagenet_suite.scoring.summary.papers.shi2024`): ``on_the_line`` —
  ImageNet LCA and ImageNet top-1 against OOD top-1 and top-5, all models and per group: R², Pearson,
  Kendall τ-b, Spearman, MAE; ``lca_on_the_line`` — its lines of LCA vs OOD top-1 over all models (≥ 3).
* OpenOOD v1.5, Zhang et al. 2023 (:mod:`~imagenet_suite.scoring.summary.papers.zhang2023`): ``openood_v15`` —
  near/far-OOD AUROC and FPR@95 per model and detector, from runs with ``--benchmark openood-v1.5-imagenet``.
* Anzaku et al. 2024 (:mod:`~imagenet_suite.scoring.summary.papers.anzaku2024`): ``anzaku2024`` — top-1,
  ReaL and ASMA per model; ``delta_rank`` — rank(ImageNet top-1 resized without a centre crop, the table's)
  − rank(PatchML ASMA, ``exact``, mean over the run's PatchML seeds), dense ranks, when every model has both.
* ``significance`` — with the run folders (``folders``): the 95 % intervals of each run's numbers and a paired
  test between adjacent models of the QUBA ranking and of every dataset's accuracy
  (:mod:`imagenet_suite.scoring.summary.significance`).

``leaderboard.md`` opens with a legend of the models (``## Models``): each name with its weights — the
tag its spec resolved to (``torchvision resnet50.IMAGENET1K_V1``, ``timm resnet50.a1_in1k``), or the file /
random init and the tag that chose its preprocessing, and the weights' sha256 (12 digits;
``leaderboard_models.csv`` has all of it, the tag, its source and location): two runs of one architecture
with other weights are two names (``models``), and no table repeats the weights. Column headers carry ↑
(higher is better) or ↓ (lower is better); a missing value is — everywhere, never ``nan``.

Each suite.json is read with :func:`~imagenet_suite.scoring.summary.suite_json.read_suite` (format and structure
checked). Runs that read different builds of one dataset split (same builder, config and split, another
sha256 of build_info.json, or a run whose suite.json records no build) are refused, naming the dataset
and the runs on each build, unless ``allow_mixed_builds``; then the Markdown lists the mixed builds first.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ...errors import ConfigError, RunFolderError, param
from ..metrics.lca_on_the_line import OnTheLine
from .groups import ModelGroups, metadata_groups
from .leaderboard_runs import UNREAD_ROWS, load_suites
from .papers import anzaku2024, bitterwolf2023, hesse2025, heuillet2025, shi2024, zhang2023
from .papers._shared import weights_legend, with_weights, write_csv
from .papers.heuillet2025 import perturbation_accuracies
from .significance import Significance, significance_markdown, significance_started, write_significance
from .suite_json import weights_label, with_rows

DatasetSplit = tuple[str, str, str]  # (builder, config, split)
MARKDOWN_LEGEND = (
    "↑: higher is better; ↓: lower is better (ranks: 1 is best). — : no value; why is said under the table, "
    "or in the section's text. `leaderboard.html` beside this file has the same tables, sortable, with the "
    "figures drawn in it.",
)
MixedBuilds = dict[DatasetSplit, dict[str | None, list[str]]]  # {split: {build_info sha256 or None: [run names]}}


@dataclass
class Leaderboard:
    """The tables of :func:`leaderboard`, indexed by model name."""

    quba: pd.DataFrame
    accuracies: pd.DataFrame
    perturbation_accuracies: pd.DataFrame  # every (dataset, type) of the runs: one column per voter
    aggregates: pd.DataFrame  # over those: score_sum, sum_rank, borda, borda_rank, incomplete_datasets
    mac_per_dataset: pd.Series  # over those: the MAC of each dataset (NaN: fewer than two types)
    mac: float  # their average over the datasets (nanmean)
    dataset_level: pd.DataFrame  # not the paper's: one voter per dataset key's headline accuracy
    dataset_level_mac: float  # not the paper's MAC: between datasets' headline accuracies
    delta_rank: pd.Series | None
    lca_on_the_line: dict[str, OnTheLine] = field(default_factory=dict)  # ALL models, ImageNet LCA vs OOD top-1
    missing: dict[str, dict[str, str]] = field(default_factory=dict)  # model -> {dimension: reason}
    mixed_builds: MixedBuilds = field(default_factory=dict)  # ranked anyway (allow_mixed_builds)
    models: pd.DataFrame = field(default_factory=pd.DataFrame)  # per model: its weights (models_table)
    hesse2025: hesse2025.Hesse2025 | None = None  # Table 2, Table 10, Fig. 5 of Beyond Accuracy
    heuillet2025: heuillet2025.Heuillet2025 | None = None  # the paper's five types on ImageNet: Sum, Borda, MAC
    ninco: bitterwolf2023.NincoTables | None = None  # NINCO's models x detectors tables
    on_the_line: shi2024.OnTheLineTables | None = None  # LCA-on-the-Line's statistics, all and per group
    anzaku2024: pd.DataFrame = field(default_factory=pd.DataFrame)  # top-1 / ReaL / ASMA per model
    openood_v15: pd.DataFrame = field(default_factory=pd.DataFrame)  # OpenOOD v1.5's benchmark rows (long)
    significance: Significance | None = None  # intervals and adjacent-rank tests (with the run folders)
    reference: dict[str, Any] = field(default_factory=dict)  # {paper: reference_rows.ReferenceSection}: --reference
    groups: ModelGroups | None = None  # the group tables' groups: --groups, else the models' metadata


def models_table(suites: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Per model (index): ``weights`` (:func:`~imagenet_suite.scoring.summary.suite_json.weights_label`, sha256
    in 12 digits), ``weights_sha256``, and the ``weights_source`` record's kind, library, architecture,
    tag, requested tag, loaded, location, seed, and the family and pretraining data the library states (empty for
    a suite.json before format 3, which records no tag; family and pretraining also before they were recorded)."""
    fields = (
        "kind",
        "library",
        "architecture",
        "tag",
        "requested",
        "loaded",
        "location",
        "seed",
        "family",
        "pretraining",
    )
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


def leaderboard(
    suites: Mapping[str, Mapping[str, Any]],
    allow_mixed_builds: bool = False,
    *,
    quba_weights: Mapping[str, float] | None = None,
    groups: ModelGroups | None = None,
    folders: Mapping[str, str | Path] | None = None,
    reference: Sequence[str] = (),
    allow_protocol_mismatch: bool = False,
    lca_baselines: bool = False,
) -> Leaderboard:
    """All tables for ``{model name: suite.json content}`` (at least one model); with ``folders`` (``{model
    name: run folder}``) also the intervals and paired tests, read from the run folders.

    ``reference``: papers (keys of :data:`imagenet_suite.reference.PAPERS`, or comma-separated lists of them)
    among whose published models the runs are placed (:func:`~imagenet_suite.scoring.summary.reference_rows.reference_sections`:
    ConfigError naming an unknown one; RunFolderError for a run whose protocol differs from the paper's, unless
    ``allow_protocol_mismatch``, which places it with what differs in its row).

    ``quba_weights``: QUBA weights by dimension overriding the paper's (Fig. 5; ConfigError naming an unknown
    dimension or weights summing to 0); ``groups``: the models' groups for Beyond Accuracy's Table 2 and
    LCA-on-the-Line's per-group rows and Heuillet et al.'s MAC per group (ConfigError naming a row whose model
    is not among ``suites``); None: the groups the models' metadata states (:func:`~.groups.metadata_groups`).
    RunFolderError when the runs read different builds of one dataset split (:func:`mixed_builds`),
    unless ``allow_mixed_builds``. ``lca_baselines`` (with ``folders``): LCA-on-the-Line's AC and
    Agreement-on-the-Line baselines from the runs' outputs files."""
    if not suites:
        raise ConfigError("a leaderboard needs at least one run")
    suites = {name: with_rows(suite, name) for name, suite in suites.items()}
    mixed = mixed_builds(suites)
    if mixed and not allow_mixed_builds:
        raise RunFolderError(describe_mixed_builds(mixed) + f"; pass {param('allow_mixed_builds')} to rank them anyway")
    if groups is not None:
        groups.check_models(suites)
    else:
        groups = metadata_groups(suites)
    placed = _placed(suites, folders, reference, allow_protocol_mismatch) if reference else {}
    hesse2025.resolve_weights(quba_weights)  # a bad weight fails before any table
    quba, missing = hesse2025.quba_ranking(suites, quba_weights)
    accuracies = _accuracies(suites)
    tests = (
        significance_started(suites, folders, quba, accuracies, allow_mixed_builds)
        if folders
        else contextlib.nullcontext(lambda: None)
    )
    with tests as tested:  # with two CPUs, the paired tests run in worker processes while the tables are built
        matrix, scores, per_dataset, mac = heuillet2025.aggregates(suites)
        dataset_level, dataset_level_mac = heuillet2025.dataset_level(accuracies)
        on_the_line = shi2024.tables(suites, groups, folders if lca_baselines else None)
        delta = anzaku2024.delta_rank(suites)
        return Leaderboard(
            quba=quba,
            accuracies=accuracies,
            perturbation_accuracies=matrix,
            aggregates=scores,
            mac_per_dataset=per_dataset,
            mac=mac,
            dataset_level=dataset_level,
            dataset_level_mac=dataset_level_mac,
            delta_rank=delta,
            lca_on_the_line=on_the_line.lines if on_the_line is not None else {},
            missing=missing,
            mixed_builds=mixed,
            models=models_table(suites),
            hesse2025=hesse2025.analyses(quba, groups, quba_weights, published="hesse2025" in placed),
            heuillet2025=heuillet2025.paper_tables(suites, groups),
            ninco=bitterwolf2023.tables(suites),
            on_the_line=on_the_line,
            anzaku2024=anzaku2024.table(suites, delta),
            openood_v15=zhang2023.table(suites),
            significance=tested(),
            reference=placed,
            groups=groups,
        )


def _accuracies(suites: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """The headline accuracy of every dataset key (model x key, keys in sorted order)."""
    names = list(suites)
    accuracies = pd.DataFrame(
        {name: {k: v["value"] for k, v in suites[name]["summary"]["accuracies"].items()} for name in names}
    ).T.reindex(names)
    return accuracies[sorted(accuracies.columns)]


def _placed(
    suites: Mapping[str, Mapping[str, Any]],
    folders: Mapping[str, str | Path] | None,
    reference: Sequence[str],
    allow_protocol_mismatch: bool,
) -> dict[str, Any]:
    """The runs among the published models of each paper of ``reference``, with the runs' image-bootstrap
    replicates of QUBA (read from ``folders``) where they have them."""
    from .rank_uncertainty import run_replicates
    from .reference_rows import check_references, reference_sections

    papers = check_references(reference)
    replicates = (
        {"quba.score": run_replicates(suites, folders, "quba.score")} if folders and "hesse2025" in papers else {}
    )
    return reference_sections(suites, papers, allow_protocol_mismatch=allow_protocol_mismatch, replicates=replicates)


def runs_leaderboard(run_dirs: Sequence[str | Path], **options: Any) -> Leaderboard:
    """:func:`leaderboard` of run folders (``imagenet-suite leaderboard RUN_DIR...``): their suite.json
    (:func:`load_suites`), and the folders for the intervals and paired tests; ``options``: the other
    arguments of :func:`leaderboard` (``allow_mixed_builds``, ``quba_weights``, ``groups``, ``reference``,
    ``allow_protocol_mismatch``)."""
    suites = load_suites(run_dirs)
    return leaderboard(suites, folders=dict(zip(suites, map(Path, run_dirs), strict=True)), **options)


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


def leaderboard_markdown(board: Leaderboard) -> str:
    """The leaderboard as Markdown (plots referenced by file name): mixed builds, then one section per paper."""
    from ..presentation.suite_markdown import table

    lines = ["# Leaderboard", "", *MARKDOWN_LEGEND, ""]
    lines += weights_legend(board.models)
    if board.groups is not None:
        lines += [f"Groups of models (the group tables): from {board.groups.source}.", ""]
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
    analyses = board.hesse2025 if board.hesse2025 is not None else hesse2025.analyses(board.quba)
    lines += hesse2025.markdown(board.quba, board.missing, analyses, board.models)
    lines += _reference_markdown(board, "hesse2025")
    lines += ["## Accuracy per dataset", ""]
    acc = with_weights(board.accuracies.rename(columns=lambda key: f"{key} ↑"), board.models)
    lines += table(list(acc.columns), acc.itertuples(index=False))
    lines += heuillet2025.markdown(board)
    lines += bitterwolf2023.markdown(board.ninco, board.models)
    lines += _reference_markdown(board, "bitterwolf2023")
    lines += shi2024.markdown(board.on_the_line)
    lines += _reference_markdown(board, "shi2024")
    lines += anzaku2024.markdown(board.anzaku2024, board.delta_rank, board.models)
    lines += _reference_markdown(board, "anzaku2024")
    lines += zhang2023.markdown(board.openood_v15)
    lines += significance_markdown(board.significance)
    return "\n".join(lines).rstrip() + "\n"


def _reference_markdown(board: Leaderboard, paper: str) -> list[str]:
    """The runs among ``paper``'s published models (``--reference``), under the paper's section."""
    if paper not in board.reference:
        return []
    from .reference_rows import markdown

    return markdown(board.reference[paper])


def write_leaderboard(board: Leaderboard, folder: str | Path) -> list[Path]:
    """``leaderboard.md``, one CSV per table and the figures, into ``folder`` (created); returns the files,
    ``leaderboard.md`` last."""
    from ...files import atomic_write_bytes

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    analyses = board.hesse2025 if board.hesse2025 is not None else hesse2025.analyses(board.quba)
    written = hesse2025.write(board.quba, analyses, folder)
    write_csv(folder, "accuracies", board.accuracies, written)
    write_csv(folder, "models", board.models, written)
    written += heuillet2025.write(board, folder)
    written += bitterwolf2023.write(board.ninco, folder)
    written += shi2024.write(board.on_the_line, folder)
    written += anzaku2024.write(board.anzaku2024, board.delta_rank, folder)
    written += zhang2023.write(board.openood_v15, folder)
    written += write_significance(board.significance, folder)
    if board.reference:
        from .reference_rows import write as write_reference

        for section in board.reference.values():
            written += write_reference(section, folder)
    written.append(folder / "leaderboard.md")
    atomic_write_bytes(written[-1], leaderboard_markdown(board).encode())
    return written


__all__ = [
    "UNREAD_ROWS",
    "Leaderboard",
    "ModelGroups",
    "describe_mixed_builds",
    "leaderboard",
    "leaderboard_markdown",
    "load_suites",
    "mixed_builds",
    "models_table",
    "perturbation_accuracies",
    "run_builds",
    "runs_leaderboard",
    "write_leaderboard",
]
