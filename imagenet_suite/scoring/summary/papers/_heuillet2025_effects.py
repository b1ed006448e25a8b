"""Heuillet et al. 2025, Figs. 4 and 3: the effect of the groups of models on the Borda score (split from
:mod:`~imagenet_suite.scoring.summary.papers.heuillet2025` along its seam and re-exported by it).

The paper's captions say "Welch's ANOVA" (Fig. 4, main effects) and "Nested Welch's ANOVA of the form A × B"
(Fig. 3), with Tukey HSD groupings "at the 90 % confidence level". The published figures come from the authors'
notebooks (``MaxHeuillet/robust_training``, ``results_analysis/paper_main_effects.ipynb`` and
``paper_figure3.ipynb``), which compute, on the Borda score of each configuration:

* Fig. 4 — per factor, ``scipy.stats.f_oneway`` over the factor's groups: the classic one-way ANOVA (equal
  variances), not Welch's;
* Fig. 3 — per pair (A, B), ``scipy.stats.f_oneway`` over the cells ``a | b`` of the two factors (their
  ``"Welch-style ANOVA (technically still f_oneway ...)"``; the ``statsmodels`` ``anova_lm(typ=2)`` tables computed
  before it are overwritten, and the printed p-values the figures carry are the ``f_oneway`` ones);
* the letters — ``statsmodels`` ``MultiComparison(...).tukeyhsd(alpha=0.1)`` over the groups (Fig. 4) or cells
  (Fig. 3), turned into letters by their greedy rule (:func:`tukey_letters`): groups sharing a letter are not
  significantly different.

Following the convention rule (a number follows the paper's text where the published figures follow it,
otherwise the authors' code), the p-values here are the code's: the classic one-way ANOVA (``anova_p``), not
Welch's. The authors apply no multiple-testing correction across a figure's ANOVAs (Tukey HSD controls the
family-wise error within one ANOVA's pairwise comparisons only); ``anova_p_holm`` is an extra, not the
authors': Holm's step-down adjustment (``statsmodels.stats.multitest.multipletests(method="holm")``) over
the ANOVAs of one figure.
"""

from __future__ import annotations

import functools
import itertools
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..groups import ModelGroups
from ._shared import write_csv

TUKEY_ALPHA = 0.1
"""Tukey HSD's family-wise error rate: the paper's "90 % confidence level", the code's ``alpha=0.1``."""
EFFECT_COLUMNS = ("setup", "group", "models", "mean_borda", "tukey", "anova_f", "anova_p", "anova_p_holm")
NESTED_COLUMNS = ("outer", "inner", "outer_group", "inner_group", "models", "mean_borda", "tukey", "anova_f",
                  "anova_p", "anova_p_holm")  # fmt: skip


def one_way_anova(samples: Sequence[Sequence[float]]) -> tuple[float, float]:
    """``(F, p)`` of the classic one-way ANOVA over ``samples`` (``scipy.stats.f_oneway``, as the authors'
    code); NaN when it is undefined (fewer than two samples, or no degree of freedom within them).

    Example:
        Groups (1, 2, 3) and (4, 5, 6): between-group sum of squares 2 · 3 · 1.5² = 13.5 on 1 degree of
        freedom, within 2 + 2 = 4 on 4, so F = 13.5 / 1 = 13.5:

        >>> f, p = one_way_anova([[1, 2, 3], [4, 5, 6]])
        >>> round(f, 6), round(p, 4)
        (13.5, 0.0213)
    """
    from scipy import stats

    kept = [np.asarray(sample, dtype=float) for sample in samples if len(sample)]
    if len(kept) < 2 or sum(len(sample) for sample in kept) - len(kept) < 1:
        return np.nan, np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant input: scipy warns and returns NaN or inf, kept as is
        result = stats.f_oneway(*kept)
    return float(result.statistic), float(result.pvalue)


