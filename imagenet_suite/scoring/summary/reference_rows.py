"""Your runs among a paper's published models: ``imagenet-suite leaderboard RUN_DIR... --reference PAPER``.

A researcher who evaluates one model can see where it stands among the models a paper measured, from the
paper's published per-model results (the reference zoos, :mod:`imagenet_suite.reference`), without running
them. :func:`reference_sections` places the runs in the tables of each paper named (the keys of
:data:`~imagenet_suite.reference.PAPERS`); every row says whether it is ``published`` (the paper's value,
unchanged) or ``this run`` (column ``source``):

* ``hesse2025`` — Beyond Accuracy's Table 12: each run's QUBA (the paper's weights, μ and σ, whatever
  ``--quba-weights`` says) and its rank among the 326 published QUBA scores (Table 12's two decimals; ranks 1 =
  best, ties share the best rank), with its rank interval and P(rank ≤ 1, 5, 10) from a bootstrap over the
  published model pool (:func:`~imagenet_suite.scoring.summary.rank_uncertainty.score_ranks`, pool = the 326:
  each run ranked among 326 models drawn with replacement; with the runs' image-bootstrap replicates of
  ``quba.score`` over the images too).
* ``shi2024`` — LCA-on-the-Line: per shifted set, the line of OOD top-1 on the information-based ImageNet LCA
  fitted on the 75 published models, each run's predicted and measured OOD top-1 (residual, and a 95 % interval
  of the prediction over the published pool, :func:`~imagenet_suite.scoring.summary.rank_uncertainty.line_uncertainty`),
  and the line's R² with its interval.

Each paper module states what a run must match (``reference_mismatches``: weights tag recorded, the paper's
preprocessing and conventions, complete inputs); a run that does not is refused (RunFolderError naming the run
and what differs), or with ``allow_protocol_mismatch`` placed with what differs in its ``protocol`` cell.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...errors import ConfigError, RunFolderError, param, unknown_choice
from ...reference import PAPERS, REFERENCE_VERSION, load
from ..metrics.quba import DIMENSIONS, QUBA_ATTACK_CONVENTION, quba_score
from .papers import anzaku2024, bitterwolf2023, hesse2025, shi2024
from .quba import attack_convention_of, geometric_mean
from .rank_uncertainty import Resampling, line_uncertainty, score_ranks
from .reference_ninco_anzaku import (
    anzaku2024_markdown,
    anzaku2024_section,
    bitterwolf2023_markdown,
    bitterwolf2023_section,
)
from .reference_tables import (
    PUBLISHED,
    THIS_RUN,
    ReferenceSection,
    check_names,
    number_text,
    protocol_text,
    shown_rows,
)
from .reports import OBJECTNET_HEAD_KEY
from .suite_json import weights_label

RANK_COLUMNS = ("rank", "rank_low", "rank_high", "rank_median", "p_rank_le_1", "p_rank_le_5", "p_rank_le_10")
SHI2024_SETS = shi2024.REFERENCE_SETS
"""LCA-on-the-Line's five shifted sets, by our builder names (the reference data's ``ood_dataset``)."""


def check_references(references: Sequence[str]) -> tuple[str, ...]:
    """The paper keys of ``references`` (each a key of :data:`~imagenet_suite.reference.PAPERS` or several,
    comma-separated), each once, in order; ConfigError naming ``reference`` for an unknown one.

    Example:
        >>> check_references(["hesse2025,shi2024", "hesse2025"])
        ('hesse2025', 'shi2024')
        >>> check_references(["hese2025"])
        Traceback (most recent call last):
        ...
        imagenet_suite.errors.ConfigError: reference: no reference zoo 'hese2025'; did you mean 'hesse2025'?
    """
    found: list[str] = []
    for item in references:
        for name in (part.strip() for part in str(item).split(",")):
            if name not in PAPERS:
                raise ConfigError(
                    f"{param('reference')}: no reference zoo {name!r}; {unknown_choice(name, PAPERS, 'reference zoos')}"
                )
            if name not in found:
                found.append(name)
    return tuple(found)


def reference_sections(
    suites: Mapping[str, Mapping[str, Any]],
    references: Sequence[str],
    *,
    allow_protocol_mismatch: bool = False,
    replicates: Mapping[str, pd.DataFrame | None] | None = None,
    resampling: Resampling | None = None,
) -> dict[str, ReferenceSection]:
    """The runs ``suites`` (``{model name: suite.json content}``) placed among the published models of each of
    ``references`` (:func:`check_references`), by paper key. ``replicates``: ``{number path: [B, runs]
    image-bootstrap replicates}`` (:func:`~imagenet_suite.scoring.summary.rank_uncertainty.run_replicates`),
    e.g. of ``quba.score``; ``resampling``: the bootstrap's settings (1000 resamples, seed 0, over images and
    the pool of published models by default). RunFolderError naming the first run whose protocol differs from a
    paper's, unless ``allow_protocol_mismatch``; ConfigError for a paper whose published rows cannot hold a run."""
    resampling = resampling or Resampling()
    replicates = replicates or {}
    sections = {}
    for reference in check_references(references):
        if reference not in PLACERS:
            raise ConfigError(f"{param('reference')}: {reference}: {UNPLACED[reference]}")
        mismatches = _mismatches(reference, suites, allow_protocol_mismatch)
        sections[reference] = PLACERS[reference](suites, mismatches, replicates, resampling)
    return sections


