"""Review samples written as MongoDB documents in FiftyOne's own layout, in bulk.

Building a ``fo.Sample`` per row and calling ``Dataset.add_samples`` spends most of its time creating
and validating mongoengine objects (about 25 of them per sample with top-5 predictions), then
rebuilding them from the stored dicts. A loader that knows its fields can skip both: the schema is
declared once (:func:`declare_fields`), and each row becomes the exact dict FiftyOne itself would
store — ``Sample.to_mongo_dict()`` without ``None`` values, plus ``_dataset_id``, ``created_at`` and
``last_modified_at`` (``Dataset._make_dict``) — inserted with ``insert_many``. ``tests/test_review_load.py``
checks these documents against FiftyOne's serialisation of the same sample built with its public API.

Field layout (labels are ``Classification`` documents; ``raw_label``/``index`` are declared attributes):
``filepath``, ``tags``, ``metadata`` (``ImageMetadata``), ``row_id``, ``ground_truth``, ``is_ood``,
``source_dataset``, the config's scalar columns, and with model outputs ``predictions``
(``Classifications``, top-5), ``predicted_class``, ``msp``, ``energy``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from bson import ObjectId

from ..classes import imagenet_wnids
from .columns import ColumnPlan
from .predictions import RowPrediction, imagenet_display_names

LABEL_ATTRIBUTES = {"raw_label": "string", "index": "int"}
PREDICTION_FIELDS = ("predictions", "predicted_class", "msp", "energy")
_STRINGS = (
    "row_id",
    "source_dataset",
    "review_decision",
    "review_reviewer",
    "review_note",
    "review_contamination",
    "review_incidental_mode",
    "review_imagenet_classes",
    "authors_decision",
    "authors_code",
    "authors_log",
)


def declare(dataset, fields: Mapping[str, Any]) -> None:
    """Declare on ``dataset`` the sample fields of ``fields`` (``{path: a fiftyone Field}``, a parent before its
    attributes) that it lacks, in one schema merge: FiftyOne's ``add_dynamic_sample_fields`` given the fields,
    which saves and reloads the dataset once per nesting depth, where ``add_sample_field`` does per field (about
    40 ms each in the review tests). The stored schema is the same. A path the dataset has is left as it is."""
    schema = dataset.get_field_schema(flat=True)
    missing = {path: field for path, field in fields.items() if path not in schema}
    if missing:
        dataset.add_dynamic_sample_fields(missing)


def review_fields(fo, plan: ColumnPlan) -> dict[str, Any]:
    """Every sample field the review writes for the rows of ``plan``, ``{path: a fiftyone Field}``: the review's
    strings, the config's scalar columns, the labels (``Classification``/``Classifications``) and their
    attributes (:data:`LABEL_ATTRIBUTES`)."""
    kinds = {"string": fo.StringField, "int": fo.IntField, "float": fo.FloatField, "bool": fo.BooleanField}
    fields: dict[str, Any] = {name: fo.StringField() for name in _STRINGS}
    fields.update(review_timestamp=fo.DateTimeField(), is_ood=fo.BooleanField())
    fields.update(msp=fo.FloatField(), energy=fo.FloatField())
    fields.update((name, kinds[kind]()) for name, kind in plan.extra_kinds.items())
    for name, doc_type in (
        ("ground_truth", fo.Classification),
        ("predicted_class", fo.Classification),
        ("predictions", fo.Classifications),
    ):
        fields[name] = fo.EmbeddedDocumentField(doc_type)
        prefix = f"{name}.classifications" if doc_type is fo.Classifications else name
        fields.update((f"{prefix}.{attribute}", kinds[kind]()) for attribute, kind in LABEL_ATTRIBUTES.items())
    return fields


def declare_fields(fo, dataset, plan: ColumnPlan) -> None:
    """Declare every field the review writes (idempotent), so documents can be inserted directly."""
    declare(dataset, review_fields(fo, plan))
    if "row_id" not in dataset.list_indexes():
        dataset.create_index("row_id", unique=True)


def classification(label: str, confidence: float | None = None, **attributes: Any) -> dict[str, Any]:
    """A ``Classification`` document (what ``fo.Classification(...).to_mongo()`` stores)."""
    doc: dict[str, Any] = {"_id": ObjectId(), "_cls": "Classification", "tags": [], "label": label}
    if confidence is not None:
        doc["confidence"] = confidence
    doc.update((k, v) for k, v in attributes.items() if v is not None)
    return doc


def prediction_fields(prediction: RowPrediction | None) -> dict[str, Any]:
    """``predictions``/``predicted_class``/``msp``/``energy`` of a row (all None without outputs)."""
    if prediction is None:
        return dict.fromkeys(PREDICTION_FIELDS)
    names, wnids = imagenet_display_names(), imagenet_wnids()
    top = [
        classification(names[c], p, raw_label=wnids[c], index=c) for c, p in zip(prediction.classes, prediction.probs)
    ]
    first = prediction.classes[0]
    return {
        "predictions": {"_cls": "Classifications", "classifications": top},
        "predicted_class": classification(names[first], prediction.msp, raw_label=wnids[first], index=first),
        "msp": prediction.msp,
        "energy": prediction.energy,
    }


def image_metadata(size_bytes: int, mime_type: str | None, width: int, height: int) -> dict[str, Any]:
    doc = {"_cls": "ImageMetadata", "size_bytes": size_bytes, "mime_type": mime_type, "width": width, "height": height}
    return {k: v for k, v in doc.items() if v is not None}


def sample_document(filepath: str, fields: dict[str, Any]) -> dict[str, Any]:
    """The stored form of a new sample with ``fields`` (None values omitted, as FiftyOne does)."""
    from fiftyone.core.odm.sample import _generate_rand

    doc = {"filepath": filepath, "tags": [], "_media_type": "image", "_rand": _generate_rand()}
    doc.update((k, v) for k, v in fields.items() if v is not None)
    return doc


def insert_documents(dataset, documents: list[dict[str, Any]]) -> None:
    """Insert new sample documents into ``dataset`` (the fields must be declared)."""
    if not documents:
        return
    now = datetime.utcnow()
    for doc in documents:
        doc.update(_dataset_id=dataset._doc.id, created_at=now, last_modified_at=now)
    dataset._sample_collection.insert_many(documents, ordered=False)


def update_documents(dataset, updates: dict[str, dict[str, Any]]) -> None:
    """Set (or, for None, remove) fields of existing samples keyed by ``row_id``, in one bulk write."""
    from pymongo import UpdateOne

    now = datetime.utcnow()
    ops = []
    for row_id, fields in updates.items():
        change: dict[str, Any] = {
            "$set": {"last_modified_at": now, **{k: v for k, v in fields.items() if v is not None}}
        }
        removed = [k for k, v in fields.items() if v is None]
        if removed:
            change["$unset"] = dict.fromkeys(removed, "")
        ops.append(UpdateOne({"row_id": row_id}, change))
    if ops:
        dataset._sample_collection.bulk_write(ops, ordered=False)
        dataset.reload()
