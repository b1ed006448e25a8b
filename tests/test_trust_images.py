"""Every released image passes a structural check and a pixel bound; --deep-verify decodes it; an archive
that holds one name or one image id twice is refused, naming both copies."""

from __future__ import annotations

import io
import re
import tarfile
import warnings
import zipfile
import zlib

import numpy as np
import pytest
from PIL import Image

from imagenet_suite.core.archives import open_archive
from imagenet_suite.dataset.verify import verify_folder
from imagenet_suite.errors import DatasetFolderError, InvalidSourceData
from imagenet_suite.images import DEFAULT_MAX_PIXELS, ImageChecks, inspect_image
from tests.fixtures import imagenet_layouts as fx
from tests.helpers import build_val, run_cli


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
        r"89,478,485 .*raise the bound with max_pixels",
    ):
        inspect_image(bomb, "x.JPEG")


def test_a_png_bomb_is_refused_from_its_header():
    with pytest.raises(InvalidSourceData, match=r"^y.png: 100000x100000 = 10,000,000,000 pixels"):
        inspect_image(png_with_size(png(), 100000, 100000), "y.png")


def test_the_bound_is_the_callers():
    assert DEFAULT_MAX_PIXELS == Image.MAX_IMAGE_PIXELS == 89_478_485  # Pillow's bound, written as a literal
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


# -- deep checks: libjpeg's warnings and a PNG's zlib stream ---------------------------------------------------

JPEG_MARKER = re.compile(rb"\xff[^\x00\xd0-\xd7\xff]")  # in entropy-coded data: not stuffing, a restart or fill