def _mismatches(reference: str, suites: Mapping[str, Mapping[str, Any]], allow: bool) -> dict[str, list[str]]:
    check = CHECKS[reference]
    found = {name: issues for name, suite in suites.items() if (issues := check(suite))}
    if found and not allow:
        name, issues = next(iter(found.items()))
        more = f" (and {len(found) - 1} more run(s): {', '.join(map(repr, list(found)[1:]))})" if len(found) > 1 else ""
        raise RunFolderError(
            f"run {name!r} was not evaluated under the protocol of {PAPERS[reference]}: {'; '.join(issues)}{more}; "
            f"pass {param('allow_protocol_mismatch')} to place it among the published models with this flag"
        )
    return found


# ------------------------------------------------------------------------------------ Hesse et al. 2025


def run_dimensions(suite: Mapping[str, Any]) -> dict[str, float]:
    """A run's nine QUBA dimensions (NaN: missing). A run attacked under another convention than
    ``hesse2025`` has no adversarial dimension in its suite.json; here it gets the one its attacks give
    (the geometric mean of FGSM and PGD accuracy over clean accuracy), on another scale than QUBA's μ/σ, for
    a row placed with ``allow_protocol_mismatch`` (its ``protocol`` cell says so)."""
    summary = suite["summary"]
    dims = summary["quba"]["dimensions"]
    values = {name: float(dims[name]["value"]) if dims.get(name, {}).get("value") is not None else math.nan
              for name in DIMENSIONS}  # fmt: skip
    attacked = summary.get("adversarial") or {}
    if (
        math.isnan(values["adversarial_robustness"])
        and attacked
        and attack_convention_of(attacked) != QUBA_ATTACK_CONVENTION
        and {"clean_accuracy", "fgsm_accuracy", "pgd_accuracy"} <= set(attacked)
        and attacked["clean_accuracy"]
    ):
        clean = float(attacked["clean_accuracy"])
        values["adversarial_robustness"] = geometric_mean(
            [float(attacked["fgsm_accuracy"]) / clean, float(attacked["pgd_accuracy"]) / clean]
        )
    return values


