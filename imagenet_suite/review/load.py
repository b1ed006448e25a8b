"""Load any imagenet-suite dataset folder (+ model outputs) into a persistent FiftyOne dataset for review.

``load_for_review(FOLDER, config, split, LoadOptions(outputs=...))`` makes (or re-opens) the FiftyOne
dataset ``<folder name>-<config>-<split>`` with one sample per row (every input of a load is one
:class:`LoadOptions`):

* ``filepath``: the row's original image bytes, written once to a cache folder
  (``<cache>/review/<folder>/<config>-<content hash>/<split>/``; ``IMAGENET_SUITE_REVIEW_CACHE`` or
  the user cache dir) under an id-derived name, atomically — re-loading never rewrites a file;
* ``row_id``: the row's stable ``id`` (FiftyOne owns ``id``); decisions join on it;
* ``ground_truth``: ``Classification`` with the readable class name as ``label`` plus ``raw_label``
  (ClassLabel name or wnid) and ``index``; ``is_ood``; ``source_dataset``; the config's other scalar
  columns (ClassLabels as names); image ``metadata`` from the header;
* with model outputs (:mod:`.predictions`): ``predictions`` (top-5 ImageNet-1k classes with readable
  names and probabilities), ``predicted_class`` (the class the image most resembles), ``msp``,
  ``energy``;
* review fields (:mod:`.decisions`): ``review_decision``, ``review_reviewer``, ``review_timestamp``,
  ``review_note``, ``review_contamination``, ``review_incidental_mode``, ``review_imagenet_classes``;
  ``authors_decision``, ``authors_code``, ``authors_log`` (the NINCO logs);
* with ``id_outputs`` / ``features`` / ``id_features`` / ``detector_stats`` (:mod:`.signals`): one
  ``ood_<detector>`` score per detector the inputs allow, ``ood_id_like_for``, ``ood_failed_detectors``
  (the class's unit-test verdicts); on OOD datasets with classes the WordNet pre-check
  ``precheck_verdict`` / ``precheck_classes``;
* with ``reference`` (a built ``imagenet_val`` folder) + features (:mod:`.lookalikes`): the reference
  images as ``is_reference`` samples, ``lookalikes`` / ``lookalike_similarity`` on the OOD samples, a
  FiftyOne Brain similarity index and an embeddings plot;
* with ``other_review`` (another reviewer's decision table): ``review_other_decision``,
  ``review_other_contamination``, ``review_other_reviewer``.

Samples are written in bulk as documents in FiftyOne's own layout (:mod:`.documents`), several
times faster than ``Dataset.add_samples`` (``benchmarks/bench_review_load.py``). Re-loading is
idempotent and fast: only rows missing from the FiftyOne dataset are added (so an interrupted load
resumes; when none is missing no image is read), predictions are rewritten only when the outputs
file changed, and decisions are never touched. Everything that can be wrong with the inputs (not a dataset folder,
unknown config/split, bad outputs) is checked before anything is written.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import platformdirs
from PIL import Image

from ..core.card import content_hash
from ..dataset.folder import DatasetFolder
from ..errors import ConfigError, param
from ..files import atomic_write_bytes, sha256_file
from ..images import inspect_image
from ..scoring.outputs import ModelOutputs
from . import database, documents, lookalikes, views
from .columns import ColumnPlan, column_plan
from .errors import ReviewError
from .predictions import RowPrediction, row_predictions
from .signals import LIST_FIELDS, ReviewSignals, check_fail_threshold, compute_signals, load_signal_inputs

DEFAULT_THRESHOLD = 0.5  # MSP above which an OOD sample is a contamination candidate
BATCH_ROWS = 500
INFO_KEY = "imagenet_suite"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def default_name(folder: DatasetFolder, config: str, split: str) -> str:
    """The FiftyOne dataset name of a folder's config/split: ``<folder name>-<config>-<split>``."""
    return f"{folder.path.name}-{config}-{split}"


def review_cache_dir() -> Path:
    """Root of the materialised review images (``IMAGENET_SUITE_REVIEW_CACHE`` or the user cache dir)."""
    env = os.environ.get("IMAGENET_SUITE_REVIEW_CACHE")
    return Path(env) if env else Path(platformdirs.user_cache_dir("imagenet-suite")) / "review"


