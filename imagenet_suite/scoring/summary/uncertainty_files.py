"""The run-folder files of ``evaluate``'s bootstrap (``RUN_DIR/uncertainty/``, each named with its sha256 in
suite.json's ``summary.uncertainty.files``), which a leaderboard pairs two models with
(:mod:`~imagenet_suite.scoring.summary.significance`):

* ``replicates.parquet`` — one float64 column per number with an interval (its
  :func:`~imagenet_suite.scoring.summary.intervals.number_path`), one row per resample: what the paired
  bootstrap tests read;
* ``<key>.parquet`` — per dataset whose headline accuracy is a share of images (top-1, ReaL, ...): ``id``
  and ``correct`` of every image it counts: what the McNemar tests read.

Every reader checks what it reads (one-line RunFolderError otherwise): the file is the one suite.json names
(sha256), of the expected format, and agrees with suite.json (resamples, seed, intervals; rows, share correct).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ...errors import RunFolderError
from ...files import atomic_write_bytes
from ..metrics.paired_tests import percentile_intervals

UNCERTAINTY_FOLDER = "uncertainty"
REPLICATES_FILE = "replicates.parquet"
REPLICATES_FORMAT = "imagenet-suite.replicates/1"
CORRECT_FORMAT = "imagenet-suite.correct/1"
CORRECT_COLUMNS = ["id", "correct"]


def write_uncertainty(
    run_dir: str | Path,
    record: dict[str, Any],
    table: pd.DataFrame,
    replicated: Mapping[str, Any],
    keys: Iterable[str],
) -> dict[str, Any]:
    """Write ``uncertainty/replicates.parquet`` and ``uncertainty/<key>.parquet`` (McNemar's correctness of
    ``keys``: the datasets of the accuracy table; ``replicated``: each key's :class:`~.intervals.ReportReplicates`)
    into ``run_dir``; return ``record`` with ``files``. Other
    ``.parquet`` files left there by an earlier run are removed."""
    folder = Path(run_dir) / UNCERTAINTY_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"format": REPLICATES_FORMAT, "resamples": record["resamples"], "seed": record["seed"]}
    written = {REPLICATES_FILE: _parquet(pa.Table.from_pandas(table, preserve_index=False), meta)}
    correct = {}
    for key in keys:
        found = replicated.get(key)
        if found is None or found.correct is None:
            continue
        ids, flags = found.correct
        name = key.replace("/", "__") + ".parquet"
        frame = pa.table({"id": pa.array(ids, pa.string()), "correct": pa.array(flags.astype(bool))})
        written[name] = _parquet(frame, {"format": CORRECT_FORMAT, "key": key})
        correct[key] = {"path": f"{UNCERTAINTY_FOLDER}/{name}", "rows": len(ids), "sha256": _sha256(written[name])}
    for stale in folder.glob("*.parquet"):
        if stale.name not in written:
            stale.unlink()
    for name, data in written.items():
        atomic_write_bytes(folder / name, data)
    replicates = {"path": f"{UNCERTAINTY_FOLDER}/{REPLICATES_FILE}", "sha256": _sha256(written[REPLICATES_FILE])}
    return {**record, "files": {"replicates": replicates, "correct": correct}}


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _parquet(table: pa.Table, meta: Mapping[str, Any]) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(table.replace_schema_metadata({"imagenet_suite": json.dumps(meta, sort_keys=True)}), buffer)
    return buffer.getvalue()


def _checked_bytes(run_dir: Path, entry: Mapping[str, Any], what: str) -> bytes:
    """The bytes of the file ``entry`` names, after their sha256 is checked against suite.json's record."""
    path = run_dir / entry["path"]
    if not path.is_file():
        raise RunFolderError(
            f"{path}: missing, though suite.json's summary.uncertainty names it ({what}); run evaluate again"
        )
    data = path.read_bytes()  # read once: hashed, then parsed
    digest = _sha256(data)
    if digest != entry["sha256"]:
        raise RunFolderError(
            f"{path}: not the file suite.json names ({what}; sha256 {digest[:12]}, recorded "
            f"{entry['sha256'][:12]}): the run folder was changed after evaluate; run evaluate again"
        )
    return data


def _read(data: bytes, path: Path, what: str) -> pa.Table:
    """The Parquet file ``data``; RunFolderError naming ``path`` if it is not one. One small file: ParquetFile's
    reader without threads (read_table's dataset machinery costs 6x more)."""
    try:
        return pq.ParquetFile(pa.BufferReader(data)).read(use_threads=False)
    except (OSError, pa.ArrowException) as err:
        raise RunFolderError(f"{path}: not a readable Parquet file ({what}: {err})") from err


def _checked_file(run_dir: Path, entry: Mapping[str, Any], what: str) -> pa.Table:
    """The parquet file ``entry`` names, after its sha256 is checked against suite.json's record."""
    return _read(_checked_bytes(run_dir, entry, what), run_dir / entry["path"], what)


def _file_meta(table: pa.Table | pa.Schema, path: Path, expected_format: str) -> dict[str, Any]:
    schema = table.schema if isinstance(table, pa.Table) else table
    raw = (schema.metadata or {}).get(b"imagenet_suite")
    meta = json.loads(raw) if raw else {}
    if meta.get("format") != expected_format:
        raise RunFolderError(f"{path}: format {meta.get('format')!r}, expected {expected_format!r}")
    return meta


def read_replicates(run_dir: str | Path, uncertainty: Mapping[str, Any]) -> pd.DataFrame:
    """The replicates of a run (one column per number with an interval), checked: the file is the one
    suite.json names, of its resamples and seed, with a column of numbers for every ``ci95`` number whose
    percentile interval is the recorded one. RunFolderError (one line) otherwise."""
    return _checked_replicates(Path(run_dir), uncertainty).to_pandas()


def replicate_columns(
    run_dir: str | Path, uncertainty: Mapping[str, Any], columns: Iterable[str] | None = None
) -> dict[str, np.ndarray]:
    """:func:`read_replicates`, checked alike, as ``{number: its replicates}`` (float64 arrays) of the numbers in
    ``columns`` the file has (None: all), in the file's order: a leaderboard's paired tests read 300 runs' files
    and take a column at a time, which a DataFrame makes 3 times as costly."""
    table = _checked_replicates(Path(run_dir), uncertainty)
    names = table.column_names
    wanted = set(names if columns is None else columns)
    return {name: _floats(column) for name, column in zip(names, table.columns, strict=True) if name in wanted}


def _checked_replicates(run_dir: Path, uncertainty: Mapping[str, Any]) -> pa.Table:
    entry = uncertainty["files"]["replicates"]
    table = _checked_file(run_dir, entry, "the bootstrap replicates")
    path = run_dir / entry["path"]
    meta = _file_meta(table, path, REPLICATES_FORMAT)
    if (meta.get("resamples"), meta.get("seed")) != (uncertainty["resamples"], uncertainty["seed"]):
        raise RunFolderError(
            f"{path}: resamples/seed {meta.get('resamples')}/{meta.get('seed')}, suite.json says "
            f"{uncertainty['resamples']}/{uncertainty['seed']}"
        )
    if table.num_rows != uncertainty["resamples"]:
        raise RunFolderError(f"{path}: {table.num_rows} rows, expected {uncertainty['resamples']} resamples")
    numbers = list(uncertainty["ci95"])
    columns = dict(zip(table.column_names, table.columns, strict=True))
    for number in numbers:
        if number not in columns:
            raise RunFolderError(f"{path}: no column {number}, which suite.json gives an interval")
        kind = columns[number].type
        if not (pa.types.is_floating(kind) or pa.types.is_integer(kind)):
            raise RunFolderError(f"{path}: column {number} holds {kind}, expected numbers (float64)")
    # every column's percentile interval in one call: numpy's quantile along an axis, column by column the same
    found = percentile_intervals(np.stack([_floats(columns[n]) for n in numbers], axis=1)) if numbers else []
    for number, interval in zip(numbers, found, strict=True):
        low, high = uncertainty["ci95"][number]
        if not all(
            math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12) for a, b in zip(interval, (low, high), strict=True)
        ):
            raise RunFolderError(
                f"{path}: column {number} gives the interval {list(interval)}, suite.json {[low, high]}"
            )
    return table