def hesse2025_section(
    suites: Mapping[str, Mapping[str, Any]],
    mismatches: Mapping[str, list[str]],
    replicates: Mapping[str, pd.DataFrame | None],
    resampling: Resampling,
) -> ReferenceSection:
    """The runs' QUBA rows among Table 12's 326 (module docstring); one table, ``quba``: per model (index:
    Table 12's ``id`` for a published row, the run's name) ``source``, ``weights`` (a published row: Table 12's
    configuration), ``paper_rank`` (Table 12's), the nine dimensions, ``quba``, :data:`RANK_COLUMNS` and
    ``protocol``; by QUBA, best first (published ties in Table 12's order), runs without a score last."""
    zoo = load("hesse2025_table12")
    published = pd.DataFrame(
        {
            "source": PUBLISHED,
            "weights": "Table 12: " + zoo["architecture"] + ", " + zoo["train_data"] + ", " + zoo["paradigm"],
            "paper_rank": zoo["paper_rank"].astype(float),
            **{name: zoo[name].astype(float) for name in DIMENSIONS},
            "quba": zoo["quba"].astype(float),
            "protocol": "",
        }
    ).set_index(pd.Index(zoo["id"], name="model"))
    check_names(published.index, list(suites))
    rows = {}
    for name, suite in suites.items():
        dims = run_dimensions(suite)
        score = quba_score(dims) if not any(math.isnan(v) for v in dims.values()) else math.nan
        rows[name] = {
            "source": THIS_RUN,
            "weights": weights_label(suite),
            "paper_rank": math.nan,
            **dims,
            "quba": score,
            "protocol": protocol_text(mismatches, name),
        }
    runs = pd.DataFrame.from_dict(rows, orient="index", columns=list(published.columns))
    table = pd.concat([published, runs.rename_axis("model")])
    scored = table["quba"].dropna()
    draws = replicates.get("quba.score")
    if draws is not None:  # a run's replicates were computed with the weights it was evaluated with
        draws = draws[[name for name in draws.columns if name in scored.index and not mismatches.get(name)]]
    found = score_ranks(scored, draws if draws is not None and draws.shape[1] else None, resampling,
                        pool=list(published.index))  # fmt: skip
    table = table.join(found.table[list(RANK_COLUMNS)])
    table = table.sort_values(["quba", "paper_rank"], ascending=[False, True], na_position="last", kind="stable")
    table = table[[c for c in table.columns if c != "protocol"] + ["protocol"]]
    over = "the published model pool" + (" and the images (the runs' replicates)" if found.with_replicates else "")
    notes = [
        f"Each run's QUBA (the paper's weights, μ and σ) ranked among the {len(published)} QUBA scores of Table 12 "
        f"(reference data {REFERENCE_VERSION}; the published values unchanged, printed to two decimals). A run's "
        "rank is 1 + the published scores above it; a published row keeps its rank among the published (the runs "
        "do not move it; ties share the best rank). Rank interval: "
        f"{round(100 * resampling.level)} % over {resampling.resamples} resamples of {over} (seed "
        f"{resampling.seed}); P(rank ≤ k): the share of resamples.",
    ]
    tables = {"quba": table, "weightings": hesse2025_weightings(table)}
    section = ReferenceSection("hesse2025", PAPERS["hesse2025"], tables, notes=notes)
    section.shown["quba"] = shown_rows(table)
    section.shown["weightings"] = tables["weightings"]
    section.mismatches = dict(mismatches)
    return section


def hesse2025_weightings(table: pd.DataFrame) -> pd.DataFrame:
    """Fig. 5 with the runs: for each of :data:`~imagenet_suite.scoring.summary.papers.hesse2025.WEIGHTING_SETUPS`
    (the paper's weights, those of the named dimensions doubled) and each run with a QUBA, its QUBA and its rank
    among the published models' QUBA under the same weights, recomputed from their nine dimensions (the project
    page's values: Table 12 prints the paper's weights only), and the published model ranked first (``best``,
    ``best_quba``). ``table``: :func:`hesse2025_section`'s ``quba``."""
    base = hesse2025.resolve_weights(None)
    published = table[table["source"] == PUBLISHED]
    runs = table[(table["source"] == THIS_RUN) & table["quba"].notna()]
    rows = []
    for setup, doubled in hesse2025.WEIGHTING_SETUPS.items():
        weights = {name: value * (2 if name in doubled else 1) for name, value in base.items()}
        pool = np.asarray(quba_score(published[list(DIMENSIONS)].to_numpy(dtype=float), weights))
        best = int(np.argmax(pool))
        for name, row in runs.iterrows():
            score = float(quba_score(row[list(DIMENSIONS)].to_numpy(dtype=float), weights))
            rows.append({
                "setup": setup, "doubled": ", ".join(doubled), "model": name, "quba": score,
                "rank": int(1 + (pool > score).sum()), "best": published.index[best], "best_quba": float(pool[best]),
            })  # fmt: skip
    return pd.DataFrame(rows, columns=["setup", "doubled", "model", "quba", "rank", "best", "best_quba"])


