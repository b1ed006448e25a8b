"""Files on disk: content hashes, folder listings, and durable atomic replacement.

One place for three jobs every part of imagenet-suite needs:

* **hashing** — :func:`file_digests` (one pass, several algorithms on parallel threads),
  :func:`sha256_file`, and :func:`folder_listing` / :func:`folder_content_sha256` for folders used
  as sources (every file's bytes, not just names and sizes);
* **remembered hashes** — :func:`cached_sha256` hashes a file once and remembers the result
  against the file's stat (device, inode, size, mtime and ctime in ns, as git's index does), so a
  reader re-hashes only a file that changed since its last full hash;
* **listing a folder safely** — :func:`list_folder` walks a folder in a stable order and refuses a
  symlink whose target leaves the folder (a source folder holds its own files); :func:`check_inside`
  applies the same rule to files a release's own list names;
* **reading text** — :func:`decode_text` / :func:`read_text`: every text file a builder reads (CSV,
  TXT lists, JSON) is UTF-8, and a byte that is not is one error naming ``file:line``;
* **durable atomic writes** — :func:`replace_durably` fsyncs the new file, renames it over the
  final name and fsyncs the folder, so that after a crash or power loss the final name holds
  either the old or the complete new bytes; :func:`atomic_write_bytes` writes bytes that way.
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import sqlite3
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .errors import ImagenetSuiteError, InvalidSourceData, SourceError

CHUNK = 1 << 20
INCOMPLETE = ".incomplete"  # suffix of a file being written, before it is renamed to its final name


# -- hashing ---------------------------------------------------------------------------------------


def file_digests(path: str | Path, algorithms: Iterable[str] = ("sha256",), progress: bool = True) -> dict[str, str]:
    """Hex digests of a file in one pass over it (progress bar on stderr for files over 256 MiB).

    With several algorithms each runs on its own thread: hashlib releases the GIL, so md5 + sha256
    cost the slower of the two, not their sum.
    """
    path = Path(path)
    from tqdm.auto import tqdm

    hashers = {name: hashlib.new(name) for name in algorithms}
    size = path.stat().st_size
    bar = tqdm(
        total=size,
        unit="B",
        unit_scale=True,
        desc=f"hashing {path.name}",
        disable=not progress or size < 256 * CHUNK,
        leave=False,
    )
    with open(path, "rb") as handle, bar:
        if len(hashers) == 1:
            hasher = next(iter(hashers.values()))
            while chunk := handle.read(8 * CHUNK):
                hasher.update(chunk)
                bar.update(len(chunk))
        else:
            with ThreadPoolExecutor(max_workers=len(hashers)) as pool:
                while chunk := handle.read(8 * CHUNK):
                    list(pool.map(lambda hasher: hasher.update(chunk), hashers.values()))  # waited for here
                    bar.update(len(chunk))
    return {name: hasher.hexdigest() for name, hasher in hashers.items()}


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file's bytes (hashed from a memory map: no copy of the data)."""
    with open(path, "rb") as handle:
        if os.fstat(handle.fileno()).st_size == 0:
            return hashlib.sha256().hexdigest()
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            return hashlib.sha256(mapped).hexdigest()


# -- remembered hashes -----------------------------------------------------------------------------

HASH_CACHE_ENV = "IMAGENET_SUITE_HASH_CACHE"
RACY_NS = 2_000_000_000  # a file changed this recently may change again within one timestamp tick
LOCK_WAIT_S = 0  # how long a lookup waits for a hash cache another process holds locked: not at all


def hash_cache_path() -> Path:
    """Where :func:`cached_sha256` remembers hashes: ``$IMAGENET_SUITE_HASH_CACHE``, else
    ``file-hashes.sqlite`` in the user cache dir (``~/.cache/imagenet-suite`` on Linux)."""
    env = os.environ.get(HASH_CACHE_ENV)
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("imagenet-suite")) / "file-hashes.sqlite"


