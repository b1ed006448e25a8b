"""Beyond Accuracy (QUBA), Hesse et al. 2025: the leaderboard's tables of the paper.

* :func:`quba_ranking` — the nine dimensions, QUBA score and rank per model (Table 12; Tables 3 and 4 are its
  top and selected rows), with the weights in force (``leaderboard --quba-weights``; the paper's by default).
* :func:`group_comparisons` — Table 2: per setup and configuration (group) of models the mean of every
  dimension, and whether it differs from the setup's first configuration: a two-sided two-sample
  Student's t-test (``scipy.stats.ttest_ind``, equal variances), marked ``***`` for p < 0.05, ``**`` for
  p < 0.1 and ``*`` for p < 0.2 as the paper marks it. The paper says only "t-test"; on its own Table 12
  values of the 24 models of setup (i) (Table 9) this test reproduces every mark of Table 2 (i), while a
  paired test or a one-sided one marks accuracy *** or ** where the paper prints * (Welch's test agrees
  there too). A model without a dimension is left out of that dimension's mean and test.
* :func:`dimension_correlations` — Table 10 / Fig. 4: Spearman's ρ and its p-value between every two of
  the nine dimensions across models, each pair over the models that have both (the paper's code:
  ``scipy.stats.spearmanr(..., nan_policy="omit")``); the figure crosses out p > 0.05 as the paper does.
* :func:`weightings` — Fig. 5: the top five models when the weights of one (group of) dimension(s) are
  doubled: accuracy; robustness (adversarial, C, OOD); calibration; class balance; shortcut learning
  (object focus, shape bias); parameters. The paper's text names the first five; the sixth is inferred
  from its count ("leads in five setups" besides class balance).
* Table 7 — :func:`group_comparisons` on the adversarial robustness and each run's AutoAttack robustness;
  Figs. 13 and 14 — the Spearman matrices per subgroup of models (the runs' groups; the published zoo's six) and
  with AutoAttack as the adversarial dimension (:mod:`.hesse2025_correlations`).

Groups come from ``leaderboard --groups FILE`` (:mod:`imagenet_suite.scoring.summary.groups`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ....errors import ConfigError, param
from ...metrics.quba import (
    DIMENSIONS,
    QUBA_ATTACK_CONVENTION,
    quba_score_autoattack,
    quba_table,
    quba_weights,
    rank_descending,
)
from ..groups import ModelGroups
from ..quba import attack_convention_of
from . import hesse2025_correlations as correlations
from ._shared import weights_mismatch, with_weights, write_csv
from .hesse2025_correlations import (
    AUTOATTACK,
    CORRELATION_ALPHA,
    MIN_CORRELATION_MODELS,
    dimension_correlations,
)

STARS = ((0.05, "***"), (0.1, "**"), (0.2, "*"))  # Table 2's marks: p below each threshold
TOP = 5
NO_RANKING_FIGURE = (
    "No QUBA ranking figure: no model has all nine dimensions (each model evaluated on Beyond Accuracy's datasets, "
    "then `imagenet-suite leaderboard RUN_DIR... --out DIR`)."
)
WEIGHTING_SETUPS: dict[str, tuple[str, ...]] = {
    "accuracy": ("accuracy",),
    "robustness": ("adversarial_robustness", "c_robustness", "ood_robustness"),
    "calibration": ("calibration_error",),
    "class balance": ("class_balance",),
    "shortcut learning": ("object_focus", "shape_bias"),
    "parameters": ("params_millions",),
}


@dataclass
class Hesse2025:
    """The paper's analyses over the leaderboard's models (the QUBA table is ``Leaderboard.quba``)."""

    weights: dict[str, float]  # the weights in force, by dimension
    groups: pd.DataFrame  # Table 2, long: setup, group, reference, dimension, models, mean, t_statistic, p_value, stars
    correlations: pd.DataFrame  # Table 10: ρ, 9 x 9 (DIMENSIONS order)
    correlation_p: pd.DataFrame  # its p-values
    correlation_models: pd.DataFrame  # how many models each entry is over
    weightings: pd.DataFrame  # Fig. 5, long: setup, doubled, rank, model, quba
    custom_weights: bool = False
    group_setups: dict[str, list[str]] = field(default_factory=dict)  # {setup: [group, ...]} in file order
    autoattack_groups: pd.DataFrame = field(default_factory=pd.DataFrame)  # Table 7, long as ``groups``
    group_correlations: dict = field(default_factory=dict)  # Fig. 13 over the runs: {(setup, group): matrices}
    published_correlations: dict = field(default_factory=dict)  # Fig. 13 over the published zoo (--reference)
    autoattack_correlations: tuple | None = None  # Fig. 14's right-hand matrices (runs attacked with AutoAttack)


def resolve_weights(weights: Mapping[str, float] | None) -> dict[str, float]:
    """The nine weights in force (defaults overridden by ``weights``); ConfigError naming ``quba_weights``."""
    try:
        vector = quba_weights(weights)
    except ValueError as err:
        raise ConfigError(f"{param('quba_weights')}: {err}") from err
    return dict(zip(DIMENSIONS, map(float, vector), strict=True))


def quba_ranking(
    suites: Mapping[str, Mapping[str, Any]], weights: Mapping[str, float] | None = None
) -> tuple[pd.DataFrame, dict[str, dict[str, str]]]:
    """``(table, missing)``: per model (index, best first) the nine dimensions of its suite.json, ``quba`` and
    ``quba_rank`` (:func:`~imagenet_suite.scoring.metrics.quba.quba_table` with ``weights``; none for a model
    missing a dimension), ``attack_convention`` (where its FGSM/PGD perturbed, ``hesse2025`` or ``pixel``; none
    without attacks: a ``pixel`` run has no adversarial dimension, so no score) and ``partial`` (the dimensions
    computed from partial inputs); ``missing``:
    ``{model: {dimension: what it needs}}``. When a run attacked with AutoAttack L∞ 4/255
    (``summary.quba_autoattack``), ``quba_autoattack`` and its rank: Table 8's QUBA, AutoAttack's
    robustness as the adversarial dimension (same ``weights``), and that robustness (``autoattack_robustness``).
    When a run is of a zero-shot model,
    ``probabilities``: how its dimensions followed Beyond Accuracy's wrapper probabilities (``quba.probabilities``
    of its suite.json: ``hesse2025, recomputed from the logits`` or ``hesse2025, the run's outputs``)."""
    rows, missing, partial, autoattack, conventions, probabilities = {}, {}, {}, {}, {}, {}
    for name, suite in suites.items():
        quba = suite["summary"]["quba"]
        attacked = suite["summary"].get("adversarial")
        conventions[name] = attack_convention_of(attacked) if attacked else None
        rows[name] = {dim: quba["dimensions"].get(dim, {}).get("value", np.nan) for dim in DIMENSIONS}
        partial[name] = ", ".join(f"{dim} ({note})" for dim, note in (quba.get("partial") or {}).items())
        probabilities[name] = quba.get("probabilities", "")
        if quba["missing"]:
            missing[name] = dict(quba["missing"])
        robustness = (suite["summary"].get("quba_autoattack") or {}).get("adversarial_robustness")
        if robustness is not None:
            autoattack[name] = {**rows[name], "adversarial_robustness": robustness}
    table = pd.DataFrame.from_dict(rows, orient="index", columns=list(DIMENSIONS)).astype(float)
    complete = table.dropna()
    scored = quba_table(complete, weights) if len(complete) else complete.assign(quba=[], quba_rank=[])
    table = table.join(scored[["quba", "quba_rank"]]).assign(
        attack_convention=pd.Series(conventions, dtype=object), partial=pd.Series(partial)
    )
    if any(probabilities.values()):
        table["probabilities"] = pd.Series(probabilities)
    if autoattack:
        scores = {
            name: quba_score_autoattack(values, weights)
            for name, values in autoattack.items()
            if not any(math.isnan(v) for v in values.values())
        }
        robustness = {name: values["adversarial_robustness"] for name, values in autoattack.items()}
        table[AUTOATTACK] = pd.Series(robustness, dtype=float)  # Table 7's and Fig. 14's
        table["quba_autoattack"] = pd.Series(scores, dtype=float)
        table["quba_autoattack_rank"] = rank_descending(table["quba_autoattack"])
    return table.sort_values("quba", ascending=False, na_position="last"), missing


