"""Archives are read in place: tars (plain and compressed, random access through a member index), zip, folders."""

from __future__ import annotations

import gzip
import io
import tarfile
import zipfile

import pytest

from imagenet_suite.core import archives
from imagenet_suite.core.archives import TarArchive, index_tar, open_archive
from imagenet_suite.errors import InvalidSourceData, SourceError

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


KINDS = {"tar": "w", "tar.gz": "w:gz", "tar.bz2": "w:bz2", "tar.xz": "w:xz", "zip": None, "folder": None}


def _write_archive(path, kind):
    if kind.startswith("tar"):
        _write_tar(path, KINDS[kind])
    elif kind == "zip":
        with zipfile.ZipFile(path, "w") as zf:
            for name, data in MEMBERS.items():
                zf.writestr(name, data)
    else:
        for name, data in MEMBERS.items():
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            (path / name).write_bytes(data)


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_lists_and_reads_members(kind, tmp_path):
    path = tmp_path / f"archive.{kind}"
    _write_archive(path, kind)
    with open_archive(path) as archive:
        assert sorted(archive.names()) == sorted(MEMBERS)
        assert archive.read("a/y.JPEG") == MEMBERS["a/y.JPEG"]
        assert archive.read_head("a/x.JPEG", 10) == MEMBERS["a/x.JPEG"][:10]
        assert archive.read_head("b/z.txt", 10) == MEMBERS["b/z.txt"]
        assert dict(archive.iter_members(["b/z.txt", "a/x.JPEG", "gone"])) == {
            k: MEMBERS[k] for k in ("b/z.txt", "a/x.JPEG")
        }
        asked = ["b/z.txt", "a/x.JPEG", "b/z.txt", "a/y.JPEG"]  # not archive order, one member twice
        assert list(archive.read_members(asked)) == [(name, MEMBERS[name]) for name in asked]
        with pytest.raises(InvalidSourceData, match="member 'nope' not found"):
            archive.read("nope")
        with pytest.raises(InvalidSourceData, match="member 'nope' not found"):
            list(archive.read_members(["a/x.JPEG", "nope"]))


@pytest.mark.parametrize("kind", ["tar", "tar.gz"])
def test_tar_reopens_from_its_index_without_rescanning(kind, tmp_path, monkeypatch):
    path = tmp_path / f"a.{kind}"
    _write_tar(path, KINDS[kind])
    with open_archive(path) as tar:
        index = tar.index()
    assert index.compression == ("" if kind == "tar" else "gz") and index.names() == list(MEMBERS)
    subset = index.subset(["a/x.JPEG"])
    monkeypatch.setattr(archives, "_scan_tar", lambda *_: pytest.fail("rescanned"))
    archives._CACHE.clear()
    with open_archive(path, subset) as again:
        assert again.names() == ["a/x.JPEG"] and again.read("a/x.JPEG") == MEMBERS["a/x.JPEG"]


def test_tar_index_is_scanned_once_per_file_and_kept_for_the_last_few(tmp_path, monkeypatch):
    scans = []
    scan = archives._scan_tar
    monkeypatch.setattr(archives, "_scan_tar", lambda path: scans.append(path.name) or scan(path))
    archives._CACHE.clear()
    names = [f"{i}.tar" for i in range(archives.CACHED_INDEXES + 1)]
    for name in names:
        _write_tar(tmp_path / name, "w")
    for name in [names[0], names[0], names[1], names[0]]:
        assert index_tar(tmp_path / name).path == tmp_path / name
    assert scans == [names[0], names[1]]
    for name in names[2:] + names[:1]:  # a third tar pushes out the least recently used (names[1])
        index_tar(tmp_path / name)
    index_tar(tmp_path / names[1])
    assert scans == [names[0], names[1], names[2], names[1]]
    (tmp_path / names[0]).write_bytes((tmp_path / names[1]).read_bytes() + b"\0" * 512)  # changed file: rescanned
    index_tar(tmp_path / names[0])
    assert scans[-1] == names[0]


