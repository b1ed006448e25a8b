"""The ``lca`` family of seed 004: mistake severity in a class hierarchy.

Applies to a ``label`` ClassLabel over the 1000 ImageNet-1k wnids. For every distance of
:class:`~imagenet_suite.scoring.options.LcaOptions` (the variant names it; the distance is never
implicit) it reports:

* ``lca`` — mean ``D[y, ŷ]`` over misclassified samples (the paper's LCA);
* ``top5_lca`` — over misclassified samples, mean of ``D[y, ŷ_j]`` over the top-5 predictions;
* ``elca`` — expected LCA under the softmax (variant ``<distance>/<elca variant>``; see
  :mod:`imagenet_suite.scoring.lca_scoring` for why the paper's ELCA values are not reproducible).

Matrices come from :mod:`imagenet_suite.scoring.lca_distances`; with a published class subset
(ImageNet-A/R) the matrix is sliced to the subset like the scores.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from ...classes import imagenet_wnids
from ...errors import ConfigError
from .. import lca_scoring
from ..context import EvaluationContext
from ..family import MetricFamily
from ..lca_distances import distance_matrix
from ..options import LcaOptions
from ..results import MetricRow

TOPK_LCA = 5


def applies(features: Mapping[str, Any], protocol: Mapping[str, Any]) -> bool:
    """True for a ``label`` ClassLabel whose names are exactly the ImageNet-1k wnids."""
    label = features.get("label") or {}
    return label.get("_type") == "ClassLabel" and tuple(label.get("names") or ()) == imagenet_wnids()


def evaluated_matrix(ctx: EvaluationContext, options: LcaOptions, distance: str) -> torch.Tensor:
    """The C×C matrix for ``distance`` on the scores' device, sliced to the class subset if any."""
    matrix = torch.tensor(distance_matrix(distance, options.hierarchy), device=ctx.scores.device)  # a copy
    if matrix.shape != (ctx.scores.shape[1],) * 2:
        raise ConfigError(
            f"the {distance} matrix is {tuple(matrix.shape)}, the outputs have {ctx.scores.shape[1]} classes"
        )
    if ctx.class_subset is not None:
        matrix = matrix[ctx.class_subset][:, ctx.class_subset]
    return matrix


def lca_rows(ctx: EvaluationContext, options: LcaOptions) -> list[MetricRow]:
    """``lca``, ``top5_lca`` and ``elca`` rows for every configured distance."""
    scores = ctx.scores if ctx.class_subset is None else ctx.scores[:, ctx.class_subset]
    labels, rows = ctx.labels, []
    for distance in options.distances:
        matrix = evaluated_matrix(ctx, options, distance)
        mistakes = lca_scoring.lca(scores, labels, matrix, check_finite=False)
        top5 = lca_scoring.topk_lca(scores, labels, matrix, k=min(TOPK_LCA, scores.shape[1]), check_finite=False)
        expected = lca_scoring.elca(
            scores, labels, matrix, kind=ctx.kind, variant=options.elca_variant, check_finite=False
        )
        rows += [
            MetricRow("lca", mistakes.value, distance, denominator=mistakes.count),
            MetricRow(f"top{TOPK_LCA}_lca", top5.value, distance, denominator=top5.count),
            MetricRow("elca", expected.value, f"{distance}/{options.elca_variant}", denominator=expected.count),
        ]
    return rows


LCA = MetricFamily(
    "lca",
    ("label",),
    applies,
    lca_rows,
    LcaOptions,
    "LCA distance of mistakes, top-5 LCA and ELCA in the WordNet (or given) hierarchy",
    "a 'label' ClassLabel over the 1000 ImageNet-1k wnids",
)
