"""Fixed OOD benchmarks over several built datasets, reported the way their authors report them
(``imagenet-suite evaluate --benchmark NAME``).

``openood-v1.5-imagenet`` — OpenOOD v1.5's ImageNet-1k benchmark (Zhang et al. 2023, "OpenOOD v1.5: Enhanced
Benchmark for Out-of-Distribution Detection"; ``openood/evaluation_api`` of Jingkang50/OpenOOD):

* ID: the ImageNet val images of OpenOOD's test list (``benchmark_imglist/imagenet/test_imagenet.txt``, 45,000 of
  the 50,000; the other 5,000 are its ``val`` list, which OpenOOD fits ReAct and KL-matching on). The list is the
  ``popular_ood`` build's ``openood_id_split`` config; the images are the ``imagenet_val`` build's.
* near-OOD: ``ssb_hard`` (``popular_ood``, the rows of ``test_ssb_hard.txt``) and ``ninco`` (the ``ninco`` build's
  ``ninco`` config: all 5,879 images, as ``test_ninco.txt``).
* far-OOD: ``inaturalist``, ``textures`` (Textures43, ``test_textures.txt``) and ``openimage_o`` (its 15,869 test
  images; ``val_openimage_o.txt`` is OpenOOD's hyper-parameter set), each the ``openood_v15_test`` rows of its
  ``popular_ood`` build.

Reported as ``Evaluator.eval_ood``: per set and detector ``FPR@95`` (OOD positive:
:func:`~imagenet_suite.scoring.metrics.ood.fpr_at_tpr_openood_v15`, OpenOOD since commit 873e8c2), ``AUROC``,
``AUPR_IN``, ``AUPR_OUT`` (trapezoid PR areas, ID resp. OOD positive) and ``ACC`` (top-1 on the ID test images,
the same in every row); ``nearood`` / ``farood`` rows are the unweighted means of their sets' metrics; rows in
OpenOOD's order ``ssb_hard, ninco, nearood, inaturalist, textures, openimage_o, farood``; percentages with two
decimals in the tables (fractions in suite.json). Beside them, NINCO's convention (Bitterwolf et al. 2023):
``FPR@95 (ID+)``, the fraction of OOD images accepted at the threshold keeping 95 % of the ID images
(:func:`~imagenet_suite.scoring.metrics.ood.fpr_at_tpr`).

Detectors: every one the run's inputs allow on all sets (logits; with ``--features`` and ``--detector-stats`` the
feature-based ones, with the hyper-parameters of the statistics file: ``ood fit-stats --preset openood_v15`` for
OpenOOD's, whose ReAct and KL-matching are fitted on the ID val list with ``--val`` and ``--val-split-from``). OpenOOD's automatic parameter search
(APS) over ``val_openimage_o`` is not run: the preset's defaults are used.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch

OPENOOD_COLUMNS = {  # OpenOOD's DataFrame column -> our metric
    "FPR@95": "fpr95_openood_v15",
    "AUROC": "auroc",
    "AUPR_IN": "aupr_in",
    "AUPR_OUT": "aupr_out",
}
NINCO_COLUMN = ("FPR@95 (ID+)", "fpr95")  # NINCO's convention, shown beside OpenOOD's


@dataclass(frozen=True)
class BenchmarkSet:
    """One OOD set of a benchmark: its row name, group, the build (builder, config) it reads and the boolean
    column selecting its rows (None: every row)."""

    name: str
    group: str
    builder: str
    config: str
    rows_column: str | None = None


@dataclass(frozen=True)
class Benchmark:
    """A benchmark: the ID set's split (a config of ``id_split_builder`` whose ``id_split_column`` is
    ``id_split_value`` for the ID images and ``id_val_value`` for the ID validation images some detectors are
    fitted on: ``ood fit-stats --val-split-from``), its OOD sets and the order of its groups (each reported with a
    ``<group>ood`` mean row after its sets)."""

    name: str
    citation: str
    id_split_builder: str
    id_split_config: str
    id_split_column: str
    id_split_value: str
    sets: tuple[BenchmarkSet, ...]
    groups: tuple[str, ...]
    id_val_value: str = "val"

    def builds(self) -> list[tuple[str, str]]:
        """Every (builder, config) the benchmark needs besides ImageNet val."""
        return [(self.id_split_builder, self.id_split_config)] + [(s.builder, s.config) for s in self.sets]


OPENOOD_V15_IMAGENET = Benchmark(
    name="openood-v1.5-imagenet",
    citation="Zhang et al. 2023, OpenOOD v1.5: Enhanced Benchmark for Out-of-Distribution Detection",
    id_split_builder="popular_ood",
    id_split_config="openood_id_split",
    id_split_column="openood_v15",
    id_split_value="test",
    sets=(
        BenchmarkSet("ssb_hard", "near", "popular_ood", "ssb_hard", "openood_v15_test"),
        BenchmarkSet("ninco", "near", "ninco", "ninco"),
        BenchmarkSet("inaturalist", "far", "popular_ood", "inaturalist", "openood_v15_test"),
        BenchmarkSet("textures", "far", "popular_ood", "textures", "openood_v15_test"),
        BenchmarkSet("openimage_o", "far", "popular_ood", "openimage_o", "openood_v15_test"),
    ),
    groups=("near", "far"),
)
BENCHMARKS = {benchmark.name: benchmark for benchmark in (OPENOOD_V15_IMAGENET,)}


def split_positions(split: Mapping[str, object], value: object, ids: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """Positions (ascending) in ``ids`` of the ids that ``split`` (``{id: value}``, e.g. a benchmark's ID split
    column) gives ``value``, and the ids of that value which ``ids`` lacks (sorted).

    Example:
        >>> split = {"a": "test", "b": "val", "c": "val", "d": "val"}
        >>> positions, absent = split_positions(split, "val", ["c", "a", "b"])
        >>> positions.tolist(), absent
        ([0, 2], ['d'])
    """
    positions = np.flatnonzero(np.array([split.get(image) == value for image in ids], dtype=bool))
    wanted = {image for image, found in split.items() if found == value}
    return positions, sorted(wanted - set(ids)) if len(positions) != len(wanted) else []


def benchmark_table(
    benchmark: Benchmark,
    id_scores: Mapping[str, torch.Tensor],
    ood_scores: Mapping[str, Mapping[str, torch.Tensor]],
    accuracy: float | None,
    tpr: float | None = None,
) -> dict[str, list[dict]]:
    """``{detector: rows}``: per set of ``benchmark`` (in order, each group followed by its ``<group>ood`` mean) a
    row ``{"set", "fpr95_openood_v15", "auroc", "aupr_in", "aupr_out", "fpr95", "acc"}`` of fractions.

    ``id_scores[detector]``: the scores of the ID images; ``ood_scores[set][detector]``: those of the set's images
    (larger = more ID). A mean row averages its sets' values (OpenOOD's ``np.mean(metrics_list, axis=0)``);
    ``acc`` is the ID top-1 accuracy in every row, as OpenOOD prints it. ``tpr``: that of NINCO's FPR (default
    :data:`~imagenet_suite.scoring.metrics.ood.TPR`, 95 %).

    Example:
        Two sets, one per group, one detector; ``near`` is half separated, ``far`` fully:

        >>> import torch
        >>> bench = Benchmark("b", "", "x", "y", "split", "test",
        ...                   (BenchmarkSet("a", "near", "x", "a"), BenchmarkSet("c", "far", "x", "c")), ("near", "far"))
        >>> ids = {"msp": torch.tensor([5.0, 4.0, 3.0, 1.0])}
        >>> oods = {"a": {"msp": torch.tensor([2.0, 1.0, 0.0, 0.0])}, "c": {"msp": torch.tensor([0.0, -1.0])}}
        >>> rows = benchmark_table(bench, ids, oods, accuracy=0.75)["msp"]
        >>> [(row["set"], row["auroc"], row["fpr95"]) for row in rows]
        [('a', 0.90625, 0.25), ('nearood', 0.90625, 0.25), ('c', 1.0, 0.0), ('farood', 1.0, 0.0)]
    """
    from .metrics.ood import METRIC_NAMES, TPR, metric_value, ood_metrics  # torch: not for the specs' readers

    tpr = TPR if tpr is None else tpr
    table: dict[str, list[dict]] = {}
    for detector in id_scores:
        rows = []
        for group in benchmark.groups:
            members = [s.name for s in benchmark.sets if s.group == group]
            found = []
            for name in members:
                metrics = ood_metrics(id_scores[detector], ood_scores[name][detector], tpr)
                found.append({metric: metric_value(metrics[metric]) for metric in METRIC_NAMES})
                rows.append({"set": name, **found[-1], "acc": accuracy})
            mean = {metric: float(np.mean([row[metric] for row in found])) for metric in METRIC_NAMES}
            rows.append({"set": f"{group}ood", **mean, "acc": accuracy})
        table[detector] = rows
    return table


def percent2(value: float | None) -> str:
    """A fraction as a percentage with two decimals, as OpenOOD prints its tables (— if absent).

    Example:
        >>> percent2(0.912345), percent2(None), percent2(float("nan"))
        ('91.23', '—', '—')
    """
    return "—" if value is None or math.isnan(value) else f"{100 * value:.2f}"


def openood_frame_rows(table: Mapping[str, Sequence[Mapping]], detector: str) -> list[tuple]:
    """One detector's rows as OpenOOD prints them: ``(set, FPR@95, AUROC, AUPR_IN, AUPR_OUT, ACC, FPR@95 (ID+))``,
    percentages with two decimals."""
    columns = [*OPENOOD_COLUMNS.values(), "acc", NINCO_COLUMN[1]]
    return [(row["set"], *(percent2(row.get(c)) for c in columns)) for row in table[detector]]


def header() -> list[str]:
    """The column names of :func:`openood_frame_rows`."""
    return ["set", *OPENOOD_COLUMNS, "ACC", NINCO_COLUMN[0]]


__all__ = [
    "BENCHMARKS",
    "NINCO_COLUMN",
    "OPENOOD_COLUMNS",
    "OPENOOD_V15_IMAGENET",
    "Benchmark",
    "BenchmarkSet",
    "benchmark_table",
    "header",
    "openood_frame_rows",
    "percent2",
    "split_positions",
]