def stars(p_value: float) -> str:
    """Table 2's significance mark of ``p_value``.

    Example:
        >>> [stars(p) for p in (0.01, 0.05, 0.07, 0.15, 0.2, float("nan"))]
        ['***', '**', '**', '*', '', '']
    """
    for threshold, mark in STARS:
        if p_value < threshold:
            return mark
    return ""


def student_t_test(reference: np.ndarray, other: np.ndarray) -> tuple[float, float]:
    """``(t, p)`` of the two-sided two-sample Student's t-test (equal variances); NaN with fewer than two
    values in a group or no variance at all.

    Example:
        >>> t, p = student_t_test(np.array([1.0, 2.0, 3.0]), np.array([2.0, 3.0, 4.0]))
        >>> round(t, 6), round(p, 6)
        (-1.224745, 0.287864)
    """
    from scipy import stats

    if len(reference) < 2 or len(other) < 2:
        return math.nan, math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # no variance: scipy warns and returns NaN
        result = stats.ttest_ind(reference, other)
    return float(result.statistic), float(result.pvalue)


def group_comparisons(
    dimensions: pd.DataFrame, groups: ModelGroups, columns: Sequence[str] = DIMENSIONS
) -> pd.DataFrame:
    """Table 2 as a long table: per setup, group and dimension the number of ``models`` with a value, their
    ``mean``, and (groups after the setup's first, the ``reference``) Student's ``t_statistic``, ``p_value``
    and ``stars`` against the reference. ``dimensions``: the ``columns`` per model (index; the nine dimensions,
    or Table 7's adversarial and AutoAttack robustness); a model listed twice in a group counts twice, as in the
    paper's Table 9.

    Example:
        Groups (1, 2, 3) and (2, 3, 4): means 2 and 3, pooled variance 1, t = -1 / sqrt(2/3):

        >>> dims = pd.DataFrame({d: [1.0, 2.0, 3.0, 2.0, 3.0, 4.0] for d in DIMENSIONS}, index=list("abcdef"))
        >>> groups = ModelGroups.from_mapping({"a": "A", "b": "A", "c": "A", "d": "B", "e": "B", "f": "B"})
        >>> row = group_comparisons(dims, groups).query("group == 'B' and dimension == 'accuracy'").iloc[0]
        >>> float(row["mean"]), round(float(row["p_value"]), 6), row["stars"]
        (3.0, 0.287864, '')
    """
    rows = []
    for setup, members in groups.setups().items():
        reference = next(iter(members))
        for dimension in columns:
            base = _values(dimensions, members[reference], dimension)
            for group, models in members.items():
                values = _values(dimensions, models, dimension)
                t, p = (math.nan, math.nan) if group == reference else student_t_test(base, values)
                rows.append(
                    {
                        "setup": setup,
                        "group": group,
                        "reference": reference,
                        "dimension": dimension,
                        "models": len(values),
                        "mean": float(values.mean()) if len(values) else math.nan,
                        "t_statistic": t,
                        "p_value": p,
                        "stars": stars(p),
                    }
                )
    return pd.DataFrame(
        rows, columns=["setup", "group", "reference", "dimension", "models", "mean", "t_statistic", "p_value", "stars"]
    )