def tukey_letters(values: Sequence[float], labels: Sequence[str], alpha: float = TUKEY_ALPHA) -> dict[str, str]:
    """The compact letters of Tukey HSD (``statsmodels`` ``MultiComparison(values, labels).tukeyhsd(alpha)``)
    by the authors' greedy rule: take the first remaining group (sorted by name), give its letter to every
    remaining group not significantly different from any group already holding it, repeat with the next
    letter. Groups sharing a letter are not significantly different. ``{}`` when undefined (fewer than two
    groups, or no degree of freedom within them).

    Example:
        Two tight groups far apart get two letters; a third group close to the first shares its letter:

        >>> labels = ["x"] * 3 + ["y"] * 3 + ["z"] * 3
        >>> tukey_letters([1.0, 1.1, 0.9, 9.0, 9.1, 8.9, 1.05, 0.95, 1.0], labels)
        {'x': 'a', 'y': 'b', 'z': 'a'}
    """
    from statsmodels.stats.multicomp import MultiComparison

    frame = pd.DataFrame({"value": np.asarray(values, dtype=float), "label": list(labels)})
    if frame["label"].nunique() < 2 or len(frame) - frame["label"].nunique() < 1:
        return {}
    comparison = MultiComparison(frame["value"], frame["label"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = comparison.tukeyhsd(alpha=alpha)
    table = result.summary().data
    pairs = pd.DataFrame(table[1:], columns=table[0])
    significant = {(str(row.group1), str(row.group2)) for row in pairs.itertuples() if bool(row.reject)}
    names = [str(name) for name in comparison.groupsunique]
    letters = dict.fromkeys(names, "")
    remaining, letter = set(names), "a"
    while remaining:
        cluster = {sorted(remaining)[0]}
        for name in sorted(remaining):
            if not any((name, other) in significant or (other, name) in significant for other in cluster):
                cluster.add(name)
        for name in cluster:
            letters[name] += letter
        remaining -= cluster
        letter = chr(ord(letter) + 1)
    return letters


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of the finite ``p_values`` (``statsmodels`` ``multipletests(method="holm")``;
    NaN stays NaN). An extra: the authors adjust none.

    Example:
        p = (0.01, 0.04, 0.03) sorted (0.01, 0.03, 0.04): 3 · 0.01 = 0.03, max(0.03, 2 · 0.03) = 0.06,
        max(0.06, 1 · 0.04) = 0.06:

        >>> [round(p, 6) for p in holm([0.01, 0.04, 0.03, float("nan")])][:3]
        [0.03, 0.06, 0.06]
    """
    from statsmodels.stats.multitest import multipletests

    values = np.asarray(p_values, dtype=float)
    adjusted = np.full(len(values), np.nan)
    finite = np.isfinite(values)
    if finite.any():
        adjusted[finite] = multipletests(values[finite], method="holm")[1]
    return adjusted.tolist()


def main_effects(borda: pd.Series, groups: ModelGroups, tukey: bool = True) -> pd.DataFrame:
    """Fig. 4 on the leaderboard: per setup of ``groups``, the mean Borda of each group's ranked models (``borda``:
    Borda by model, the models with all five types), the Tukey letters (:func:`tukey_letters`), and the setup's
    one-way ANOVA (:func:`one_way_anova`) with its Holm-adjusted p over the setups (:func:`holm`, an extra).
    One row per (setup, group) with at least one ranked model (columns :data:`EFFECT_COLUMNS`). ``tukey`` False:
    no letters (``tukey`` empty; statsmodels computes each pair's studentized-range p-value by numerical
    integration, some 20 ms a pair)."""
    rows = []
    for setup, members in groups.setups().items():
        cells = {group: _values(borda, models) for group, models in members.items()}
        cells = {group: values for group, values in cells.items() if len(values)}
        rows += _effect_rows({"setup": setup}, {(group,): values for group, values in cells.items()}, ("group",), tukey)
    frame = pd.DataFrame(rows, columns=list(EFFECT_COLUMNS))
    return _with_holm(frame, ["setup"])


def nested_effects(borda: pd.Series, groups: ModelGroups, tukey: bool = True) -> pd.DataFrame:
    """Fig. 3 on the leaderboard: per pair of setups (outer A, inner B: A before B in the groups' order), the cells
    ``a | b`` of the ranked models in group a of A and b of B: their mean Borda, the Tukey letters over the
    cells, and the one-way ANOVA over the cells (the authors' code; it does not depend on which setup is outer,
    so each pair is tested once), with its Holm-adjusted p over the pairs (an extra). One row per non-empty
    cell (columns :data:`NESTED_COLUMNS`); ``tukey`` as for :func:`main_effects`."""
    setups = groups.setups()
    rows = []
    for outer, inner in itertools.combinations(setups, 2):
        cells = {}
        for outer_group, outer_models in setups[outer].items():
            for inner_group, inner_models in setups[inner].items():
                both = [model for model in dict.fromkeys(outer_models) if model in set(inner_models)]
                values = _values(borda, both)
                if len(values):
                    cells[(outer_group, inner_group)] = values
        rows += _effect_rows({"outer": outer, "inner": inner}, cells, ("outer_group", "inner_group"), tukey)
    frame = pd.DataFrame(rows, columns=list(NESTED_COLUMNS))
    return _with_holm(frame, ["outer", "inner"])


CORRELATION_COLUMNS = ("type_a", "type_b", "rho", "p_value", "stars", "models")


def stars(p: float) -> str:
    """Fig. 6's significance marks as the authors' code draws them (``paper_figure6.ipynb``: *** p < 0.001,
    ** p < 0.01, * p < 0.05; the caption says * p < 0.1, ** p < 0.05, *** p < 0.01, but the published heatmap
    is the code's).

    Example:
        >>> [stars(p) for p in (0.0005, 0.005, 0.03, 0.07, float("nan"))]
        ['***', '**', '*', '', '']
    """
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""


def correlation_tests(ranked: pd.DataFrame) -> pd.DataFrame:
    """Fig. 6 on the leaderboard: for each pair of the five types (columns of ``ranked``, the models with all
    five), Spearman's ρ and its p-value from ``scipy.stats.spearmanr`` over the models, as the authors' code
    (pairwise, no multiple-testing correction), and :func:`stars`. Empty with fewer than three models.
    Columns :data:`CORRELATION_COLUMNS`."""
    from scipy import stats as scipy_stats

    rows = []
    if len(ranked) >= 3:
        for a, b in itertools.combinations(ranked.columns, 2):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a constant type: NaN, kept
                result = scipy_stats.spearmanr(ranked[a], ranked[b])
            rho, p = float(result.statistic), float(result.pvalue)
            rows.append((a, b, rho, p, stars(p), len(ranked)))
    return pd.DataFrame(rows, columns=list(CORRELATION_COLUMNS))


SIZES = ("small", "medium", "large")
PROTOCOLS = ("FFT-50", "FFT-5", "LP-50")
CONFIGURATION = ("backbone", "pre_training_strategy", "model_type", "model_size", "protocol")
"""What identifies a configuration in the authors' Fig. 5 code (their ``index_cols``; ``ft_strategy`` is ``protocol``)."""
ODDS_COLUMNS = ("protocol", "model_size", "trades_wins", "classic_wins", "odds_ratio", "p_value")


def published_odds_ratios(results: pd.DataFrame) -> pd.DataFrame:
    """Fig. 5 from the published measurements (``imagenet_suite.reference.load("heuillet2025_results")``): per
    protocol and model size, how many backbones' TRADES configuration has a higher Sum score (over the six
    datasets and five types) than its Classic AT one (``trades_wins``; ties dropped) and the reverse, and the
    odds ratio and p-value of ``scipy.stats.fisher_exact`` on the authors' table ``[[trades, classic], [classic,
    trades]]`` (``results_analysis/paper_figure5.ipynb``; the odds ratio is then (trades / classic)², infinite
    without a Classic AT win). The paper's text says only "Fisher's exact test"; its figure is the code's.
    No multiple-testing correction (the authors apply none to the nine tests).

    Example:
        One small backbone, TRADES better on its Sum: one win, no loss; Fisher's table [[1, 0], [0, 1]]:

        >>> rows = [{"backbone": "b", "pre_training_strategy": "s", "model_type": "t", "model_size": "small",
        ...          "protocol": "FFT-50", "dataset": "d", "loss": loss, "clean_acc": v, "Linf_acc": 0.0,
        ...          "L2_acc": 0.0, "L1_acc": 0.0, "common_acc": 0.0} for loss, v in (("TRADES", 0.5), ("Classic AT", 0.4))]
        >>> table = published_odds_ratios(pd.DataFrame(rows))
        >>> table.to_dict("records")
        [{'protocol': 'FFT-50', 'model_size': 'small', 'trades_wins': 1, 'classic_wins': 0, 'odds_ratio': inf, 'p_value': 1.0}]
    """
    from scipy.stats import fisher_exact

    accuracies = ["clean_acc", "Linf_acc", "L2_acc", "L1_acc", "common_acc"]
    totals = results.assign(score=results[accuracies].sum(axis=1, skipna=True))
    score_sum = totals.groupby([*CONFIGURATION, "loss"], sort=False)["score"].sum().unstack("loss")
    pairs = score_sum.dropna(subset=["TRADES", "Classic AT"]).reset_index()
    rows = []
    for protocol in PROTOCOLS:
        for size in SIZES:
            part = pairs[(pairs.protocol == protocol) & (pairs.model_size == size)]
            if part.empty:
                continue
            trades = int((part["TRADES"] > part["Classic AT"]).sum())
            classic = int((part["TRADES"] < part["Classic AT"]).sum())
            odds, p = fisher_exact([[trades, classic], [classic, trades]])
            rows.append((protocol, size, trades, classic, float(odds), float(p)))
    return pd.DataFrame(rows, columns=list(ODDS_COLUMNS))


def _values(borda: pd.Series, models: Sequence[str]) -> np.ndarray:
    unique = [model for model in dict.fromkeys(models) if model in borda.index]
    return borda.loc[unique].dropna().to_numpy(dtype=float)


def _effect_rows(
    key: dict[str, str], cells: dict[tuple[str, ...], np.ndarray], names: Sequence[str], tukey: bool
) -> list[dict]:
    labels = {cell: " | ".join(cell) for cell in cells}
    f, p = one_way_anova(list(cells.values()))
    values = np.concatenate(list(cells.values())) if cells else np.array([])
    tags = [labels[cell] for cell, sample in cells.items() for _ in sample]
    letters = tukey_letters(values, tags) if tukey and np.isfinite(p) else {}
    return [
        {
            **key,
            **dict(zip(names, cell, strict=True)),
            "models": len(sample),
            "mean_borda": float(sample.mean()),
            "tukey": letters.get(labels[cell], ""),
            "anova_f": f,
            "anova_p": p,
        }
        for cell, sample in cells.items()
    ]


def _with_holm(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """``anova_p_holm``: Holm over the figure's ANOVAs (one p per ``by`` key)."""
    if frame.empty:
        return frame
    tests = frame.drop_duplicates(by)[[*by, "anova_p"]]
    adjusted = dict(zip(map(tuple, tests[by].to_numpy()), holm(tests["anova_p"].tolist()), strict=True))
    frame["anova_p_holm"] = [adjusted[tuple(key)] for key in frame[by].to_numpy()]
    return frame


EFFECTS_TEXT = (
    "Per setup of groups, the mean Borda score of each group's ranked models, the one-way ANOVA of Borda across "
    "the groups (Fig. 4; Fig. 3: across the cells of two setups, `a | b`) and Tukey HSD letters at 90 % "
    f"(alpha {TUKEY_ALPHA}; groups sharing a letter are not significantly different). Convention: the authors' "
    "code, whose figures the paper publishes: `scipy.stats.f_oneway`, the classic one-way ANOVA (the captions "
    "say Welch's), and `statsmodels` Tukey HSD with their letter rule. Multiple-testing correction: none by the "
    "authors across a figure's ANOVAs; `anova_p_holm` is an extra, Holm's adjustment over the figure's ANOVAs."
)


def effects_markdown(paper: Any, table) -> list[str]:
    """The subsection of Figs. 4 and 3: the groups' effects on Borda, or what is missing and what adds it."""
    lines = ["### Effects of the groups on Borda (Heuillet et al. 2025, Figs. 4 and 3)", "", EFFECTS_TEXT, ""]
    if paper.groups_source is None:
        return lines + ["No groups (see Table 4 above for what gives them).", ""]
    if paper.main_effects.empty or not np.isfinite(paper.main_effects["anova_p"].to_numpy(dtype=float)).any():
        return lines + [
            "No ANOVA is defined: it needs, within a setup, ranked models in two groups or more and one group with "
            "two models or more (each ranked model has all five types: see the models not ranked above).",
            "",
        ]
    lines += ["Fig. 4 (main effects):", ""]
    lines += table(EFFECT_COLUMNS, paper.main_effects.itertuples(index=False))
    lines += ["![Heuillet et al. 2025, Fig. 4: mean Borda per group](leaderboard_heuillet2025_main_effects.png)", ""]
    lines += ["Fig. 3 (nested, A × B):", ""]
    lines += table(NESTED_COLUMNS, paper.nested_effects.itertuples(index=False))
    return lines


FIG5_TEXT = (
    "The paper's own configurations, not the runs: per protocol and model size, the backbones whose TRADES "
    "configuration has the higher Sum score (six datasets, five types) than its Classic AT one, and the reverse "
    "(ties dropped), with `scipy.stats.fisher_exact` on the authors' table [[TRADES wins, Classic AT wins], "
    "[Classic AT wins, TRADES wins]] (`paper_figure5.ipynb`: the odds ratio is then (TRADES / Classic AT)², "
    "∞ without a Classic AT win), from the published measurements (`imagenet_suite.reference`, "
    "`heuillet2025_results`). No multiple-testing correction (the authors apply none). Runs cannot add to it: "
    "it pairs configurations that differ only in their fine-tuning loss."
)


@functools.lru_cache(maxsize=1)
def published_fig5() -> pd.DataFrame:
    """Fig. 5 from the published measurements (:func:`published_odds_ratios` of the reference zoo's
    ``heuillet2025_results``)."""
    from ....reference import load

    return published_odds_ratios(load("heuillet2025_results"))


def shows_fig5(board: Any) -> bool:
    """Whether the leaderboard shows Fig. 5 of the published configurations: beside runs that have the paper's
    five types (a model ranked by :func:`~imagenet_suite.scoring.summary.papers.heuillet2025.paper_tables`), so
    that a leaderboard without them does not draw a figure of the paper's zoo."""
    paper = board.heuillet2025
    return paper is not None and bool(paper.ranked)


def fig5_markdown(board: Any, table) -> list[str]:
    """The subsection of Fig. 5 (the published configurations), beside runs with the paper's five types."""
    lines = ["### Odds ratio of TRADES outperforming Classic AT (Heuillet et al. 2025, Fig. 5)", ""]
    if not shows_fig5(board):
        return lines + [
            "Shown (from the published measurements) beside runs that have the paper's five types; no run here "
            "has them.",
            "",
        ]
    lines += [FIG5_TEXT, ""]
    lines += table(ODDS_COLUMNS, published_fig5().itertuples(index=False))
    return [*lines, "![Heuillet et al. 2025, Fig. 5](leaderboard_heuillet2025_fig5.png)", ""]


def write_fig5(board: Any, folder: Path) -> list[Path]:
    """``leaderboard_heuillet2025_fig5.csv`` and ``.png`` when the leaderboard shows Fig. 5 (:func:`shows_fig5`)."""
    from ...presentation.figures.heuillet2025 import odds_ratio_plot

    written: list[Path] = []
    if not shows_fig5(board):
        return written
    write_csv(folder, "heuillet2025_fig5", published_fig5(), written, index=False)
    written.append(folder / "leaderboard_heuillet2025_fig5.png")
    odds_ratio_plot(published_fig5()).savefig(written[-1], dpi=120)
    return written


def write_effects_figure(board: Any, folder: Path) -> list[Path]:
    """``leaderboard_heuillet2025_main_effects.png`` when an ANOVA of Fig. 4 is defined (never an empty figure)."""
    from ...presentation.figures.heuillet2025 import effects_figure

    drawn = effects_figure(board)
    if drawn is None:
        return []
    path = folder / "leaderboard_heuillet2025_main_effects.png"
    drawn.savefig(path, dpi=120)
    return [path]


__all__ = [
    "CONFIGURATION",
    "CORRELATION_COLUMNS",
    "EFFECTS_TEXT",
    "EFFECT_COLUMNS",
    "FIG5_TEXT",
    "NESTED_COLUMNS",
    "ODDS_COLUMNS",
    "PROTOCOLS",
    "SIZES",
    "TUKEY_ALPHA",
    "correlation_tests",
    "effects_markdown",
    "fig5_markdown",
    "holm",
    "main_effects",
    "nested_effects",
    "one_way_anova",
    "published_fig5",
    "published_odds_ratios",
    "stars",
    "tukey_letters",
    "write_effects_figure",
    "write_fig5",
]
