"""Read side of the imagenet-suite output format: a built dataset folder.

A dataset folder (``<out>/<name>-<version>[-seed<N>]/``) holds::

    README.md                                  card: YAML (configs, dataset_info) + prose
    build_info.json                            provenance, sha256 of every file, row counts
    <config>/<split>-00000-of-00004.parquet    data shards
    <config>/<other files>                     extra artifacts of a config (e.g. .npy matrices)

``build_info.json`` (``format: imagenet-suite/1``) looks like::

    {"format": "imagenet-suite/1", "builder": "imagenet_val", "version": "1.0.0",
     "package_version": "0.1.0", "seed": null,
     "configs": {"default": {
         "options": {...}, "sources": {"val_tar": {"file": ..., "sha256": ..., "size": ...}},
         "features": {<datasets.Features.to_dict()>}, "protocol": {...},
         "splits": {"validation": {"num_examples": 50000, "num_bytes": ...}},
         "files": {"default/validation-00000-of-00013.parquet":
                       {"sha256": ..., "size": ..., "split": "validation", "num_rows": 4000}}}},
     "card_sha256": "...", "build_info_sha256": "<sha256 of the rest, canonical JSON>"}

``protocol`` is the evaluation protocol published as data (class subset, class mapping, crop);
the scorer reads it so users never pass it by hand.

Every read is verified (the one read path of score, predict, evaluate, review and the builders
that take ``--input``): opening a folder checks ``build_info.json`` against its own hash, and a
file is handed out (:meth:`DatasetFolder.split_files`, :meth:`DatasetFolder.file`) only after its
size and sha256 match ``build_info.json``. The sha256 is computed once and remembered against the
file's stat (:func:`imagenet_suite.files.cached_sha256`), so later reads cost a ``stat`` per file;
a file that changed since is hashed again, and a mismatch is a one-line
:class:`~imagenet_suite.errors.DatasetFolderError` naming the file and both hashes.

This module never decodes images: label columns are read with pyarrow column projection.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import ConfigError, DatasetFolderError, closest, param
from ..files import cached_sha256, file_stamp

FORMAT = "imagenet-suite/1"
BUILD_INFO = "build_info.json"
CARD = "README.md"
SELF_HASH = "build_info_sha256"


def build_info_hash(info: dict[str, Any]) -> str:
    """sha256 of a build_info dict without its own ``build_info_sha256`` (canonical JSON), so that
    ``verify`` catches a change anywhere in build_info.json itself."""
    body = {key: value for key, value in info.items() if key != SELF_HASH}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class DatasetFolder:
    """A dataset folder written by imagenet-suite, opened for reading."""

    def __init__(self, path: str | Path, *, check_self_hash: bool = True):
        """Open ``path``; DatasetFolderError if build_info.json is missing, unreadable, of another format,
        or (unless ``check_self_hash`` is False: the build runner, which says how to recover) changed."""
        self.path = Path(path)
        info_path = self.path / BUILD_INFO
        if not self.path.is_dir():
            raise DatasetFolderError(f"{self.path}: not a directory")
        if not info_path.is_file():
            raise DatasetFolderError(
                f"{self.path} is not an imagenet-suite dataset folder: {BUILD_INFO} is missing "
                "(pass the folder that `imagenet-suite build` printed)"
            )
        raw = info_path.read_bytes()
        self.build_info_sha256 = hashlib.sha256(raw).hexdigest()
        """sha256 of the bytes of ``build_info.json`` as read: the identity of this build."""
        try:
            self.build_info: dict[str, Any] = json.loads(raw.decode("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise DatasetFolderError(f"{info_path}: not valid JSON ({err})") from err
        _check_build_info(info_path, self.build_info, check_self_hash)
        self._id_indexes: dict[tuple[str, str], dict[str, tuple[int, int]]] = {}
        self._checked: dict[str, tuple[int, ...]] = {}  # file -> stamp at which this instance checked it

    @property
    def name(self) -> str:
        return self.build_info["builder"]

    @property
    def version(self) -> str:
        return self.build_info["version"]

    @property
    def seed(self) -> int | None:
        return self.build_info.get("seed")

    @property
    def configs(self) -> list[str]:
        return list(self.build_info["configs"])

    def config_info(self, config: str | None = None) -> dict[str, Any]:
        """The build_info entry of a config (the only config when ``config`` is None)."""
        return self.build_info["configs"][self.resolve_config(config)]

    def resolve_config(self, config: str | None, name: str = "config") -> str:
        """``config`` itself if built here; the single built config if None; else ConfigError (naming the
        parameter ``name`` that sets it)."""
        if config is None:
            if len(self.configs) != 1:
                raise ConfigError(f"{self.path} holds configs {self.configs}: name one with {param(name)}")
            return self.configs[0]
        if config not in self.build_info["configs"]:
            match = closest(config, self.configs)
            hint = f"did you mean {match!r}?" if match else f"it holds {self.configs}"
            raise ConfigError(f"{self.path} has no config {config!r}; {hint}")
        return config

    def splits(self, config: str | None = None) -> list[str]:
        return list(self.config_info(config)["splits"])

    def resolve_split(self, config: str | None, split: str | None, name: str = "split") -> str:
        """``split`` itself if built in ``config``; the config's single split if None; else ConfigError (naming
        the parameter ``name`` that sets it)."""
        splits = self.splits(config)
        if split is None:
            if len(splits) != 1:
                raise ConfigError(
                    f"config {self.resolve_config(config)!r} of {self.path} has splits {splits}: name one with "
                    f"{param(name)}"
                )
            return splits[0]
        if split not in splits:
            raise ConfigError(f"config {self.resolve_config(config)!r} has no split {split!r}; it has {splits}")
        return split

    def split_files(self, config: str | None = None, split: str | None = None) -> list[Path]:
        """The Parquet shards of a split, in shard order."""
        split = self.resolve_split(config, split)
        files = self.config_info(config)["files"]
        return [self._checked_path(rel, meta) for rel, meta in sorted(files.items()) if meta.get("split") == split]

    def file(self, rel: str) -> Path:
        """The path of a file listed in build_info.json (a shard or an extra artifact such as a
        ``.npy`` matrix), after checking its size and sha256; DatasetFolderError if unlisted or different."""
        for info in self.build_info["configs"].values():
            if rel in info["files"]:
                return self._checked_path(rel, info["files"][rel])
        raise DatasetFolderError(f"{self.path / rel}: not listed in {self.path / BUILD_INFO}")

    def check_files(self) -> int:
        """Check every file of every config (size and sha256, remembered hashes reused); the byte count."""
        total = 0
        for info in self.build_info["configs"].values():
            for rel, meta in sorted(info["files"].items()):
                total += self._checked_path(rel, meta).stat().st_size
        return total

    def _checked_path(self, rel: str, meta: dict[str, Any]) -> Path:
        path = self.path / rel
        try:
            stat = path.stat()
        except FileNotFoundError as err:
            raise DatasetFolderError(f"{path}: missing; {_WAY_OUT.format(folder=self.path)}") from err
        if stat.st_size != meta["size"]:
            raise DatasetFolderError(
                f"{path}: {stat.st_size} bytes, {BUILD_INFO} says {meta['size']} (truncated or modified "
                f"since it was built); {_WAY_OUT.format(folder=self.path)}"
            )
        stamp = file_stamp(stat)
        if self._checked.get(rel) != stamp:
            digest = cached_sha256(path, expected=meta["sha256"])  # a remembered hash that disagrees is re-hashed
            if digest != meta["sha256"]:
                raise DatasetFolderError(
                    f"{path}: sha256 {digest}, {BUILD_INFO} says {meta['sha256']} (modified or corrupt "
                    f"since it was built); {_WAY_OUT.format(folder=self.path)}"
                )
            self._checked[rel] = stamp
        return path

    def features(self, config: str | None = None):
        """The config's ``datasets.Features``."""
        from datasets import Features

        return Features.from_dict(self.config_info(config)["features"])

    def protocol(self, config: str | None = None) -> dict[str, Any]:
        """The evaluation protocol the builder published (empty dict if none)."""
        return self.config_info(config).get("protocol", {})

    def column_names(self, config: str | None = None) -> list[str]:
        return list(self.config_info(config)["features"])

    def read_table(
        self, config: str | None = None, split: str | None = None, columns: list[str] | None = None
    ) -> pa.Table:
        """Read a split as one Arrow table, only ``columns`` (never decodes images)."""
        known = self.column_names(config)
        missing = [c for c in (columns or []) if c not in known]
        if missing:
            raise ConfigError(
                f"config {self.resolve_config(config)!r} of {self.path} has no column(s) {missing}; it has {known}"
            )
        tables = [_parquet(f, lambda f: pq.read_table(f, columns=columns)) for f in self.split_files(config, split)]
        return pa.concat_tables(tables) if tables else pa.table({})

    def iter_batches(
        self,
        config: str | None = None,
        split: str | None = None,
        columns: list[str] | None = None,
        batch_size: int = 256,
    ) -> Iterator[pa.RecordBatch]:
        """Stream a split in row order, ``batch_size`` rows at a time (bounded memory)."""
        known = self.column_names(config)
        if columns and any(c not in known for c in columns):
            raise ConfigError(
                f"config {self.resolve_config(config)!r} of {self.path} has no column(s) "
                f"{[c for c in columns if c not in known]}; it has {known}"
            )
        for path in self.split_files(config, split):
            yield from _batches(path, batch_size, columns)

    def take(
        self, ids: Sequence[str], config: str | None = None, split: str | None = None, columns: list[str] | None = None
    ) -> pa.Table:
        """Rows with the given ``id`` values, in that order, reading only the row groups that hold them.

        Raises ConfigError naming the first id that is not in the split.
        """
        index = self._id_index(self.resolve_config(config), self.resolve_split(config, split))
        missing = [i for i in ids if i not in index]
        if missing:
            raise ConfigError(
                f"{self.path}: {len(missing)} id(s) not in {self.resolve_config(config)}/"
                f"{self.resolve_split(config, split)}, e.g. {missing[0]!r}"
            )
        files = self.split_files(config, split)
        wanted: dict[int, list[int]] = {}  # file number -> rows, in request order
        for image_id in ids:
            file_no, row = index[image_id]
            wanted.setdefault(file_no, []).append(row)
        tables = {file_no: _read_rows(files[file_no], rows, columns) for file_no, rows in wanted.items()}
        cursor = dict.fromkeys(tables, 0)
        pieces = []
        for image_id in ids:  # reassemble in request order (consecutive runs come from one file)
            file_no = index[image_id][0]
            pieces.append(tables[file_no].slice(cursor[file_no], 1))
            cursor[file_no] += 1
        return pa.concat_tables(pieces) if pieces else self.read_table(config, split, columns).slice(0, 0)

    def _id_index(self, config: str, split: str) -> dict[str, tuple[int, int]]:
        key = (config, split)
        if key not in self._id_indexes:
            index = {}
            for file_no, path in enumerate(self.split_files(config, split)):
                ids = _parquet(path, lambda p: pq.read_table(p, columns=["id"])).column("id").to_pylist()
                for row, image_id in enumerate(ids):
                    index[image_id] = (file_no, row)
            self._id_indexes[key] = index
        return self._id_indexes[key]

    @cached_property
    def card_text(self) -> str:
        return (self.path / CARD).read_text(encoding="utf-8")


