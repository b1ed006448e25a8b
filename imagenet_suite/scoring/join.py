"""Join model outputs to a built dataset's label columns by ``id``.

Only the ``id`` column and the label columns a metric asks for are read (pyarrow column projection
through :meth:`DatasetFolder.read_table`); images are never read. The join is strict: every dataset
row must have exactly one outputs row and every outputs row must be a dataset row, and the number of
scores per row must equal the dataset's label space. The big score tensor is never reordered or
copied; instead the (small) label columns are put into the outputs' row order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import torch

from ..classes import NUM_CLASSES
from ..dataset.folder import DatasetFolder
from ..errors import DatasetFolderError, OutputsError
from .outputs import ModelOutputs

ID_COLUMN = "id"
SHOWN = 5  # ids quoted in an error message


@dataclass(frozen=True)
class JoinedSplit:
    """Outputs and label columns of one dataset split, row ``i`` of each describing the same image.

    ``columns`` maps a column name to its values in outputs order: 1-D int64 tensors for integer
    columns, ``[N, L]`` int64 tensors padded with -1 for list columns, lists for string columns.
    """

    outputs: ModelOutputs
    columns: dict[str, Any]
    features: dict[str, Any]
    protocol: dict[str, Any]
    dataset: str
    config: str
    split: str
    build_info: dict[str, Any] = field(repr=False, default_factory=dict)

    @property
    def available_columns(self) -> tuple[str, ...]:
        return tuple(self.features)


def expected_num_classes(features: dict[str, Any], protocol: dict[str, Any]) -> int:
    """Scores per row a dataset expects: its ``label`` ClassLabel size (also inside list columns),
    else ``protocol['num_classes']``, else the 1000 ImageNet-1k classes every builder uses."""
    for name in ("label", "real_labels"):
        names = _class_label_names(features.get(name))
        if names is not None:
            return len(names)
    return int(protocol.get("num_classes", NUM_CLASSES))


def join_outputs(
    dataset: str | Path | DatasetFolder,
    outputs: ModelOutputs,
    label_columns: list[str],
    config: str | None = None,
    split: str | None = None,
    validate: bool = True,
) -> JoinedSplit:
    """Read ``id`` + ``label_columns`` of a split and align them with ``outputs`` by id.

    Refuses (``OutputsError``): dataset rows without outputs, outputs ids not in the split,
    duplicate ids on either side, a C that is not the dataset's label space, and (``validate``)
    NaN/inf scores or probability rows that do not sum to 1.

    Example:
        A two-image ``imagenet_val`` in the ImageFolder layout (``val/<wnid>/<id>.JPEG``), built
        into a temporary folder:

        >>> import tempfile
        >>> from imagenet_suite.testing import tiny_val_build
        >>> tmp = tempfile.TemporaryDirectory()
        >>> folder = tiny_val_build(tmp.name)  # two images, classes 0 and 1

        Outputs in any row order; the label column comes back in the outputs' order:

        >>> import torch
        >>> outputs = ModelOutputs(torch.zeros(2, 1000), ["ILSVRC2012_val_00000002", "ILSVRC2012_val_00000001"])
        >>> joined = join_outputs(folder, outputs, ["label"])
        >>> joined.dataset, joined.config, joined.split, joined.columns["label"]
        ('imagenet_val', 'default', 'validation', tensor([1, 0]))
        >>> tmp.cleanup()
    """
    folder = dataset if isinstance(dataset, DatasetFolder) else DatasetFolder(dataset)
    config = folder.resolve_config(config)
    split = folder.resolve_split(config, split)
    features = folder.config_info(config)["features"]
    protocol = folder.protocol(config)
    if ID_COLUMN not in features:
        raise DatasetFolderError(f"{folder.path} config {config!r} has no {ID_COLUMN!r} column to join outputs on")
    num_classes = expected_num_classes(features, protocol)
    if outputs.num_classes != num_classes:
        raise OutputsError(
            f"outputs have C={outputs.num_classes} scores per row; {folder.name} ({config}) uses a "
            f"{num_classes}-class label space"
        )
    if validate:
        outputs.validate()
    wanted = [ID_COLUMN] + [c for c in dict.fromkeys(label_columns) if c != ID_COLUMN]
    table = folder.read_table(config, split, columns=wanted)
    order = _output_rows_to_dataset_rows(
        table.column(ID_COLUMN).to_pylist(), outputs.ids, f"{folder.name}/{config}/{split}"
    )
    columns = {name: _column_values(table.column(name), order, outputs.device) for name in wanted[1:]}
    return JoinedSplit(outputs, columns, features, protocol, folder.name, config, split, folder.build_info)


def _output_rows_to_dataset_rows(dataset_ids: list[str], output_ids: tuple[str, ...], where: str) -> np.ndarray:
    """For each outputs row, the dataset row with the same id; refuses any mismatch."""
    position = {value: row for row, value in enumerate(dataset_ids)}
    if len(position) != len(dataset_ids):
        duplicates = len(dataset_ids) - len(position)
        raise DatasetFolderError(f"{where}: {duplicates} duplicate ids in the dataset's {ID_COLUMN!r} column")
    order = np.fromiter((position.get(value, -1) for value in output_ids), dtype=np.int64, count=len(output_ids))
    unknown = np.flatnonzero(order < 0)
    if len(unknown):
        shown = [output_ids[i] for i in unknown[:SHOWN]]
        raise OutputsError(f"{len(unknown)} outputs ids are not in {where}, e.g. {shown}")
    if len(output_ids) != len(dataset_ids):
        covered = np.zeros(len(dataset_ids), dtype=bool)
        covered[order] = True
        missing = [dataset_ids[i] for i in np.flatnonzero(~covered)[:SHOWN]]
        raise OutputsError(
            f"outputs miss {len(dataset_ids) - len(output_ids)} of the {len(dataset_ids)} rows of {where}, e.g. {missing}"
        )
    return order


def _column_values(column: pa.ChunkedArray, order: np.ndarray, device: torch.device):
    """A label column in outputs order: int64 tensor, padded list tensor, or list of strings."""
    kind = column.type
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _padded_lists(column.combine_chunks(), order).to(device)
    if pa.types.is_integer(kind):
        return torch.from_numpy(column.to_numpy().astype(np.int64)[order]).to(device)
    values = column.to_pylist()
    return [values[i] for i in order]


def _padded_lists(array: pa.ListArray, order: np.ndarray) -> torch.Tensor:
    """``[N, L]`` int64 with each row's list, padded with -1 (L = longest list, at least 1)."""
    offsets = array.offsets.to_numpy().astype(np.int64)
    offsets = offsets - offsets[0]
    flat = array.flatten().to_numpy(zero_copy_only=False).astype(np.int64)
    lengths = np.diff(offsets)
    width = max(1, int(lengths.max()) if len(lengths) else 1)
    padded = np.full((len(lengths), width), -1, dtype=np.int64)
    rows = np.repeat(np.arange(len(lengths)), lengths)
    padded[rows, np.arange(len(flat)) - np.repeat(offsets[:-1], lengths)] = flat
    return torch.from_numpy(padded[order])


def _class_label_names(feature: Any) -> list[str] | None:
    """Names of a ClassLabel feature, or of the ClassLabel inside a list feature; else None."""
    if not isinstance(feature, dict):
        return None
    if feature.get("_type") == "ClassLabel":
        return feature.get("names")
    inner = feature.get("feature")
    return _class_label_names(inner) if isinstance(inner, dict) else None
