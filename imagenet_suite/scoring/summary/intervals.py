"""95 % bootstrap intervals on one model's headline numbers (``summary.uncertainty`` of suite.json), and the
run-folder files a leaderboard pairs two models with.

None of the papers reports uncertainty (they rank on point estimates); this is the textbook percentile
bootstrap over images (:mod:`imagenet_suite.scoring.metrics.uncertainty`). Every report row that the
summary reads and that a metric family can recompute on resampled images (``artifacts[RESAMPLED]``,
:func:`summary_reads`) is recomputed on ``resamples`` resamples of that report's images
(:func:`resample_report`); the resamples of a set of images depend only on the seed and the ids, so
numbers computed from the same images (ImageNet val's top-1, ECE and the ID side of NINCO) are resampled
together, and two models on the same images are resampled alike. The whole summary is then computed
again from each replicate's rows (:func:`bootstrap_summary`, with :func:`~imagenet_suite.scoring.summary.suite.suite_summary`
itself): a number that combines datasets (QUBA score, C- and OOD robustness, mCE) gets its interval from
the same replicates of every dataset it reads, each dataset resampled on its own.

A number gets an interval only when the identity resample (every image once) reproduces it — same value
within 1e-9, same sources — and it is defined on every replicate; otherwise ``no_interval`` says why (a
row without a per-image form, an ``adversarial.json`` without per-image results, ...). Never a silent
interval of another number.

The run folder's files (``RUN_DIR/uncertainty/``: the replicates and the per-image correctness the
leaderboard's paired tests read) are written and read by :mod:`.uncertainty_files`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch

from ...errors import ConfigError, param
from ...limits import check_limit
from ..evaluation.preprocessing import HESSE2025, report_protocol
from ..metrics.paired_tests import percentile_interval
from ..metrics.uncertainty import Resampled, Sample, proportion
from .number_paths import headline_numbers, number_path, value_at
from .reports import ID_DATASET, headline_row
from .suite import suite_summary
from .uncertainty_files import UNCERTAINTY_FOLDER, read_correct, read_replicates, write_uncertainty

METHOD = "percentile bootstrap over images"
CHUNK_ELEMENTS = 1 << 22  # counts of one chunk of resamples: resamples x images of a report
IDENTITY_TOLERANCE = 1e-9
ADVERSARIAL_SAMPLE = "adversarial"  # the attacked images' entry of ``samples``
RowKey = tuple[str, str, str]  # (metric, variant, subgroup)

SUMMARY_METRICS = (
    "top1_accuracy",
    "corruption_accuracy",
    "mean_corruption_accuracy",
    "clean_accuracy",
    "accuracy16",
    "shape_bias",
    "real_top1_accuracy",
    "real_top5_accuracy",
    "multilabel_accuracy",
    "multilabel_accuracy_pooled",
    "imagenet_m_mistakes",
    "asma",
    "multilabel_real_accuracy",
    "lca",
    "auroc",
    "fpr95",
)
"""Rows :func:`~imagenet_suite.scoring.summary.suite.suite_summary` reads from any report."""
ID_METRICS = ("calibration_error", "class_balance")
"""Rows it reads from the ImageNet-val report (``hesse2025``) only: their resamples are the costly ones."""


@dataclass(frozen=True)
class Bootstrap:
    """How many resamples (1 to 100,000: :data:`imagenet_suite.limits.LIMITS`) and their seed (0 or more);
    ConfigError naming ``bootstrap`` or ``bootstrap_seed`` otherwise (``evaluate --bootstrap``, ``--bootstrap-seed``).

    Example:
        >>> Bootstrap(resamples=0)
        Traceback (most recent call last):
        ...
        imagenet_suite.errors.ConfigError: bootstrap must be a number of resamples (at least 1), got 0
    """

    resamples: int = 1000
    seed: int = 0

    def __post_init__(self) -> None:
        for name, value, minimum, rule in (
            ("bootstrap", self.resamples, 1, "must be a number of resamples (at least 1)"),
            ("bootstrap_seed", self.seed, 0, "must be 0 or more"),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise ConfigError(f"{param(name)} {rule}, got {value!r}")
        check_limit("bootstrap", self.resamples)


def summary_reads(report: Mapping[str, Any], row: RowKey) -> bool:
    """Whether the suite summary may read this row of ``report`` (:data:`SUMMARY_METRICS`; :data:`ID_METRICS`
    of the ImageNet-val ``hesse2025`` report). A row it reads but this omits has no interval; never a wrong one.

    Example:
        >>> val = {"meta": {"dataset": "imagenet_val", "preprocessing": {"protocol": "hesse2025"}}}
        >>> summary_reads(val, ("calibration_error", "sqrt(ece*ace)", "")), summary_reads(val, ("ece", "guo", ""))
        (True, False)
        >>> summary_reads(val, ("corruption_accuracy", "top1", "fog/3")), summary_reads(val, ("lca", "wordnet", "n01440764"))
        (True, False)
    """
    metric, variant, subgroup = row
    if subgroup and not (metric == "corruption_accuracy" and "/" in subgroup):
        return False
    if metric in ("auroc", "fpr95"):
        return variant.endswith(":macro")
    if metric in ID_METRICS:
        return report.get("meta", {}).get("dataset") == ID_DATASET and report_protocol(report) == HESSE2025
    return metric in SUMMARY_METRICS


# ----------------------------------------------------------------------------------------- one report


@dataclass
class ReportReplicates:
    """One report's rows recomputed: on each resample (``replicates``, ``[B]`` each), on the identity resample
    (``identity``), the samples of images they read (``samples``: ``[{"rows", "ids_sha256"}]``), and the
    per-image correctness of its headline accuracy when that is a share of images (``correct``: sorted ids
    and 0/1)."""

    replicates: dict[RowKey, np.ndarray] = field(default_factory=dict)
    identity: dict[RowKey, float] = field(default_factory=dict)
    samples: list[dict[str, Any]] = field(default_factory=list)
    correct: tuple[list[str], np.ndarray] | None = None


def resample_report(
    report: Mapping[str, Any], estimates: Mapping[RowKey, Resampled], bootstrap: Bootstrap
) -> ReportReplicates:
    """Recompute the rows of ``report`` that the summary reads (:func:`summary_reads`) on the resamples
    (:func:`resample`), and keep its headline accuracy's per-image correctness when that is a share of images."""
    needed = {row: estimate for row, estimate in estimates.items() if summary_reads(report, row)}
    result = resample(needed, bootstrap)
    result.correct = _headline_correct(report, needed)
    return result


