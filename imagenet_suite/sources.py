"""Sources: the raw files a builder reads, pinned by size and hash, and where they come from.

A :class:`Source` is either a public URL (downloaded into the cache, resumably) or a gated file
the user must supply (looked up in ``--manual-dir``). Either may also have local copies shipped
by a maintained library (e.g. timm's copy of ``real.json``) that are used when they match the pin.

Resolution order for a source: manual dir → download cache → verified local copy → download
(unless offline). Every file is checked against its pins (size, sha256, and md5 where that is
the only public hash) before it is used; the sha256 of every file used is recorded.

Environment:
  ``IMAGENET_SUITE_CACHE``    download cache (default: the user cache dir, ``imagenet-suite/downloads``)
  ``IMAGENET_SUITE_OFFLINE``  ``1`` to never touch the network (also ``HF_HUB_OFFLINE=1``)
"""

from __future__ import annotations

import csv
import hashlib
import os
import urllib.request
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import platformdirs
from tqdm.auto import tqdm

from .errors import ChecksumMismatch, ManualFileMissing, SourceError

T = TypeVar("T")

CHUNK = 1 << 20


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

    @property
    def manual(self) -> bool:
        return self.url is None

    def describe(self) -> str:
        pins = ", ".join(f"{k} {v}" for k, v in (("size", self.size), ("sha256", self.sha256), ("md5", self.md5)) if v)
        where = self.url or "manual file (gated): put it in --manual-dir"
        return f"{self.filename} [{where}] ({pins or 'no pinned hash: recorded at first build'})"


@dataclass(frozen=True)
class ResolvedSource:
    """A source file found on disk and verified: its path, size and sha256."""

    name: str
    path: Path
    size: int
    sha256: str

    def record(self) -> dict:
        return {"file": self.path.name, "size": self.size, "sha256": self.sha256}


def default_cache_dir() -> Path:
    env = os.environ.get("IMAGENET_SUITE_CACHE")
    return Path(env) if env else Path(platformdirs.user_cache_dir("imagenet-suite")) / "downloads"


def offline_by_default() -> bool:
    return any(os.environ.get(var, "").lower() in ("1", "true", "yes") for var in ("IMAGENET_SUITE_OFFLINE", "HF_HUB_OFFLINE"))


def file_digests(path: Path, algorithms: Iterable[str] = ("sha256",), progress: bool = True) -> dict[str, str]:
    """Hex digests of a file, computed in one pass over it (progress bar on stderr for large files)."""
    hashers = {name: hashlib.new(name) for name in algorithms}
    size = path.stat().st_size
    bar = tqdm(total=size, unit="B", unit_scale=True, desc=f"hashing {path.name}", disable=not progress or size < 256 * CHUNK, leave=False)
    with open(path, "rb") as handle, bar, ThreadPoolExecutor(max_workers=len(hashers)) as pool:
        while chunk := handle.read(8 * CHUNK):
            # one thread per algorithm: hashlib releases the GIL, so md5 + sha256 cost max, not sum
            list(pool.map(lambda hasher: hasher.update(chunk), hashers.values()))  # noqa: B023 (waited for here)
            bar.update(len(chunk))
    return {name: hasher.hexdigest() for name, hasher in hashers.items()}


def sha256_file(path: Path) -> str:
    return file_digests(path, ("sha256",), progress=False)["sha256"]


def read_pins_file(path: str | Path) -> dict[str, dict]:
    """Read a TFDS-style ``checksums.tsv`` (``<file name or url>\\t<size>\\t<sha256>``) of pin overrides."""
    pins: dict[str, dict] = {}
    with open(path, newline="", encoding="utf-8") as handle:
        for line_no, row in enumerate(csv.reader(handle, delimiter="\t"), start=1):
            if not row or row[0].startswith("#"):
                continue
            if len(row) != 3 or not row[1].isdigit() or len(row[2]) != 64:
                raise SourceError(f"{path}:{line_no}: expected '<file>\\t<size>\\t<sha256>', got {row!r}")
            pins[Path(row[0]).name] = {"size": int(row[1]), "sha256": row[2].lower()}
    return pins


