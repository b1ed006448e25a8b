"""Scoring: model outputs in, the seed papers' metrics out, on the outputs' own device.

``ModelOutputs`` (outputs.py) holds a ``[N, C]`` tensor, the dataset ``id`` of each row and its kind
(``logits``/``probs``/``log_probs``); ``score`` (report.py) joins it to a built dataset by id and
computes every metric that applies, returning a tidy table and JSON. The metric functions are pure
functions on tensors and can be used alone:

* classification.py: top-k, ReaL top-k, per-class accuracy, class-subset evaluation;
* calibration.py: ECE (``torchmetrics``/``guo``/``netcal`` binning), class-wise ACE, CE;
* class_balance.py: QUBA class balance (``reference_impl``/``paper_eq11``);
* shape.py: the 1000->16 decision mapping, shape bias, 16-class accuracy;
* quba.py: the QUBA score; aggregates.py: Sum, Borda, MAC of seed 003;
* plots.py: reliability diagram, shape bias per category.

Metric families registered by their own modules (imported here so the registry is complete):
lca.py (LCA, top-5 LCA, ELCA, seed 004), multilabel.py (variable top-k, ASMA, seed 001),
protocols.py (ObjectNet class mapping), robustness.py (per-corruption accuracy, C-robustness),
ood.py (OOD detection, seed 002).
"""

from .aggregates import borda_score, global_rank, mean_absolute_correlation, sum_score
from .calibration import adaptive_calibration_error, calibration_bins, calibration_error, expected_calibration_error
from .class_balance import class_balance
from .classification import Fraction, label_ranks, per_class_accuracy, real_topk_accuracy, topk_accuracy
from .join import JoinedSplit, join_outputs
from .outputs import KINDS, ModelOutputs
from .quba import DIMENSIONS, quba_score, quba_table
from .report import METRICS, Metric, MetricRow, ScoreOptions, ScoreReport, applicable_metrics, register_metric, score
from .row_statistics import RowStatistics, row_statistics
from .shape import CATEGORIES16, accuracy16, decisions16, shape_bias

from . import lca, multilabel, ood, protocols, robustness  # noqa: E402,F401,I001  (register their metric families)

__all__ = [
    "CATEGORIES16", "DIMENSIONS", "KINDS", "METRICS", "Fraction", "JoinedSplit", "Metric", "MetricRow",
    "ModelOutputs", "RowStatistics", "ScoreOptions", "ScoreReport", "accuracy16", "adaptive_calibration_error",
    "applicable_metrics", "borda_score", "calibration_bins", "calibration_error", "class_balance", "decisions16",
    "expected_calibration_error", "global_rank", "join_outputs", "label_ranks", "mean_absolute_correlation",
    "per_class_accuracy", "quba_score", "quba_table", "real_topk_accuracy", "register_metric", "row_statistics",
    "score", "shape_bias", "sum_score", "topk_accuracy",
]