@pytest.mark.parametrize("mode", ["w:gz", "w:xz"])
def test_compressed_tar_reads_many_members_in_one_pass(mode, tmp_path, monkeypatch):
    path = tmp_path / f"a.tar.{mode[2:]}"
    members = {f"m{i:03d}": bytes([i]) * (100 + i) for i in range(50)}
    with tarfile.open(path, mode) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    opened = []
    real_open = archives.COMPRESSIONS[mode[2:]]
    monkeypatch.setitem(
        archives.COMPRESSIONS, mode[2:], (real_open[0], lambda *a: opened.append(a) or real_open[1](*a))
    )
    wanted = list(reversed(members))[::3]
    with open_archive(path) as archive:
        assert list(archive.read_members(wanted)) == [(name, members[name]) for name in wanted]
    assert len(opened) == 1


def test_truncated_member_of_a_compressed_tar_is_named(tmp_path):
    path = tmp_path / "a.tar.gz"
    _write_tar(path, "w:gz")
    index = index_tar(path)
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(InvalidSourceData, match="a.tar.gz: archive is corrupt or truncated"):
        list(open_archive(path, index).read_members(["b/z.txt"]))


def test_truncated_compressed_tar_is_named(tmp_path):
    path = tmp_path / "a.tar.gz"
    _write_tar(path, "w:gz")
    path.write_bytes(path.read_bytes()[:60])
    with pytest.raises(InvalidSourceData, match="a.tar.gz: not a readable tar archive, or truncated"):
        open_archive(path).names()


@pytest.mark.parametrize("kind", ["tar", "tar.gz", "zip"])
def test_a_name_twice_is_refused_naming_it(kind, tmp_path):
    path = tmp_path / f"a.{kind}"
    if kind == "zip":
        with zipfile.ZipFile(path, "w") as zf, pytest.warns(UserWarning, match="Duplicate name"):
            zf.writestr("a/x.JPEG", b"1")
            zf.writestr("a/x.JPEG", b"2")
    else:
        with tarfile.open(path, KINDS[kind]) as tar:
            for name, data in (("a/x.JPEG", b"1"), ("./a/x.JPEG", b"2")):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    with pytest.raises(InvalidSourceData, match=rf"a.{kind}: member 'a/x.JPEG' appears twice.*refusing to pick one"):
        open_archive(path).names()


def test_a_symlink_leaving_a_folder_is_refused(tmp_path):
    (tmp_path / "outside.JPEG").write_bytes(b"x")
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "in.JPEG").symlink_to(tmp_path / "outside.JPEG")
    with pytest.raises(SourceError, match="in.JPEG is a symlink to .*outside.JPEG, outside"):
        open_archive(tmp_path / "folder").names()
    with pytest.raises(SourceError, match="in.JPEG is a symlink to .*outside.JPEG, outside"):
        open_archive(tmp_path / "folder").read("in.JPEG")  # read by the name a release's list gives, unlisted
    (tmp_path / "folder" / "sub").symlink_to(tmp_path)
    with pytest.raises(SourceError, match="folder/sub leads to .*, outside .*folder: symlinks leaving"):
        open_archive(tmp_path / "folder").read_head("sub/outside.JPEG", 2)


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


PLAIN_MEMBERS = [
    ("val/", b""),
    ("val/ILSVRC2012_val_00000001.JPEG", b"\xff\xd8" + b"x" * 700),
    ("./empty.txt", b""),
    ("d" * 60 + "/" + "e" * 60 + ".bin", b"abc" * 200),
]  # > 100 chars: ustar prefix


