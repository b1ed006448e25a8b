"""``ood fit-stats``: one model's train-set statistics for the OOD detectors, fitted from a built train split.

NINCO (Bitterwolf et al. 2023) fits 8 of its 11 detectors on the model's penultimate features of the
ImageNet-1k *training* set, passed through the model's test transform, with the true labels (class
means), the raw logits (ViM's α, KL-matching) and the last layer ``W``, ``b`` (ViM, ReAct). Here:

0. Before the model is loaded (:func:`train_rows`): the split must be ImageNet's train split (an
   ``imagenet_train`` build; ``allow_non_train`` takes another, recorded in the provenance: statistics
   fitted on an evaluation set make its OOD scores optimistic), its labels ImageNet-1k classes, and — for
   the detectors that need class means — every class must have a row among those used
   (:func:`check_coverage`: against the 1000 ImageNet-1k classes for a library model, and once the model is
   loaded against its own classes, before any image is read).
1. :func:`~.predict.predict_batches` runs the model over the split (a built ``imagenet_train``; with
   ``per_class``, the seeded class-stratified draw of :func:`imagenet_suite.seeding.class_stratified`,
   the same images as a build with ``subset=N``) with the features on: the classifier's input, as
   ``predict --features`` stores it, float32. Each batch's outputs are kept as a chunk file in
   ``<out>.outputs.pt.partial/`` (resumable like predict: a stopped run computes only the batches it
   lacks; the folder is removed once the statistics are written). Disk while it runs: (d + C) x 4 bytes
   per image, 15.6 GB for a ResNet-50 on the 1,281,167 images.
2. :func:`~imagenet_suite.scoring.metrics.ood_detector_fit.fit_detector_stats` reads those chunks pass by
   pass (:mod:`~imagenet_suite.scoring.metrics.ood_fit`: two passes, float64 sums, on ``predict.device``),
   so the features are never all in memory: memory is the sums (O(C·d + d² + C²) float64), the KNN bank
   (``knn_rows`` x d float32: a seeded uniform sample, :data:`DEFAULT_KNN_ROWS` by default; None keeps
   every row, NINCO's protocol, at N x d x 4 bytes) and one block of rows.
3. The statistics are written as a format-3 file (``.safetensors``:
   :meth:`~imagenet_suite.scoring.metrics.ood_detector_stats.DetectorStats.save`) whose provenance records
   the model, its weights' sha256 (a user model's code too), the dataset build, the rows, the seed and the
   options, and whose content hash every reader checks; ``evaluate`` and ``review`` refuse it for another
   model.

The ``openood_v15`` preset (OpenOOD v1.5, Zhang et al. 2023) fits ReAct's clip and the KL-matching templates
on the ID *validation* set instead (``ReactPostprocessor.setup`` iterates ``id_loader_dict['val']``, the 5,000
ImageNet-val images of ``benchmark_imglist/imagenet/val_imagenet.txt``): with ``val`` (a built ``imagenet_val``)
and ``val_split_from`` (a built ``popular_ood`` whose ``openood_id_split`` config says which val ids are
OpenOOD's ``val``), those rows are predicted too (in memory: 5,000 x (d + C) float32) and passed to
:func:`~imagenet_suite.scoring.metrics.ood_detector_fit.fit_detector_stats` as ``val``; without ``val`` the two
detectors are left out.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from .. import __version__, classes
from ..dataset.folder import SELF_HASH, DatasetFolder
from ..errors import ConfigError, OutputsError, param
from ..limits import check_limit
from ..scoring.benchmarks import OPENOOD_V15_IMAGENET, split_positions
from ..scoring.metrics.ood_detector_fit import fit_detector_stats
from ..scoring.metrics.ood_detector_stats import DetectorStats, preset
from ..scoring.metrics.ood_detectors import DETECTORS
from ..scoring.metrics.ood_fit import QUERY_ELEMENTS, FitChunks, FitSet
from ..seeding import class_stratified
from .models import LoadedModel, weights_digest
from .predict import PredictedBatches, PredictOptions, check_outputs_file, classifier_of, predict_batches

DEFAULT_KNN_ROWS = 100_000  # KNN bank rows: 100 per class; 100,000 x 2048 x 4 bytes = 0.8 GB
TRAIN_SPLITS = {"imagenet_train": "train"}  # builder -> its split of ImageNet's training images
CLASS_MEAN_DETECTORS = ("mahalanobis", "relative_mahalanobis", "cosine", "rcos")  # need a row of every class
FEATURES = "penultimate: the input of the classifier (predict --features), the model's test transform"


@dataclass(frozen=True)
class FitStatsOptions:
    """What :func:`fit_stats` fits, on which rows, and how it predicts.

    Attributes:
        predict: how the model runs (device, batches, workers, precision); the features are always on.
            The statistics are fitted on the same device.
        per_class: images per class (a seeded class-stratified draw; all of a smaller class), 1 to 1,300 (the
            largest class of ImageNet-1k train), or None: every row.
        seed: seed of the ``per_class`` draw and of the KNN bank's sample.
        preset: the anchor's hyper-parameters (``ninco``; ``openood_v15`` fits ReAct and KL-matching on
            the ID validation set ``val``: without it those two are left out).
        knn_rows: rows of the KNN bank (a seeded uniform sample when fewer than the train rows), 1 to
            1,281,167 (the images of ImageNet-1k train), or None: every row (NINCO's protocol; N x d x 4 bytes
            in memory and in the file). Both bounds: :data:`imagenet_suite.limits.LIMITS`.
        detectors: the detectors to fit for (default: every one the model allows).
        progress: progress bars (stderr).
        val: a built folder of ID validation images (``imagenet_val``) for the detectors the preset fits
            on the val set, or None. ConfigError with a preset that fits none there (``ninco``).
        val_config, val_split: its config and split (default: the only one).
        val_split_from: a built ``popular_ood`` folder whose ``openood_id_split`` config selects the val
            rows (ids whose ``openood_v15`` is ``val``: OpenOOD's 5,000), or None: every row of ``val``.
        allow_non_train: fit on a split that is not ImageNet's train split (:data:`TRAIN_SPLITS`), e.g. an
            ``imagenet_val`` build, instead of refusing it; recorded in the file's provenance.

    Example:
        >>> FitStatsOptions(per_class=100).knn_rows
        100000
        >>> FitStatsOptions(per_class=0)
        Traceback (most recent call last):
        ...
        imagenet_suite.errors.ConfigError: per_class must be a number of images per class, at least 1, or None (every row); got 0
    """

    predict: PredictOptions = field(default_factory=PredictOptions)
    per_class: int | None = None
    seed: int = 0
    preset: str = "ninco"
    knn_rows: int | None = DEFAULT_KNN_ROWS
    detectors: tuple[str, ...] | None = None
    progress: bool = True
    val: str | Path | None = None
    val_config: str | None = None
    val_split: str | None = None
    val_split_from: str | Path | None = None
    allow_non_train: bool = False

    def __post_init__(self) -> None:
        check_limit("per_class", self.per_class)
        check_limit("knn_rows", self.knn_rows)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ConfigError(f"{param('seed')} must be 0 or more, got {self.seed!r}")
        if not isinstance(self.allow_non_train, bool):
            raise ConfigError(f"{param('allow_non_train')} must be True or False, got {self.allow_non_train!r}")
        preset(self.preset)
        unknown = sorted(set(self.detectors or ()) - set(DETECTORS))
        if unknown:
            raise ConfigError(f"{param('detectors')}: unknown {unknown}; known: {list(DETECTORS)}")
        self._check_val()

    def _check_val(self) -> None:
        given = [name for name in ("val_config", "val_split", "val_split_from") if getattr(self, name) is not None]
        if self.val is None and given:
            raise ConfigError(f"{param(given[0])} is an option of {param('val')}, which is not given")
        if self.val is not None and not on_val(self.preset):
            raise ConfigError(
                f"{param('val')}: the {self.preset} preset fits every detector on the train set and reads no val set; "
                f"drop {param('val')} (or use {param('preset')} openood_v15)"
            )


def on_val(preset_name: str) -> list[str]:
    """The detectors preset ``preset_name`` fits on the ID validation set (``openood_v15``: ReAct, KL-matching).

    Example:
        >>> on_val("openood_v15"), on_val("ninco")
        (['react_energy', 'kl_matching'], [])
    """
    settings = preset(preset_name)
    return [
        name for name, fit in (("react_energy", settings.react_fit), ("kl_matching", settings.klm_fit)) if fit == "val"
    ]


@dataclass(frozen=True)
class TrainRows:
    """The train rows :func:`fit_stats` fits on, read and checked before a model is loaded
    (:func:`train_rows`): ``folder``'s ``config``/``split``, every row's ``ids`` and ``labels``, the
    ``positions`` of the rows used (None: every row) and ``counts``, the rows used of each ImageNet-1k class."""

    folder: DatasetFolder
    config: str
    split: str
    ids: list[str]
    labels: np.ndarray
    positions: np.ndarray | None
    counts: np.ndarray

    @property
    def chosen(self) -> np.ndarray:
        """The labels of the rows used."""
        return self.labels if self.positions is None else self.labels[self.positions]


def train_rows(
    train: str | Path | DatasetFolder, config: str | None, split: str | None, options: FitStatsOptions
) -> TrainRows:
    """The rows of ``train`` that :func:`fit_stats` fits on, from the build's id and label columns alone:
    ConfigError naming ``train`` for a build that is not ImageNet's train split (:data:`TRAIN_SPLITS`) unless
    ``options.allow_non_train``, a build without labels, or a label that is not an ImageNet-1k class."""
    folder = train if isinstance(train, DatasetFolder) else DatasetFolder(train)
    config = folder.resolve_config(config)
    split = folder.resolve_split(config, split)
    if TRAIN_SPLITS.get(folder.name) != split and not options.allow_non_train:
        raise ConfigError(
            f"{param('train')} {folder.path}: the build is {folder.name} (split {split!r}), not ImageNet's train split "
            f"({', '.join(f'{name} {part!r}' for name, part in TRAIN_SPLITS.items())}): the statistics would be fitted "
            f"on images the detectors are then evaluated on; pass {param('allow_non_train')} to fit on it anyway "
            "(recorded in the file's provenance)"
        )
    if "label" not in folder.column_names(config):
        raise ConfigError(f"{folder.path} config {config!r} has no 'label' column: the statistics need true labels")
    ids, labels = _ids_and_labels(folder, config, split)
    wrong = np.flatnonzero((labels < 0) | (labels >= classes.NUM_CLASSES))
    if len(wrong):
        raise ConfigError(
            f"{param('train')} {folder.path}: row {ids[wrong[0]]!r} has label {labels[wrong[0]]}, not an ImageNet-1k "
            f"class index 0..{classes.NUM_CLASSES - 1} ({len(wrong):,} such rows): the class statistics need true labels"
        )
    positions = _chosen(ids, labels, options.per_class, options.seed)
    chosen = labels if positions is None else labels[positions]
    counts = np.bincount(chosen, minlength=classes.NUM_CLASSES)
    return TrainRows(folder, config, split, ids, labels, positions, counts)


def check_coverage(rows: TrainRows, num_classes: int | None, options: FitStatsOptions) -> None:
    """ConfigError naming ``train`` when the detectors asked for need class means
    (:data:`CLASS_MEAN_DETECTORS`) and a class of the model's ``num_classes`` has no row among those used
    (None: the model's classes are not known yet, nothing to check)."""
    wanted = [name for name in CLASS_MEAN_DETECTORS if name in _detectors(options)]
    if num_classes is None or not wanted:
        return
    counts = np.zeros(num_classes, dtype=np.int64)
    known = min(num_classes, len(rows.counts))
    counts[:known] = rows.counts[:known]
    missing = np.flatnonzero(counts == 0)
    if not len(missing):
        return
    first = int(missing[0])
    name = f" ({classes.imagenet_wnids()[first]})" if first < classes.NUM_CLASSES else ""
    drawn = f", {options.per_class} per class" if options.per_class is not None else ""
    raise ConfigError(
        f"{param('train')} {rows.folder.path} ({rows.config}/{rows.split}, {int(rows.counts.sum()):,} rows{drawn}) has "
        f"no row of {len(missing):,} of the model's {num_classes:,} classes, e.g. class {first}{name}: the class means "
        f"of {', '.join(wanted)} need a row of every class; fit on a build of every class, or leave those detectors "
        f"out ({param('detectors')})"
    )


def library_classes(spec: str) -> int | None:
    """The classes of the model ``spec`` names, known before it is loaded: an ImageNet-1k classifier's 1000
    for a timm, torchvision or open_clip model, None for a user model."""
    from .models import resolve_weights

    return classes.NUM_CLASSES if resolve_weights(spec, "none").library is not None else None


def left_out(options: FitStatsOptions) -> list[str]:
    """The detectors asked for that :func:`fit_stats` leaves out for want of ``options.val``."""
    if options.val is not None:
        return []
    return [name for name in on_val(options.preset) if name in (options.detectors or DETECTORS)]


@dataclass(frozen=True)
class ValRows:
    """The ID validation rows :func:`fit_stats` predicts: ``folder``'s ``config``/``split``, the ``positions``
    (ascending) of the rows used (None: every row) of its ``total`` rows, and the split build that chose them."""

    folder: DatasetFolder
    config: str
    split: str
    positions: np.ndarray | None
    total: int
    split_from: tuple[DatasetFolder, str] | None = None  # (popular_ood build, its openood_id_split split)

    @property
    def rows(self) -> int:
        return self.total if self.positions is None else len(self.positions)


def val_rows(options: FitStatsOptions) -> ValRows | None:
    """``options.val``'s rows to predict (None without ``val``): all of them, or with ``val_split_from`` those
    OpenOOD's ID split puts in ``val``. ConfigError naming both folders when a ``val`` id is not in the split
    or a split val id is not in ``val``; reads only the id columns (checked before any model runs)."""
    if options.val is None:
        return None
    folder = DatasetFolder(options.val)
    config = folder.resolve_config(options.val_config, "val_config")
    split = folder.resolve_split(config, options.val_split, "val_split")
    ids = folder.read_table(config, split, ["id"]).column("id").to_pylist()
    if options.val_split_from is None:
        return ValRows(folder, config, split, None, len(ids))
    source, source_split, values = _openood_split(DatasetFolder(options.val_split_from))
    return ValRows(folder, config, split, _split_val(folder, ids, source, values), len(ids), (source, source_split))


def _openood_split(source: DatasetFolder) -> tuple[DatasetFolder, str, dict[str, Any]]:
    """``(source, split, {id: openood_v15})`` of a ``popular_ood`` build's OpenOOD ID split; ConfigError
    naming ``val_split_from`` for another folder."""
    benchmark = OPENOOD_V15_IMAGENET
    config = benchmark.id_split_config
    if source.name != benchmark.id_split_builder or config not in source.configs:
        raise ConfigError(
            f"{param('val_split_from')} {source.path}: expected a {benchmark.id_split_builder} build with config "
            f"{config} (OpenOOD v1.5's benchmark_imglist/imagenet lists); it is {source.name} with {source.configs}"
        )
    split = source.resolve_split(config, None)
    table = source.read_table(config, split, ["id", benchmark.id_split_column])
    values = table.column(benchmark.id_split_column).to_pylist()
    return source, split, dict(zip(table.column("id").to_pylist(), values, strict=True))


def _split_val(folder: DatasetFolder, ids: list[str], source: DatasetFolder, values: dict[str, Any]) -> np.ndarray:
    """Positions of the ids the split puts in OpenOOD's val; ConfigError when the two builds disagree."""
    unknown = [image for image in ids if image not in values]
    if unknown:
        raise ConfigError(
            f"{param('val')} {folder.path} holds {len(unknown):,} ids absent from the OpenOOD ID split of "
            f"{param('val_split_from')} {source.path}, e.g. {unknown[0]!r}: expected ImageNet val images"
        )
    positions, absent = split_positions(values, OPENOOD_V15_IMAGENET.id_val_value, ids)
    if absent or not len(positions):
        raise ConfigError(
            f"{param('val')} {folder.path} lacks {len(absent):,} of the {len(positions) + len(absent):,} val images "
            f"of the OpenOOD ID split of {param('val_split_from')} {source.path}"
            + (f", e.g. {absent[0]!r}" if absent else "")
        )
    return positions


def check_stats_file(out: str | Path) -> Path:
    """``out`` if the statistics can be written there (a ``.safetensors`` file in a writable folder, and
    predict's work file ``<out>.outputs.pt`` beside it), else ConfigError naming ``out``."""
    out = Path(out)
    if out.suffix != ".safetensors":
        raise ConfigError(f"{param('out')} {out} must end in .safetensors (the detector statistics file)")
    if out.is_dir():
        raise ConfigError(f"{param('out')} {out}: is a folder; expected the path of a .safetensors file to write")
    check_outputs_file(work_file(out))
    check_outputs_file(work_file(out, val=True))
    return out


def work_file(out: Path, val: bool = False) -> Path:
    """Where predict keeps the train (``val``: the val) set's outputs while the statistics are fitted (its
    ``.partial`` folder)."""
    return out.with_name(out.name + (".val.outputs.pt" if val else ".outputs.pt"))


def fit_stats(
    train: str | Path | DatasetFolder | TrainRows,
    loaded: LoadedModel,
    out: str | Path,
    *,
    config: str | None = None,
    split: str | None = None,
    options: FitStatsOptions | None = None,
) -> Path:
    """Fit ``loaded``'s detector statistics on a built train split and write them to ``out`` (``.safetensors``).

    ``train``: the build (checked by :func:`train_rows`, with ``config`` and ``split``), or its rows as
    :func:`train_rows` gave them. The coverage of the model's classes is checked before any image is read
    (:func:`check_coverage`: the classes of its last layer; a model without an ``nn.Linear`` head, of its
    first logits).

    Example:
        >>> from imagenet_suite.inference import PredictOptions, load_model
        >>> from imagenet_suite.inference.fit_stats import FitStatsOptions, fit_stats
        >>> path = fit_stats("datasets/imagenet_train-1.0.0", load_model("timm:resnet50"),    # doctest: +SKIP
        ...                  "stats/resnet50.safetensors",
        ...                  options=FitStatsOptions(PredictOptions(device="cuda"), per_class=100))
        >>> DetectorStats.load(path).provenance["rows"]                                    # doctest: +SKIP
        100000

        (tests/test_ood_fit_stats.py runs it on a train fixture and checks every statistic against numpy
        and sklearn.)
    """
    options = FitStatsOptions() if options is None else options
    out = check_stats_file(out)
    rows = train if isinstance(train, TrainRows) else train_rows(train, config, split, options)
    folder, config, split = rows.folder, rows.config, rows.split
    weight, bias = last_layer(loaded.model)
    check_coverage(rows, None if weight is None else len(weight), options)  # before any image is read
    run = replace(options.predict, features=True)
    val = val_rows(options)
    val_set, val_batches = _predict_val(val, loaded, out, run) if val is not None else (None, None)
    batches = predict_batches(
        folder, loaded, work_file(out), config=config, split=split, options=run, rows=rows.positions
    )
    chosen = rows.chosen

    def blocks() -> Iterator[FitSet]:
        for number, block in enumerate(_blocks(batches, chosen, torch.device(run.device))):
            if number == 0 and weight is None:  # no linear head: the model's classes are its logits'
                check_coverage(rows, block.logits.shape[1], options)
            yield block

    source = FitChunks(blocks, len(chosen))
    stats = fit_detector_stats(
        source,
        val=val_set,
        weight=weight,
        bias=bias,
        preset_name=options.preset,
        detectors=_detectors(options),
        knn_rows=options.knn_rows,
        seed=options.seed,
        progress=options.progress,
    )
    stats.provenance = _provenance(loaded, folder, config, split, options, stats, total=len(rows.ids), rows=len(chosen))
    stats.provenance["val"] = _val_provenance(val)  # the set ReAct / KL-matching were fitted on (openood_v15)
    stats.save(out)
    batches.remove()
    if val_batches is not None:
        val_batches.remove()
    return out


def _predict_val(val: ValRows, loaded: LoadedModel, out: Path, run: PredictOptions) -> tuple[FitSet, PredictedBatches]:
    """The val rows' features and logits (in memory, on ``run.device``) and predict's batches of them."""
    batches = predict_batches(
        val.folder,
        loaded,
        work_file(out, val=True),
        config=val.config,
        split=val.split,
        options=run,
        rows=val.positions,
    )
    chunks = list(batches.chunks())
    for chunk in chunks:
        _check_finite(chunk, "val")
    device = torch.device(run.device)
    features = torch.cat([chunk["features"] for chunk in chunks]).to(device)
    return FitSet(features, logits=torch.cat([chunk["logits"] for chunk in chunks]).to(device)), batches


def last_layer(model: nn.Module) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """The classifier's ``W`` [C, d] and ``b`` [C] (float64, on the CPU; a bias-free layer: zeros), or
    ``(None, None)`` when it is not an ``nn.Linear`` (ViM and ReAct are then left out)."""
    head = classifier_of(model)
    if not isinstance(head, nn.Linear):
        return None, None
    weight = head.weight.detach().to("cpu", torch.float64)
    bias = head.bias.detach().to("cpu", torch.float64) if head.bias is not None else torch.zeros(len(weight))
    return weight, bias.to(torch.float64)


def _detectors(options: FitStatsOptions) -> list[str]:
    """The detectors asked for, less those the preset fits on the validation set when none is given."""
    missing = left_out(options)
    return [name for name in (options.detectors or DETECTORS) if name not in missing]


def _ids_and_labels(folder: DatasetFolder, config: str, split: str) -> tuple[list[str], np.ndarray]:
    table = folder.read_table(config, split, ["id", "label"])
    return table.column("id").to_pylist(), table.column("label").to_numpy().astype(np.int64)


def _chosen(ids: list[str], labels: np.ndarray, per_class: int | None, seed: int) -> np.ndarray | None:
    """Positions of the rows of the seeded class-stratified draw (classes named by wnid, as the
    ``imagenet_train`` builder names them), or None: every row."""
    if per_class is None:
        return None
    wnids = classes.imagenet_wnids()
    by_class: dict[str, list[str]] = {}
    for image_id, label in zip(ids, labels.tolist(), strict=True):
        by_class.setdefault(wnids[label], []).append(image_id)
    chosen = set(class_stratified(by_class, per_class, seed))
    return np.flatnonzero([image_id in chosen for image_id in ids])


def _blocks(batches: PredictedBatches, labels: np.ndarray, device: torch.device) -> Iterator[FitSet]:
    """Predict's batches as :class:`FitSet` blocks of about :data:`QUERY_ELEMENTS` feature elements, on
    ``device``, with their true labels; OutputsError names the first row whose features or logits are not
    finite."""
    parts: list[dict[str, Any]] = []
    start, widths = 0, None
    for chunk in batches.chunks():
        _check_finite(chunk, "train")
        found = (chunk["features"].shape[1], chunk["logits"].shape[1])
        if widths is not None and found != widths:
            raise OutputsError(
                f"{batches.partial}: a batch of {found[0]}-d features and {found[1]} logits after batches of "
                f"{widths[0]} and {widths[1]}; delete {batches.partial} and run again"
            )
        widths = found
        parts.append(chunk)
        rows = sum(len(part["ids"]) for part in parts)
        if rows * chunk["features"].shape[1] >= QUERY_ELEMENTS:
            yield _block(parts, labels[start : start + rows], device)
            parts, start = [], start + rows
    if parts:
        yield _block(parts, labels[start:], device)


def _block(parts: Sequence[dict[str, Any]], labels: np.ndarray, device: torch.device) -> FitSet:
    features = torch.cat([part["features"] for part in parts]).to(device)
    logits = torch.cat([part["logits"] for part in parts]).to(device)
    return FitSet(features, torch.from_numpy(labels).to(device), logits)


def _check_finite(chunk: dict[str, Any], role: str) -> None:
    for name in ("features", "logits"):
        bad = ~torch.isfinite(chunk[name]).all(dim=1)
        if bool(bad.any()):
            row = chunk["ids"][int(bad.nonzero()[0, 0])]
            raise OutputsError(f"the model's {name} of {role} row {row!r} hold NaN or inf: no statistics can be fitted")


def _provenance(loaded, folder, config, split, options: FitStatsOptions, stats: DetectorStats, *, total, rows) -> dict:
    """What the statistics were fitted with and on (the file's ``provenance`` metadata)."""
    return {
        "model": loaded.spec,
        "weights": loaded.weights,
        "weights_sha256": weights_digest(loaded),
        "weights_tag": loaded.source.tag if loaded.source is not None else None,
        **({"code_sha256": loaded.code_sha256} if loaded.code_sha256 is not None else {}),  # a user model's file
        "dataset": _build(folder, config, split),
        "dataset_rows": total,
        "rows": rows,
        "per_class": options.per_class,
        "seed": options.seed,
        "knn_rows": None if stats.knn_bank is None else len(stats.knn_bank),
        "features": FEATURES,
        "preprocessing": options.predict.transform_name or "model default",
        "amp": options.predict.amp,
        "sums": "float64, two passes over the rows (imagenet_suite.scoring.metrics.ood_fit)",
        "allow_non_train": options.allow_non_train,
        "imagenet_suite": __version__,
    }


def _val_provenance(val: ValRows | None) -> dict | None:
    """The val set of the file's provenance: its build, rows, and the split build that chose them (or None)."""
    if val is None:
        return None
    chosen = None
    if val.split_from is not None:
        source, split = val.split_from
        benchmark = OPENOOD_V15_IMAGENET
        chosen = {
            "build": _build(source, benchmark.id_split_config, split),
            "rows": f"{benchmark.id_split_column} == {benchmark.id_val_value!r}",
        }
    return {
        "dataset": _build(val.folder, val.config, val.split),
        "dataset_rows": val.total,
        "rows": val.rows,
        "split_from": chosen,
    }


def _build(folder: DatasetFolder, config: str, split: str) -> dict[str, Any]:
    """A build's identity: builder, version, the sha256 of its build_info.json, config and split."""
    return {
        "name": folder.name,
        "version": folder.version,
        "build": folder.build_info.get(SELF_HASH),
        "config": config,
        "split": split,
    }


__all__ = [
    "CLASS_MEAN_DETECTORS",
    "DEFAULT_KNN_ROWS",
    "TRAIN_SPLITS",
    "FitStatsOptions",
    "TrainRows",
    "ValRows",
    "check_coverage",
    "check_stats_file",
    "fit_stats",
    "last_layer",
    "left_out",
    "library_classes",
    "on_val",
    "train_rows",
    "val_rows",
    "work_file",
]
