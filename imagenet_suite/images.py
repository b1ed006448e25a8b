"""Checks on original image bytes: format, mode and size from the header, and truncation.

Images are stored as their original bytes; these checks never re-encode. A JPEG that does not
end with its end-of-image marker is fully decoded, so a truncated file is caught while a file
with harmless trailing bytes is accepted.

A complete JPEG's size and mode are read from its start-of-frame segment directly, exactly as
Pillow reads them (about 10x faster than ``Image.open``, which parses every header segment);
anything unusual there (no frame header, not 8-bit, an odd component count) goes to Pillow.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from PIL import Image, UnidentifiedImageError

from .errors import InvalidSourceData

JPEG_SOI = b"\xff\xd8"
JPEG_EOI = b"\xff\xd9"
JPEG_FRAME_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}  # SOF0..SOF15 (not DHT, JPG, DAC)
JPEG_STANDALONE_MARKERS = frozenset([0x01, *range(0xD0, 0xDB)])  # TEM, RSTn, SOI, EOI, SOS: no frame before them
JPEG_MODES = {1: "L", 3: "RGB", 4: "CMYK"}  # Pillow's mode for each component count


@dataclass(frozen=True)
class ImageHeader:
    format: str  # "JPEG", "PNG", ...
    mode: str  # PIL mode: "RGB", "L", "CMYK", ...
    width: int  # pixels
    height: int  # pixels


def inspect_image(data: bytes, where: str) -> ImageHeader:
    """Header facts of an encoded image; InvalidSourceData naming ``where`` if unreadable or truncated."""
    if data.startswith(JPEG_SOI) and data.rstrip(b"\x00").endswith(JPEG_EOI):
        header = jpeg_frame_header(data)
        if header is not None:
            return header
    try:
        with Image.open(io.BytesIO(data)) as image:
            header = ImageHeader(image.format or "", image.mode, image.width, image.height)
            if image.format == "JPEG" and not data.rstrip(b"\x00").endswith(JPEG_EOI):
                image.load()  # raises on a truncated stream
            elif image.format == "PNG" and not data.endswith(b"IEND\xaeB`\x82"):
                image.load()
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as err:
        raise InvalidSourceData(f"{where}: not a readable image, or truncated ({err})") from None
    return header


def jpeg_frame_header(data: bytes) -> ImageHeader | None:
    """Size and mode from the start-of-frame segment of a JPEG, or None if there is no usual one.

    Walks the marker segments after SOI (``FF xx`` + 2-byte big-endian length) to the first frame
    header: precision (8 bits), height, width, component count (1, 3 or 4 → L, RGB, CMYK).
    """
    position, end = len(JPEG_SOI), len(data)
    while position + 10 <= end:
        if data[position] != 0xFF:
            return None
        marker = data[position + 1]
        if marker == 0xFF:  # fill byte
            position += 1
            continue
        if marker in JPEG_STANDALONE_MARKERS:
            return None
        if marker in JPEG_FRAME_MARKERS:
            precision, components = data[position + 4], data[position + 9]
            height = int.from_bytes(data[position + 5:position + 7], "big")
            width = int.from_bytes(data[position + 7:position + 9], "big")
            mode = JPEG_MODES.get(components)
            if precision != 8 or mode is None or not width or not height:
                return None
            return ImageHeader("JPEG", mode, width, height)
        position += 2 + int.from_bytes(data[position + 2:position + 4], "big")
    return None
