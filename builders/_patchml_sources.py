"""Where PatchML reads its ImageNet-val images and boxes: a built ``imagenet_val`` folder (config ``boxes``) or a
release layout read in place (:mod:`builders.patchml`)."""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from imagenet_suite import classes
from imagenet_suite.core.archives import open_archive
from imagenet_suite.errors import InvalidSourceData

from .imagenet_val import Layout, read_images

if TYPE_CHECKING:
    from imagenet_suite.dataset.folder import DatasetFolder

# NumPy, Pillow, Parquet (DatasetFolder) and the picture grid are imported in the functions that use them:
# ``imagenet-suite list``/``info`` import this module for the builder's metadata only

from ._patchml_algorithm import (
    BOX_KEYS,
    HEADER_BYTES,
    TAKE_CHUNK,
    ImageBoxes,
)

# ============================================================================= reading the val source


@dataclass(frozen=True)
class FolderImages:
    """Source image bytes from a built ``imagenet_val`` folder with the ``boxes`` config."""

    path: Path

    def read(self, ids: Iterable[str]) -> dict[str, bytes]:
        """``{id: bytes}`` for ``ids``, read in dataset order ``TAKE_CHUNK`` at a time (few row groups each)."""
        from imagenet_suite.dataset.folder import DatasetFolder

        folder = DatasetFolder(self.path)
        wanted = sorted(set(ids))
        out: dict[str, bytes] = {}
        for start in range(0, len(wanted), TAKE_CHUNK):
            table = folder.take(wanted[start : start + TAKE_CHUNK], "boxes", None, ["id", "image"])
            images = table.column("image").combine_chunks().field("bytes").to_pylist()
            out.update(zip(table.column("id").to_pylist(), images, strict=True))
        return out


@dataclass(frozen=True)
class LayoutImages:
    """Source image bytes from an ``imagenet_val`` manual layout (tar read in place, or folders)."""

    layout: Layout

    def read(self, ids: Iterable[str]) -> dict[str, bytes]:
        return dict(read_images(self.layout, tuple(sorted(set(ids)))))


def val_from_folder(folder: DatasetFolder) -> Iterator[ImageBoxes]:
    """``(id, width, height, boxes)`` of every row of a built imagenet_val ``boxes`` config (no pixels read)."""
    table = folder.read_table("boxes", None, ["id", "width", "height", "objects"])
    for row in table.to_pylist():
        yield row["id"], row["width"], row["height"], [(o["label"], *(o[k] for k in BOX_KEYS)) for o in row["objects"]]


def val_from_layout(layout: Layout, boxes: Mapping[str, list[dict]], where: str) -> Iterator[ImageBoxes]:
    """``(id, width, height, boxes)`` of every image of a manual layout; sizes from the image headers."""
    ids = sorted(boxes)
    for image_id, (width, height) in zip(ids, _image_sizes(layout, ids), strict=True):
        yield (
            image_id,
            width,
            height,
            [
                (classes.index_of(b["wnid"], f"{where}: {image_id}", "box class"), *(b[k] for k in BOX_KEYS))
                for b in boxes[image_id]
            ],
        )


def _image_sizes(layout: Layout, ids: Sequence[str]) -> Iterator[tuple[int, int]]:
    """``(width, height)`` of each image from the first ``HEADER_BYTES`` of its file (the whole file if needed)."""
    with open_archive(layout.archive.path, layout.tar_index) as archive:
        for image_id in ids:
            member = layout.members[image_id]
            head = archive.read_head(member, HEADER_BYTES)
            yield _size_of(head) or _size_of(archive.read(member)) or _unreadable(layout, member)


def _size_of(data: bytes) -> tuple[int, int] | None:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            return image.size
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError):
        return None


def _unreadable(layout: Layout, member: str):
    raise InvalidSourceData(f"{layout.archive.path}: {member} is not a readable image (no image size in its header)")
