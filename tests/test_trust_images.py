"""Every released image passes a structural check and a pixel bound; --deep-verify decodes it; an archive
that holds one name or one image id twice is refused, naming both copies."""

from __future__ import annotations

import io
import tarfile
import warnings
import zipfile
import zlib

import numpy as np
import pytest
from PIL import Image

from imagenet_suite.build.archives import open_archive
from imagenet_suite.build.verify import verify_folder
from imagenet_suite.errors import DatasetFolderError, InvalidSourceData
from imagenet_suite.images import DEFAULT_MAX_PIXELS, ImageChecks, inspect_image
from tests.fixtures import imagenet_layouts as fx
from tests.helpers import build_val


def jpeg(width: int = 50, height: int = 40, **options) -> bytes:
    pixels = np.random.default_rng(0).integers(0, 256, (height, width, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="JPEG", quality=90, **options)
    return buffer.getvalue()


def png(width: int = 20, height: int = 10) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (10, 200, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


def with_frame_size(data: bytes, width: int, height: int) -> bytes:
    """A JPEG whose start-of-frame header claims ``width`` x ``height`` (the bytes after it unchanged)."""
    out = bytearray(data)
    frame = out.find(b"\xff\xc0")
    out[frame + 5 : frame + 7] = height.to_bytes(2, "big")
    out[frame + 7 : frame + 9] = width.to_bytes(2, "big")
    return bytes(out)


def png_with_size(data: bytes, width: int, height: int) -> bytes:
    """A PNG whose IHDR claims ``width`` x ``height``, with a valid CRC."""
    out = bytearray(data)
    out[16:20], out[20:24] = width.to_bytes(4, "big"), height.to_bytes(4, "big")
    out[29:33] = zlib.crc32(bytes(out[12:29])).to_bytes(4, "big")
    return bytes(out)


def undefined_huffman_table(data: bytes) -> bytes:
    """Structurally sound, but its scan uses a Huffman table that is never defined: only decoding sees it."""
    out = bytearray(data)
    scan = out.find(b"\xff\xda")
    out[scan + 6] = 0x33
    return bytes(out)


# -- pixel bound -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("end_marker", [True, False])
def test_a_60000x60000_jpeg_header_is_refused_before_anything_is_decoded(end_marker):
    bomb = with_frame_size(jpeg(), 60000, 60000)
    bomb = bomb if end_marker else bomb[:-2]
    with pytest.raises(
        InvalidSourceData,
        match=r"^x.JPEG: 60000x60000 = 3,600,000,000 pixels, more than the bound of "
        r"89,478,485 .*--max-pixels",
    ):
        inspect_image(bomb, "x.JPEG")


def test_a_png_bomb_is_refused_from_its_header():
    with pytest.raises(InvalidSourceData, match=r"^y.png: 100000x100000 = 10,000,000,000 pixels"):
        inspect_image(png_with_size(png(), 100000, 100000), "y.png")


def test_the_bound_is_the_callers():
    assert DEFAULT_MAX_PIXELS == 89_478_485  # Pillow's MAX_IMAGE_PIXELS
    with pytest.raises(InvalidSourceData, match="2,000 pixels, more than the bound of 1,999"):
        inspect_image(jpeg(50, 40), "a.jpg", ImageChecks(max_pixels=1999))
    assert inspect_image(jpeg(50, 40), "a.jpg", ImageChecks(max_pixels=2000)).width == 50
    assert inspect_image(with_frame_size(jpeg(), 60000, 60000), "b.jpg", ImageChecks(max_pixels=None)).width == 60000


# -- structure ---------------------------------------------------------------------------------------------


def _long_segment(data: bytes) -> bytes:
    out = bytearray(data)
    table = out.find(b"\xff\xdb")
    out[table + 2 : table + 4] = (0xFFF0).to_bytes(2, "big")
    return bytes(out)


def _without_frame(data: bytes) -> bytes:
    frame = data.find(b"\xff\xc0")
    return data[:frame] + data[frame + 2 + int.from_bytes(data[frame + 2 : frame + 4], "big") :]


def _garbage_marker(data: bytes) -> bytes:
    out = bytearray(data)
    out[2] = 0x12
    return bytes(out)


def _flip_in_png_data(data: bytes) -> bytes:
    out = bytearray(data)
    out[data.find(b"IDAT") + 6] ^= 0x01
    return bytes(out)


def _broken_progressive(data: bytes) -> bytes:
    out = bytearray(data)
    second_table = out.find(b"\xff\xc4", out.find(b"\xff\xda"))  # a Huffman table between two scans
    out[second_table + 2 : second_table + 4] = (0xFFFF).to_bytes(2, "big")
    return bytes(out)


STRUCTURE_CASES = {
    "segment overruns the file": (lambda: _long_segment(jpeg()), r"segment 0xDB at byte \d+ has length 65520"),
    "scan before frame header": (lambda: _without_frame(jpeg()), r"scan at byte \d+ comes before any frame header"),
    "not a marker": (lambda: _garbage_marker(jpeg()), r"expected a JPEG marker at byte 2, found 0x12"),
    "cut inside the headers": (
        lambda: jpeg()[:40],
        r"segment 0xDB at byte 20 has length 67: it runs past the end of "
        r"the file \(40 bytes; truncated",
    ),
    "cut after a marker": (lambda: jpeg()[:21], r"JPEG ends at byte 21 inside its headers"),
    "progressive: broken segment between scans": (
        lambda: _broken_progressive(jpeg(progressive=True)),
        r"segment 0xC4 at byte \d+ has length 65535",
    ),
    "png chunk fails its CRC": (lambda: _flip_in_png_data(png()), r"PNG chunk b'IDAT' at byte \d+ fails its CRC"),
    "png without IEND": (lambda: png()[:-12], r"PNG ends at byte \d+ before its IEND chunk"),
    "truncated scan": (lambda: jpeg()[:-300], r"not a readable image, or truncated"),
}


@pytest.mark.parametrize("case", list(STRUCTURE_CASES))
def test_structural_errors_name_the_image_and_the_byte(case):
    make, message = STRUCTURE_CASES[case]
    with pytest.raises(InvalidSourceData, match=rf"^member.JPEG: .*{message}"):
        inspect_image(make(), "member.JPEG")


def test_sound_images_pass_including_progressive_and_trailing_bytes():
    for data in (jpeg(), jpeg(progressive=True), jpeg(restart_marker_blocks=1), png(), jpeg() + b"\x00" * 5):
        inspect_image(data, "ok", ImageChecks(deep=True))


def test_deep_checks_decode_what_the_structure_cannot_see():
    data = undefined_huffman_table(jpeg())
    assert inspect_image(data, "z.JPEG").width == 50  # structure and size are fine
    with pytest.raises(InvalidSourceData, match=r"^z.JPEG: not a readable image"):
        inspect_image(data, "z.JPEG", ImageChecks(deep=True))


# -- builds and verify -------------------------------------------------------------------------------------


def _val_with(images, index: int, data: bytes):
    images = list(images)
    images[index] = fx.ValImage(images[index].image_id, data, images[index].label, images[index].boxes)
    return images


def test_a_build_refuses_a_bomb_and_verify_catches_one_built_with_the_bound_lifted(val_images, tmp_path):
    images = _val_with(val_images, 4, with_frame_size(val_images[0].data, 60000, 60000))
    manual = fx.write_folders_layout(tmp_path / "manual", images)
    with pytest.raises(InvalidSourceData, match=r"manual/val:n\d+/ILSVRC2012_val_00000005.JPEG: 60000x60000"):
        build_val({"folders": manual}, "folders", tmp_path / "out")
    folder = build_val({"folders": manual}, "folders", tmp_path / "lifted", max_pixels=None)
    with pytest.raises(
        DatasetFolderError,
        match=r"validation-00000-of-00001.parquet: row 'ILSVRC2012_val_00000005', "
        r"column 'image': 60000x60000",
    ):
        verify_folder(folder, ImageChecks())
    verify_folder(folder)  # hashes alone: the files are what was built
    verify_folder(folder, ImageChecks(max_pixels=None))


def test_deep_verify_at_build_and_in_verify(val_images, tmp_path):
    images = _val_with(val_images, 7, undefined_huffman_table(val_images[7].data))
    manual = fx.write_kaggle_layout(tmp_path / "manual", images)
    folder = build_val({"kaggle": manual}, "kaggle", tmp_path / "out")
    with pytest.raises(
        InvalidSourceData, match=r"ILSVRC/Data/CLS-LOC/val:ILSVRC2012_val_00000008.JPEG: not a readable"
    ):
        build_val({"kaggle": manual}, "kaggle", tmp_path / "deep", deep_verify=True)
    with pytest.raises(
        DatasetFolderError, match=r"row 'ILSVRC2012_val_00000008', column 'image': not a readable image"
    ):
        verify_folder(folder, ImageChecks(deep=True))
    verify_folder(folder, ImageChecks())


# -- one name or one id twice -----------------------------------------------------------------------------


def _tar(path, members, fmt=tarfile.USTAR_FORMAT):
    with tarfile.open(path, "w", format=fmt) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            if fmt == tarfile.PAX_FORMAT:
                info.pax_headers = {"comment": "x"}
            tar.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.parametrize("kind", ["plain tar", "./ prefix", "pax tar", "tar.gz", "zip"])
def test_an_archive_with_one_name_twice_is_refused(tmp_path, kind):
    first, second = b"first copy", b"second copy!"
    if kind == "zip":
        path = tmp_path / "a.zip"
        with zipfile.ZipFile(path, "w") as archive, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # zipfile warns about the duplicate: that is the point
            archive.writestr("img/x.JPEG", first)
            archive.writestr("img/x.JPEG", second)
    elif kind == "tar.gz":
        plain = _tar(tmp_path / "a.tar", [("img/x.JPEG", first), ("img/x.JPEG", second)])
        path = tmp_path / "a.tar.gz"
        with open(plain, "rb") as source, __import__("gzip").open(path, "wb") as out:
            out.write(source.read())
    else:
        names = ("img/x.JPEG", "./img/x.JPEG") if kind == "./ prefix" else ("img/x.JPEG", "img/x.JPEG")
        fmt = tarfile.PAX_FORMAT if kind == "pax tar" else tarfile.USTAR_FORMAT
        path = _tar(tmp_path / "a.tar", [(names[0], first), (names[1], second)], fmt)
    with pytest.raises(InvalidSourceData, match=r"member 'img/x.JPEG' appears twice"), open_archive(path) as archive:
        archive.names()
        list(archive.iter_members(["img/x.JPEG"]))


def test_one_val_image_twice_in_the_tar_is_refused_naming_both(val_images, tmp_path):
    manual = fx.write_tar_layout(tmp_path / "manual", val_images)
    tar = manual / "ILSVRC2012_img_val.tar"
    with tarfile.open(tar, "a") as archive:
        info = tarfile.TarInfo(f"extra/{val_images[0].file_name}")
        info.size = len(val_images[1].data)
        archive.addfile(info, io.BytesIO(val_images[1].data))
    fx.write_checksums(manual)
    with pytest.raises(
        InvalidSourceData,
        match=r"image ILSVRC2012_val_00000001 is there twice, as "
        r"'ILSVRC2012_val_00000001.JPEG' and 'extra/ILSVRC2012_val_00000001.JPEG'",
    ):
        build_val({"tar": manual}, "tar", tmp_path / "out")
