"""A picture of one image under every corruption and severity (rows: corruptions; columns: clean, 1..5).

``save_corruption_grid(image, path)`` draws it with the same seeded corruptions the ``perturbations``
builder stores (``example_rng(seed, corruption, key)``); the documentation's ``docs/images/perturbations_grid.png``
is made by ``imagenet-suite perturbations grid IMAGE OUT.png --frost-dir DIR`` (argument parsing lives in
``imagenet_suite.commands.perturbations``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from ..seeding import example_rng
from . import corruptions as C

LABEL_WIDTH = 118  # px, left column with the corruption names
HEADER = 18  # px, top row with the severities
GRID_CONTEXT = C.Context(flavor="imagenet_c")  # the grid's default: ImageNet-C's flavor, no frost pictures


def corruption_grid(
    image,
    corruptions: Sequence[str] = C.IMAGENET_C,
    severities: Sequence[int] = C.SEVERITIES,
    seed: int = 0,
    key: str = "grid",
    context: C.Context = GRID_CONTEXT,
    cell: int = 96,
) -> Image.Image:
    """RGB grid: a row per corruption (``frost`` rows are skipped without frost pictures in ``context``),
    columns clean + ``severities``; each cell the 224x224 corrupted image shrunk to ``cell`` px. The
    corruptions are those the ``perturbations`` builder stores for row key ``key`` with ``seed``, in
    ``context.flavor`` (default ``imagenet_c``)."""
    source = np.asarray(_square224(image))
    names = [n for n in corruptions if n != "frost" or context.frost]
    grid = Image.new("RGB", (LABEL_WIDTH + cell * (len(severities) + 1), HEADER + cell * len(names)), "white")
    draw = ImageDraw.Draw(grid)
    for column, title in enumerate(["clean", *(f"severity {s}" for s in severities)]):
        draw.text((LABEL_WIDTH + column * cell + 4, 3), title, fill="black")
    for row, name in enumerate(names):
        top = HEADER + row * cell
        draw.text((4, top + cell // 2 - 6), name, fill="black")
        grid.paste(_cell(source, cell), (LABEL_WIDTH, top))
        for column, severity in enumerate(severities, start=1):
            out = C.corrupt(source, name, severity, example_rng(seed, name, key), context.flavor, context.frost)
            grid.paste(_cell(out, cell), (LABEL_WIDTH + column * cell, top))
    return grid


def save_corruption_grid(image, path: str | Path, max_bytes: int = 400_000, **kwargs) -> Path:
    """Write the grid as a PNG (palette-quantized to stay under ``max_bytes``); returns ``path``."""
    grid = corruption_grid(image, **kwargs)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for colors in (256, 192, 128, 96, 64):
        grid.quantize(colors, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(path, optimize=True)
        if path.stat().st_size <= max_bytes:
            return path
    raise ValueError(f"{path}: the grid is {path.stat().st_size} bytes even at 64 colours; use a smaller cell")


def _square224(image) -> Image.Image:
    """The 224x224 center crop ImageNet-C corrupts (Resize(256) + CenterCrop(224))."""
    image = image if isinstance(image, Image.Image) else Image.fromarray(C.to_rgb_array(image))
    return C.resize_short_center_crop(image.convert("RGB"))


def _cell(pixels: np.ndarray, size: int) -> Image.Image:
    return Image.fromarray(pixels).resize((size, size), Image.BILINEAR)
