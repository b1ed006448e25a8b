"""Shape bias as counts (Geirhos et al. 2019): a :class:`ShapeBias` holds the shape and texture hits on cue-conflict
images, :func:`pooled` sums several (observers or categories pooled, as model-vs-human does). Computed from a model's
decisions by :mod:`~imagenet_suite.scoring.metrics.shape`; here without torch, for the leaderboard's figure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class ShapeBias:
    """Shape and texture hits on cue-conflict images (shape != texture); ``value`` is NaN without hits."""

    shape_hits: int
    texture_hits: int
    conflict_images: int
    excluded_images: int

    @property
    def value(self) -> float:
        hits = self.shape_hits + self.texture_hits
        return self.shape_hits / hits if hits else math.nan


def pooled(counts: Iterable[ShapeBias]) -> ShapeBias:
    """The sum of several :class:`ShapeBias` counts (observers or categories pooled, as model-vs-human does).

    Example:
        >>> pooled([ShapeBias(3, 1, 4, 0), ShapeBias(1, 1, 3, 1)]).value
        0.6666666666666666
    """
    counts = list(counts)
    return ShapeBias(*(sum(getattr(c, field) for c in counts) for field in ShapeBias.__dataclass_fields__))


__all__ = ["ShapeBias", "pooled"]
