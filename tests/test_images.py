"""Image header checks: the direct JPEG frame-header read agrees with Pillow; truncation is caught."""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib
import numpy as np
import pytest
import sklearn.datasets
from PIL import Image

from imagenet_suite.errors import InvalidSourceData
from imagenet_suite.images import ImageHeader, inspect_image, jpeg_frame_header


def pillow_header(data: bytes) -> ImageHeader:
    with Image.open(io.BytesIO(data)) as image:
        return ImageHeader(image.format, image.mode, image.width, image.height)


def real_jpegs() -> list[Path]:
    """Camera/scanner JPEGs shipped by installed libraries (EXIF, JFIF, various encoders)."""
    found = [Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg"]
    found += sorted((Path(sklearn.datasets.__file__).parent / "images").glob("*.jpg"))
    return [p for p in found if p.is_file()]


def encoded_jpegs() -> dict[str, bytes]:
    rng = np.random.default_rng(0)
    rgb = Image.fromarray(rng.integers(0, 256, size=(37, 53, 3), dtype=np.uint8))
    variants = {
        "rgb": (rgb, {}),
        "grayscale": (rgb.convert("L"), {}),
        "cmyk": (rgb.convert("CMYK"), {}),
        "progressive": (rgb, {"progressive": True}),
        "optimized 4:4:4": (rgb, {"optimize": True, "subsampling": 0}),
        "restart markers": (rgb, {"restart_marker_blocks": 1}),
        "exif + icc": (rgb, {"exif": Image.Exif(), "icc_profile": b"\x00" * 70_000}),  # icc spans 2 APP2 segments
    }
    out = {}
    for name, (image, options) in variants.items():
        buffer = io.BytesIO()
        image.save(buffer, format="JPEG", quality=85, **options)
        out[name] = buffer.getvalue()
    return out


@pytest.mark.parametrize("name", list(encoded_jpegs()))
def test_frame_header_matches_pillow_on_encoder_variants(name):
    data = encoded_jpegs()[name]
    assert jpeg_frame_header(data) == pillow_header(data)
    assert inspect_image(data, name) == pillow_header(data)


def test_frame_header_matches_pillow_on_real_jpegs():
    paths = real_jpegs()
    assert len(paths) >= 3
    for path in paths:
        data = path.read_bytes()
        assert jpeg_frame_header(data) == pillow_header(data), path


def test_unusual_jpegs_fall_back_to_pillow():
    data = encoded_jpegs()["rgb"]
    frame = data.index(b"\xff\xc0")
    two_components = data[: frame + 9] + bytes([2]) + data[frame + 10 :]
    assert jpeg_frame_header(two_components) is None  # Pillow refuses it, and so does the check
    with pytest.raises(InvalidSourceData, match="x.jpg: not a readable image"):
        inspect_image(two_components, "x.jpg")
    assert jpeg_frame_header(data[:frame]) is None  # no frame header at all
    assert jpeg_frame_header(b"\xff\xd8\x00\x00" + data[2:]) is None  # not a marker where one must be


def test_truncated_jpeg_is_refused_and_trailing_padding_accepted():
    data = encoded_jpegs()["rgb"]
    with pytest.raises(InvalidSourceData, match="a.jpg: not a readable image, or truncated"):
        inspect_image(data[: len(data) * 2 // 3], "a.jpg")
    assert inspect_image(data + b"\x00" * 7, "b.jpg") == pillow_header(data)


def test_png_goes_through_pillow():
    buffer = io.BytesIO()
    Image.new("LA", (9, 4)).save(buffer, format="PNG")
    assert inspect_image(buffer.getvalue(), "c.png") == ImageHeader("PNG", "LA", 9, 4)
    with pytest.raises(InvalidSourceData, match="c.png: PNG ends at byte .* before its IEND chunk"):
        inspect_image(buffer.getvalue()[:40], "c.png")


# -- codec: decoding to RGB, deterministic encoding -------------------------------------------------


def _encoded(image: Image.Image, fmt: str) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt)
    return buffer.getvalue()


@pytest.mark.parametrize("mode, fmt", [("RGB", "JPEG"), ("L", "JPEG"), ("CMYK", "JPEG"), ("P", "PNG"), ("RGBA", "PNG")])
def test_decode_rgb_converts_like_torchvision_and_keeps_the_source_mode(mode, fmt):
    from imagenet_suite.images.codec import decode_rgb, rgb_floats

    rng = np.random.default_rng(1)
    source = Image.fromarray(rng.integers(0, 256, (12, 17, 3), dtype=np.uint8)).convert(mode)
    data = _encoded(source, fmt)
    decoded = decode_rgb(data, "s.img")
    expected = Image.open(io.BytesIO(data)).convert("RGB")
    assert decoded.mode == mode and decoded.image.mode == "RGB"
    assert np.array_equal(np.asarray(decoded.image), np.asarray(expected))
    floats = rgb_floats(decoded.image)
    assert floats.dtype == np.float64 and floats.shape == (12, 17, 3)
    assert np.array_equal(floats, np.asarray(expected, dtype=np.float64) / 255)


def test_decode_rgb_names_an_unreadable_image():
    from imagenet_suite.images.codec import decode_rgb

    with pytest.raises(InvalidSourceData, match=r"^box 3 of x.JPEG: not a readable image"):
        decode_rgb(b"\xff\xd8 not really", "box 3 of x.JPEG")


def test_encoding_passes_exactly_its_settings_to_pillow():
    from imagenet_suite.images.codec import Encoding, encode

    rng = np.random.default_rng(2)
    pixels = rng.integers(0, 256, (20, 30, 3), dtype=np.uint8)
    cases = [
        (Encoding.png(), {}),
        (Encoding.png(compress_level=1), {"compress_level": 1}),
        (Encoding.jpeg(), {}),
        (Encoding.jpeg(quality=85, optimize=True), {"quality": 85, "optimize": True}),
    ]
    for encoding, settings in cases:
        buffer = io.BytesIO()
        Image.fromarray(pixels).save(buffer, format=encoding.format, **settings)
        assert encode(pixels, encoding) == buffer.getvalue() == encode(Image.fromarray(pixels), encoding)
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(encode(pixels, Encoding.png())))), pixels)  # lossless
    assert [e.extension for e, _ in cases] == ["png", "png", "jpg", "jpg"]
    assert Encoding.jpeg(quality=85, optimize=True).describe() == "JPEG quality=85 optimize=True"


