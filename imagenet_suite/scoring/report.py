"""The evaluator: every metric that applies to a dataset, as one tidy table and JSON.

Which metrics apply is decided from the dataset's columns (its ``features``) and its published
``protocol``, never from user flags:

==================  =======================================================================
metric              applies when
==================  =======================================================================
topk_accuracy       ``label`` is a ClassLabel (1000 wnids); ``protocol.class_subset`` slices
per_class_accuracy  the scores to the subset first (ImageNet-A/R)
calibration
class_balance
real_accuracy       a ``real_labels`` column (list of class indices per image)
shape_bias          ``protocol.decision_mapping == "imagenet_16"`` and ``shape_label16`` +
                    ``texture_label16`` columns
accuracy16          ``protocol.decision_mapping == "imagenet_16"`` and a ``label16`` column
==================  =======================================================================

The registry is open: other metric families (``lca.py``, ``multilabel.py``, ``ood.py``,
``robustness.py``, ``protocols.py``) add a :class:`Metric` with :func:`register_metric` when
imported; ``imagenet_suite.scoring`` imports them all. A metric's ``compute`` receives an :class:`EvaluationContext`, which
computes shared intermediates (one pass over the rows, the 16-class decisions) once and caches them.

Every result is a :class:`MetricRow`: ``metric``, ``value``, ``variant`` (a named convention such as
``torchmetrics`` or ``reference_impl``), ``subgroup`` (a class or category, empty for the whole
split), and the integer ``numerator``/``denominator`` behind a fraction.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from .. import __version__
from ..build.dataset_folder import DatasetFolder
from ..errors import ConfigError
from ..files import atomic_write_bytes
from . import calibration, classification, shape
from .batching import chunk_parallel_cpu
from .class_balance import CLASS_BALANCE_CONVENTIONS, class_balance
from .join import JoinedSplit, join_outputs
from .outputs import ModelOutputs
from .row_statistics import RowStatistics, row_statistics

TABLE_COLUMNS = ("metric", "variant", "subgroup", "value", "numerator", "denominator")


@dataclass(frozen=True)
class MetricRow:
    """One number of a report; ``numerator``/``denominator`` are set for counted fractions."""

    metric: str
    value: float
    variant: str = ""
    subgroup: str = ""
    numerator: int | None = None
    denominator: int | None = None

    @classmethod
    def fraction(cls, metric: str, counted: classification.Fraction, variant: str = "", subgroup: str = "") -> MetricRow:
        return cls(metric, counted.value, variant, subgroup, counted.numerator, counted.denominator)


@dataclass(frozen=True)
class ScoreOptions:
    """Knobs of the evaluator (defaults follow the anchors)."""

    topk: tuple[int, ...] = (1, 5)
    ece_conventions: tuple[str, ...] = tuple(calibration.ECE_CONVENTIONS)
    class_balance_conventions: tuple[str, ...] = CLASS_BALANCE_CONVENTIONS
    ace_bins: int = calibration.ACE_BINS
    class_wise_ace: bool = True  # ACE and CE sort every class's N probabilities: the costliest metric
    lca_distances: tuple[str, ...] = ("info", "depth_two_sided", "depth_one_sided")  # each reported by name
    elca_variant: str = "all"
    hierarchy: str | None = None  # a built wordnet_/kmeans_hierarchy folder; None: the shipped ImageNet-1k tree


class EvaluationContext:
    """One joined split plus lazily computed intermediates shared by metrics."""

    def __init__(self, joined: JoinedSplit, options: ScoreOptions):
        self.joined = joined
        self.options = options
        self.artifacts: dict[str, Any] = {}  # non-tabular results for plots (bins, per-category data)

    @property
    def scores(self) -> torch.Tensor:
        return self.joined.outputs.values

    @property
    def kind(self) -> str:
        return self.joined.outputs.kind

    @cached_property
    def class_subset(self) -> torch.Tensor | None:
        subset = self.joined.protocol.get("class_subset")
        if subset is None:
            return None
        return classification.subset_columns(subset, self.scores.shape[1], self.scores.device)

    @cached_property
    def labels(self) -> torch.Tensor:
        """``label`` in the evaluated column space (subset positions when a class subset applies)."""
        labels = self.joined.columns["label"]
        if self.class_subset is None:
            return labels
        return classification.labels_in_subset(labels, self.class_subset, self.scores.shape[1])

    @cached_property
    def num_classes(self) -> int:
        return self.scores.shape[1] if self.class_subset is None else len(self.class_subset)

    @cached_property
    def class_names(self) -> list[str]:
        """Names of the evaluated classes (wnids of the ClassLabel, sliced to the subset)."""
        names = self.joined.features.get("label", {}).get("names") or [str(i) for i in range(self.scores.shape[1])]
        return names if self.class_subset is None else [names[i] for i in self.class_subset.tolist()]

    @cached_property
    def row_stats(self) -> RowStatistics:
        return row_statistics(self.scores, self.kind, self.labels, max(self.options.topk), self.class_subset)

    @cached_property
    def top_classes(self) -> torch.Tensor:
        """Ordered top-k classes in the full column space (shared with row_stats when possible)."""
        if "label" in self.joined.columns and self.class_subset is None:
            return self.row_stats.top_classes
        return classification.top_classes(self.scores, max(self.options.topk))

    @cached_property
    def top1_correct(self) -> torch.Tensor:
        return self.row_stats.label_rank == 0

    @cached_property
    def decisions16(self) -> torch.Tensor:
        return shape.decisions16(self.scores, self.kind)

    def categories(self, column: str) -> torch.Tensor:
        """A 16-class column as int64 indices in sorted category order, on the scores' device."""
        values = self.joined.columns[column]
        names = (self.joined.features.get(column) or {}).get("names")
        if isinstance(values, list):
            return shape.category_index(values).to(self.scores.device)
        if names is not None and tuple(names) != shape.CATEGORIES16:
            return shape.category_index([names[i] for i in values.tolist()]).to(self.scores.device)
        return values


