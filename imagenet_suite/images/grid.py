"""Preview grids: PNG contact sheets of example images with captions, for cards and the README.

A grid is a list of :class:`Tile` (an image and its caption lines) laid out row-major in
``columns`` columns. Two renderers draw it, each deterministic for one Pillow (and matplotlib)
version:

* :func:`captioned_grid` (Pillow only): each image fitted into a square box by nearest-neighbour
  shrinking (noise and stripes stay crisp), a grey frame, the caption lines *under* it (first line
  black, the others grey). The OOD unit tests' ``ood_unit_tests_grid.png``.
* :func:`titled_grid` (matplotlib's Agg canvas): each image resized to a square panel (bicubic) and
  drawn 1:1, the caption lines as a centred title *above* it, wrapped by matplotlib. PatchML's
  ``examples.png``.

They are two renderers rather than one because the builders store these pictures in their
datasets, byte for byte; one renderer for both would change one of the stored pictures.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from PIL import Image

from .codec import Encoding, encode

CAPTION_COLOURS = ("black", (90, 90, 90))  # first caption line, the others
FRAME_COLOUR = (150, 150, 150)


@dataclass(frozen=True)
class Tile:
    """One picture of a grid and its caption, one string per line (the first is the title)."""

    image: Image.Image
    caption: tuple[str, ...]


def grid_rows(count: int, columns: int) -> int:
    """Rows needed for ``count`` tiles in ``columns`` columns (at least one)."""
    return max(1, -(-count // columns))


def captioned_grid(
    tiles: Sequence[Tile],
    *,
    columns: int = 6,
    tile: int = 128,
    gap: int = 16,
    line_height: int = 12,
    caption_lines: int = 2,
) -> bytes:
    """PNG bytes: each image shrunk (nearest neighbour, aspect kept) into a ``tile`` x ``tile`` box,
    bottom-aligned and centred in its cell, framed in grey, with its caption lines underneath.

    Sizes are pixels; ``caption_lines`` lines of ``line_height`` pixels are reserved under each tile.
    The PNG is written by :func:`imagenet_suite.images.codec.encode` with ``optimize=True``.
    """
    from PIL import ImageDraw, ImageFont

    font = ImageFont.load_default(size=10)
    caption_height = caption_lines * line_height + 4
    row_height = tile + caption_height + 6
    rows = -(-len(tiles) // columns)
    canvas = Image.new("RGB", (columns * (tile + gap) + gap, rows * row_height + 6), "white")
    draw = ImageDraw.Draw(canvas)
    for position, item in enumerate(tiles):
        row, col = divmod(position, columns)
        image = item.image.copy()
        image.thumbnail((tile, tile), Image.Resampling.NEAREST)
        x = gap + col * (tile + gap) + (tile - image.width) // 2
        y = 6 + row * row_height + (tile - image.height)
        canvas.paste(image, (x, y))
        draw.rectangle((x - 1, y - 1, x + image.width, y + image.height), outline=FRAME_COLOUR)
        for line, text in enumerate(item.caption):
            colour = CAPTION_COLOURS[min(line, 1)]
            draw.text((x, y + image.height + 3 + line * line_height), text, fill=colour, font=font)
    return encode(canvas, Encoding.png(optimize=True))


def titled_grid(
    tiles: Sequence[Tile],
    *,
    columns: int = 5,
    panel: int = 200,
    dpi: int = 100,
    title_height: int = 46,
    resample: Image.Resampling = Image.Resampling.BICUBIC,
    fontsize: float = 7,
) -> bytes:
    """PNG bytes (matplotlib, Agg): each image resized to ``panel`` x ``panel`` pixels with ``resample``
    and drawn 1:1, its caption lines as a title above it (``title_height`` pixels reserved).

    No ``Software`` metadata is written, so the bytes depend only on the tiles and the
    matplotlib/Pillow versions.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = grid_rows(len(tiles), columns)
    inches = lambda pixels: pixels / dpi  # noqa: E731
    figure = Figure(figsize=(inches(columns * (panel + 8)), inches(rows * (panel + title_height + 6))), dpi=dpi)
    FigureCanvasAgg(figure)
    width, height = figure.bbox.width, figure.bbox.height
    for position, item in enumerate(tiles):
        row, col = divmod(position, columns)
        left, bottom = col * (panel + 8) + 4, height - (row + 1) * (panel + title_height + 6) + 3
        axes = figure.add_axes((left / width, bottom / height, panel / width, panel / height))
        axes.set_axis_off()
        axes.imshow(np.asarray(item.image.resize((panel, panel), resample)), interpolation="nearest")
        title = item.caption[0] + "\n" + "\n".join(item.caption[1:]) if item.caption else ""
        axes.set_title(title, fontsize=fontsize, linespacing=1.15, pad=3)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()
