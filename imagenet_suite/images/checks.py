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
* with ``deep=True`` (``--deep-verify``), an image whose compressed data is not sound (:func:`decode`):
  one that Pillow cannot fully decode; a JPEG whose entropy-coded data libjpeg-turbo finds corrupt or
  cut short (libjpeg reports these as warnings, "Corrupt JPEG data: ..." / "Premature end of JPEG
  file", and decodes on, filling in grey; Pillow drops the warnings, so the strict decode goes
  through simplejpeg, which raises on them); a PNG whose zlib stream is cut short, corrupt, followed
  by more data, or not exactly as long as its header's size (Pillow stops reading once it has the
  pixels), or whose IDAT chunks are not consecutive.

A JPEG whose data does not end with its end-of-image marker is decoded, so a truncated file is
caught while a file with harmless trailing bytes is accepted (as are bytes after a PNG's IEND). The
entropy-coded data of a scan is checked only by decoding (``deep``). The size and mode of a JPEG
come from its start-of-frame segment directly, exactly as Pillow reads them (about 10x faster than
``Image.open``); anything unusual there (not 8-bit, an odd component count) goes to Pillow.

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

from ..errors import InvalidSourceData, param
from .codec import unreadable_reason

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
# Pillow's bound, PIL.Image.MAX_IMAGE_PIXELS (tests/test_trust_images.py checks they agree). A literal, so that
# this module imports without Pillow: ``imagenet-suite --help`` and the builders' metadata need it, not Pillow.
DEFAULT_MAX_PIXELS = 89_478_485


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
    from PIL import Image

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
        decode(data, where, strict=checks.deep)
    return header


def check_pixels(header: ImageHeader, where: str, max_pixels: int | None) -> None:
    """InvalidSourceData if the image has more than ``max_pixels`` pixels."""
    pixels = header.width * header.height
    if max_pixels is not None and pixels > max_pixels:
        raise InvalidSourceData(
            f"{where}: {header.width}x{header.height} = {pixels:,} pixels, more than the bound of "
            f"{max_pixels:,} (a decompression bomb, or a real image: raise the bound with {param('max_pixels')})"
        )


def decode(data: bytes, where: str, *, strict: bool = True) -> None:
    """Decode the whole image; InvalidSourceData naming ``where`` if Pillow cannot, or (``strict``) if its
    compressed data is not sound though Pillow decodes it.

    ``strict``: a JPEG is decoded by libjpeg-turbo through simplejpeg, whose strict mode turns libjpeg's
    warnings into errors (:func:`check_jpeg_data`, which also has Pillow open it); a PNG's image data must
    be one complete zlib stream of exactly the size its header gives (:func:`check_png_image_data`).
    """
    if strict and data.startswith(JPEG_SOI):
        check_jpeg_data(data, where)
        return
    _pillow_decode(data, where)
    if strict and data.startswith(PNG_SIGNATURE):
        check_png_image_data(data, where)


def _pillow_decode(data: bytes, where: str) -> None:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError) as err:
        raise InvalidSourceData(f"{where}: not a readable image, or truncated ({unreadable_reason(err)})") from err


def _pillow_header(data: bytes, where: str, max_pixels: int | None) -> ImageHeader:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            header = ImageHeader(image.format or "", image.mode, image.width, image.height)
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError) as err:
        raise InvalidSourceData(f"{where}: not a readable image ({unreadable_reason(err)})") from err
    except Image.DecompressionBombError as err:
        raise InvalidSourceData(f"{where}: {err} (raise the bound with {param('max_pixels')})") from err
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


def check_jpeg_data(data: bytes, where: str) -> None:
    """Decode a JPEG strictly; InvalidSourceData naming ``where`` if Pillow cannot open it, or if
    libjpeg-turbo finds its entropy-coded data corrupt or cut short, even as a mere warning.

    libjpeg decodes on after such a warning ("Corrupt JPEG data: premature end of data segment",
    "Corrupt JPEG data: N extraneous bytes before marker 0xd9", "Premature end of JPEG file", a bad
    Huffman code), filling in what is missing; Pillow and OpenCV drop the warning, and so accept the
    file. simplejpeg (libjpeg-turbo's TurboJPEG API) raises on it with ``strict=True``. Pillow opens the
    file (its headers and mode are ones Pillow reads) and libjpeg-turbo decodes it, to grayscale: every
    component's entropy-coded data is still read (that is where the faults are) while colour conversion
    and chroma upsampling are skipped. Whatever Pillow's own decode (the same libjpeg-turbo) would
    refuse, this refuses too; a fault Pillow's decode refuses as well gets Pillow's message. The
    TurboJPEG API takes only the usual sampling factors (4:4:4, 4:2:2, 4:2:0, 4:4:0, 4:1:1, 4:4:1 and
    grayscale; YCbCr, RGB, CMYK or YCCK); a JPEG with unusual ones (e.g. 2x2,2x1,1x1), whose header it
    refuses, is decoded by Pillow alone.
    """
    import simplejpeg  # a compiled libjpeg-turbo; imported here to keep imports of this module light

    _pillow_header(data, where, None)
    try:
        simplejpeg.decode_jpeg_header(data)
    except ValueError:
        _pillow_decode(data, where)  # sampling factors the TurboJPEG API does not take (see above)
        return
    try:
        simplejpeg.decode_jpeg(data, colorspace="GRAY", strict=True)
    except ValueError as err:
        _pillow_decode(data, where)  # a fault Pillow's decode refuses too: its message, as without --deep-verify
        raise InvalidSourceData(f"{where}: corrupt JPEG data (libjpeg-turbo: {err})") from err


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


