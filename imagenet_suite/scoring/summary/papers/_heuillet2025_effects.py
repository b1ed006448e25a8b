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

import itertools
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..groups import ModelGroups

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


__all__ = [
    "EFFECT_COLUMNS",
    "NESTED_COLUMNS",
    "TUKEY_ALPHA",
    "holm",
    "main_effects",
    "nested_effects",
    "one_way_anova",
    "tukey_letters",
]