def _values(dimensions: pd.DataFrame, models: list[str], dimension: str) -> np.ndarray:
    values = dimensions.loc[models, dimension].to_numpy(dtype=float)
    return values[~np.isnan(values)]


def weightings(dimensions: pd.DataFrame, weights: Mapping[str, float] | None = None, top: int = TOP) -> pd.DataFrame:
    """Fig. 5 as a long table: for each of :data:`WEIGHTING_SETUPS` the ``top`` models (rank, model, QUBA)
    when the weights of its dimensions are doubled (the other weights as ``weights``: the paper's by
    default); models with all nine dimensions only.

    Example:
        Two models at the paper's means but for one better dimension each: doubling accuracy's weight
        ranks ``acc`` first, doubling class balance's ranks ``bal`` first:

        >>> from imagenet_suite.scoring.metrics.quba import QUBA_MEAN, QUBA_STD
        >>> dims = pd.DataFrame([QUBA_MEAN, QUBA_MEAN], columns=list(DIMENSIONS), index=["acc", "bal"])
        >>> dims.loc["acc", "accuracy"] += QUBA_STD[0]
        >>> dims.loc["bal", "class_balance"] += 1.1 * QUBA_STD[5]
        >>> table = weightings(dims)
        >>> table.query("rank == 1")[["setup", "model"]].values.tolist()[:4]
        [['accuracy', 'acc'], ['robustness', 'bal'], ['calibration', 'bal'], ['class balance', 'bal']]
    """
    complete = dimensions[list(DIMENSIONS)].astype(float).dropna()
    base = resolve_weights(weights)
    rows = []
    for setup, doubled in WEIGHTING_SETUPS.items():
        scaled = {name: value * (2 if name in doubled else 1) for name, value in base.items()}
        if not len(complete):
            continue
        ranked = quba_table(complete, scaled).sort_values("quba", ascending=False, kind="stable").head(top)
        for model, row in ranked.iterrows():
            rows.append(
                {
                    "setup": setup,
                    "doubled": ", ".join(doubled),
                    "rank": int(row["quba_rank"]),
                    "model": model,
                    "quba": float(row["quba"]),
                }
            )
    return pd.DataFrame(rows, columns=["setup", "doubled", "rank", "model", "quba"])


