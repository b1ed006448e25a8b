"""PatchML's algorithm (Anzaku et al. 2024, Algorithm 1): the grid, the pool of boxed patches, sampling and
placement, compositing and encoding; the :mod:`builders.patchml` builder runs it. Pure functions of their inputs
and the seed."""

from __future__ import annotations

import collections
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from imagenet_suite.core.builder import example_rng
from imagenet_suite.errors import ConfigError, InvalidSourceData
from imagenet_suite.images.codec import Encoding, decode_rgb

if TYPE_CHECKING:
    import numpy as np
    from PIL import Image


# NumPy, Pillow, Parquet (DatasetFolder) and the picture grid are imported in the functions that use them:
# ``imagenet-suite list``/``info`` import this module for the builder's metadata only

DEFAULT_GRID = "2:256,3:256,4:256,6:170,9:128"
DEFAULT_CANVAS = 512
SPLIT = "test"
DUPLICATE_POLICIES = ("union", "drop", "resample")
BAD_BOX_POLICIES = ("clip", "skip", "error")
IMAGE_FORMATS = ("png", "jpeg")
PNG_COMPRESS_LEVEL = 6
RESAMPLE = "BICUBIC"  # the PIL.Image.Resampling filter of every resize (patches and the card picture)
HEADER_BYTES = 1 << 16  # enough for the JPEG header (size) of nearly every ImageNet file; else the whole file
TAKE_CHUNK = 128  # source ids read per DatasetFolder.take (bounds the row groups held at once)
EXAMPLES_PER_K = 2  # composites of each k in the card picture
ID_PATTERN = re.compile(r"^patchml-s(\d+)-k(\d+)-(\d{6,})$")
VAL_BUILD_HINT = (
    "Build it with `imagenet-suite build imagenet_val --config boxes --manual-dir DIR --out OUT`, "
    "or pass the raw val files to this build with --manual-dir."
)
PROVENANCE_COLUMNS = ("id", "labels", "num_labels", "num_patches", "patch_size", "patches")
BOX_KEYS = ("xmin", "ymin", "xmax", "ymax")


# ============================================================================= the grid (Algorithm 1)


@dataclass(frozen=True)
class GridConfig:
    """One ``(k, p)`` entry of Algorithm 1 on an ``canvas × canvas`` image (all in pixels)."""

    k: int  # patches per composite
    p: int  # side of the square box each patch is fitted into
    canvas: int  # F

    @property
    def columns(self) -> int:
        """``c = ⌊F/p⌋``: grid columns (= rows)."""
        return self.canvas // self.p

    def cell(self, i: int) -> tuple[int, int]:
        """``(row, col)`` of patch ``i``: row-major, ``(⌊i/c⌋, i mod c)``."""
        return divmod(i, self.columns)


def check_configuration(k: int, p: int, canvas: int = DEFAULT_CANVAS) -> GridConfig:
    """Algorithm 1's validity check; ConfigError "Configuration invalid" names k, p, F and the failed rule."""
    if canvas < 1 or k < 1 or p < 1:
        raise ConfigError(f"Configuration invalid: k={k}, p={p}, F={canvas}; all must be positive integers")
    columns = canvas // p
    if k * p * p > canvas * canvas:
        raise ConfigError(
            f"Configuration invalid: k={k} patches of p={p} px need k·p² = {k * p * p} px², more than "
            f"the F² = {canvas * canvas} px² of the {canvas}x{canvas} canvas"
        )
    if k > columns * columns:
        raise ConfigError(
            f"Configuration invalid: k={k} patches need k cells, but p={p} px on a {canvas} px canvas "
            f"gives c² = {columns * columns} cells (c = ⌊F/p⌋ = {columns})"
        )
    return GridConfig(k, p, canvas)