@dataclass(frozen=True)
class LoadPlan:
    """Everything :func:`apply_load` needs, checked without touching the database."""

    source: DatasetFolder
    config: str
    split: str
    plan: ColumnPlan
    ids: tuple[str, ...]  # row ids of the split, in order
    record: dict[str, Any]
    predicted: dict[str, RowPrediction]
    outputs: dict[str, Any] | None
    name: str
    images: Path  # this split's image folder, inside ``cache``
    cache: Path  # root of the image cache (the review App may serve any file under it)
    threshold: float
    reviewer: str | None
    signals: ReviewSignals | None = None
    signals_record: dict[str, Any] | None = None  # the inputs of the signals (sha256s), to skip a rewrite
    reference: LoadPlan | None = None  # the ImageNet reference images (look-alikes)
    lookalikes: dict[str, dict[str, Any]] | None = None  # row id -> lookalikes fields
    embeddings: dict[str, Any] | None = None  # row id (reference ones prefixed) -> feature vector
    other_review: dict[str, dict[str, Any]] | None = None  # row id -> review_other_* fields

    def signal_fields(self, row_id: str) -> dict[str, Any]:
        """Every signal field of a row (None where it has none)."""
        found = self.signals.of(row_id) if self.signals is not None else {}
        if self.lookalikes is not None:
            found.update(self.lookalikes.get(row_id) or dict.fromkeys(("lookalikes", "lookalike_similarity")))
        if self.other_review is not None:
            found.update(self.other_review.get(row_id) or dict.fromkeys(OTHER_FIELDS))
        return found


OTHER_FIELDS = ("review_other_decision", "review_other_contamination", "review_other_reviewer")


FILE_FIELDS = ("id_outputs", "features", "id_features", "detector_stats", "reference", "other_review")


@dataclass(frozen=True)
class LoadOptions:
    """Everything a review load takes beside the dataset folder, config and split.

    Checked when made (the ranges, and the inputs that only work together; an error names the field).
    The files are read by :func:`prepare_load`.

    Attributes:
        outputs: model outputs (``.pt``/``.npz``, :mod:`imagenet_suite.scoring.outputs`), 1000-way
            ImageNet-1k scores for (a subset of) the rows: ``predictions``, ``msp``, ``energy``.
        name: FiftyOne dataset name (default :func:`default_name`).
        cache_dir: root of the image cache (default :func:`review_cache_dir`).
        threshold: MSP in [0, 1] from which an OOD sample is a contamination candidate.
        reviewer: name recorded with decisions made in the App (default: the login name).
        id_outputs: the same model's outputs on the ID set (ImageNet val): τ95 and unit-test verdicts
            (needs ``outputs``).
        features: penultimate features (``.pt``/``.npz`` with ids + ``features``) of this dataset's rows
            (the feature detectors; look-alikes). With ``id_outputs`` it needs ``id_features``.
        id_features: the same of the ID rows (and of the ``reference`` images); needs ``features`` or
            ``reference``.
        detector_stats: fitted train statistics (``DetectorStats.save``) for the feature detectors (needs
            ``outputs``).
        fail_threshold: unit-test failure threshold on FPR@95, in [0, 1] (default: the dataset
            protocol's, 0.10).
        precheck: run the WordNet pre-check per OOD class.
        reference: a built ``imagenet_val`` folder whose images become the look-alike references (needs
            ``features`` and ``id_features``); ``reference_config`` its config (default: the only one).
        other_review: another reviewer's decision table, loaded into ``review_other_*`` fields.

    Example:
        >>> from imagenet_suite.review.load import LoadOptions
        >>> LoadOptions(outputs="outputs/ninco.pt", threshold=0.8).threshold
        0.8
        >>> LoadOptions(id_outputs="outputs/val.pt")
        Traceback (most recent call last):
        ...
        imagenet_suite.errors.ConfigError: id_outputs / detector_stats need outputs (the model's outputs on these rows)
    """

    outputs: str | Path | None = None
    name: str | None = None
    cache_dir: str | Path | None = None
    threshold: float = DEFAULT_THRESHOLD
    reviewer: str | None = None
    id_outputs: str | Path | None = None
    features: str | Path | None = None
    id_features: str | Path | None = None
    detector_stats: str | Path | None = None
    fail_threshold: float | None = None
    precheck: bool = True
    reference: str | Path | None = None
    reference_config: str | None = None
    other_review: str | Path | None = None

    def __post_init__(self) -> None:
        threshold = self.threshold
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.0 <= threshold <= 1.0:
            raise ReviewError(f"{param('threshold')} {threshold}: expected an MSP between 0 and 1")
        given = {name for name in FILE_FIELDS if getattr(self, name) is not None}
        if self.outputs is None and {"id_outputs", "detector_stats"} & given:
            raise ConfigError(
                f"{param('id_outputs')} / {param('detector_stats')} need {param('outputs')} "
                "(the model's outputs on these rows)"
            )
        if "reference" not in given and "id_features" in given and "features" not in given:
            raise ConfigError(
                f"{param('id_features')} needs {param('features')} (this dataset's features) or {param('reference')} DIR"
            )
        if "reference" in given and "features" not in given:
            raise ConfigError(
                f"{param('reference')} needs {param('features')} (this dataset's features) and {param('id_features')}"
            )
        if self.fail_threshold is not None:
            check_fail_threshold(self.fail_threshold)
        if {"features", "id_outputs"} <= given and "id_features" not in given:
            raise ConfigError(
                f"{param('features')} with {param('id_outputs')} needs {param('id_features')} (the ID images' features)"
            )
        if "reference" in given and "id_features" not in given:
            raise ReviewError(
                f"{param('reference')} needs {param('id_features')} (the model's features of the reference images)"
            )

    def files(self) -> dict[str, str | Path]:
        """The signal input files given (:data:`FILE_FIELDS`), by field name."""
        return {name: getattr(self, name) for name in FILE_FIELDS if getattr(self, name) is not None}


