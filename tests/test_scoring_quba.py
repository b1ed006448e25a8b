"""QUBA (Beyond Accuracy, Hesse et al. 2025, Eq. 1): weights, signs and refusals, on rows of the paper's Table 12
(tests/data/papers). Table 12's scores, order and ranks recomputed from the reference zoo: tests/test_reference_aggregates.py.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from imagenet_suite.scoring.metrics.quba import DIMENSIONS, quba_score, quba_table

# Beyond Accuracy's Table 12 (Hesse et al. 2025; all 326 models, in the paper's row order); provenance in
# tests/data/README.md.
TABLE12 = "papers/hesse2025_table12_quba_326_models.csv"
COLUMNS = {
    "acc": "accuracy",
    "adv_rob": "adversarial_robustness",
    "c_rob": "c_robustness",
    "ood_rob": "ood_robustness",
    "cal_err": "calibration_error",
    "class_bal": "class_balance",
    "obj_focus": "object_focus",
    "shape_bias": "shape_bias",
    "params_M": "params_millions",
}


@pytest.fixture(scope="module")
def table12(test_data) -> pd.DataFrame:
    """Table 12 in the paper's row order (ascending QUBA); published rank = 326 - row index."""
    frame = pd.read_csv(test_data / TABLE12)
    frame = frame.rename(columns=COLUMNS)
    frame["published_rank"] = len(frame) - np.arange(len(frame))
    return frame


def test_appendix_has_all_326_models(table12):
    assert len(table12) == 326 and table12[list(DIMENSIONS)].notna().all().all()


def test_spot_checks_from_the_spec(table12):
    def row(model, source):
        match = table12[(table12.model == model) & (table12.source == source)]
        return dict(match.iloc[0][list(DIMENSIONS)])

    # Recomputed QUBA of three Table 12 rows with the exact constants of the paper's code (data_utils.py)
    assert quba_score(row("AlexNet", "Krizhevsky")) == pytest.approx(-2.09, abs=0.005)
    assert quba_score(row("ResNet50", "He")) == pytest.approx(-0.34, abs=0.005)
    assert quba_score(row("EVA02-b", "Fang")) == pytest.approx(1.04, abs=0.005)


def test_weights_and_signs():
    from imagenet_suite.scoring.metrics.quba import QUBA_MEAN, QUBA_STD

    average = dict(zip(DIMENSIONS, QUBA_MEAN, strict=True))
    assert quba_score(average) == pytest.approx(0.0, abs=1e-12)
    # default weights sum to 6 (1 + 3 x 1/3 + 1 + 1 + 2 x 1/2 + 1)
    one_sigma_worse_calibration = {**average, "calibration_error": QUBA_MEAN[4] + QUBA_STD[4]}
    assert quba_score(one_sigma_worse_calibration) == pytest.approx(-1 / 6)
    bigger = {**average, "params_millions": QUBA_MEAN[8] + 2 * QUBA_STD[8]}
    assert quba_score(bigger) == pytest.approx(-2 / 6)
    better_shape = {**average, "shape_bias": QUBA_MEAN[7] + QUBA_STD[7]}
    assert quba_score(better_shape) == pytest.approx(0.5 / 6)
    assert quba_score(better_shape, weights={"shape_bias": 1.0}) == pytest.approx(1 / 6.5)
    assert quba_score(better_shape, weights={"shape_bias": -0.5}) == pytest.approx(-0.5 / 5)


def test_refusals():
    with pytest.raises(ValueError, match="missing \\['shape_bias'\\]"):
        quba_score({name: 0.5 for name in DIMENSIONS if name != "shape_bias"})
    with pytest.raises(ValueError, match="unknown QUBA dimension 'speed'"):
        quba_score(np.zeros(9), weights={"speed": 1})
    with pytest.raises(ValueError, match="sum to 0"):
        quba_score(np.zeros(9), weights=dict.fromkeys(DIMENSIONS, 0.0))


def test_quba_table_refuses_missing_columns(table12):
    with pytest.raises(ValueError, match="missing \\['params_millions'\\]"):
        quba_table(table12.drop(columns="params_millions"))