def analyses(
    quba: pd.DataFrame,
    groups: ModelGroups | None = None,
    weights: Mapping[str, float] | None = None,
    published: bool = False,
) -> Hesse2025:
    """Table 2 and Fig. 13 (with ``groups``), Table 7 (with ``groups`` and AutoAttack runs), Table 10, Fig. 5 and
    Fig. 14 (with AutoAttack runs) over the leaderboard's QUBA table ``quba``; ``published``: Fig. 13 over the
    published zoo too (``leaderboard --reference hesse2025``)."""
    dimensions = quba[list(DIMENSIONS)].astype(float)
    rho, p, n = dimension_correlations(dimensions)
    empty = pd.DataFrame(
        columns=["setup", "group", "reference", "dimension", "models", "mean", "t_statistic", "p_value", "stars"]
    )
    return Hesse2025(
        weights=resolve_weights(weights),
        groups=group_comparisons(dimensions, groups) if groups is not None else empty,
        correlations=rho,
        correlation_p=p,
        correlation_models=n,
        weightings=weightings(dimensions, weights),
        custom_weights=bool(weights),
        group_setups={setup: list(members) for setup, members in (groups.setups() if groups else {}).items()},
        autoattack_groups=_autoattack_groups(quba, groups),
        group_correlations=correlations.group_correlations(dimensions, groups),
        published_correlations=correlations.published_subgroups() if published else {},
        autoattack_correlations=correlations.autoattack_correlations(quba),
    )


def _autoattack_groups(quba: pd.DataFrame, groups: ModelGroups | None) -> pd.DataFrame:
    """Table 7: per setup and group the means of the adversarial robustness (the paper's protocol) and of
    AutoAttack's, marked as Table 2 (:func:`group_comparisons`); empty without groups or AutoAttack runs."""
    if groups is None or AUTOATTACK not in quba.columns:
        return pd.DataFrame()
    return group_comparisons(quba.astype({AUTOATTACK: float}), groups, ("adversarial_robustness", AUTOATTACK))