def prepare_load(
    folder: str | Path,
    config: str | None = None,
    split: str | None = None,
    options: LoadOptions | None = None,
) -> LoadPlan:
    """Validate the inputs of a load and compute the predictions (no database, nothing written).

    Args:
        folder: a dataset folder written by ``imagenet-suite build``.
        config, split: default to the only config / split.
        options: outputs, signals, look-alikes, names and cache (:class:`LoadOptions`; default: the
            dataset alone).
    """
    options = LoadOptions() if options is None else options
    source = DatasetFolder(folder)
    config = source.resolve_config(config)
    split = source.resolve_split(config, split)
    plan = column_plan(source, config)
    ids = source.read_table(config, split, ["id"]).column("id").to_pylist()
    predicted, outputs_record = _predictions(options.outputs, ids)
    record = _source_record(source, config, split)
    cache = Path(options.cache_dir or review_cache_dir())
    images = cache / source.path.name / f"{config}-{record['content_hash'][:12]}" / split
    extras = _signal_plan(_Rows(source, config, split, plan, ids), options, cache)
    return LoadPlan(
        source,
        config,
        split,
        plan,
        tuple(ids),
        record,
        predicted,
        outputs_record,
        options.name or default_name(source, config, split),
        images,
        cache,
        options.threshold,
        options.reviewer,
        **extras,
    )


@dataclass(frozen=True)
class _Rows:
    """The rows a load reads: a folder's config/split, its column plan and row ids (in order)."""

    source: DatasetFolder
    config: str
    split: str
    plan: ColumnPlan
    ids: list[str]