def parse_grid(text: str, canvas: int = DEFAULT_CANVAS) -> tuple[GridConfig, ...]:
    """The ``grid`` option ``"k:p,k:p,..."`` (paper: ``2:256,3:256,4:256,6:170,9:128``), each entry checked."""
    entries = []
    for part in str(text).split(","):
        k, sep, p = part.strip().partition(":")
        if not sep or not k.isdigit() or not p.isdigit():
            raise ConfigError(
                f"option grid={text!r}: entry {part.strip()!r} is not K:P with integers, e.g. {DEFAULT_GRID}"
            )
        entries.append(check_configuration(int(k), int(p), canvas))
    counts = [entry.k for entry in entries]
    if len(set(counts)) != len(counts):
        raise ConfigError(f"option grid={text!r}: a patch count k appears twice; each k makes one group of composites")
    return tuple(entries)


def fit_size(width: int, height: int, p: int) -> tuple[int, int]:
    """Aspect-preserving size fitting a ``p×p`` box (up- or down-scaling): long side ``p``, short side
    ``round_half_up(short·p/long)``, at least 1. Inputs and result in pixels, ``(width, height)``."""
    long_side, short_side = max(width, height), min(width, height)
    scaled = max(1, (2 * short_side * p + long_side) // (2 * long_side))
    return (p, scaled) if width >= height else (scaled, p)


def composite_id(seed: int, k: int, number: int) -> str:
    """``patchml-s<seed>-k<k>-<j:06d>``, stable within a major version."""
    return f"patchml-s{seed}-k{k}-{number:06d}"


def parse_composite_id(value: str) -> tuple[int, int, int]:
    """``(seed, k, j)`` of a composite id; ConfigError for anything else."""
    match = ID_PATTERN.match(value)
    if not match:
        raise ConfigError(f"{value!r} is not a PatchML id (expected patchml-s<seed>-k<k>-<j:06d>)")
    return int(match.group(1)), int(match.group(2)), int(match.group(3))


# ============================================================================= stage 1: the pool


@dataclass(frozen=True)
class Pool:
    """The patches, in canonical order: arrays of length N (boxes ``[N, 4]``, pixels, crop convention)."""

    source_ids: tuple[str, ...]
    box_index: np.ndarray
    labels: np.ndarray
    boxes: np.ndarray
    stats: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.source_ids)

    def lookup(self) -> dict[tuple[str, int], int]:
        """``{(source id, box_index): pool position}``."""
        return {(s, int(b)): i for i, (s, b) in enumerate(zip(self.source_ids, self.box_index.tolist(), strict=True))}


ImageBoxes = tuple[str, int, int, list[tuple[int, int, int, int, int]]]  # id, width, height, [(label, box...)]


def build_pool(images: Iterable[ImageBoxes], bad_boxes: str = "clip", min_box_side: int = 0, where: str = "") -> Pool:
    """Stage 1: every box of every image, checked per ``bad_boxes`` and ``min_box_side``.

    ``images``: ``(id, width, height, [(label, xmin, ymin, xmax, ymax), ...])``, ordered by id. Zero-area
    boxes (``xmax ≤ xmin`` or ``ymax ≤ ymin``) and boxes reaching outside ``[0, width] × [0, height]`` raise
    InvalidSourceData under ``error``. Under ``skip`` they are dropped. Under ``clip``, outside boxes are
    clipped to the image and the ones that are empty after that are dropped. ``stats`` counts every case.
    """
    import numpy as np

    stats = collections.Counter(
        {
            key: 0
            for key in (
                "boxes",
                "patches",
                "clipped",
                "skipped_zero_area",
                "skipped_outside_image",
                "skipped_too_small",
            )
        }
    )
    ids, index, labels, boxes = [], [], [], []
    for image_id, width, height, image_boxes in images:
        for box_index, (label, *box) in enumerate(sorted(image_boxes)):
            stats["boxes"] += 1
            checked, outcome = _checked_box(
                box, width, height, bad_boxes, f"{where}: image {image_id} box {box_index} (class {label})"
            )
            if checked is not None and min(checked[2] - checked[0], checked[3] - checked[1]) < min_box_side:
                checked, outcome = None, "skipped_too_small"
            if outcome:
                stats[outcome] += 1
            if checked is None:
                continue
            ids.append(image_id)
            index.append(box_index)
            labels.append(label)
            boxes.append(checked)
    stats["patches"] = len(ids)
    return Pool(
        tuple(ids),
        np.asarray(index, dtype=np.int32),
        np.asarray(labels, dtype=np.int32),
        np.asarray(boxes, dtype=np.int32).reshape(-1, 4),
        dict(stats),
    )