def _read_rows(path: Path, rows: list[int], columns: list[str] | None) -> pa.Table:
    """Rows ``rows`` (positions in the file, any order) of one Parquet file, reading only their row groups."""
    return _parquet(path, lambda p: _read_rows_of(p, rows, columns))


def _read_rows_of(path: Path, rows: list[int], columns: list[str] | None) -> pa.Table:
    parquet = pq.ParquetFile(path)
    starts = [0]
    for group in range(parquet.metadata.num_row_groups):
        starts.append(starts[-1] + parquet.metadata.row_group(group).num_rows)
    groups = sorted({bisect.bisect_right(starts, row) - 1 for row in rows})
    table = parquet.read_row_groups(groups, columns=columns)
    first_row_in_table, offset = {}, 0
    for group in groups:
        first_row_in_table[group] = offset
        offset += starts[group + 1] - starts[group]
    local = []
    for row in rows:
        group = bisect.bisect_right(starts, row) - 1
        local.append(first_row_in_table[group] + row - starts[group])
    return table.take(local)


_WAY_OUT = "`imagenet-suite verify {folder}` checks every file; rebuild the dataset to repair it"


def _parquet(path: Path, read):
    """``read(path)``, with a Parquet file that cannot be read reported as one line naming it."""
    try:
        return read(path)
    except (pa.ArrowException, OSError) as err:
        raise _unreadable(path, err) from err


