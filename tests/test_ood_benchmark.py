"""OpenOOD v1.5's ImageNet-1k benchmark (``evaluate --benchmark openood-v1.5-imagenet``): the table equals OpenOOD's
own metric code (``openood/evaluators/metrics.py`` at HEAD 3c35632, transcribed below with sklearn) and its
``Evaluator._eval_ood`` means; the NINCO-convention column equals NINCO's ``fpr_at_tpr``."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn import metrics

from imagenet_suite.commands.evaluate import BENCHMARK_NAMES
from imagenet_suite.scoring.benchmarks import (
    BENCHMARKS,
    OPENOOD_V15_IMAGENET,
    benchmark_table,
    header,
    openood_frame_rows,
)


def openood_compute_all_metrics(conf: np.ndarray, label: np.ndarray) -> dict[str, float]:
    """OpenOOD's ``compute_all_metrics`` / ``auc_and_fpr_recall`` (OOD = label -1 is positive), verbatim logic."""
    ood_indicator = np.zeros_like(label)
    ood_indicator[label == -1] = 1
    fpr_list, tpr_list, _ = metrics.roc_curve(ood_indicator, -conf)
    fpr = fpr_list[np.argmax(tpr_list >= 0.95)]
    precision_in, recall_in, _ = metrics.precision_recall_curve(1 - ood_indicator, conf)
    precision_out, recall_out, _ = metrics.precision_recall_curve(ood_indicator, -conf)
    return {
        "fpr95_openood_v15": fpr,
        "auroc": metrics.auc(fpr_list, tpr_list),
        "aupr_in": metrics.auc(recall_in, precision_in),
        "aupr_out": metrics.auc(recall_out, precision_out),
    }


def ninco_fpr(id_scores: np.ndarray, ood_scores: np.ndarray) -> float:
    """NINCO's ``utils.fpr_at_tpr``: ID positive, numpy's linear quantile."""
    threshold = np.quantile(id_scores, 1 - 0.95)
    return float(np.mean(ood_scores >= threshold))


def test_the_cli_offers_every_benchmark():
    assert set(BENCHMARK_NAMES) == set(BENCHMARKS)


@pytest.mark.parametrize("ties", [False, True])
def test_the_table_equals_openoods_metrics_and_means(ties):
    rng = np.random.default_rng(5)
    sizes = {"ssb_hard": 40, "ninco": 25, "inaturalist": 30, "textures": 20, "openimage_o": 35}
    shift = {"ssb_hard": 0.5, "ninco": 1.0, "inaturalist": 2.0, "textures": 1.5, "openimage_o": 1.2}

    def draw(n, mean):
        values = rng.normal(mean, 1.0, n)
        return np.round(values, 1) if ties else values

    id_scores = draw(60, 2.0)
    ood = {name: draw(n, 2.0 - shift[name]) for name, n in sizes.items()}
    table = benchmark_table(
        OPENOOD_V15_IMAGENET,
        {"msp": torch.from_numpy(id_scores)},
        {name: {"msp": torch.from_numpy(values)} for name, values in ood.items()},
        accuracy=0.8,
    )["msp"]
    assert [row["set"] for row in table] == [
        "ssb_hard", "ninco", "nearood", "inaturalist", "textures", "openimage_o", "farood"
    ]  # fmt: skip
    expected = {}
    for name, values in ood.items():
        conf = np.concatenate([id_scores, values])
        label = np.concatenate([np.zeros(len(id_scores), dtype=int), -np.ones(len(values), dtype=int)])
        expected[name] = {**openood_compute_all_metrics(conf, label), "fpr95": ninco_fpr(id_scores, values)}
    for group, members in (("nearood", ["ssb_hard", "ninco"]), ("farood", ["inaturalist", "textures", "openimage_o"])):
        expected[group] = {m: np.mean([expected[n][m] for n in members]) for m in expected["ninco"]}
    for row in table:
        for metric, value in expected[row["set"]].items():
            assert row[metric] == pytest.approx(value, rel=1e-12, abs=1e-12), (row["set"], metric)
        assert row["acc"] == 0.8
    printed = openood_frame_rows({"msp": table}, "msp")
    assert header() == ["set", "FPR@95", "AUROC", "AUPR_IN", "AUPR_OUT", "ACC", "FPR@95 (ID+)"]
    assert printed[2][0] == "nearood" and printed[2][2] == f"{100 * expected['nearood']['auroc']:.2f}"