def _checked_box(box: Sequence[int], width: int, height: int, policy: str, where: str) -> tuple[tuple | None, str]:
    """``(box to crop or None, counted outcome or "")`` for one box under ``policy``."""
    xmin, ymin, xmax, ymax = (int(v) for v in box)
    empty = xmax <= xmin or ymax <= ymin
    outside = xmin < 0 or ymin < 0 or xmax > width or ymax > height
    if not (empty or outside):
        return (xmin, ymin, xmax, ymax), ""
    if policy == "error":
        problem = "has zero area" if empty else f"reaches outside the {width}x{height} image"
        raise InvalidSourceData(
            f"{where} [{xmin}, {ymin}, {xmax}, {ymax}] {problem}; expected 0 <= xmin < xmax <= width "
            f"and 0 <= ymin < ymax <= height (option bad_boxes=clip or skip counts and handles such boxes)"
        )
    if empty:
        return None, "skipped_zero_area"
    if policy == "skip":
        return None, "skipped_outside_image"
    clipped = (max(xmin, 0), max(ymin, 0), min(xmax, width), min(ymax, height))
    if clipped[2] <= clipped[0] or clipped[3] <= clipped[1]:
        return None, "skipped_outside_image"
    return clipped, "clipped"


# ============================================================================= stage 2: sampling and placement


def assign_patches(labels: np.ndarray, k: int, seed: int, duplicates: str = "union") -> tuple[np.ndarray, np.ndarray]:
    """The composites of one k, from the full pool (reset per k): ``(numbers j [n], pool positions [n, k])``."""
    import numpy as np

    order = example_rng(seed, "patchml-pool", k).permutation(len(labels))
    if duplicates == "resample":
        chosen = _distinct_groups(order, labels, k)
        return np.arange(len(chosen), dtype=np.int64), chosen
    count = len(order) // k
    chosen = order[: count * k].reshape(count, k)
    numbers = np.arange(count, dtype=np.int64)
    if duplicates == "drop":
        keep = distinct_rows(labels[chosen])
        return numbers[keep], chosen[keep]
    return numbers, chosen


def distinct_rows(values: np.ndarray) -> np.ndarray:
    """``[n]`` bool: the rows of ``[n, k]`` ``values`` without a repeated entry."""
    import numpy as np

    if values.shape[1] < 2:
        return np.ones(len(values), dtype=bool)
    ordered = np.sort(values, axis=1)
    return (np.diff(ordered, axis=1) != 0).all(axis=1)


