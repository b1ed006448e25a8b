"""Checks on original image bytes: format, mode and size from the header, and truncation.

Images are stored as their original bytes; these checks never re-encode. A JPEG that does not
end with its end-of-image marker is fully decoded, so a truncated file is caught while a file
with harmless trailing bytes is accepted.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from PIL import Image, UnidentifiedImageError

from .errors import InvalidSourceData

JPEG_SOI = b"\xff\xd8"
JPEG_EOI = b"\xff\xd9"


@dataclass(frozen=True)
class ImageHeader:
    format: str  # "JPEG", "PNG", ...
    mode: str  # PIL mode: "RGB", "L", "CMYK", ...
    width: int  # pixels
    height: int  # pixels


def inspect_image(data: bytes, where: str) -> ImageHeader:
    """Header facts of an encoded image; InvalidSourceData naming ``where`` if unreadable or truncated."""
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
