"""Run a builder: plan → generate shards (in parallel, resumable) → card → build_info.json.

``build_dataset`` is the Python API behind ``imagenet-suite build`` (its knobs: one
:class:`~.options.BuildOptions`). The output folder is
``<out_dir>/<name>-<version>[-seed<N>][-<options hash>]``; building more configs into it later
adds them.

Every stored byte stays verified:

* a shard is written as ``<name>.incomplete`` and published (fsync, rename, fsync of the folder)
  only after the sources it was made from passed their checksums; its sha256 is recorded in the
  build journal (``.build_journal.jsonl``) before the rename, and in ``build_info.json`` at the end;
* a re-run keeps a finished shard only if its footer carries the current plan fingerprint, its
  full sha256 equals the hash recorded when it was written, and it was made from sources with the
  same content as now (a folder source is hashed file by file); anything else is rebuilt, so an
  interrupted or corrupted build ends byte-identical to a fresh one (for any ``num_proc``), and
  ``build_info.json`` is never rewritten to match a file that changed;
* on any error the ``.incomplete`` files of the run are removed, and so are the folders it created
  (the dataset folder, config folders, missing parents of ``out_dir``) unless they hold finished
  shards, kept for a resume; a folder that was there before the run is never removed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from .. import __version__
from ..dataset.folder import (
    BUILD_INFO,
    CARD,
    FORMAT,
    SELF_HASH,
    DatasetFolder,
    build_info_hash,
)
from ..errors import ConfigError, DatasetFolderError, param
from ..files import (
    INCOMPLETE,
    atomic_write_bytes,
    fsync_dir,
    fsync_file,
    incomplete_path,
    sha256_file,
)
from ..images import ImageChecks, image_checks
from . import card, registry
from .builder import Builder, Prepared, Shard
from .executors import Executor, make_executor
from .options import BuildOptions
from .sources import ResolvedSource, SourceResolver
from .transform import RowTransform, transformed_fingerprint
from .writer import ShardFormat, ShardStats, shard_fingerprint, shard_stats, write_shard

JOURNAL = ".build_journal.jsonl"
_LOG = logging.getLogger(__name__)


def build_dataset(
    name: str,
    out_dir: str | Path,
    configs: list[str] | None = None,
    options: BuildOptions | None = None,
) -> Path:
    """Build ``configs`` of builder ``name`` (default: its first config) and return the folder.

    Args:
        name: registered builder name (``imagenet-suite list``).
        out_dir: parent folder; the dataset folder is created inside it.
        configs: config names; all are validated before any work starts.
        options: how to build (:class:`~.options.BuildOptions`: seed, sources, builder options,
            workers, image checks, ...); None: the defaults.

    Example:
        Two images in the ImageFolder layout ``val/<wnid>/<id>.JPEG`` that ``imagenet_val`` reads:

        >>> import pathlib, tempfile
        >>> from imagenet_suite.testing import write_val_images
        >>> tmp = tempfile.TemporaryDirectory()
        >>> root = pathlib.Path(tmp.name)
        >>> _ = write_val_images(root / "manual", ["n01440764", "n01443537"])  # classes 0 and 1
        >>> from imagenet_suite.core.options import BuildOptions
        >>> options = BuildOptions(manual_dir=root / "manual", progress=False)
        >>> folder = build_dataset("imagenet_val", root / "out", options=options)
        >>> folder.name
        'imagenet_val-...'
        >>> sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file())
        ['README.md', 'build_info.json', 'default/validation-00000-of-00001.parquet']
        >>> from imagenet_suite.dataset.folder import DatasetFolder
        >>> DatasetFolder(folder).read_table("default", "validation", columns=["id", "label"]).to_pydict()
        {'id': ['ILSVRC2012_val_00000001', 'ILSVRC2012_val_00000002'], 'label': [0, 1]}
        >>> tmp.cleanup()
    """
    options = options if options is not None else BuildOptions()
    builders = registry.builders(
        name, configs, seed=options.seed, options=options.builder_options, shard_size=options.shard_size
    )
    builder_cls, names = type(builders[0]), [builder.config.name for builder in builders]
    if isinstance(options.executor, str):  # ConfigError on a bad combination (Ray missing, no cluster), at once
        make_executor(options.executor, options.num_proc, options.ray_address, start=False)
    transform = options.transform
    folder = _output_parent(out_dir) / (builders[0].folder_name() + (transform.folder_suffix if transform else ""))
    info = _load_or_start_build_info(folder, builders[0])
    # sources with a pinned sha256, and folders, are hashed while the build works; nothing is published before
    resolver = SourceResolver(
        manual_dir=options.manual_dir,
        cache_dir=options.cache_dir,
        offline=options.offline,
        pins=options.pins,
        progress=options.progress,
        inputs=options.inputs,
        defer_verification=True,
    )
    created = _missing_folders(folder, names)  # what the run creates, removed again if it fails while empty
    with image_checks(options.checks):
        try:
            planned = [_plan_config(builder, resolver, transform) for builder in builders]  # before any write
            with _opened(options) as workers:
                workers.check_visible(sorted({s.path for p in planned for s in p.prepared.sources.values()}))
                folder.mkdir(parents=True, exist_ok=True)
                journal = BuildJournal(folder)
                for plan in planned:
                    run = ConfigRun(plan, folder, resolver, journal, info.get("configs", {}), options)
                    info["configs"][plan.builder.config.name] = run.build(workers)
        except BaseException as err:
            _remove_incomplete(folder, names)
            _remove_empty(created)
            if isinstance(err, Exception):
                resolver.wait_verified()  # a source failing its checksum explains whatever failed on it
            raise
    info["configs"] = dict(
        sorted(info["configs"].items(), key=lambda kv: [c.name for c in builder_cls.CONFIGS].index(kv[0]))
    )
    if transform is not None:
        changed = {p.builder.config.name: p.changed for p in planned}
        info[transform.record_key] = transform.record(changed, info.get(transform.record_key))
    _write_card_and_info(builder_cls, builders[0], info, folder, transform)
    journal.remove()
    return folder


class _opened:
    """``with`` the build's executor: one made from its name is closed at the end, a given one is left open."""

    def __init__(self, options: BuildOptions):
        self.given = not isinstance(options.executor, str)
        self.executor = (
            options.executor if self.given else make_executor(options.executor, options.num_proc, options.ray_address)
        )

    def __enter__(self) -> Executor:
        return self.executor

    def __exit__(self, *exc) -> None:
        if not self.given:
            self.executor.close()