def _batches(path: Path, batch_size: int, columns: list[str] | None) -> Iterator[pa.RecordBatch]:
    try:
        yield from pq.ParquetFile(path).iter_batches(batch_size=batch_size, columns=columns)
    except (pa.ArrowException, OSError) as err:
        raise _unreadable(path, err) from err


def _unreadable(path: Path, err: Exception) -> DatasetFolderError:
    return DatasetFolderError(f"{path}: not a readable Parquet file ({' '.join(str(err).split())})")


def _check_build_info(path: Path, info: Any, check_self_hash: bool) -> None:
    """The parts of build_info.json every reader relies on: format, its own hash, configs and their files."""
    if not isinstance(info, dict) or info.get("format") != FORMAT:
        found = info.get("format") if isinstance(info, dict) else type(info).__name__
        raise DatasetFolderError(f"{path}: format is {found!r}, expected {FORMAT!r}")
    if check_self_hash and info.get(SELF_HASH) != build_info_hash(info):
        raise DatasetFolderError(
            f"{path}: its content differs from its {SELF_HASH} (build_info.json was modified or is "
            "corrupt); rebuild the dataset, or restore the build_info.json it was built with"
        )
    for key, kind in (("builder", str), ("version", str), ("configs", dict)):
        if not isinstance(info.get(key), kind):
            raise DatasetFolderError(f"{path}: {key!r} is missing or not a {kind.__name__}")
    for name, config in info["configs"].items():
        for key in ("files", "splits", "features"):
            if not isinstance(config, dict) or not isinstance(config.get(key), dict):
                raise DatasetFolderError(f"{path}: configs[{name!r}] has no {key!r} object")
        for rel, meta in config["files"].items():
            if not (
                isinstance(meta, dict) and isinstance(meta.get("size"), int) and isinstance(meta.get("sha256"), str)
            ):
                raise DatasetFolderError(f"{path}: configs[{name!r}].files[{rel!r}] needs an integer size and a sha256")
