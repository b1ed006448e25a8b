"""Archives are read in place: tar (random access), tar.gz (streamed), zip, folders."""

from __future__ import annotations

import io
import tarfile
import zipfile

import pytest

from imagenet_suite.build.archives import TarArchive, open_archive
from imagenet_suite.errors import InvalidSourceData

MEMBERS = {"a/x.JPEG": b"x" * 1000, "a/y.JPEG": b"y" * 10, "b/z.txt": b"zzz"}


def _write_tar(path, mode):
    with tarfile.open(path, mode) as tar:
        for name, data in MEMBERS.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        directory = tarfile.TarInfo("a")
        directory.type = tarfile.DIRTYPE
        tar.addfile(directory)  # directories are not listed


@pytest.mark.parametrize("kind", ["tar", "tar.gz", "zip", "folder"])
def test_every_kind_lists_and_reads_members(kind, tmp_path):
    path = tmp_path / f"archive.{kind}"
    if kind == "tar":
        _write_tar(path, "w")
    elif kind == "tar.gz":
        _write_tar(path, "w:gz")
    elif kind == "zip":
        with zipfile.ZipFile(path, "w") as zf:
            for name, data in MEMBERS.items():
                zf.writestr(name, data)
    else:
        for name, data in MEMBERS.items():
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            (path / name).write_bytes(data)
    with open_archive(path) as archive:
        assert sorted(archive.names()) == sorted(MEMBERS)
        assert archive.read("a/y.JPEG") == MEMBERS["a/y.JPEG"]
        assert dict(archive.iter_members(["b/z.txt", "a/x.JPEG"])) == {k: MEMBERS[k] for k in ("b/z.txt", "a/x.JPEG")}
        with pytest.raises(InvalidSourceData, match="member 'nope' not found"):
            archive.read("nope")


def test_tar_reopens_from_its_index_without_rescanning(tmp_path):
    path = tmp_path / "a.tar"
    _write_tar(path, "w")
    with TarArchive(path) as tar:
        index = tar.index()
    with TarArchive.from_index(path, index) as again:
        assert again.read("a/x.JPEG") == MEMBERS["a/x.JPEG"]


def test_truncated_compressed_tar_is_named(tmp_path):
    path = tmp_path / "a.tar.gz"
    _write_tar(path, "w:gz")
    path.write_bytes(path.read_bytes()[:60])
    with pytest.raises(InvalidSourceData, match="a.tar.gz"):
        open_archive(path).names()


def test_unsupported_file_type(tmp_path):
    (tmp_path / "x.rar").write_bytes(b"rar")
    with pytest.raises(InvalidSourceData, match="unsupported archive type"):
        open_archive(tmp_path / "x.rar")


def _tar_bytes(members: list[tuple[str, bytes]], tar_format: int, extra=None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tar_format) as tar:
        for name, data in members:
            if name.endswith("/"):
                info = tarfile.TarInfo(name.rstrip("/"))
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
                continue
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if extra:
            extra(tar)
    return buffer.getvalue()


def _tarfile_index(data: bytes) -> dict:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        return {m.name.removeprefix("./"): (m.offset_data, m.size) for m in tar if m.isfile()}


PLAIN_MEMBERS = [("val/", b""), ("val/ILSVRC2012_val_00000001.JPEG", b"\xff\xd8" + b"x" * 700),
                 ("./empty.txt", b""), ("d" * 60 + "/" + "e" * 60 + ".bin", b"abc" * 200)]  # > 100 chars: ustar prefix


@pytest.mark.parametrize("tar_format", [tarfile.GNU_FORMAT, tarfile.USTAR_FORMAT])
def test_plain_tar_index_equals_tarfiles(tmp_path, tar_format):
    from imagenet_suite.build.archives import plain_tar_index

    members = PLAIN_MEMBERS if tar_format == tarfile.USTAR_FORMAT else PLAIN_MEMBERS[:3]  # GNU: long names are 'L' headers
    data = _tar_bytes(members, tar_format)
    (tmp_path / "a.tar").write_bytes(data)
    with open(tmp_path / "a.tar", "rb") as handle:
        index = plain_tar_index(handle)
    assert index == _tarfile_index(data) and len(index) == len(members) - 1
    with TarArchive(tmp_path / "a.tar") as archive:
        assert archive.read("val/ILSVRC2012_val_00000001.JPEG") == members[1][1]


def _symlink(tar):
    info = tarfile.TarInfo("link")
    info.type, info.linkname = tarfile.SYMTYPE, "val/ILSVRC2012_val_00000001.JPEG"
    tar.addfile(info)


@pytest.mark.parametrize("case", ["pax", "gnu long name", "symlink", "bad checksum", "no end marker"])
def test_other_tars_fall_back_to_tarfile(tmp_path, case):
    from imagenet_suite.build.archives import plain_tar_index

    members = PLAIN_MEMBERS[:3]
    if case == "pax":  # a non-ASCII name needs a pax header
        data = _tar_bytes([*members, ("caf\u00e9.txt", b"ok")], tarfile.PAX_FORMAT)
    elif case == "gnu long name":
        data = _tar_bytes(PLAIN_MEMBERS, tarfile.GNU_FORMAT)
    elif case == "symlink":
        data = _tar_bytes(members, tarfile.GNU_FORMAT, extra=_symlink)
    else:
        data = bytearray(_tar_bytes(members, tarfile.GNU_FORMAT))
        if case == "bad checksum":
            data[2048 + 5] ^= 0x01  # a byte of empty.txt's header (dir header, file header + 2 data blocks before it)
        else:
            data = data[:1500]  # cut inside the first file's data
        data = bytes(data)
    (tmp_path / "a.tar").write_bytes(data)
    if case == "bad checksum":  # tarfile would stop listing there, silently: refused with the offset
        with pytest.raises(InvalidSourceData, match="a.tar: the tar header at byte 2048 has a bad checksum"):
            TarArchive(tmp_path / "a.tar")
        return
    with open(tmp_path / "a.tar", "rb") as handle:
        assert plain_tar_index(handle) is None
    if case in ("pax", "gnu long name", "symlink"):  # tarfile reads these: same index as tarfile's
        with TarArchive(tmp_path / "a.tar") as archive:
            assert archive.index() == _tarfile_index(data)
    else:  # cut off inside a member: tarfile's error, naming the file
        with pytest.raises(InvalidSourceData, match="a.tar: not a readable tar archive"):
            TarArchive(tmp_path / "a.tar")
