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


def openood_msp_postprocess(logits: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """OpenOOD's ``BasePostprocessor.postprocess`` + ``inference`` (``openood/postprocessors/base_postprocessor.py``
    at 3c35632, MIT licence): ``torch.softmax`` of the network's float32 logits, ``torch.max``, ``.numpy()``."""
    score = torch.softmax(logits, dim=1)
    conf, pred = torch.max(score, dim=1)
    return pred.numpy().astype(int), conf.numpy()


def openood_eval_ood(id_conf: np.ndarray, ood: dict[str, np.ndarray], groups: dict[str, list[str]]) -> dict:
    """``Evaluator._eval_ood`` (``openood/evaluation_api/evaluator.py`` at 3c35632): per set ``compute_all_metrics``
    of ``np.concatenate([id_conf, ood_conf])`` with the OOD labels hard set to −1, then the mean row, × 100."""
    rows = {}
    for group, names in groups.items():
        found = []
        for name in names:
            conf = np.concatenate([id_conf, ood[name]])
            label = np.concatenate([np.zeros(len(id_conf), dtype=int), -np.ones(len(ood[name]), dtype=int)])
            metrics_ = openood_compute_all_metrics(conf, label)
            found.append([metrics_[m] for m in ("fpr95_openood_v15", "auroc", "aupr_in", "aupr_out")])
            rows[name] = np.array(found[-1]) * 100
        rows[f"{group}ood"] = np.mean(np.array(found), axis=0) * 100
    return rows


def confident_logits(rng: np.random.Generator, n: int, margin_scale: float, classes: int = 100) -> torch.Tensor:
    """Float32 logits whose top class leads the others by an exponential margin: a large margin makes the float32
    softmax of the top class exactly 1.0 (or 0.99999994, ...), as a confident ImageNet model's often is."""
    logits = rng.normal(0.0, 1.0, (n, classes))
    top = rng.integers(0, classes, n)
    logits[np.arange(n), top] = logits.max(axis=1) + rng.exponential(margin_scale, n)
    return torch.from_numpy(logits.astype(np.float32))


def test_the_msp_table_equals_openoods_evaluator_on_a_confident_model():
    """OpenOOD v1.5 (Zhang et al. 2023) computes MSP as a float32 softmax, so a confident model's images tie at 1.0;
    every printed cell of our MSP table equals OpenOOD's postprocessor + ``Evaluator._eval_ood`` (a float64 softmax,
    which breaks the ties, would not: the check at the end)."""
    from imagenet_suite.scoring.metrics.ood_detectors import detector_scores

    rng = np.random.default_rng(7)
    id_logits = confident_logits(rng, 400, 9.0)
    scales = {"ssb_hard": 7.0, "ninco": 6.0, "inaturalist": 4.0, "textures": 5.0, "openimage_o": 50.0}
    ood_logits = {name: confident_logits(rng, 300, scale) for name, scale in scales.items()}
    _, id_conf = openood_msp_postprocess(id_logits)
    ood_conf = {name: openood_msp_postprocess(logits)[1] for name, logits in ood_logits.items()}
    assert id_conf.dtype == np.float32
    assert 0.03 < (id_conf == 1.0).mean() < 0.15 and (ood_conf["openimage_o"] == 1.0).mean() > 0.5  # ties at 1.0
    groups = {"near": ["ssb_hard", "ninco"], "far": ["inaturalist", "textures", "openimage_o"]}
    expected = openood_eval_ood(id_conf, ood_conf, groups)

    def table(scores):
        ours = benchmark_table(
            OPENOOD_V15_IMAGENET,
            {"msp": scores(id_logits)},
            {name: {"msp": scores(logits)} for name, logits in ood_logits.items()},
            accuracy=0.5,
        )
        return openood_frame_rows(ours, "msp"), ours["msp"]

    printed, rows = table(lambda logits: detector_scores("msp", logits, "logits"))
    assert [row[0] for row in printed] == list(expected)
    for row, cells, values in zip(rows, printed, expected.values(), strict=True):
        got = [100 * row[m] for m in ("fpr95_openood_v15", "auroc", "aupr_in", "aupr_out")]
        assert got == pytest.approx(values, rel=1e-12, abs=1e-10), row["set"]
        assert list(cells[1:5]) == [f"{v:,.2f}" for v in values], row["set"]  # OpenOOD prints '{:,.2f}'
    float64, _ = table(lambda logits: torch.softmax(logits.double(), dim=1).max(dim=1).values)
    assert float64 != printed  # the float64 softmax breaks the ties: another table
