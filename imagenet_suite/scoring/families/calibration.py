"""The ``calibration`` family: ECE in each configured convention, class-wise ACE, and CE = √(ECE·ACE).

Applies to a ``label`` ClassLabel (class subset applied first). The bins of every ECE convention go
to ``artifacts["calibration_bins/<convention>"]`` (the reliability diagram reads them). Metric
functions: :mod:`imagenet_suite.scoring.metrics.calibration`.
"""

from __future__ import annotations

import torch

from ..evaluation.context import EvaluationContext
from ..evaluation.family import LABEL_REQUIREMENT, MetricFamily, has_class_label
from ..evaluation.options import CalibrationOptions
from ..evaluation.results import BINS, MetricRow
from ..metrics import calibration
from ..metrics.ace_replicates import RESAMPLE_CHUNK_ELEMENTS, ClasswiseAceReplicates
from ..metrics.uncertainty import derived, resampled


def calibration_rows(ctx: EvaluationContext, options: CalibrationOptions) -> list[MetricRow]:
    """``ece`` per convention; with ``class_wise_ace`` also ``ace`` and ``calibration_error``."""
    stats = ctx.row_stats
    rows, eces = [], {}
    for convention in options.ece_conventions:
        bins = calibration.calibration_bins(stats.confidence, ctx.top1_correct, convention)
        ctx.artifacts[BINS + convention] = bins
        eces[convention] = bins.expected_calibration_error
        rows.append(MetricRow("ece", eces[convention], convention))
        ctx.resample("ece", convention, "", _ece_resampled(ctx, convention))
    if not options.class_wise_ace:
        return rows
    ace = calibration.adaptive_calibration_error(
        ctx.scores, ctx.labels, stats.normalizer, options.ace_bins, columns=ctx.class_subset
    )
    rows.append(MetricRow("ace", ace, "adaptive_classwise"))
    ece = eces.get(calibration.DEFAULT_ECE_CONVENTION)
    if ece is None:
        ece = calibration.expected_calibration_error(stats.confidence, ctx.top1_correct)
    rows.append(MetricRow("calibration_error", calibration.calibration_error(ece, ace), "sqrt(ece*ace)"))
    ace = ClasswiseAceReplicates(ctx.scores, ctx.labels, stats.normalizer, options.ace_bins, columns=ctx.class_subset)
    ace_resampled = resampled([ctx.ids], lambda counts: ace(counts[0]), chunk_elements=RESAMPLE_CHUNK_ELEMENTS)
    ctx.resample("ace", "adaptive_classwise", "", ace_resampled)
    product = derived(torch.mul, _ece_resampled(ctx, calibration.DEFAULT_ECE_CONVENTION), ace_resampled)
    ctx.resample("calibration_error", "sqrt(ece*ace)", "", derived(torch.sqrt, product))
    return rows


def _ece_resampled(ctx: EvaluationContext, convention: str):
    confidence, correct = ctx.row_stats.confidence, ctx.top1_correct
    return resampled([ctx.ids], lambda counts: calibration.ece_replicates(confidence, correct, counts[0], convention))


CALIBRATION = MetricFamily(
    "calibration",
    ("label",),
    has_class_label,
    calibration_rows,
    CalibrationOptions,
    "ECE (3 conventions), class-wise ACE, CE",
    LABEL_REQUIREMENT,
)
