"""The ``lca`` family of LCA-on-the-Line (Shi et al. 2024): mistake severity in a class hierarchy.

Applies to a ``label`` ClassLabel over the 1000 ImageNet-1k wnids, and to ObjectNet through its
class mapping (prediction = the max-over-mapped-logits class; label and prediction each stand in the
tree for the first ImageNet class they map to, as the LCA-on-the-Line code does). For every distance of
:class:`~imagenet_suite.scoring.evaluation.options.LcaOptions` (the variant names it; the distance is never
implicit) it reports:

* ``lca`` — mean ``D[y, ŷ]`` over misclassified samples (the paper's LCA);
* ``top5_lca`` — over misclassified samples, mean of ``D[y, ŷ_j]`` over the top-5 predictions;
* ``elca`` — expected LCA under the softmax (variant ``<distance>/<elca variant>``; see
  :mod:`imagenet_suite.scoring.metrics.lca_scoring` for why the paper's ELCA values are not reproducible).

Matrices come from :mod:`imagenet_suite.scoring.metrics.lca_distances`; with a published class subset
(ImageNet-A/R) the matrix is sliced to the subset like the scores, with a class mapping to the first
mapped class of each class; ELCA's softmax is then over the evaluated classes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from ...classes import imagenet_wnids
from ...errors import ConfigError
from ..evaluation.context import EvaluationContext
from ..evaluation.family import MetricFamily
from ..evaluation.options import LcaOptions
from ..evaluation.results import MetricRow
from ..metrics import lca_scoring
from ..metrics.lca_distances import distance_matrix
from ..metrics.protocols import MAX_OVER_MAPPED_LOGITS, applies_class_mapping, mapped_scores, mapping_in_label_order
from ..metrics.uncertainty import ratio

TOPK_LCA = 5


def applies(features: Mapping[str, Any], protocol: Mapping[str, Any]) -> bool:
    """True for a ``label`` ClassLabel over exactly the ImageNet-1k wnids, or an ImageNet-1k class
    mapping scored max-over-mapped-logits (ObjectNet) over 1000-way outputs. Not for argmax-then-map
    (IN-9): Shi et al. 2024 define LCA on ranked classes, which that rule does not give."""
    label = features.get("label") or {}
    if label.get("_type") == "ClassLabel" and tuple(label.get("names") or ()) == imagenet_wnids():
        return True
    max_over_mapped = applies_class_mapping(features, protocol, (MAX_OVER_MAPPED_LOGITS,))
    return max_over_mapped and protocol.get("num_classes") == len(imagenet_wnids())


def evaluated_classes(ctx: EvaluationContext) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """``(scores, labels, leaves)`` in the evaluated class space.

    ``leaves[k]`` is the ImageNet-1k class standing for evaluated class ``k`` in the tree (None: the
    1000 classes themselves). A class subset (ImageNet-A/R) keeps its columns; a class mapping
    (ObjectNet) scores each of its classes by the max of its mapped logits and stands for it by the
    **first** mapped ImageNet class, for the label and the prediction alike (the LCA-on-the-Line code).
    """
    protocol = ctx.joined.protocol
    if "label" not in ctx.joined.columns:  # a class mapping (applies() admitted nothing else)
        column = protocol["label_column"]
        mapping = mapping_in_label_order(protocol, ctx.joined.features[column]["names"], ctx.scores.shape[1])
        leaves = torch.tensor([columns[0] for columns in mapping], device=ctx.scores.device)
        return mapped_scores(ctx.scores, mapping), ctx.joined.columns[column], leaves
    if ctx.class_subset is not None:
        return ctx.scores[:, ctx.class_subset], ctx.labels, ctx.class_subset
    return ctx.scores, ctx.labels, None


def evaluated_matrix(
    ctx: EvaluationContext, options: LcaOptions, distance: str, leaves: torch.Tensor | None
) -> torch.Tensor:
    """The matrix for ``distance`` on the scores' device, restricted to ``leaves`` if given."""
    matrix = torch.tensor(distance_matrix(distance, options.hierarchy), device=ctx.scores.device)  # a copy
    if matrix.shape != (ctx.scores.shape[1],) * 2:
        raise ConfigError(
            f"the {distance} matrix is {tuple(matrix.shape)}, the outputs have {ctx.scores.shape[1]} classes"
        )
    return matrix if leaves is None else matrix[leaves][:, leaves]


def lca_rows(ctx: EvaluationContext, options: LcaOptions) -> list[MetricRow]:
    """``lca``, ``top5_lca`` and ``elca`` rows for every configured distance."""
    scores, labels, leaves = evaluated_classes(ctx)
    rows = []
    for distance in options.distances:
        matrix = evaluated_matrix(ctx, options, distance, leaves)
        per_sample = lca_scoring.per_sample_lca(scores, labels, matrix, check_finite=False)
        mistakes = lca_scoring.lca_of_mistakes(per_sample)
        wrong = ~torch.isnan(per_sample)
        ctx.resample("lca", distance, "", ratio(ctx.ids, per_sample.nan_to_num(0.0), wrong.double()))
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
    ("label", "objectnet_label"),
    applies,
    lca_rows,
    LcaOptions,
    "LCA distance of mistakes, top-5 LCA and ELCA in the WordNet (or given) hierarchy",
    "a 'label' ClassLabel over the 1000 ImageNet-1k wnids, or an ImageNet-1k class mapping (ObjectNet)",
)
