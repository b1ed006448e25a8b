"""``leaderboard.html``: a leaderboard (:mod:`imagenet_suite.scoring.summary.leaderboard`) as one self-contained
page beside ``leaderboard.md``.

Sections: every headline number of every run with its 95 % interval, direction and paper (one sortable long
table, :func:`~imagenet_suite.scoring.presentation.html_run.headline_rows`); then per paper its tables (the
numbers of ``leaderboard.md``, unrounded, sortable) and its figures (the QUBA ranking, the radar of the nine
dimensions and the Spearman matrix of Beyond Accuracy, the shape bias per category of Geirhos et al. 2019,
NINCO's Figs. 4, 5 and 7, Heuillet et al.'s Borda and Sum, Anzaku et al.'s ΔRank, LCA-on-the-Line's lines —
one module per paper in :mod:`.figures`), drawn afresh as inline SVG; NINCO's FPR@95 tables, its FPR@95 per OOD
class and model, and ImageNet-C's CE per corruption and model as tables shaded by value; a figure without data is not drawn: the page says what is missing and which command adds it; the intervals and
paired tests of adjacent ranks; provenance: the models' weights (the legend of every model name), the
builds the runs read, their conventions and the versions.

:func:`write_leaderboard_html` also writes ``leaderboard_runs.json`` (the run folders and the options of
the leaderboard), from which :func:`rewrite_leaderboard_html` (``imagenet-suite report LEADERBOARD_DIR``)
computes the page again; :func:`runs_in` finds the run folders of a folder of runs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ...errors import RunFolderError
from ...files import atomic_write_bytes
from ..metrics.quba import DIMENSIONS
from ..summary.leaderboard import Leaderboard, leaderboard, load_suites, run_builds
from ..summary.papers.bitterwolf2023 import OVERLAP_PARTS, overlap_wide
from ..summary.papers.heuillet2025 import EFFECTS_TEXT, FIG5_TEXT, published_fig5, shows_fig5
from ..summary.quba import attack_convention_of
from ..summary.suite_json import PARALLEL_FROM, SUITE_JSON, with_rows
from .figures import anzaku2024 as anzaku_figures
from .figures import bitterwolf2023 as ninco_figures
from .figures import geirhos2019 as shape_figures
from .figures import hendrycks2019 as imagenet_c_figures
from .figures import hesse2025 as hesse_figures
from .figures import heuillet2025 as heuillet_figures
from .figures import shi2024 as shi_figures
from .html import DOWN, UP, Figure, Page, Section, Table, drawn, figures_in_processes, render, shaded_matrix
from .html_run import HEADLINE_COLUMNS, direction, headline_rows
from .plots import correlation_heatmap, quba_ranks_plot
from .shading import Shading

LEADERBOARD_HTML = "leaderboard.html"
RUNS_JSON = "leaderboard_runs.json"
RUNS_FORMAT = "imagenet-suite.leaderboard-runs/1"
LEADERBOARD = "`imagenet-suite leaderboard RUN_DIR... --out DIR`"
QUBA_DIRECTIONS = {name: direction(("quba", "dimensions", name)) for name in DIMENSIONS}


def _by_model(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.reset_index(names="model") if frame.index.name in (None, "model") else frame.reset_index()


def _headline_section(suites: Mapping[str, Mapping[str, Any]]) -> Section:
    parts = [headline_rows(suite["summary"]).assign(model=name) for name, suite in suites.items()]
    frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=HEADLINE_COLUMNS + ["model"])
    frame = frame[["model", *HEADLINE_COLUMNS]]
    note = (
        "Every number each run's suite.md shows, one row per model and number. Click a header to sort. "
        "95 % intervals: percentile bootstrap over the images (evaluate --bootstrap); none of the papers reports one."
    )
    return Section("Headline numbers", "", [], [Table("Every headline number of every run", frame, note=note)])


def _hesse_section(board: Leaderboard) -> Section:
    quba = _by_model(board.quba)
    directions = {**QUBA_DIRECTIONS, "quba": UP, "quba_rank": DOWN, "quba_autoattack": UP, "quba_autoattack_rank": DOWN}
    notes = [f"{model} has no QUBA score; missing: " + "; ".join(f"{d} ({why})" for d, why in dims.items())
             for model, dims in board.missing.items()]  # fmt: skip
    tables = [Table("QUBA: the nine dimensions, score and rank (Table 12)", quba, directions)]
    figures = []
    scored = board.quba["quba"].notna().sum()
    if scored:
        figures.append(drawn("QUBA ranking", quba_ranks_plot, board.quba))
    else:
        figures.append(Figure("QUBA ranking", missing="no model has all nine QUBA dimensions: evaluate each model on "
                              "Beyond Accuracy's datasets (`imagenet-suite evaluate MODEL --protocol hesse2025 ...`), "
                              f"then {LEADERBOARD}"))  # fmt: skip
    figures.append(hesse_figures.radar(board))
    figures += hesse_figures.appendix(board)  # Figs. 13 and 14
    analyses = board.hesse2025
    if analyses is not None:
        if len(analyses.groups):
            tables.append(
                Table(
                    "Group comparisons (Table 2)",
                    analyses.groups,
                    note="stars: *** p < 0.05, "
                    "** p < 0.1, * p < 0.2 (two-sided Student's t-test against the setup's first group)",
                )
            )
        rho = analyses.correlations
        if rho.notna().to_numpy().any():
            long = rho.stack(future_stack=True).rename("rho").to_frame()
            long["p_value"] = analyses.correlation_p.stack(future_stack=True)
            long["models"] = analyses.correlation_models.stack(future_stack=True)
            long = long.rename_axis(["dimension a", "dimension b"]).reset_index()
            tables.append(Table("Spearman correlations of the nine dimensions (Table 10)", long))
            figures.append(
                drawn("Spearman correlations (Fig. 4)", correlation_heatmap, rho, analyses.correlation_p,
                      title="QUBA dimensions (Spearman ρ; crossed out: p > 0.05)")
            )  # fmt: skip
        else:
            figures.append(Figure("Spearman correlations (Fig. 4)", missing="every entry needs at least three models "
                                  "with both dimensions (and not constant): evaluate more models on Beyond Accuracy's "
                                  f"datasets, then {LEADERBOARD}"))  # fmt: skip
        if len(analyses.weightings):
            tables.append(Table("Top five under other weightings (Fig. 5)", analyses.weightings, {"quba": UP}))
        if len(analyses.autoattack_groups):
            tables.append(Table("Adversarial robustness vs AutoAttack per group (Table 7)", analyses.autoattack_groups))
    return Section("Beyond Accuracy (QUBA)", "Hesse et al. 2025", notes, tables, figures)


def _accuracy_section(board: Leaderboard) -> Section:
    frame = _by_model(board.accuracies)
    directions = dict.fromkeys(board.accuracies.columns, UP)
    table = Table("Headline accuracy per dataset", frame, directions, percent=list(board.accuracies.columns))
    return Section("Accuracy per dataset", "", [], [table])


def _shape_bias_section(suites: Mapping[str, Mapping[str, Any]]) -> Section:
    notes = [
        f"The human points: {shape_figures.HUMANS}, from model-vs-human's raw trials (reference table "
        f"`{shape_figures.HUMAN_TABLE}`), pooled over the observers as model-vs-human's plot pools them."
    ]
    return Section("Shape bias", "Geirhos et al. 2019", notes, [], [shape_figures.shape_bias(suites)])


def _imagenet_c_section(suites: Mapping[str, Mapping[str, Any]]) -> Section | None:
    """The CE per corruption and model, when a run has ImageNet-C (no section otherwise)."""
    if not any((suite.get("summary") or {}).get("imagenet_c") for suite in suites.values()):
        return None
    notes = ["Each model's mCE is the mean of its column (AlexNet = 1), as each run's suite.md gives it."]
    frame, which = imagenet_c_figures.ce_shown(suites)
    if frame.empty:
        return Section("ImageNet-C", "Hendrycks & Dietterich 2019", [*notes, f"Not shown: {imagenet_c_figures.NO_CE}."])
    note = " ".join(filter(None, (which, "Shaded green below AlexNet's CE (1), red above.")))
    table = shaded_matrix(imagenet_c_figures.CE, frame, "corruption", note, percent=False,
                          shading=imagenet_c_figures.ce_shading(frame))  # fmt: skip
    return Section("ImageNet-C", "Hendrycks & Dietterich 2019", notes, [table])


def _heuillet_section(board: Leaderboard) -> Section:
    tables, notes, figures = [], [], []
    paper = board.heuillet2025
    score_directions = {"score_sum": UP, "borda": UP, "sum_rank": DOWN, "borda_rank": DOWN}
    if paper is not None and not paper.accuracies.empty:
        shown = _by_model(paper.accuracies.join(paper.scores))
        reasons = {
            (row, column): why
            for row, model in enumerate(shown["model"])
            for column, why in paper.missing.get(model, {}).items()
        }
        directions = {**dict.fromkeys(paper.accuracies.columns, UP), **score_directions}
        note = "A model lacking a type is neither ranked nor a voter (hover a — for why)."
        tables.append(Table("Sum / Borda on the paper's five perturbation types", shown, directions, note=note,
                            reasons=reasons))  # fmt: skip
        mac = "—" if math.isnan(paper.mac) else f"{paper.mac:.4g}"
        notes.append(f"MAC over the {len(paper.ranked)} ranked model(s): {mac}.")
        figures.append(heuillet_figures.borda_bars(board))
    if paper is not None and len(paper.group_mac):
        tables.append(
            Table("MAC per group of models (Table 4)", paper.group_mac, note=f"Groups from {paper.groups_source}.")
        )
        tables.append(Table("Effects of the groups on Borda (Figs. 4 and 3)", paper.main_effects, note=EFFECTS_TEXT))
        tables.append(Table("Nested effects on Borda (Fig. 3)", paper.nested_effects))
        figures.append(heuillet_figures.effects_bars(board))
    if shows_fig5(board):
        tables.append(Table("Odds ratio of TRADES outperforming Classic AT (Fig. 5)", published_fig5(), note=FIG5_TEXT))
        figures.append(heuillet_figures.odds_ratio_bars(published_fig5()))
    if board.aggregates.shape[1]:
        tables.append(Table("Sum / Borda over every (dataset, perturbation type) of the runs (not the paper's "
                            "threat model)", _by_model(board.aggregates), score_directions))  # fmt: skip
    else:
        notes.append("No run reports perturbation types: evaluate with a `perturbations` build, ImageNet-C or "
                     "`--adversarial N`.")  # fmt: skip
    return Section("Robust generalization: Sum, Borda, MAC", "Heuillet et al. 2025", notes, tables, figures)


def _ninco_section(board: Leaderboard, suites: Mapping[str, Mapping[str, Any]]) -> Section:
    ninco = board.ninco
    if ninco is None:
        return Section("NINCO", "Bitterwolf et al. 2023", ["No run has a NINCO report: evaluate with the `ninco` "
                       f"configs `ninco`, `unit_tests`, `popular_subsamples`, then {LEADERBOARD}."])  # fmt: skip
    tables = []
    without_21k, with_21k = (overlap_wide(ninco.overlap, part, list(ninco.accuracy.index)) for part in OVERLAP_PARTS)
    for name, frame, better in (
        ("Mean FPR@95 on NINCO (Table 3)", ninco.fpr95, DOWN),
        ("Mean AUROC on NINCO (Table 4)", ninco.auroc, UP),
        ("Cleaned popular OOD datasets: mean FPR@95 (Table 14)", ninco.popular_fpr95, DOWN),
        ("NINCO classes without ImageNet-21k overlap: mean FPR@95 (Table 19)", without_21k, DOWN),
        ("NINCO classes with ImageNet-21k overlap: mean FPR@95 (Table 20)", with_21k, DOWN),
    ):
        if frame.shape[1]:
            shown = _by_model(frame.join(ninco.accuracy.rename("ImageNet top-1")))
            columns = list(frame.columns)
            directions = {**dict.fromkeys(columns, better), "ImageNet top-1": UP}
            shading = Shading(columns) if better == DOWN else None  # the FPR@95 tables: darker is worse
            tables.append(Table(name, shown, directions, percent=[*columns, "ImageNet top-1"], shading=shading))
    if ninco.unit_tests_failed.shape[1]:
        failed = _by_model(ninco.unit_tests_failed)
        rules = ", ".join(ninco.unit_test_rules)
        tables.append(Table("OOD unit tests failed", failed, dict.fromkeys(ninco.unit_tests_failed.columns, DOWN),
                            note=f"A unit test fails when the detector's {rules}."))  # fmt: skip
    per_class = ninco_figures.per_class_runs(suites)  # the runs' per-class rows, read once for a table and Fig. 4
    notes = ["Percent, as the paper prints it; FPR@95 shaded from 0 (white) to 100 % (dark red)."]
    detector, classes = ninco_figures.per_class_models(per_class)
    if classes.empty:
        notes.append(f"Not shown: FPR@95 per OOD class: no run's NINCO report has per-class rows: evaluate with the "
                     f"`ninco` config of the ninco builder, then {LEADERBOARD}.")  # fmt: skip
    else:
        shown, having = classes.shape[1], sum(detector in per for per in per_class.values())
        which = f"the {shown} runs" if shown == having else f"the {shown} lowest by their mean of {having} runs"
        note = f"{detector}'s FPR@95 per OOD class: {which} with per-class rows of {detector}."
        tables.append(shaded_matrix(f"{ninco_figures.PER_CLASS} ({detector})", classes, "OOD class", note))
    figures = [ninco_figures.per_class_cdf(suites, per_class), ninco_figures.accuracy_scatter(board),
               ninco_figures.previous_scatter(board)]  # fmt: skip
    return Section("NINCO", "Bitterwolf et al. 2023", notes, tables, figures)


def _shi_section(board: Leaderboard, suites: Mapping[str, Mapping[str, Any]]) -> Section:
    result = board.on_the_line
    title, paper = "LCA-on-the-Line", "Shi et al. 2024"
    figures = shi_figures.lines(board)
    if result is None or not len(result.statistics):
        return Section(title, paper, [], [], figures)  # Fig. 11 needs the same runs: one note says what to add
    figures += shi_figures.within_dataset(suites)
    directions = {"r2": UP, "mae_in_sample": DOWN}
    tables = [Table("Correlation of ImageNet LCA / top-1 with OOD top-1 / top-5", result.statistics, directions)]
    for name, frame in (
        ("Table 3's AC and Agreement-on-the-Line baselines (MAE)", result.table3_baselines),
        ("Table 4: the LCA line over the latent hierarchies", result.over_hierarchies),
        ("Table 4, per hierarchy", result.per_hierarchy),
        ("Table 8: top-1 vs LCA within each dataset", result.within_dataset),
    ):
        if len(frame):
            tables.append(Table(name, frame))
    return Section(title, paper, [], tables, figures)


def _anzaku_section(board: Leaderboard, suites: Mapping[str, Mapping[str, Any]]) -> Section:
    frame = board.anzaku2024
    title, paper = "Top-1, ReaL, ASMA and ΔRank", "Anzaku et al. 2024"
    if not frame.shape[1]:
        return Section(title, paper, ["No run has a multi-label set scored under the `anzaku2024` protocol: "
                                      "evaluate with `imagenet_real` and `patchml` builds."])  # fmt: skip
    figures = [anzaku_figures.delta_rank_scatter(board), *anzaku_figures.figures(board, suites)]
    counts = {"PatchML seeds", "ΔRank"}
    percent = [c for c in frame.columns if c not in counts]
    directions = dict.fromkeys(percent, UP)
    tables = [Table("Tables 4–10 (resized, no centre crop)", _by_model(frame), directions, percent)]
    return Section(title, paper, [], tables, figures)


def _zhang_section(board: Leaderboard) -> Section:
    title, paper = "OpenOOD v1.5 ImageNet-1k", "Zhang et al. 2023"
    if not len(board.openood_v15):
        return Section(title, paper, ["No run was evaluated with `--benchmark openood-v1.5-imagenet`."])
    directions = {"fpr95_openood_v15": DOWN, "auroc": UP, "aupr_in": UP, "aupr_out": UP, "acc": UP, "fpr95": DOWN}
    percent = list(directions)
    note = "Every set of the benchmark; FPR@95 with OOD positive (OpenOOD v1.5) and, fpr95, with ID positive (NINCO)."
    return Section(title, paper, [], [Table("Near / far-OOD rows", board.openood_v15, directions, percent, note)])


def _reference_sections(board: Leaderboard) -> list[Section]:
    """``leaderboard --reference``: per paper, the runs among its published models, every row of each table
    (``source``: published / this run; ``protocol``: what differs from the paper's, placed anyway)."""
    sections = []
    for section in board.reference.values():
        notes = list(section.notes)
        notes += [
            f"`{run}` placed despite a protocol mismatch: {'; '.join(why)}" for run, why in section.mismatches.items()
        ]
        tables = [
            Table(
                name.replace("_", " "), frame.reset_index(drop=True) if "model" in frame.columns else _by_model(frame)
            )
            for name, frame in section.tables.items()
        ]
        sections.append(Section(f"Among the published models of {section.title}", section.title, notes, tables))
    return sections


def _significance_section(board: Leaderboard) -> Section | None:
    found = board.significance
    if found is None:
        return None
    notes = [f"{model}: no intervals ({why})" for model, why in found.absent.items()]
    tables = []
    if len(found.tests):
        note = "Paired test between each model and the next below it; p-values per pair, not corrected."
        tables.append(Table("Adjacent ranks", found.tests, note=note))
    return Section("Are the rank differences real?", "", notes, tables)


def _provenance_section(board: Leaderboard, suites: Mapping[str, Mapping[str, Any]]) -> Section:
    from ... import __version__

    legend = Table("Models: the weights behind each name", _by_model(board.models))
    builds: dict[tuple[str, str, str, str | None], list[str]] = {}
    for name, suite in suites.items():
        for (builder, config, split), shas in run_builds(suite).items():
            for sha in shas:
                builds.setdefault((builder, config, split, sha), []).append(name)
    rows = [(b, c, s, sha[:12] if sha else None, len(names), ", ".join(names[:3]) + (" …" if len(names) > 3 else ""))
            for (b, c, s, sha), names in sorted(builds.items(), key=lambda kv: tuple(map(str, kv[0])))]  # fmt: skip
    build_table = Table(
        "Dataset builds read",
        pd.DataFrame(rows, columns=["builder", "config", "split", "build sha256", "runs", "first runs"]),
        note="build sha256: the first 12 hex digits of the sha256 of the build's build_info.json; — : not recorded.",
    )
    conventions = pd.DataFrame(
        [
            (
                name,
                attack_convention_of(suite["summary"]["adversarial"]) if suite["summary"].get("adversarial") else None,
                suite["summary"]["quba"].get("probabilities") or None,
                "; ".join(f"{k}: {v}" for k, v in (suite["summary"].get("protocols") or {}).items()) or None,
                suite.get("imagenet_suite"),
            )
            for name, suite in suites.items()
        ],
        columns=["model", "attack convention", "zero-shot probabilities", "protocols", "imagenet-suite"],
    )
    versions = pd.DataFrame([("imagenet-suite (this page)", __version__), *_library_versions()],
                            columns=["package", "version"])  # fmt: skip
    tables = [legend, build_table, Table("Conventions of each run", conventions), Table("Versions", versions)]
    notes = []
    if board.mixed_builds:
        notes.append(f"{len(board.mixed_builds)} dataset split(s) read in different builds by different runs "
                     "(ranked anyway: --allow-mixed-builds); see leaderboard.md's Mixed builds.")  # fmt: skip
    return Section("Provenance", "", notes, tables)


def _library_versions() -> list[tuple[str, str]]:
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in ("torch", "timm", "numpy", "pandas", "scipy", "matplotlib"):
        try:
            found.append((name, version(name)))
        except PackageNotFoundError:
            continue
    return found


def leaderboard_page(board: Leaderboard, suites: Mapping[str, Mapping[str, Any]]) -> Page:
    """The page of a leaderboard (``board``) of the runs ``suites`` (``{model name: suite.json content}``, its rows as
    :func:`~imagenet_suite.scoring.summary.suite_json.read_suite` gives them or as format 4 stores them). Within
    :func:`~imagenet_suite.scoring.presentation.html.figures_in_processes`, its figures may still be being drawn
    (reading a :class:`~imagenet_suite.scoring.presentation.html.Figure`'s ``svg`` waits for it)."""
    suites = {name: with_rows(suite, name) for name, suite in suites.items()}
    sections = [
        _headline_section(suites),
        _hesse_section(board),
        _accuracy_section(board),
        _shape_bias_section(suites),
        *[section for section in [_imagenet_c_section(suites)] if section is not None],
        _heuillet_section(board),
        _ninco_section(board, suites),
        _shi_section(board, suites),
        _anzaku_section(board, suites),
        _zhang_section(board),
        *_reference_sections(board),
    ]
    significance = _significance_section(board)
    if significance is not None:
        sections.append(significance)
    sections.append(_provenance_section(board, suites))
    lead = f"{len(suites)} model(s) side by side; ↑: higher is better, ↓: lower is better; click a header to sort."
    return Page("imagenet-suite leaderboard", lead, sections)


def write_leaderboard_html(
    board: Leaderboard,
    suites: Mapping[str, Mapping[str, Any]],
    folder: str | Path,
    runs: Sequence[str | Path] | None = None,
    options: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``leaderboard.html`` into ``folder``; with ``runs`` (the run folders) also ``leaderboard_runs.json``
    (the folders, absolute, and ``options``: ``allow_mixed_builds``, ``quba_weights``, ``groups`` file) for
    :func:`rewrite_leaderboard_html`. Returns the page."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if runs is not None:
        record = {"format": RUNS_FORMAT, "runs": [str(Path(r).resolve()) for r in runs], **(options or {})}
        atomic_write_bytes(folder / RUNS_JSON, (json.dumps(record, indent=1) + "\n").encode())
    path = folder / LEADERBOARD_HTML
    with figures_in_processes(len(suites) >= PARALLEL_FROM):  # drawn on other CPUs while the tables are written
        text = render(leaderboard_page(board, suites))
    atomic_write_bytes(path, text.encode())
    return path


def runs_in(folder: str | Path) -> list[Path]:
    """The run folders (holding a suite.json) directly inside ``folder``, sorted by name."""
    return sorted(child for child in Path(folder).iterdir() if (child / SUITE_JSON).is_file())


def rewrite_leaderboard_html(folder: str | Path) -> Path:
    """``leaderboard.html`` again: of the runs and options ``leaderboard_runs.json`` in ``folder`` records (a
    leaderboard's output folder), else of the run folders inside ``folder`` (a folder of runs).
    RunFolderError when it is neither, or a recorded run folder is gone."""
    from ..summary.groups import read_groups

    folder = Path(folder)
    record_path = folder / RUNS_JSON
    if record_path.is_file():
        try:
            record = json.loads(record_path.read_text())
            runs, options = [Path(r) for r in record["runs"]], record
        except (ValueError, KeyError, TypeError) as err:
            raise RunFolderError(f"{record_path}: not a {RUNS_FORMAT} record ({err})") from err
        gone = [str(run) for run in runs if not (run / SUITE_JSON).is_file()]
        if gone:
            raise RunFolderError(f"{record_path}: the run folder {gone[0]} has no suite.json (moved or deleted?)"
                                 + (f" and {len(gone) - 1} more" if len(gone) > 1 else ""))  # fmt: skip
    else:
        runs, options = runs_in(folder), {}
        if not runs:
            raise RunFolderError(
                f"{folder}: neither a run folder (no {SUITE_JSON}), a leaderboard folder (no {RUNS_JSON}) nor a "
                "folder of run folders"
            )
    kwargs = {
        "allow_mixed_builds": bool(options.get("allow_mixed_builds")),
        "quba_weights": options.get("quba_weights"),
        "groups": read_groups(options["groups"]) if options.get("groups") else None,
    }
    suites = load_suites(runs)
    board = leaderboard(suites, folders=dict(zip(suites, runs, strict=True)), **kwargs)
    return write_leaderboard_html(board, suites, folder, runs, _recorded(kwargs, options))


def _recorded(kwargs: Mapping[str, Any], options: Mapping[str, Any]) -> dict[str, Any]:
    return {"allow_mixed_builds": kwargs["allow_mixed_builds"], "quba_weights": kwargs["quba_weights"],
            "groups": options.get("groups")}  # fmt: skip


__all__ = [
    "LEADERBOARD_HTML",
    "RUNS_JSON",
    "leaderboard_page",
    "rewrite_leaderboard_html",
    "runs_in",
    "write_leaderboard_html",
]
