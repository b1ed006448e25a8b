"""LCA metrics of seed 004 in the scorer: mistake severity in a class hierarchy.

Registers the ``lca`` metric family, which applies to any dataset whose ``label`` is a ClassLabel
over the 1000 ImageNet-1k wnids. It reports, for every distance (the variant name says which —
the distance is never implicit):

* ``lca`` — mean ``D[y, ŷ]`` over misclassified samples (the paper's LCA);
* ``top5_lca`` — over misclassified samples, mean of ``D[y, ŷ_j]`` over the top-5 predictions;
* ``elca`` — expected LCA under the softmax (variant ``<distance>/<elca variant>``; default ELCA
  variant ``all``; see :mod:`imagenet_suite.scoring.lca_scoring` for why the paper's ELCA values
  are not reproducible).

Distances come from the ImageNet-1k WordNet tree shipped with the package (``info``,
``depth_two_sided``, ``depth_one_sided``) unless ``ScoreOptions.hierarchy`` names a built
``wordnet_hierarchy`` / ``kmeans_hierarchy`` dataset folder, whose ``distance_*.npy`` are used.
With a published class subset (ImageNet-A/R) the matrix is sliced to the subset like the scores.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..classes import imagenet_wnids
from ..errors import ConfigError
from . import lca_scoring
from ..hierarchies.distances import METRICS as DISTANCES
from .report import EvaluationContext, Metric, MetricRow, register_metric

TOPK_LCA = 5


def applies(features: Mapping[str, Any], protocol: Mapping[str, Any]) -> bool:
    label = features.get("label") or {}
    return label.get("_type") == "ClassLabel" and tuple(label.get("names") or ()) == imagenet_wnids()


@cache
def _matrix(hierarchy: str | None, distance: str) -> np.ndarray:
    if hierarchy is None:
        from ..hierarchies.imagenet1k import imagenet1k_distance_matrix

        return imagenet1k_distance_matrix(distance)
    from ..build.dataset_folder import DatasetFolder

    folder = DatasetFolder(hierarchy)
    if folder.name not in ("wordnet_hierarchy", "kmeans_hierarchy"):
        raise ConfigError(f"--hierarchy {hierarchy}: a {folder.name} dataset, expected a wordnet_hierarchy or "
                          "kmeans_hierarchy folder")
    path = Path(hierarchy) / folder.configs[0] / f"distance_{distance}.npy"
    if not path.is_file():
        raise ConfigError(f"--hierarchy {hierarchy}: {path.name} is missing")
    return np.load(path, allow_pickle=False)


def distance_matrix(ctx: EvaluationContext, distance: str) -> torch.Tensor:
    """The C×C matrix for ``distance`` on the scores' device, sliced to the class subset if any."""
    if distance not in DISTANCES:
        raise ConfigError(f"unknown LCA distance {distance!r}; expected one of {list(DISTANCES)}")
    matrix = torch.tensor(_matrix(ctx.options.hierarchy, distance), device=ctx.scores.device)  # a copy: the cache is read-only
    if matrix.shape != (ctx.scores.shape[1],) * 2:
        raise ConfigError(f"the {distance} matrix is {tuple(matrix.shape)}, the outputs have {ctx.scores.shape[1]} classes")
    if ctx.class_subset is not None:
        matrix = matrix[ctx.class_subset][:, ctx.class_subset]
    return matrix


def _subset_scores(ctx: EvaluationContext) -> torch.Tensor:
    return ctx.scores if ctx.class_subset is None else ctx.scores[:, ctx.class_subset]


def _lca_rows(ctx: EvaluationContext) -> list[MetricRow]:
    scores, labels = _subset_scores(ctx), ctx.labels
    rows = []
    for distance in ctx.options.lca_distances:
        matrix = distance_matrix(ctx, distance)
        mistakes = lca_scoring.lca(scores, labels, matrix, check_finite=False)
        top5 = lca_scoring.topk_lca(scores, labels, matrix, k=min(TOPK_LCA, scores.shape[1]), check_finite=False)
        expected = lca_scoring.elca(scores, labels, matrix, kind=ctx.kind, variant=ctx.options.elca_variant,
                                    check_finite=False)
        rows += [MetricRow("lca", mistakes.value, distance, denominator=mistakes.count),
                 MetricRow(f"top{TOPK_LCA}_lca", top5.value, distance, denominator=top5.count),
                 MetricRow("elca", expected.value, f"{distance}/{ctx.options.elca_variant}", denominator=expected.count)]
    return rows


register_metric(Metric("lca", ("label",), applies, _lca_rows,
                       "LCA distance of mistakes, top-5 LCA and ELCA in the WordNet (or given) hierarchy",
                       "a 'label' ClassLabel over the 1000 ImageNet-1k wnids"))
