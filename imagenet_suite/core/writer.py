"""Parquet writer: rows → one shard file, written under a temporary name and renamed when done.

Files are readable by ``datasets`` 3.6 through 5.x with no code of ours:
* images are ``struct<bytes: binary, path: string>`` holding the original bytes (never re-encoded);
* the ``huggingface`` schema metadata uses the 3.x vocabulary (``Sequence`` / ``[struct]``) that
  every version reads (5.x writes ``List``, which 3.6 cannot read);
* image-byte columns are stored uncompressed (JPEG/PNG are compressed already), others snappy;
* row groups are small for image configs so that reading one row reads little.

Output is a deterministic function of the rows, the features and the metadata. A shard is
written under ``<name>.incomplete`` (removed again if writing fails, e.g. on a full disk) and
published by an fsync and a rename (:func:`imagenet_suite.files.replace_durably`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import ConfigError, InvalidSourceData, param
from ..files import incomplete_path, replace_durably, sha256_file

FINGERPRINT_KEY = b"imagenet_suite.fingerprint"


@dataclass(frozen=True)
class ShardStats:
    num_rows: int
    num_bytes: int  # uncompressed size of the row groups (Parquet footer)
    size: int  # file size in bytes
    sha256: str | None  # None when the caller hashes the file itself (write_shard(..., sha256=False))


def legacy_features_dict(features) -> dict:
    """``features.to_dict()`` rewritten in the datasets-3.x vocabulary (read by 3.6 … 5.x)."""

    def convert(node: Any) -> Any:
        if isinstance(node, dict):
            if node.get("_type") in ("List", "LargeList"):
                inner = convert(node["feature"])
                if isinstance(inner, dict) and "_type" not in inner:  # list of structs
                    return [inner]
                out = {"feature": inner, "_type": "Sequence"}
                if node.get("length", -1) != -1:
                    out["length"] = node["length"]
                return out
            return {key: convert(value) for key, value in node.items()}
        if isinstance(node, list):
            return [convert(value) for value in node]
        return node

    return convert(features.to_dict())


def arrow_schema(features, fingerprint: str) -> pa.Schema:
    """Arrow schema of ``features`` with 3.x-compatible HF metadata and our fingerprint."""
    metadata = {
        b"huggingface": json.dumps({"info": {"features": legacy_features_dict(features)}}).encode(),
        FINGERPRINT_KEY: fingerprint.encode(),
    }
    return features.arrow_schema.with_metadata(metadata)


def _binary_columns(schema: pa.Schema) -> list[str]:
    paths = []
    for field_ in schema:
        if pa.types.is_struct(field_.type):
            paths += [f"{field_.name}.{child.name}" for child in field_.type if pa.types.is_binary(child.type)]
        elif pa.types.is_binary(field_.type):
            paths.append(field_.name)
    return paths


def _batches(rows: Iterable[dict], size: int) -> Iterable[list[dict]]:
    batch: list[dict] = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


@dataclass(frozen=True)
class ShardFormat:
    """What a shard's bytes depend on beside its rows.

    ``features``: the ``datasets.Features`` every row is encoded with; ``fingerprint``: the text stored
    in the footer (the runner's plan key, read back by :func:`shard_fingerprint`); ``row_group_rows``:
    rows per Parquet row group (≥ 1).
    """

    features: Any
    fingerprint: str
    row_group_rows: int

    def __post_init__(self) -> None:
        if self.row_group_rows < 1:
            raise ConfigError(f"{param('row_group_rows')} must be ≥ 1, got {self.row_group_rows}")


def write_shard(
    path: Path,
    rows: Iterable[dict],
    shard_format: ShardFormat,
    on_row: Callable[[], None] | None = None,
    *,
    publish: bool = True,
    sha256: bool = True,
) -> ShardStats:
    """Write ``rows`` to ``path`` atomically (``path.incomplete`` then rename); return its stats.

    Each row is encoded with ``shard_format.features`` (which rejects out-of-range class labels); a row
    that does not fit the schema raises InvalidSourceData naming the row's ``id``.
    With ``publish=False`` the finished file stays at its temporary name until
    :func:`publish_shard` (the caller first checks what the rows came from). With ``sha256=False``
    the stats carry no hash (the build runner hashes finished shards on a background thread).
    """
    features, row_group_rows = shard_format.features, shard_format.row_group_rows
    schema = arrow_schema(features, shard_format.fingerprint)
    binary = _binary_columns(schema)
    compression = {column: "none" for column in binary}
    compression.update({c: "snappy" for c in _leaf_columns(schema) if c not in compression})
    tmp = incomplete_path(path)
    num_rows = 0
    try:
        with pq.ParquetWriter(
            tmp,
            schema,
            compression=compression,
            use_dictionary=False,
            write_statistics=[c for c in _leaf_columns(schema) if c not in binary],
        ) as writer:
            for batch in _batches(rows, row_group_rows):
                table = _encode(batch, features, schema, path)
                writer.write_table(table, row_group_size=row_group_rows)
                num_rows += table.num_rows
                if on_row:
                    for _ in batch:
                        on_row()
            if num_rows == 0:
                writer.write_table(schema.empty_table())
    except OSError as err:  # disk full, I/O error: pyarrow's OSError names no file
        tmp.unlink(missing_ok=True)
        if err.filename is not None:
            raise
        text = re.sub(r"^\[Errno \d+\]\s*", "", " ".join(str(err).split()))
        code = re.search(r"\[errno (\d+)\]", str(err), re.IGNORECASE)
        raise OSError(int(code.group(1)) if code else err.errno, text, str(tmp)) from err
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if publish:
        publish_shard(path)
    written = path if publish else tmp
    return ShardStats(
        num_rows,
        _uncompressed_bytes(pq.read_metadata(written)),
        written.stat().st_size,
        sha256_file(written) if sha256 else None,
    )


def publish_shard(path: Path) -> None:
    """Give a finished shard (written with ``publish=False``) its final name, durably (fsync + rename + fsync)."""
    replace_durably(incomplete_path(path), path)


def _leaf_columns(schema: pa.Schema) -> list[str]:
    leaves = []
    for field_ in schema:
        if pa.types.is_struct(field_.type):
            leaves += [f"{field_.name}.{child.name}" for child in field_.type]
        else:
            leaves.append(field_.name)
    return leaves


def _encode(batch: list[dict], features, schema: pa.Schema, path: Path) -> pa.Table:
    """Rows → Arrow table through ``features.encode_batch`` (which range-checks class labels)."""
    columns = {name: [row[name] for row in batch] for name in features}
    try:
        return pa.Table.from_pydict(features.encode_batch(columns), schema=schema)
    except (ValueError, TypeError, KeyError, pa.ArrowException) as err:
        for row in batch:  # find the offending row to name it
            try:
                pa.Table.from_pylist([features.encode_example(row)], schema=schema)
            except (ValueError, TypeError, KeyError, pa.ArrowException) as row_err:
                raise InvalidSourceData(
                    f"{path.name}: row {row.get('id', '?')!r} does not fit the features: {row_err}"
                ) from row_err
        raise InvalidSourceData(f"{path.name}: rows do not fit the features: {err}") from err


def shard_fingerprint(path: Path) -> str | None:
    """The fingerprint stored in a finished shard's footer, or None if unreadable."""
    try:
        metadata = pq.read_schema(path).metadata or {}
    except (OSError, pa.ArrowException):
        return None
    value = metadata.get(FINGERPRINT_KEY)
    return value.decode() if value else None


def shard_stats(path: Path, sha256: bool = True) -> ShardStats:
    """Stats of a written shard, from its footer (and its sha256 unless ``sha256=False``)."""
    meta = pq.read_metadata(path)
    return ShardStats(
        meta.num_rows, _uncompressed_bytes(meta), path.stat().st_size, sha256_file(path) if sha256 else None
    )


def _uncompressed_bytes(meta: pq.FileMetaData) -> int:
    return sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
