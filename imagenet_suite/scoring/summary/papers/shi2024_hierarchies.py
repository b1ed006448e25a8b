"""LCA-on-the-Line, Shi et al. 2024, Table 4: the LCA line under many latent (K-means) hierarchies.

The paper builds one K-means latent hierarchy from each of its 75 models (App. F.2; ``build kmeans_hierarchy``
here) and, under each, correlates the ImageNet-val LCA of all models with their OOD top-1; Table 4 prints, per
OOD set, the mean, min, max and std over the hierarchies of that correlation (``LCA_corr``) and of the
baseline's (``Top1_corr``: ImageNet top-1 vs OOD top-1, the same under every hierarchy).

The authors' code (``stats_measure_multiple_metric.py``) takes the first statistic of each hierarchy's result,
Pearson r, and prints ``np.mean, min, max, np.std`` (population std, ``ddof=0``) of them; the paper prints
absolute values (the LCA correlations are negative), so the aggregates here are of ``|r|`` — with the signed
mean beside them. Pearson r itself is scipy's (:func:`~imagenet_suite.scoring.metrics.lca_on_the_line.analyze`).

Here a run folder is scored under one hierarchy (``evaluate --hierarchy DIR``); a model evaluated under several
hierarchies is several run folders, and ``leaderboard`` given all of them groups the runs by the hierarchy their
ImageNet-val report names. Per hierarchy with at least three models, every OOD set every run has gets its
Pearson r of ID LCA (the paper's distance for the hierarchy and set:
``depth_one_sided`` for a K-means hierarchy) and of ID top-1 with OOD top-1; the aggregate runs over every
hierarchy but the WordNet tree (the paper's Table 4 is over the latent hierarchies only).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ...metrics.lca_on_the_line import analyze

MIN_MODELS = 3
LCA, TOP1 = "ImageNet LCA", "ImageNet top-1"
PER_HIERARCHY_COLUMNS = ["hierarchy", "kind", "ood_dataset", "indicator", "distance", "models", "pearson"]
AGGREGATE_COLUMNS = [
    "ood_dataset",
    "indicator",
    "hierarchies",
    "models_min",
    "models_max",
    "abs_pearson_mean",
    "abs_pearson_min",
    "abs_pearson_max",
    "abs_pearson_std",
    "pearson_mean",
]


def per_hierarchy(inputs: pd.DataFrame, kinds: Mapping[str, str]) -> pd.DataFrame:
    """Pearson r of ID LCA (in the row's paper distance) and of ID top-1 with OOD top-1, per hierarchy (of
    ``kinds``: hierarchy label -> kind) and OOD dataset of ``inputs`` (``OnTheLineTables.inputs``), over the runs
    on that hierarchy; a hierarchy with fewer than three runs, or a fit with a missing value or a constant axis,
    gets no row. Empty unless the runs span at least two hierarchies.

    Example:
        Two hierarchies, three models each; under ``h2`` the LCA orders the models exactly as their OOD top-1
        falls (r = -1), under ``h1`` the LCA of x = (5, 6, 7) against y = (0.4, 0.2, 0.3) has r = -0.5
        (centred x = (-1, 0, 1), y = (0.1, -0.1, 0): Σxy = -0.1, √(2 · 0.02) = 0.2):

        >>> rows = []
        >>> for h, lcas in (("h1", (5.0, 6.0, 7.0)), ("h2", (5.0, 7.0, 6.0))):
        ...     for m, lca, y in zip("abc", lcas, (0.4, 0.2, 0.3)):
        ...         rows.append({"model": m, "hierarchy": h, "ood_dataset": "imagenet_r", "id_lca": lca,
        ...                      "lca_distance": "depth_one_sided", "id_top1": 0.5 + y, "ood_top1": y})
        >>> table = per_hierarchy(pd.DataFrame(rows), {"h1": "kmeans", "h2": "kmeans"})
        >>> table.loc[table.indicator == "ImageNet LCA", ["hierarchy", "pearson"]].round(6).values.tolist()
        [['h1', -0.5], ['h2', -1.0]]
    """
    labelled = inputs.dropna(subset=["hierarchy"])
    if labelled["hierarchy"].nunique() < 2:
        return pd.DataFrame(columns=PER_HIERARCHY_COLUMNS)
    rows = []
    for (hierarchy, key), part in labelled.groupby(["hierarchy", "ood_dataset"], sort=True):
        if len(part) < MIN_MODELS:
            continue
        distances = set(part["lca_distance"].dropna())
        for indicator, x_column, distance in (
            (LCA, "id_lca", distances.pop() if len(distances) == 1 else None),
            (TOP1, "id_top1", ""),
        ):
            if distance is None:
                continue
            r = _pearson(part[x_column], part["ood_top1"])
            if r is not None:
                row = (hierarchy, kinds.get(hierarchy, ""), key, indicator, distance, len(part), r)
                rows.append(dict(zip(PER_HIERARCHY_COLUMNS, row, strict=True)))
    return pd.DataFrame(rows, columns=PER_HIERARCHY_COLUMNS)


def _pearson(x: pd.Series, y: pd.Series) -> float | None:
    """scipy's Pearson r (through :func:`analyze`); None with a missing value or a constant axis."""
    if x.isna().any() or y.isna().any() or np.ptp(x.to_numpy()) == 0 or np.ptp(y.to_numpy()) == 0:
        return None
    return float(analyze(x.to_numpy(), y.to_numpy()).correlations.pearson)