@pytest.mark.parametrize("tar_format", [tarfile.GNU_FORMAT, tarfile.USTAR_FORMAT])
def test_plain_tar_index_equals_tarfiles(tmp_path, tar_format):
    from imagenet_suite.core.archives import plain_tar_index

    members = (
        PLAIN_MEMBERS if tar_format == tarfile.USTAR_FORMAT else PLAIN_MEMBERS[:3]
    )  # GNU: long names are 'L' headers
    data = _tar_bytes(members, tar_format)
    (tmp_path / "a.tar").write_bytes(data)
    with open(tmp_path / "a.tar", "rb") as handle:
        index = plain_tar_index(handle)
    assert index == _tarfile_index(data) and len(index) == len(members) - 1
    with open_archive(tmp_path / "a.tar") as archive:
        assert isinstance(archive, TarArchive) and archive.index().members == index
        assert archive.read("val/ILSVRC2012_val_00000001.JPEG") == members[1][1]


def _symlink(tar):
    info = tarfile.TarInfo("link")
    info.type, info.linkname = tarfile.SYMTYPE, "val/ILSVRC2012_val_00000001.JPEG"
    tar.addfile(info)


@pytest.mark.parametrize("case", ["pax", "gnu long name", "symlink", "bad checksum", "no end marker"])
def test_other_tars_fall_back_to_tarfile(tmp_path, case):
    from imagenet_suite.core.archives import plain_tar_index

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
            open_archive(tmp_path / "a.tar")
        return
    with open(tmp_path / "a.tar", "rb") as handle:
        assert plain_tar_index(handle) is None
    if case in ("pax", "gnu long name", "symlink"):  # tarfile reads these: same index as tarfile's
        expected = _tarfile_index(data)
        if case == "symlink":  # a symbolic link to a member is read as that member
            expected["link"] = expected["val/ILSVRC2012_val_00000001.JPEG"]
        with open_archive(tmp_path / "a.tar") as archive:
            assert archive.index().members == expected
            if case == "symlink":
                assert archive.read("link") == members[1][1]
    else:  # cut off inside a member: tarfile's error, naming the file
        with pytest.raises(InvalidSourceData, match="a.tar: not a readable tar archive"):
            open_archive(tmp_path / "a.tar")


# -- tars stored in a tar (ILSVRC2012_img_train.tar) ------------------------------------------------------------


def _outer(tmp_path, inner: dict[str, bytes], tar_format=tarfile.GNU_FORMAT):
    """A plain tar of ``inner`` (name -> bytes), as the train tar holds its per-class tars."""
    path = tmp_path / "outer.tar"
    path.write_bytes(_tar_bytes(list(inner.items()), tar_format))
    return path


def test_nested_tar_members_are_read_in_place_with_one_seek_each(tmp_path, monkeypatch):
    from imagenet_suite.core.archives import index_nested_tar

    first = _tar_bytes([("n1_1.JPEG", b"a" * 700), ("n1_2.JPEG", b"b")], tarfile.GNU_FORMAT)
    pax = _tar_bytes([("caf\u00e9.JPEG", b"c" * 10)], tarfile.PAX_FORMAT)  # not plain: read by tarfile
    path = _outer(tmp_path, {"n1.tar": first, "n2.tar": pax, "README": b"r"})
    index = index_nested_tar(path)
    assert index.compression == "" and index.names() == [
        "n1.tar/n1_1.JPEG",
        "n1.tar/n1_2.JPEG",
        "n2.tar/caf\u00e9.JPEG",
        "README",
    ]
    with tarfile.open(path) as outer, tarfile.open(fileobj=outer.extractfile("n2.tar")) as inner:
        assert inner.extractfile("caf\u00e9.JPEG").read() == b"c" * 10  # what the index must find
    monkeypatch.setattr(archives, "_scan_tar", lambda *_: pytest.fail("rescanned"))
    with open_archive(path, index) as archive:
        assert archive.read("n1.tar/n1_1.JPEG") == b"a" * 700 and archive.read("n2.tar/caf\u00e9.JPEG") == b"c" * 10
    only = index_nested_tar(path, TarArchive(index_tar(path)).index().subset(["n1.tar"]))
    assert only.names() == ["n1.tar/n1_1.JPEG", "n1.tar/n1_2.JPEG"]