# ----------------------------------------------------------------------------------------------- Markdown


def markdown(
    quba: pd.DataFrame, missing: Mapping[str, Mapping[str, str]], result: Hesse2025, models: pd.DataFrame
) -> list[str]:
    """The paper's section of ``leaderboard.md``."""
    from ...presentation.suite_markdown import table

    lines = ["## Beyond Accuracy (QUBA), Hesse et al. 2025", "", "### QUBA (Beyond Accuracy, Hesse et al. 2025)", ""]
    lines += [_weights_line(result), ""]
    ranked = with_weights(quba, models)
    lines += table(list(ranked.columns), ranked.itertuples(index=False))
    for model, dims in missing.items():
        lines += [f"- `{model}` has no QUBA score; missing: " + ", ".join(f"`{d}` ({r})" for d, r in dims.items())]
    if quba["attack_convention"].notna().any():
        lines += [
            "",
            f"`attack_convention`: where a model's FGSM/PGD perturbed. Only `{QUBA_ATTACK_CONVENTION}` (the normalised "
            "inputs, clamped to [0,1]: Beyond Accuracy's code, on whose scale QUBA's mu/sigma are) gives the "
            "adversarial dimension; a `pixel` run ([0,1] pixel space) lists it as missing.",
        ]
    if "probabilities" in quba.columns:
        lines += [
            "",
            "`probabilities`: a zero-shot model's dimensions follow Beyond Accuracy's wrappers, which return "
            "softmax(100·cos) (SigLIP: sigmoid(s·cos + b)) that every metric softmaxes again; computed from the "
            "run's logits (`--probabilities softmax`: its attacks ran on the logits, so no adversarial dimension) "
            "or from its outputs (`--probabilities hesse2025`).",
        ]
    lines += ["", "![QUBA ranks](leaderboard_quba.png)" if quba["quba"].notna().any() else NO_RANKING_FIGURE, ""]
    lines += _groups_markdown(result, table)
    lines += _correlations_markdown(result, table)
    lines += _weightings_markdown(result, table)
    lines += _autoattack_groups_markdown(result, table)
    lines += correlations.markdown(
        result.group_correlations, result.published_correlations, result.autoattack_correlations
    )
    return lines


def _weights_line(result: Hesse2025) -> str:
    shown = ", ".join(f"{name} {value:.4g}" for name, value in result.weights.items())
    source = "`--quba-weights`" if result.custom_weights else "the paper's defaults"
    return f"Weights ({source}; the score divides by their sum, {sum(result.weights.values()):.4g}): {shown}."


def _groups_markdown(result: Hesse2025, table) -> list[str]:
    lines = ["### Group comparisons (Table 2)", ""]
    if not len(result.groups):
        return lines + ["No groups given (`--groups FILE`: a CSV of model, group and optionally setup).", ""]
    lines += [
        "Mean of each dimension per group; marks compare a group with its setup's first group (two-sided "
        "Student's t-test): *** p < 0.05, ** p < 0.1, * p < 0.2.",
        "",
    ]
    rows = []
    frame = result.groups
    for (setup, group), part in frame.groupby(["setup", "group"], sort=False):
        cells = {row.dimension: (row.mean, row.stars, row.models) for row in part.itertuples()}
        counts = sorted({count for _, _, count in cells.values()})
        rows.append((setup, group, "/".join(map(str, counts)), *(_mean_cell(*cells[d][:2]) for d in DIMENSIONS)))
    return lines + table(("setup", "group", "models", *DIMENSIONS), rows)


