"""OpenOOD v1.5, Zhang et al. 2023 ("OpenOOD v1.5: Enhanced Benchmark for Out-of-Distribution Detection"): the
ImageNet-1k benchmark of every run evaluated with ``--benchmark openood-v1.5-imagenet``
(:mod:`imagenet_suite.scoring.benchmarks`), as OpenOOD's leaderboard lays it out.

* Per model and detector: near-OOD and far-OOD AUROC and FPR@95 (the ``nearood`` / ``farood`` means; OOD
  positive, OpenOOD's convention) and the ID accuracy, in percent with two decimals;
* ``leaderboard_openood_v15.csv``: every row of every run (model, detector, set, the five OpenOOD columns and
  NINCO's FPR@95 with ID positive), fractions.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from ...benchmarks import OPENOOD_V15_IMAGENET, percent2
from ._shared import write_csv

NAME = OPENOOD_V15_IMAGENET.name
COLUMNS = ["model", "detector", "set", "fpr95_openood_v15", "auroc", "aupr_in", "aupr_out", "acc", "fpr95"]


def table(suites: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Long: one row per model, detector and set of the benchmark (:data:`COLUMNS`); empty without a run of it."""
    rows = []
    for model, suite in suites.items():
        record = (suite["summary"].get("benchmarks") or {}).get(NAME)
        for detector, sets in (record or {}).get("detectors", {}).items():
            rows += [(model, detector, *(entry.get(column) for column in COLUMNS[2:])) for entry in sets]
    return pd.DataFrame(rows, columns=COLUMNS)


def markdown(frame: pd.DataFrame) -> list[str]:
    """The section of ``leaderboard.md``: near/far AUROC and FPR@95 and ID accuracy per model and detector."""
    from ...presentation.suite_markdown import table as markdown_table

    lines = ["## OpenOOD v1.5 ImageNet-1k, Zhang et al. 2023", ""]
    if not len(frame):
        return lines + ["No run was evaluated with `--benchmark openood-v1.5-imagenet`.", ""]
    lines += [
        "Percent, two decimals. Near-OOD: SSB-hard, NINCO; far-OOD: iNaturalist, Textures, OpenImage-O (means over "
        "their sets); FPR@95 with OOD positive; ACC: top-1 on OpenOOD's 45,000 ImageNet val test images.",
        "",
    ]
    means = frame[frame["set"].isin(["nearood", "farood"])]
    by_pair: dict[tuple[str, str], dict[str, tuple]] = {}  # (model, detector) -> {set: (auroc, fpr95, acc)}: one pass
    columns = ["model", "detector", "set", "auroc", "fpr95_openood_v15", "acc"]
    for model, detector, name, *values in means[columns].itertuples(index=False, name=None):
        by_pair.setdefault((model, detector), {}).setdefault(name, tuple(values))
    rows = []
    for (model, detector), by_set in by_pair.items():
        values = [by_set[s][m] for s in ("nearood", "farood") for m in (0, 1)]
        rows.append(
            (model, detector, *(percent2(v) for v in values), percent2(_number(next(iter(by_set.values()))[2])))
        )
    header = ["model", "detector", "near AUROC", "near FPR@95", "far AUROC", "far FPR@95", "ID ACC"]
    return lines + markdown_table(header, rows)


def _number(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def write(frame: pd.DataFrame, folder: Path) -> list[Path]:
    """``leaderboard_openood_v15.csv`` (long, fractions) when a run has the benchmark."""
    written: list[Path] = []
    if len(frame):
        write_csv(folder, "openood_v15", frame, written, index=False)
    return written


__all__ = ["COLUMNS", "NAME", "markdown", "table", "write"]