def _floats(column: pa.ChunkedArray) -> np.ndarray:
    """A column of numbers as float64 (a null as NaN)."""
    return np.asarray(column.to_numpy(), dtype=np.float64)


@dataclass(frozen=True)
class Correctness:
    """One dataset's per-image correctness as read from a run's ``uncertainty/<key>.parquet``: ``flags`` (bool,
    one per image, in the file's order), and the file's ``id`` column kept as it is stored (``encoded``: per
    row group its rows, codec, physical type and column-chunk bytes), decoded (from ``data``, the file) only
    when two runs' ids are not stored alike. Equal encodings decode to equal ids, so two runs of one build
    (same ids in the same order) are paired image by image without reading an id; the ids of 50,000 images
    cost about 6 ms to decode, the flags 0.6 ms."""

    flags: np.ndarray
    encoded: tuple
    data: bytes

    def ids(self) -> pa.ChunkedArray:
        """The ids, decoded from the file, in its order."""
        return pq.ParquetFile(pa.BufferReader(self.data)).read(columns=["id"], use_threads=False).column("id")

    def sorted(self) -> tuple[pa.Array, np.ndarray]:
        """The ids in ascending order and the flags in the same order (a stable sort: equal ids keep their
        order)."""
        ids = self.ids()
        order = pc.sort_indices(ids)
        return ids.take(order).combine_chunks().cast(pa.large_string()), self.flags[order.to_numpy()]

    def aligned(self, other: Correctness) -> tuple[np.ndarray, np.ndarray] | None:
        """The two runs' flags image by image (same ids in the same order), or None when they counted other
        images: at once when both files store their ids alike, else by sorting both by id."""
        if self.encoded == other.encoded:
            return self.flags, other.flags
        (ids, flags), (other_ids, other_flags) = self.sorted(), other.sorted()
        return (flags, other_flags) if ids.equals(other_ids) else None

    def series(self) -> pd.Series:
        """The flags indexed by id (in the file's order)."""
        return pd.Series(self.flags, index=self.ids().to_pylist())