def noise_jpeg(mode: str = "RGB", width: int = 128, height: int = 96, **options) -> bytes:
    pixels = np.random.default_rng(1).integers(0, 256, (height, width, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).convert(mode).save(buffer, format="JPEG", quality=90, **options)
    return buffer.getvalue()


def scan_spans(data: bytes) -> list[tuple[int, int]]:
    """``(start, end)`` of the entropy-coded data of each scan of a JPEG."""
    spans, position = [], 0
    while (scan := data.find(b"\xff\xda", position)) != -1:
        start = scan + 2 + int.from_bytes(data[scan + 2 : scan + 4], "big")
        end = JPEG_MARKER.search(data, start).start()
        spans.append((start, end))
        position = end
    return spans


def cut_scan(data: bytes, scan: int = 0) -> bytes:
    """The file cut in the middle of a scan's entropy-coded data and closed with an end-of-image marker."""
    start, end = scan_spans(data)[scan]
    return data[: (start + end) // 2] + b"\xff\xd9"


def corrupt_scan(data: bytes) -> bytes:
    """One byte in the middle of the longest scan's entropy-coded data changed (no marker made or broken):
    the Huffman decoder loses step and finds data left over at the next marker."""
    start, end = max(scan_spans(data), key=lambda span: span[1] - span[0])
    out = bytearray(data)
    position = (start + end) // 2
    while 0xFF in out[position - 1 : position + 1] or out[position] ^ 0x55 == 0xFF:
        position += 1
    out[position] ^= 0x55
    return bytes(out)


def pillow_decodes(data: bytes) -> bool:
    with Image.open(io.BytesIO(data)) as image:
        image.load()
    return True


DEEP_JPEG_CASES = {
    "baseline: scan cut short, closed with FF D9": (lambda: cut_scan(noise_jpeg()), "premature end of data segment"),
    "progressive: first scan cut short": (
        lambda: cut_scan(noise_jpeg(progressive=True), 0),
        "premature end of data segment",
    ),
    "progressive: last scan cut short": (
        lambda: cut_scan(noise_jpeg(progressive=True), -1),
        "premature end of data segment",
    ),
    "grayscale: scan cut short": (lambda: cut_scan(noise_jpeg("L")), "premature end of data segment"),
    "CMYK: scan cut short": (lambda: cut_scan(noise_jpeg("CMYK")), "premature end of data segment"),
    "corrupt entropy-coded data": (lambda: corrupt_scan(noise_jpeg()), r"\d+ extraneous bytes before marker 0xd9"),
    "progressive: corrupt entropy-coded data": (
        lambda: corrupt_scan(noise_jpeg(progressive=True)),
        r"\d+ extraneous bytes before marker 0x",
    ),
}


@pytest.mark.parametrize("case", list(DEEP_JPEG_CASES))
def test_deep_checks_refuse_corrupt_jpeg_data_that_libjpeg_only_warns_about(case):
    make, message = DEEP_JPEG_CASES[case]
    data = make()
    assert inspect_image(data, "w.JPEG").width == 128  # the structure is sound
    assert pillow_decodes(data)  # and Pillow decodes it, dropping libjpeg's warning
    with pytest.raises(InvalidSourceData, match=rf"^w.JPEG: corrupt JPEG data \(libjpeg-turbo: .*{message}"):
        inspect_image(data, "w.JPEG", ImageChecks(deep=True))


def ycck_jpeg() -> bytes:
    """A 4-component JPEG in YCCK (Adobe transform 2), as Photoshop writes CMYK: libjpeg-turbo's encoding."""
    import simplejpeg

    pixels = np.random.default_rng(2).integers(0, 256, (40, 50, 4), dtype=np.uint8)
    return simplejpeg.encode_jpeg(pixels, quality=90, colorspace="CMYK")


@pytest.mark.parametrize(
    "make",
    [
        lambda: noise_jpeg(),
        lambda: noise_jpeg(progressive=True),
        lambda: noise_jpeg("L"),
        lambda: noise_jpeg("L", progressive=True),
        lambda: noise_jpeg("CMYK"),
        lambda: noise_jpeg("CMYK", progressive=True),
        ycck_jpeg,
        lambda: noise_jpeg(subsampling=0, optimize=True),
        lambda: noise_jpeg(restart_marker_blocks=1),
        lambda: noise_jpeg() + b"\x00" * 5,
        lambda: noise_jpeg() + b"trailing bytes after the end-of-image marker",
        lambda: noise_jpeg(width=1, height=1),
    ],
    ids=[
        "baseline",
        "progressive",
        "gray",
        "gray-progressive",
        "cmyk",
        "cmyk-progressive",
        "ycck",
        "444-optimized",
        "restarts",
        "nul-padding",
        "trailing-bytes",
        "1x1",
    ],
)
def test_deep_checks_pass_sound_jpegs_of_every_kind(make):
    data = make()
    header = inspect_image(data, "ok.JPEG", ImageChecks(deep=True))
    with Image.open(io.BytesIO(data)) as image:
        assert (header.mode, header.width, header.height) == (image.mode, image.width, image.height)


def test_deep_checks_pass_the_fixture_val_images(val_images):
    modes = {inspect_image(image.data, image.file_name, ImageChecks(deep=True)).mode for image in val_images}
    assert modes == {"RGB", "L", "CMYK"}


def png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    chunks, position = [], len(b"\x89PNG\r\n\x1a\n")
    while position < len(data):
        length = int.from_bytes(data[position : position + 4], "big")
        chunks.append((data[position + 4 : position + 8], data[position + 8 : position + 8 + length]))
        position += 12 + length
    return chunks


def png_of_chunks(chunks: list[tuple[bytes, bytes]]) -> bytes:
    """A PNG of ``(type, payload)`` chunks, each with its right length and CRC."""
    out = [b"\x89PNG\r\n\x1a\n"]
    for kind, payload in chunks:
        out += [len(payload).to_bytes(4, "big"), kind, payload, zlib.crc32(kind + payload).to_bytes(4, "big")]
    return b"".join(out)


def noise_png(mode: str = "RGB", width: int = 64, height: int = 48) -> bytes:
    pixels = np.random.default_rng(3).integers(0, 256, (height, width, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).convert(mode).save(buffer, format="PNG")
    return buffer.getvalue()


def with_image_data(data: bytes, change, after: tuple[tuple[bytes, bytes], ...] = ()) -> bytes:
    """The PNG with its (joined) IDAT payload replaced by ``change(payload)`` and the chunks ``after``
    following it, before IEND; every CRC right."""
    chunks = png_chunks(data)
    payload = change(b"".join(p for kind, p in chunks if kind == b"IDAT"))
    rest = [(kind, p) for kind, p in chunks if kind not in (b"IDAT", b"IEND")]
    return png_of_chunks([*rest, (b"IDAT", payload), *after, (b"IEND", b"")])


def recompressed(change):
    return lambda payload: zlib.compress(change(zlib.decompress(payload)))


PNG_STREAM_CASES = {
    "zlib stream cut before its checksum": (
        lambda: with_image_data(noise_png(), lambda z: z[:-4]),
        r"image data ends early: its zlib stream stops before its checksum \(truncated\)",
    ),
    "data after the zlib stream": (
        lambda: with_image_data(noise_png(), lambda z: z + b"junk"),
        r"image data has 4 bytes after the end of its zlib stream",
    ),
    "a second zlib stream": (
        lambda: with_image_data(noise_png(), lambda z: z + zlib.compress(b"more")),
        r"image data has 12 bytes after the end of its zlib stream",
    ),
    "more image data than its header's size": (  # 48 rows of a filter byte + 64 x 3 bytes = 9,264
        lambda: with_image_data(noise_png(), recompressed(lambda raw: raw + bytes(193))),
        r"image data runs past the 9,264 bytes its header \(64x48, 8-bit, color type 2, not interlaced\) gives",
    ),
    "IDAT chunks not consecutive": (
        lambda: with_image_data(noise_png(), lambda z: z, after=((b"tEXt", b"a\x00b"), (b"IDAT", b"more"))),
        r"IDAT chunk at byte \d+ comes after another chunk that follows IDAT",
    ),
}


@pytest.mark.parametrize("case", list(PNG_STREAM_CASES))
def test_deep_checks_refuse_a_png_whose_zlib_stream_is_not_exactly_its_image(case):
    make, message = PNG_STREAM_CASES[case]
    data = make()
    assert inspect_image(data, "p.png").width == 64  # every chunk's CRC is right
    assert pillow_decodes(data)  # and Pillow decodes it, stopping when it has the pixels
    with pytest.raises(InvalidSourceData, match=rf"^p.png: PNG .*{message}"):
        inspect_image(data, "p.png", ImageChecks(deep=True))


def adam7_png(pixels: np.ndarray) -> bytes:
    """An interlaced (Adam7) 8-bit grayscale PNG of ``pixels`` (Pillow writes no interlaced PNG)."""
    height, width = pixels.shape
    raw = b""
    for x0, y0, dx, dy in [
        (0, 0, 8, 8),
        (4, 0, 8, 8),
        (0, 4, 4, 8),
        (2, 0, 4, 4),
        (0, 2, 2, 4),
        (1, 0, 2, 2),
        (0, 1, 1, 2),
    ]:
        reduced = pixels[y0::dy, x0::dx]
        if reduced.size:
            raw += b"".join(b"\x00" + row.tobytes() for row in reduced)
    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 0, 0, 0, 1])
    return png_of_chunks([(b"IHDR", header), (b"IDAT", zlib.compress(raw)), (b"IEND", b"")])


@pytest.mark.parametrize("size", [(1, 1), (3, 5), (13, 7), (64, 48)])
def test_deep_checks_pass_interlaced_pngs_and_catch_one_cut_short(size):
    import cv2

    pixels = np.random.default_rng(4).integers(0, 256, size[::-1], dtype=np.uint8)
    data = adam7_png(pixels)
    with Image.open(io.BytesIO(data)) as image:  # the generator is right: Pillow and libpng read the pixels
        assert np.array_equal(np.asarray(image), pixels)
    assert np.array_equal(cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED), pixels)
    assert inspect_image(data, "i.png", ImageChecks(deep=True)).width == size[0]
    with pytest.raises(InvalidSourceData, match=r"^i.png: PNG image data runs past the [\d,]+ bytes its header "):
        inspect_image(with_image_data(data, recompressed(lambda raw: raw + b"\x00")), "i.png", ImageChecks(deep=True))


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "L", "LA", "P", "1", "I;16"])
def test_deep_checks_pass_sound_pngs_of_every_mode(mode):
    if mode == "I;16":
        image = Image.fromarray(np.random.default_rng(5).integers(0, 65536, (300, 400), dtype=np.uint16))
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        data = buffer.getvalue()
    else:
        data = noise_png(mode, 400, 300)
    assert [kind for kind, _ in png_chunks(data)].count(b"IDAT") > (mode != "1")  # several for all but 1-bit
    with Image.open(io.BytesIO(data)) as image:
        mode_read = image.mode
    assert inspect_image(data, "m.png", ImageChecks(deep=True)).mode == mode_read


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