class SourceResolver:
    """Finds, downloads and verifies a builder's sources.

    Args:
        manual_dir: folder holding gated files (and optionally any other source file).
        cache_dir: download cache; defaults to :func:`default_cache_dir`.
        offline: never download; defaults to ``IMAGENET_SUITE_OFFLINE`` / ``HF_HUB_OFFLINE``.
        pins: per-file-name overrides of the pinned ``size``/``sha256`` (from a checksums.tsv),
            for mirrors, re-packed archives and test fixtures. They replace the builder's pins.
        defer_verification: hash files with a pinned sha256 in a background thread, so that work
            on them overlaps the hashing; the caller must call :meth:`wait_verified` before it
            publishes anything derived from them (``build_dataset`` does, before each shard).
            Sizes are still checked at once, and files without a sha256 pin are hashed at once
            (their sha256 is not known before).
    """

    def __init__(self, manual_dir: str | Path | None = None, cache_dir: str | Path | None = None,
                 offline: bool | None = None, pins: dict[str, dict] | None = None, progress: bool = True,
                 inputs: Iterable[str | Path] = (), defer_verification: bool = False):
        self.manual_dir = Path(manual_dir) if manual_dir else None
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
        self.offline = offline_by_default() if offline is None else offline
        self.pins = pins or {}
        self.progress = progress
        self.inputs = [Path(p) for p in inputs]
        self.defer_verification = defer_verification
        self._verified: dict[tuple, str] = {}  # (path, size, mtime, md5 wanted) -> sha256
        self._pending: dict[tuple, Future] = {}  # verifications running in the background

    # -- public -----------------------------------------------------------------------------
    def find_manual(self, filename: str) -> Path | None:
        """Path of ``filename`` in the manual dir, or None."""
        if self.manual_dir is None:
            return None
        candidate = self.manual_dir / filename
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

    def _locate(self, source: Source) -> Path:
        """The local file of ``source`` (manual dir, cache, a matching local copy, or a download)."""
        manual = self.find_manual(source.filename)
        if manual is not None:
            return manual
        cached = self._cache_path(source)
        if cached.exists():
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
                f"download {source.url} there or put the file in --manual-dir"
            )
        self._download(source, cached)
        return cached

    def input_dataset(self, builder: str | None, config: str | None = None, build_hint: str = ""):
        """A built imagenet-suite dataset given with ``--input``, verified; ``(DatasetFolder, ResolvedSource)``.

        ``builder`` None accepts a dataset of any builder (that has ``config`` if given). The
        source's sha256 is that of the folder's build_info.json, which pins every file in it.
        ManualFileMissing says which builder/config is needed and how to build it.
        """
        from .dataset_folder import BUILD_INFO, DatasetFolder
        from .verify import verify_folder

        for path in self.inputs:
            folder = DatasetFolder(path)
            if builder in (None, folder.name) and (config is None or config in folder.configs):
                key = (str(path.resolve()), (path / BUILD_INFO).stat().st_mtime_ns)
                if key not in self._verified:
                    verify_folder(path)
                    self._verified[key] = file_digests(path / BUILD_INFO, progress=False)["sha256"]
                size = sum(meta["size"] for info in folder.build_info["configs"].values() for meta in info["files"].values())
                return folder, ResolvedSource(f"{folder.name}_dataset", path, size, self._verified[key])
        wanted = (builder or "imagenet-suite") + (f" (config {config!r})" if config else "")
        given = ", ".join(str(p) for p in self.inputs) or "none"
        raise ManualFileMissing(f"this build needs a built {wanted} dataset: pass its folder with --input DIR "
                                f"(given: {given}). {build_hint}".strip())

    def verify(self, source: Source, path: Path) -> ResolvedSource:
        """Check ``path`` against the pins of ``source``; ChecksumMismatch names the file and both values.

        With ``defer_verification`` and a pinned sha256, only the size is checked here; the hash
        is checked in the background (see :meth:`wait_verified`).
        """
        return self._verify(source, path, background=self.defer_verification)

    def wait_verified(self) -> None:
        """Wait for the background verifications; raise the first failure (ChecksumMismatch)."""
        for key, future in list(self._pending.items()):
            future.result()
            del self._pending[key]

    def _verify(self, source: Source, path: Path, background: bool) -> ResolvedSource:
        source = self._with_pin_overrides(source)
        stat = path.stat()
        if source.size is not None and stat.st_size != source.size:
            raise ChecksumMismatch(
                f"{path}: size is {stat.st_size} bytes, expected {source.size} for {source.filename} "
                "(incomplete or different file)"
            )
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, source.md5 is not None)
        if background and source.sha256 and key not in self._verified:
            if key not in self._pending:
                pool = ThreadPoolExecutor(max_workers=1)
                self._pending[key] = pool.submit(self._check_digests, source, path, key)
                pool.shutdown(wait=False)
            return ResolvedSource(source.name, path, stat.st_size, source.sha256.lower())
        return ResolvedSource(source.name, path, stat.st_size, self._check_digests(source, path, key))

    def _check_digests(self, source: Source, path: Path, key: tuple) -> str:
        """The file's sha256, after checking it (and the md5, if pinned) against the pins."""
        if key not in self._verified:
            algorithms = ["sha256"] + (["md5"] if source.md5 else [])
            digests = file_digests(path, algorithms, progress=self.progress)
            if source.md5 and digests["md5"] != source.md5:
                raise ChecksumMismatch(f"{path}: md5 is {digests['md5']}, expected {source.md5} for {source.filename}")
            self._verified[key] = digests["sha256"]
        sha256 = self._verified[key]
        if source.sha256 and sha256 != source.sha256.lower():
            raise ChecksumMismatch(f"{path}: sha256 is {sha256}, expected {source.sha256} for {source.filename}")
        return sha256

    # -- helpers ----------------------------------------------------------------------------
    def _with_pin_overrides(self, source: Source) -> Source:
        override = self.pins.get(source.filename)
        if not override:
            return source
        return Source(source.name, source.filename, source.url, override["size"], override["sha256"], None,
                      source.instructions, source.local_copies)

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
        where = self.manual_dir if self.manual_dir else "(no --manual-dir given)"
        text = f"manual file {source.filename!r} not found in {where}."
        return f"{text} {source.instructions}".strip()

    def _download(self, source: Source, target: Path) -> None:
        """Download to ``<target>.part`` (resuming a partial download), then rename."""
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_name(target.name + ".part")
        have = part.stat().st_size if part.exists() else 0
        request = urllib.request.Request(source.url, headers={"Range": f"bytes={have}-"} if have else {})
        try:
            response = urllib.request.urlopen(request, timeout=60)
        except OSError as err:
            raise SourceError(f"cannot download {source.url} for {source.filename}: {err}; "
                              f"download it yourself and put it in --manual-dir") from None
        resumed = have and response.status == 206
        mode = "ab" if resumed else "wb"
        total = source.size or (int(response.headers.get("Content-Length", 0)) + (have if resumed else 0)) or None
        with response, open(part, mode) as out, tqdm(total=total, initial=have if resumed else 0, unit="B", unit_scale=True,
                                                     desc=f"downloading {source.filename}", disable=not self.progress) as bar:
            while chunk := response.read(CHUNK):
                out.write(chunk)
                bar.update(len(chunk))
        os.replace(part, target)

