"""Checks on original image bytes: structure, pixel bound, and (on request) a full decode.

Images are stored as their original bytes; these checks never re-encode. Every image a builder
releases passes :func:`inspect_image`, which returns its format, mode and size and refuses, with
one line naming the image:

* a **broken structure** — for JPEG: the marker segments from SOI up to the first scan (every
  marker, every segment length inside the data, a frame header before the scan) and an
  end-of-image marker at the end (trailing NUL padding allowed); the segments between the scans
  of a progressive JPEG are walked too. For PNG: the signature, every chunk's length and CRC,
  IHDR first, IEND last. Other formats are opened and decoded by Pillow;
* **more pixels than the bound** (:class:`ImageChecks`, Pillow's ``MAX_IMAGE_PIXELS`` by default;
  ``--max-pixels`` changes it), checked from the header before anything is decoded;
* with ``deep=True`` (``--deep-verify``), an image that Pillow cannot fully decode.

A JPEG whose data does not end with its end-of-image marker is decoded, so a truncated file is
caught while a file with harmless trailing bytes is accepted. The entropy-coded data of a scan is
checked only by decoding (``deep``). The size and mode of a JPEG come from its start-of-frame
segment directly, exactly as Pillow reads them (about 10x faster than ``Image.open``); anything
unusual there (not 8-bit, an odd component count) goes to Pillow.

The checks in force are set per context with :func:`image_checks` (the build runner sets them for
each shard, in whichever process writes it).
"""

from __future__ import annotations

import contextlib
import contextvars
import io
import re
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from PIL import Image, UnidentifiedImageError

from ..errors import InvalidSourceData

JPEG_SOI = b"\xff\xd8"
JPEG_EOI = b"\xff\xd9"
JPEG_SOS = 0xDA
JPEG_FRAME_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}  # SOF0..SOF15 (not DHT, JPG, DAC)
JPEG_PROGRESSIVE_FRAMES = frozenset({0xC2, 0xC6, 0xCA, 0xCE})
JPEG_STANDALONE_MARKERS = frozenset([0x01, *range(0xD0, 0xD8)])  # TEM, RSTn: no length field
JPEG_MARKER_IN_SCAN = re.compile(rb"\xff[^\x00\xd0-\xd7\xff]")  # not byte stuffing, a restart or a fill byte
_SEGMENT_HEADER = struct.Struct(">BBH")  # 0xFF, marker, big-endian length
_NOT_A_HEADER_SEGMENT = frozenset([0xFF, 0xD8, 0xD9, *JPEG_STANDALONE_MARKERS])
JPEG_MODES = {1: "L", 3: "RGB", 4: "CMYK"}  # Pillow's mode for each component count
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PNG_IEND = b"IEND"
DEFAULT_MAX_PIXELS = Image.MAX_IMAGE_PIXELS  # Pillow's bound (89,478,485), read once at import


@dataclass(frozen=True)
class ImageHeader:
    format: str  # "JPEG", "PNG", ...
    mode: str  # PIL mode: "RGB", "L", "CMYK", ...
    width: int  # pixels
    height: int  # pixels


@dataclass(frozen=True)
class ImageChecks:
    """How strictly released images are checked.

    ``max_pixels``: refuse images with more pixels (width x height) than this; None for no bound.
    ``deep``: decode every image fully (catches corrupt entropy-coded data; costs a decode each).
    """

    max_pixels: int | None = DEFAULT_MAX_PIXELS
    deep: bool = False

    def __post_init__(self) -> None:
        if self.max_pixels is not None and self.max_pixels < 1:
            raise ValueError(f"max_pixels must be a positive number of pixels or None, got {self.max_pixels}")


_CHECKS: contextvars.ContextVar[ImageChecks] = contextvars.ContextVar("image_checks", default=ImageChecks())  # noqa: B039 (frozen)


@contextlib.contextmanager
def image_checks(checks: ImageChecks) -> Iterator[ImageChecks]:
    """Use ``checks`` in :func:`inspect_image` within this context (and bound Pillow's decoder alike)."""
    token = _CHECKS.set(checks)
    pillow_bound = Image.MAX_IMAGE_PIXELS
    Image.MAX_IMAGE_PIXELS = checks.max_pixels  # Pillow's own bomb check agrees with ours
    try:
        yield checks
    finally:
        Image.MAX_IMAGE_PIXELS = pillow_bound
        _CHECKS.reset(token)


def current_checks() -> ImageChecks:
    """The checks :func:`inspect_image` applies here (see :func:`image_checks`)."""
    return _CHECKS.get()


