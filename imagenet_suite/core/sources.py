"""Sources: the raw files a builder reads, pinned by size and hash, and where they come from.

A :class:`Source` is either a public URL (downloaded into the cache, resumably) or a gated file
the user must supply (looked up in ``--manual-dir``). Either may also have local copies shipped
by a maintained library (e.g. timm's copy of ``real.json``) that are used when they match the pin.

Resolution order for a source: manual dir → download cache → verified local copy → download
(unless offline). Every file is checked against its pins (size, sha256, and md5 where that is
the only public hash) before it is used; the sha256 of every file used is recorded. A download
or cache entry that fails its pins is moved aside (``<file>.rejected``) and the error says so:
the next run downloads it again, and a verified local copy is tried first. A folder used as a
source (an extracted release, an image folder) is fingerprinted by the sha256 of every file in
it, computed while the build works (:meth:`SourceResolver.resolve_folder`).

Environment:
  ``IMAGENET_SUITE_CACHE``    download cache (default: the user cache dir, ``imagenet-suite/downloads``)
  ``IMAGENET_SUITE_OFFLINE``  ``1`` to never touch the network (also ``HF_HUB_OFFLINE=1``)
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from ..errors import ChecksumMismatch, ManualFileMissing, SourceError, param
from ..files import (
    CHUNK,
    check_inside,
    file_digests,
    folder_digests,
    folder_listing,
    inside,
    list_folder,
    read_text,
    replace_durably,
    sha256_file,
)

T = TypeVar("T")

HEX_DIGITS = {"sha256": 64, "md5": 32}
HEX = {name: re.compile(f"^[0-9a-f]{{{digits}}}$") for name, digits in HEX_DIGITS.items()}
REJECTED = ".rejected"  # suffix of a cached file moved aside because it failed its pins
_LOG = logging.getLogger(__name__)
PROCESS_HASHING_MIN_FILES = 1000  # folders with more files are hashed in a process of their own
_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # where `imagenet_suite` is importable


@dataclass(frozen=True)
class Source:
    """One raw input file of a builder.

    Attributes:
        name: key of the source within its builder (``"val_tar"``).
        filename: the exact file name expected on disk (``"ILSVRC2012_img_val.tar"``).
        url: public download URL; None for gated files the user must supply.
        size: pinned size in bytes, or None if unknown (then recorded at first build).
        sha256: pinned sha256 (hex), or None if unknown.
        md5: pinned md5 for files whose only published hash is md5 (e.g. the ImageNet tars).
        instructions: how a user obtains the file (shown when it is missing).
        local_copies: callables returning candidate local paths (e.g. a copy a library ships);
            used only when the copy matches the pins.
    """

    name: str
    filename: str
    url: str | None = None
    size: int | None = None
    sha256: str | None = None
    md5: str | None = None
    instructions: str = ""
    local_copies: tuple[Callable[[], Path | None], ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        for algorithm in ("sha256", "md5"):
            value = getattr(self, algorithm)
            if value is not None and not HEX[algorithm].match(value.lower()):
                raise ValueError(
                    f"source {self.filename}: {algorithm} pin {value!r} is not {HEX_DIGITS[algorithm]} hex digits"
                )

    @property
    def manual(self) -> bool:
        return self.url is None

    def describe(self) -> str:
        pins = ", ".join(f"{k} {v}" for k, v in (("size", self.size), ("sha256", self.sha256), ("md5", self.md5)) if v)
        where = self.url or "manual file (gated): put it in --manual-dir"
        return f"{self.filename} [{where}] ({pins or 'no pinned hash: recorded at first build'})"


@dataclass(frozen=True)
class ResolvedSource:
    """A source found on disk and verified: its path, size in bytes and content sha256.

    For a folder (:meth:`SourceResolver.resolve_folder`) ``sha256`` covers every file's bytes and is
    None while it is still being computed (:meth:`SourceResolver.settle` fills it in); ``listing``
    (sha256 of the sorted path/size lines) is known at once.
    """

    name: str
    path: Path
    size: int
    sha256: str | None
    listing: str | None = None

    @property
    def identity(self) -> str:
        """What a build plan depends on, known when planning: the listing of a folder, else the sha256."""
        return self.listing or self.sha256

    def record(self) -> dict:
        record = {"file": self.path.name, "size": self.size, "sha256": self.sha256}
        if self.listing is not None:
            record["kind"] = "folder"
        return record


def default_cache_dir() -> Path:
    import platformdirs

    env = os.environ.get("IMAGENET_SUITE_CACHE")
    return Path(env) if env else Path(platformdirs.user_cache_dir("imagenet-suite")) / "downloads"


def offline_by_default() -> bool:
    return any(
        os.environ.get(var, "").lower() in ("1", "true", "yes") for var in ("IMAGENET_SUITE_OFFLINE", "HF_HUB_OFFLINE")
    )


def read_pins_file(path: str | Path) -> dict[str, dict]:
    """Read a TFDS-style ``checksums.tsv`` (``<file name or url>\t<size>\t<sha256>``) of pin overrides.

    SourceError names the file (and line) when it is missing, unreadable or malformed: a size that
    is not a number, a sha256 that is not 64 hex digits, a file pinned twice.
    """
    expected = "a checksums.tsv (file, size, sha256 per line)"
    try:
        rows = list(csv.reader(io.StringIO(read_text(path, expected, SourceError), newline=""), delimiter="\t"))
    except FileNotFoundError as err:
        raise SourceError(f"{param('pins')} {path}: no such file (expected {expected})") from err
    except (OSError, csv.Error) as err:
        raise SourceError(f"{param('pins')} {path}: cannot be read as {expected} ({err})") from err
    pins: dict[str, dict] = {}
    for line_no, row in enumerate(rows, start=1):
        if not row or row[0].startswith("#"):
            continue
        if len(row) != 3 or not row[1].isdigit() or not HEX["sha256"].match(row[2].lower()):
            raise SourceError(
                f"{path}:{line_no}: expected '<file>\\t<size in bytes>\\t<sha256, 64 hex digits>', got {row!r}"
            )
        name = Path(row[0]).name
        if name in pins:
            raise SourceError(f"{path}:{line_no}: {name} is pinned twice")
        pins[name] = {"size": int(row[1]), "sha256": row[2].lower()}
    return pins


class SourceResolver:
    """Finds, downloads and verifies a builder's sources.

    Args:
        manual_dir: folder holding gated files (and optionally any other source file). A symlink
            in it that leads outside it is refused.
        cache_dir: download cache; defaults to :func:`default_cache_dir`.
        offline: never download; defaults to ``IMAGENET_SUITE_OFFLINE`` / ``HF_HUB_OFFLINE``.
        pins: per-file-name overrides of the pinned ``size``/``sha256`` (from a checksums.tsv),
            for mirrors, re-packed archives and test fixtures. They replace the builder's pins.
        defer_verification: hash files with a pinned sha256, and folders, in background threads,
            so that work on them overlaps the hashing; the caller must call :meth:`wait_verified`
            before it publishes anything derived from a pinned file, and :meth:`settle` for the
            content hash of a folder (``build_dataset`` does both). Sizes are still checked at once,
            and files without a sha256 pin are hashed at once (their sha256 is not known before).
    """

    def __init__(
        self,
        manual_dir: str | Path | None = None,
        cache_dir: str | Path | None = None,
        offline: bool | None = None,
        pins: dict[str, dict] | None = None,
        progress: bool = True,
        inputs: Iterable[str | Path] = (),
        defer_verification: bool = False,
    ):
        self.manual_dir = Path(manual_dir) if manual_dir else None
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
        self.offline = offline_by_default() if offline is None else offline
        self.pins = pins or {}
        self.progress = progress
        self.inputs = [Path(p) for p in inputs]
        self.defer_verification = defer_verification
        self._verified: dict[tuple, str] = {}  # (path, size, mtime, md5 wanted) or (folder, listing) -> sha256
        self._pending: dict[tuple, Future] = {}  # verifications running in the background

    # -- public -----------------------------------------------------------------------------
    def find_manual(self, filename: str) -> Path | None:
        """Path of ``filename`` in the manual dir, or None; SourceError if it is a symlink leading outside."""
        if self.manual_dir is None:
            return None
        candidate = self.manual_dir / filename
        if not os.path.lexists(candidate):
            return None
        if not inside(candidate, self.manual_dir):
            raise SourceError(
                f"{candidate} leads to {os.path.realpath(candidate)}, outside {param('manual_dir')} {self.manual_dir}: "
                "symlinks leaving the manual folder are refused; put the file itself there, or pass the "
                f"folder that holds it as {param('manual_dir')}"
            )
        return candidate if candidate.exists() else None

    def resolve(self, source: Source) -> ResolvedSource:
        """Return the verified local file of ``source``, downloading it if needed."""
        source = self._with_pin_overrides(source)
        return self.verify(source, self._locate(source))

    def resolve_with(self, source: Source, read: Callable[[Path], T]) -> tuple[ResolvedSource, T]:
        """:meth:`resolve` ``source`` and return ``read(path)`` of its file, the two overlapped.

        The checksum is computed in a background thread (hashing and file reads release the GIL)
        while ``read`` runs here, e.g. scanning an archive's headers. ``read``'s result comes back
        only after the file is verified (with ``defer_verification``: after its verification is
        started); a checksum error wins over an error of ``read`` (a wrong file explains a failed read).
        """
        source = self._with_pin_overrides(source)
        path = self._locate(source)
        with ThreadPoolExecutor(max_workers=1) as pool:
            verified = pool.submit(self._verify, source, path, self.defer_verification)
            try:
                result = read(path)
            except Exception:
                verified.result()
                raise
            return verified.result(), result

    def resolve_folder(self, name: str, path: str | Path, files: Iterable[str] | None = None) -> ResolvedSource:
        """A folder as a source, fingerprinted by the bytes of every file in it.

        ``files``: the relative POSIX paths the builder reads (default: every file below ``path``,
        :func:`imagenet_suite.files.list_folder`); a symlink among them (or above them) that leads
        outside ``path`` is refused either way (SourceError naming it). The
        content sha256 (of the sorted ``path<TAB>sha256`` lines) is computed at once, or with
        ``defer_verification`` in the background: then the result's ``sha256`` is None until
        :meth:`settle`; its ``listing`` (names and sizes) is known at once.
        """
        path = Path(path)
        if files is None:
            files = list_folder(path)
        else:
            files = list(files)
            check_inside(path, files)
        files = sorted(files)
        listing, size = folder_listing(path, files)
        key = ("folder", os.path.realpath(path), listing)
        if key not in self._verified:
            if self.defer_verification:
                if key not in self._pending:
                    self._pending[key] = _in_background(self._hash_folder, key, path, files)
                return ResolvedSource(name, path, size, None, listing)
            self._hash_folder(key, path, files)
        return ResolvedSource(name, path, size, self._verified[key], listing)

    def settle(self, sources: dict[str, ResolvedSource]) -> dict[str, ResolvedSource]:
        """``sources`` with every folder's content sha256 filled in, waiting for its hashing."""
        settled = {}
        for name, source in sources.items():
            if source.sha256 is None and source.listing is not None:
                key = ("folder", os.path.realpath(source.path), source.listing)
                future = self._pending.get(key)
                if future is not None:
                    future.result()
                elif key not in self._verified:  # resolved elsewhere: hash it here
                    self._hash_folder(key, source.path, list_folder(source.path))
                source = replace(source, sha256=self._verified[key])
            settled[name] = source
        return settled

    def _hash_folder(self, key: tuple, path: Path, files: list[str]) -> str:
        if len(files) >= PROCESS_HASHING_MIN_FILES:
            digest, listing = _hash_folder_in_a_process(path, files, self.progress)
        else:
            digest, listing = folder_digests(path, files, progress=self.progress)
        if listing != key[2]:
            raise SourceError(
                f"{path}: files changed size while they were hashed; run the build again once the folder "
                "is no longer being written"
            )
        self._verified[key] = digest
        return digest

    def _locate(self, source: Source) -> Path:
        """The local file of ``source`` (manual dir, cache, a matching local copy, or a download)."""
        manual = self.find_manual(source.filename)
        if manual is not None:
            return manual
        cached = self._cache_path(source)
        if cached.exists() and self._usable_cache_entry(source, cached):
            return cached
        for find_copy in source.local_copies:
            copy = find_copy()
            if copy is not None and copy.exists() and self._matches(source, copy):
                return copy
        if source.manual:
            raise ManualFileMissing(self._missing_message(source))
        if self.offline:
            raise SourceError(
                f"{source.filename} is not in the cache ({cached}) and offline mode is on; "
                f"download {source.url} there or put the file in {param('manual_dir')}"
            )
        self._download(source, cached)
        return cached

    def _usable_cache_entry(self, source: Source, cached: Path) -> bool:
        """Whether a cached download may be used; a wrong one is moved aside (and said so on stderr).

        The size is always checked here. The hash is checked here too when the source has local
        copies to fall back on; otherwise it is checked by :meth:`verify` (in the background with
        ``defer_verification``), which moves a failing cache entry aside as well.
        """
        if source.size is not None and cached.stat().st_size != source.size:
            moved = _reject(cached)
            _LOG.warning(
                "%s: %d bytes, expected %d; moved aside to %s", cached, moved.stat().st_size, source.size, moved
            )
            return False
        if source.local_copies:
            return self._matches(source, cached)
        return True

    def input_dataset(self, builder: str | None, config: str | None = None, build_hint: str = ""):
        """A built imagenet-suite dataset given with ``--input``, verified; ``(DatasetFolder, ResolvedSource)``.

        ``builder`` None accepts a dataset of any builder (that has ``config`` if given). The
        source's sha256 is that of the folder's build_info.json, which pins every file in it.
        ManualFileMissing says which builder/config is needed and how to build it.
        """
        from ..dataset.folder import BUILD_INFO, DatasetFolder
        from ..dataset.verify import verify_folder

        for path in self.inputs:
            folder = DatasetFolder(path)
            if builder in (None, folder.name) and (config is None or config in folder.configs):
                key = (str(path.resolve()), (path / BUILD_INFO).stat().st_mtime_ns)
                if key not in self._verified:
                    self._verified[key] = verify_folder(path, remembered=True).build_info_sha256
                size = sum(
                    meta["size"] for info in folder.build_info["configs"].values() for meta in info["files"].values()
                )
                return folder, ResolvedSource(f"{folder.name}_dataset", path, size, self._verified[key])
        wanted = (builder or "imagenet-suite") + (f" (config {config!r})" if config else "")
        given = ", ".join(str(p) for p in self.inputs) or "none"
        raise ManualFileMissing(
            f"this build needs a built {wanted} dataset: pass its folder as {param('inputs')} "
            f"(given: {given}). {build_hint}".strip()
        )

    def verify(self, source: Source, path: Path) -> ResolvedSource:
        """Check ``path`` against the pins of ``source``; ChecksumMismatch names the file and both values.

        With ``defer_verification`` and a pinned sha256, only the size is checked here; the hash
        is checked in the background (see :meth:`wait_verified`).
        """
        return self._verify(source, path, background=self.defer_verification)

    def wait_verified(self) -> None:
        """Wait for the background verifications and folder hashes; raise the first failure."""
        for key, future in list(self._pending.items()):
            future.result()
            self._pending.pop(key, None)

    def _verify(self, source: Source, path: Path, background: bool) -> ResolvedSource:
        source = self._with_pin_overrides(source)
        stat = path.stat()
        if source.size is not None and stat.st_size != source.size:
            raise ChecksumMismatch(
                f"{path}: size is {stat.st_size} bytes, expected {source.size} for {source.filename} "
                f"(incomplete or different file){self._moved_aside_note(path)}"
            )
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, source.md5 is not None)
        if background and source.sha256 and key not in self._verified:
            if key not in self._pending:
                self._pending[key] = _in_background(self._check_digests, source, path, key)
            return ResolvedSource(source.name, path, stat.st_size, source.sha256.lower())
        return ResolvedSource(source.name, path, stat.st_size, self._check_digests(source, path, key))

    def _check_digests(self, source: Source, path: Path, key: tuple) -> str:
        """The file's sha256, after checking it (and the md5, if pinned) against the pins."""
        if key not in self._verified:
            algorithms = ["sha256"] + (["md5"] if source.md5 else [])
            digests = file_digests(path, algorithms, progress=self.progress)
            if source.md5 and digests["md5"] != source.md5:
                raise ChecksumMismatch(
                    f"{path}: md5 is {digests['md5']}, expected {source.md5} for {source.filename}"
                    f"{self._moved_aside_note(path)}"
                )
            self._verified[key] = digests["sha256"]
        sha256 = self._verified[key]
        if source.sha256 and sha256 != source.sha256.lower():
            raise ChecksumMismatch(
                f"{path}: sha256 is {sha256}, expected {source.sha256} for {source.filename}"
                f"{self._moved_aside_note(path)}"
            )
        return sha256

    def _moved_aside_note(self, path: Path) -> str:
        """For a file of the download cache that failed its pins: move it aside and say so; else ''."""
        if not (path.exists() and inside(path, self.cache_dir)):
            return ""
        return f"; the cached copy was moved aside to {_reject(path)}: the next run downloads it again"

    # -- helpers ----------------------------------------------------------------------------
    def _with_pin_overrides(self, source: Source) -> Source:
        override = self.pins.get(source.filename)
        if not override:
            return source
        return Source(
            source.name,
            source.filename,
            source.url,
            override["size"],
            override["sha256"],
            None,
            source.instructions,
            source.local_copies,
        )

    def _matches(self, source: Source, path: Path) -> bool:
        try:
            self._verify(source, path, background=False)
            return True
        except ChecksumMismatch:
            return False

    def _cache_path(self, source: Source) -> Path:
        folder = source.sha256 or hashlib.sha256((source.url or source.filename).encode()).hexdigest()
        return self.cache_dir / folder[:16] / source.filename

    def _missing_message(self, source: Source) -> str:
        where = self.manual_dir if self.manual_dir else f"(no {param('manual_dir')} given)"
        text = f"manual file {source.filename!r} not found in {where}."
        return f"{text} {source.instructions}".strip()

    def _download(self, source: Source, target: Path) -> None:
        """Download to ``<target>.part`` (resuming a partial download), check its size, then rename.

        The size received is compared with the server's Content-Length and with the pinned size
        before the rename; a mismatch moves the file aside (``.rejected``) and raises SourceError,
        so the next run downloads it again. A transfer that fails midway keeps the ``.part`` file,
        and the next run resumes it.
        """
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_name(target.name + ".part")
        have = part.stat().st_size if part.exists() else 0
        if source.size is not None and have >= source.size:  # cannot be a proper prefix: start over
            part.unlink()
            have = 0
        response = self._open_url(source, have)
        resumed = bool(have) and response.status == 206
        content_range = response.headers.get("Content-Range")
        if resumed and content_range is not None and not content_range.startswith(f"bytes {have}-"):
            response.close()
            part.unlink()
            raise SourceError(
                f"{source.url}: the server resumed at {content_range!r}, not at byte "
                f"{have}; the partial download was removed: run again to download {source.filename} anew"
            )
        start = have if resumed else 0
        announced = response.headers.get("Content-Length")
        announced = int(announced) if announced and announced.isdigit() else None
        received = self._receive(source, response, part, start, announced)
        problems = []
        if announced is not None and received != announced:
            problems.append(f"received {received} of the {announced} bytes the server announced (Content-Length)")
        if source.size is not None and start + received != source.size:
            problems.append(f"the file has {start + received} bytes, its pinned size is {source.size}")
        if problems:
            moved = _reject(part)
            raise SourceError(
                f"download of {source.url} for {source.filename} is wrong: {'; '.join(problems)}. "
                f"Moved it aside to {moved}; run again to download it again"
            )
        replace_durably(part, target)

    def _open_url(self, source: Source, have: int):
        import urllib.request  # here and below, not at the top: the builders' metadata needs no network code

        request = urllib.request.Request(source.url, headers={"Range": f"bytes={have}-"} if have else {})
        try:
            return urllib.request.urlopen(request, timeout=60)
        except OSError as err:
            raise SourceError(
                f"cannot download {source.url} for {source.filename}: {err}; "
                f"download it yourself and put it in {param('manual_dir')}"
            ) from err

    def _receive(self, source: Source, response, part: Path, start: int, announced: int | None) -> int:
        """Write the response body to ``part`` (appending after ``start`` bytes); the bytes received."""
        import http.client

        from tqdm.auto import tqdm

        total = source.size or ((announced + start) if announced is not None else None)
        received = 0
        try:
            with (
                response,
                open(part, "ab" if start else "wb") as out,
                tqdm(
                    total=total,
                    initial=start,
                    unit="B",
                    unit_scale=True,
                    desc=f"downloading {source.filename}",
                    disable=not self.progress,
                ) as bar,
            ):
                while chunk := response.read(CHUNK):
                    out.write(chunk)
                    received += len(chunk)
                    bar.update(len(chunk))
        except (OSError, http.client.HTTPException) as err:
            raise SourceError(
                f"download of {source.url} failed after {start + received} bytes ({err}); the partial file "
                f"{part} is kept: run again to resume"
            ) from err
        return received