@pytest.mark.parametrize("progressive", [False, True], ids=["baseline", "progressive"])
def test_deep_verify_on_the_command_line_catches_a_scan_cut_short(val_images, tmp_path, progressive):
    """The image's scan is cut in half and closed with FF D9: Pillow decodes it (its lower part grey), so it
    passes every check but the strict decode of ``--deep-verify``, at build and in ``verify``."""
    buffer = io.BytesIO()
    Image.open(io.BytesIO(val_images[5].data)).save(buffer, format="JPEG", quality=90, progressive=progressive)
    images = _val_with(val_images, 5, cut_scan(buffer.getvalue(), -1))
    manual = fx.write_folders_layout(tmp_path / "manual", images)
    build = ["build", "imagenet_val", "--manual-dir", str(manual), "--no-progress"]
    refused = run_cli(*build, "--out", str(tmp_path / "deep"), "--deep-verify", check=False)
    assert refused.returncode == 2, refused.stderr
    assert re.fullmatch(
        r"imagenet-suite build: error: \S*manual/val:n\d+/ILSVRC2012_val_00000006.JPEG: corrupt JPEG data "
        r"\(libjpeg-turbo: Corrupt JPEG data: premature end of data segment\)\n",
        refused.stderr,
    ), refused.stderr
    folder = run_cli(*build, "--out", str(tmp_path / "out")).stdout.splitlines()[-1]
    assert run_cli("verify", folder, "--no-progress").returncode == 0  # structure and hashes are sound
    verified = run_cli("verify", folder, "--deep-verify", "--no-progress", check=False)
    assert verified.returncode == 2, verified.stderr
    assert re.fullmatch(
        r"imagenet-suite verify: error: \S*validation-00000-of-00001.parquet: row 'ILSVRC2012_val_00000006', "
        r"column 'image': corrupt JPEG data \(libjpeg-turbo: Corrupt JPEG data: premature end of data segment\)\n",
        verified.stderr,
    ), verified.stderr


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
