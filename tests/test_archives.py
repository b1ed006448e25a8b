"""Archives are read in place: tar (random access), tar.gz (streamed), zip, folders."""

from __future__ import annotations

import io
import tarfile
import zipfile

import pytest

from imagenet_suite.archives import TarArchive, open_archive
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