def _hash_folder_in_a_process(path: Path, files: list[str], progress: bool) -> tuple[str, str]:
    """:func:`folder_digests` in a child Python process (``python -m imagenet_suite.files``).

    Hashing file by file needs the GIL at every file; a thread would queue for it behind the build's
    own Python work and run at half speed. A plain child process (not multiprocessing, which would
    re-import the caller's ``__main__``) has a GIL of its own. Its progress bar shares our stderr.
    """
    request = json.dumps({"root": os.fspath(path), "files": files, "progress": progress})
    python_path = os.pathsep.join(filter(None, [_PACKAGE_PARENT, os.environ.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-m", "imagenet_suite.files"],
        input=request,
        stdout=subprocess.PIPE,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": python_path},
    )
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        answer = {"error": f"the hashing process ended with exit code {done.returncode}"}
    if "error" in answer:
        raise SourceError(f"{path}: hashing the folder failed: {answer['error']}")
    return answer["content"], answer["listing"]


def _in_background(function: Callable[..., T], *args) -> Future:
    """Run ``function(*args)`` on a thread of its own; the Future holds its result or exception."""
    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(function, *args)
    pool.shutdown(wait=False)
    return future


def _reject(path: Path) -> Path:
    """Move a file that failed its pins aside (``<name>.rejected``, replacing an older one); its new path."""
    aside = path.with_name(path.name + REJECTED)
    os.replace(path, aside)
    return aside


__all__ = [
    "ResolvedSource",
    "Source",
    "SourceResolver",
    "default_cache_dir",
    "file_digests",
    "offline_by_default",
    "read_pins_file",
    "sha256_file",
]
