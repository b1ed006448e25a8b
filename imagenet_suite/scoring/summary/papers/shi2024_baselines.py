"""LCA-on-the-Line, Shi et al. 2024, Table 3's other baselines: AC (average confidence) and Agreement-on-the-Line
(Aline-S, Aline-D; Baek et al. 2022), from the outputs files the run folders hold.

Both predict each model's OOD top-1 without its OOD labels; Table 3 prints the MAE of those predictions. Here, as
in the authors' released code (``utils/agreement_utils.py``), from each run's ``outputs/<key>.pt`` (the logits, one
row per image id) of ImageNet val and of the OOD set, restricted to the set's class subset as the scorer does
(``meta.protocol.class_subset`` of the report: ImageNet-R and -A's 200 classes):

* **AC** — ``ac(shift_preds) = mean(max softmax probability)`` over the OOD images; the prediction of the OOD
  top-1. The paper says "after temperature scaling"; the released ``ac`` applies none (and ``main.py`` never
  calls it), and a temperature would need ImageNet-val labels, which no run folder holds: none here.
* **Aline-S / Aline-D** — ``aline(test_preds, test_accuracy, shift_preds)`` as released: every pair ``i ≤ j``
  of models (a model with itself too), its agreement (the fraction of images both predict alike) on ImageNet val
  and on the OOD set and its mean min-max-scaled ImageNet top-1; pairs kept whose both agreements lie in
  [0.05, 0.98]; both agreements min-max scaled; the OLS line (statsmodels) of OOD on ID agreement gives
  ``bias, slope``; ``b = shift_agreement + slope · (pair accuracy − test_agreement)``; Aline-S predicts
  ``slope · scaled ID top-1 + bias``, Aline-D ``Φ(w)`` with ``w`` the least-squares solution of ``A w = b``
  (``A``: each pair's row 0.5 at both models). The MAE is against the raw OOD top-1, as
  ``agreement_on_the_line_pred`` prints it.

MAEs are in accuracy units (fractions). A set whose class space is a mapping (ObjectNet through ImageNet's
classes) or whose runs did not predict the same images gets no row; ``notes`` says why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ....errors import ImagenetSuiteError
from ..reports import ID_DATASET

COLUMNS = ["ood_dataset", "group", "method", "models", "pairs", "mae"]
AGREEMENT_RANGE = (0.05, 0.98)  # the released aline's filter on both agreements


def minmax(values: Any) -> np.ndarray:
    """sklearn's ``MinMaxScaler`` of one column (the code's ``rescale(..., 'minmax')``); a constant column is 0.

    Example:
        >>> minmax([2.0, 4.0, 3.0]).tolist()
        [0.0, 1.0, 0.5]
    """
    from sklearn.preprocessing import MinMaxScaler

    return MinMaxScaler().fit_transform(np.asarray(values, dtype=np.float64).reshape(-1, 1)).ravel()


def aline(
    test_preds: Sequence[np.ndarray], test_accuracy: Sequence[float], shift_preds: Sequence[np.ndarray]
) -> tuple[np.ndarray, np.ndarray, int] | None:
    """``(Aline-S, Aline-D, pairs kept)``: the released ``agreement_utils.aline`` (module docstring) for models'
    predicted classes on ImageNet val (``test_preds``) and on an OOD set (``shift_preds``, the same images in the
    same order for every model) and their ImageNet top-1; None when fewer than two pairs pass the filter.

    Example:
        Three models; on each set models 0 and 1 agree on 3 of 4 images, 0 and 2 on 2 (1 and 2 on 1: ID), ...;
        the self-pairs (agreement 1) are filtered out. Aline-S is linear in the scaled ID top-1 (0, 0.5, 1):

        >>> test = [np.array([0, 1, 2, 3]), np.array([0, 1, 2, 0]), np.array([0, 1, 0, 0])]
        >>> shift = [np.array([0, 1, 2, 3]), np.array([0, 1, 0, 0]), np.array([1, 1, 0, 0])]
        >>> s, d, pairs = aline(test, [0.8, 0.7, 0.6], shift)
        >>> pairs, bool(np.allclose(s[0] - s[1], s[1] - s[2]))
        (3, True)
    """
    import statsmodels.api as sm
    from scipy.stats import norm

    n = len(test_preds)
    scaled_accuracy = minmax(test_accuracy)
    rows, test_agreements, shift_agreements, pair_accuracies = [], [], [], []
    for i in range(n):
        for j in range(i, n):
            row = np.zeros(n)
            row[i] = row[j] = 0.5  # i == j: 0.5 once, as the released code writes it
            rows.append(row)
            test_agreements.append(np.mean(test_preds[i] == test_preds[j]))
            shift_agreements.append(np.mean(shift_preds[i] == shift_preds[j]))
            pair_accuracies.append(0.5 * scaled_accuracy[i] + 0.5 * scaled_accuracy[j])
    a, test_agr, shift_agr, accs = map(np.asarray, (rows, test_agreements, shift_agreements, pair_accuracies))
    low, high = AGREEMENT_RANGE
    keep = (test_agr <= high) & (test_agr >= low) & (shift_agr <= high) & (shift_agr >= low)
    if keep.sum() < 2:
        return None
    a, test_agr, shift_agr, accs = a[keep], minmax(test_agr[keep]), minmax(shift_agr[keep]), accs[keep]
    bias, slope = sm.OLS(shift_agr, sm.add_constant(test_agr, prepend=True, has_constant="add")).fit().params
    b = shift_agr + slope * (accs - test_agr)
    w = np.linalg.lstsq(a, b, rcond=None)[0]
    return slope * scaled_accuracy + bias, norm.cdf(w), int(keep.sum())


def read_predictions(folder: Path, key: str, report: Mapping[str, Any]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``(ids, predicted class, max softmax probability)`` of the outputs file of report ``key`` in run folder
    ``folder``, restricted to the report's class subset (positions within it), rows sorted by id."""
    import torch

    from ...metrics.classification import subset_columns
    from ...metrics.row_statistics import row_statistics
    from ...outputs import ModelOutputs

    outputs = ModelOutputs.load(folder / "outputs" / f"{key.replace('/', '__')}.pt")
    subset = report.get("meta", {}).get("protocol", {}).get("class_subset")
    columns = None if subset is None else subset_columns(subset, outputs.num_classes, torch.device("cpu"))
    stats = row_statistics(outputs.values, outputs.kind, max_rank=1, columns=columns)
    order = np.argsort(np.asarray(outputs.ids))
    return (
        [outputs.ids[i] for i in order],
        stats.top_classes[:, 0].numpy()[order],
        stats.confidence.numpy().astype(np.float64)[order],
    )