def _autoattack_groups_markdown(result: Hesse2025, table) -> list[str]:
    lines = ["### Adversarial robustness vs AutoAttack per group (Table 7)", ""]
    if not len(result.autoattack_groups):
        return lines + [
            "Needs `--groups FILE` and runs attacked with AutoAttack (`imagenet-suite evaluate ... --adversarial N "
            "--attack fgsm,pgd,autoattack-linf`).",
            "",
        ]
    lines += ["Mean per group; marks as Table 2 (two-sided Student's t-test against the setup's first group).", ""]
    rows = []
    for (setup, group), part in result.autoattack_groups.groupby(["setup", "group"], sort=False):
        cells = {row.dimension: row for row in part.itertuples()}
        adv, auto = cells["adversarial_robustness"], cells[AUTOATTACK]
        rows.append(
            (
                setup,
                group,
                f"{adv.models}/{auto.models}",
                _mean_cell(adv.mean, adv.stars),
                _mean_cell(auto.mean, auto.stars),
            )
        )
    return lines + table(("setup", "group", "models", "adversarial robustness", "AutoAttack"), rows)


def _mean_cell(mean: float, mark: str) -> str:
    return "—" if math.isnan(mean) else f"{mean:.4g}" + (f" {mark}" if mark else "")


def _correlations_markdown(result: Hesse2025, table) -> list[str]:
    lines = ["### Spearman correlations of the nine dimensions (Table 10, Fig. 4)", ""]
    if not result.correlations.notna().to_numpy().any():  # no table of dashes, no empty figure
        most = int(np.nanmax(np.where(np.eye(len(DIMENSIONS), dtype=bool), 0, result.correlation_models.to_numpy())))
        return lines + [
            f"Not computed: each entry needs at least {MIN_CORRELATION_MODELS} models having both dimensions (not "
            f"constant); the most any pair has here is {most}. Evaluate more models on Beyond Accuracy's datasets, "
            "then `imagenet-suite leaderboard RUN_DIR... --out DIR`.",
            "",
        ]
    lines += [
        "ρ (p-value) across models, each pair over the models having both; ~~struck~~: p > 0.05 (crossed out "
        "in the paper's Fig. 4); — : fewer than three models or a constant dimension.",
        "",
    ]
    rows = []
    for a in DIMENSIONS:
        cells = []
        for b in DIMENSIONS:
            rho, p = result.correlations.loc[a, b], result.correlation_p.loc[a, b]
            text = "—" if math.isnan(rho) else f"{rho:.2f} ({p:.2f})"
            cells.append(f"~~{text}~~" if not math.isnan(rho) and p > CORRELATION_ALPHA else text)
        rows.append((a, *cells))
    lines += table(("", *DIMENSIONS), rows)
    return lines + ["![Spearman correlations of the QUBA dimensions](leaderboard_quba_correlations.png)", ""]


def _weightings_markdown(result: Hesse2025, table) -> list[str]:
    lines = ["### Top five under other weightings (Fig. 5)", ""]
    if not len(result.weightings):
        return lines + ["No model has all nine dimensions.", ""]
    lines += ["The weights in force with those of the named dimensions doubled.", ""]
    rows = [
        (setup, part["doubled"].iloc[0], *(f"{r.rank}. {r.model} ({r.quba:.3f})" for r in part.itertuples()))
        for setup, part in result.weightings.groupby("setup", sort=False)
    ]
    width = max(len(row) for row in rows)
    rows = [row + ("",) * (width - len(row)) for row in rows]
    return lines + table(("emphasis", "doubled", *(f"#{i}" for i in range(1, width - 1))), rows)


# ----------------------------------------------------------------------------------------------- files


