"""What an evaluation returns: :class:`MetricRow` (one number) and :class:`ScoreReport` (all of them).

Every result is a :class:`MetricRow`: ``metric``, ``value``, ``variant`` (a named convention such as
``torchmetrics`` or ``reference_impl``), ``subgroup`` (a class or category, empty for the whole
split), and the integer ``numerator``/``denominator`` behind a fraction. A :class:`ScoreReport`
holds the rows in the order the families computed them, plus ``meta`` (what was evaluated) and
``artifacts`` (non-tabular results that plots read).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ...files import atomic_write_bytes

if TYPE_CHECKING:  # torch, which reading reports does not import
    from ..metrics.classification import Fraction

TABLE_COLUMNS = ("metric", "variant", "subgroup", "value", "numerator", "denominator")
BINS = "calibration_bins/"  # artifacts[BINS + convention]: CalibrationBins (the calibration family)
RELIABILITY = "reliability"  # to_dict()'s key of the bins


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
    def fraction(cls, metric: str, counted: Fraction, variant: str = "", subgroup: str = "") -> MetricRow:
        """A row holding a counted fraction: value, numerator and denominator from ``counted``."""
        return cls(metric, counted.value, variant, subgroup, counted.numerator, counted.denominator)


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
        """The value of one row (first match), e.g. ``report.value("ece", "guo")``; KeyError if none."""
        for row in self.rows:
            if row.metric == metric and row.subgroup == subgroup and (variant is None or row.variant == variant):
                return row.value
        raise KeyError(f"no row metric={metric!r} variant={variant!r} subgroup={subgroup!r} in this report")

    def to_dict(self) -> dict[str, Any]:
        """``{"meta": ..., "metrics": [row dicts]}`` with non-finite values as None, and ``"reliability"``:
        ``{convention: bins}`` (:meth:`~imagenet_suite.scoring.metrics.calibration.CalibrationBins.to_json`)
        when the calibration family binned the confidences."""
        found = {
            "meta": self.meta,
            "metrics": [{k: _json_number(v) for k, v in asdict(row).items()} for row in self.rows],
        }
        bins = {key.removeprefix(BINS): b.to_json() for key, b in self.artifacts.items() if key.startswith(BINS)}
        if bins:
            found[RELIABILITY] = bins
        return found

    def to_json(self, path: str | Path | None = None) -> str:
        """JSON text (NaN written as null); also written to ``path`` when given."""
        text = json.dumps(self.to_dict(), indent=2, allow_nan=False)
        if path is not None:
            atomic_write_bytes(path, (text + "\n").encode("utf-8"))
        return text


def _json_number(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


__all__ = ["TABLE_COLUMNS", "MetricRow", "ScoreReport"]
