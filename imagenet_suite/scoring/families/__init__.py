"""The metric families the evaluator runs, as one explicit list: :data:`FAMILIES`.

Nothing registers itself: a family is a :class:`~imagenet_suite.scoring.evaluation.family.MetricFamily`
declared in one module of this package, and it runs only because it is named below. Order matters:
a report's rows and ``meta["metrics"]`` follow it. To run a family of your own, pass
``score(..., families=(*FAMILIES, my_family))``.

=========================  ==========================  =========================================
family                     module                      applies when the dataset has
=========================  ==========================  =========================================
topk_accuracy              classification              ``label`` ClassLabel
per_class_accuracy         classification              ``label`` ClassLabel
calibration                calibration                 ``label`` ClassLabel
class_balance              class_balance               ``label`` ClassLabel
real_accuracy              classification              ``real_labels``
shape_bias, accuracy16     shape                       ``protocol.decision_mapping == imagenet_16``
lca                        lca                         ``label`` over the ImageNet-1k wnids
multilabel(_real)          multilabel                  list-of-ClassLabel ``labels`` / ``real_labels``
multilabel_accuracy        multilabel_accuracy         ``correct_labels`` + ``unclear_labels`` + ``is_problematic``
ood_detection, ...         ood                         ``protocol.ood.group_column``
ood_detection_set          ood                         ``protocol.ood`` without groups (ImageNet-O)
mapped_topk_accuracy       protocols                   ``protocol.mapping_rule``: max over mapped logits
                                                       (ObjectNet, top-k) or argmax then map (IN-9, top-1)
robustness(16)             robustness                  ``corruption`` + ``severity``
=========================  ==========================  =========================================
"""

from __future__ import annotations

from ..evaluation.family import MetricFamily
from . import (
    calibration,
    class_balance,
    classification,
    lca,
    multilabel,
    multilabel_accuracy,
    ood,
    protocols,
    robustness,
    shape,
)

FAMILIES: tuple[MetricFamily, ...] = (
    classification.TOPK_ACCURACY,
    classification.PER_CLASS_ACCURACY,
    calibration.CALIBRATION,
    class_balance.CLASS_BALANCE,
    classification.REAL_ACCURACY,
    shape.SHAPE_BIAS,
    shape.ACCURACY16,
    lca.LCA,
    multilabel.MULTILABEL,
    multilabel.MULTILABEL_REAL,
    multilabel_accuracy.MULTILABEL_ACCURACY,
    ood.OOD_DETECTION,
    ood.OOD_DETECTION_DATASETS,
    ood.OOD_DETECTION_SET,
    ood.OOD_UNIT_TESTS,
    protocols.MAPPED_TOPK_ACCURACY,
    robustness.ROBUSTNESS,
    robustness.ROBUSTNESS16,
)

__all__ = ["FAMILIES", "MetricFamily"]