@dataclass(frozen=True)
class Metric:
    """A registered metric family: the label columns it reads, when it applies, and how it computes."""

    name: str
    columns: tuple[str, ...]
    applies: Callable[[Mapping[str, Any], Mapping[str, Any]], bool]
    compute: Callable[[EvaluationContext], list[MetricRow]]
    description: str = ""
    requires: str = ""  # what a dataset needs for the metric to apply, for error messages

    @property
    def requirement(self) -> str:
        return self.requires or f"columns {list(self.columns)}"


METRICS: dict[str, Metric] = {}


def register_metric(metric: Metric) -> Metric:
    """Add (or replace) a metric family in the registry; returns it."""
    METRICS[metric.name] = metric
    return metric


def applicable_metrics(features: Mapping[str, Any], protocol: Mapping[str, Any]) -> list[str]:
    """Names of the registered metrics that apply to a dataset with these features and protocol."""
    return [name for name, metric in METRICS.items() if metric.applies(features, protocol)]


# ----------------------------------------------------------------------------- applicability


def _has_class_label(features: Mapping[str, Any], protocol: Mapping[str, Any]) -> bool:
    return (features.get("label") or {}).get("_type") == "ClassLabel"


def _has_real_labels(features: Mapping[str, Any], protocol: Mapping[str, Any]) -> bool:
    return "real_labels" in features


def _imagenet16_with(*columns: str) -> Callable[[Mapping[str, Any], Mapping[str, Any]], bool]:
    def applies(features: Mapping[str, Any], protocol: Mapping[str, Any]) -> bool:
        return protocol.get("decision_mapping") == shape.IMAGENET_16_MAPPING and all(c in features for c in columns)

    return applies


# ----------------------------------------------------------------------------- computations


def _topk_rows(ctx: EvaluationContext) -> list[MetricRow]:
    variant = "class_subset" if ctx.class_subset is not None else ""
    counted = classification.topk_from_ranks(ctx.row_stats.label_rank, ctx.options.topk)
    return [MetricRow.fraction(f"top{k}_accuracy", counted[k], variant) for k in ctx.options.topk]


def _per_class_rows(ctx: EvaluationContext) -> list[MetricRow]:
    hits, totals = classification.per_class_accuracy(ctx.top1_correct, ctx.labels, ctx.num_classes)
    rows = []
    present = totals > 0
    class_means = hits[present].double() / totals[present]
    rows.append(MetricRow("mean_per_class_accuracy", float(class_means.mean()) if len(class_means) else math.nan))
    for index, (hit, total) in enumerate(zip(hits.tolist(), totals.tolist(), strict=True)):
        if total:
            counted = classification.Fraction(hit, total)
            rows.append(MetricRow.fraction("per_class_accuracy", counted, subgroup=ctx.class_names[index]))
    return rows