def table(
    suites: Mapping[str, Mapping[str, Any]],
    folders: Mapping[str, str | Path],
    keys: Sequence[str],
    members: Mapping[str, list[str]],
    min_models: int = 3,
) -> tuple[pd.DataFrame, list[str]]:
    """``(MAE table, notes)``: per OOD dataset key of ``keys``, group of ``members`` (``ALL`` and the
    ``--groups`` groups) with at least ``min_models`` models, and method (AC, Aline-S, Aline-D), the MAE of the
    predicted OOD top-1 over the group's models (columns :data:`COLUMNS`); ``notes``: the sets left out and why."""
    notes: list[str] = []
    id_keys = {name: _id_key(suite) for name, suite in suites.items()}
    if any(key is None for key in id_keys.values()):
        return pd.DataFrame(columns=COLUMNS), ["AC / Agreement-on-the-Line: a run has no ImageNet-val report."]
    try:
        test = {name: read_predictions(Path(folders[name]), id_keys[name], suites[name]["datasets"][id_keys[name]])
                for name in suites}  # fmt: skip
    except (ImagenetSuiteError, OSError, KeyError) as err:  # an unreadable or missing outputs file: said so
        return pd.DataFrame(columns=COLUMNS), [f"AC / Agreement-on-the-Line: {err}"]
    rows = []
    for key in keys:
        reports = {name: suite["datasets"].get(key, {}) for name, suite in suites.items()}
        if any("mapping_rule" in r.get("meta", {}).get("protocol", {}) for r in reports.values()):
            notes.append(f"`{key}`: its classes are a mapping of ImageNet's (max over mapped logits): not computed.")
            continue
        try:
            shift = {name: read_predictions(Path(folders[name]), key, reports[name]) for name in suites}
        except (ImagenetSuiteError, OSError, KeyError) as err:
            notes.append(f"`{key}`: {err}")
            continue
        if (
            len({tuple(ids) for ids, _, _ in shift.values()}) > 1
            or len({tuple(ids) for ids, _, _ in test.values()}) > 1
        ):
            notes.append(f"`{key}`: the runs did not predict the same images: no agreement.")
            continue
        for group, models in members.items():
            if len(models) < min_models:
                continue
            target = np.array([suites[m]["summary"]["accuracies"][key]["value"] for m in models], dtype=np.float64)
            confidence = np.array([shift[m][2].mean() for m in models])
            rows.append((key, group, "AC", len(models), np.nan, float(np.mean(np.abs(confidence - target)))))
            accuracy = [suites[m]["summary"]["quba"]["dimensions"].get("accuracy", {}).get("value") for m in models]
            if any(value is None for value in accuracy):
                accuracy = [suites[m]["summary"]["accuracies"][id_keys[m]]["value"] for m in models]
            found = aline([test[m][1] for m in models], accuracy, [shift[m][1] for m in models])
            if found is None:
                notes.append(f"`{key}` {group}: fewer than two pairs of models agree within {AGREEMENT_RANGE}.")
                continue
            for method, predicted in (("Aline-S", found[0]), ("Aline-D", found[1])):
                rows.append((key, group, method, len(models), found[2], float(np.mean(np.abs(predicted - target)))))
    return pd.DataFrame(rows, columns=COLUMNS), notes


def _id_key(suite: Mapping[str, Any]) -> str | None:
    return next((k for k, r in suite["datasets"].items() if r.get("meta", {}).get("dataset") == ID_DATASET), None)


__all__ = ["AGREEMENT_RANGE", "COLUMNS", "aline", "minmax", "read_predictions", "table"]