def _encoded(metadata: pq.FileMetaData, data: bytes, column: int) -> tuple:
    """Per row group of the Parquet file ``data``: the rows, codec, physical type and stored bytes (all pages,
    headers included) of column ``column``."""
    chunks = []
    for group in range(metadata.num_row_groups):
        chunk = metadata.row_group(group).column(column)
        start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
        stored = data[start : start + chunk.total_compressed_size]
        chunks.append((chunk.num_values, chunk.compression, chunk.physical_type, stored))
    return tuple(chunks)


def read_correctness(run_dir: str | Path, uncertainty: Mapping[str, Any], key: str, accuracy: float) -> Correctness:
    """Per-image correctness of dataset ``key``'s headline accuracy (:class:`Correctness`), checked: the file
    is the one suite.json names, of that key, with the rows it records, and its share of correct images is
    ``accuracy``."""
    run_dir = Path(run_dir)
    entry = uncertainty["files"]["correct"][key]
    what = f"per-image correctness of {key}"
    path = run_dir / entry["path"]
    data = _checked_bytes(run_dir, entry, what)
    try:
        stored = pq.ParquetFile(pa.BufferReader(data))
        schema = stored.schema_arrow
        meta = _file_meta(schema, path, CORRECT_FORMAT)
        if meta.get("key") != key or stored.metadata.num_rows != entry["rows"] or schema.names != CORRECT_COLUMNS:
            raise RunFolderError(f"{path}: not the per-image correctness of {key} that suite.json names")
        table, encoded = stored.read(columns=["correct"], use_threads=False), _encoded(stored.metadata, data, 0)
    except (OSError, pa.ArrowException) as err:
        raise RunFolderError(f"{path}: not a readable Parquet file ({what}: {err})") from err
    flags = table.column("correct").to_numpy(zero_copy_only=False)
    share = float(flags.mean()) if len(flags) else math.nan
    if not math.isclose(share, accuracy, rel_tol=1e-12, abs_tol=1e-12):
        raise RunFolderError(
            f"{path}: {share!r} of its images are correct, but suite.json's accuracy of {key} is {accuracy!r}"
        )
    return Correctness(flags, encoded, data)


def read_correct(run_dir: str | Path, uncertainty: Mapping[str, Any], key: str, accuracy: float) -> pd.Series:
    """:func:`read_correctness` as a Series: the flags (bool) indexed by id."""
    return read_correctness(run_dir, uncertainty, key, accuracy).series()


__all__ = [
    "CORRECT_FORMAT",
    "REPLICATES_FILE",
    "REPLICATES_FORMAT",
    "UNCERTAINTY_FOLDER",
    "Correctness",
    "read_correct",
    "read_correctness",
    "read_replicates",
    "replicate_columns",
    "write_uncertainty",
]
