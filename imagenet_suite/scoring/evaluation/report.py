"""The evaluator: every metric family that applies to a dataset, as one tidy table and JSON.

:func:`score` joins a model's outputs to a built dataset split by ``id`` and runs the families of
:data:`~imagenet_suite.scoring.families.FAMILIES` (or the ``families`` given) that apply. Which
apply is decided from the dataset's columns (its ``features``) and its published ``protocol``,
never from user flags; ``metrics`` narrows the choice to named families and refuses unknown or
inapplicable ones. Each family computes with its own options instance from
:class:`~imagenet_suite.scoring.evaluation.options.ScoreOptions`, on an
:class:`~imagenet_suite.scoring.evaluation.context.EvaluationContext` that computes shared intermediates once.

On the CPU, torch runs single-threaded for the duration of a call while chunks of rows and classes
are spread over worker threads (:func:`imagenet_suite.scoring.threads.chunk_parallel_cpu`); the
thread count found on entry is restored on exit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from ... import __version__
from ...dataset.folder import DatasetFolder
from ...errors import ConfigError, unknown_choice
from ..families import FAMILIES
from ..join import JoinedSplit, join_outputs
from ..metrics.lca_distances import hierarchy_record
from ..outputs import ModelOutputs
from ..threads import chunk_parallel_cpu
from .context import EvaluationContext
from .family import MetricFamily
from .options import ScoreOptions
from .results import MetricRow, ScoreReport


def families_by_name(families: Sequence[MetricFamily] = FAMILIES) -> dict[str, MetricFamily]:
    """``{name: family}`` in order; ConfigError if two families share a name."""
    named: dict[str, MetricFamily] = {}
    for family in families:
        if family.name in named:
            raise ConfigError(f"two metric families are named {family.name!r}; names must be unique")
        named[family.name] = family
    return named


def applicable_metrics(
    features: Mapping[str, Any], protocol: Mapping[str, Any], families: Sequence[MetricFamily] = FAMILIES
) -> list[str]:
    """Names of the ``families`` that apply to a dataset with these features and protocol, in order.

    Example:
        A ``label`` over the 1000 ImageNet wnids (features as in ``build_info.json``); a
        ``real_labels`` list column adds ReaL accuracy, ``corruption`` and ``severity`` the
        robustness summary:

        >>> from imagenet_suite.classes import imagenet_wnids
        >>> label = {"_type": "ClassLabel", "names": list(imagenet_wnids())}
        >>> features = {"id": {"_type": "Value", "dtype": "string"}, "label": label}
        >>> applicable_metrics(features, {})
        ['topk_accuracy', 'per_class_accuracy', 'calibration', 'class_balance', 'lca']
        >>> applicable_metrics({**features, "real_labels": {"_type": "List", "feature": label}}, {})
        ['topk_accuracy', 'per_class_accuracy', 'calibration', 'class_balance', 'real_accuracy', 'lca']
        >>> value = {"_type": "Value", "dtype": "string"}
        >>> applicable_metrics({**features, "corruption": value, "severity": value}, {})[-1]
        'robustness'
    """
    return [family.name for family in families if family.applies(features, protocol)]


def select_metrics(
    features: Mapping[str, Any],
    protocol: Mapping[str, Any],
    requested: Sequence[str] | None,
    families: Sequence[MetricFamily] = FAMILIES,
) -> list[str]:
    """``requested`` (validated: known and applicable, duplicates dropped) or all applicable families."""
    named = families_by_name(families)
    applicable = applicable_metrics(features, protocol, families)
    if requested is None:
        if not applicable:
            raise ConfigError(f"no metric family applies to columns {sorted(features)} with protocol {dict(protocol)}")
        return applicable
    unknown = [name for name in requested if name not in named]
    if len(unknown) == 1:
        raise ConfigError(f"unknown metric {unknown[0]!r}; {unknown_choice(unknown[0], sorted(named), 'metrics')}")
    if unknown:
        raise ConfigError(f"unknown metric(s) {unknown}; known: {sorted(named)}")
    inapplicable = [name for name in requested if name not in applicable]
    if inapplicable:
        needs = "; ".join(f"{name} needs {named[name].requirement}" for name in inapplicable)
        raise ConfigError(f"metric(s) {inapplicable} do not apply to this dataset ({needs}); applicable: {applicable}")
    return list(dict.fromkeys(requested))


def score(
    dataset: str | Path | DatasetFolder,
    outputs: ModelOutputs,
    config: str | None = None,
    split: str | None = None,
    metrics: Sequence[str] | None = None,
    options: ScoreOptions | None = None,
    families: Sequence[MetricFamily] = FAMILIES,
) -> ScoreReport:
    """Join ``outputs`` to a built dataset split and compute every family that applies (or ``metrics``).

    Computes on ``outputs.device``. ``options``: one options instance per family type (default:
    ``ScoreOptions()``). ``families``: the families to choose from (default: the built-in list).
    Thread settings are scoped to the call (see the module docstring).

    Example:
        A two-image ``imagenet_val`` in the ImageFolder layout (``val/<wnid>/<id>.JPEG``), built
        into a temporary folder:

        >>> import tempfile
        >>> from imagenet_suite.testing import tiny_val_build
        >>> tmp = tempfile.TemporaryDirectory()
        >>> folder = tiny_val_build(tmp.name)  # two images, classes 0 and 1

        Logits that put image 1 (class 0) right and image 2 (class 1) wrong at top-1; image 2's
        label is third (class 5 first, then the tie 0, 1, 2, ... in index order), so within the top 5:

        >>> import torch
        >>> logits = torch.zeros(2, 1000)
        >>> logits[0, 0] = logits[1, 5] = 1.0
        >>> outputs = ModelOutputs(logits, ["ILSVRC2012_val_00000001", "ILSVRC2012_val_00000002"])
        >>> report = score(folder, outputs, metrics=["topk_accuracy", "per_class_accuracy"])
        >>> report.table[["metric", "subgroup", "value", "numerator", "denominator"]]
                            metric   subgroup  value  numerator  denominator
        0            top1_accuracy               0.5          1            2
        1            top5_accuracy               1.0          2            2
        2  mean_per_class_accuracy               0.5       <NA>         <NA>
        3       per_class_accuracy  n01440764    1.0          1            1
        4       per_class_accuracy  n01443537    0.0          0            1
        >>> report.value("top1_accuracy")
        0.5
        >>> tmp.cleanup()
    """
    folder = dataset if isinstance(dataset, DatasetFolder) else DatasetFolder(dataset)
    config = folder.resolve_config(config)
    features, protocol = folder.config_info(config)["features"], folder.protocol(config)
    chosen = select_metrics(features, protocol, metrics, families)
    named = families_by_name(families)
    columns = [column for name in chosen for column in named[name].columns if column in features]
    with _cpu_scope(outputs.device):
        joined = join_outputs(folder, outputs, columns, config, split)
        return evaluate(joined, chosen, options, families)


def evaluate(
    joined: JoinedSplit,
    metrics: Sequence[str],
    options: ScoreOptions | None = None,
    families: Sequence[MetricFamily] = FAMILIES,
) -> ScoreReport:
    """Compute the named families (of ``families``) on an already joined split, in inference mode.

    Thread settings are scoped as in :func:`score`.
    """
    named = families_by_name(families)
    options = options or ScoreOptions()
    ctx = EvaluationContext(joined, options)
    rows: list[MetricRow] = []
    with torch.inference_mode(), _cpu_scope(joined.outputs.device):
        for name in metrics:
            rows += named[name].rows(ctx)
    return ScoreReport(rows, _meta(joined, metrics, options), ctx.artifacts)


def _cpu_scope(device: torch.device):
    """Chunk-parallel, single-threaded torch on the CPU for the duration; nothing on other devices."""
    return chunk_parallel_cpu() if device.type == "cpu" else contextlib.nullcontext()


def _meta(joined: JoinedSplit, metrics: Sequence[str], options: ScoreOptions) -> dict[str, Any]:
    """What a report was computed on; with LCA rows, also which hierarchy (``hierarchy``:
    :func:`~imagenet_suite.scoring.metrics.lca_distances.hierarchy_record`)."""
    values = joined.outputs.values
    lca = {"hierarchy": hierarchy_record(options.lca.hierarchy)} if "lca" in metrics else {}
    return {
        "dataset": joined.dataset,
        "version": joined.build_info.get("version"),
        "config": joined.config,
        "split": joined.split,
        "protocol": joined.protocol,
        "metrics": list(metrics),
        "outputs": {
            "kind": joined.outputs.kind,
            "rows": int(values.shape[0]),
            "classes": int(values.shape[1]),
            "dtype": str(values.dtype).removeprefix("torch."),
            "device": str(values.device),
        },
        "imagenet_suite": __version__,
        **lca,
    }


__all__ = [
    "FAMILIES",
    "EvaluationContext",
    "MetricFamily",
    "MetricRow",
    "ScoreOptions",
    "ScoreReport",
    "applicable_metrics",
    "evaluate",
    "families_by_name",
    "score",
    "select_metrics",
]