def file_stamp(stat: os.stat_result) -> tuple[int, int, int, int, int]:
    """What identifies one version of a file without reading it: device, inode, size, mtime_ns, ctime_ns.

    Rewriting a file changes mtime and ctime; restoring the mtime (``touch -d``) still changes the
    ctime, and replacing it by a rename changes the inode.
    """
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def cached_sha256(path: str | Path, expected: str | None = None) -> str:
    """Hex sha256 of a file, hashed only if it changed since the last hash remembered for it.

    The result is remembered in :func:`hash_cache_path` (SQLite, safe for concurrent processes)
    against :func:`file_stamp`. As in git's index, a file whose mtime or ctime is under 2 s old when
    it is hashed is not remembered ("racily clean": a change within the same timestamp tick would
    not show in its stat), nor is one whose stat changed while it was hashed.

    The cache is advisory: it can save a hash, never fail a file. ``expected``: the sha256 the caller
    will compare with; a remembered hash that differs from it is not believed (a stale or edited row):
    the file is hashed afresh, and its row replaced. A cache that cannot be opened or written
    (read-only home, full disk), or that another process holds locked, only costs the hash: the
    lookup gives up at once (no waiting on the lock) and the file is read.

    Example:
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "x.bin"
        >>> _ = path.write_bytes(b"abc")
        >>> cached_sha256(path)[:16]
        'ba7816bf8f01cfea'
    """
    path = Path(path).resolve()
    before = file_stamp(os.stat(path))
    remembered = _HASH_CACHE.get(str(path), before)
    if remembered is not None and (expected is None or remembered == expected):
        return remembered
    started = time.time_ns()
    digest = sha256_file(path)
    after = file_stamp(os.stat(path))
    if after == before and started - max(before[3], before[4]) >= RACY_NS:
        _HASH_CACHE.put(str(path), before, digest)
    return digest


