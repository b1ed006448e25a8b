"""LCA-on-the-line analysis, reproduced from the per-model results of Shi et al. 2024.

Inputs: ``tests/data/lca-on-the-line/imagenet_lca_vs_<ood>_top1.csv`` (75 models; ID LCA is the
information-based LCA). Reference values are an independent recomputation from these files (4
decimals). The paper's Tables 2, 3 and 9, every cell, are recomputed from the reference zoo (the same
values, imagenet_suite.reference) in tests/test_reference_aggregates.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from imagenet_suite.errors import HierarchyError, ShapeMismatch
from imagenet_suite.scoring.metrics.lca_on_the_line import (
    analyze,
    correlations,
    fit_line,
    leave_one_out_errors,
    minmax,
    plot,
    read_results_csv,
)

DATASETS = ("imagenetv2", "imagenet_sketch", "imagenet_r", "imagenet_a", "objectnet")
FOUR = 6e-5  # 4-decimal digest values


@pytest.fixture(scope="module")
def results(test_data):
    folder = test_data / "lca-on-the-line"
    return {name: read_results_csv(folder / f"imagenet_lca_vs_{name}_top1.csv") for name in DATASETS}


def test_model_pool(results):
    for frame in results.values():
        assert len(frame) == 75 and frame.is_vlm.sum() == 39  # 36 VMs + 39 VLMs
    assert results["objectnet"].id_lca.between(1, np.log2(1000)).all()


# ID LCA → OOD top-1, ALL models, information LCA: PEA, R², KEN (τ-b), SPE, in-sample MAE (min-max scaled)
CROSS_CHECK = {
    "imagenetv2": (-0.5818, 0.3385, -0.4207, -0.5171, 0.1625),
    "imagenet_sketch": (-0.9030, 0.8155, -0.7786, -0.9229, 0.0939),
    "imagenet_r": (-0.8827, 0.7792, -0.7613, -0.9113, 0.1142),
    "imagenet_a": (-0.8394, 0.7046, -0.7298, -0.8884, 0.1030),
    "objectnet": (-0.9564, 0.9146, -0.8673, -0.9672, 0.0485),
}


@pytest.mark.parametrize("dataset", DATASETS)
def test_lca_cross_check_table(results, dataset):
    frame = results[dataset]
    result = analyze(frame.id_lca, frame.ood_top1)
    c = result.correlations
    assert (c.pearson, c.r2, c.kendall_tau_b, c.spearman, result.mae_in_sample) == pytest.approx(
        CROSS_CHECK[dataset], abs=FOUR
    )


# ID top-1 → OOD top-1, ALL: PEA, KEN, SPE
TOP1_CROSS_CHECK = {
    "imagenetv2": (0.9806, 0.8398, 0.947),
    "imagenet_sketch": (0.2747, 0.1702, 0.0922),
    "imagenet_r": (0.1404, 0.1464, 0.0423),
    "imagenet_a": (0.0938, 0.0678, -0.037),
    "objectnet": (0.5224, 0.3167, 0.3387),
}


@pytest.mark.parametrize("dataset", DATASETS)
def test_top1_cross_check_table(results, dataset):
    frame = results[dataset]
    c = correlations(frame.id_top1, frame.ood_top1)
    assert (c.pearson, c.kendall_tau_b, c.spearman) == pytest.approx(TOP1_CROSS_CHECK[dataset], abs=FOUR)


# Raw accuracy units: OOD_top1 = a + b·LCA, in-sample and leave-one-out MAE (recomputed from these files)
RAW_FITS = {
    "imagenetv2": (2.1791, -0.2524, 0.0777, 0.0797),
    "imagenet_sketch": (3.6550, -0.5206, 0.0546, 0.0562),
    "imagenet_r": (4.9573, -0.6957, 0.0799, 0.0820),
    "imagenet_a": (3.7939, -0.5621, 0.0759, 0.0785),
    "objectnet": (3.5953, -0.5009, 0.0277, 0.0287),
}


@pytest.mark.parametrize("dataset", DATASETS)
def test_raw_unit_fits_and_leave_one_out(results, dataset):
    frame = results[dataset]
    result = analyze(frame.id_lca, frame.ood_top1, scale="none")
    measured = (result.line.intercept, result.line.slope, result.mae_in_sample, result.mae_leave_one_out)
    assert measured == pytest.approx(RAW_FITS[dataset], abs=FOUR)


def test_id_lca_vs_id_top1(results):
    frame = results["objectnet"]
    c = correlations(frame.id_lca, frame.id_top1)
    assert (c.pearson, c.kendall_tau_b, c.spearman) == pytest.approx((-0.4172, -0.2799, -0.2663), abs=FOUR)


def test_leave_one_out_closed_form_equals_refitting():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=12), rng.normal(size=12)
    refit = [y[i] - fit_line(np.delete(x, i), np.delete(y, i)).predict(x[i]) for i in range(12)]
    assert np.allclose(leave_one_out_errors(x, y), refit)


def test_minmax_line_and_kendall_with_ties():
    assert minmax([2.0, 4.0, 3.0]).tolist() == [0.0, 1.0, 0.5]
    line = fit_line([0, 1, 2, 3], [1, 3, 5, 7])
    assert (line.intercept, line.slope) == pytest.approx((1.0, 2.0))
    c = correlations([1, 2, 2, 3], [1, 2, 3, 4])  # τ-b corrects for the tie in x (τ-a would be 5/6)
    assert c.kendall_tau_b == pytest.approx(5 / np.sqrt(5 * 6))


def test_plot_is_written(results, tmp_path):
    frame = results["objectnet"]
    result = analyze(frame.id_lca, frame.ood_top1)
    path = plot(result, tmp_path / "on_the_line.png", groups=np.where(frame.is_vlm, "VLM", "VM"), title="ObjectNet")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000


def test_errors(tmp_path):
    with pytest.raises(ShapeMismatch, match="equal length"):
        analyze([1, 2, 3], [1, 2])
    with pytest.raises(HierarchyError, match="at least 3 models"):
        analyze([1, 2], [1, 2])
    with pytest.raises(HierarchyError, match="all values are equal"):
        analyze([1, 1, 1], [1, 2, 3])
    with pytest.raises(HierarchyError, match="unknown scale"):
        analyze([1, 2, 3], [1, 2, 3], scale="probit")
    bad = tmp_path / "bad.csv"
    bad.write_text(";model;acc\n0;a;0.5\n")
    with pytest.raises(HierarchyError, match="missing column"):
        read_results_csv(bad)
