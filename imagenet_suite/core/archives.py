"""Read archives in place: tar (plain or compressed), zip and plain folders behind one interface.

Members are streamed, never extracted to disk. Open any of them with :func:`open_archive`; every
:class:`Archive` lists its members (:meth:`~Archive.names`) and reads them by name:
:meth:`~Archive.read` (one member), :meth:`~Archive.read_head` (its first bytes),
:meth:`~Archive.read_members` (many, in the order asked) and :meth:`~Archive.iter_members` (many,
in archive order). Random access by member name:

* folders and zips: direct;
* tars, plain or compressed (``.tar``, ``.tar.gz``/``.tgz``, ``.tar.bz2``, ``.tar.xz``): through a
  :class:`TarIndex`, the data offset and size of every member in the *uncompressed* tar stream,
  made by one header scan (:func:`index_tar`). A plain tar is then read with one seek per member; a
  compressed one by one forward pass over the decompressed stream per :meth:`~Archive.read_members`
  call, seeking from member to member (so read many members of a compressed tar in one call);
* tars stored in a plain tar (``ILSVRC2012_img_train.tar``: one tar per class): :func:`index_nested_tar`
  lists the inner tars' members as ``<inner tar>/<member>`` with their offsets in the outer file, one
  plain :class:`TarIndex`, so they are read like any plain tar's, with one seek each.

:func:`index_tar` keeps the indexes of the last :data:`CACHED_INDEXES` tars (per file, size and
mtime): the configs that share one big tar (ImageNet-C: 15 or 20 configs per family tar) scan its
headers once per process. A :class:`TarIndex` is picklable; pass it (or its
:meth:`~TarIndex.subset`) to workers and reopen with ``open_archive(path, index)``, no rescan.

Member names are POSIX relative paths inside the archive (``"val/n01440764/x.JPEG"``); only
regular files are listed. An archive that holds one name twice (after dropping a leading ``./``)
is refused, naming both copies: which one a reader gets would otherwise depend on the reader.
A folder's symlinks must stay inside it (:func:`imagenet_suite.files.list_folder` when listing,
:func:`imagenet_suite.files.check_inside` at every read). A tar's hard link (``tar`` stores the second
name of a file that has two that way) is listed with its target's bytes, as extracting the tar would
give it; one whose target the tar does not hold before it is refused, naming both. A tar that is not
one is a one-line error.
"""

from __future__ import annotations

import bz2
import dataclasses
import gzip
import io
import lzma
import os
import posixpath
import tarfile
import threading
import zipfile
import zlib
from collections import Counter, OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import InvalidSourceData
from ..files import check_inside, list_folder

TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")
COMPRESSIONS = {"gz": (b"\x1f\x8b", gzip.open), "bz2": (b"BZh", bz2.open), "xz": (b"\xfd7zXZ", lzma.open)}
STREAM_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError)  # a corrupt or cut-off (compressed) stream
CACHED_INDEXES = 2  # tar indexes kept by index_tar (an ImageNet-C family tar's index is ~100 MB)


# -- the interface -------------------------------------------------------------------------------------


class Archive:
    """Common interface of folders, zips and tars; open one with :func:`open_archive`."""

    path: Path

    def names(self) -> list[str]:
        """Regular-file member names, in archive order (sorted for folders)."""
        raise NotImplementedError

    def read(self, name: str) -> bytes:
        """Bytes of one member; InvalidSourceData if missing or truncated."""
        raise NotImplementedError

    def read_head(self, name: str, size: int) -> bytes:
        """The first ``size`` bytes of a member (all of it if shorter); InvalidSourceData if missing."""
        return self.read(name)[:size]

    def read_members(self, names: Iterable[str]) -> Iterator[tuple[str, bytes]]:
        """``(name, bytes)`` for each of ``names``, in the order given; InvalidSourceData at a missing one."""
        for name in names:
            yield name, self.read(name)

    def iter_members(self, names: Iterable[str]) -> Iterator[tuple[str, bytes]]:
        """``(name, bytes)`` for the requested members that exist, in archive order (missing ones skipped)."""
        wanted = set(names)
        yield from self.read_members([name for name in self.names() if name in wanted])

    def index(self) -> TarIndex | None:
        """The member index that reopens this archive without a header scan (tars), else None."""
        return None

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _missing(self, name: str) -> InvalidSourceData:
        return InvalidSourceData(f"{self.path}: member {name!r} not found")