class _HashCache:
    """The SQLite table behind :func:`cached_sha256`: path -> (stamp, sha256); failures degrade to misses.

    A locked database is not waited for (busy timeout 0): a lookup or a write that finds it locked is
    a miss, and any transaction it opened is rolled back, so that no lock of ours outlives the call.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._opened_at: Path | None = None
        self._pid: int | None = None

    def get(self, path: str, stamp: tuple[int, ...]) -> str | None:
        row = self._query("SELECT stamp, sha256 FROM hashes WHERE path = ?", (path,))
        if row and row[0] == _stamp_text(stamp):
            return row[1]
        return None

    def put(self, path: str, stamp: tuple[int, ...], digest: str) -> None:
        self._query("INSERT OR REPLACE INTO hashes VALUES (?, ?, ?)", (path, _stamp_text(stamp), digest), commit=True)

    def _query(self, sql: str, args: tuple, commit: bool = False):
        with self._lock:
            connection = None
            try:
                connection = self._connect()
                if connection is None:
                    return None
                row = connection.execute(sql, args).fetchone()
                if commit:
                    connection.commit()
                return row
            except sqlite3.Error:
                if connection is not None:
                    with contextlib.suppress(sqlite3.Error):
                        connection.rollback()
                return None

    def _connect(self) -> sqlite3.Connection | None:
        where = hash_cache_path()
        if self._connection is not None and self._opened_at == where and self._pid == os.getpid():
            return self._connection
        self._opened_at, self._pid, self._connection = where, os.getpid(), None
        connection = None
        try:
            where.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(where, timeout=LOCK_WAIT_S, check_same_thread=False)
            connection.execute("CREATE TABLE IF NOT EXISTS hashes (path TEXT PRIMARY KEY, stamp TEXT, sha256 TEXT)")
            connection.commit()
        except (OSError, sqlite3.Error):
            if connection is not None:
                with contextlib.suppress(sqlite3.Error):
                    connection.close()
            return None
        self._connection = connection
        return connection


def _stamp_text(stamp: tuple[int, ...]) -> str:
    return ":".join(map(str, stamp))


_HASH_CACHE = _HashCache()


# -- folders ---------------------------------------------------------------------------------------


def list_folder(root: str | Path) -> list[str]:
    """Relative POSIX paths of the regular files below ``root``, sorted as a walk visits them
    (each folder's files by name, then its sub-folders by name).

    Symlinks are followed only while they stay inside ``root`` (compared by real path); one that
    leads outside raises SourceError naming the link and its target. Symlink cycles are visited once.
    """
    real_root = os.path.realpath(root)
    found: list[str] = []
    _list_into(found, os.fspath(root), "", real_root, os.fspath(root), {real_root})
    return found


def _list_into(found: list[str], folder: str, prefix: str, real_root: str, root: str, visited: set[str]) -> None:
    with os.scandir(folder) as entries:
        entries = sorted(entries, key=lambda entry: entry.name)
    folders = []
    for entry in entries:
        if entry.is_symlink():
            real = os.path.realpath(entry.path)
            _refuse_escape(root, real_root, entry.path, real)
            if os.path.isdir(real):
                if real not in visited:
                    visited.add(real)
                    folders.append(entry)
            elif os.path.isfile(real):
                found.append(prefix + entry.name)
        elif entry.is_dir(follow_symlinks=False):
            visited.add(os.path.realpath(entry.path))
            folders.append(entry)
        elif entry.is_file(follow_symlinks=False):
            found.append(prefix + entry.name)
    for entry in folders:
        _list_into(found, entry.path, f"{prefix}{entry.name}/", real_root, root, visited)


def check_inside(root: str | Path, files: Iterable[str], checked: set[str] | None = None) -> None:
    """SourceError if one of ``files`` (relative POSIX paths below ``root``) is a symlink, or lies in a
    folder reached through one, whose target is outside ``root`` — :func:`list_folder`'s rule, for files
    named by a release's own list (or read one by one) instead of found by a walk.

    Costs an ``lstat`` per file and a real path per distinct folder; ``checked``: folders already
    found inside ``root`` (kept by a caller that checks file after file, e.g. an archive reader).

    Example:
        >>> import os, pathlib, tempfile
        >>> base = pathlib.Path(tempfile.mkdtemp())
        >>> (base / "release").mkdir()
        >>> _ = (base / "release" / "a.jpg").write_bytes(b"a")
        >>> _ = (base / "elsewhere.jpg").write_bytes(b"b")
        >>> os.symlink(base / "elsewhere.jpg", base / "release" / "b.jpg")
        >>> check_inside(base / "release", ["a.jpg"])
        >>> check_inside(base / "release", ["a.jpg", "b.jpg"])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        imagenet_suite.errors.SourceError: .../release/b.jpg is a symlink to .../elsewhere.jpg, outside .../release: ...
    """
    root = os.fspath(root)
    real_root = os.path.realpath(root)
    checked = set() if checked is None else checked
    for rel in files:
        path = os.path.join(root, rel)
        folder = os.path.dirname(path)
        if folder not in checked:
            real = os.path.realpath(folder)
            if real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep):
                raise SourceError(
                    f"{folder} leads to {real}, outside {root}: symlinks leaving a source "
                    "folder are refused (a source folder must hold the files it is built from); copy the "
                    "files there, or point the option at the folder that holds them"
                )
            checked.add(folder)
        if os.path.islink(path):
            _refuse_escape(root, real_root, path, os.path.realpath(path))


def inside(path: str | Path, folder: str | Path) -> bool:
    """Whether the real path of ``path`` lies in the real path of ``folder`` (or is it)."""
    real, real_folder = os.path.realpath(path), os.path.realpath(folder)
    return real == real_folder or real.startswith(real_folder.rstrip(os.sep) + os.sep)


def _refuse_escape(root: str, real_root: str, path: str, real: str) -> None:
    if real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep):
        raise SourceError(
            f"{path} is a symlink to {real}, outside {root}: symlinks leaving a source folder are "
            "refused (a source folder must hold the files it is built from); copy the file there, "
            "or point the option at the folder that holds it"
        )


def folder_listing(root: str | Path, files: Iterable[str]) -> tuple[str, int]:
    """``(sha256 of the sorted 'path<TAB>size' lines, total bytes)`` of ``files`` under ``root``.

    Cheap (no file is read): it identifies a folder's layout for planning, not its content.
    """
    root = os.fspath(root)
    digest, total = hashlib.sha256(), 0
    for rel in sorted(files):
        size = os.stat(os.path.join(root, rel)).st_size
        digest.update(f"{rel}\t{size}\n".encode())
        total += size
    return digest.hexdigest(), total


def folder_content_sha256(root: str | Path, files: Iterable[str], progress: bool = False) -> str:
    """sha256 of the sorted ``'path<TAB>sha256 of the file'`` lines of ``files`` under ``root``.

    A change to any byte of any listed file, or to the list, changes the result.
    """
    return folder_digests(root, files, progress)[0]


def folder_digests(root: str | Path, files: Iterable[str], progress: bool = False) -> tuple[str, str]:
    """``(folder_content_sha256, folder_listing's sha256)`` of ``files`` under ``root``, in one read of
    each file; the listing comes from the bytes read, so comparing it with one taken before shows
    whether a file changed size meanwhile."""
    root = os.fspath(root)
    files = sorted(files)
    content, listing = hashlib.sha256(), hashlib.sha256()
    with _bar(
        total=len(files),
        unit="file",
        desc=f"hashing {os.path.basename(root)}/",
        leave=False,
        disable=not progress or len(files) < 1000,
    ) as bar:
        for rel in files:
            file_hash, size = hashlib.sha256(), 0
            with open(os.path.join(root, rel), "rb") as handle:
                while chunk := handle.read(8 * CHUNK):
                    file_hash.update(chunk)
                    size += len(chunk)
            content.update(f"{rel}\t{file_hash.hexdigest()}\n".encode())
            listing.update(f"{rel}\t{size}\n".encode())
            bar.update()
    return content.hexdigest(), listing.hexdigest()


def _bar(disable: bool, **options):
    """A tqdm progress bar, imported only when shown (the folder-hashing child process starts faster)."""
    if disable:
        return contextlib.nullcontext(_NoBar())
    from tqdm.auto import tqdm

    return tqdm(**options)


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass


# -- text ------------------------------------------------------------------------------------------

UTF8_BOM = b"\xef\xbb\xbf"


def decode_text(
    data: bytes, where: str, expected: str = "text", error: type[ImagenetSuiteError] = InvalidSourceData
) -> str:
    """``data`` decoded as UTF-8 (a leading byte-order mark dropped, as spreadsheet programs write one).

    A byte that is not UTF-8 raises ``error``, one line naming ``where:<line>`` (the line of the first
    bad byte, counted from 1), the byte and its column, and ``expected`` (what the file should hold).
    Newlines are kept as they are (``csv`` needs them; ``str.splitlines`` reads any).

    Example:
        >>> decode_text("n01440764 tench\\n".encode(), "wnids.txt")
        'n01440764 tench\\n'
        >>> decode_text(b"\\xef\\xbb\\xbfid,label\\n", "labels.csv")
        'id,label\\n'
        >>> decode_text(b"a.jpg 0\\nb\\xe9.jpg 1\\n", "list.txt", "an image list")
        Traceback (most recent call last):
        ...
        imagenet_suite.errors.InvalidSourceData: list.txt:2: byte 0xe9 at column 2 is not UTF-8; expected an image list, UTF-8 encoded
    """
    body = data[len(UTF8_BOM) :] if data.startswith(UTF8_BOM) else data
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as err:
        line = body.count(b"\n", 0, err.start) + 1
        column = err.start - body.rfind(b"\n", 0, err.start)
        raise error(
            f"{where}:{line}: byte 0x{body[err.start]:02x} at column {column} is not UTF-8; "
            f"expected {expected}, UTF-8 encoded"
        ) from err


def read_text(path: str | Path, expected: str = "text", error: type[ImagenetSuiteError] = InvalidSourceData) -> str:
    """The text of the file at ``path``: :func:`decode_text` of its bytes, naming ``path`` (OSError as raised)."""
    return decode_text(Path(path).read_bytes(), str(path), expected, error)


# -- durable writes --------------------------------------------------------------------------------


def incomplete_path(path: str | Path) -> Path:
    """Where ``path`` is written before it is renamed to its final name."""
    path = Path(path)
    return path.with_name(path.name + INCOMPLETE)


def fsync_file(path: str | Path) -> None:
    """Flush a written file's data and metadata to stable storage."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: str | Path) -> None:
    """Flush a folder's entries (a rename inside it) to stable storage."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_durably(tmp: str | Path, final: str | Path) -> None:
    """fsync ``tmp``, rename it to ``final`` (atomic on POSIX), then fsync the folder."""
    fsync_file(tmp)
    os.replace(tmp, final)
    fsync_dir(Path(final).parent)


def atomic_write_bytes(path: str | Path, data: bytes, *, durable: bool = True, shared: bool = False) -> None:
    """Write ``data`` to ``path`` so that a reader sees the old file or the new one, never a mix.

    The bytes go to ``path.incomplete``, which is removed again if writing fails (disk full), then
    are renamed to ``path``. ``durable``: fsync the data before the rename, so that a crash of the
    machine also leaves the old or the new file (False for caches that are rebuilt when lost).
    ``shared``: several processes or threads may write ``path`` at once (a cache filled in parallel);
    each then writes its own ``path.<pid>.<thread>.incomplete`` and the last rename wins.
    An OSError that names no file (a write or fsync failing: disk full) is raised again naming ``path``.
    """
    path = Path(path)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}{INCOMPLETE}") if shared else None
    tmp = tmp or incomplete_path(path)
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        if err.filename is None and err.errno is not None:
            raise OSError(err.errno, err.strerror or str(err), str(path)) from err
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(path.parent)


def write_problem(path: str | Path, *, folder: bool = False) -> str | None:
    """Why nothing can be written at ``path`` — a file, or with ``folder`` a folder made if absent — or None when
    it can: the nearest folder on the way to it that exists (the folder itself, if it does) is a file, or one
    this process may not write in. Nothing is created; whether ``path`` itself is of the right kind (a file
    where a folder is expected, ...) is the caller's to say.

    Example:
        >>> import pathlib, tempfile
        >>> from imagenet_suite.files import write_problem
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (root / "a-file").write_text("")
        >>> write_problem(root / "new" / "out.pt") is None, write_problem(root, folder=True) is None
        (True, True)
        >>> write_problem(root / "a-file" / "store", folder=True) == f"{root / 'a-file'} is a file, not a folder"
        True
    """
    target = Path(path).absolute()
    nearest = target if folder and target.is_dir() else target.parent
    while not nearest.exists() and nearest != nearest.parent:
        nearest = nearest.parent
    if not nearest.is_dir():
        return f"{nearest} is a file, not a folder"
    if not os.access(nearest, os.W_OK | os.X_OK):
        return f"the folder {nearest} is not writable"
    return None


def _hash_folder_main() -> None:
    """``python -m imagenet_suite.files``: read ``{"root", "files", "progress"}`` (JSON) from stdin and
    print ``{"content": ..., "listing": ...}`` (:func:`folder_digests`) or ``{"error": ...}`` as JSON
    on stdout; a progress bar goes to stderr. Used by :mod:`imagenet_suite.core.sources` to hash big
    folders in a process of their own."""
    import json
    import sys

    request = json.load(sys.stdin)
    try:
        content, listing = folder_digests(request["root"], request["files"], progress=request.get("progress", False))
    except OSError as err:
        print(json.dumps({"error": f"{err.filename}: {err.strerror}"}))
        raise SystemExit(2) from err
    print(json.dumps({"content": content, "listing": listing}))


if __name__ == "__main__":
    _hash_folder_main()


__all__ = [
    "INCOMPLETE",
    "atomic_write_bytes",
    "cached_sha256",
    "check_inside",
    "decode_text",
    "file_digests",
    "file_stamp",
    "folder_content_sha256",
    "folder_digests",
    "folder_listing",
    "fsync_dir",
    "fsync_file",
    "hash_cache_path",
    "incomplete_path",
    "inside",
    "list_folder",
    "read_text",
    "replace_durably",
    "sha256_file",
    "write_problem",
]
