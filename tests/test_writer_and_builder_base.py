"""Parquet writer (HF-compatible schema, validation, determinism) and the builder base contract."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from datasets import ClassLabel, Features, Image, List, Value

from imagenet_suite.core.builder import Builder, BuilderConfig, Option, example_rng
from imagenet_suite.core.writer import (
    ShardFormat,
    legacy_features_dict,
    publish_shard,
    shard_fingerprint,
    shard_stats,
    write_shard,
)
from imagenet_suite.errors import ConfigError, InvalidSourceData

FEATURES = Features(
    {
        "id": Value("string"),
        "image": Image(),
        "label": ClassLabel(names=["a", "b", "c"]),
        "labels": List(ClassLabel(names=["a", "b", "c"])),
        "boxes": List({"x": Value("int32"), "label": ClassLabel(names=["a", "b", "c"])}),
    }
)


def _rows(n=5, bad_label_at=None):
    for i in range(n):
        yield {
            "id": f"r{i}",
            "image": {"bytes": bytes([i]) * 50, "path": f"r{i}.png"},
            "label": 3 if i == bad_label_at else i % 3,
            "labels": [0, 2][: i % 3],
            "boxes": [{"x": i, "label": 1}],
        }


def test_schema_metadata_uses_the_vocabulary_datasets_36_reads():
    legacy = legacy_features_dict(FEATURES)
    assert legacy["labels"] == {"feature": {"names": ["a", "b", "c"], "_type": "ClassLabel"}, "_type": "Sequence"}
    assert isinstance(legacy["boxes"], list) and legacy["boxes"][0]["x"] == {"dtype": "int32", "_type": "Value"}
    assert "List" not in json.dumps(legacy)


def test_written_shard_roundtrips_and_is_deterministic(tmp_path):
    stats_a = write_shard(tmp_path / "a.parquet", _rows(), ShardFormat(FEATURES, "fp:1", row_group_rows=2))
    stats_b = write_shard(tmp_path / "b.parquet", _rows(), ShardFormat(FEATURES, "fp:1", row_group_rows=2))
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    assert stats_a == stats_b and stats_a.num_rows == 5
    assert stats_a == shard_stats(tmp_path / "a.parquet")
    unhashed = write_shard(
        tmp_path / "c.parquet", _rows(), ShardFormat(FEATURES, "fp:1", row_group_rows=2), publish=False, sha256=False
    )
    assert unhashed.sha256 is None and unhashed.size == stats_a.size and not (tmp_path / "c.parquet").exists()
    publish_shard(tmp_path / "c.parquet")
    assert (tmp_path / "c.parquet").read_bytes() == (tmp_path / "a.parquet").read_bytes()
    meta = pq.read_metadata(tmp_path / "a.parquet")
    assert meta.num_row_groups == 3
    column_compression = {
        meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i).compression
        for i in range(meta.num_columns)
    }
    assert column_compression["image.bytes"] == "UNCOMPRESSED" and column_compression["id"] == "SNAPPY"
    assert shard_fingerprint(tmp_path / "a.parquet") == "fp:1"
    table = pq.read_table(tmp_path / "a.parquet")
    assert table.column("image").to_pylist()[3] == {"bytes": bytes([3]) * 50, "path": "r3.png"}
    assert not list(tmp_path.glob("*.incomplete"))


def test_out_of_range_label_names_the_row_and_leaves_no_file(tmp_path):
    with pytest.raises(InvalidSourceData, match="row 'r3' does not fit the features"):
        write_shard(tmp_path / "a.parquet", _rows(bad_label_at=3), ShardFormat(FEATURES, "fp", row_group_rows=2))
    assert not (tmp_path / "a.parquet").exists()


def test_empty_shard_has_the_schema(tmp_path):
    stats = write_shard(tmp_path / "e.parquet", iter(()), ShardFormat(FEATURES, "fp", row_group_rows=2))
    assert stats == shard_stats(tmp_path / "e.parquet") and stats.num_rows == 0
    assert pq.read_table(tmp_path / "e.parquet").schema.names == list(FEATURES)


def test_example_rng_depends_only_on_seed_and_key():
    a = example_rng(0, "patchml", "k3", 42).random(4)
    assert np.array_equal(a, example_rng(0, "patchml", "k3", 42).random(4))
    assert not np.array_equal(a, example_rng(1, "patchml", "k3", 42).random(4))
    assert not np.array_equal(a, example_rng(0, "patchml", "k3", 43).random(4))
    assert not np.array_equal(example_rng(0, "ab", "c").random(2), example_rng(0, "a", "bc").random(2))
    assert not np.array_equal(example_rng(-1, "k").random(2), example_rng(1, "k").random(2))  # any integer seed
    assert np.array_equal(example_rng(2**40 + 5, "k").random(2), example_rng(2**40 + 5, "k").random(2))


class Toy(Builder):
    NAME = "toy"
    VERSION = "2.1.0"
    RELEASE_NOTES = {"2.1.0": "x"}
    CONFIGS = (BuilderConfig("one", "first", shard_size=4), BuilderConfig("two", "second"))
    OPTIONS = {"mode": Option("union", ("union", "drop")), "min_size": Option(8), "png": Option(True)}
    SEEDED = True

    def split_keys(self, prepared):
        return {"test": [f"k{i}" for i in range(10)], "extra": []}


def test_plan_cuts_keys_into_named_shards():
    shards = Toy("one").plan(None)
    assert [s.filename for s in shards] == [
        "test-00000-of-00003.parquet",
        "test-00001-of-00003.parquet",
        "test-00002-of-00003.parquet",
        "extra-00000-of-00001.parquet",
    ]
    assert shards[2].keys == ("k8", "k9") and shards[3].keys == ()


def test_options_are_parsed_checked_and_named_in_the_folder():
    assert Toy("one", seed=3).folder_name() == "toy-2.1.0-seed3"
    changed = Toy("one", seed=3, options={"mode": "drop", "min_size": "16", "png": "false"})
    assert changed.options == {"mode": "drop", "min_size": 16, "png": False}
    assert changed.folder_name().startswith("toy-2.1.0-seed3-") and changed.folder_name() != "toy-2.1.0-seed3"
    with pytest.raises(ConfigError, match="option mode='both': expected one of \\['union', 'drop'\\]"):
        Toy("one", options={"mode": "both"})
    with pytest.raises(ConfigError, match="option min_size='big': expected a int"):
        Toy("one", options={"min_size": "big"})
    with pytest.raises(ConfigError, match="no config 'three'"):
        Toy("three")


def test_declarations_are_checked():
    class BadVersion(Toy):
        VERSION = "2.1"

    class NoNotes(Toy):
        VERSION = "2.2.0"

    with pytest.raises(TypeError, match="MAJOR.MINOR.PATCH"):
        BadVersion.check_declaration()
    with pytest.raises(TypeError, match="RELEASE_NOTES has no entry for VERSION 2.2.0"):
        NoNotes.check_declaration()