def _calibration_rows(ctx: EvaluationContext) -> list[MetricRow]:
    stats = ctx.row_stats
    rows, eces = [], {}
    for convention in ctx.options.ece_conventions:
        bins = calibration.calibration_bins(stats.confidence, ctx.top1_correct, convention)
        ctx.artifacts[f"calibration_bins/{convention}"] = bins
        eces[convention] = bins.expected_calibration_error
        rows.append(MetricRow("ece", eces[convention], convention))
    if not ctx.options.class_wise_ace:
        return rows
    ace = calibration.adaptive_calibration_error(
        ctx.scores, ctx.labels, stats.normalizer, ctx.options.ace_bins, columns=ctx.class_subset
    )
    rows.append(MetricRow("ace", ace, "adaptive_classwise"))
    ece = eces.get(calibration.DEFAULT_ECE_CONVENTION)
    if ece is None:
        ece = calibration.expected_calibration_error(stats.confidence, ctx.top1_correct)
    rows.append(MetricRow("calibration_error", calibration.calibration_error(ece, ace), "sqrt(ece*ace)"))
    return rows


def _class_balance_rows(ctx: EvaluationContext) -> list[MetricRow]:
    rows = []
    for convention in ctx.options.class_balance_conventions:
        balance = class_balance(
            ctx.top1_correct, ctx.row_stats.target_probability, ctx.labels, ctx.num_classes, convention
        )
        rows += [
            MetricRow("class_balance", balance.value, convention),
            MetricRow("class_balance_accuracy", balance.accuracy_balance, convention),
            MetricRow("class_balance_confidence", balance.confidence_balance, convention),
        ]
    return rows


def _real_rows(ctx: EvaluationContext) -> list[MetricRow]:
    label_sets = ctx.joined.columns["real_labels"]
    counted = classification.real_topk_accuracy(ctx.scores, label_sets, ctx.options.topk, top=ctx.top_classes)
    return [MetricRow.fraction(f"real_top{k}_accuracy", counted[k]) for k in ctx.options.topk]


def _shape_bias_rows(ctx: EvaluationContext) -> list[MetricRow]:
    shapes, textures = ctx.categories("shape_label16"), ctx.categories("texture_label16")
    pooled = shape.shape_bias(ctx.decisions16, shapes, textures)
    per_category = shape.shape_bias_per_category(ctx.decisions16, shapes, textures)
    ctx.artifacts["shape_bias_per_category"] = per_category
    rows = [_shape_bias_row(pooled, "")]
    rows += [_shape_bias_row(result, category) for category, result in per_category.items() if result.conflict_images]
    return rows


def _shape_bias_row(result: shape.ShapeBias, subgroup: str) -> MetricRow:
    hits = result.shape_hits + result.texture_hits
    return MetricRow("shape_bias", result.value, "pooled", subgroup, result.shape_hits, hits)


def _accuracy16_rows(ctx: EvaluationContext) -> list[MetricRow]:
    return [MetricRow.fraction("accuracy16", shape.accuracy16(ctx.decisions16, ctx.categories("label16")))]


_LABEL = "a 'label' ClassLabel column"

for _metric in (
    Metric("topk_accuracy", ("label",), _has_class_label, _topk_rows, "top-k accuracy, ties to the lowest class index",
           _LABEL),
    Metric("per_class_accuracy", ("label",), _has_class_label, _per_class_rows, "top-1 accuracy of each class", _LABEL),
    Metric("calibration", ("label",), _has_class_label, _calibration_rows, "ECE (3 conventions), class-wise ACE, CE",
           _LABEL),
    Metric("class_balance", ("label",), _has_class_label, _class_balance_rows, "QUBA class balance, both conventions",
           _LABEL),
    Metric("real_accuracy", ("real_labels",), _has_real_labels, _real_rows, "ReaL top-k, empty label sets skipped",
           "a 'real_labels' column (list of class indices)"),
    Metric("shape_bias", ("shape_label16", "texture_label16"), _imagenet16_with("shape_label16", "texture_label16"),
           _shape_bias_rows, "cue-conflict shape bias, pooled and per shape category",
           "protocol decision_mapping='imagenet_16' and columns 'shape_label16', 'texture_label16'"),
    Metric("accuracy16", ("label16",), _imagenet16_with("label16"), _accuracy16_rows, "16-class accuracy",
           "protocol decision_mapping='imagenet_16' and a 'label16' column"),
):
    register_metric(_metric)


# ----------------------------------------------------------------------------- the report