@pytest.mark.parametrize("case", ["cut off", "not a tar", "compressed outer"])
def test_bad_nested_tar_is_named(tmp_path, case):
    from imagenet_suite.core.archives import index_nested_tar

    inner = _tar_bytes([("n1_1.JPEG", b"a" * 2000)], tarfile.GNU_FORMAT)
    if case == "cut off":
        path, match = _outer(tmp_path, {"n1.tar": inner[:1500]}), r"outer.tar:n1.tar: not a readable tar archive"
    elif case == "not a tar":
        path = _outer(tmp_path, {"n1.tar": b"\xff\xd8 a JPEG"})
        match = r"outer.tar:n1.tar: not a tar archive \(no tar header, and not gzip, bz2 or xz compressed\)$"
    else:
        path = tmp_path / "outer.tar.gz"
        with tarfile.open(path, "w:gz") as tar:
            info = tarfile.TarInfo("n1.tar")
            info.size = len(inner)
            tar.addfile(info, io.BytesIO(inner))
        match = r"outer.tar.gz: a gz-compressed tar; tars stored in it can only be read from a plain tar"
    with pytest.raises(InvalidSourceData, match=match) as refused:
        index_nested_tar(path)
    assert "\n" not in str(refused.value)  # tarfile lists each compression it tried on a line of its own


def _hard_link(name: str, target: str):
    def add(tar):
        info = tarfile.TarInfo(name)
        info.type, info.linkname = tarfile.LNKTYPE, target
        tar.addfile(info)

    return add


def test_a_hard_link_is_listed_with_its_targets_bytes_in_plain_compressed_and_nested_tars(tmp_path):
    """tar stores a file's second name as a hard link to its first: extracting gives both, so does the index."""
    from imagenet_suite.core.archives import index_nested_tar

    members = PLAIN_MEMBERS[:2]
    data = _tar_bytes(
        members, tarfile.GNU_FORMAT, extra=_hard_link("val/copy.JPEG", "val/ILSVRC2012_val_00000001.JPEG")
    )
    (tmp_path / "a.tar").write_bytes(data)
    (tmp_path / "a.tar.gz").write_bytes(gzip.compress(data))
    for name in ("a.tar", "a.tar.gz"):
        with open_archive(tmp_path / name) as archive:
            assert archive.names() == ["val/ILSVRC2012_val_00000001.JPEG", "val/copy.JPEG"]
            assert archive.read("val/copy.JPEG") == archive.read("val/ILSVRC2012_val_00000001.JPEG") == members[1][1]
    with open_archive(_outer(tmp_path, {"n1.tar": data}), index_nested_tar(tmp_path / "outer.tar")) as archive:
        assert archive.read("n1.tar/val/copy.JPEG") == members[1][1]


@pytest.mark.parametrize("target", ["/etc/passwd", "../outside.JPEG", "val/missing.JPEG"])
def test_a_symbolic_link_to_no_member_is_refused_naming_both(tmp_path, target):
    def link(tar):
        info = tarfile.TarInfo("val/link.JPEG")
        info.type, info.linkname = tarfile.SYMTYPE, target
        tar.addfile(info)

    (tmp_path / "a.tar").write_bytes(_tar_bytes(PLAIN_MEMBERS[:2], tarfile.GNU_FORMAT, extra=link))
    with pytest.raises(InvalidSourceData) as caught:
        open_archive(tmp_path / "a.tar")
    message = str(caught.value)
    assert f"member 'val/link.JPEG' is a symbolic link to {target!r}, which the archive does not hold" in message
    assert "\n" not in message


def test_a_hard_link_to_nothing_before_it_is_refused_naming_both(tmp_path):
    data = _tar_bytes(PLAIN_MEMBERS[:2], tarfile.GNU_FORMAT, extra=_hard_link("val/copy.JPEG", "val/gone.JPEG"))
    (tmp_path / "a.tar").write_bytes(data)
    with pytest.raises(
        InvalidSourceData, match=r"a.tar: member 'val/copy.JPEG' is a hard link to 'val/gone.JPEG', which the archive"
    ):
        open_archive(tmp_path / "a.tar")
