"""A fixed OOD benchmark within a run (``evaluate --benchmark NAME``): which of the run's dataset splits it reads,
and its table from their outputs (:mod:`imagenet_suite.scoring.benchmarks` says what each benchmark is).

:func:`benchmark_targets` is checked before any model is loaded; :func:`run_benchmark` runs after the splits were
predicted and writes nothing itself: its record goes to suite.json's ``summary.benchmarks[NAME]``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..errors import ConfigError, OutputsError, param
from ..scoring.benchmarks import Benchmark, benchmark_table, split_positions
from ..scoring.evaluation.preprocessing import HESSE2025
from ..scoring.metrics.ood_detector_stats import DetectorStats, Embeddings
from ..scoring.metrics.ood_detectors import NEEDS_FEATURES, available_detectors, detector_scores
from ..scoring.outputs import ModelOutputs
from .suite_targets import SuiteTarget


@dataclass(frozen=True)
class RunInputs:
    """What the benchmark reads of a run: each target's outputs file (predicted if missing), the build record of a
    target, the device, whether features were stored, and the detector statistics (or None)."""

    outputs: Callable[[SuiteTarget], Path]
    build: Callable[[SuiteTarget], dict]
    device: str
    features: bool
    stats: DetectorStats | None


def benchmark_targets(benchmark: Benchmark, targets: Sequence[SuiteTarget]) -> dict[tuple[str, str], SuiteTarget]:
    """``{(builder, config): target}`` of every build ``benchmark`` reads besides ImageNet val; ConfigError naming
    the builds missing from ``--datasets``."""
    found: dict[tuple[str, str], SuiteTarget] = {}
    for target in targets:
        if target.protocol == HESSE2025:
            found.setdefault((target.folder.name, target.config), target)
    missing = [f"{builder}/{config}" for builder, config in benchmark.builds() if (builder, config) not in found]
    if missing:
        raise ConfigError(
            f"{param('benchmark')} {benchmark.name} reads builds that {param('datasets')} lacks: {', '.join(missing)} "
            "(popular_ood built from a manual folder holding OpenOOD v1.5's image lists benchmark_imglist/; ninco; "
            "imagenet_val)"
        )
    return {key: found[key] for key in benchmark.builds()}


def run_benchmark(run: RunInputs, benchmark: Benchmark, targets: Sequence[SuiteTarget], id_target: SuiteTarget) -> dict:
    """The benchmark's record: ``{"benchmark", "citation", "id": {"rows", "accuracy", "build", "split"},
    "sets": {name: {"group", "rows", "build"}}, "detectors": {detector: rows}}`` (rows: fractions,
    :func:`~imagenet_suite.scoring.benchmarks.benchmark_table`). OutputsError when a set has none of its rows."""
    chosen = benchmark_targets(benchmark, targets)
    split_target = chosen[(benchmark.id_split_builder, benchmark.id_split_config)]
    id_outputs = ModelOutputs.load(run.outputs(id_target), device=run.device)
    id_mask = _id_mask(benchmark, split_target, id_outputs.ids)
    sets = {s.name: (s, chosen[(s.builder, s.config)]) for s in benchmark.sets}
    outputs = {name: ModelOutputs.load(run.outputs(target), device=run.device) for name, (_, target) in sets.items()}
    masks = {name: _rows_mask(spec.rows_column, target, outputs[name].ids) for name, (spec, target) in sets.items()}
    detectors = _common_detectors(run, [id_outputs, *outputs.values()])
    id_scores = _scores(run, detectors, id_outputs, run.outputs(id_target), id_mask)
    ood_scores = {
        name: _scores(run, detectors, outputs[name], run.outputs(target), masks[name])
        for name, (_, target) in sets.items()
    }
    accuracy = _accuracy(id_target, id_outputs, id_mask)
    return {
        "benchmark": benchmark.name,
        "citation": benchmark.citation,
        "id": {
            "rows": int(id_mask.sum()),
            "accuracy": accuracy,
            "build": run.build(id_target),
            "split": run.build(split_target),
        },
        "sets": {
            name: {"group": spec.group, "rows": int(masks[name].sum()), "build": run.build(target)}
            for name, (spec, target) in sets.items()
        },
        "detectors": benchmark_table(benchmark, id_scores, ood_scores, accuracy),
    }


def _column(target: SuiteTarget, column: str) -> dict[str, Any]:
    """``{id: value}`` of one column of a target's split."""
    table = target.folder.read_table(target.config, target.split, ["id", column])
    return dict(zip(table.column("id").to_pylist(), table.column(column).to_pylist(), strict=True))


def _id_mask(benchmark: Benchmark, split_target: SuiteTarget, ids: Sequence[str]) -> torch.Tensor:
    """The ImageNet-val rows of the benchmark's ID split; OutputsError when the val build lacks some of them."""
    split = _column(split_target, benchmark.id_split_column)
    positions, absent = split_positions(split, benchmark.id_split_value, ids)
    if absent:
        raise OutputsError(
            f"{benchmark.name}: the imagenet_val build lacks {len(absent):,} of the {len(positions) + len(absent):,} "
            f"ImageNet val images of its ID split ({split_target.key}), e.g. {absent[0]!r}"
        )
    mask = torch.zeros(len(ids), dtype=torch.bool)
    mask[torch.from_numpy(positions)] = True
    return mask


def _rows_mask(column: str | None, target: SuiteTarget, ids: Sequence[str]) -> torch.Tensor:
    """The rows of a set the benchmark scores (all without ``column``); OutputsError when there are none."""
    if column is None:
        return torch.ones(len(ids), dtype=torch.bool)
    values = _column(target, column)
    mask = torch.tensor([bool(values.get(image)) for image in ids], dtype=torch.bool)
    if not bool(mask.any()):
        raise OutputsError(
            f"{target.key}: no row has {column} true: rebuild it with OpenOOD v1.5's image lists "
            "(benchmark_imglist/imagenet/*.txt in its manual folder)"
        )
    return mask


def _common_detectors(run: RunInputs, outputs: Sequence[ModelOutputs]) -> list[str]:
    """The detectors the run's inputs allow on every set (same kind of outputs everywhere)."""
    kinds = {o.kind for o in outputs}
    if len(kinds) != 1:
        raise OutputsError(f"the benchmark's outputs are of several kinds {sorted(kinds)}: predict them the same way")
    return available_detectors(kinds.pop(), run.features, run.stats)


def _scores(
    run: RunInputs, detectors: Sequence[str], outputs: ModelOutputs, path, mask: torch.Tensor
) -> dict[str, torch.Tensor]:
    """``{detector: scores of the masked rows}``."""
    features = None
    if any(d in NEEDS_FEATURES for d in detectors):
        features = Embeddings.load(path, run.device).aligned(outputs.ids, str(path))
    found = {}
    for detector in detectors:
        used = features if detector in NEEDS_FEATURES else None
        scores = detector_scores(detector, outputs.values, outputs.kind, used, run.stats)
        found[detector] = scores[mask.to(scores.device)]
    return found


def _accuracy(id_target: SuiteTarget, outputs: ModelOutputs, mask: torch.Tensor) -> float:
    """Top-1 accuracy of the masked ID rows (OpenOOD's ``eval_acc``: argmax of the outputs vs the label)."""
    labels = _column(id_target, "label")
    truth = torch.tensor([labels[image] for image in outputs.ids])
    predicted = outputs.values.argmax(dim=1).cpu()
    return float((predicted == truth)[mask].double().mean())


__all__ = ["RunInputs", "benchmark_targets", "run_benchmark"]
