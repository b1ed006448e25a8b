"""Images as the builders handle them (layer 2: imports only errors, files, classes, seeding).

* :mod:`.checks` — structural checks and the pixel bound of original image bytes (every released
  image passes :func:`inspect_image`), and the per-build check settings. Re-exported here.
* :mod:`.codec` — decoding to RGB (:func:`~.codec.decode_rgb`) and deterministic PNG/JPEG encoding
  with explicit settings (:class:`~.codec.Encoding`, :func:`~.codec.encode`).
* :mod:`.grid` — preview grids (PNG contact sheets with captions) for cards and the README.
"""

from .checks import (
    DEFAULT_MAX_PIXELS,
    ImageChecks,
    ImageHeader,
    JpegFrame,
    check_jpeg,
    check_pixels,
    check_png,
    current_checks,
    decode,
    image_checks,
    inspect_image,
    jpeg_frame,
    jpeg_frame_header,
)

__all__ = [
    "DEFAULT_MAX_PIXELS",
    "ImageChecks",
    "ImageHeader",
    "JpegFrame",
    "check_jpeg",
    "check_pixels",
    "check_png",
    "current_checks",
    "decode",
    "image_checks",
    "inspect_image",
    "jpeg_frame",
    "jpeg_frame_header",
]
