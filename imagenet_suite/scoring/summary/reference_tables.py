"""The pieces of ``leaderboard --reference`` every paper's placement uses: the section of a paper, the row
marks (``source``: :data:`PUBLISHED` / :data:`THIS_RUN`), the rows leaderboard.md shows."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...errors import ConfigError

PUBLISHED, THIS_RUN = "published", "this run"
TOP_SHOWN = 10  # leaderboard.md shows the published top ten ...
NEIGHBOURS = 2  # ... and the rows this close to a run's


@dataclass
class ReferenceSection:
    """The runs placed among one paper's published models: ``tables`` by name (``leaderboard_reference_<paper>
    _<name>.csv``; model-indexed, ``source`` published / this run, ``protocol`` what differs from the paper's),
    ``shown`` the rows leaderboard.md shows of each (all of the runs', the published ones around them),
    ``mismatches`` ``{run: [what differs]}`` (placed anyway: ``allow_protocol_mismatch``), ``notes``."""

    reference: str
    title: str
    tables: dict[str, pd.DataFrame]
    shown: dict[str, pd.DataFrame] = field(default_factory=dict)
    mismatches: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def protocol_text(mismatches: Mapping[str, list[str]], name: str) -> str:
    """What differs from the paper's protocol for run ``name`` (empty: nothing), as its ``protocol`` cell."""
    return "; ".join(mismatches.get(name, ()))


def check_names(published: pd.Index, runs: Sequence[str]) -> None:
    """ConfigError when a run has the name of a published model (the tables are indexed by model)."""
    clash = sorted(set(published) & set(runs))
    if clash:
        raise ConfigError(f"run {clash[0]!r} has the name of a published model; give its run folder another name")


def shown_rows(table: pd.DataFrame, top: int = TOP_SHOWN, neighbours: int = NEIGHBOURS) -> pd.DataFrame:
    """The rows of ``table`` (ordered, ``source`` column) leaderboard.md shows: the first ``top`` and those
    within ``neighbours`` positions of a run's row, every run's row included.

    Example:
        >>> table = pd.DataFrame({"source": ["published"] * 6 + ["this run"] + ["published"] * 6})
        >>> shown_rows(table, top=2, neighbours=1).index.tolist()
        [0, 1, 5, 6, 7]
    """
    runs = np.flatnonzero(table["source"].to_numpy() == THIS_RUN)
    keep = set(range(min(top, len(table))))
    for position in runs:
        keep.update(range(max(0, position - neighbours), min(len(table), position + neighbours + 1)))
    return table.iloc[sorted(keep)]


def number_text(value: float, spec: str) -> str | None:
    """``value`` formatted with ``spec``; None (— in Markdown) for NaN."""
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else spec.format(value)


__all__ = [
    "NEIGHBOURS",
    "PUBLISHED",
    "THIS_RUN",
    "TOP_SHOWN",
    "ReferenceSection",
    "check_names",
    "number_text",
    "protocol_text",
    "shown_rows",
]