def write(quba: pd.DataFrame, result: Hesse2025, folder: Path) -> list[Path]:
    """``leaderboard_quba.csv`` and ``.png`` (the figure when a model has a score), ``leaderboard_quba_groups.csv``
    (with groups), ``leaderboard_quba_correlations.csv`` and ``.png`` (the figure when an entry is defined),
    ``leaderboard_quba_weightings.csv``; never an empty figure."""
    from ...presentation.plots import correlation_heatmap, quba_ranks_plot

    written: list[Path] = []
    write_csv(folder, "quba", quba, written)
    if len(result.groups):
        write_csv(folder, "quba_groups", result.groups, written, index=False)
    long = pd.DataFrame(
        [
            {
                "dimension_a": a,
                "dimension_b": b,
                "rho": result.correlations.loc[a, b],
                "p_value": result.correlation_p.loc[a, b],
                "models": int(result.correlation_models.loc[a, b]),
            }
            for a in DIMENSIONS
            for b in DIMENSIONS
        ]
    )
    write_csv(folder, "quba_correlations", long, written, index=False)
    write_csv(folder, "quba_weightings", result.weightings, written, index=False)
    if len(result.autoattack_groups):
        write_csv(folder, "quba_autoattack_groups", result.autoattack_groups, written, index=False)
    standard = (result.correlations, result.correlation_p, result.correlation_models)
    written += correlations.write(
        result.group_correlations, result.published_correlations, result.autoattack_correlations, standard, folder
    )
    if quba["quba"].notna().any():  # an empty figure is never written
        written.append(folder / "leaderboard_quba.png")
        quba_ranks_plot(quba, written[-1])
    if not result.correlations.notna().to_numpy().any():
        return written
    written.append(folder / "leaderboard_quba_correlations.png")
    correlation_heatmap(
        result.correlations,
        result.correlation_p,
        written[-1],
        alpha=CORRELATION_ALPHA,
        title="QUBA dimensions (Spearman ρ)",
    )
    return written


# ----------------------------------------------------------------------------------------- reference zoo


def reference_mismatches(suite: Mapping[str, Any]) -> list[str]:
    """What keeps a run from being ranked among Table 12's 326 models (``leaderboard --reference hesse2025``):
    the run must record its weights tag (:func:`~._shared.weights_mismatch`), have all nine dimensions, each from
    complete inputs (no ``quba.partial``: a partial ImageNet-C, say), measured under the paper's protocol
    (suite.json's QUBA reads only ``hesse2025`` reports: each model's own preprocessing, centre crop), and its
    FGSM/PGD attacked under the ``hesse2025`` convention (``summary.adversarial.attack_convention``; QUBA's μ/σ
    are on that scale). Empty when it matches.

    Example:
        A run attacked in pixel space (no recorded convention), its adversarial dimension missing for it:

        >>> suite = {"weights_source": {"kind": "timm", "tag": "a1_in1k", "loaded": True},
        ...          "summary": {"adversarial": {"rows": 2}, "quba": {"missing": {"adversarial_robustness": "x"}}}}
        >>> reference_mismatches(suite)
        ["attack convention 'pixel', not 'hesse2025'"]
    """
    found = weights_mismatch(suite)
    summary = suite["summary"]
    attacked = summary.get("adversarial")
    convention = attack_convention_of(attacked) if attacked else None
    if convention is not None and convention != QUBA_ATTACK_CONVENTION:
        found.append(f"attack convention {convention!r}, not {QUBA_ATTACK_CONVENTION!r}")
    quba = summary["quba"]
    for dimension, reason in (quba.get("missing") or {}).items():
        if dimension == "adversarial_robustness" and convention not in (None, QUBA_ATTACK_CONVENTION):
            continue  # said above
        found.append(f"no {dimension} ({reason})")
    found += [f"{dimension} from partial inputs ({note})" for dimension, note in (quba.get("partial") or {}).items()]
    return found


__all__ = [
    "CORRELATION_ALPHA",
    "STARS",
    "WEIGHTING_SETUPS",
    "Hesse2025",
    "analyses",
    "dimension_correlations",
    "group_comparisons",
    "markdown",
    "quba_ranking",
    "reference_mismatches",
    "resolve_weights",
    "stars",
    "student_t_test",
    "weightings",
    "write",
]