def open_archive(path: str | Path, index: TarIndex | None = None) -> Archive:
    """Open a folder, a tar (``.tar``, ``.tar.gz``/``.tgz``, ``.tar.bz2``, ``.tar.xz``) or a ``.zip`` for reading.

    ``index``: the :class:`TarIndex` of this tar, from an earlier :meth:`Archive.index` (skips the
    header scan); without it a tar's index comes from :func:`index_tar`.
    """
    path = Path(path)
    if index is not None:
        return TarArchive(dataclasses.replace(index, path=path) if index.path != path else index)
    if path.is_dir():
        return FolderArchive(path)
    if not path.is_file():
        raise InvalidSourceData(f"{path}: no such file or folder")
    name = path.name.lower()
    if name.endswith(".zip"):
        return ZipArchive(path)
    if name.endswith(TAR_SUFFIXES):
        return TarArchive(index_tar(path))
    raise InvalidSourceData(
        f"{path}: unsupported archive type (expected a folder, .tar, .tar.gz, .tgz, .tar.bz2, .tar.xz or .zip)"
    )


# -- folders and zips ------------------------------------------------------------------------------------


class FolderArchive(Archive):
    """A plain folder: members are its files; a symlink leading out of it is refused (SourceError naming
    it) when listing and when reading, so a member named by a release's own list is checked too."""

    def __init__(self, path: Path):
        self.path = path
        self._names: list[str] | None = None
        self._inside: set[str] = set()  # folders found inside self.path (check_inside's cache)

    def names(self) -> list[str]:
        if self._names is None:
            self._names = list_folder(self.path)
        return self._names

    def read(self, name: str) -> bytes:
        return self.read_head(name, -1)

    def read_head(self, name: str, size: int) -> bytes:
        try:
            check_inside(self.path, [name], self._inside)
            with open(os.path.join(self.path, name), "rb") as handle:
                return handle.read(size)
        except FileNotFoundError as err:
            raise self._missing(name) from err


class ZipArchive(Archive):
    def __init__(self, path: Path):
        self.path = path
        try:
            self._zip = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as err:
            raise InvalidSourceData(f"{path}: not a readable zip archive ({err})") from err
        self._names = [i.filename for i in self._zip.infolist() if not i.is_dir()]
        _refuse_repeated(self._names, path)

    def names(self) -> list[str]:
        return self._names

    def read(self, name: str) -> bytes:
        try:
            return self._zip.read(name)
        except KeyError as err:
            raise self._missing(name) from err
        except (zipfile.BadZipFile, OSError, EOFError) as err:
            raise InvalidSourceData(f"{self.path}: member {name!r} is corrupt or truncated ({err})") from err

    def close(self) -> None:
        self._zip.close()


def _refuse_repeated(names: Iterable[str], where) -> None:
    """InvalidSourceData if a member name occurs twice in an archive listing."""
    seen: set[str] = set()
    for number, name in enumerate(names):
        if name in seen:
            raise InvalidSourceData(
                f"{where}: member {name!r} appears twice (the second copy is entry {number + 1} of the "
                "archive); refusing to pick one"
            )
        seen.add(name)


# -- tars: the index -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TarIndex:
    """Where every regular member of a tar lies in its uncompressed stream (picklable; do not mutate).

    ``members``: name -> ``(data offset, size in bytes)``, in archive order. ``compression``: ``""``
    for a plain tar, else ``"gz"``, ``"bz2"`` or ``"xz"`` (from the file's magic bytes).
    """

    path: Path
    compression: str
    members: dict[str, tuple[int, int]]

    def names(self) -> list[str]:
        return list(self.members)

    def subset(self, names: Iterable[str]) -> TarIndex:
        """The index of just ``names`` (a smaller pickle for workers that read only those)."""
        return TarIndex(self.path, self.compression, {name: self.members[name] for name in names})


_CACHE: OrderedDict[tuple[str, int, int], TarIndex] = OrderedDict()
_CACHE_LOCK = threading.Lock()


def index_tar(path: str | Path) -> TarIndex:
    """The :class:`TarIndex` of a plain or compressed tar: one header scan per file, size and mtime.

    The last :data:`CACHED_INDEXES` indexes are kept. InvalidSourceData names the file when it is
    not a tar, is cut off, holds one name twice, or (plain tars) has a corrupted header.
    """
    path = Path(path)
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    with _CACHE_LOCK:
        cached = _CACHE.get(key)
        if cached is not None:
            _CACHE.move_to_end(key)
            return cached if cached.path == path else dataclasses.replace(cached, path=path)
    index = _scan_tar(path)
    with _CACHE_LOCK:
        _CACHE[key] = index
        while len(_CACHE) > CACHED_INDEXES:
            _CACHE.popitem(last=False)
    return index