@dataclass
class ScoreReport:
    """Rows of one evaluation plus what was evaluated; ``table`` and ``to_json`` present them."""

    rows: list[MetricRow]
    meta: dict[str, Any]
    artifacts: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def table(self) -> pd.DataFrame:
        """Tidy table: one row per number, columns ``metric, variant, subgroup, value, numerator, denominator``."""
        frame = pd.DataFrame([asdict(row) for row in self.rows], columns=list(TABLE_COLUMNS))
        for column in ("numerator", "denominator"):
            frame[column] = frame[column].astype("Int64")
        return frame

    def value(self, metric: str, variant: str | None = None, subgroup: str = "") -> float:
        """The value of one row (first match), e.g. ``report.value("ece", "guo")``."""
        for row in self.rows:
            if row.metric == metric and row.subgroup == subgroup and (variant is None or row.variant == variant):
                return row.value
        raise KeyError(f"no row metric={metric!r} variant={variant!r} subgroup={subgroup!r} in this report")

    def to_dict(self) -> dict[str, Any]:
        return {"meta": self.meta, "metrics": [{k: _json_number(v) for k, v in asdict(row).items()} for row in self.rows]}

    def to_json(self, path: str | Path | None = None) -> str:
        """JSON text (NaN written as null); also written to ``path`` when given."""
        text = json.dumps(self.to_dict(), indent=2, allow_nan=False)
        if path is not None:
            atomic_write_bytes(path, (text + "\n").encode("utf-8"))
        return text


def score(
    dataset: str | Path | DatasetFolder,
    outputs: ModelOutputs,
    config: str | None = None,
    split: str | None = None,
    metrics: Sequence[str] | None = None,
    options: ScoreOptions | None = None,
) -> ScoreReport:
    """Join ``outputs`` to a built dataset split and compute every metric that applies (or ``metrics``).

    Computes on ``outputs.device``. On the CPU, torch runs single-threaded for the duration (the
    thread count is restored afterwards) while row and class chunks are spread over as many worker
    threads as torch was configured with.
    """
    folder = dataset if isinstance(dataset, DatasetFolder) else DatasetFolder(dataset)
    config = folder.resolve_config(config)
    features, protocol = folder.config_info(config)["features"], folder.protocol(config)
    chosen = select_metrics(features, protocol, metrics)
    columns = [column for name in chosen for column in METRICS[name].columns]
    with chunk_parallel_cpu() if outputs.device.type == "cpu" else contextlib.nullcontext():
        joined = join_outputs(folder, outputs, columns, config, split)
        return evaluate(joined, chosen, options)


def select_metrics(features: Mapping[str, Any], protocol: Mapping[str, Any], requested: Sequence[str] | None) -> list[str]:
    """``requested`` (validated: known and applicable) or all applicable metrics."""
    applicable = applicable_metrics(features, protocol)
    if requested is None:
        if not applicable:
            raise ConfigError(f"no registered metric applies to columns {sorted(features)} with protocol {dict(protocol)}")
        return applicable
    unknown = [name for name in requested if name not in METRICS]
    if unknown:
        raise ConfigError(f"unknown metric(s) {unknown}; known: {sorted(METRICS)}")
    inapplicable = [name for name in requested if name not in applicable]
    if inapplicable:
        needs = "; ".join(f"{name} needs {METRICS[name].requirement}" for name in inapplicable)
        raise ConfigError(f"metric(s) {inapplicable} do not apply to this dataset ({needs}); applicable: {applicable}")
    return list(dict.fromkeys(requested))


def evaluate(joined: JoinedSplit, metrics: Sequence[str], options: ScoreOptions | None = None) -> ScoreReport:
    """Compute ``metrics`` on an already joined split (CPU threading as in :func:`score`)."""
    ctx = EvaluationContext(joined, options or ScoreOptions())
    rows: list[MetricRow] = []
    on_cpu = joined.outputs.device.type == "cpu"
    with torch.inference_mode(), (chunk_parallel_cpu() if on_cpu else contextlib.nullcontext()):
        for name in metrics:
            rows += METRICS[name].compute(ctx)
    return ScoreReport(rows, _meta(joined, metrics), ctx.artifacts)


def _meta(joined: JoinedSplit, metrics: Sequence[str]) -> dict[str, Any]:
    values = joined.outputs.values
    return {
        "dataset": joined.dataset,
        "version": joined.build_info.get("version"),
        "config": joined.config,
        "split": joined.split,
        "protocol": joined.protocol,
        "metrics": list(metrics),
        "outputs": {"kind": joined.outputs.kind, "rows": int(values.shape[0]), "classes": int(values.shape[1]),
                    "dtype": str(values.dtype).removeprefix("torch."), "device": str(values.device)},
        "imagenet_suite": __version__,
    }


def _json_number(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


__all__ = [
    "METRICS", "EvaluationContext", "Metric", "MetricRow", "ScoreOptions", "ScoreReport",
    "applicable_metrics", "evaluate", "register_metric", "score", "select_metrics",
]
