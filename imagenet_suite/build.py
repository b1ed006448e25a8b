"""Run a builder: plan → generate shards (in parallel, resumable) → card → build_info.json.

``build_dataset`` is the Python API behind ``imagenet-suite build``. The output folder is
``<out_dir>/<name>-<version>[-seed<N>][-<options hash>]``; building more configs into it later
adds them. Shards are written under temporary names and renamed when complete; a finished shard
whose footer carries the current plan fingerprint is kept on re-runs, so an interrupted build
resumes and ends byte-identical to an uninterrupted one (for any ``num_proc``).
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from dataclasses import replace
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from . import __version__, card, registry
from .builder import Builder, Prepared, Shard
from .curation.rebuild import ReviewApplication, card_section, fingerprint_with_review
from .dataset_folder import BUILD_INFO, CARD, FORMAT, SELF_HASH, build_info_hash
from .errors import ConfigError, DatasetFolderError
from .sources import SourceResolver
from .writer import INCOMPLETE, ShardStats, publish_shard, sha256_of, shard_fingerprint, shard_stats, write_shard


def build_dataset(name: str, out_dir: str | Path, configs: list[str] | None = None, *, seed: int = 0,
                  manual_dir: str | Path | None = None, num_proc: int = 1, options: dict[str, Any] | None = None,
                  offline: bool | None = None, pins: dict[str, dict] | None = None, cache_dir: str | Path | None = None,
                  shard_size: int | None = None, inputs: list[str | Path] = (), progress: bool = True,
                  decisions: str | Path | None = None, decision_action: str = "drop") -> Path:
    """Build ``configs`` of builder ``name`` (default: its first config) and return the folder.

    Args:
        name: registered builder name (``imagenet-suite list``).
        out_dir: parent folder; the dataset folder is created inside it.
        configs: config names; all are validated before any work starts.
        seed: seed of seeded builders (ignored by the others, recorded always).
        manual_dir: folder with manually supplied (gated) source files.
        num_proc: worker processes generating shards; output bytes do not depend on it.
        options: builder options (``Builder.OPTIONS``).
        offline / pins / cache_dir: see :class:`imagenet_suite.sources.SourceResolver`.
        inputs: built dataset folders this builder reads (e.g. imagenet_val for patchml).
        shard_size: examples per shard (default: the config's).
        decisions: a review decision table (``imagenet-suite review export``); builds a new version with
            the decided rows dropped or flagged (see :mod:`imagenet_suite.curation.rebuild`), in a folder
            suffixed ``-reviewed-<action>-<table sha256[:8]>``. Every decided id must be a row of every
            config built; nothing is written otherwise.
        decision_action: ``drop`` (remove rows decided ``id``) or ``flag`` (add a ``review_decision`` column).
    """
    builder_cls = registry.get(name)
    names = list(dict.fromkeys(configs or [builder_cls.CONFIGS[0].name]))
    builders = [builder_cls(c, seed=seed, options=options, shard_size=shard_size) for c in names]
    if num_proc < 1:
        raise ConfigError(f"--num-proc must be ≥ 1, got {num_proc}")
    review = ReviewApplication.from_file(decisions, decision_action) if decisions is not None else None
    folder = Path(out_dir) / (builders[0].folder_name() + (review.folder_suffix if review else ""))
    info = _load_or_start_build_info(folder, builders[0])
    # sources with a pinned sha256 are hashed while the build works; nothing is published before they pass
    resolver = SourceResolver(manual_dir=manual_dir, cache_dir=cache_dir, offline=offline, pins=pins,
                              progress=progress, inputs=inputs, defer_verification=True)
    try:
        planned = [(builder, *_plan_config(builder, resolver, review)) for builder in builders]  # before any write
        folder.mkdir(parents=True, exist_ok=True)
        for builder, prepared, shards, _ in planned:
            info["configs"][builder.config.name] = _build_config(builder, prepared, shards, folder, num_proc, progress,
                                                                 resolver.wait_verified, review)
    except Exception:
        resolver.wait_verified()  # a source failing its checksum explains whatever failed on it
        raise
    info["configs"] = dict(sorted(info["configs"].items(), key=lambda kv: [c.name for c in builder_cls.CONFIGS].index(kv[0])))
    if review is not None:
        affected = {**info.get("review", {}).get(review.rows_key, {}), **{b.config.name: n for b, _, _, n in planned}}
        info["review"] = review.record(affected)
    _write_card_and_info(builder_cls, builders[0], info, folder)
    return folder


def _load_or_start_build_info(folder: Path, builder: Builder) -> dict:
    path = folder / BUILD_INFO
    if path.exists():
        info = json.loads(path.read_text())
        if (info.get("builder"), info.get("version"), info.get("seed")) != (builder.NAME, builder.VERSION, _recorded_seed(builder)):
            raise DatasetFolderError(f"{folder} holds {info.get('builder')} {info.get('version')} seed {info.get('seed')}; "
                                     f"refusing to add {builder.NAME} {builder.VERSION} seed {builder.seed} to it")
        return info
    return {"format": FORMAT, "builder": builder.NAME, "version": builder.VERSION, "package_version": __version__,
            "seed": _recorded_seed(builder), "folder": folder.name, "license": builder.LICENSE, "configs": {}}


def _recorded_seed(builder: Builder) -> int | None:
    """The seed as recorded in build_info: None for builders whose rows do not depend on it."""
    return builder.seed if builder.SEEDED else None


def plan_fingerprint(builder: Builder, prepared: Prepared, shards: list[Shard]) -> str:
    """sha256 of everything a shard's bytes depend on: builder, version, config, seed, options, sources, plan."""
    payload = {
        "builder": builder.NAME, "version": builder.VERSION, "config": builder.config.name, "seed": builder.seed,
        "options": builder.options, "sources": {k: v.sha256 for k, v in sorted(prepared.sources.items())},
        "row_group_rows": builder.config.row_group_rows,
        "shards": [[s.split, s.index, s.count, hashlib.sha256("\n".join(s.keys).encode()).hexdigest()] for s in shards],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def _plan_config(builder: Builder, resolver: SourceResolver, review: ReviewApplication | None
                 ) -> tuple[Prepared, list[Shard], int | None]:
    """Prepare and plan a config; with a decision table, check its ids, drop rows from the plan and
    count the rows dropped or flagged (None without a table)."""
    prepared = builder.prepare(resolver)
    shards = builder.plan(prepared)
    if review is None:
        return prepared, shards, None
    keys = [k for s in shards for k in s.keys]
    review.check_ids(builder.config.name, set(keys))
    return prepared, [Shard(s.split, s.index, s.count, review.filter_keys(s.keys)) for s in shards], review.affected(keys)


def _build_config(builder: Builder, prepared: Prepared, shards: list[Shard], folder: Path, num_proc: int,
                  progress: bool, sources_verified: Callable[[], None], review: ReviewApplication | None = None) -> dict:
    """Write a config's shards and extra files; ``sources_verified`` blocks until the sources passed
    their checksums (raising if one did not) and is called before anything is published."""
    fingerprint = fingerprint_with_review(plan_fingerprint(builder, prepared, shards), review)
    config_dir = folder / builder.config.name
    config_dir.mkdir(exist_ok=True)
    _remove_stale(config_dir, {s.filename for s in shards})
    stats = _run_shards(builder, prepared, shards, config_dir, fingerprint, num_proc, progress, sources_verified, review)
    sources_verified()
    files = {f"{builder.config.name}/{s.filename}": {"split": s.split, "num_rows": stats[s.filename].num_rows,
                                                     "size": stats[s.filename].size, "sha256": stats[s.filename].sha256}
             for s in shards}
    for rel, data in sorted(builder.extra_files(prepared).items()):
        path = config_dir / rel
        _atomic_write(path, data)
        files[f"{builder.config.name}/{rel}"] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    splits: dict[str, dict] = {}
    for shard in shards:
        split = splits.setdefault(shard.split, {"num_examples": 0, "num_bytes": 0})
        split["num_examples"] += stats[shard.filename].num_rows
        split["num_bytes"] += stats[shard.filename].num_bytes
    return {"options": builder.options, "sources": {k: v.record() for k, v in sorted(prepared.sources.items())},
            "features": _features(builder, review).to_dict(), "protocol": builder.protocol(), "splits": splits,
            "files": dict(sorted(files.items())), "card_context": builder.card_context(prepared)}


def _features(builder: Builder, review: ReviewApplication | None):
    """The features written: the builder's, plus the flag column when a decision table flags rows."""
    return review.features(builder.features()) if review is not None else builder.features()


def _remove_stale(config_dir: Path, planned: set[str]) -> None:
    """Delete leftovers of interrupted writes and shards that are not in the current plan."""
    for path in config_dir.iterdir():
        if path.name.endswith(INCOMPLETE) or (path.suffix == ".parquet" and path.name not in planned):
            path.unlink()


def _run_shards(builder: Builder, prepared: Prepared, shards: list[Shard], config_dir: Path, fingerprint: str,
                num_proc: int, progress: bool, sources_verified: Callable[[], None],
                review: ReviewApplication | None = None) -> dict[str, ShardStats]:
    """Write the shards not finished by an earlier run; each is published once the sources are verified."""
    stats: dict[str, ShardStats] = {}
    todo = []
    for shard in shards:
        path = config_dir / shard.filename
        if path.exists() and shard_fingerprint(path) == _shard_key(fingerprint, shard):
            stats[shard.filename] = shard_stats(path)  # finished by an earlier run: resume
        else:
            todo.append(shard)

    hasher = ThreadPoolExecutor(max_workers=1)  # published shards are hashed while the next ones are written
    digests: dict[str, Future] = {}

    def publish(shard: Shard, shard_stats_: ShardStats) -> None:
        sources_verified()
        publish_shard(config_dir / shard.filename)
        stats[shard.filename] = shard_stats_
        digests[shard.filename] = hasher.submit(sha256_of, config_dir / shard.filename)

    total = sum(len(s.keys) for s in todo)
    desc = f"{builder.NAME}/{builder.config.name}"
    with tqdm(total=total, unit="ex", desc=desc, disable=not progress or not todo, smoothing=0.05) as bar, hasher:
        if num_proc == 1 or len(todo) <= 1:
            for shard in todo:
                publish(shard, _write_one(builder, prepared, shard, config_dir, fingerprint, bar.update, review))
        else:
            pool = ProcessPoolExecutor(max_workers=min(num_proc, len(todo)), mp_context=_worker_context(builder))
            try:
                futures = {pool.submit(_write_one, builder, prepared, shard, config_dir, fingerprint, None, review): shard
                           for shard in todo}
                for future in as_completed(futures):
                    shard = futures[future]
                    publish(shard, future.result())
                    bar.update(len(shard.keys))
            finally:
                pool.shutdown(wait=True, cancel_futures=True)  # on an error: no new shards, running ones finish
    return {name: replace(value, sha256=digests[name].result()) if name in digests else value
            for name, value in stats.items()}


def _worker_context(builder: Builder):
    """Fresh worker processes forked from a server that has the builder's modules imported once
    (safe like spawn — no inherited threads or state from this process — and fast like fork)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["imagenet_suite.build", "datasets", type(builder).__module__])
    return context


def _shard_key(fingerprint: str, shard: Shard) -> str:
    return f"{fingerprint}:{shard.split}:{shard.index}"


def _write_one(builder: Builder, prepared: Prepared, shard: Shard, config_dir: Path, fingerprint: str,
               on_row=None, review: ReviewApplication | None = None) -> ShardStats:
    rows = _checked_rows(builder, prepared, shard)
    if review is not None:
        rows = review.rows(rows)
    callback = (lambda: on_row(1)) if on_row else None
    return write_shard(config_dir / shard.filename, rows, _features(builder, review), _shard_key(fingerprint, shard),
                       builder.config.row_group_rows, callback, publish=False, sha256=False)


def _checked_rows(builder: Builder, prepared: Prepared, shard: Shard):
    """The generator's rows, checked to come one per planned key, in plan order (by ``KEY_COLUMN``)."""
    count = 0
    for row, key in zip(builder.generate(prepared, shard), shard.keys, strict=False):
        if row.get(builder.KEY_COLUMN) != key:
            raise RuntimeError(f"{builder.NAME}: generator yielded {builder.KEY_COLUMN} {row.get(builder.KEY_COLUMN)!r} "
                               f"where the plan has {key!r}")
        count += 1
        yield row
    if count != len(shard.keys):
        raise RuntimeError(f"{builder.NAME}: generator yielded {count} rows for {shard.filename}, plan has {len(shard.keys)}")


def _write_card_and_info(builder_cls: type[Builder], builder: Builder, info: dict, folder: Path) -> None:
    default = next(c.name for c in builder_cls.CONFIGS if c.name in info["configs"])
    context = {"name": builder.NAME, "version": builder.VERSION, "folder": folder.name, "seed": builder.seed}
    for cfg in info["configs"].values():
        context.update(cfg.get("card_context", {}))
    sections = card.generated_sections(builder_cls, info, default)
    if "review" in info:
        sections = sections.rstrip() + "\n\n" + card_section(info["review"])
    text = card.render_card(info, default, card.load_template(builder.CARD_TEMPLATE or builder.NAME), context, sections)
    _atomic_write(folder / CARD, text.encode("utf-8"))
    info["card_sha256"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    info[SELF_HASH] = build_info_hash(info)
    _atomic_write(folder / BUILD_INFO, (json.dumps(info, indent=1, sort_keys=False) + "\n").encode())


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + INCOMPLETE)
    tmp.write_bytes(data)
    os.replace(tmp, path)


__all__ = ["build_dataset", "plan_fingerprint"]