def _distinct_groups(order: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """``resample``: each composite takes the first patches (waiting ones first, then the permutation)
    whose classes are distinct; a patch that would repeat a class waits for the next composite."""
    waiting: collections.deque[int] = collections.deque()
    stream = iter(order.tolist())
    groups = []
    while True:
        chosen, seen, deferred = [], set(), []
        while len(chosen) < k:
            position = waiting.popleft() if waiting else next(stream, None)
            if position is None:
                break
            label = int(labels[position])
            if label in seen:
                deferred.append(position)
            else:
                chosen.append(position)
                seen.add(label)
        if len(chosen) < k:
            import numpy as np

            return np.asarray(groups, dtype=np.int64).reshape(-1, k)  # leftovers dropped
        waiting.extendleft(reversed(deferred))
        groups.append(chosen)


def place(pool: Pool, grid: GridConfig, seed: int, number: int, positions: Sequence[int]) -> dict[str, Any]:
    """The provenance row of composite ``j = number`` of ``grid.k`` (Algorithm 1, PlacePatchInGrid)."""
    rng = example_rng(seed, "patchml", grid.k, number)
    patches = []
    for i, position in enumerate(positions):
        row, col = grid.cell(i)
        xmin, ymin, xmax, ymax = pool.boxes[position].tolist()
        width, height = fit_size(xmax - xmin, ymax - ymin, grid.p)
        x_offset = int(rng.integers(0, grid.p - width, endpoint=True))
        y_offset = int(rng.integers(0, grid.p - height, endpoint=True))
        x, y = col * grid.p + x_offset, row * grid.p + y_offset
        if x + width > grid.canvas or y + height > grid.canvas:  # unreachable for a checked configuration
            raise RuntimeError(f"patch {i} of k={grid.k} at ({x}, {y}) size {width}x{height} leaves the canvas")
        patches.append(
            {
                "source_id": pool.source_ids[position],
                "box_index": int(pool.box_index[position]),
                "label": int(pool.labels[position]),
                "xmin": xmin,
                "ymin": ymin,
                "xmax": xmax,
                "ymax": ymax,
                "cell_row": row,
                "cell_col": col,
                "x_offset": x_offset,
                "y_offset": y_offset,
                "x": x,
                "y": y,
                "width": width,
                "height": height,
            }
        )
    labels = sorted({patch["label"] for patch in patches})
    return {
        "id": composite_id(seed, grid.k, number),
        "labels": labels,
        "num_labels": len(labels),
        "num_patches": grid.k,
        "patch_size": grid.p,
        "patches": patches,
    }


# ============================================================================= compositing and encoding


def compose(row: Mapping[str, Any], sources: Mapping[str, bytes], canvas: int = DEFAULT_CANVAS) -> Image.Image:
    """The composite of a provenance row: black RGB ``canvas²``, each patch cropped, resized, pasted.

    ``sources``: encoded bytes of every ``source_id`` the row names. InvalidSourceData names the row and
    patch when a source is missing, a box is not inside its source image, or a patch leaves the canvas.
    """
    from PIL import Image

    resample = Image.Resampling[RESAMPLE]
    image = Image.new("RGB", (canvas, canvas))
    decoded: dict[str, Image.Image] = {}
    for i, patch in enumerate(row["patches"]):
        where = f"composite {row['id']} patch {i}"
        source_id = patch["source_id"]
        if source_id not in sources:
            raise InvalidSourceData(f"{where}: source image {source_id} is not in the val source")
        if source_id not in decoded:
            decoded[source_id] = decode_rgb(sources[source_id], f"{where}: source {source_id}").image
        source = decoded[source_id]
        box = tuple(patch[key] for key in BOX_KEYS)
        if not (0 <= box[0] < box[2] <= source.width and 0 <= box[1] < box[3] <= source.height):
            raise InvalidSourceData(
                f"{where}: box {list(box)} is not inside {source_id} ({source.width}x{source.height})"
            )
        x, y, width, height = patch["x"], patch["y"], patch["width"], patch["height"]
        if not (x >= 0 and y >= 0 and x + width <= canvas and y + height <= canvas and width > 0 and height > 0):
            raise InvalidSourceData(
                f"{where}: {width}x{height} at ({x}, {y}) is not inside the {canvas}x{canvas} canvas"
            )
        image.paste(source.crop(box).resize((width, height), resample), (x, y))
    return image


def encoding_of(image_format: str = "png", jpeg_quality: int = 95) -> Encoding:
    """The composites' encoding: PNG (``compress_level`` 6, no metadata) or baseline JPEG 4:4:4 at ``jpeg_quality``."""
    if image_format == "png":
        return Encoding.png(compress_level=PNG_COMPRESS_LEVEL)
    if image_format == "jpeg":
        return Encoding.jpeg(quality=jpeg_quality, subsampling=0, optimize=False, progressive=False)
    raise ConfigError(f"image format {image_format!r}: expected one of {IMAGE_FORMATS}")