def compression_of(path: Path) -> str:
    """``"gz"``, ``"bz2"`` or ``"xz"`` from a file's first bytes; ``""`` for anything else (a plain tar)."""
    with open(path, "rb") as handle:
        magic = handle.read(6)
    return next((kind for kind, (prefix, _) in COMPRESSIONS.items() if magic.startswith(prefix)), "")


def _scan_tar(path: Path) -> TarIndex:
    """Read the headers: the fast plain reader for plain tars, else (or if it declines) ``tarfile``."""
    compression = compression_of(path)
    members = None
    if not compression:
        with open(path, "rb") as handle:
            members = plain_tar_index(handle, path)
    if members is None:
        members = _tarfile_index(path)
    return TarIndex(path, compression, members)


def _tarfile_index(path: Path | str, window: _Window | None = None, start: int = 0) -> dict[str, tuple[int, int]]:
    """Every regular member by ``tarfile`` (any header kind, any compression; a hard link as its target);
    InvalidSourceData if unreadable.
    ``window``: read the tar from there (a tar stored at byte ``start`` of another one; offsets are the file's)."""
    members: dict[str, tuple[int, int]] = {}
    try:
        with tarfile.open(path if window is None else None, mode="r:*", fileobj=window) as tar:
            for member in tar:
                if member.isfile():
                    if window is not None and member.offset_data + member.size > window.size:
                        raise tarfile.ReadError(f"member {member.name!r} is cut off")
                    entry = (start + member.offset_data, member.size)
                    _add_member(members, member.name.removeprefix("./"), entry, path)
                elif member.islnk() or member.issym():
                    _add_member(members, member.name.removeprefix("./"), _link_target(members, member, path), path)
    except tarfile.ReadError as err:
        if str(err).startswith("file could not be opened successfully"):  # r:* tried every compression
            raise InvalidSourceData(
                f"{path}: not a tar archive (no tar header, and not gzip, bz2 or xz compressed)"
            ) from err
        raise InvalidSourceData(f"{path}: not a readable tar archive, or truncated ({_one_line(err)})") from err
    except (tarfile.TarError, *STREAM_ERRORS) as err:
        raise InvalidSourceData(f"{path}: not a readable tar archive, or truncated ({_one_line(err)})") from err
    return members


def _link_target(members: dict[str, tuple[int, int]], member: tarfile.TarInfo, where) -> tuple[int, int]:
    """The entry of the member a hard link names (tar stores it first), or a symbolic link's target inside the
    archive (its path relative to the link's folder); InvalidSourceData if the archive holds no such member
    before it (a symbolic link out of the archive included: never read from outside it, never dropped)."""
    if member.issym():
        kind = "symbolic link"
        target = posixpath.normpath(posixpath.join(posixpath.dirname(member.name), member.linkname))
        target = target.removeprefix("./") if not member.linkname.startswith("/") else member.linkname
    else:
        kind, target = "hard link", member.linkname.removeprefix("./")
    if target not in members:
        raise InvalidSourceData(
            f"{where}: member {member.name!r} is a {kind} to {member.linkname!r}, which the archive does not "
            "hold before it (a damaged or hand-made tar)"
        )
    return members[target]


def _one_line(err: BaseException) -> str:
    """An exception's message on one line (``tarfile`` lists what it tried on several)."""
    return " ".join(str(err).split()) or type(err).__name__


TAR_BLOCK = 512
PLAIN_TAR_FILE_TYPES = (b"0", b"\0")  # regular files
PLAIN_TAR_SKIPPED_TYPES = (b"5",)  # directories
USTAR_POSIX_MAGIC = b"ustar\x0000"  # only this magic has the name prefix field


