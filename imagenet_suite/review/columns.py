"""How a built dataset's columns become review fields: which column is the ground truth, readable names.

Works for any imagenet-suite config from its ``build_info.json`` alone (features + protocol):

* an OOD config whose protocol names a ``group_column`` (NINCO's ``ood_class``, the unit tests'
  ``test``, the popular subsamples' ``source_dataset``): that ClassLabel is the OOD class;
* an OOD config without classes (``protocol.ood is True``, e.g. ImageNet-O): every row's ground
  truth is the dataset itself (its builder name);
* otherwise the ImageNet-1k ``label`` (or the first ClassLabel column): an in-distribution class.

Readable names: ImageNet-1k wnids become their first lemma (made unique where two classes share one);
other classes take the row's readable-name column when the builder wrote one (``class_name``,
``dataset_name``, ``test_name``, ``print_name``), else the class name itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..classes import imagenet_wnids
from ..dataset.folder import DatasetFolder
from .errors import ReviewError
from .predictions import imagenet_display_names

READABLE_COLUMNS = ("class_name", "dataset_name", "test_name", "print_name")
# Sample fields FiftyOne owns or the review workflow writes; dataset columns never overwrite them.
RESERVED_FIELDS = frozenset(
    {
        "id",
        "_id",
        "filepath",
        "tags",
        "metadata",
        "media_type",
        "created_at",
        "last_modified_at",
        "row_id",
        "ground_truth",
        "is_ood",
        "source_dataset",
        "predictions",
        "predicted_class",
        "msp",
        "energy",
        "review_decision",
        "review_reviewer",
        "review_timestamp",
        "review_note",
        "review_contamination",
        "review_incidental_mode",
        "review_imagenet_classes",
        "authors_decision",
        "authors_code",
        "authors_log",
    }
)
SCALAR_DTYPES = (
    "string",
    "large_string",
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
)


@dataclass(frozen=True)
class ColumnPlan:
    """What to read from a config and how it maps onto sample fields."""

    image_column: str
    class_column: str | None  # ClassLabel column holding the ground-truth class (None: one class)
    class_names: tuple[str, ...]  # the ClassLabel names (raw), or (builder name,) when class_column is None
    display_names: tuple[str, ...]  # readable name per class index
    readable_column: str | None  # per-row readable class name written by the builder
    is_ood: bool
    source_column: str | None  # "source_dataset" when the config has it
    extra_columns: dict[str, tuple[str, ...] | None]  # scalar column -> ClassLabel names (None: plain value)
    extra_kinds: dict[str, str]  # scalar column -> "string", "int", "float" or "bool" (its sample field's type)

    @property
    def columns(self) -> list[str]:
        """Every column to read besides ``id`` and the image."""
        wanted = [self.class_column, self.readable_column, self.source_column, *self.extra_columns]
        return list(dict.fromkeys(c for c in wanted if c))


def column_plan(folder: DatasetFolder, config: str) -> ColumnPlan:
    """The plan for ``config`` of ``folder``; ReviewError if it has no image or no ``id`` column."""
    features: dict[str, Any] = folder.config_info(config)["features"]
    protocol = folder.protocol(config)
    images = [name for name, f in features.items() if _type(f) == "Image"]
    if not images or "id" not in features:
        raise ReviewError(
            f"config {config!r} of {folder.path} has no {'image' if not images else 'id'} column "
            f"(columns: {sorted(features)}); the App reviews images joined on their `id`"
        )
    ood = protocol.get("ood")
    class_column = _class_column(features, ood)
    names = tuple(features[class_column]["names"]) if class_column else (folder.name,)
    imagenet = names == imagenet_wnids()
    readable = (
        None
        if imagenet or not class_column
        else next((c for c in READABLE_COLUMNS if _type(features.get(c)) == "Value"), None)
    )
    source = "source_dataset" if "source_dataset" in features else None
    skip = RESERVED_FIELDS | {"id", class_column, *images}
    extras = {
        name: tuple(f["names"]) if _type(f) == "ClassLabel" else None
        for name, f in features.items()
        if name not in skip and _is_scalar(f)
    }
    kinds = {name: _kind(features[name]) for name in extras}
    display = imagenet_display_names() if imagenet else names
    return ColumnPlan(images[0], class_column, names, display, readable, bool(ood), source, extras, kinds)


def _class_column(features: dict[str, Any], ood: Any) -> str | None:
    if isinstance(ood, dict) and _type(features.get(ood.get("group_column"))) == "ClassLabel":
        return ood["group_column"]
    if ood:
        return None
    if _type(features.get("label")) == "ClassLabel":
        return "label"
    return next((name for name, f in features.items() if _type(f) == "ClassLabel"), None)


def _type(feature: Any) -> str | None:
    return feature.get("_type") if isinstance(feature, dict) else None


def _is_scalar(feature: Any) -> bool:
    return _type(feature) == "ClassLabel" or (_type(feature) == "Value" and feature.get("dtype") in SCALAR_DTYPES)


def _kind(feature: dict[str, Any]) -> str:
    """The sample field type a scalar column becomes (ClassLabels become their names)."""
    dtype = feature.get("dtype", "")
    if _type(feature) == "ClassLabel" or "string" in dtype:
        return "string"
    return "bool" if dtype == "bool" else "float" if dtype.startswith("float") else "int"
