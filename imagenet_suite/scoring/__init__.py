"""Scoring: model outputs in, the seed papers' metrics out, on the outputs' own device.

Modules by role:

* mechanics — threads.py (scoped torch thread settings), batching.py (chunked passes over rows);
* inputs — outputs.py (``ModelOutputs``: a ``[N, C]`` tensor, the dataset ``id`` of each row, its
  kind), join.py (outputs joined to a built dataset's label columns by id);
* pure metric functions on tensors, usable alone and registering nothing: classification.py
  (top-k, ReaL, per-class, class subsets), row_statistics.py, calibration.py (ECE conventions,
  class-wise ACE, CE), class_balance.py, shape.py (16-class decisions, shape bias), multilabel.py
  (variable top-k, ASMA, averaging over seeds), multilabel_accuracy.py (Shankar et al.'s class-averaged
  multi-label accuracy, ImageNet-M mistakes), protocols.py (class mappings of ObjectNet and IN-9,
  border crop), object_focus.py (IN-9 object focus from two accuracies), robustness.py,
  lca_scoring.py + lca_distances.py (LCA, top-5 LCA, ELCA), lca_on_the_line.py, ood.py (AUROC,
  FPR@95, AUPR) + ood_detectors.py, quba.py, aggregates.py (Sum, Borda, MAC);
* evaluation — results.py (``MetricRow``, ``ScoreReport``), options.py (one frozen options type per
  family, gathered in ``ScoreOptions``), context.py (``EvaluationContext``), family.py
  (``MetricFamily``), families/ (one module per family group; ``FAMILIES``, the explicit list),
  report.py (``score``: the evaluator);
* presentation — plots.py (reliability diagram, shape bias per category, OOD FPR per group).

This module only re-exports names; importing it (or any submodule) changes nothing the evaluator does.
"""

from .aggregates import borda_score, global_rank, mean_absolute_correlation, sum_score
from .calibration import adaptive_calibration_error, calibration_bins, calibration_error, expected_calibration_error
from .class_balance import class_balance
from .classification import Fraction, label_ranks, per_class_accuracy, real_topk_accuracy, topk_accuracy
from .context import EvaluationContext
from .families import FAMILIES
from .family import MetricFamily
from .join import JoinedSplit, join_outputs
from .object_focus import object_focus
from .options import CalibrationOptions, ClassBalanceOptions, LcaOptions, OodOptions, ScoreOptions, TopkOptions
from .outputs import KINDS, ModelOutputs
from .quba import DIMENSIONS, quba_score, quba_table
from .report import applicable_metrics, score
from .results import MetricRow, ScoreReport
from .row_statistics import RowStatistics, row_statistics
from .shape import CATEGORIES16, accuracy16, decisions16, shape_bias

__all__ = [
    "CATEGORIES16",
    "DIMENSIONS",
    "FAMILIES",
    "KINDS",
    "CalibrationOptions",
    "ClassBalanceOptions",
    "EvaluationContext",
    "Fraction",
    "JoinedSplit",
    "LcaOptions",
    "MetricFamily",
    "MetricRow",
    "ModelOutputs",
    "OodOptions",
    "RowStatistics",
    "ScoreOptions",
    "ScoreReport",
    "TopkOptions",
    "accuracy16",
    "adaptive_calibration_error",
    "applicable_metrics",
    "borda_score",
    "calibration_bins",
    "calibration_error",
    "class_balance",
    "decisions16",
    "expected_calibration_error",
    "global_rank",
    "join_outputs",
    "label_ranks",
    "mean_absolute_correlation",
    "object_focus",
    "per_class_accuracy",
    "quba_score",
    "quba_table",
    "real_topk_accuracy",
    "row_statistics",
    "score",
    "shape_bias",
    "sum_score",
    "topk_accuracy",
]
