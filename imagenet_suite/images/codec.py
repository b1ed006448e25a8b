"""Decoding images to RGB, and encoding pixels deterministically with recorded settings.

**Decoding.** :func:`decode_rgb` opens encoded bytes with Pillow and converts them with
``convert("RGB")``, as torchvision's image loader does: grayscale, CMYK, palette and RGBA sources
all become 3-channel RGB. It returns the RGB image together with the source's PIL mode (which
builders record). No EXIF rotation is applied: pixels stay in stored order. An unreadable image
raises InvalidSourceData naming ``where``. :func:`rgb_floats` gives the pixels as float64 in [0, 1].

**Encoding.** An :class:`Encoding` is a Pillow format plus the exact keyword arguments passed to
``Image.save``, nothing implicit. :func:`encode` of the same pixels with the same Encoding gives the
same bytes for one set of encoder versions (:func:`encoder_versions`: Pillow, zlib, libjpeg, which
builders record on their cards). Pillow writes no timestamp or other varying metadata into PNG or
JPEG files unless asked to.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import InvalidSourceData

if TYPE_CHECKING:
    import numpy as np
    from PIL import Image

# Pillow and NumPy are imported by the functions that use them: an :class:`Encoding` declared by a builder
# (``imagenet-suite list``/``info`` import the builders for their metadata) needs neither


def _unreadable() -> tuple[type[BaseException], ...]:
    """What Pillow raises on bytes it cannot read as an image."""
    from PIL import Image, UnidentifiedImageError

    return (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError)


_BUFFER = re.compile(r"\s*<_io\.BytesIO object at 0x[0-9a-fA-F]+>")


def unreadable_reason(err: BaseException) -> str:
    """What Pillow says about bytes it cannot read, for an error message that names the file itself.

    Pillow names the in-memory buffer it was handed (``cannot identify image file <_io.BytesIO object
    at 0x7f…>``), which tells a user nothing; that part is dropped.

    Example:
        >>> from PIL import UnidentifiedImageError
        >>> unreadable_reason(UnidentifiedImageError("cannot identify image file <_io.BytesIO object at 0x7f5e4b314680>"))
        'not an image format Pillow knows'
        >>> unreadable_reason(OSError("image file is truncated (3 bytes not processed)"))
        'image file is truncated (3 bytes not processed)'
    """
    from PIL import UnidentifiedImageError

    text = _BUFFER.sub("", str(err)).strip()
    if isinstance(err, UnidentifiedImageError) or text == "cannot identify image file":
        return "not an image format Pillow knows"
    return text or type(err).__name__


class DecodedImage(NamedTuple):
    """An image decoded by :func:`decode_rgb`."""

    image: Image.Image  # mode "RGB", fully loaded
    mode: str  # PIL mode of the source before conversion ("RGB", "L", "CMYK", "P", ...)


def decode_rgb(data: bytes, where: str) -> DecodedImage:
    """Decode ``data`` and convert it to RGB (``convert("RGB")``); InvalidSourceData naming ``where`` if unreadable.

    Pillow's pixel bound (``Image.MAX_IMAGE_PIXELS``, set per build by
    :func:`imagenet_suite.images.image_checks`) applies.
    """
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as opened:
            mode = opened.mode
            rgb = opened.convert("RGB")
    except _unreadable() as err:
        raise InvalidSourceData(f"{where}: not a readable image ({unreadable_reason(err)})") from err
    return DecodedImage(rgb, mode)


def rgb_floats(image: Image.Image) -> np.ndarray:
    """An RGB image as a float64 ``H x W x 3`` array in [0, 1] (``pixels / 255``)."""
    import numpy as np

    return np.asarray(image, dtype=np.float64) / 255


@dataclass(frozen=True)
class Encoding:
    """How pixels are encoded: a Pillow ``format`` and the exact ``Image.save`` keyword arguments.

    Build one with :meth:`png` or :meth:`jpeg`; settings left out take Pillow's defaults (PNG:
    zlib's default level 6; JPEG: quality 75, 4:2:0 chroma subsampling, baseline, not optimized).
    """

    format: str  # "PNG" or "JPEG"
    settings: tuple[tuple[str, Any], ...] = ()  # (keyword, value) pairs passed to Image.save, in order

    @classmethod
    def png(cls, **settings: Any) -> Encoding:
        """Lossless PNG, e.g. ``Encoding.png(compress_level=6)``; no metadata chunks are written."""
        return cls("PNG", tuple(settings.items()))

    @classmethod
    def jpeg(cls, **settings: Any) -> Encoding:
        """JPEG, e.g. ``Encoding.jpeg(quality=85, optimize=True)``."""
        return cls("JPEG", tuple(settings.items()))

    @property
    def extension(self) -> str:
        """File extension without the dot: ``png`` or ``jpg``."""
        return {"PNG": "png", "JPEG": "jpg"}[self.format]

    def describe(self) -> str:
        """One line naming the format and every setting, e.g. ``"JPEG quality=85 optimize=True"``."""
        return " ".join([self.format, *(f"{key}={value}" for key, value in self.settings)])


def encode(pixels: Image.Image | np.ndarray, encoding: Encoding) -> bytes:
    """The bytes of ``pixels`` (a PIL image, or a uint8 ``H x W [x C]`` array) encoded with ``encoding``."""
    import numpy as np
    from PIL import Image

    image = Image.fromarray(pixels) if isinstance(pixels, np.ndarray) else pixels
    buffer = io.BytesIO()
    image.save(buffer, format=encoding.format, **dict(encoding.settings))
    return buffer.getvalue()


def encoder_versions() -> dict[str, str]:
    """Versions that decide the encoded bytes: Pillow, zlib (PNG) and libjpeg (JPEG)."""
    from PIL import __version__ as pillow
    from PIL import features

    return {"pillow": pillow, "zlib": str(features.version("zlib")), "libjpeg": str(features.version("jpg"))}