PNG_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}  # samples per pixel of each color type
PNG_ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2))
_INFLATE_STEP = 1 << 20  # bytes of image data inflated at a time (none are kept)


def check_png_image_data(data: bytes, where: str) -> None:
    """The image data of a PNG (its IDAT chunks, consecutive) is one complete zlib stream, nothing after
    it, that inflates to exactly the bytes its IHDR describes; InvalidSourceData naming ``where`` if not.

    libpng refuses or warns about each of these ("Not enough image data", "Extra compressed data", "Too
    much image data", "Too many IDATs found"); Pillow stops reading once it has the pixels, so a stream
    cut before its Adler-32 checksum, or with data after it, passes there. Chunk CRCs and order are
    :func:`check_png`'s.
    """
    header, spans, ended = None, [], False
    for kind, start, end in _png_chunks(data):
        if kind == b"IHDR" and header is None:
            header = data[start:end]
        elif kind == b"IDAT":
            if ended:
                raise InvalidSourceData(
                    f"{where}: PNG IDAT chunk at byte {start - 8} comes after another chunk that follows IDAT "
                    "(the image data must be consecutive IDAT chunks)"
                )
            spans.append((start, end))
        elif spans:
            ended = True
    if header is None or len(header) != 13 or not spans:
        return  # check_png's findings
    expected = png_image_data_size(header)
    stream, size, pending = zlib.decompressobj(), 0, b"".join(data[start:end] for start, end in spans)
    try:
        while not stream.eof:
            inflated = len(stream.decompress(pending, _INFLATE_STEP))
            size += inflated
            if expected is not None and size > expected:
                raise InvalidSourceData(
                    f"{where}: PNG image data runs past the {expected:,} bytes its header "
                    f"({_describe_png_header(header)}) gives (too much image data)"
                )
            pending = stream.unconsumed_tail
            if not inflated and not pending:
                break
    except zlib.error as err:
        raise InvalidSourceData(f"{where}: PNG image data is not a sound zlib stream ({err})") from err
    if not stream.eof:
        raise InvalidSourceData(
            f"{where}: PNG image data ends early: its zlib stream stops before its checksum (truncated)"
        )
    if stream.unused_data:
        raise InvalidSourceData(
            f"{where}: PNG image data has {len(stream.unused_data):,} bytes after the end of its zlib stream"
        )
    if expected is not None and size != expected:
        raise InvalidSourceData(
            f"{where}: PNG image data is {size:,} bytes; its header ({_describe_png_header(header)}) needs {expected:,}"
        )


def png_image_data_size(ihdr: bytes) -> int | None:
    """Bytes of filtered image data (a filter byte + packed samples per row, per Adam7 pass when interlaced)
    that a PNG's 13-byte IHDR payload describes; None for a color type or interlace method PNG lacks."""
    width, height = int.from_bytes(ihdr[0:4], "big"), int.from_bytes(ihdr[4:8], "big")
    depth, color, interlace = ihdr[8], ihdr[9], ihdr[12]
    if color not in PNG_CHANNELS or interlace not in (0, 1):
        return None
    bits = depth * PNG_CHANNELS[color]
    size = 0
    for x0, y0, dx, dy in PNG_ADAM7 if interlace else ((0, 0, 1, 1),):
        columns, rows = (width - x0 + dx - 1) // dx, (height - y0 + dy - 1) // dy
        if columns > 0 and rows > 0:
            size += rows * (1 + (columns * bits + 7) // 8)
    return size


def _describe_png_header(ihdr: bytes) -> str:
    width, height = int.from_bytes(ihdr[0:4], "big"), int.from_bytes(ihdr[4:8], "big")
    interlace = "Adam7-interlaced" if ihdr[12] else "not interlaced"
    return f"{width}x{height}, {ihdr[8]}-bit, color type {ihdr[9]}, {interlace}"


def _png_chunks(data: bytes) -> Iterator[tuple[bytes, int, int]]:
    """``(type, payload start, payload end)`` of each chunk of a PNG up to IEND; stops quietly at a chunk
    that runs past the data (:func:`check_png` names that)."""
    position = len(PNG_SIGNATURE)
    while position + 12 <= len(data):
        length = int.from_bytes(data[position : position + 4], "big")
        kind, start = data[position + 4 : position + 8], position + 8
        if start + length + 4 > len(data):
            return
        yield kind, start, start + length
        if kind == PNG_IEND:
            return
        position = start + length + 4


__all__ = [
    "DEFAULT_MAX_PIXELS",
    "ImageChecks",
    "ImageHeader",
    "JpegFrame",
    "check_jpeg",
    "check_jpeg_data",
    "check_pixels",
    "check_png",
    "check_png_image_data",
    "current_checks",
    "decode",
    "image_checks",
    "inspect_image",
    "jpeg_frame",
    "jpeg_frame_header",
    "png_image_data_size",
]