def _output_parent(out_dir: str | Path) -> Path:
    """``out_dir`` as a folder; ConfigError if it names an existing file."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(
            f"{param('out_dir')} {out_dir}: is a file; expected a folder (the dataset folder is created inside it)"
        )
    return out_dir


def _load_or_start_build_info(folder: Path, builder: Builder) -> dict:
    """The build_info of an existing dataset folder (checked to be intact and of this builder), or a new one."""
    if folder.exists() and not folder.is_dir():
        raise DatasetFolderError(f"{folder}: is a file; the dataset folder cannot be created there")
    path = folder / BUILD_INFO
    if path.exists():
        info = DatasetFolder(folder, check_self_hash=False).build_info  # unreadable JSON, another format
        if info.get(SELF_HASH) != build_info_hash(info):
            raise DatasetFolderError(
                f"{path}: corrupt or modified (its content differs from its {SELF_HASH}); it records "
                f"what {folder.name} holds, so nothing is built over it: remove {path} (every shard is "
                "then rebuilt and checked) or the whole folder"
            )
        if (info.get("builder"), info.get("version"), info.get("seed")) != (
            builder.NAME,
            builder.VERSION,
            _recorded_seed(builder),
        ):
            raise DatasetFolderError(
                f"{folder} holds {info.get('builder')} {info.get('version')} seed {info.get('seed')}; "
                f"refusing to add {builder.NAME} {builder.VERSION} seed {builder.seed} to it"
            )
        return info
    return {
        "format": FORMAT,
        "builder": builder.NAME,
        "version": builder.VERSION,
        "package_version": __version__,
        "seed": _recorded_seed(builder),
        "folder": folder.name,
        "license": builder.LICENSE,
        "configs": {},
    }


def _recorded_seed(builder: Builder) -> int | None:
    """The seed as recorded in build_info: None for builders whose rows do not depend on it."""
    return builder.seed if builder.seeded() else None


def plan_fingerprint(builder: Builder, prepared: Prepared, shards: list[Shard]) -> str:
    """sha256 of everything a shard's bytes depend on that is known when planning: builder, version,
    config, seed, options, the sources' identities (sha256 of files, listing of folders) and the plan."""
    payload = {
        "builder": builder.NAME,
        "version": builder.VERSION,
        "config": builder.config.name,
        "seed": builder.seed,
        "options": builder.options,
        "sources": {k: v.identity for k, v in sorted(prepared.sources.items())},
        "row_group_rows": builder.config.row_group_rows,
        "shards": [[s.split, s.index, s.count, hashlib.sha256("\n".join(s.keys).encode()).hexdigest()] for s in shards],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def sources_digest(records: dict[str, dict]) -> str:
    """sha256 of the sources' records (name → file, size, content sha256), canonical JSON."""
    return hashlib.sha256(json.dumps(records, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@dataclass(frozen=True)
class PlannedConfig:
    """A config prepared and planned: its builder, prepared sources, shards, and the rows the build's
    transform changes (None without a transform)."""

    builder: Builder
    prepared: Prepared
    shards: list[Shard]
    changed: int | None = None


def _plan_config(builder: Builder, resolver: SourceResolver, transform: RowTransform | None) -> PlannedConfig:
    """Prepare and plan a config; with a transform, let it check the planned keys, keep its keys of
    each shard, and count the rows it changes."""
    prepared = builder.prepare(resolver)
    shards = builder.plan(prepared)
    if transform is None:
        return PlannedConfig(builder, prepared, shards)
    changed = transform.plan(builder.config.name, [k for s in shards for k in s.keys])
    kept = [Shard(s.split, s.index, s.count, transform.keep(s.keys)) for s in shards]
    return PlannedConfig(builder, prepared, kept, changed)


class BuildJournal:
    """What was published by runs that have not finished: one JSON line per shard, appended just
    before the shard is renamed to its final name (``<folder>/.build_journal.jsonl``).

    A line holds the shard's file, its plan key, its size and sha256, and the digest of the
    sources it was made from. Lines that do not parse (a run killed mid-write) are ignored. The
    journal is removed once build_info.json holds the same facts.
    """

    def __init__(self, folder: Path):
        self.path = folder / JOURNAL
        self.entries: list[dict] = []
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(entry, dict):
                    self.entries.append(entry)

    def add(self, entry: dict) -> None:
        """Append ``entry`` (its line reaches the file before this returns; a crash loses at most a resume)."""
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry, sort_keys=True) + "\n")
        self.entries.append(entry)

    def recorded_sha256(self, file: str, key: str, sources: str) -> set[str]:
        """sha256 values recorded for ``file`` written under plan ``key`` from sources with digest ``sources``."""
        return {
            e["sha256"] for e in self.entries if (e.get("file"), e.get("key"), e.get("sources")) == (file, key, sources)
        }

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


class ConfigRun:
    """Building one config into a dataset folder: resume check, shard writing, publishing, record."""

    def __init__(
        self,
        planned: PlannedConfig,
        folder: Path,
        resolver: SourceResolver,
        journal: BuildJournal,
        recorded_configs: dict,
        options: BuildOptions,
    ):
        self.builder, self.prepared, self.shards = planned.builder, planned.prepared, planned.shards
        self.name = self.builder.config.name
        self.config_dir = folder / self.name
        self.resolver, self.journal, self.options = resolver, journal, options
        self.transform, self.checks = options.transform, options.checks
        self.recorded = recorded_configs.get(self.name)  # this config's entry in the existing build_info, if any
        fingerprint = plan_fingerprint(self.builder, self.prepared, self.shards)
        self.fingerprint = transformed_fingerprint(fingerprint, self.transform)
        self._sources: dict[str, ResolvedSource] | None = None

    # -- the sources, settled ------------------------------------------------------------------
    def sources(self) -> dict[str, ResolvedSource]:
        """The config's sources, verified, with the content sha256 of folders (waits for the hashing)."""
        if self._sources is None:
            self.resolver.wait_verified()
            self._sources = self.resolver.settle(self.prepared.sources)
        return self._sources

    def sources_digest(self) -> str:
        return sources_digest({k: v.record() for k, v in sorted(self.sources().items())})

    # -- the build -----------------------------------------------------------------------------
    def build(self, executor: Executor) -> dict:
        """Write the config's shards and extra files; its build_info entry."""
        self.config_dir.mkdir(exist_ok=True)
        _remove_stale(self.config_dir, {s.filename for s in self.shards})
        stats = self.reusable_shards()
        todo = [s for s in self.shards if s.filename not in stats]
        if stats and todo:  # an interrupted build (its process killed, a shard failed): say what it left
            _LOG.warning(
                "%s/%s: resuming: %d of %d shards kept from an interrupted build (same plan, sources and "
                "journalled sha256), %d to write",
                self.builder.NAME,
                self.name,
                len(stats),
                len(self.shards),
                len(todo),
            )
        stats.update(self.write_shards(todo, executor))
        sources = self.sources()
        files = {
            f"{self.name}/{s.filename}": {
                "split": s.split,
                "num_rows": stats[s.filename].num_rows,
                "size": stats[s.filename].size,
                "sha256": stats[s.filename].sha256,
            }
            for s in self.shards
        }
        for rel, data in sorted(self.builder.extra_files(self.prepared).items()):
            atomic_write_bytes(self.config_dir / rel, data)
            files[f"{self.name}/{rel}"] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        splits: dict[str, dict] = {}
        for shard in self.shards:
            split = splits.setdefault(shard.split, {"num_examples": 0, "num_bytes": 0})
            split["num_examples"] += stats[shard.filename].num_rows
            split["num_bytes"] += stats[shard.filename].num_bytes
        return {
            "options": self.builder.options,
            "sources": {k: v.record() for k, v in sorted(sources.items())},
            "features": _features(self.builder, self.transform).to_dict(),
            "protocol": self.builder.protocol(),
            "splits": splits,
            "files": dict(sorted(files.items())),
            "card_context": self.builder.card_context(self.prepared),
        }

    def reusable_shards(self) -> dict[str, ShardStats]:
        """Finished shards an earlier run left that may be kept: same plan, same source content, and
        bytes whose sha256 equals the one recorded when they were written."""
        candidates = [
            s
            for s in self.shards
            if (self.config_dir / s.filename).exists()
            and shard_fingerprint(self.config_dir / s.filename) == _shard_key(self.fingerprint, s)
        ]
        if not candidates:
            return {}
        current = self.sources_digest()  # waits for the sources' hashes: resume only from the same content
        reused = {}
        for shard in candidates:
            recorded = self._recorded_sha256(shard, current)
            if recorded:
                stats = shard_stats(self.config_dir / shard.filename)
                if stats.sha256 in recorded:
                    reused[shard.filename] = stats
                    continue
            _LOG.info(
                "%s: rebuilding %s (not the bytes recorded when it was written)", self.builder.NAME, shard.filename
            )
        return reused

    def _recorded_sha256(self, shard: Shard, current_sources: str) -> set[str]:
        rel = f"{self.name}/{shard.filename}"
        found = self.journal.recorded_sha256(rel, _shard_key(self.fingerprint, shard), current_sources)
        if self.recorded and sources_digest(self.recorded.get("sources", {})) == current_sources:
            entry = self.recorded.get("files", {}).get(rel)
            if entry and "sha256" in entry:
                found.add(entry["sha256"])
        return found

    def write_shards(self, todo: list[Shard], executor: Executor) -> dict[str, ShardStats]:
        """Write ``todo`` with ``executor``. Each written shard is fsynced and hashed on one background thread while the next
        is written, and published on another once the sources passed their checks."""
        published: dict[str, Future] = {}
        hasher, publisher = ThreadPoolExecutor(max_workers=1), ThreadPoolExecutor(max_workers=1)
        total = sum(len(s.keys) for s in todo)
        with tqdm(
            total=total,
            unit="ex",
            desc=f"{self.builder.NAME}/{self.name}",
            disable=not self.options.progress or not todo,
            smoothing=0.05,
        ) as bar:
            try:
                for shard, stats in executor.write(self.shard_function(), todo, self.config_dir, bar, self.preload()):
                    hashed = hasher.submit(self.hash_written, incomplete_path(self.config_dir / shard.filename))
                    published[shard.filename] = publisher.submit(self.publish, shard, stats, hashed)
                    _raise_first_failure(published.values())
                return {name: future.result() for name, future in published.items()}
            finally:
                hasher.shutdown(wait=True)
                publisher.shutdown(wait=True)  # shards already written are still published (resumable)

    def shard_function(self):
        """The pure shard function every executor runs: ``(shard=, config_dir=, on_row=)`` → the stats of
        ``<config_dir>/<shard file>.incomplete``, whose bytes depend on nothing but the plan."""
        return ShardWriter(self.builder, self.prepared, self.fingerprint, self.checks, self.transform)

    def preload(self) -> list[str]:
        """Modules a worker process imports once (the local executor's forkserver)."""
        return ["imagenet_suite.core.runner", "datasets", type(self.builder).__module__]

    @staticmethod
    def hash_written(path: Path) -> str:
        """sha256 of a written shard, after flushing it to stable storage."""
        fsync_file(path)
        return sha256_file(path)

    def publish(self, shard: Shard, stats: ShardStats, hashed: Future) -> ShardStats:
        """Once the sources passed their checks and the written shard is hashed and on disk (``hashed``:
        its sha256), record the hash in the journal and rename the shard to its final name."""
        final = self.config_dir / shard.filename
        tmp = incomplete_path(final)
        sources = self.sources_digest()  # raises if a source failed its checksum: nothing is published then
        sha256 = hashed.result()
        self.journal.add(
            {
                "config": self.name,
                "file": f"{self.name}/{shard.filename}",
                "key": _shard_key(self.fingerprint, shard),
                "size": stats.size,
                "sha256": sha256,
                "sources": sources,
            }
        )
        os.replace(tmp, final)
        fsync_dir(self.config_dir)
        return replace(stats, sha256=sha256)


def _raise_first_failure(futures) -> None:
    """Re-raise the exception of the first finished future that failed (publishing runs in the background)."""
    for future in futures:
        if future.done() and future.exception() is not None:
            raise future.exception()


def _features(builder: Builder, transform: RowTransform | None):
    """The features written: the builder's, as the transform (if any) changes them."""
    return transform.features(builder.features()) if transform is not None else builder.features()


def _remove_stale(config_dir: Path, planned: set[str]) -> None:
    """Delete leftovers of interrupted writes and shards that are not in the current plan."""
    for path in config_dir.iterdir():
        if path.name.endswith(INCOMPLETE) or (path.suffix == ".parquet" and path.name not in planned):
            path.unlink()


def _remove_incomplete(folder: Path, configs: list[str]) -> None:
    """Delete the ``.incomplete`` files a failed run leaves in ``folder`` and its config folders."""
    for where in [folder, *(folder / c for c in configs)]:
        if where.is_dir():
            for path in where.glob(f"*{INCOMPLETE}"):
                path.unlink(missing_ok=True)


def _missing_folders(folder: Path, configs: list[str]) -> list[Path]:
    """The folders a build of ``configs`` into ``folder`` would create that are not there yet, innermost first:
    config folders, the dataset folder, and its missing parents."""
    missing = [folder / c for c in configs if not (folder / c).exists()]
    parent = folder
    while not parent.exists() and parent != parent.parent:
        missing.append(parent)
        parent = parent.parent
    return missing


def _remove_empty(folders: list[Path]) -> None:
    """Remove each of ``folders`` (innermost first) that is empty: a folder holding finished shards (and the
    journal that lets a re-run keep them) stays. ``rmdir`` removes nothing but an empty folder."""
    for path in folders:
        try:
            path.rmdir()
        except OSError:  # not empty, not there, or not ours to remove
            continue


def _shard_key(fingerprint: str, shard: Shard) -> str:
    return f"{fingerprint}:{shard.split}:{shard.index}"


@dataclass(frozen=True)
class ShardWriter:
    """The pure shard function: ``writer(shard=, config_dir=, on_row=)`` writes one shard at its temporary
    name under ``checks`` (in whichever process or Ray worker runs it; picklable) and returns its stats."""

    builder: Builder
    prepared: Prepared
    fingerprint: str
    checks: ImageChecks
    transform: RowTransform | None = None

    def __call__(self, shard: Shard, config_dir: Path, on_row: Callable[[int], Any] | None = None) -> ShardStats:
        with image_checks(self.checks):
            rows = _checked_rows(self.builder, self.prepared, shard)
            if self.transform is not None:
                rows = self.transform.rows(rows)
            shard_format = ShardFormat(
                _features(self.builder, self.transform),
                _shard_key(self.fingerprint, shard),
                self.builder.config.row_group_rows,
            )
            callback = (lambda: on_row(1)) if on_row else None
            return write_shard(config_dir / shard.filename, rows, shard_format, callback, publish=False, sha256=False)


def _checked_rows(builder: Builder, prepared: Prepared, shard: Shard):
    """The generator's rows, checked to come one per planned key, in plan order (by ``KEY_COLUMN``)."""
    count = 0
    for row, key in zip(builder.generate(prepared, shard), shard.keys, strict=False):
        if row.get(builder.KEY_COLUMN) != key:
            raise RuntimeError(
                f"{builder.NAME}: generator yielded {builder.KEY_COLUMN} {row.get(builder.KEY_COLUMN)!r} "
                f"where the plan has {key!r}"
            )
        count += 1
        yield row
    if count != len(shard.keys):
        raise RuntimeError(
            f"{builder.NAME}: generator yielded {count} rows for {shard.filename}, plan has {len(shard.keys)}"
        )


def _write_card_and_info(
    builder_cls: type[Builder], builder: Builder, info: dict, folder: Path, transform: RowTransform | None = None
) -> None:
    default = next(c.name for c in builder_cls.CONFIGS if c.name in info["configs"])
    context = {"name": builder.NAME, "version": builder.VERSION, "folder": folder.name, "seed": builder.seed}
    for cfg in info["configs"].values():
        context.update(cfg.get("card_context", {}))
    sections = card.generated_sections(builder_cls, info, default)
    if transform is not None and transform.record_key in info:
        sections = sections.rstrip() + "\n\n" + transform.card_section(info[transform.record_key])
    text = card.render_card(info, default, card.load_template(builder.CARD_TEMPLATE or builder.NAME), context, sections)
    atomic_write_bytes(folder / CARD, text.encode("utf-8"))
    info["card_sha256"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    info[SELF_HASH] = build_info_hash(info)
    atomic_write_bytes(folder / BUILD_INFO, (json.dumps(info, indent=1, sort_keys=False) + "\n").encode())


__all__ = ["BuildJournal", "PlannedConfig", "ShardWriter", "build_dataset", "plan_fingerprint"]