def _signal_plan(rows: _Rows, options: LoadOptions, cache: Path) -> dict[str, Any]:
    """The signals, look-alikes and other reviewer's decisions of a load (all inputs checked first)."""
    source, config, split, plan, ids = rows.source, rows.config, rows.split, rows.plan, rows.ids
    outputs = options.outputs
    given = options.files()
    for key, path in given.items():
        if not Path(path).exists():
            raise ConfigError(f"{param(key)} {path} does not exist")
    loaded_inputs = load_signal_inputs(
        options.id_outputs, options.features, options.id_features, options.detector_stats
    )
    row_classes, display = _row_classes(source, config, split, plan, ids)
    fail = options.fail_threshold
    if fail is None:
        ood = source.protocol(config).get("ood")
        fail = float(ood.get("fail_threshold", 0.10)) if isinstance(ood, dict) else 0.10
    loaded = ModelOutputs.load(outputs) if outputs is not None else None
    signals = None
    if loaded is not None or (options.precheck and display):
        signals = compute_signals(
            loaded,
            row_classes,
            display if options.precheck else {},
            replace(loaded_inputs, fail_threshold=fail, precheck=options.precheck),
        )
    features, id_features = loaded_inputs.features, loaded_inputs.id_features
    extras: dict[str, Any] = {"signals": signals}
    known = set(ids)
    if features is not None:
        unknown = [i for i in features.ids if i not in known]
        if unknown:
            raise ReviewError(
                f"{param('features')} hold {len(unknown)} id(s) that are not rows of the dataset, e.g. {unknown[:3]}"
            )
    if options.reference is not None:
        reference = prepare_load(
            options.reference, options.reference_config, None, LoadOptions(cache_dir=cache, precheck=False)
        )
        ref_features = id_features.aligned(list(reference.ids), param("reference"))
        ref_classes = _reference_classes(reference)
        with_features = set(features.ids)
        own = [i for i in ids if i in with_features]
        own_features = features.aligned(own, param("features"))
        extras["reference"] = reference
        extras["lookalikes"] = lookalikes.lookalike_fields(
            own, own_features, list(reference.ids), ref_features, [ref_classes[i] for i in reference.ids]
        )
        vectors = dict(zip(own, own_features.float().numpy()))
        vectors.update(zip(map(lookalikes.reference_row_id, reference.ids), ref_features.float().numpy()))
        extras["embeddings"] = vectors
    if options.other_review is not None:
        extras["other_review"] = _other_review(options.other_review, known)
    files = {k: str(Path(v).resolve()) for k, v in given.items()}
    extras["signals_record"] = {
        "files": files,
        "sha256": {
            k: extras["reference"].record["content_hash"] if k == "reference" else sha256_file(v)
            for k, v in files.items()
        },
        "outputs": sha256_file(outputs) if outputs is not None else None,
        "fail_threshold": fail,
        "precheck": options.precheck,
    }
    return extras


def _row_classes(source, config, split, plan: ColumnPlan, ids) -> tuple[dict[str, str], dict[str, str]]:
    """Row id -> raw class name, and raw class name -> readable name (OOD datasets with classes; else empty)."""
    if not (plan.is_ood and plan.class_column):
        return {}, {}
    columns = ["id", plan.class_column] + ([plan.readable_column] if plan.readable_column else [])
    table = source.read_table(config, split, columns).to_pylist()
    row_classes, display = {}, {}
    for row in table:
        raw = plan.class_names[row[plan.class_column]]
        row_classes[row["id"]] = raw
        display.setdefault(
            raw,
            (row.get(plan.readable_column) if plan.readable_column else None)
            or plan.display_names[row[plan.class_column]],
        )
    return row_classes, display


def _reference_classes(reference: LoadPlan) -> dict[str, tuple[str, str]]:
    plan = reference.plan
    if not plan.class_column:
        raise ReviewError(
            f"{param('reference')} {reference.source.path}: has no class column (expected a built imagenet_val)"
        )
    rows = reference.source.read_table(reference.config, reference.split, ["id", plan.class_column]).to_pylist()
    return {r["id"]: (plan.display_names[r[plan.class_column]], plan.class_names[r[plan.class_column]]) for r in rows}


def _other_review(path, ids: set[str]) -> dict[str, dict[str, Any]]:
    from .decision_table import read_decision_table

    table = read_decision_table(path)
    unknown = sorted(d.id for d in table.decisions if d.id not in ids)
    if unknown:
        raise ReviewError(
            f"{param('other_review')} {path}: {len(unknown)} id(s) are not rows of the dataset, e.g. {unknown[:3]}"
        )
    return {
        d.id: {
            "review_other_decision": d.decision or None,
            "review_other_contamination": d.contamination or None,
            "review_other_reviewer": d.reviewer or None,
        }
        for d in table.decisions
    }


def apply_load(fo, load: LoadPlan):
    """Create or update the FiftyOne dataset of a :class:`LoadPlan` (``fo`` from :func:`database.connect`)."""
    dataset = _open_dataset(fo, load.name, load.record)
    documents.declare_fields(fo, dataset, load.plan)
    _declare_signal_fields(fo, dataset, load)
    existing = _add_missing_rows(dataset, load) & set(load.ids)
    info = dict(dataset.info.get(INFO_KEY, {}))
    if load.outputs is not None and info.get("outputs") != load.outputs:
        documents.update_documents(dataset, {i: documents.prediction_fields(load.predicted.get(i)) for i in existing})
        info["outputs"] = load.outputs
    if load.signals_record is not None and info.get("signals_inputs") != load.signals_record:
        documents.update_documents(dataset, {i: load.signal_fields(i) for i in existing})
        info["signals_inputs"] = load.signals_record
        for key in ("detectors", "unit_tests", "precheck"):
            info.pop(key, None)
        info.update(load.signals.record if load.signals is not None else {})
        if load.reference is not None:
            _add_references(fo, dataset, load.reference)
            lookalikes.build_index(dataset, load.embeddings)
            info["reference"] = load.reference.record
        info["other_review"] = load.signals_record["files"].get("other_review")
    info.update(
        load.record,
        threshold=load.threshold,
        reviewer=load.reviewer or info.get("reviewer") or _login(),
        ood_classes=list(load.plan.class_names) if load.plan.is_ood and load.plan.class_column else [],
    )
    dataset.info[INFO_KEY] = info
    dataset.save()
    views.save_views(dataset)
    return dataset


