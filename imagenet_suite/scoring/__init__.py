"""Scoring: model outputs in, the papers' metrics out, on the outputs' own device.

Subpackages by role (a newcomer looking for a metric opens ``metrics/``):

* root — the inputs and mechanics: outputs.py (``ModelOutputs``: a ``[N, C]`` tensor, the dataset
  ``id`` of each row, its kind), join.py (outputs joined to a built dataset's label columns by id),
  threads.py (scoped torch thread settings), batching.py (chunked passes over rows);
* metrics/ — pure metric functions on tensors, usable alone and registering nothing:
  classification (top-k, ReaL, per-class, class subsets), row_statistics, calibration (ECE
  conventions, class-wise ACE, CE), class_balance, shape (16-class decisions, shape bias), multilabel
  (variable top-k, ASMA, averaging over seeds), multilabel_accuracy (Shankar et al.'s class-averaged
  multi-label accuracy, ImageNet-M mistakes), protocols (class mappings of ObjectNet and IN-9, border
  crop), object_focus (IN-9 object focus from two accuracies), robustness, lca_scoring +
  lca_distances (LCA, top-5 LCA, ELCA), lca_on_the_line, ood (AUROC, FPR@95, AUPR) + ood_detectors
  (scores), ood_detector_stats (train statistics, their files), ood_detector_fit + ood_fit (fitting them),
  quba, aggregates (Sum, Borda, MAC), uncertainty (bootstrap over images, McNemar, paired bootstrap test);
* families/ — one ``MetricFamily`` per topic; ``FAMILIES``, the explicit list;
* evaluation/ — results (``MetricRow``, ``ScoreReport``), options (one frozen options type per
  family, gathered in ``ScoreOptions``), context (``EvaluationContext``), family (``MetricFamily``),
  report (``score``: the evaluator);
* summary/ — suite (one model's headline numbers, from reports, quba, imagenet_c and headlines), suite_json
  (reading suite.json back, checked by json_schema; its rows as columns: metric_columns; what a reader keeps of it:
  suite_holding, column_rows), intervals (their bootstrap intervals), leaderboard (many
  models), papers/ (one module per paper: the leaderboard's tables of that
  paper), groups (``--groups`` files), significance (paired tests of adjacent ranks);
* presentation/ — plots (reliability diagram, shape bias per category, OOD FPR per group, correlation heatmap),
  figure_files (a figure saved once), suite_markdown, html (the pages; shading: cells shaded by value), html_run,
  html_leaderboard, figures/ (one module per paper).

This module only re-exports names, each imported from its module when first used (PEP 562): importing a
submodule (``scoring.summary.suite_json``, which the leaderboard reads runs with) does not import torch and the
evaluator with it. Importing it (or any submodule) changes nothing the evaluator does.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

EXPORTS = {  # name -> the module (under this package) that defines it
    "EvaluationContext": "evaluation.context",
    "MetricFamily": "evaluation.family",
    "CalibrationOptions": "evaluation.options",
    "ClassBalanceOptions": "evaluation.options",
    "LcaOptions": "evaluation.options",
    "OodOptions": "evaluation.options",
    "ScoreOptions": "evaluation.options",
    "TopkOptions": "evaluation.options",
    "applicable_metrics": "evaluation.report",
    "score": "evaluation.report",
    "MetricRow": "evaluation.results",
    "ScoreReport": "evaluation.results",
    "FAMILIES": "families",
    "JoinedSplit": "join",
    "join_outputs": "join",
    "borda_score": "metrics.aggregates",
    "global_rank": "metrics.aggregates",
    "mean_absolute_correlation": "metrics.aggregates",
    "sum_score": "metrics.aggregates",
    "adaptive_calibration_error": "metrics.calibration",
    "calibration_bins": "metrics.calibration",
    "calibration_error": "metrics.calibration",
    "expected_calibration_error": "metrics.calibration",
    "class_balance": "metrics.class_balance",
    "Fraction": "metrics.classification",
    "label_ranks": "metrics.classification",
    "per_class_accuracy": "metrics.classification",
    "real_topk_accuracy": "metrics.classification",
    "topk_accuracy": "metrics.classification",
    "object_focus": "metrics.object_focus",
    "DIMENSIONS": "metrics.quba",
    "quba_score": "metrics.quba",
    "quba_table": "metrics.quba",
    "RowStatistics": "metrics.row_statistics",
    "row_statistics": "metrics.row_statistics",
    "CATEGORIES16": "metrics.shape",
    "accuracy16": "metrics.shape",
    "decisions16": "metrics.shape",
    "shape_bias": "metrics.shape",
    "KINDS": "outputs",
    "ModelOutputs": "outputs",
}

if TYPE_CHECKING:  # the names as static tools see them
    from .evaluation.context import EvaluationContext
    from .evaluation.family import MetricFamily
    from .evaluation.options import (
        CalibrationOptions,
        ClassBalanceOptions,
        LcaOptions,
        OodOptions,
        ScoreOptions,
        TopkOptions,
    )
    from .evaluation.report import applicable_metrics, score
    from .evaluation.results import MetricRow, ScoreReport
    from .families import FAMILIES
    from .join import JoinedSplit, join_outputs
    from .metrics.aggregates import borda_score, global_rank, mean_absolute_correlation, sum_score
    from .metrics.calibration import (
        adaptive_calibration_error,
        calibration_bins,
        calibration_error,
        expected_calibration_error,
    )
    from .metrics.class_balance import class_balance
    from .metrics.classification import Fraction, label_ranks, per_class_accuracy, real_topk_accuracy, topk_accuracy
    from .metrics.object_focus import object_focus
    from .metrics.quba import DIMENSIONS, quba_score, quba_table
    from .metrics.row_statistics import RowStatistics, row_statistics
    from .metrics.shape import CATEGORIES16, accuracy16, decisions16, shape_bias
    from .outputs import KINDS, ModelOutputs


def __getattr__(name: str) -> Any:
    if name not in EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{EXPORTS[name]}", __name__), name)
    globals()[name] = value  # the next lookup finds it without this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *EXPORTS})


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
