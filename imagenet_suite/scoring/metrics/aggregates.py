"""The aggregates of Heuillet et al. 2025 over an accuracy table: Sum score, Borda score, Mean Absolute Correlation.

The table is long in configurations and datasets and wide in perturbations, like RobustGen's
``results_dataset.csv``: one row per (configuration, dataset), one accuracy column per perturbation
type (default :data:`ROBUSTGEN_METRICS`). A *voter* is a (dataset, perturbation) pair.

* Sum: S(i) = sum of a configuration's accuracies over all voters (pandas ``sum``, NaN skipped).
* Borda, three named conventions for the points one voter gives configuration i:
  ``robustgen_code`` (default; ``process_database.py``, reproduces the paper's Tables 3 and 8-12):
  1 + #{j : a_j < a_i}, the ascending ``min`` rank, so ties share the lower value; a dataset with a
  NaN accuracy gives NaN for that dataset, and NaN datasets are skipped in the total;
  ``paper_literal`` (the written formula): m_v - rank_v(i) with rank_v the dense descending rank and
  m_v the number of distinct accuracies; ``n_minus_rank``: |I| - (min descending rank).
* Ranks: descending, ``min`` for ties (two configurations tied for 18th are both 18th, next is 20th).
* MAC: per dataset, the mean |off-diagonal| entry of the Spearman (average-rank) correlation matrix
  of the perturbation columns across configurations; per group if asked; averaged with ``mean``
  for the whole table and ``nanmean`` for groups (``paper_table4.ipynb``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .quba import rank_descending

ROBUSTGEN_METRICS: tuple[str, ...] = ("clean_acc", "Linf_acc", "L2_acc", "L1_acc", "common_acc")
BORDA_CONVENTIONS = ("robustgen_code", "paper_literal", "n_minus_rank")
DEFAULT_BORDA_CONVENTION = "robustgen_code"


def sum_score(
    table: pd.DataFrame,
    config: str | Sequence[str] = "config",
    dataset: str = "dataset",
    metrics: Sequence[str] = ROBUSTGEN_METRICS,
) -> pd.Series:
    """Sum of all accuracies of each configuration over datasets and perturbations.

    Example:
        Three configurations on two datasets, two perturbation columns:

        >>> import pandas as pd
        >>> table = pd.DataFrame({
        ...     "config": ["a", "b", "c", "a", "b", "c"],
        ...     "dataset": ["x", "x", "x", "y", "y", "y"],
        ...     "clean_acc": [0.9, 0.8, 0.7, 0.6, 0.5, 0.4],
        ...     "common_acc": [0.5, 0.6, 0.4, 0.3, 0.3, 0.2],
        ... })
        >>> sum_score(table, metrics=("clean_acc", "common_acc"))  # a: 0.9 + 0.5 + 0.6 + 0.3
        config
        a    2.3
        b    2.2
        c    1.7
        Name: score_sum, dtype: float64
    """
    wide = _wide(table, config, dataset, metrics)
    return wide.sum(axis=1).rename("score_sum")


def voter_points(accuracies: pd.Series, convention: str = DEFAULT_BORDA_CONVENTION) -> pd.Series:
    """Points one voter gives each configuration (NaN accuracy -> NaN points).

    Example:
        >>> import pandas as pd
        >>> accuracies = pd.Series({"a": 0.9, "b": 0.5, "c": 0.5, "d": 0.1})
        >>> pd.DataFrame({convention: voter_points(accuracies, convention) for convention in BORDA_CONVENTIONS})
           robustgen_code  paper_literal  n_minus_rank
        a             4.0            2.0           3.0
        b             2.0            1.0           2.0
        c             2.0            1.0           2.0
        d             1.0            0.0           0.0
    """
    if convention == "robustgen_code":
        return accuracies.rank(ascending=True, method="min")
    if convention == "paper_literal":
        return accuracies.nunique() - accuracies.rank(ascending=False, method="dense")
    if convention == "n_minus_rank":
        return accuracies.count() - accuracies.rank(ascending=False, method="min")
    raise ValueError(f"unknown Borda convention {convention!r}; known: {BORDA_CONVENTIONS}")


def borda_score(
    table: pd.DataFrame,
    config: str | Sequence[str] = "config",
    dataset: str = "dataset",
    metrics: Sequence[str] = ROBUSTGEN_METRICS,
    convention: str = DEFAULT_BORDA_CONVENTION,
) -> pd.Series:
    """Borda score of each configuration: voter points summed per dataset, then over datasets.

    Example:
        The table of :func:`sum_score`. Each of the four voters (dataset, perturbation) gives
        1 + the number of configurations it ranks below (``robustgen_code``); on (y, common_acc)
        ``a`` and ``b`` tie at 0.3 and both get 2. ``a``: 3 + 2 + 3 + 2, ``b``: 2 + 3 + 2 + 2:

        >>> import pandas as pd
        >>> rows = [("a", "x", 0.9, 0.5), ("b", "x", 0.8, 0.6), ("c", "x", 0.7, 0.4),
        ...         ("a", "y", 0.6, 0.3), ("b", "y", 0.5, 0.3), ("c", "y", 0.4, 0.2)]
        >>> table = pd.DataFrame(rows, columns=["config", "dataset", "clean_acc", "common_acc"])
        >>> borda_score(table, metrics=("clean_acc", "common_acc"))
        config
        a    10.0
        b     9.0
        c     4.0
        Name: borda, dtype: float64

        The paper's written formula gives m_v - (dense descending rank), m_v the number of distinct
        accuracies: 2, 1, 0 from three voters, and 1, 1, 0 from (y, common_acc), which has two.
        ``a``: 2 + 1 + 2 + 1, ``b``: 1 + 2 + 1 + 1:

        >>> borda_score(table, metrics=("clean_acc", "common_acc"), convention="paper_literal")
        config
        a    6.0
        b    5.0
        c    0.0
        Name: borda, dtype: float64
    """
    wide = _wide(table, config, dataset, metrics)
    per_dataset = {}
    for name in wide.columns.get_level_values(1).unique():
        points = [voter_points(wide[(metric, name)], convention) for metric in metrics]
        per_dataset[name] = sum(points[1:], points[0])  # Series addition: NaN if any voter is NaN
    return pd.DataFrame(per_dataset).sum(axis=1).rename("borda")


def global_rank(scores: pd.Series) -> pd.Series:
    """Descending rank, ties sharing the best (``min``) rank, as the paper's GR column.

    Example:
        >>> import pandas as pd
        >>> global_rank(pd.Series({"a": 2.0, "b": 3.0, "c": 2.0, "d": 1.0}))
        a    2
        b    1
        c    2
        d    4
        dtype: Int64
    """
    return rank_descending(scores, ties="min").set_axis(scores.index)


def mean_absolute_correlation(
    table: pd.DataFrame,
    dataset: str = "dataset",
    metrics: Sequence[str] = ROBUSTGEN_METRICS,
    group: str | None = None,
) -> pd.DataFrame:
    """MAC per dataset (columns) and an ``average`` column; one row per group (or ``all``).

    Example:
        With two perturbation columns MAC is |Spearman rho| of the two. On dataset x the
        configurations rank (3, 2, 1) by clean and (2, 3, 1) by common accuracy: rho = 1 - 6 * 2 /
        (3 * 8) = 0.5; on y the ranks are (3, 2, 1) and (2.5, 2.5, 1): rho = 1.5 / sqrt(2 * 1.5):

        >>> import pandas as pd
        >>> table = pd.DataFrame({
        ...     "config": ["a", "b", "c", "a", "b", "c"],
        ...     "dataset": ["x", "x", "x", "y", "y", "y"],
        ...     "clean_acc": [0.9, 0.8, 0.7, 0.6, 0.5, 0.4],
        ...     "common_acc": [0.5, 0.6, 0.4, 0.3, 0.3, 0.2],
        ... })
        >>> mean_absolute_correlation(table, metrics=("clean_acc", "common_acc")).round(6)
                 x         y   average
        group
        all    0.5  0.866025  0.683013
    """
    if group is None:
        row = {name: _mac(part[list(metrics)]) for name, part in table.groupby(dataset, sort=True)}
        frame = pd.DataFrame([row], index=pd.Index(["all"], name="group"))
        frame["average"] = np.mean(frame.to_numpy(dtype=float), axis=1)
        return frame
    rows = {}
    for value, members in table.groupby(group, sort=True):
        rows[value] = {name: _mac(part[list(metrics)]) for name, part in members.groupby(dataset, sort=True)}
    frame = pd.DataFrame.from_dict(rows, orient="index").rename_axis("group")
    frame["average"] = frame.astype(float).mean(axis=1, skipna=True)  # nanmean; NaN for an all-NaN group
    return frame


def _mac(accuracies: pd.DataFrame) -> float:
    if len(accuracies) < 2:
        return np.nan
    matrix = accuracies.corr(method="spearman").to_numpy()
    off_diagonal = ~np.eye(len(matrix), dtype=bool)
    return float(np.abs(matrix[off_diagonal]).mean())


def _wide(table: pd.DataFrame, config, dataset: str, metrics: Sequence[str]) -> pd.DataFrame:
    keys = [config] if isinstance(config, str) else list(config)
    missing = [c for c in [*keys, dataset, *metrics] if c not in table.columns]
    if missing:
        raise ValueError(f"accuracy table lacks columns {missing}; it has {list(table.columns)}")
    duplicated = table.duplicated([*keys, dataset])
    if duplicated.any():
        raise ValueError(f"accuracy table has {int(duplicated.sum())} repeated (configuration, dataset) rows")
    return table.set_index([*keys, dataset])[list(metrics)].unstack(dataset)