def load_for_review(
    folder: str | Path,
    config: str | None = None,
    split: str | None = None,
    options: LoadOptions | None = None,
    *,
    database_uri: str | None = None,
):
    """Create or update the persistent FiftyOne dataset of ``folder``'s ``config``/``split``; return it.

    ``options``: see :class:`LoadOptions`; ``database_uri``: see :func:`database.connect`. All inputs
    are validated before the database is touched.

    Example:
        >>> from imagenet_suite.review.load import LoadOptions, load_for_review
        >>> dataset = load_for_review("datasets/ninco-1.0.0", options=LoadOptions(      # doctest: +SKIP
        ...     outputs="outputs/ninco.pt", id_outputs="outputs/val.pt", threshold=0.8))
    """
    load = prepare_load(folder, config, split, options)
    return apply_load(database.connect(database_uri), load)


def _predictions(outputs: str | Path | None, ids: list[str]) -> tuple[dict[str, RowPrediction], dict | None]:
    if outputs is None:
        return {}, None
    loaded = ModelOutputs.load(outputs)
    predicted = row_predictions(loaded, set(ids))
    return predicted, {
        "file": str(Path(outputs).resolve()),
        "sha256": sha256_file(outputs),
        "kind": loaded.kind,
        "rows": loaded.num_rows,
    }


def _source_record(source: DatasetFolder, config: str, split: str) -> dict[str, Any]:
    return {
        "folder": str(source.path.resolve()),
        "builder": source.name,
        "version": source.version,
        "config": config,
        "split": split,
        "content_hash": content_hash(source.config_info(config)),
    }


def _open_dataset(fo, name: str, record: dict[str, Any]):
    """The existing dataset if it was loaded from the same data, else a new persistent one."""
    if name not in fo.list_datasets():
        dataset = fo.Dataset(name, persistent=True)
        dataset.media_type = "image"
        dataset.info[INFO_KEY] = dict(record)
        dataset.save()
        return dataset
    dataset = fo.load_dataset(name)
    known = dataset.info.get(INFO_KEY)
    if known is None:
        raise ReviewError(f"FiftyOne dataset {name!r} was not made by imagenet-suite; pass another {param('name')}")
    same = {k: known.get(k) for k in ("builder", "version", "config", "split", "content_hash")}
    if same != {k: record[k] for k in same}:
        raise ReviewError(
            f"FiftyOne dataset {name!r} holds {known.get('builder')} {known.get('version')} "
            f"{known.get('config')}/{known.get('split')} (content {str(known.get('content_hash'))[:12]}), "
            f"not {record['folder']} {record['config']}/{record['split']} "
            f"(content {record['content_hash'][:12]}); pass {param('name')} to load it as another dataset"
        )
    return dataset


def _declare_signal_fields(fo, dataset, load: LoadPlan) -> None:
    fields: dict[str, Any] = {}
    if load.signals is not None:
        for name in load.signals.field_names:
            if name == "precheck_verdict":
                fields[name] = fo.StringField()
            elif name in LIST_FIELDS:
                fields[name] = fo.ListField(fo.StringField())
            else:
                fields[name] = fo.FloatField()
    if load.reference is not None:
        fields.update(is_reference=fo.BooleanField(), lookalike_similarity=fo.FloatField())
        fields["lookalikes"] = fo.EmbeddedDocumentField(fo.Classifications)
        for attribute, kind in (("raw_label", fo.StringField), ("row_id", fo.StringField), ("distance", fo.FloatField)):
            fields[f"lookalikes.classifications.{attribute}"] = kind()
    documents.declare(dataset, fields)
    if load.reference is not None:  # after the signals' fields and before the other review's, as the App lists them
        documents.declare_fields(fo, dataset, load.reference.plan)
    if load.other_review is not None:
        documents.declare(dataset, {name: fo.StringField() for name in OTHER_FIELDS})


