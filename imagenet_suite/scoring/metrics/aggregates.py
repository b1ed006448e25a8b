"""The aggregates of Heuillet et al. 2025 over an accuracy table: Sum score, Borda score, Mean Absolute Correlation.

The accuracy table a_{i,d}(z) holds one accuracy per configuration i, dataset d and perturbation type z;
a *voter* is a (dataset, perturbation type) pair. It is read in two layouts:

* RobustGen's ``results_dataset.csv`` layout (:func:`sum_score`, :func:`borda_score`,
  :func:`mean_absolute_correlation`): one row per (configuration, dataset), one accuracy column per
  perturbation type (default :data:`ROBUSTGEN_METRICS`), the same types in every dataset;
* the *voter matrix*: one row per configuration, one column per voter (``(dataset, perturbation)``
  column labels), so that datasets may have different perturbation types. :func:`voter_matrix` makes
  it from the first layout, :func:`voter_matrix_from_long` from a long table (one row per configuration,
  dataset and perturbation type); :func:`sum_score_of`, :func:`borda_score_of`,
  :func:`incomplete_datasets` and :func:`mac_per_dataset` read it.

Each convention is named; the default is the one of the authors' released code (RobustGen's
``results_analysis/load_results.py`` and ``process_database.py``), which reproduces the paper's
Tables 3 and 8-12:

* Sum, S(i) = the sum of a configuration's accuracies over the voters. ``robustgen_code`` (default): a
  dataset's sum over its perturbation types is missing (NaN) as soon as one of them is missing
  (``sums_from_dict``), and the total is pandas ``sum`` over the datasets, which skips those: a dataset
  with a missing accuracy adds nothing, and a configuration without a complete dataset scores 0 and is
  still ranked (its row is kept). ``skip_missing`` (not the paper's): every accuracy present is added,
  only the missing ones are skipped.
* Borda, three conventions for the points one voter gives configuration i: ``robustgen_code``
  (default): 1 + #{j : a_j < a_i}, the ascending ``min`` rank, so ties share the lower value;
  ``paper_literal`` (the written formula): m_v - rank_v(i) with rank_v the dense descending rank and
  m_v the number of distinct accuracies; ``n_minus_rank``: |I| - (min descending rank). Missing
  accuracies, in every convention as in the authors' code: a voter ranks the configurations that have
  its accuracy; a configuration missing one accuracy of a dataset gets nothing from that dataset (its
  per-dataset Borda is NaN and the total skips it; none at all: 0); a voter that no configuration has
  is no voter (``pivot_table`` drops the empty column), the dataset's other voters still count.
* Ranks: descending, ``min`` for ties (two configurations tied for 18th are both 18th, next is 20th).
* MAC: per dataset, the mean |off-diagonal| entry of the Spearman (average-rank, pairwise complete)
  correlation matrix of its perturbation types across configurations, NaN with fewer than two
  configurations or types; per group if asked; averaged with ``mean`` for the whole table and
  ``nanmean`` for groups (``paper_table4.ipynb``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .quba import rank_descending

ROBUSTGEN_METRICS: tuple[str, ...] = ("clean_acc", "Linf_acc", "L2_acc", "L1_acc", "common_acc")
BORDA_CONVENTIONS = ("robustgen_code", "paper_literal", "n_minus_rank")
DEFAULT_BORDA_CONVENTION = "robustgen_code"
SUM_CONVENTIONS = ("robustgen_code", "skip_missing")
DEFAULT_SUM_CONVENTION = "robustgen_code"
VOTER_LEVELS = ("dataset", "perturbation")  # the voter matrix's column levels


def voter_matrix(
    table: pd.DataFrame,
    config: str | Sequence[str] = "config",
    dataset: str = "dataset",
    metrics: Sequence[str] = ROBUSTGEN_METRICS,
) -> pd.DataFrame:
    """The voter matrix of a RobustGen-layout table: one row per configuration, one column per
    (dataset, perturbation type), the perturbation types in ``metrics`` order within each dataset.

    Example:
        >>> import pandas as pd
        >>> table = pd.DataFrame({
        ...     "config": ["a", "b", "a"],
        ...     "dataset": ["x", "x", "y"],
        ...     "clean_acc": [0.9, 0.8, 0.6],
        ...     "common_acc": [0.5, 0.6, 0.3],
        ... })
        >>> voter_matrix(table, metrics=("clean_acc", "common_acc"))
        dataset              x                    y
        perturbation clean_acc common_acc clean_acc common_acc
        config
        a                  0.9        0.5       0.6        0.3
        b                  0.8        0.6       NaN        NaN
    """
    wide = _wide(table, config, dataset, metrics)  # columns (metric, dataset)
    columns = [(name, metric) for name in wide.columns.get_level_values(1).unique() for metric in metrics]
    matrix = pd.DataFrame({column: wide[(column[1], column[0])] for column in columns}, index=wide.index)
    return _voter_columns(matrix, columns)


def voter_matrix_from_long(
    table: pd.DataFrame,
    config: str | Sequence[str] = "config",
    dataset: str = "dataset",
    perturbation: str = "perturbation",
    accuracy: str = "accuracy",
) -> pd.DataFrame:
    """The voter matrix of a long table (one row per configuration, dataset and perturbation type);
    voters sorted, configurations in order of first appearance. ValueError on a repeated row.

    Example:
        Dataset x has two perturbation types, y one:

        >>> import pandas as pd
        >>> rows = [("a", "x", "clean", 0.9), ("a", "x", "common", 0.5), ("a", "y", "clean", 0.6),
        ...         ("b", "x", "clean", 0.8), ("b", "x", "common", 0.6)]
        >>> voter_matrix_from_long(pd.DataFrame(rows, columns=["config", "dataset", "perturbation", "accuracy"]))
        dataset          x            y
        perturbation clean common clean
        config
        a              0.9    0.5   0.6
        b              0.8    0.6   NaN
    """
    keys = [config] if isinstance(config, str) else list(config)
    missing = [c for c in [*keys, dataset, perturbation, accuracy] if c not in table.columns]
    if missing:
        raise ValueError(f"accuracy table lacks columns {missing}; it has {list(table.columns)}")
    duplicated = table.duplicated([*keys, dataset, perturbation])
    if duplicated.any():
        raise ValueError(
            f"accuracy table has {int(duplicated.sum())} repeated (configuration, dataset, perturbation) rows"
        )
    order = pd.MultiIndex.from_frame(table[keys]).unique() if len(keys) > 1 else pd.Index(table[keys[0]].unique())
    order = order.set_names(keys if len(keys) > 1 else keys[0])
    values = table.set_index([*keys, dataset, perturbation])[accuracy].astype(float)
    matrix = values.unstack([dataset, perturbation]).reindex(order) if len(values) else pd.DataFrame(index=order)
    return _voter_columns(matrix, sorted(matrix.columns))


def _voter_columns(matrix: pd.DataFrame, columns: list) -> pd.DataFrame:
    matrix = matrix.reindex(columns=pd.MultiIndex.from_tuples(columns, names=VOTER_LEVELS) if columns else None)
    if not columns:
        matrix.columns = pd.MultiIndex.from_tuples([], names=VOTER_LEVELS)
    return matrix.astype(float)


def _datasets(matrix: pd.DataFrame) -> list:
    return list(matrix.columns.get_level_values(0).unique())


def _check(convention: str, known: tuple[str, ...], what: str) -> None:
    if convention not in known:
        raise ValueError(f"unknown {what} convention {convention!r}; known: {known}")


def _dataset_sums(matrix: pd.DataFrame) -> pd.DataFrame:
    """Each configuration's sum over each dataset's perturbation types, NaN when one of them is missing
    (RobustGen's per-dataset ``sum`` column, ``sums_from_dict``)."""
    return pd.DataFrame(
        {name: matrix[name].sum(axis=1, skipna=False) for name in _datasets(matrix)}, index=matrix.index, dtype=float
    )


def sum_score_of(matrix: pd.DataFrame, convention: str = DEFAULT_SUM_CONVENTION) -> pd.Series:
    """Sum score of each configuration (row) of a voter matrix.

    Example:
        Configuration A misses one of its five accuracies on d1; B has all of them. In the authors'
        code (``robustgen_code``) A's d1 sum is missing and A scores its d2 sum only, 0.8 + 0.3 + 0.4
        + 0.3 + 0.5 = 2.3, below B's 2 x (0.7 + 0.2 + 0.3 + 0.2 + 0.4) = 3.6; skipping only the missing
        accuracy (``skip_missing``) adds A's other four on d1 and ranks A first with 4.7. C has no
        accuracy at all and scores 0 (kept, ranked last):

        >>> import pandas as pd
        >>> nan = float("nan")
        >>> types = ("clean", "Linf", "L2", "L1", "common")
        >>> accuracies = {
        ...     "A": {"d1": (0.9, nan, 0.5, 0.4, 0.6), "d2": (0.8, 0.3, 0.4, 0.3, 0.5)},
        ...     "B": {"d1": (0.7, 0.2, 0.3, 0.2, 0.4), "d2": (0.7, 0.2, 0.3, 0.2, 0.4)},
        ...     "C": {"d1": (nan,) * 5, "d2": (nan,) * 5},
        ... }
        >>> rows = [(config, dataset, type_, value) for config, sets in accuracies.items()
        ...         for dataset, values in sets.items() for type_, value in zip(types, values)]
        >>> matrix = voter_matrix_from_long(pd.DataFrame(rows, columns=["config", "dataset", "perturbation", "accuracy"]))
        >>> sum_score_of(matrix).round(6)
        config
        A    2.3
        B    3.6
        C    0.0
        Name: score_sum, dtype: float64
        >>> sum_score_of(matrix, "skip_missing").round(6)
        config
        A    4.7
        B    3.6
        C    0.0
        Name: score_sum, dtype: float64
    """
    _check(convention, SUM_CONVENTIONS, "Sum")
    if convention == "skip_missing":
        return matrix.sum(axis=1).astype(float).rename("score_sum")
    return _dataset_sums(matrix).sum(axis=1).astype(float).rename("score_sum")


def incomplete_datasets(matrix: pd.DataFrame) -> pd.Series:
    """How many datasets each configuration misses an accuracy of (RobustGen's ``nan_sum_cnt``): the
    datasets its ``robustgen_code`` Sum and Borda leave out.

    Example:
        >>> import pandas as pd
        >>> rows = [("a", "x", "clean", 0.9), ("a", "x", "common", None), ("a", "y", "clean", 0.6),
        ...         ("b", "x", "clean", 0.8), ("b", "x", "common", 0.6)]
        >>> incomplete_datasets(voter_matrix_from_long(pd.DataFrame(rows, columns=["config", "dataset", "perturbation", "accuracy"])))
        config
        a    1
        b    1
        Name: incomplete_datasets, dtype: int64
    """
    return _dataset_sums(matrix).isna().sum(axis=1).astype(int).rename("incomplete_datasets")


def sum_score(
    table: pd.DataFrame,
    config: str | Sequence[str] = "config",
    dataset: str = "dataset",
    metrics: Sequence[str] = ROBUSTGEN_METRICS,
    convention: str = DEFAULT_SUM_CONVENTION,
) -> pd.Series:
    """Sum of all accuracies of each configuration over datasets and perturbations (:func:`sum_score_of`).

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
    return sum_score_of(voter_matrix(table, config, dataset, metrics), convention)


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


def borda_score_of(matrix: pd.DataFrame, convention: str = DEFAULT_BORDA_CONVENTION) -> pd.Series:
    """Borda score of each configuration (row) of a voter matrix: voter points summed per dataset, then
    over datasets (missing accuracies: module docstring).

    Example:
        Two perturbation types. C has no accuracy: it gets no points and every voter ranks A and B only;
        (d1, Linf) ranks B alone (1 point). A misses (d1, Linf), so d1 gives A nothing although A is
        first on (d1, clean): A scores its d2 points, 2 + 2 = 4, as many as B's 1 + 1 on d1 and 1 + 1
        on d2:

        >>> import pandas as pd
        >>> nan = float("nan")
        >>> rows = [("A", "d1", "clean", 0.9), ("A", "d1", "Linf", nan), ("A", "d2", "clean", 0.8),
        ...         ("A", "d2", "Linf", 0.3), ("B", "d1", "clean", 0.7), ("B", "d1", "Linf", 0.2),
        ...         ("B", "d2", "clean", 0.7), ("B", "d2", "Linf", 0.2), ("C", "d1", "clean", nan)]
        >>> matrix = voter_matrix_from_long(pd.DataFrame(rows, columns=["config", "dataset", "perturbation", "accuracy"]))
        >>> borda_score_of(matrix)
        config
        A    4.0
        B    4.0
        C    0.0
        Name: borda, dtype: float64
    """
    _check(convention, BORDA_CONVENTIONS, "Borda")
    per_dataset = {}
    for name in _datasets(matrix):
        voters = [matrix[(name, type_)] for type_ in matrix[name].columns if matrix[(name, type_)].notna().any()]
        if voters:
            points = [voter_points(accuracies, convention) for accuracies in voters]
            per_dataset[name] = sum(points[1:], points[0])  # Series addition: NaN if any voter is NaN
    return pd.DataFrame(per_dataset, index=matrix.index, dtype=float).sum(axis=1).astype(float).rename("borda")


def borda_score(
    table: pd.DataFrame,
    config: str | Sequence[str] = "config",
    dataset: str = "dataset",
    metrics: Sequence[str] = ROBUSTGEN_METRICS,
    convention: str = DEFAULT_BORDA_CONVENTION,
) -> pd.Series:
    """Borda score of each configuration: voter points summed per dataset, then over datasets
    (:func:`borda_score_of`).

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
    return borda_score_of(voter_matrix(table, config, dataset, metrics), convention)


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


def mac_per_dataset(matrix: pd.DataFrame) -> pd.Series:
    """MAC of each dataset of a voter matrix: the mean absolute Spearman correlation between its
    perturbation types across the configurations (NaN with fewer than two of either).

    Example:
        On x the configurations rank (3, 2, 1) by clean and (2, 3, 1) by common accuracy: rho = 1 - 6 * 2
        / (3 * 8) = 0.5; y has one perturbation type, so no correlation:

        >>> import pandas as pd
        >>> rows = [(c, "x", "clean", v) for c, v in zip("abc", (0.9, 0.8, 0.7))]
        >>> rows += [(c, "x", "common", v) for c, v in zip("abc", (0.5, 0.6, 0.4))]
        >>> rows += [(c, "y", "clean", v) for c, v in zip("abc", (0.6, 0.5, 0.4))]
        >>> matrix = voter_matrix_from_long(pd.DataFrame(rows, columns=["config", "dataset", "perturbation", "accuracy"]))
        >>> mac_per_dataset(matrix)
        dataset
        x    0.5
        y    NaN
        Name: mac, dtype: float64
    """
    values = {name: _mac(matrix[name]) for name in _datasets(matrix)}
    return pd.Series(values, dtype=float, name="mac").rename_axis(VOTER_LEVELS[0])


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
        values = frame.to_numpy(dtype=float)
        frame["average"] = np.mean(values, axis=1) if values.shape[1] else np.nan  # no dataset: no MAC
        return frame
    rows = {}
    for value, members in table.groupby(group, sort=True):
        rows[value] = {name: _mac(part[list(metrics)]) for name, part in members.groupby(dataset, sort=True)}
    frame = pd.DataFrame.from_dict(rows, orient="index").rename_axis("group")
    frame["average"] = frame.astype(float).mean(axis=1, skipna=True)  # nanmean; NaN for an all-NaN group
    return frame


def _mac(accuracies: pd.DataFrame) -> float:
    if len(accuracies) < 2 or accuracies.shape[1] < 2:
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
