"""QUBA (Beyond Accuracy, Hesse et al. 2025, Eq. 1): a weighted mean of z-scored quality dimensions,
with the paper's constants.

QUBA = (1 / sum_i w_i) * sum_i w_i * sign_i * (s_i - mu_i) / sigma_i over nine dimensions. The
mu/sigma are the exact constants of the QUBA code (``data_utils.py``), not the rounded Table 11;
signs flip calibration error and parameters (lower is better); default weights are 1, with 1/3 for
the three robustness dimensions and 1/2 for object focus and shape bias. They sum to 6 (the code's
``np.average`` divides by the actual sum, and only /6 reproduces Table 12). Because the constants
are fixed, a score does not depend on which other models are scored.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from ...errors import ConfigError, param
from ...reference import QUBA_DIMENSIONS

DIMENSIONS: tuple[str, ...] = QUBA_DIMENSIONS  # the reference zoo (layer 1) names them for Table 12 too
QUBA_MEAN = np.array(
    [
        0.7990557251908397,
        0.18583778826016084,
        0.5298791080592711,
        0.5664841617855405,
        0.004479927389289115,
        0.783356376851669,
        0.9286352601551336,
        0.30548520497464765,
        55.28778625954198,
    ]
)
QUBA_STD = np.array(
    [
        0.034685710545946026,
        0.11083062192390095,
        0.23383978329969085,
        0.14548627504237352,
        0.0026752085291489288,
        0.024047971612660052,
        0.017724144886557092,
        0.08354531823072534,
        42.8890536095964,
    ]
)
QUBA_SIGNS = np.array([1, 1, 1, 1, -1, 1, 1, 1, -1], dtype=float)
DEFAULT_WEIGHTS: dict[str, float] = dict(zip(DIMENSIONS, (1, 1 / 3, 1 / 3, 1 / 3, 1, 1, 1 / 2, 1 / 2, 1), strict=True))
ATTACK_CONVENTIONS: dict[str, str] = {
    "hesse2025": "FGSM/PGD on the model's normalised inputs (its eval transform, Normalize included), "
    "the attacked tensor clamped to [0,1]: Beyond Accuracy's code (Hesse et al. 2025)",
    "pixel": "FGSM/PGD in [0,1] pixel space (the model's Normalize inside the attacked module)",
}
"""Where FGSM and PGD perturb (``evaluate --attack-convention``; recorded as ``attack_convention`` in
adversarial.json): the tensors Beyond Accuracy's dataloader yields (already normalised by the weights'
transforms; ε 8/255 and torchattacks' [0, 1] clamp then act on normalised values), or [0, 1] pixels (the
threat model of robustness claims)."""
QUBA_ATTACK_CONVENTION = "hesse2025"
"""The attack convention of the adversarial dimension's μ/σ (0.186/0.111 over the paper's 326 models): its
code's. An adversarial robustness measured under another convention is on another scale and is no QUBA
dimension."""


def quba_weights(weights: Mapping[str, float] | None = None) -> np.ndarray:
    """Weight vector in :data:`DIMENSIONS` order: defaults overridden by ``weights`` (by name).

    Example:
        >>> quba_weights().round(4)
        array([1.    , 0.3333, 0.3333, 0.3333, 1.    , 1.    , 0.5   , 0.5   , 1.    ])
        >>> float(quba_weights().sum()), float(quba_weights({"shape_bias": 1}).sum())
        (6.0, 6.5)
    """
    merged = dict(DEFAULT_WEIGHTS)
    for name, value in (weights or {}).items():
        if name not in merged:
            raise ValueError(f"unknown QUBA dimension {name!r}; known: {DIMENSIONS}")
        merged[name] = float(value)
    vector = np.array([merged[name] for name in DIMENSIONS])
    if vector.sum() == 0:
        raise ValueError("QUBA weights sum to 0")
    return vector


def parse_quba_weights(text: str) -> dict[str, float]:
    """The weights of a ``--quba-weights`` value: nine comma-separated numbers in :data:`DIMENSIONS` order
    (as the paper's code takes them), or comma-separated ``dimension=weight`` pairs that override the
    defaults. ConfigError (naming ``quba_weights``) for anything else; a negative weight is allowed (the
    paper suggests inverting shape bias), weights summing to 0 are not.

    Example:
        >>> parse_quba_weights("accuracy=2, shape_bias=-0.5")
        {'accuracy': 2.0, 'shape_bias': -0.5}
        >>> parse_quba_weights("2,1,1,1,1,1,1,1,1")["accuracy"], len(parse_quba_weights("1,1,1,1,1,1,1,1,1"))
        (2.0, 9)
    """
    parts = [part.strip() for part in text.split(",")]
    if any("=" in part for part in parts):
        weights = dict(_named_weight(part) for part in parts)
    elif len(parts) == len(DIMENSIONS):
        weights = dict(zip(DIMENSIONS, map(_weight, parts), strict=True))
    else:
        raise ConfigError(
            f"{param('quba_weights')} takes {len(DIMENSIONS)} comma-separated numbers (in the order "
            f"{', '.join(DIMENSIONS)}) or dimension=weight pairs, got {text!r}"
        )
    if sum({**DEFAULT_WEIGHTS, **weights}.values()) == 0:
        raise ConfigError(f"{param('quba_weights')} {text!r}: the nine weights sum to 0")
    return weights


def _named_weight(part: str) -> tuple[str, float]:
    name, _, value = part.partition("=")
    name = name.strip()
    if name not in DIMENSIONS:
        raise ConfigError(f"{param('quba_weights')}: unknown QUBA dimension {name!r}; known: {', '.join(DIMENSIONS)}")
    return name, _weight(value)


def _weight(value: str) -> float:
    try:
        weight = float(value)
    except ValueError:
        weight = math.nan
    if not math.isfinite(weight):
        raise ConfigError(f"{param('quba_weights')}: {value.strip()!r} is not a finite number")
    return weight


def quba_z_scores(values: np.ndarray) -> np.ndarray:
    """Signed z-scores ``sign * (s - mu) / sigma`` of ``[..., 9]`` dimension values.

    Example:
        One standard deviation above the mean on every dimension; calibration error and parameters
        (lower is better) count against the model:

        >>> quba_z_scores(QUBA_MEAN + QUBA_STD).round(6)
        array([ 1.,  1.,  1.,  1., -1.,  1.,  1.,  1., -1.])
    """
    return QUBA_SIGNS * (np.asarray(values, dtype=float) - QUBA_MEAN) / QUBA_STD


def quba_score(
    values: Mapping[str, float] | np.ndarray, weights: Mapping[str, float] | None = None
) -> np.ndarray | float:
    """QUBA of one model (a mapping by dimension name) or of ``[..., 9]`` values in DIMENSIONS order.

    Example:
        A model at the paper's mean on every dimension scores 0; one standard deviation better on
        accuracy (weight 1 of the weights' sum 6) adds 1/6, a calibration error one standard
        deviation higher (lower is better) takes 1/6 away:

        >>> average = dict(zip(DIMENSIONS, QUBA_MEAN))
        >>> quba_score(average)
        0.0
        >>> round(quba_score({**average, "accuracy": QUBA_MEAN[0] + QUBA_STD[0]}), 6)
        0.166667
        >>> round(quba_score({**average, "calibration_error": QUBA_MEAN[4] + QUBA_STD[4]}), 6)
        -0.166667
        >>> better = {**average, "accuracy": QUBA_MEAN[0] + QUBA_STD[0]}
        >>> round(quba_score(better, weights={"accuracy": 4}), 6)  # weights now sum to 9: 4/9
        0.444444
    """
    if isinstance(values, Mapping):
        missing = [name for name in DIMENSIONS if name not in values]
        if missing:
            raise ValueError(f"QUBA needs all nine dimensions; missing {missing}")
        values = np.array([values[name] for name in DIMENSIONS], dtype=float)
    w = quba_weights(weights)
    scores = quba_z_scores(values) @ w / w.sum()
    return float(scores) if np.ndim(scores) == 0 else scores


AUTOATTACK_MEAN, AUTOATTACK_STD = 0.04, 0.03
"""Beyond Accuracy (App. C.4, Table 8): the mean/std of adversarial robustness over the model zoo when it
is measured with AutoAttack, "from 0.2/0.11 to 0.04/0.03" (printed to two decimals, the only precision
published); they replace QUBA's constants of that dimension in Table 8's ranking."""


def quba_score_autoattack(values: Mapping[str, float], weights: Mapping[str, float] | None = None) -> float:
    """QUBA of Beyond Accuracy's Table 8: ``values["adversarial_robustness"]`` is AutoAttack's, z-scored with
    :data:`AUTOATTACK_MEAN` / :data:`AUTOATTACK_STD`; the other eight dimensions as :func:`quba_score`.

    Example:
        AutoAttack robustness one of its standard deviations (0.03) above its mean (0.04), every other
        dimension at the paper's mean: the adversarial weight 1/3 of the weights' sum 6 gives 1/18:

        >>> average = dict(zip(DIMENSIONS, QUBA_MEAN))
        >>> round(quba_score_autoattack({**average, "adversarial_robustness": 0.07}), 6), round(1 / 18, 6)
        (0.055556, 0.055556)
    """
    z = (values["adversarial_robustness"] - AUTOATTACK_MEAN) / AUTOATTACK_STD
    index = DIMENSIONS.index("adversarial_robustness")
    return quba_score({**values, "adversarial_robustness": QUBA_MEAN[index] + z * QUBA_STD[index]}, weights)


def quba_table(models: pd.DataFrame, weights: Mapping[str, float] | None = None) -> pd.DataFrame:
    """``models`` with ``quba`` and ``quba_rank`` columns added (rank 1 = best, ties share the min rank).

    ``models`` needs one column per name in :data:`DIMENSIONS`.

    Example:
        Model ``b`` is the paper's mean model, ``a`` one standard deviation more accurate:

        >>> import pandas as pd
        >>> models = pd.DataFrame([QUBA_MEAN, QUBA_MEAN], columns=list(DIMENSIONS), index=["b", "a"])
        >>> models.loc["a", "accuracy"] += QUBA_STD[0]
        >>> quba_table(models)[["quba", "quba_rank"]].round(4)
             quba  quba_rank
        b  0.0000          2
        a  0.1667          1
    """
    missing = [name for name in DIMENSIONS if name not in models.columns]
    if missing:
        raise ValueError(f"QUBA table needs columns {list(DIMENSIONS)}; missing {missing}")
    out = models.copy()
    out["quba"] = quba_score(models[list(DIMENSIONS)].to_numpy(dtype=float), weights)
    out["quba_rank"] = rank_descending(out["quba"])
    return out


def rank_descending(scores: pd.Series | np.ndarray, ties: str = "min") -> pd.Series:
    """Rank 1 = highest score; ``ties`` as pandas ``rank(method=...)`` (``min``: equal scores share
    the best rank and the next rank is skipped, as the seed papers rank).

    Example:
        >>> rank_descending(pd.Series([0.3, 0.9, 0.3, 0.1])).tolist()
        [2, 1, 2, 4]
    """
    return pd.Series(scores).rank(ascending=False, method=ties).astype("Int64")
