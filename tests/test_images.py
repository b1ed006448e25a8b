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
    two_components = data[:frame + 9] + bytes([2]) + data[frame + 10:]
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
