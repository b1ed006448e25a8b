"""Multi-label scoring of Anzaku et al. 2024: variable top-k, ReaL accuracy on label sets, subgroup
accuracy, ASMA, ΔRank.

Inputs follow the scoring core: ``scores`` is ``[N, C]`` (any float dtype, any device, logits / probs /
log_probs: only the order of the scores matters); ``label_sets`` is ``[N, L]`` int64 holding each row's
*distinct* class indices padded with -1 (the :class:`~imagenet_suite.scoring.join.JoinedSplit` layout).

Definitions (Anzaku et al. 2024, Sec. 3.1 and 3.3):

* **variable top-k** — ``k_i = |Y_i|``; the prediction set ``P_i`` is the ``k_i`` best-scored classes,
  ties broken by the lowest class index (:func:`~imagenet_suite.scoring.metrics.classification.top_classes`), so
  ``|P_i| = |Y_i|``. With ``m_i = |P_i ∩ Y_i|`` the per-sample score of each named variant is

  ========  ===================  ==============================================================
  variant   per-sample score     note
  ========  ===================  ==============================================================
  exact     1[m = k]             subset accuracy; the default (fits the paper's numbers best)
  jaccard   m / (2k − m)         example-based accuracy of Zhang & Zhou, which ASMA "extends"
  recall    m / k                = precision = F1 here, because |P| = |Y|
  hamming   1 − 2(k − m) / C     the label-wise formula as printed; cannot give the paper's values
  ========  ===================  ==============================================================

* **subgroup g** — the rows with exactly ``g`` labels; ``A_g`` is the mean per-sample score over them.
* **ASMA** — the unweighted mean of ``A_g`` over the subgroups of a range that hold at least one row
  (a macro average over subgroups, not over images). Rows with no label (g = 0) never count. The range
  is the dataset protocol's ``label_count_subgroups`` (PatchML: its patch counts 2, 3, 4, 6, 9) and
  otherwise 1–5 (ImageNet V1/V2 in the paper, "to ensure comparability").
* **ReaL accuracy** on label sets — the top-1 class is in ``Y_i``; rows with an empty set are skipped;
  reported over all non-empty rows (``all``) and over the rows inside the subgroup range (``subgroups``).
* **averaging over seeds** — :func:`average_over_seeds` averages the reports of several PatchML builds
  (one per seed), as the paper's PatchML column does.
* **ΔRank** — :func:`delta_rank`: ``rank_a − rank_b`` with 1-based descending *dense* ranks (tied models
  share a rank and the next value takes the next rank, as the paper's top-1 ranks do); positive means ranked
  better by metric b (Anzaku et al. 2024: top-1 V1 vs ASMA PatchML).

Everything runs on the scores' device: the ranking is chunked (scoring core), the rest works on
``[N, max k]`` integer tensors; counts are int64 and sums float64.

The evaluator's families ``multilabel`` (PatchML ``labels``) and ``multilabel_real`` (ReaL label sets)
are wired in :mod:`imagenet_suite.scoring.families.multilabel`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from ...errors import ConfigError, OutputsError
from ..evaluation.results import MetricRow, ScoreReport
from ..report_names import DEFAULT_MULTILABEL_VARIANT as DEFAULT_VARIANT
from ..report_names import MULTILABEL_VARIANTS as VARIANTS
from .classification import Fraction, top_classes
from .delta_rank import delta_rank

DEFAULT_SUBGROUPS = (1, 2, 3, 4, 5)
LIST_TYPES = ("List", "LargeList", "Sequence")


# ----------------------------------------------------------------------------- label sets


def label_set_sizes(label_sets: torch.Tensor, num_classes: int | None = None) -> torch.Tensor:
    """``[N]`` int64: the number of labels of each row (entries ≥ 0), after checking the layout.

    Raises OutputsError for a tensor that is not ``[N, L]`` int, holds values outside ``-1..C-1``,
    or repeats a class within a row (sets must be distinct; a repeat would inflate ``k``).

    Example:
        >>> import torch
        >>> label_set_sizes(torch.tensor([[0, 2, -1], [3, -1, -1], [-1, -1, -1]]))
        tensor([2, 1, 0])
    """
    if label_sets.ndim != 2 or label_sets.is_floating_point():
        raise OutputsError(
            f"label_sets must be an integer [N, L] tensor padded with -1, got "
            f"{label_sets.dtype} of shape {tuple(label_sets.shape)}"
        )
    if label_sets.numel():
        low, high = int(label_sets.min()), int(label_sets.max())
        if low < -1 or (num_classes is not None and high >= num_classes):
            raise OutputsError(
                f"label_sets hold values {low}..{high}; expected class indices 0..{(num_classes or 0) - 1} "
                f"and -1 as padding"
            )
        ordered = label_sets.sort(dim=1).values
        repeated = ((ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)).any(dim=1)
        if bool(repeated.any()):
            row = int(repeated.nonzero()[0, 0])
            raise OutputsError(
                f"label set of row {row} repeats a class: {label_sets[row][label_sets[row] >= 0].tolist()}"
            )
    return (label_sets >= 0).sum(dim=1)


def variable_topk(scores: torch.Tensor, label_sets: torch.Tensor, top: torch.Tensor | None = None) -> torch.Tensor:
    """``[N, K]`` int64 prediction sets: row i holds its ``k_i = |Y_i|`` best classes, then -1.

    ``K`` is the largest ``k_i`` (at least 1). Classes are ordered by descending score, equal scores by
    ascending class index, so a prediction set is always a prefix of the row's tie-safe ranking.
    ``top``: the rows' ordered top classes if already computed (at least ``K`` columns).

    Example:
        Rows with 2, 1 and 3 labels get their 2, 1 and 3 best classes:

        >>> import torch
        >>> scores = torch.tensor([[0.5, 0.3, 0.2, 0.0], [0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]])
        >>> label_sets = torch.tensor([[0, 2, -1], [3, -1, -1], [0, 1, 2]])
        >>> variable_topk(scores, label_sets)
        tensor([[ 0,  1, -1],
                [ 3, -1, -1],
                [ 0,  1,  2]])
    """
    return _variable_topk(scores, label_set_sizes(label_sets, scores.shape[1]), top)


def _variable_topk(scores: torch.Tensor, sizes: torch.Tensor, top: torch.Tensor | None) -> torch.Tensor:
    width = max(1, int(sizes.max()) if sizes.numel() else 1)
    if width > scores.shape[1]:
        raise OutputsError(f"a label set has {width} classes but the scores have only C={scores.shape[1]}")
    if top is None or top.shape[1] < width:
        top = top_classes(scores, width)
    slots = torch.arange(width, device=top.device)[None, :]
    return torch.where(slots < sizes[:, None].to(top.device), top[:, :width], -1)


def set_hits(predictions: torch.Tensor, label_sets: torch.Tensor) -> torch.Tensor:
    """``[N]`` int64: ``m_i = |P_i ∩ Y_i|`` for padded ``[N, K]`` and ``[N, L]`` sets (-1 never matches).

    Example:
        The prediction sets of :func:`variable_topk`'s example against the label sets: {0, 1} and
        {0, 2} share one class, {3} and {3} one, {0, 1, 2} and {0, 1, 2} three:

        >>> import torch
        >>> predictions = torch.tensor([[0, 1, -1], [3, -1, -1], [0, 1, 2]])
        >>> set_hits(predictions, torch.tensor([[0, 2, -1], [3, -1, -1], [0, 1, 2]]))
        tensor([1, 1, 3])
    """
    match = (predictions[:, :, None] == label_sets[:, None, :]) & (predictions[:, :, None] >= 0)
    return match.any(dim=2).sum(dim=1)


def per_sample_scores(hits: torch.Tensor, sizes: torch.Tensor, variant: str, num_classes: int) -> torch.Tensor:
    """``[N]`` float64 per-sample score of ``variant`` (see the module table); NaN where ``k = 0``.

    Example:
        m = 1 of k = 2, 1 of 1, 3 of 3, and a row without labels, with C = 4 classes:

        >>> import torch
        >>> hits, sizes = torch.tensor([1, 1, 3, 0]), torch.tensor([2, 1, 3, 0])
        >>> per_sample_scores(hits, sizes, "exact", num_classes=4)
        tensor([0., 1., 1., nan], dtype=torch.float64)
        >>> per_sample_scores(hits, sizes, "jaccard", num_classes=4)  # m / (2k - m)
        tensor([0.3333, 1.0000, 1.0000,    nan], dtype=torch.float64)
        >>> per_sample_scores(hits, sizes, "hamming", num_classes=4)  # 1 - 2(k - m) / C
        tensor([0.5000, 1.0000, 1.0000,    nan], dtype=torch.float64)
    """
    m, k = hits.double(), sizes.double()
    if variant == "exact":
        value = (hits == sizes).double()
    elif variant == "jaccard":
        value = m / (2 * k - m)
    elif variant == "recall":
        value = m / k
    elif variant == "hamming":
        value = 1 - 2 * (k - m) / num_classes
    else:
        raise ConfigError(f"unknown subgroup metric variant {variant!r}; known: {VARIANTS}")
    return torch.where(sizes > 0, value, torch.full_like(value, math.nan))


# ----------------------------------------------------------------------------- subgroups and ASMA


@dataclass(frozen=True)
class Subgroup:
    """Accuracy ``A_g`` of the rows with exactly ``size`` labels: ``total`` (sum of per-sample scores) / ``count``."""

    size: int
    total: float
    count: int

    @property
    def value(self) -> float:
        return self.total / self.count if self.count else math.nan


def subgroup_accuracy(
    scores_per_sample: torch.Tensor, sizes: torch.Tensor, groups: Sequence[int]
) -> dict[int, Subgroup]:
    """``{g: Subgroup}`` for every ``g`` in ``groups`` (empty subgroups have ``count == 0``).

    Example:
        Per-sample scores 0 and 1 of two rows with 2 labels, 1 of a row with 1 label:

        >>> import torch
        >>> per_sample = torch.tensor([0.0, 1.0, 1.0], dtype=torch.float64)
        >>> groups = subgroup_accuracy(per_sample, torch.tensor([2, 2, 1]), groups=(1, 2, 3))
        >>> groups[2], groups[2].value
        (Subgroup(size=2, total=1.0, count=2), 0.5)
        >>> groups[3].count, groups[3].value
        (0, nan)
    """
    groups = _checked_groups(groups)
    length = max(groups) + 1
    inside = sizes < length
    index = sizes[inside]
    counts = torch.bincount(index, minlength=length)
    totals = torch.bincount(index, weights=scores_per_sample[inside].nan_to_num(0.0), minlength=length)
    counts, totals = counts.tolist(), totals.tolist()
    return {g: Subgroup(g, float(totals[g]), int(counts[g])) for g in groups}


def asma(subgroups: Mapping[int, Subgroup]) -> float:
    """Mean of ``A_g`` over the subgroups that hold rows (NaN when none does).

    Example:
        A macro average over subgroups, not images: A_1 = 1 (one row), A_2 = 0.5 (two rows), and
        the empty subgroup 3 does not count:

        >>> asma({1: Subgroup(1, 1.0, 1), 2: Subgroup(2, 1.0, 2), 3: Subgroup(3, 0.0, 0)})
        0.75
    """
    values = [group.value for group in subgroups.values() if group.count]
    return sum(values) / len(values) if values else math.nan


def _checked_groups(groups: Sequence[int]) -> tuple[int, ...]:
    groups = tuple(int(g) for g in groups)
    if not groups or min(groups) < 1 or len(set(groups)) != len(groups):
        raise ConfigError(
            f"label-count subgroups must be distinct integers ≥ 1 (empty label sets never count), got {list(groups)}"
        )
    return groups


# ----------------------------------------------------------------------------- one split


@dataclass(frozen=True)
class MultiLabelScores:
    """Everything the multi-label metrics report for one split."""

    groups: tuple[int, ...]
    subgroups: dict[str, dict[int, Subgroup]]  # variant -> g -> Subgroup
    real_all: Fraction  # top-1 in the set, over rows with ≥ 1 label
    real_in_groups: Fraction  # the same over rows whose label count is in ``groups``
    multilabel: Fraction  # rows with ≥ 2 labels over rows with ≥ 1 label
    per_sample: dict[str, torch.Tensor] = field(default_factory=dict, repr=False, compare=False)  # variant -> [N]
    sizes: torch.Tensor | None = field(default=None, repr=False, compare=False)  # [N] label counts
    top1_in_set: torch.Tensor | None = field(default=None, repr=False, compare=False)  # [N] bool

    def asma(self, variant: str = DEFAULT_VARIANT) -> float:
        return asma(self.subgroups[variant])

    def rows(self) -> list[MetricRow]:
        """Report rows; ``exact`` comes first so ``report.value("asma")`` is the default variant.

        ``asma_coverage``: labelled rows whose label count is in the subgroup range / labelled rows.
        ``subgroup_accuracy`` rows carry ``labels=g`` as subgroup and ``N_g`` as denominator; so do the
        ``multilabel_real_accuracy`` rows of variant ``subgroups`` (ReaL accuracy of the rows with g labels: Anzaku
        et al. 2024, Fig. 6a) beside their mean over the subgroups' rows (subgroup empty).
        """
        rows = [MetricRow("asma", self.asma(variant), variant) for variant in VARIANTS]
        rows.append(
            MetricRow.fraction("asma_coverage", Fraction(self.real_in_groups.denominator, self.multilabel.denominator))
        )
        rows += [
            MetricRow.fraction("multilabel_real_accuracy", self.real_all, "all"),
            MetricRow.fraction("multilabel_real_accuracy", self.real_in_groups, "subgroups"),
            MetricRow.fraction("multilabel_proportion", self.multilabel),
        ]
        for variant in VARIANTS:
            for g, group in self.subgroups[variant].items():
                numerator = round(group.total) if variant == "exact" else None
                rows.append(MetricRow("subgroup_accuracy", group.value, variant, f"labels={g}", numerator, group.count))
        if self.top1_in_set is not None and self.sizes is not None:
            for g in self.groups:
                rows_g = self.sizes == g
                counted = Fraction(int((self.top1_in_set & rows_g).sum()), int(rows_g.sum()))
                rows.append(MetricRow.fraction("multilabel_real_accuracy", counted, "subgroups", f"labels={g}"))
        return rows


def multilabel_scores(
    scores: torch.Tensor,
    label_sets: torch.Tensor,
    groups: Sequence[int] = DEFAULT_SUBGROUPS,
    top: torch.Tensor | None = None,
) -> MultiLabelScores:
    """Variable top-k, subgroup accuracies of every variant, and ReaL accuracy of one split.

    ``groups``: the label counts that form ASMA's subgroups. ``top``: ordered top classes if known.

    Example:
        Row 0 (labels {0, 2}) predicts {0, 1}: exact 0, Jaccard 1/3; row 1 ({3}) and row 2
        ({0, 1, 2}) are predicted exactly. One row per subgroup 1, 2, 3, so ASMA averages (1, 0, 1)
        exactly and (1, 1/3, 1) by Jaccard; every top-1 class is in its row's set:

        >>> import torch
        >>> scores = torch.tensor([[0.5, 0.3, 0.2, 0.0], [0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]])
        >>> label_sets = torch.tensor([[0, 2, -1], [3, -1, -1], [0, 1, 2]])
        >>> result = multilabel_scores(scores, label_sets, groups=(1, 2, 3))
        >>> round(result.asma(), 6), round(result.asma("jaccard"), 6)
        (0.666667, 0.777778)
        >>> result.real_all, result.multilabel  # ReaL top-1; rows with >= 2 labels
        (Fraction(numerator=3, denominator=3), Fraction(numerator=2, denominator=3))
    """
    groups = _checked_groups(groups)
    label_sets = label_sets.to(scores.device)
    sizes = label_set_sizes(label_sets, scores.shape[1])
    predictions = _variable_topk(scores, sizes, top)
    hits = set_hits(predictions, label_sets)
    per_sample = {v: per_sample_scores(hits, sizes, v, scores.shape[1]) for v in VARIANTS}
    subgroups = {v: subgroup_accuracy(per_sample[v], sizes, groups) for v in VARIANTS}
    top1_in_set = (predictions[:, :1] == label_sets).any(dim=1)  # -1 (no label) never matches
    labelled = sizes > 0
    in_groups = torch.isin(sizes, torch.tensor(groups, device=sizes.device))
    return MultiLabelScores(
        groups,
        subgroups,
        Fraction(int((top1_in_set & labelled).sum()), int(labelled.sum())),
        Fraction(int((top1_in_set & in_groups).sum()), int(in_groups.sum())),
        Fraction(int((sizes >= 2).sum()), int(labelled.sum())),
        per_sample,
        sizes,
        top1_in_set,
    )


# ----------------------------------------------------------------------------- several seeds, ΔRank


def average_over_seeds(reports: Sequence[ScoreReport | str | Path | Mapping[str, Any]]) -> pd.DataFrame:
    """Mean (and std) of every report row over several builds of one seeded dataset.

    ``reports``: :class:`ScoreReport` objects, JSON files written by ``imagenet-suite score --json``,
    or their dicts. They must score the same dataset, version and config with distinct seeds (read
    from ``meta.protocol.seed``). Returns columns ``metric, variant, subgroup, value, std, num_seeds``
    (rows in the order of the first report).

    Example:
        Two PatchML builds (seeds 0 and 1) with ASMA 0.5 and 0.7:

        >>> def report(seed, value):
        ...     meta = {"dataset": "patchml", "version": "1.0.0", "config": "default", "protocol": {"seed": seed}}
        ...     row = {"metric": "asma", "variant": "exact", "subgroup": "", "value": value}
        ...     return {"meta": meta, "metrics": [row]}
        >>> average_over_seeds([report(0, 0.5), report(1, 0.7)]).round(6)
          metric variant subgroup  value       std  num_seeds
        0   asma   exact             0.6  0.141421          2
    """
    loaded = [_report_dict(r) for r in reports]
    if not loaded:
        raise ConfigError("average_over_seeds needs at least one report")
    seeds = []
    for position, report in enumerate(loaded):
        meta = report["meta"]
        same = (meta.get("dataset"), meta.get("version"), meta.get("config"))
        first = (loaded[0]["meta"].get("dataset"), loaded[0]["meta"].get("version"), loaded[0]["meta"].get("config"))
        if same != first:
            raise ConfigError(
                f"report {position} scores {same}, report 0 scores {first}: average reports of one dataset only"
            )
        seeds.append((meta.get("protocol") or {}).get("seed"))
    if None in seeds or len(set(seeds)) != len(seeds):
        raise ConfigError(f"reports must come from builds with distinct seeds (meta.protocol.seed), got {seeds}")
    frames = [pd.DataFrame(report["metrics"]).assign(seed=seed) for report, seed in zip(loaded, seeds, strict=True)]
    frame = pd.concat(frames, ignore_index=True)
    frame["value"] = pd.to_numeric(frame["value"], errors="coerce")
    keys = ["metric", "variant", "subgroup"]
    grouped = frame.groupby(keys, sort=False)["value"]
    out = pd.DataFrame({"value": grouped.mean(), "std": grouped.std(), "num_seeds": grouped.count()}).reset_index()
    return out


def _report_dict(report: ScoreReport | str | Path | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(report, ScoreReport):
        return report.to_dict()
    if isinstance(report, (str, Path)):
        try:
            return json.loads(Path(report).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as err:
            raise ConfigError(f"{report}: not a readable score report JSON ({err})") from err
    if isinstance(report, Mapping) and "meta" in report and "metrics" in report:
        return dict(report)
    raise ConfigError(f"expected a ScoreReport, a JSON path or its dict, got {type(report).__name__}")


# ----------------------------------------------------------------------------- dataset shape


def is_label_set_feature(feature: Any) -> bool:
    """True for a features-dict entry that is a list of ClassLabel (``List``/``Sequence``).

    Example:
        >>> label = {"_type": "ClassLabel", "names": ["cat", "dog"]}
        >>> is_label_set_feature({"_type": "List", "feature": label}), is_label_set_feature(label)
        (True, False)
    """
    return (
        isinstance(feature, dict)
        and feature.get("_type") in LIST_TYPES
        and isinstance(feature.get("feature"), dict)
        and feature["feature"].get("_type") == "ClassLabel"
    )


def subgroups_of(protocol: Mapping[str, Any]) -> tuple[int, ...]:
    """ASMA's label-count range for a dataset: ``protocol.label_count_subgroups`` or 1–5.

    Example:
        >>> subgroups_of({"label_count_subgroups": [2, 3, 4, 6, 9]}), subgroups_of({})
        ((2, 3, 4, 6, 9), (1, 2, 3, 4, 5))
    """
    return _checked_groups(protocol.get("label_count_subgroups") or DEFAULT_SUBGROUPS)


__all__ = [
    "DEFAULT_SUBGROUPS",
    "DEFAULT_VARIANT",
    "VARIANTS",
    "MultiLabelScores",
    "Subgroup",
    "asma",
    "average_over_seeds",
    "delta_rank",
    "is_label_set_feature",
    "label_set_sizes",
    "multilabel_scores",
    "per_sample_scores",
    "set_hits",
    "subgroup_accuracy",
    "subgroups_of",
    "variable_topk",
]