# ------------------------------------------------------------------------------------- Shi et al. 2024


def shi2024_inputs(suite: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """A run's inputs to LCA-on-the-Line's lines: ``{shifted set: {id_top1, id_lca, ood_top1}}`` for each of
    :data:`SHI2024_SETS` it reports a top-1 for (the first key, sorted, whose report is of that builder; for a
    zero-shot model's ObjectNet its 113-way head, ``<key>@objectnet113``, as the leaderboard's LCA section
    takes it), ``id_top1`` its ImageNet-val accuracy (the QUBA dimension), ``id_lca`` the information-based LCA
    of its ImageNet-val report (the reference data's distance for every set); empty without an ImageNet-val LCA
    in ``info`` on the WordNet tree."""
    found = shi2024.id_lcas(suite)
    if found is None or "info" not in found[0] or found[1] != "wordnet":
        return {}
    accuracies = suite["summary"]["accuracies"]
    id_top1 = suite["summary"]["quba"]["dimensions"].get("accuracy", {}).get("value")
    inputs = {}
    for ood in SHI2024_SETS:
        keys = [
            key
            for key in sorted(accuracies)
            if not key.endswith(OBJECTNET_HEAD_KEY)
            and suite["datasets"].get(key, {}).get("meta", {}).get("dataset") == ood
            and accuracies[key].get("metric") == "top1_accuracy"
        ]
        if not keys:
            continue
        key = keys[0] + OBJECTNET_HEAD_KEY if keys[0] + OBJECTNET_HEAD_KEY in accuracies else keys[0]
        inputs[ood] = {
            "id_top1": math.nan if id_top1 is None else float(id_top1),
            "id_lca": found[0]["info"],
            "ood_top1": float(accuracies[key]["value"]),
        }
    return inputs


def shi2024_section(
    suites: Mapping[str, Mapping[str, Any]],
    mismatches: Mapping[str, list[str]],
    replicates: Mapping[str, pd.DataFrame | None],
    resampling: Resampling,
) -> ReferenceSection:
    """The runs among LCA-on-the-Line's 75 models (module docstring): ``predictions`` (long: ``ood_dataset``,
    model, ``source``, ``weights``, ``id_top1``, ``id_lca``, ``measured`` and ``predicted`` OOD top-1, its
    ``predicted_low`` / ``predicted_high``, ``residual``, ``p_below``, ``protocol``) and ``lines`` (per shifted
    set: ``models`` published, ``runs``, ``r2`` with ``r2_low`` / ``r2_high``, ``slope`` and ``intercept`` in
    accuracy units per bit). The line is fitted on the published models only; runs are predicted."""
    del replicates  # the LCA's image replicates are not recorded: the interval is over the published pool
    zoo = load("shi2024_results")
    inputs = {name: shi2024_inputs(suite) for name, suite in suites.items()}
    check_names(pd.Index(zoo["model"].unique()), list(suites))
    predictions, lines = [], []
    for ood in SHI2024_SETS:
        part = zoo[zoo["ood_dataset"] == ood].set_index("model")
        runs = {name: found[ood] for name, found in inputs.items() if ood in found}
        x = pd.concat([part["id_lca"], pd.Series({n: v["id_lca"] for n, v in runs.items()}, dtype=float)])
        y = pd.concat([part["ood_top1"], pd.Series({n: v["ood_top1"] for n, v in runs.items()}, dtype=float)])
        found = line_uncertainty(x, y, resampling=resampling, pool=list(part.index))
        (intercept, slope) = np.polynomial.polynomial.polyfit(part["id_lca"], part["ood_top1"], 1)
        lines.append(
            {"ood_dataset": ood, "models": len(part), "runs": len(runs), **found.r2, "slope": slope,
             "intercept": intercept}
        )  # fmt: skip
        id_top1 = pd.concat([part["id_top1"], pd.Series({n: v["id_top1"] for n, v in runs.items()}, dtype=float)])
        frame = found.table.assign(
            ood_dataset=ood,
            source=[THIS_RUN if name in runs else PUBLISHED for name in found.table.index],
            weights=[weights_label(suites[n]) if n in runs else part.loc[n, "group"] for n in found.table.index],
            id_top1=id_top1.to_numpy(),
            id_lca=x.to_numpy(),
            protocol=[protocol_text(mismatches, name) for name in found.table.index],
        )
        predictions.append(frame.sort_values("measured", ascending=False, kind="stable"))
    columns = ["ood_dataset", "source", "weights", "id_top1", "id_lca", "measured", "predicted", "predicted_low",
               "predicted_high", "residual", "p_below", "protocol"]  # fmt: skip
    table = pd.concat(predictions)[columns].rename_axis("model")
    lacking = [name for name, found in inputs.items() if not found]
    notes = [
        "Per shifted set, OOD top-1 against the information-based ImageNet LCA (the released CSVs' distance for "
        f"every set) fitted on the 75 published models (reference data {REFERENCE_VERSION}; OLS: the paper's "
        "min-max scaling does not change R² or a prediction in accuracy units); `residual` = measured − "
        f"predicted. Intervals: {round(100 * resampling.level)} % over {resampling.resamples} resamples of the "
        f"published model pool (seed {resampling.seed}); `p_below`: the share of resamples predicting more than "
        "was measured."
    ]
    if lacking:
        notes.append(
            "No ImageNet-val LCA in `info` on the WordNet tree, or none of the five shifted sets: "
            + ", ".join(f"`{name}`" for name in lacking)
        )
    section = ReferenceSection("shi2024", PAPERS["shi2024"], {"lines": pd.DataFrame(lines).set_index("ood_dataset"),
                               "predictions": table}, notes=notes, mismatches=dict(mismatches))  # fmt: skip
    section.shown["predictions"] = table[table["source"] == THIS_RUN]
    return section


# ------------------------------------------------------------------------------------- Markdown and files


def markdown(section: ReferenceSection | None) -> list[str]:
    """The section's part of ``leaderboard.md`` (under its paper's section); nothing for None."""
    if section is None:
        return []
    from ..presentation.suite_markdown import table

    lines = [f"### Among the published models ({section.title}; `--reference {section.reference}`)", ""]
    lines += [*section.notes, ""]
    if section.mismatches:
        lines += ["Placed with `--allow-protocol-mismatch`, though measured otherwise than the paper measured:", ""]
        lines += [f"- `{name}`: {'; '.join(issues)}" for name, issues in section.mismatches.items()] + [""]
    return lines + MARKDOWN[section.reference](section, table)


def hesse2025_markdown(section: ReferenceSection, table) -> list[str]:
    """The published top ten and the rows around each run's, elided rows as …."""
    shown = section.shown["quba"]
    header = ("rank", "model", "source", "weights", "QUBA", "rank 95 % interval", "P(rank ≤ 10)", "Table 12 rank",
              "protocol")  # fmt: skip
    rows, previous = [], None
    for position, (model, row) in zip(_positions(section.tables["quba"], shown), shown.iterrows(), strict=True):
        if previous is not None and position > previous + 1:
            rows.append(("…",) + ("",) * (len(header) - 1))
        previous = position
        ranked = not math.isnan(row["rank"])
        rows.append((
            number_text(row["rank"], "{:.0f}"), model, row["source"], row["weights"],
            number_text(row["quba"], "{:.2f}" if row["source"] == PUBLISHED else "{:.4f}"),
            f"[{row['rank_low']:.0f}, {row['rank_high']:.0f}]" if ranked else None,
            number_text(row["p_rank_le_10"], "{:.3f}"), number_text(row["paper_rank"], "{:.0f}"), row["protocol"],
        ))  # fmt: skip
    lines = table(header, rows)
    lines += [f"All {len(section.tables['quba'])} rows: `leaderboard_reference_hesse2025_quba.csv`.", ""]
    weighted = section.shown["weightings"]
    if len(weighted):
        lines += [
            "Under Fig. 5's weightings (the weights of the named dimensions doubled; the published QUBA recomputed "
            "from the project page's dimensions; `leaderboard_reference_hesse2025_weightings.csv`):",
            "",
        ]
        rows = [(r.setup, r.doubled, r.model, f"{r.quba:.4f}", r.rank, f"{r.best} ({r.best_quba:.3f})")
                for r in weighted.itertuples()]  # fmt: skip
        lines += table(("emphasis", "doubled", "model", "QUBA", "rank among the 326", "published first"), rows)
    return lines


def shi2024_markdown(section: ReferenceSection, table) -> list[str]:
    """The lines (R² with its interval) and the runs' predicted vs measured OOD top-1."""
    from ..presentation.suite_markdown import WithInterval

    rows = [
        (ood, int(r.models), int(r.runs), WithInterval(r.r2, (r.r2_low, r.r2_high)), r.slope, r.intercept)
        for ood, r in section.tables["lines"].iterrows()
    ]
    lines = table(("shifted set", "published models", "runs", "R² [95 %]", "slope per bit", "intercept"), rows)
    rows = [
        (r.ood_dataset, model, r.weights, r.id_lca, r.measured,
         WithInterval(r.predicted, (r.predicted_low, r.predicted_high)), r.residual, r.p_below, r.protocol)
        for model, r in section.shown["predictions"].iterrows()
    ]  # fmt: skip
    header = ("shifted set", "model", "weights", "ImageNet LCA", "measured OOD top-1", "predicted [95 %]",
              "residual", "p_below", "protocol")  # fmt: skip
    lines += table(header, rows) if rows else ["No run has an ImageNet LCA and one of the five shifted sets.", ""]
    return lines + ["Every row, the published models' too: `leaderboard_reference_shi2024_predictions.csv`.", ""]


def _positions(full: pd.DataFrame, shown: pd.DataFrame) -> list[int]:
    where = {name: i for i, name in enumerate(full.index)}
    return [where[name] for name in shown.index]


def write(section: ReferenceSection | None, folder) -> list:
    """``leaderboard_reference_<paper>_<table>.csv`` for each table of ``section`` into ``folder``."""
    from .papers._shared import write_csv

    written: list = []
    for name, frame in section.tables.items() if section is not None else ():
        indexed = frame.index.name == "model"  # else its index is a column of its own (or a RangeIndex)
        if not indexed and not isinstance(frame.index, pd.RangeIndex):
            frame = frame.reset_index()
        write_csv(folder, f"reference_{section.reference}_{name}", frame, written, index=indexed)
    return written


CHECKS: dict[str, Callable[[Mapping[str, Any]], list[str]]] = {
    "hesse2025": hesse2025.reference_mismatches,
    "shi2024": shi2024.reference_mismatches,
    "bitterwolf2023": bitterwolf2023.reference_mismatches,
    "anzaku2024": anzaku2024.reference_mismatches,
}
"""Each paper's check of a run's protocol (its module's ``reference_mismatches``)."""
PLACERS = {
    "hesse2025": hesse2025_section,
    "shi2024": shi2024_section,
    "bitterwolf2023": bitterwolf2023_section,
    "anzaku2024": anzaku2024_section,
}
"""Each paper's placement of the runs: ``(suites, mismatches, replicates, resampling) -> ReferenceSection``."""
MARKDOWN = {
    "hesse2025": hesse2025_markdown,
    "shi2024": shi2024_markdown,
    "bitterwolf2023": bitterwolf2023_markdown,
    "anzaku2024": anzaku2024_markdown,
}
UNPLACED: dict[str, str] = {
    "heuillet2025": "Heuillet et al. 2025 published backbones fine-tuned on six downstream datasets (FFT-50, FFT-5, "
    "LP-50), not evaluated on ImageNet: a run of imagenet-suite has no comparable published row (their "
    "measurements: imagenet_suite.reference.load('heuillet2025_results'))",
}
"""Papers whose published rows cannot hold a run, with the reason."""


__all__ = [
    "CHECKS",
    "PUBLISHED",
    "SHI2024_SETS",
    "THIS_RUN",
    "ReferenceSection",
    "check_references",
    "hesse2025_section",
    "markdown",
    "reference_sections",
    "run_dimensions",
    "shi2024_inputs",
    "shi2024_section",
    "shown_rows",
    "write",
]