def test_encoder_versions_are_recorded():
    from imagenet_suite.images.codec import encoder_versions

    assert set(encoder_versions()) == {"pillow", "zlib", "libjpeg"}


# -- grid: preview pictures -----------------------------------------------------------------------------


def _tiles(count: int):
    from imagenet_suite.images.grid import Tile

    rng = np.random.default_rng(3)
    return [
        Tile(Image.fromarray(rng.integers(0, 256, (30 + i, 40, 3), dtype=np.uint8)), (f"tile {i}", "caption"))
        for i in range(count)
    ]


def test_captioned_grid_lays_out_tiles_with_captions_underneath():
    from imagenet_suite.images.grid import captioned_grid

    data = captioned_grid(_tiles(7), columns=3, tile=32)
    picture = Image.open(io.BytesIO(data))
    assert picture.format == "PNG" and picture.size == (3 * (32 + 16) + 16, 3 * (32 + 28 + 6) + 6)
    assert data == captioned_grid(_tiles(7), columns=3, tile=32)  # deterministic


def test_titled_grid_draws_square_panels_with_titles_above():
    from imagenet_suite.images.grid import titled_grid

    data = titled_grid(_tiles(3), columns=2, panel=50)
    picture = Image.open(io.BytesIO(data))
    assert picture.format == "PNG" and picture.size == (2 * (50 + 8), 2 * (50 + 46 + 6))
    assert "Software" not in picture.info and data == titled_grid(_tiles(3), columns=2, panel=50)