def inspect_image(data: bytes, where: str, checks: ImageChecks | None = None) -> ImageHeader:
    """Header facts of an encoded image after the checks in force; InvalidSourceData naming ``where``.

    ``checks`` defaults to :func:`current_checks`.
    """
    checks = checks or current_checks()
    header = None
    complete = True
    if data.startswith(JPEG_SOI):
        header, complete = check_jpeg(data, where)
    elif data.startswith(PNG_SIGNATURE):
        header = check_png(data, where)
    if header is not None:
        check_pixels(header, where, checks.max_pixels)
    if header is None or header.format == "PNG":
        header = _pillow_header(data, where, checks.max_pixels)
    if checks.deep or not complete or header.format not in ("JPEG", "PNG"):
        decode(data, where)
    return header


def check_pixels(header: ImageHeader, where: str, max_pixels: int | None) -> None:
    """InvalidSourceData if the image has more than ``max_pixels`` pixels."""
    pixels = header.width * header.height
    if max_pixels is not None and pixels > max_pixels:
        raise InvalidSourceData(
            f"{where}: {header.width}x{header.height} = {pixels:,} pixels, more than the bound of "
            f"{max_pixels:,} (a decompression bomb, or a real image: raise the bound with --max-pixels)"
        )


def decode(data: bytes, where: str) -> None:
    """Decode the whole image; InvalidSourceData naming ``where`` if Pillow cannot."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError) as err:
        raise InvalidSourceData(f"{where}: not a readable image, or truncated ({err})") from None


def _pillow_header(data: bytes, where: str, max_pixels: int | None) -> ImageHeader:
    try:
        with Image.open(io.BytesIO(data)) as image:
            header = ImageHeader(image.format or "", image.mode, image.width, image.height)
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError) as err:
        raise InvalidSourceData(f"{where}: not a readable image ({err})") from None
    except Image.DecompressionBombError as err:
        raise InvalidSourceData(f"{where}: {err} (raise the bound with --max-pixels)") from None
    check_pixels(header, where, max_pixels)
    return header


# -- JPEG --------------------------------------------------------------------------------------------


def check_jpeg(data: bytes, where: str) -> tuple[ImageHeader | None, bool]:
    """Walk a JPEG's marker segments; ``(header or None if unusual, ends with EOI)``.

    InvalidSourceData names ``where`` and the byte offset of a structural error.
    """
    walked = _walk_usual_headers(data)
    frame, position = walked if walked is not None else _walk_headers(data, where)
    complete = data.rstrip(b"\x00").endswith(JPEG_EOI)
    if complete and data[frame + 1] in JPEG_PROGRESSIVE_FRAMES:
        _walk_scans(data, position, where)
    return jpeg_frame_header(data, frame), complete


def _walk_usual_headers(data: bytes) -> tuple[int, int] | None:
    """``(offset of the frame marker, end of the first scan header)`` if the headers are plain
    length-prefixed segments that fit in the data (as in almost every JPEG), else None.

    The fast path of :func:`check_jpeg` (about 1 µs a segment); anything else goes to
    :func:`_walk_headers`, which accepts the unusual and names what is wrong.
    """
    end, position, frame = len(data), len(JPEG_SOI), None
    unpack = _SEGMENT_HEADER.unpack_from
    while position + 4 <= end:
        fill, marker, length = unpack(data, position)
        following = position + 2 + length
        if fill != 0xFF or marker in _NOT_A_HEADER_SEGMENT or length < 2 or following > end:
            return None
        if marker == JPEG_SOS:
            return (frame, following) if frame is not None else None
        if frame is None and marker in JPEG_FRAME_MARKERS:
            frame = position
        position = following
    return None


def _walk_headers(data: bytes, where: str) -> tuple[int, int]:
    """The careful walk: fill bytes and standalone markers allowed; InvalidSourceData names the fault."""
    frame, position = None, len(JPEG_SOI)
    while True:
        marker, position = _next_marker(data, position, where)
        if marker in JPEG_STANDALONE_MARKERS:
            continue
        if marker in (0xD8, 0xD9):
            raise InvalidSourceData(f"{where}: JPEG marker 0x{marker:02X} at byte {position - 2} before the first scan")
        end = _segment_end(data, position, marker, where)
        if marker in JPEG_FRAME_MARKERS and frame is None:
            frame = position - 2
        if marker == JPEG_SOS:
            if frame is None:
                raise InvalidSourceData(f"{where}: JPEG scan at byte {position - 2} comes before any frame header")
            return frame, end
        position = end


def _next_marker(data: bytes, position: int, where: str) -> tuple[int, int]:
    """The marker at ``position`` (after fill bytes) and the position after it."""
    while position + 1 < len(data) and data[position] == 0xFF and data[position + 1] == 0xFF:
        position += 1
    if position + 2 > len(data):
        raise InvalidSourceData(f"{where}: JPEG ends at byte {len(data)} inside its headers (truncated)")
    if data[position] != 0xFF:
        raise InvalidSourceData(f"{where}: expected a JPEG marker at byte {position}, found 0x{data[position]:02X}")
    return data[position + 1], position + 2


def _segment_end(data: bytes, position: int, marker: int, where: str) -> int:
    """End of the segment whose length field is at ``position``; InvalidSourceData if it overruns the data."""
    if position + 2 > len(data):
        raise InvalidSourceData(f"{where}: JPEG ends at byte {len(data)} inside segment 0x{marker:02X} (truncated)")
    length = int.from_bytes(data[position : position + 2], "big")
    if length < 2:
        raise InvalidSourceData(
            f"{where}: JPEG segment 0x{marker:02X} at byte {position - 2} has length {length} (corrupt)"
        )
    if position + length > len(data):
        raise InvalidSourceData(
            f"{where}: JPEG segment 0x{marker:02X} at byte {position - 2} has length {length}: it runs "
            f"past the end of the file ({len(data)} bytes; truncated or corrupt)"
        )
    return position + length


def _walk_scans(data: bytes, position: int, where: str) -> None:
    """Check the segments between the scans of a multi-scan JPEG, up to its end-of-image marker."""
    while True:
        found = JPEG_MARKER_IN_SCAN.search(data, position)
        if found is None:
            raise InvalidSourceData(f"{where}: JPEG has no end-of-image marker after byte {position}")
        marker = data[found.start() + 1]
        if marker == 0xD9:
            return
        if marker == 0xD8:
            raise InvalidSourceData(f"{where}: JPEG start-of-image marker at byte {found.start()} inside the image")
        position = _segment_end(data, found.end(), marker, where)


def jpeg_frame_header(data: bytes, position: int | None = None) -> ImageHeader | None:
    """Size and mode from the start-of-frame segment of a JPEG, or None if there is no usual one.

    ``position``: offset of the frame marker, if known; else the marker segments after SOI are
    walked (``FF xx`` + 2-byte big-endian length) to the first frame header. Reads precision
    (8 bits), height, width, component count (1, 3 or 4 → L, RGB, CMYK).
    """
    if position is None:
        position = _find_frame(data)
        if position is None:
            return None
    if position + 10 > len(data):
        return None
    precision, components = data[position + 4], data[position + 9]
    height = int.from_bytes(data[position + 5 : position + 7], "big")
    width = int.from_bytes(data[position + 7 : position + 9], "big")
    mode = JPEG_MODES.get(components)
    if precision != 8 or mode is None or not width or not height:
        return None
    return ImageHeader("JPEG", mode, width, height)


def _find_frame(data: bytes) -> int | None:
    for marker, position in _header_segments(data):
        if marker in JPEG_FRAME_MARKERS:
            return position
        if marker == JPEG_SOS:
            return None
    return None


def _header_segments(data: bytes) -> Iterator[tuple[int, int]]:
    """``(marker, offset of its 0xFF)`` of each marker segment after SOI, up to and including the
    first scan header (SOS); stops early, quietly, at anything that is not a plain segment there."""
    position, end = len(JPEG_SOI), len(data)
    while position + 4 <= end:
        if data[position] != 0xFF:
            return
        marker = data[position + 1]
        if marker == 0xFF:  # fill byte
            position += 1
            continue
        if marker in JPEG_STANDALONE_MARKERS or marker in (0xD8, 0xD9):
            return
        yield marker, position
        if marker == JPEG_SOS:
            return
        position += 2 + int.from_bytes(data[position + 2 : position + 4], "big")


@dataclass(frozen=True)
class JpegFrame:
    """How a JPEG decodes, from its headers (SOI up to the first scan), as libjpeg reads them.

    ``marker``: the start-of-frame marker (0xC0 baseline, 0xC1 extended sequential, 0xC2 progressive,
    0xC3 lossless, 0xC9.. arithmetic coding); ``components``: ``(id, horizontal, vertical)`` sampling
    of each component; ``color_space``: what libjpeg takes the components to be (its
    ``default_decompress_parms``: JFIF APP0, then Adobe APP14's transform flag, then component ids)
    — ``"L"``, ``"YCbCr"``, ``"RGB"``, ``"CMYK"``, ``"YCCK"``, or ``""`` for another component count.
    """

    marker: int
    precision: int
    width: int
    height: int
    components: tuple[tuple[int, int, int], ...]
    color_space: str


def jpeg_frame(data: bytes) -> JpegFrame | None:
    """The :class:`JpegFrame` of a JPEG, or None when its headers up to the first scan are not a plain
    run of marker segments with one frame header (or the data is no JPEG). Reads headers only."""
    if not data.startswith(JPEG_SOI):
        return None
    frame, jfif, adobe_transform, scan = None, False, None, False
    for marker, position in _header_segments(data):
        length = int.from_bytes(data[position + 2 : position + 4], "big")
        payload = data[position + 4 : position + 2 + length]
        if marker == 0xE0 and length >= 16 and payload.startswith(b"JFIF\x00"):
            jfif = True
        elif marker == 0xEE and length >= 14 and payload.startswith(b"Adobe"):
            adobe_transform = payload[11]
        elif marker in JPEG_FRAME_MARKERS and frame is None:
            frame = marker, payload
        scan = marker == JPEG_SOS
    if frame is None or not scan:
        return None
    marker, payload = frame
    if len(payload) < 6 or len(payload) < 6 + 3 * payload[5]:
        return None
    count = payload[5]
    components = tuple((payload[6 + 3 * i], payload[7 + 3 * i] >> 4, payload[7 + 3 * i] & 15) for i in range(count))
    return JpegFrame(
        marker=marker,
        precision=payload[0],
        width=int.from_bytes(payload[3:5], "big"),
        height=int.from_bytes(payload[1:3], "big"),
        components=components,
        color_space=_libjpeg_color_space(components, jfif, adobe_transform),
    )


def _libjpeg_color_space(components: tuple[tuple[int, int, int], ...], jfif: bool, adobe: int | None) -> str:
    """libjpeg(-turbo)'s guess of the colour space (jdapimin.c ``default_decompress_parms``)."""
    if len(components) == 1:
        return "L"
    if len(components) == 3:
        if jfif:
            return "YCbCr"
        if adobe is not None:
            return "RGB" if adobe == 0 else "YCbCr"
        ids = tuple(component[0] for component in components)
        return "RGB" if ids == (ord("R"), ord("G"), ord("B")) else "YCbCr"
    if len(components) == 4:
        if adobe is None or adobe == 0:
            return "CMYK"
        return "YCCK"
    return ""


# -- PNG ---------------------------------------------------------------------------------------------


def check_png(data: bytes, where: str) -> ImageHeader:
    """Walk a PNG's chunks (length, CRC, IHDR first, IEND last); its size (mode left to Pillow)."""
    position, size, chunk_types = len(PNG_SIGNATURE), None, []
    while True:
        if position + 12 > len(data):
            raise InvalidSourceData(f"{where}: PNG ends at byte {len(data)} before its IEND chunk (truncated)")
        length = int.from_bytes(data[position : position + 4], "big")
        kind = data[position + 4 : position + 8]
        end = position + 12 + length
        if length > 0x7FFFFFFF or end > len(data):
            raise InvalidSourceData(
                f"{where}: PNG chunk {kind!r} at byte {position} has length {length}: it runs past the "
                f"end of the file ({len(data)} bytes; truncated or corrupt)"
            )
        crc = int.from_bytes(data[end - 4 : end], "big")
        if zlib.crc32(data[position + 4 : end - 4]) != crc:
            raise InvalidSourceData(f"{where}: PNG chunk {kind!r} at byte {position} fails its CRC (corrupted)")
        if not chunk_types and (kind != b"IHDR" or length != 13):
            raise InvalidSourceData(f"{where}: PNG does not start with an IHDR chunk")
        if kind == b"IHDR" and size is None:
            size = (
                int.from_bytes(data[position + 8 : position + 12], "big"),
                int.from_bytes(data[position + 12 : position + 16], "big"),
            )
        chunk_types.append(kind)
        position = end
        if kind == PNG_IEND:
            break
    if b"IDAT" not in chunk_types:
        raise InvalidSourceData(f"{where}: PNG has no image data (IDAT) chunk")
    width, height = size
    if not width or not height:
        raise InvalidSourceData(f"{where}: PNG header gives a size of {width}x{height}")
    return ImageHeader("PNG", "", width, height)


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