def plain_tar_index(
    handle, where: str | Path = "tar", start: int = 0, end: int | None = None
) -> dict[str, tuple[int, int]] | None:
    """``{name: (data offset, size)}`` of the regular files of a *plain* tar, or None.

    Plain: only ustar/GNU headers of regular files and directories, octal sizes, valid header
    checksums — as in the ImageNet tars. Reading just the fields needed is ~3x faster than
    ``tarfile``'s full header parsing (about a second less for the 50,000-member val tar). Anything
    else (long names, pax headers, links, sparse files, a cut-off archive) gives None, and the
    caller falls back to ``tarfile``, which handles and reports those. A header with a bad
    checksum after the first raises InvalidSourceData naming ``where`` and the byte offset
    (``tarfile`` would silently stop listing there); so does a name that appears twice.

    ``start``/``end``: the tar lies at bytes ``start .. end`` of the file (a tar stored inside another
    one, :func:`index_nested_tar`); offsets are the file's. A tar that reaches ``end`` without an
    end-of-archive marker is complete too (``tarfile`` does not require the marker either).
    """
    index, offset, fd = {}, start, handle.fileno()
    while True:
        if end is not None and offset >= end:
            return index
        header = os.pread(fd, TAR_BLOCK, offset)
        if len(header) < TAR_BLOCK:
            return None
        if header.count(0) == TAR_BLOCK:  # end-of-archive marker
            return index
        if not _tar_checksum_ok(header):
            if offset == start:
                return None  # not a tar at all, or an unusual one: tarfile says which
            raise InvalidSourceData(f"{where}: the tar header at byte {offset} has a bad checksum (corrupted archive)")
        size = _octal(header[124:136])
        kind = header[156:157]
        if size is None or kind not in PLAIN_TAR_FILE_TYPES + PLAIN_TAR_SKIPPED_TYPES:
            return None
        if end is not None and offset + TAR_BLOCK + size > end:
            return None  # a member runs past the end: tarfile names the cut
        if kind in PLAIN_TAR_FILE_TYPES:
            name = header[:100].split(b"\0", 1)[0]
            if header[257:265] == USTAR_POSIX_MAGIC and header[345] != 0:
                name = header[345:500].split(b"\0", 1)[0] + b"/" + name
            _add_member(index, os.fsdecode(name).removeprefix("./"), (offset + TAR_BLOCK, size), where)
        offset += TAR_BLOCK + -(-size // TAR_BLOCK) * TAR_BLOCK


def index_nested_tar(path: str | Path, outer: TarIndex | None = None) -> TarIndex:
    """One index of the tars stored in a plain tar (``ILSVRC2012_img_train.tar``: a tar per class), never extracted.

    Every member of ``outer`` (default: :func:`index_tar` of ``path``) whose name ends in ``.tar`` is
    replaced by its own members, named ``<inner tar>/<member>`` (``n01440764.tar/n01440764_10026.JPEG``)
    with their offsets in ``path``; other members are kept. The result is a plain :class:`TarIndex`:
    ``open_archive(path, index)`` reads each member with one seek. Pass ``outer.subset(names)`` to index
    only some inner tars (a worker that reads a few classes scans only their headers). InvalidSourceData
    names the inner tar when it is not a readable tar, is cut off, or holds a name twice; a compressed
    outer tar is refused (its inner tars have no offsets in the file).

    Example:
        A tar holding ``a.tar`` (with ``x.JPEG``) and ``notes.txt``:

        >>> import io, pathlib, tarfile, tempfile
        >>> def tar_bytes(members):
        ...     buffer = io.BytesIO()
        ...     with tarfile.open(fileobj=buffer, mode="w") as tar:
        ...         for name, data in members.items():
        ...             info = tarfile.TarInfo(name)
        ...             info.size = len(data)
        ...             tar.addfile(info, io.BytesIO(data))
        ...     return buffer.getvalue()
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "outer.tar"
        >>> _ = path.write_bytes(tar_bytes({"a.tar": tar_bytes({"x.JPEG": b"jpeg"}), "notes.txt": b"hi"}))
        >>> index = index_nested_tar(path)
        >>> index.names()
        ['a.tar/x.JPEG', 'notes.txt']
        >>> with open_archive(path, index) as archive:
        ...     archive.read("a.tar/x.JPEG")
        b'jpeg'
    """
    path = Path(path)
    outer = index_tar(path) if outer is None else outer
    if outer.compression:
        raise InvalidSourceData(
            f"{path}: a {outer.compression}-compressed tar; tars stored in it can only be read from a plain tar"
        )
    members: dict[str, tuple[int, int]] = {}
    with open(path, "rb") as handle:
        for name, (start, size) in outer.members.items():
            if not name.endswith(".tar"):
                _add_member(members, name, (start, size), path)
                continue
            where = f"{path}:{name}"
            inner = plain_tar_index(handle, where, start, start + size)
            if inner is None:
                inner = _tarfile_index(where, _Window(handle, start, size), start)
            for inner_name, entry in inner.items():
                _add_member(members, f"{name}/{inner_name}", entry, where)
    return TarIndex(path, "", members)


class _Window(io.RawIOBase):
    """Bytes ``start .. start+size`` of an open file, as a seekable file of their own (for ``tarfile``)."""

    def __init__(self, handle, start: int, size: int):
        self._fd, self._start, self.size, self._position = handle.fileno(), start, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        count = max(0, min(len(buffer), self.size - self._position))
        data = os.pread(self._fd, count, self._start + self._position)
        buffer[: len(data)] = data
        self._position += len(data)
        return len(data)

    def seek(self, position: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._position, 2: self.size}[whence]
        self._position = base + position
        return self._position

    def tell(self) -> int:
        return self._position


def _add_member(index: dict[str, tuple[int, int]], name: str, entry: tuple[int, int], where) -> None:
    """Add a tar member ``(data offset, size)``; InvalidSourceData naming both copies of a repeated name."""
    if name in index:
        raise InvalidSourceData(
            f"{where}: member {name!r} appears twice (data at byte {index[name][0]} and at byte "
            f"{entry[0]}); refusing to pick one"
        )
    index[name] = entry


def _tar_checksum_ok(header: bytes) -> bool:
    stored = _octal(header[148:156])
    return stored is not None and stored == sum(header) - sum(header[148:156]) + 8 * 0x20  # the field counts as spaces


def _octal(field: bytes) -> int | None:
    digits = field.split(b"\0", 1)[0].strip()
    try:
        return int(digits, 8) if digits else None
    except ValueError:
        return None


# -- tars: reading -------------------------------------------------------------------------------------


class TarArchive(Archive):
    """A tar read through its :class:`TarIndex`: by offset in the file (plain) or in the decompressed
    stream (compressed; one forward pass per :meth:`read_members` call)."""

    def __init__(self, index: TarIndex):
        self.path = index.path
        self._index = index
        self._handle = None  # plain tars: the open file, once something is read

    def names(self) -> list[str]:
        return self._index.names()

    def index(self) -> TarIndex:
        return self._index

    def read(self, name: str) -> bytes:
        for _, data in self.read_members([name]):
            return data
        raise self._missing(name)  # pragma: no cover (read_members raises first)

    def read_head(self, name: str, size: int) -> bytes:
        offset, length = self._entry(name)
        if self._index.compression:
            return self.read(name)[:size]
        return self._read_plain(name, offset, min(size, length), length)

    def read_members(self, names: Iterable[str]) -> Iterator[tuple[str, bytes]]:
        names = list(names)
        entries = [(name, self._entry(name)) for name in names]
        if not self._index.compression:
            for name, (offset, size) in entries:
                yield name, self._read_plain(name, offset, size, size)
            return
        yield from self._read_stream(entries)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def _entry(self, name: str) -> tuple[int, int]:
        try:
            return self._index.members[name]
        except KeyError as err:
            raise self._missing(name) from err

    def _read_plain(self, name: str, offset: int, count: int, size: int) -> bytes:
        if self._handle is None:
            self._handle = open(self.path, "rb")  # noqa: SIM115 -- kept open for random access, closed by close()
        self._handle.seek(offset)
        data = self._handle.read(count)
        if len(data) != count:
            raise self._truncated(name, len(data), size)
        return data

    def _read_stream(self, entries: list[tuple[str, tuple[int, int]]]) -> Iterator[tuple[str, bytes]]:
        """Members of a compressed tar in the order asked: one pass in offset order, buffering those
        read before their turn (none when the order asked is the archive order)."""
        uses = Counter(name for name, _ in entries)  # a member may be asked for more than once
        found: dict[str, bytes] = {}
        position = 0
        try:
            with COMPRESSIONS[self._index.compression][1](self.path, "rb") as stream:
                for name, (offset, size) in sorted(set(entries), key=lambda entry: entry[1][0]):
                    stream.seek(offset)
                    found[name] = stream.read(size)
                    if len(found[name]) != size:
                        raise self._truncated(name, len(found[name]), size)
                    while position < len(entries) and entries[position][0] in found:
                        name = entries[position][0]
                        uses[name] -= 1
                        yield name, found[name] if uses[name] else found.pop(name)
                        position += 1
        except STREAM_ERRORS as err:
            raise InvalidSourceData(f"{self.path}: archive is corrupt or truncated ({err})") from err

    def _truncated(self, name: str, got: int, size: int) -> InvalidSourceData:
        return InvalidSourceData(
            f"{self.path}: member {name!r} is truncated ({got} of {size} bytes; the archive is incomplete)"
        )
