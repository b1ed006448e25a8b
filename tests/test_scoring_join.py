"""Joining outputs to a built dataset folder by id; the folder is written by hand in the documented format."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from imagenet_suite.classes import imagenet_wnids
from imagenet_suite.dataset.folder import build_info_hash
from imagenet_suite.errors import DatasetFolderError, OutputsError
from imagenet_suite.scoring.join import expected_num_classes, join_outputs
from imagenet_suite.scoring.outputs import ModelOutputs


def label_feature() -> dict:
    return {"names": list(imagenet_wnids()), "_type": "ClassLabel"}


def write_dataset_folder(
    root: Path,
    columns: dict[str, list],
    features: dict,
    protocol: dict | None = None,
    config: str = "default",
    split: str = "validation",
    shards: int = 2,
    builder: str = "tiny",
) -> Path:
    """A dataset folder in the imagenet-suite/1 layout (build_info.json + Parquet shards)."""
    folder = root / f"{builder}-1.0.0"
    (folder / config).mkdir(parents=True)
    table = pa.table(columns)
    files = {}
    bounds = np.linspace(0, table.num_rows, shards + 1).astype(int)
    for shard in range(shards):
        rel = f"{config}/{split}-{shard:05d}-of-{shards:05d}.parquet"
        part = table.slice(bounds[shard], bounds[shard + 1] - bounds[shard])
        pq.write_table(part, folder / rel)
        data = (folder / rel).read_bytes()
        files[rel] = {
            "sha256": hashlib.sha256(data).hexdigest(),
            "size": len(data),
            "split": split,
            "num_rows": part.num_rows,
        }
    info = {
        "format": "imagenet-suite/1",
        "builder": builder,
        "version": "1.0.0",
        "package_version": "0",
        "seed": None,
        "configs": {
            config: {
                "options": {},
                "sources": {},
                "features": features,
                "protocol": protocol or {},
                "splits": {split: {"num_examples": table.num_rows, "num_bytes": 0}},
                "files": files,
            }
        },
        "card_sha256": None,
    }
    info["build_info_sha256"] = build_info_hash(info)
    (folder / "build_info.json").write_text(json.dumps(info))
    return folder


def val_like_folder(root: Path, labels: list[int], with_images: bool = True) -> Path:
    ids = [f"ILSVRC2012_val_{i + 1:08d}" for i in range(len(labels))]
    columns = {"id": ids, "file_name": [f"{i}.JPEG" for i in ids], "label": labels}
    features = {
        "id": {"dtype": "string", "_type": "Value"},
        "file_name": {"dtype": "string", "_type": "Value"},
        "label": label_feature(),
    }
    if with_images:
        columns["image"] = [{"bytes": b"not a jpeg", "path": f"{i}.JPEG"} for i in ids]
        features["image"] = {"_type": "Image"}
    return write_dataset_folder(root, columns, features)


@pytest.fixture()
def folder(tmp_path) -> Path:
    return val_like_folder(tmp_path, [3, 999, 0, 3, 17, 500])


def outputs_for(ids, num_classes=1000, seed=0, kind="logits") -> ModelOutputs:
    generator = torch.Generator().manual_seed(seed)
    values = torch.randn(len(ids), num_classes, generator=generator)
    return ModelOutputs(values if kind == "logits" else values.softmax(1), list(ids), kind)


def test_join_puts_labels_in_outputs_order_without_touching_the_scores(folder):
    ids = [
        "ILSVRC2012_val_00000005",
        "ILSVRC2012_val_00000001",
        "ILSVRC2012_val_00000006",
        "ILSVRC2012_val_00000002",
        "ILSVRC2012_val_00000004",
        "ILSVRC2012_val_00000003",
    ]
    outputs = outputs_for(ids)
    joined = join_outputs(folder, outputs, ["label"])
    assert joined.columns["label"].tolist() == [17, 3, 500, 999, 3, 0]
    assert joined.outputs.values.data_ptr() == outputs.values.data_ptr()
    assert (joined.dataset, joined.config, joined.split) == ("tiny", "default", "validation")


def test_join_reads_only_id_and_label_columns(folder, monkeypatch):
    read = []
    original = pq.read_table

    def recording(path, columns=None, **kwargs):
        read.append(tuple(columns or ()))
        return original(path, columns=columns, **kwargs)

    monkeypatch.setattr(pq, "read_table", recording)
    join_outputs(folder, outputs_for([f"ILSVRC2012_val_{i:08d}" for i in range(1, 7)]), ["label"])
    assert read and all(columns == ("id", "label") for columns in read)


def test_join_refuses_dataset_rows_without_outputs(folder):
    ids = [f"ILSVRC2012_val_{i:08d}" for i in range(1, 6)]
    with pytest.raises(OutputsError, match=r"miss 1 of the 6 rows .*ILSVRC2012_val_00000006"):
        join_outputs(folder, outputs_for(ids), ["label"])


def test_join_refuses_outputs_ids_not_in_the_dataset(folder):
    ids = [f"ILSVRC2012_val_{i:08d}" for i in range(1, 7)] + ["not-an-id"]
    with pytest.raises(OutputsError, match=r"1 outputs ids are not in tiny/default/validation.*not-an-id"):
        join_outputs(folder, outputs_for(ids), ["label"])


def test_join_refuses_wrong_number_of_classes(folder):
    ids = [f"ILSVRC2012_val_{i:08d}" for i in range(1, 7)]
    with pytest.raises(OutputsError, match=r"C=999 .* 1000-class label space"):
        join_outputs(folder, outputs_for(ids, num_classes=999), ["label"])


def test_join_refuses_nan_scores(folder):
    ids = [f"ILSVRC2012_val_{i:08d}" for i in range(1, 7)]
    outputs = outputs_for(ids)
    outputs.values[4, 7] = float("nan")
    with pytest.raises(OutputsError, match=r"row 4 \(id 'ILSVRC2012_val_00000005'\) contains NaN"):
        join_outputs(folder, outputs, ["label"])


def test_join_refuses_a_dataset_without_id_column(tmp_path):
    folder = write_dataset_folder(tmp_path, {"label": [1, 2]}, {"label": label_feature()})
    with pytest.raises(DatasetFolderError, match="no 'id' column"):
        join_outputs(folder, outputs_for(["a", "b"]), ["label"])


def test_join_refuses_duplicate_dataset_ids(tmp_path):
    features = {"id": {"dtype": "string", "_type": "Value"}, "label": label_feature()}
    folder = write_dataset_folder(tmp_path, {"id": ["a", "a", "b"], "label": [1, 2, 3]}, features)
    with pytest.raises(DatasetFolderError, match="1 duplicate ids"):
        join_outputs(folder, outputs_for(["a", "b", "c"]), ["label"])


def test_list_columns_become_padded_tensors(tmp_path):
    features = {
        "id": {"dtype": "string", "_type": "Value"},
        "real_labels": {"feature": label_feature(), "_type": "List"},
    }
    sets = [[5], [], [7, 2, 9], [1, 1000 - 1]]
    folder = write_dataset_folder(tmp_path, {"id": list("abcd"), "real_labels": sets}, features, shards=3)
    joined = join_outputs(folder, outputs_for(list("dcba")), ["real_labels"])
    assert joined.columns["real_labels"].tolist() == [[1, 999, -1], [7, 2, 9], [-1, -1, -1], [5, -1, -1]]


def test_expected_classes_come_from_the_label_space():
    assert expected_num_classes({"label": label_feature()}, {}) == 1000
    assert expected_num_classes({"real_labels": {"feature": {"names": ["a", "b"], "_type": "ClassLabel"}}}, {}) == 2
    assert expected_num_classes({"shape_label16": {"dtype": "int64"}}, {"num_classes": 21843}) == 21843
    assert expected_num_classes({"shape_label16": {"dtype": "int64"}}, {}) == 1000
