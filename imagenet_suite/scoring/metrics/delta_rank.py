"""ΔRank of Anzaku et al. 2024: how far a model moves between two rankings of the same models (top-1 on ImageNet
V1 against ASMA on PatchML in the paper). Over models, not images: pandas only, no torch (the leaderboard's tables).
"""

from __future__ import annotations

import pandas as pd

from ...errors import ConfigError


def delta_rank(first: pd.Series, second: pd.Series) -> pd.Series:
    """``rank(first) − rank(second)`` per model (index): 1-based descending *dense* ranks — models with equal
    values share a rank and the next value takes the next rank (1, 2, 2, 3), never skipping one.

    Positive: the model ranks better under ``second`` (the paper: first = top-1 on V1, second = ASMA on
    PatchML, e.g. rank 14 → 1 gives +13). Dense is the paper's convention: the top-1 ranks behind its ΔRank
    (row position in Tables 4–10 + ΔRank) give a rank to several models ten times (two models each, e.g. two
    EVA-02 checkpoints at 89.46 % share rank 3) and the next model always has the next rank (4, not 5); the
    ASMA ranks are the tables' row positions (no two ASMA values tie). Both series must cover the same
    models, without NaN.

    Example:
        Ranks (1, 2, 2, 3) under the first metric — the tie at 0.7 does not push ``d`` to 4 — and (4, 1, 3, 2)
        under the second:

        >>> import pandas as pd
        >>> first = pd.Series({"a": 0.8, "b": 0.7, "c": 0.7, "d": 0.6})
        >>> delta_rank(first, pd.Series({"a": 0.1, "b": 0.4, "c": 0.2, "d": 0.3}))
        a   -3
        b    1
        c   -1
        d    1
        Name: delta_rank, dtype: int64
    """
    if set(first.index) != set(second.index) or first.index.has_duplicates or second.index.has_duplicates:
        only = sorted(set(first.index) ^ set(second.index), key=str)[:5]
        raise ConfigError(f"delta_rank needs the same distinct models in both metrics; differing: {only}")
    for name, series in (("first", first), ("second", second)):
        if series.isna().any():
            raise ConfigError(f"delta_rank: the {name} metric is NaN for {list(series.index[series.isna()][:5])}")
    rank_first = first.rank(ascending=False, method="dense").astype("int64")
    rank_second = second.reindex(first.index).rank(ascending=False, method="dense").astype("int64")
    return (rank_first - rank_second).rename("delta_rank")


__all__ = ["delta_rank"]
