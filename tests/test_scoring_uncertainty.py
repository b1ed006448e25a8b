"""The bootstrap's statistics (:mod:`imagenet_suite.scoring.metrics.uncertainty`) and every metric's numbers on
resamples, each against an independent computation.

* resamples: seeded, byte-identical on a second call, the same for two orderings of the same ids (paired),
  replicate ``b`` the same whatever the number of replicates, other seeds other draws;
* McNemar against scipy's exact binomial test (and statsmodels' ``mcnemar`` when installed) and a
  hand computation; the paired bootstrap test against its formula in numpy;
* each ``*_replicates`` function and each constructor equals the metric recomputed on the resampled rows
  (the images repeated by their counts): what the bootstrap means by "recompute on the resamples";
* suite-level: a resampled report's headline accuracy interval, its identity check, and the files.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from imagenet_suite.scoring.metrics import ace_replicates, calibration, class_balance, ood, row_statistics, uncertainty
from imagenet_suite.scoring.metrics.paired_tests import (
    mcnemar_p_values,
    mcnemar_test,
    paired_bootstrap_test,
    percentile_interval,
)
from imagenet_suite.scoring.metrics.uncertainty import GroupSums, bootstrap_counts, group_means, proportion, ratio

IDS = [f"img{i:03d}" for i in range(40)]


def _rows(counts: torch.Tensor) -> torch.Tensor:
    """The resample as row positions: each image repeated as often as drawn."""
    return torch.repeat_interleave(torch.arange(len(counts)), counts)


# ---------------------------------------------------------------------------------------------- resamples


def test_resamples_are_seeded_paired_and_prefix_stable():
    counts = bootstrap_counts(7, IDS, range(50))
    assert counts.shape == (50, 40) and (counts.sum(dim=1) == 40).all()
    assert bootstrap_counts(7, IDS, range(50)).numpy().tobytes() == counts.numpy().tobytes()
    shuffled = list(np.random.default_rng(0).permutation(IDS))
    again = bootstrap_counts(7, shuffled, range(50))  # another model's outputs, rows in another order
    position = {name: i for i, name in enumerate(shuffled)}
    assert torch.equal(again[:, [position[name] for name in IDS]], counts)
    assert torch.equal(bootstrap_counts(7, IDS, range(10, 20)), counts[10:20])  # b does not depend on B
    assert not torch.equal(bootstrap_counts(8, IDS, range(50)), counts)
    assert not torch.equal(bootstrap_counts(7, IDS[:-1], range(50))[:, :5], counts[:, :5])  # other images


def test_percentile_interval_is_numpys_linear_quantile():
    values = np.random.default_rng(3).normal(size=999)
    assert percentile_interval(values) == pytest.approx(
        (np.quantile(values, 0.025), np.quantile(values, 0.975)), rel=1e-15
    )


# ---------------------------------------------------------------------------------------------- tests


@pytest.mark.parametrize(
    ("only_first", "only_second", "both"), [(9, 2, 5), (3, 3, 0), (0, 0, 7), (0, 12, 1), (40, 25, 3)]
)
def test_mcnemar_is_scipys_exact_binomial_test(only_first, only_second, both):
    first = torch.tensor([True] * only_first + [False] * only_second + [True] * both + [False] * 4)
    second = torch.tensor([False] * only_first + [True] * only_second + [True] * both + [False] * 4)
    result = mcnemar_test(first, second)
    assert (result.only_first, result.only_second) == (only_first, only_second)
    discordant = only_first + only_second
    expected = 1.0 if discordant == 0 else stats.binomtest(only_first, discordant, 0.5).pvalue
    assert result.p_value == pytest.approx(expected, rel=1e-12)


def test_mcnemar_by_hand_and_statsmodels():
    # 9 vs 2 discordant: p = 2 * sum_{k<=2} C(11, k) / 2^11 = 2 * (1 + 11 + 55) / 2048
    first = torch.tensor([True] * 9 + [False] * 2)
    assert mcnemar_test(first, ~first).p_value == pytest.approx(2 * 67 / 2048, rel=1e-12)
    from statsmodels.stats.contingency_tables import mcnemar  # the dev group's

    assert mcnemar_test(first, ~first).p_value == pytest.approx(mcnemar([[0, 9], [2, 0]]).pvalue)


def test_mcnemar_p_values_in_one_call_are_each_pairs_own_to_the_bit():
    """A leaderboard computes its McNemar p-values in one call: each is the value the formula gives the pair alone,
    bit for bit (small and large counts, ties, no discordant image)."""
    rng = np.random.default_rng(11)
    only_first = np.concatenate([rng.integers(0, 20, 500), rng.integers(0, 30_000, 500), [0, 0, 7, 25_000]])
    only_second = np.concatenate([rng.integers(0, 20, 500), rng.integers(0, 30_000, 500), [0, 3, 7, 24_321]])
    alone = [
        1.0 if b + c == 0 else min(1.0, 2.0 * float(stats.binom.cdf(min(b, c), b + c, 0.5)))
        for b, c in zip(only_first.tolist(), only_second.tolist(), strict=True)
    ]
    together = mcnemar_p_values(only_first, only_second)
    assert together.dtype == np.float64 and together.tolist() == alone
    assert 0 < (together < 1).sum() < len(alone) and together[-4:-2].tolist() == [1.0, 0.25]


def test_paired_bootstrap_test_is_its_formula():
    rng = np.random.default_rng(5)
    first = rng.normal(0.70, 0.01, 400)
    second = first - rng.normal(0.004, 0.01, 400)
    result = paired_bootstrap_test(first, second, 0.70, 0.696)
    d = first - second
    tail = min((d <= 0).sum(), (d >= 0).sum())
    assert result.p_value == pytest.approx(min(1.0, 2 * (1 + tail) / 401))
    assert result.interval == pytest.approx((np.quantile(d, 0.025), np.quantile(d, 0.975)))
    assert result.difference == pytest.approx(0.004)
    assert paired_bootstrap_test(first, first, 0.7, 0.7).p_value == 1.0  # the same model


# ---------------------------------------------------------------------------------------------- numbers on resamples


def test_sums_over_images_equal_their_direct_computation():
    rng = torch.Generator().manual_seed(1)
    hits = torch.rand(40, generator=rng) < 0.6
    included = torch.rand(40, generator=rng) < 0.8
    distance = torch.rand(40, generator=rng) * 5
    groups = torch.randint(0, 6, (40,), generator=rng)
    parents = torch.tensor([0, 0, 1, 1, 1, 2])
    counts = bootstrap_counts(0, IDS, range(8))
    shares = proportion(IDS, hits, included).replicates([counts])
    lca = ratio(IDS, distance * ~hits, (~hits).double()).replicates([counts])
    nested = group_means(IDS, hits.double(), groups, included, parents).replicates([counts])
    one = GroupSums(IDS, hits.double(), groups, included).share(3).replicates([counts])
    for b in range(8):
        rows = _rows(counts[b])
        h, k, g = hits[rows], included[rows], groups[rows]
        assert shares[b] == pytest.approx(float((h & k).sum() / k.sum()))
        assert lca[b] == pytest.approx(float(distance[rows][~h].sum() / (~h).sum()))
        means = {int(c): float(h[k & (g == c)].double().mean()) for c in g[k].unique()}
        by_parent = [[means[c] for c in means if int(parents[c]) == p] for p in range(3)]
        assert nested[b] == pytest.approx(np.mean([np.mean(v) for v in by_parent if v]))
        assert one[b] == pytest.approx(means.get(3, math.nan), nan_ok=True)


@pytest.mark.parametrize("convention", ["torchmetrics", "guo", "netcal"])
def test_ece_on_resamples_is_the_ece_of_the_resampled_rows(convention):
    confidence = torch.rand(40, generator=torch.Generator().manual_seed(2))
    confidence[:3] = torch.tensor([1.0, 0.0, 1 / 15])  # the edge cases the conventions differ on
    correct = torch.rand(40, generator=torch.Generator().manual_seed(3)) < confidence
    counts = bootstrap_counts(1, IDS, range(6))
    found = calibration.ece_replicates(confidence, correct, counts, convention)
    for b in range(6):
        rows = _rows(counts[b])
        assert found[b] == pytest.approx(
            calibration.expected_calibration_error(confidence[rows], correct[rows], convention)
        )


@pytest.mark.parametrize("method", ace_replicates.METHODS)
@pytest.mark.parametrize(("scale", "rows"), [(2.0, 40), (60.0, 40), (2.0, 300)])
def test_ace_on_resamples_is_the_ace_of_the_resampled_rows(scale, rows, method):
    # scale 60: many probabilities underflow to 0, below ACE's threshold; 300 rows: runs of 128 summed at once
    rng = torch.Generator().manual_seed(4)
    logits = torch.randn(rows, 12, generator=rng) * scale
    labels = torch.randint(0, 12, (rows,), generator=rng)
    normalizer = row_statistics.row_statistics(logits, "logits", labels).normalizer
    counts = bootstrap_counts(2, [f"img{i:03d}" for i in range(rows)], range(5))
    found = ace_replicates.adaptive_calibration_error_replicates(logits, labels, normalizer, counts, method=method)
    for b in range(5):
        rows = _rows(counts[b])
        resampled = row_statistics.row_statistics(logits[rows], "logits", labels[rows]).normalizer
        assert found[b] == pytest.approx(
            calibration.adaptive_calibration_error(logits[rows], labels[rows], resampled), rel=1e-12
        )


@pytest.mark.parametrize("convention", ["reference_impl", "paper_eq11"])
def test_class_balance_on_resamples_is_that_of_the_resampled_rows(convention):
    rng = torch.Generator().manual_seed(5)
    correct, probability = torch.rand(40, generator=rng) < 0.6, torch.rand(40, generator=rng)
    labels = torch.randint(0, 5, (40,), generator=rng)
    counts = bootstrap_counts(3, IDS, range(6))
    found = class_balance.class_balance_replicates(correct, probability, labels, 5, counts, convention)
    for b in range(6):
        rows = _rows(counts[b])
        direct = class_balance.class_balance(correct[rows], probability[rows], labels[rows], 5, convention).value
        assert found[b] == pytest.approx(direct, rel=1e-12)


@pytest.mark.parametrize("metric", ["auroc", "fpr95"])
def test_ood_macro_on_resamples_is_that_of_the_resampled_sets(metric):
    rng = torch.Generator().manual_seed(6)
    id_scores = torch.round(torch.randn(40, generator=rng) * 3) + 1  # ties between and within the sets
    ood_scores = torch.round(torch.randn(30, generator=rng) * 3)
    groups = torch.randint(0, 3, (30,), generator=rng)
    ood_ids = [f"ood{i}" for i in range(30)]
    id_counts, ood_counts = bootstrap_counts(4, IDS, range(6)), bootstrap_counts(4, ood_ids, range(6))
    found = ood.macro_replicates(metric, id_scores, ood_scores, groups, ["a", "b", "c"], id_counts, ood_counts)
    for b in range(6):
        ids, oods = _rows(id_counts[b]), _rows(ood_counts[b])
        direct = ood.grouped_ood_metrics(id_scores[ids], ood_scores[oods], groups[oods], ["a", "b", "c"])
        assert found[b] == pytest.approx(direct.macro[metric], rel=1e-12)


def test_replicates_refuse_counts_of_other_images():
    with pytest.raises(ValueError, match="counts of shape"):
        uncertainty.proportion(IDS, torch.ones(40, dtype=torch.bool)).replicates([torch.ones(2, 39, dtype=torch.int64)])


# ---------------------------------------------------------------------------------------------- one report


def _val_report(accuracy: float) -> dict:
    row = {"metric": "top1_accuracy", "variant": "", "subgroup": "", "value": accuracy}
    return {"meta": {"dataset": "imagenet_val", "config": "default", "split": "validation"}, "metrics": [row]}


def test_a_headline_accuracy_gets_a_seeded_interval_and_its_per_image_results(tmp_path):
    from imagenet_suite.scoring.summary.intervals import (
        Bootstrap,
        bootstrap_summary,
        resample_report,
        write_uncertainty,
    )
    from imagenet_suite.scoring.summary.suite import suite_summary

    hits = torch.tensor([i % 4 != 0 for i in range(40)])
    report = _val_report(30 / 40)
    estimates = {("top1_accuracy", "", ""): proportion(IDS, hits), ("ece", "guo", ""): proportion(IDS, hits)}
    bootstrap = Bootstrap(resamples=200, seed=11)
    replicated = resample_report(report, estimates, bootstrap)
    assert list(replicated.replicates) == [("top1_accuracy", "", "")]  # the summary reads no ECE
    summary = suite_summary({"imagenet_val": report})
    record, table = bootstrap_summary({"imagenet_val": report}, {"imagenet_val": replicated}, summary, bootstrap)
    counts = bootstrap_counts(11, IDS, range(200))
    direct = (counts.double() @ hits.double() / 40).numpy()
    path = "accuracies.imagenet_val.value"
    assert record["ci95"][path] == list(percentile_interval(direct))
    assert record["ci95"]["quba.dimensions.accuracy.value"] == record["ci95"][path]
    assert np.array_equal(table[path].to_numpy(), direct)
    assert "quba.dimensions.params_millions.value" not in record["no_interval"]  # no parameter count given
    written = write_uncertainty(tmp_path, record, table, {"imagenet_val": replicated}, ["imagenet_val"])
    correct = pd.read_parquet(tmp_path / written["files"]["correct"]["imagenet_val"]["path"])
    assert correct["id"].tolist() == sorted(IDS) and correct["correct"].tolist() == hits.tolist()
    replicated = {"imagenet_val": resample_report(report, estimates, bootstrap)}
    again = write_uncertainty(
        tmp_path / "again",
        *bootstrap_summary({"imagenet_val": report}, replicated, summary, bootstrap),
        replicated,
        ["imagenet_val"],
    )
    assert json.dumps(again) == json.dumps(written)  # byte-identical on a second run: the same files' sha256
    for name in ("replicates.parquet", "imagenet_val.parquet"):
        assert (tmp_path / "again" / "uncertainty" / name).read_bytes() == (
            tmp_path / "uncertainty" / name
        ).read_bytes()


def test_a_number_its_rows_do_not_reproduce_gets_no_interval():
    from imagenet_suite.scoring.summary.intervals import Bootstrap, bootstrap_summary, resample_report
    from imagenet_suite.scoring.summary.suite import suite_summary

    report = _val_report(0.5)  # the report says 0.5, the per-image results 0.75
    estimates = {("top1_accuracy", "", ""): proportion(IDS, torch.tensor([i % 4 != 0 for i in range(40)]))}
    bootstrap = Bootstrap(resamples=20)
    replicated = {"imagenet_val": resample_report(report, estimates, bootstrap)}
    record, table = bootstrap_summary(
        {"imagenet_val": report}, replicated, suite_summary({"imagenet_val": report}), bootstrap
    )
    assert record["ci95"] == {} and table.empty
    assert record["no_interval"]["accuracies.imagenet_val.value"].startswith("resampling does not reproduce it")