def resample(estimates: Mapping[RowKey, Resampled], bootstrap: Bootstrap) -> ReportReplicates:
    """Every number of ``estimates`` on the identity resample and on ``bootstrap.resamples`` resamples, chunk by
    chunk: each number gets at most :data:`CHUNK_ELEMENTS` counts of the widest sample at a time, or its own
    ``chunk_elements`` when it asks for more (the counts are drawn once, at the largest chunk, and handed out
    in views). Numbers given the same chunk get the same count tensors, so numbers sharing work
    (:class:`~imagenet_suite.scoring.metrics.uncertainty.GroupSums`) do it once. The draws do not depend on
    the chunks: resample b is the same whatever the chunking."""
    # keyed by the ids' object: hashing a tuple of millions of ids per lookup would cost more than the draws
    samples = {id(ids): Sample(ids) for estimate in estimates.values() for ids in estimate.samples}
    described = {sample.digest: {"rows": len(sample.ids), "ids_sha256": sample.digest} for sample in samples.values()}
    result = ReportReplicates(samples=sorted(described.values(), key=_sample_key))
    if not estimates:
        return result
    ones = {key: torch.ones(1, len(sample.ids), dtype=torch.int64) for key, sample in samples.items()}
    for row, estimate in estimates.items():
        result.identity[row] = float(estimate.replicates([ones[id(ids)] for ids in estimate.samples])[0])
    widest = max(1, *(len(s.ids) for s in samples.values()))

    def step_of(estimate: Resampled) -> int:
        elements = max(CHUNK_ELEMENTS, estimate.chunk_elements or 0)
        return max(1, min(bootstrap.resamples, elements // widest))

    steps = {row: step_of(estimate) for row, estimate in estimates.items()}
    largest = max(steps.values())
    parts: dict[RowKey, list[torch.Tensor]] = {row: [] for row in estimates}
    for start in range(0, bootstrap.resamples, largest):
        chosen = range(start, min(bootstrap.resamples, start + largest))
        counts = {key: sample.counts(bootstrap.seed, chosen) for key, sample in samples.items()}
        views: dict[int, list[dict[int, torch.Tensor]]] = {}
        for row, estimate in estimates.items():
            step = steps[row]
            if step not in views:
                views[step] = [
                    {key: found[first : first + step] for key, found in counts.items()}
                    for first in range(0, len(chosen), step)
                ]
            for view in views[step]:
                parts[row].append(estimate.replicates([view[id(ids)] for ids in estimate.samples]))
    result.replicates = {row: torch.cat(chunks).numpy() for row, chunks in parts.items()}
    return result


def _sample_key(sample: Mapping[str, Any]) -> str:
    return sample["ids_sha256"]


def _headline_correct(report: Mapping[str, Any], needed: Mapping[RowKey, Resampled]):
    """Sorted ids and 0/1 of the images the headline accuracy counts, when it is a share of images."""
    row = headline_row(report)
    if row is None:
        return None
    estimate = needed.get((row["metric"], row.get("variant", ""), row.get("subgroup", "")))
    if estimate is None or estimate.correct is None:
        return None
    ids = np.asarray(estimate.samples[0], dtype=object)
    included = estimate.included.cpu().numpy()
    order = np.argsort(ids[included], kind="stable")
    return ids[included][order].tolist(), estimate.correct.cpu().numpy()[included][order]


def adversarial_replicates(adversarial: Mapping[str, Any] | None, bootstrap: Bootstrap) -> ReportReplicates | None:
    """The clean, FGSM and PGD accuracies of ``adversarial.json`` recomputed on resamples of the attacked
    images, from its per-image results (``correct``); None without them (a file of an older imagenet-suite)."""
    if not adversarial or not adversarial.get("correct"):
        return None
    ids = adversarial["ids"]
    estimates = {
        (f"{name}_accuracy", "", ""): proportion(ids, torch.tensor([bit == "1" for bit in bits], dtype=torch.bool))
        for name, bits in adversarial["correct"].items()
    }
    return resample(estimates, bootstrap)


# ----------------------------------------------------------------------------------------- the summary


def fixed_reasons(summary: Mapping[str, Any]) -> dict[str, str]:
    """Headline numbers that are not estimates from images, and why they have no interval."""
    reasons = {}
    if "params_millions" in summary["quba"]["dimensions"]:
        reasons[number_path("quba", "dimensions", "params_millions", "value")] = (
            "exact: the model's parameter count, not estimated from images"
        )
    for name, entry in (summary.get("ninco") or {}).items():
        if entry.get("unit_tests_failed"):
            reasons[number_path("ninco", name, "unit_tests_failed")] = (
                "a count of unit tests failed (one verdict per test set), not an average over images"
            )
    return reasons


def bootstrap_summary(
    reports: Mapping[str, Mapping[str, Any]],
    replicated: Mapping[str, ReportReplicates],
    summary: Mapping[str, Any],
    bootstrap: Bootstrap,
    *,
    params_millions: float | None = None,
    adversarial: Mapping[str, Any] | None = None,
    allow_partial: bool = False,
    weights: Mapping[str, float] | None = None,
    zero_shot: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], pd.DataFrame]:
    """``(summary.uncertainty without files, replicates table)`` for the point ``summary`` of ``reports``.

    The summary is computed again from every replicate's rows (the same keyword arguments as
    :func:`~imagenet_suite.scoring.summary.suite.suite_summary`) and from the identity resample's; see the
    module docstring for when a number gets an interval. The table has one column per number with an
    interval and ``bootstrap.resamples`` rows.
    """
    attacked = adversarial_replicates(adversarial, bootstrap)
    numbers = headline_numbers(summary)

    def summary_of(pick) -> dict[str, Any]:
        rows = {key: _rows_of(report, replicated.get(key), pick) for key, report in reports.items()}
        attack = _attack_of(adversarial, attacked, pick)
        return suite_summary(
            rows,
            params_millions=params_millions,
            adversarial=attack,
            weights=weights,
            allow_partial=allow_partial,
            zero_shot=zero_shot,
        )

    identity = summary_of(None)
    values = np.full((bootstrap.resamples, len(numbers)), np.nan)
    for b in range(bootstrap.resamples):
        found = summary_of(b)
        for column, keys in enumerate(numbers.values()):
            value = value_at(found, keys)
            values[b, column] = value if isinstance(value, int | float) else np.nan
    intervals, reasons = {}, fixed_reasons(summary)
    for column, (path, keys) in enumerate(numbers.items()):
        if path in reasons:
            continue
        reason = _identity_problem(summary, identity, keys, adversarial)
        undefined = int((~np.isfinite(values[:, column])).sum())
        if reason is None and undefined:
            reason = f"undefined on {undefined} of {bootstrap.resamples} resamples"
        if reason is None:
            intervals[path] = list(percentile_interval(values[:, column]))
        else:
            reasons[path] = reason
    kept = [column for column, path in enumerate(numbers) if path in intervals]
    table = pd.DataFrame(values[:, kept], columns=[list(numbers)[column] for column in kept])
    record = {
        "method": METHOD,
        "resamples": bootstrap.resamples,
        "seed": bootstrap.seed,
        "ci95": intervals,
        "no_interval": reasons,
        "samples": {key: found.samples for key, found in sorted(replicated.items()) if found.samples},
    }
    if attacked is not None:
        record["samples"][ADVERSARIAL_SAMPLE] = attacked.samples
    return record, table


def _rows_of(report: Mapping[str, Any], found: ReportReplicates | None, pick: int | None) -> dict[str, Any]:
    """A report holding only its recomputed rows, valued on resample ``pick`` (None: the identity)."""
    rows = []
    if found is not None:
        for metric, variant, subgroup in found.identity:
            value = (
                found.identity[(metric, variant, subgroup)]
                if pick is None
                else found.replicates[(metric, variant, subgroup)][pick]
            )
            value = float(value) if math.isfinite(value) else None
            rows.append({"metric": metric, "variant": variant, "subgroup": subgroup, "value": value})
    return {"meta": report.get("meta", {}), "metrics": rows}


def _attack_of(adversarial, attacked: ReportReplicates | None, pick: int | None) -> dict[str, Any] | None:
    if attacked is None:
        return None
    values = attacked.identity if pick is None else {row: series[pick] for row, series in attacked.replicates.items()}
    return {**adversarial, **{row[0]: float(value) for row, value in values.items()}}


def _identity_problem(point, identity, keys: tuple[str, ...], adversarial) -> str | None:
    """Why the identity resample does not reproduce the number at ``keys`` (None when it does)."""
    expected, found = value_at(point, keys), value_at(identity, keys)
    if found is None:
        if (
            keys[:3] in (("quba", "dimensions", "adversarial_robustness"), ("quba", "score"))
            and adversarial
            and not adversarial.get("correct")
        ):
            return "adversarial.json records no per-image results (written by an older imagenet-suite): delete it to attack again"
        return "not resampled: a report row it is computed from has no per-image form"
    if not math.isclose(found, expected, rel_tol=IDENTITY_TOLERANCE, abs_tol=IDENTITY_TOLERANCE):
        return f"resampling does not reproduce it (every image once gives {found!r}, the reports {expected!r})"
    parent_point, parent_identity = value_at(point, keys[:-1]), value_at(identity, keys[:-1])
    for name, value in parent_point.items():
        if isinstance(value, str | int | list) and not isinstance(value, float) and parent_identity.get(name) != value:
            return f"resampling reads other rows ({name} {parent_identity.get(name)!r}, the reports {value!r})"
    return None


__all__ = [
    "ID_METRICS",
    "METHOD",
    "SUMMARY_METRICS",
    "UNCERTAINTY_FOLDER",
    "Bootstrap",
    "ReportReplicates",
    "adversarial_replicates",
    "bootstrap_summary",
    "fixed_reasons",
    "headline_numbers",
    "number_path",
    "read_correct",
    "read_replicates",
    "resample_report",
    "summary_reads",
    "value_at",
    "write_uncertainty",
]