def aggregate(table: pd.DataFrame) -> pd.DataFrame:
    """Table 4 from :func:`per_hierarchy`: per OOD dataset and indicator, over every hierarchy but the WordNet
    tree, the number of hierarchies, the fewest and most models, mean, min, max and population std
    (``np.std``, the authors' code) of ``|r|`` (the paper prints absolute values), and the mean of the signed r.

    Example:
        |r| = 0.5 and 1.0: mean 0.75, population std 0.25 (each 0.25 from the mean):

        >>> rows = [("h1", "kmeans", "imagenet_r", "ImageNet LCA", "depth_one_sided", 3, -0.5),
        ...         ("h2", "kmeans", "imagenet_r", "ImageNet LCA", "depth_one_sided", 3, -1.0),
        ...         ("wn", "wordnet", "imagenet_r", "ImageNet LCA", "info", 3, 0.1)]
        >>> table = aggregate(pd.DataFrame(rows, columns=PER_HIERARCHY_COLUMNS))
        >>> entry = table.iloc[0]
        >>> int(entry.hierarchies), [float(entry[c]) for c in ("abs_pearson_mean", "abs_pearson_min",
        ...                                                   "abs_pearson_max", "abs_pearson_std", "pearson_mean")]
        (2, [0.75, 0.5, 1.0, 0.25, -0.75])
    """
    latent = table[table["kind"] != "wordnet"]
    rows = []
    for (key, indicator), part in latent.groupby(["ood_dataset", "indicator"], sort=True):
        values = part["pearson"].to_numpy(dtype=np.float64)
        magnitude = np.abs(values)
        rows.append(
            {
                "ood_dataset": key,
                "indicator": indicator,
                "hierarchies": len(values),
                "models_min": int(part["models"].min()),
                "models_max": int(part["models"].max()),
                "abs_pearson_mean": float(np.mean(magnitude)),
                "abs_pearson_min": float(np.min(magnitude)),
                "abs_pearson_max": float(np.max(magnitude)),
                "abs_pearson_std": float(np.std(magnitude)),
                "pearson_mean": float(np.mean(values)),
            }
        )
    order = {TOP1: 0, LCA: 1}  # the paper's rows: Top1_corr, then LCA_corr
    frame = pd.DataFrame(rows, columns=AGGREGATE_COLUMNS)
    return frame.sort_values(["ood_dataset", "indicator"], key=lambda c: c.map(order) if c.name == "indicator" else c)


def markdown(table: pd.DataFrame, summary: pd.DataFrame) -> list[str]:
    """The Table 4 part of the paper's section (empty without rows)."""
    from ...presentation.suite_markdown import table as markdown_table

    if not len(table):
        return []
    lines = [
        "### Table 4: the LCA line under each hierarchy (Pearson r of ID LCA and ID top-1 with OOD top-1)",
        "",
        "Runs grouped by the hierarchy their ImageNet-val LCA was scored under (`evaluate --hierarchy DIR`, one "
        "run folder per model and hierarchy). Over every hierarchy but the WordNet tree: mean, min, max and "
        "population std (the authors' `np.std`) of abs(r) (the paper prints absolute values), and the signed mean.",
        "",
    ]
    if len(summary):
        rows = [
            (
                r.ood_dataset,
                "LCA_corr" if r.indicator == LCA else "Top1_corr",
                r.hierarchies,
                r.models_min if r.models_min == r.models_max else f"{r.models_min}–{r.models_max}",
                r.abs_pearson_mean,
                r.abs_pearson_min,
                r.abs_pearson_max,
                r.abs_pearson_std,
                r.pearson_mean,
            )
            for r in summary.itertuples()
        ]
        header = (
            "OOD dataset",
            "row",
            "hierarchies",
            "models",
            "mean abs(r)",
            "min abs(r)",
            "max abs(r)",
            "std abs(r)",
            "mean r",
        )
        lines += markdown_table(header, rows)
    else:
        lines += ["Only the WordNet tree among the hierarchies: no Table 4 aggregate.", ""]
    lines += ["Per hierarchy: `leaderboard_lca_per_hierarchy.csv`.", ""]
    return lines


__all__ = ["aggregate", "markdown", "per_hierarchy"]