def _add_references(fo, dataset, reference: LoadPlan) -> None:
    """Insert the reference images missing from the dataset (``is_reference`` samples, prefixed row ids)."""
    from fiftyone import ViewField as F

    present = set(dataset.match(F("is_reference") == True).distinct("row_id"))  # noqa: E712
    columns = ["id", reference.plan.image_column, *reference.plan.columns]
    for batch in reference.source.iter_batches(reference.config, reference.split, columns, batch_size=BATCH_ROWS):
        docs = []
        for row in batch.to_pylist():
            row_id = lookalikes.reference_row_id(row["id"])
            if row_id in present:
                continue
            reference.images.mkdir(parents=True, exist_ok=True)
            doc = _document(row, reference)
            doc.update(row_id=row_id, is_ood=False, is_reference=True)
            docs.append(doc)
        documents.insert_documents(dataset, docs)
    dataset.reload()


def _add_missing_rows(dataset, load: LoadPlan) -> set[str]:
    """Insert the rows the FiftyOne dataset does not have yet; return the row ids it already had."""
    present = set(dataset.distinct("row_id")) if len(dataset) else set()
    if all(i in present for i in load.ids):
        return present  # a re-load: no image is read
    columns = ["id", load.plan.image_column, *load.plan.columns]
    for batch in load.source.iter_batches(load.config, load.split, columns, batch_size=BATCH_ROWS):
        rows = [r for r in batch.to_pylist() if r["id"] not in present]
        if rows:
            load.images.mkdir(parents=True, exist_ok=True)
            documents.insert_documents(dataset, [_document(r, load) for r in rows])
    return present


def _document(row: dict[str, Any], load: LoadPlan) -> dict[str, Any]:
    plan = load.plan
    image = row[plan.image_column] or {}
    data = image.get("bytes")
    if not data:
        raise ReviewError(f"row {row['id']!r}: the image column {plan.image_column!r} holds no bytes")
    header = inspect_image(data, f"row {row['id']!r}")
    path = _materialise(load.images, row["id"], image.get("path"), header.format, data)
    fields: dict[str, Any] = {
        "metadata": documents.image_metadata(len(data), Image.MIME.get(header.format), header.width, header.height),
        "row_id": row["id"],
        "ground_truth": _ground_truth(row, plan),
        "is_ood": plan.is_ood,
        "source_dataset": _source_dataset(row, plan),
    }
    for column, names in plan.extra_columns.items():
        value = row.get(column)
        fields[column] = names[value] if names is not None and value is not None else value
    fields.update(documents.prediction_fields(load.predicted.get(row["id"])))
    fields.update(load.signal_fields(row["id"]))
    return documents.sample_document(str(path), fields)


def _ground_truth(row: dict[str, Any], plan: ColumnPlan) -> dict[str, Any] | None:
    if plan.class_column is None:
        return documents.classification(plan.class_names[0], raw_label=plan.class_names[0])
    index = row.get(plan.class_column)
    if index is None:
        return None
    readable = row.get(plan.readable_column) if plan.readable_column else None
    return documents.classification(
        readable or plan.display_names[index], raw_label=plan.class_names[index], index=index
    )


def _source_dataset(row: dict[str, Any], plan: ColumnPlan) -> str:
    value = row.get(plan.source_column) if plan.source_column else None
    if isinstance(value, int) and plan.source_column == plan.class_column:
        return plan.class_names[value]
    return str(value) if value is not None else plan.class_names[0] if plan.class_column is None else ""


def _materialise(folder: Path, row_id: str, stored_path: str | None, image_format: str, data: bytes) -> Path:
    """Write the image bytes once to ``folder`` (atomically); return the file."""
    suffix = Path(stored_path or "").suffix.lower() or f".{(image_format or 'img').lower()}"
    stem = _UNSAFE.sub("_", row_id)
    if stem != row_id:
        stem += "-" + hashlib.sha256(row_id.encode()).hexdigest()[:8]
    path = folder / f"{stem}{suffix}"
    if not (path.is_file() and path.stat().st_size == len(data)):
        atomic_write_bytes(path, data, durable=False, shared=True)  # a cache: rebuilt from the dataset if lost
    return path


def _login() -> str:
    try:
        import getpass

        return getpass.getuser()
    except (KeyError, OSError):
        return "reviewer"
