"""Table cells shaded by their value: a heat table in place of a heatmap figure.

A :class:`Shading` names the columns of an HTML :class:`~imagenet_suite.scoring.presentation.html.Table` whose
cells get a background from a matplotlib colormap, quantised to :data:`STOPS` colours, and white or black text,
whichever contrasts more (WCAG's relative luminance). The page's script shades the rows it draws after a sort
with the same stops from the same sort keys (:func:`stop` is its formula), so a cell keeps its colour in any
order. A table carries its values as text: no figure to draw (a NINCO matrix of 64 OOD classes × 11 detectors
drawn by matplotlib with its values written in cost about 1 s of CPU; as a shaded table, milliseconds), the
numbers can be read, copied and sorted.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

STOPS = 64  # colours of a shading: finer steps are not told apart on a screen


@dataclass(frozen=True)
class Shading:
    """Shade the cells of ``columns`` from ``vmin`` to ``vmax`` (the columns' own values: fractions for a
    column shown in percent) with matplotlib colormap ``cmap``; a value out of range takes the nearer end, a
    missing value is not shaded."""

    columns: Sequence[str]
    cmap: str = "Reds"
    vmin: float = 0.0
    vmax: float = 1.0


@lru_cache(maxsize=16)
def palette(cmap: str) -> tuple[tuple[str, ...], str]:
    """``(colours, light)`` of ``cmap``: :data:`STOPS` background colours ``#rrggbb`` from its low end to its
    high end, and per colour ``"1"`` where white text contrasts more than black, else ``"0"``.

    Example:
        >>> colours, light = palette("Greys")
        >>> colours[0], colours[-1], light[0], light[-1], len(colours) == len(light) == STOPS
        ('#ffffff', '#000000', '0', '1', True)
    """
    import matplotlib
    from matplotlib.colors import to_hex

    ramp = matplotlib.colormaps[cmap]
    colours, light = [], []
    for k in range(STOPS):
        red, green, blue, _ = ramp(k / (STOPS - 1))
        colours.append(to_hex((red, green, blue)))
        luminance = sum(w * _linear(c) for w, c in zip((0.2126, 0.7152, 0.0722), (red, green, blue), strict=True))
        light.append("1" if 1.05 / (luminance + 0.05) > (luminance + 0.05) / 0.05 else "0")
    return tuple(colours), "".join(light)


def _linear(channel: float) -> float:
    """An sRGB channel (0–1) in linear light, as WCAG's relative luminance takes it."""
    return channel / 12.92 if channel <= 0.04045 else ((channel + 0.055) / 1.055) ** 2.4


def stop(key: str, vmin: float, vmax: float) -> int | None:
    """The palette index of a cell whose sort key is ``key`` (the number as the page writes it), None when the
    cell is not a finite number. The page's script computes the same index the same way (IEEE doubles, floor of
    x + 0.5), so a sorted table keeps its colours.

    Example:
        >>> stop("0", 0, 1), stop("1", 0, 1), stop("0.5", 0, 1), stop("2", 0, 1), stop("", 0, 1), stop("inf", 0, 1)
        (0, 63, 32, 63, None, None)
    """
    try:
        value = float(key)
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    return min(STOPS - 1, max(0, math.floor((value - vmin) / (vmax - vmin) * (STOPS - 1) + 0.5)))


def cell_style(key: str, shading: Shading) -> str:
    """The ``style`` attribute (with its leading space) of a shaded cell, or "" for a cell left plain.

    Example:
        >>> cell_style("1", Shading(["x"], "Greys")), cell_style("", Shading(["x"], "Greys"))
        (' style="background:#000000;color:#fff"', '')
    """
    index = stop(key, shading.vmin, shading.vmax)
    if index is None:
        return ""
    colours, light = palette(shading.cmap)
    return f' style="background:{colours[index]};color:{"#fff" if light[index] == "1" else "#000"}"'


def shading_attribute(shading: Shading, columns: Sequence[str]) -> str:
    """The table's ``data-shade`` JSON for the page's script: the shaded column positions among ``columns``, the
    range and the palette."""
    colours, light = palette(shading.cmap)
    shaded = [k for k, column in enumerate(columns) if column in shading.columns]
    return json.dumps({"c": shaded, "lo": shading.vmin, "hi": shading.vmax, "p": colours, "w": light},
                      separators=(",", ":"))  # fmt: skip


__all__ = ["STOPS", "Shading", "cell_style", "palette", "shading_attribute", "stop"]
