"""Run a model over a built dataset split and write its outputs file (``ids`` + ``logits`` [+ ``features``];
a zero-shot model's head record as ``zero_shot``).

The outputs file is the scorer's contract (:class:`imagenet_suite.scoring.outputs.ModelOutputs`; the
features part is read by :class:`~imagenet_suite.scoring.metrics.ood_detector_stats.Embeddings`), so
``imagenet-suite score`` reads it unchanged.

Data path: the split's rows, in dataset order, are cut into batches of ``batch_size`` consecutive rows
(:func:`split_units`; a batch may span row groups and shards). DataLoader workers each read whole
batches (``id`` + image bytes only, from the row groups that hold them), decode every image with
Pillow to RGB as timm's ImageFolder loader does, apply the dataset protocol's steps (ObjectNet's
border crop first) and the model's preprocessing, and hand the stacked tensor to the main process,
which runs the model. Batches arrive in order (the DataLoader takes them from its workers in turn),
so outputs do not depend on the number of workers. Every model call has the same number of images,
``min(batch_size, split rows)`` (:attr:`PredictJob.call_rows`): a short batch is padded with copies of its
last image, whose outputs are dropped. A batch of one shape is computed row by row alike, so an image's
outputs do not depend on the other images of its batch (calls of another size may differ in the last bits:
CPU kernels block a batch by its size), and the prediction store
(:mod:`~imagenet_suite.inference.store`) can predict any subset of a split's images, in any batches, and
copy rows between splits, byte-identical to predicting each split.

GPU decode (``gpu_decode``, on by default on CUDA): the workers do not decode the baseline/progressive
YCbCr JPEGs; they hand their bytes over as one pinned uint8 buffer (:class:`JpegBatch`), and the main
process decodes them in one batched ``torchvision.io.decode_jpeg(device=...)`` call (nvJPEG) and
preprocesses them on the device with the tensor counterpart of the same transform
(:mod:`imagenet_suite.inference.gpu_decode`). Every other image (CMYK, grayscale, PNG, ...) is still
decoded and transformed by the worker exactly as on the CPU path, and the rows are put back in
dataset order. A preprocessing with no tensor counterpart (a ``transform`` override, say) keeps the
CPU path for every row, with one warning line.

Resume (:mod:`~imagenet_suite.inference.resume`): every finished batch's outputs are written at once to
``<out>.partial/`` beside a manifest of what produced them (model, weights and their tag, dataset build,
config, split, preprocessing, batch size, padding). A run that finds a matching ``.partial`` folder computes only the batches it lacks; one made by anything
else (or with an unreadable manifest) is refused. Every chunk found is checked before it is trusted
(readable, the ids of its batch's rows in order, ``[rows, C]`` float logits and features); a bad one
is named in one warning line, renamed to ``<chunk>.rejected`` (kept, never deleted) and its batch
computed again. The final file is written atomically, rows in dataset order, and the folder removed
(but for rejected chunks).

The settings of a run are one :class:`PredictOptions` (``evaluate`` reuses it for every dataset). They
are checked when it is made, before any model is loaded or data read (:func:`check_loader_arguments`);
:func:`check_outputs_file` checks ``out``. A refused or failed run that wrote no batch leaves no
``.partial`` folder behind.
"""

from __future__ import annotations

import hashlib
import io
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import torch
from torch import nn
from torch.utils.data import DataLoader, IterableDataset, get_worker_info
from tqdm.auto import tqdm

from ..dataset.folder import SELF_HASH, DatasetFolder
from ..errors import ConfigError, InvalidSourceData, param
from ..files import atomic_write_bytes, write_problem
from ..limits import check_limit
from ..scoring.evaluation.preprocessing import no_center_crop
from ..scoring.metrics.protocols import border_crop
from ..scoring.outputs import load_torch_file
from ..scoring.threads import compute_threads, loader_workers, single_threaded_worker, torch_threads
from .gpu_decode import TensorTransform, UnsupportedTransform, decode_jpegs, device_decodable, tensor_transform
from .models import LoadedModel, Transform, resize_only_transform, weights_digest
from .resume import (
    chunk_name,
    drop_if_empty,
    missing_chunks,
    partial_folder,
    remove_partial,
    torch_bytes,
    write_chunk,
)
from .zero_shot import head_identity

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Piece:
    """Rows ``offset .. offset+length-1`` of one row group of one Parquet shard."""

    path: str
    row_group: int
    offset: int
    length: int


@dataclass(frozen=True)
class Unit:
    """One model batch: ``rows`` consecutive rows of the split (in dataset order), read from its pieces.
    The unit of reading, resuming and ordering."""

    index: int
    rows: int
    pieces: tuple[Piece, ...]


def split_units(
    folder: DatasetFolder, config: str, split: str, batch_size: int, rows: Sequence[int] | None = None
) -> list[Unit]:
    """The split's rows in dataset order, cut into consecutive batches of ``batch_size`` (the last shorter).

    ``rows``: only the rows at these positions of the split (ascending, each once; ConfigError
    otherwise), batched the same way; adjacent rows of one row group share a piece."""
    taken = None if rows is None else _positions(rows)
    runs, first = [], 0  # (path, row group, offset, length) of consecutive rows taken, in dataset order
    for path in folder.split_files(config, split):
        metadata = pq.ParquetFile(path).metadata
        for group in range(metadata.num_row_groups):
            count = metadata.row_group(group).num_rows
            runs += [(str(path), group, offset, length) for offset, length in _runs_in(taken, first, count)]
            first += count
    if taken is not None and len(taken) and taken[-1] >= first:
        raise ConfigError(f"{param('rows')}: position {int(taken[-1])} is past the split's {first} rows")
    units, pieces, filled = [], [], 0
    for path, group, start, length in runs:
        offset, end = start, start + length
        while offset < end:
            take = min(end - offset, batch_size - filled)
            pieces.append(Piece(path, group, offset, take))
            offset, filled = offset + take, filled + take
            if filled == batch_size:
                units.append(Unit(len(units), filled, tuple(pieces)))
                pieces, filled = [], 0
    if pieces:
        units.append(Unit(len(units), filled, tuple(pieces)))
    return units


def _positions(rows: Sequence[int]) -> np.ndarray:
    taken = np.asarray(rows, dtype=np.int64)
    if taken.ndim != 1 or (len(taken) and (taken[0] < 0 or bool((np.diff(taken) <= 0).any()))):
        raise ConfigError(f"{param('rows')} must be row positions in ascending order, each once, from 0")
    return taken


def _runs_in(taken: np.ndarray | None, first: int, count: int) -> list[tuple[int, int]]:
    """``(offset, length)`` within a row group of rows ``first .. first+count-1`` of the runs of ``taken`` there."""
    if taken is None:
        return [(0, count)]
    inside = taken[np.searchsorted(taken, first) : np.searchsorted(taken, first + count)] - first
    breaks = np.flatnonzero(np.diff(inside) != 1) + 1
    return [(int(run[0]), len(run)) for run in np.split(inside, breaks) if len(run)]


def protocol_transform(
    loaded: LoadedModel, protocol: dict[str, Any], override: Transform | None, resize_only: bool = False
) -> Transform:
    """The preprocessing of one image: the protocol's border crop, then ``override`` or the model's own
    (resized to the input size without a centre crop where the protocol says so, or with ``resize_only``:
    Anzaku et al. 2024, App. B; :func:`~imagenet_suite.inference.models.resize_only_transform`)."""
    transform = _model_transform(loaded, protocol, override, resize_only)
    border = _border_px(protocol)
    if not border:
        return transform
    return lambda image: transform(border_crop(image, border))


def _model_transform(
    loaded: LoadedModel, protocol: dict[str, Any], override: Transform | None, resize_only: bool = False
) -> Transform:
    """``override``, or the model's own transform (PatchML, or ``resize_only``: without the centre crop,
    whatever the model's source)."""
    if override is not None:
        return override
    if resize_only or no_center_crop(protocol):
        return resize_only_transform(loaded)
    return loaded.transform


def _border_px(protocol: dict[str, Any]) -> int:
    return int(protocol.get("border_crop_px") or 0)


def device_transform(
    loaded: LoadedModel, protocol: dict[str, Any], override: Transform | None, resize_only: bool = False
) -> tuple[TensorTransform | None, str]:
    """The tensor counterpart of :func:`protocol_transform` for the GPU decode path, or ``(None, why not)``."""
    if override is not None:
        return None, "a transform override has no tensor counterpart"
    try:
        return tensor_transform(_model_transform(loaded, protocol, None, resize_only), _border_px(protocol)), ""
    except UnsupportedTransform as err:
        return None, f"the model's preprocessing has no exact tensor counterpart ({err})"


@dataclass
class JpegBatch:
    """One batch as the workers hand it over on the GPU decode path: the rows they decoded (``decoded``,
    preprocessed, at positions ``decoded_at``) and the bytes of the device-decodable JPEGs (one
    buffer, ``jpeg_ends`` the end of each, at positions ``jpeg_at``; ``jpeg_where`` names them)."""

    rows: int
    decoded_at: torch.Tensor
    decoded: torch.Tensor | None
    jpeg_at: torch.Tensor
    jpeg_bytes: torch.Tensor
    jpeg_ends: torch.Tensor
    jpeg_where: list[str]

    def pin_memory(self) -> JpegBatch:
        """Called by the DataLoader (``pin_memory=True``) in its pinning thread."""
        decoded = self.decoded.pin_memory() if self.decoded is not None else None
        return replace(self, decoded=decoded, jpeg_bytes=self.jpeg_bytes.pin_memory())

    def jpegs(self) -> list[torch.Tensor]:
        """The bytes of each JPEG: 1-D uint8 views of the (pinned) buffer."""
        ends = self.jpeg_ends.tolist()
        return [self.jpeg_bytes[start:end] for start, end in zip([0, *ends[:-1]], ends)]


class DeviceInputs:
    """The main process's half of the GPU decode path: a :class:`JpegBatch` -> the ``[n, 3, H, W]``
    model input on ``device``, rows in dataset order. Its JPEGs are decoded there in one call and
    preprocessed by ``preprocess``; the worker-decoded rows are copied in. A batch the device decoder
    refuses has its JPEGs decoded as on the CPU path (Pillow + ``transform``; warned about once)."""

    def __init__(self, preprocess: TensorTransform, transform: Transform, device: torch.device):
        self.preprocess = preprocess
        self.transform = transform
        self.device = device
        self.refused = 0

    def __call__(self, batch: JpegBatch) -> torch.Tensor:
        out = None
        if batch.jpeg_at.numel():
            pixels = self._jpegs(batch)
            out = torch.empty((batch.rows, *pixels.shape[1:]), dtype=pixels.dtype, device=self.device)
            out[batch.jpeg_at.to(self.device)] = pixels
        if batch.decoded is not None:
            decoded = batch.decoded.to(self.device, non_blocking=True)
            if out is None:
                return decoded
            out[batch.decoded_at.to(self.device)] = decoded
        return out

    def _jpegs(self, batch: JpegBatch) -> torch.Tensor:
        jpegs = batch.jpegs()
        try:
            decoded = decode_jpegs(jpegs, self.device)
        except RuntimeError as err:
            self.refused += 1
            if self.refused == 1:
                _LOG.warning(
                    "predict: decode_jpeg on %s refused a batch (%s); such batches are decoded with Pillow",
                    self.device,
                    " ".join(str(err).split())[:200],
                )
            pictures = [_decode_picture(bytes(data.numpy()), where) for data, where in zip(jpegs, batch.jpeg_where)]
            return torch.stack([self.transform(picture) for picture in pictures]).to(self.device)
        return self.preprocess(decoded)


class BatchImages(IterableDataset):
    """Yields ``(unit index, ids, [n, 3, H, W] tensor)`` for the given units, split across workers.

    ``device_jpegs``: leave the device-decodable JPEGs undecoded and yield a :class:`JpegBatch` instead.
    """

    def __init__(self, units: list[Unit], transform: Transform, device_jpegs: bool = False):
        self.units = units
        self.transform = transform
        self.device_jpegs = device_jpegs

    def __iter__(self) -> Iterator[tuple[int, list[str] | None, torch.Tensor | JpegBatch | str]]:
        """Per unit ``(index, ids, tensor)``; a bad image ends the stream with ``(index, None, message)``
        (a DataLoader worker's exception would reach the user wrapped in a worker traceback)."""
        info = get_worker_info()
        mine = self.units if info is None else self.units[info.id :: info.num_workers]
        for unit in mine:
            try:
                ids, tensor = self.read(unit)
            except InvalidSourceData as err:
                yield unit.index, None, str(err)
                return
            yield unit.index, ids, tensor

    def read(self, unit: Unit) -> tuple[list[str], torch.Tensor | JpegBatch]:
        ids, decoded_at, tensors, jpeg_at, jpegs, jpeg_where = [], [], [], [], [], []
        groups = {}  # a sparse unit (attacked subset) has several pieces per row group: read each group once
        for piece in unit.pieces:
            key = (piece.path, piece.row_group)
            if key not in groups:
                groups[key] = pq.ParquetFile(piece.path).read_row_group(piece.row_group, columns=["id", "image"])
            table = groups[key].slice(piece.offset, piece.length)
            for row_id, image in zip(table.column("id").to_pylist(), table.column("image").to_pylist()):
                data, where = image["bytes"], f"{piece.path}: image of row {row_id!r}"
                if self.device_jpegs and device_decodable(data):
                    jpeg_at.append(len(ids))
                    jpegs.append(data)
                    jpeg_where.append(where)
                else:
                    decoded_at.append(len(ids))
                    tensors.append(self.transform(_decode_picture(data, where)))
                ids.append(row_id)
        if not self.device_jpegs:
            return ids, torch.stack(tensors)
        return ids, JpegBatch(
            rows=len(ids),
            decoded_at=torch.tensor(decoded_at, dtype=torch.int64),
            decoded=torch.stack(tensors) if tensors else None,
            jpeg_at=torch.tensor(jpeg_at, dtype=torch.int64),
            jpeg_bytes=torch.frombuffer(bytearray(b"".join(jpegs)), dtype=torch.uint8)
            if jpegs
            else torch.empty(0, dtype=torch.uint8),
            jpeg_ends=torch.tensor([len(data) for data in jpegs], dtype=torch.int64).cumsum(0),
            jpeg_where=jpeg_where,
        )


def _decode_picture(data: bytes, where: str):
    """Pillow decode to RGB, as timm's ImageFolder loader does; InvalidSourceData naming ``where``."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as opened:
            return opened.convert("RGB")
    except Exception as err:
        raise InvalidSourceData(f"{where} cannot be decoded ({err})") from err


class FeatureTap:
    """Captures the input of the model's classifier (the penultimate features) on every forward."""

    def __init__(self, model: nn.Module):
        head = classifier_of(model)
        self.features: torch.Tensor | None = None
        self.handle = head.register_forward_pre_hook(self._keep)

    def _keep(self, module: nn.Module, args: tuple) -> None:
        self.features = args[0].flatten(1)

    def take(self) -> torch.Tensor:
        features, self.features = self.features, None
        if features is None:
            raise ConfigError(f"{param('features')}: the model's classifier was not called in forward()")
        return features


def classifier_of(model: nn.Module) -> nn.Module:
    """timm's ``get_classifier()``, else the last ``nn.Linear`` (torchvision and most user models)."""
    getter = getattr(model, "get_classifier", None)
    head = getter() if callable(getter) else None
    if isinstance(head, nn.Module) and not isinstance(head, nn.Identity):
        return head
    linears = [module for module in model.modules() if isinstance(module, nn.Linear)]
    if not linears:
        raise ConfigError(
            f"{param('features')} needs a model whose last layer is an nn.Linear classifier (or timm's head)"
        )
    return linears[-1]


@dataclass(frozen=True)
class PredictOptions:
    """How :func:`predict` runs a model over a split: device, batches, loader, precision, preprocessing.

    Checked when made (ConfigError naming the field). ``evaluate`` runs every dataset with one of these
    (:class:`~imagenet_suite.inference.suite_options.SuiteOptions`).

    Attributes:
        device: where the model runs (``"cpu"``, ``"cuda"``, ``"cuda:1"`` or a ``torch.device``).
        batch_size: images per model call, 1 to 65,536 (a short last batch is padded to it, or to the
            split's rows when it has fewer). Also the unit of resuming: a ``.partial`` folder is reused only
            by a run with the same batch size.
        workers: DataLoader worker processes reading and decoding images, 0 to 512 (0: in this
            process); None: ``min(4, CPUs)``. Outputs do not depend on it. The bounds of both:
            :data:`imagenet_suite.limits.LIMITS`.
        features: also store the penultimate features (the input of the classifier), ``[N, d]``.
        amp: autocast (float16 on CUDA, bfloat16 on the CPU); outputs are stored as float32.
        gpu_decode: decode baseline/progressive YCbCr JPEGs with ``torchvision.io.decode_jpeg`` on
            ``device`` and preprocess them there; None: on CUDA devices only. True on a CPU device runs
            the same path with torchvision's CPU decoder (for testing). Falls back to the CPU path,
            saying so, where the preprocessing has no tensor counterpart.
        transform: replaces the model's preprocessing (a callable: PIL image -> ``[3, H, W]`` tensor);
            None: the model's own.
        transform_name: identifies ``transform`` in the resume manifest (a ``.partial`` folder made with
            another one is refused); None: ``"model default"``.
        resize_only: resize each image to the model's input size without a centre crop (Anzaku et al.
            2024, App. B; for timm, torchvision and user models alike), instead of the model's own
            resize + centre crop. PatchML builds are always predicted so (their protocol says so).
        progress: show a progress bar (stderr).

    Example:
        >>> from imagenet_suite.inference.predict import PredictOptions
        >>> PredictOptions(batch_size=64, workers=0).batch_size
        64
        >>> PredictOptions(workers=-1)
        Traceback (most recent call last):
        ...
        imagenet_suite.errors.ConfigError: workers must be 0 or more, got -1 (0: read images in the main process)
    """

    device: str | torch.device = "cpu"
    batch_size: int = 256
    workers: int | None = None
    features: bool = False
    amp: bool = False
    gpu_decode: bool | None = None
    transform: Transform | None = None
    transform_name: str | None = None
    resize_only: bool = False
    progress: bool = True

    def __post_init__(self) -> None:
        check_loader_arguments(self.workers, self.batch_size)
        try:
            torch.device(self.device)
        except (RuntimeError, TypeError) as err:
            raise ConfigError(
                f"{param('device')} {self.device!r} is not a torch device (cpu, cuda, cuda:1, ...)"
            ) from err
        if self.transform is not None and not callable(self.transform):
            raise ConfigError(f"{param('transform')} must be a callable (PIL image -> tensor), got {self.transform!r}")


def predict(
    dataset: str | Path | DatasetFolder,
    loaded: LoadedModel,
    out: str | Path,
    *,
    config: str | None = None,
    split: str | None = None,
    options: PredictOptions | None = None,
) -> Path:
    """Write ``loaded``'s outputs on a dataset split to ``out`` (``.pt``); return ``out``.

    ``config`` / ``split``: default to the only one. ``options``: how to run (default
    ``PredictOptions()``: the CPU, batches of 256, ``min(4, CPUs)`` workers, logits only).

    Example:
        A two-image ``imagenet_val`` in the ImageFolder layout (``val/<wnid>/<id>.JPEG``), built
        into a temporary folder:

        >>> import pathlib, tempfile
        >>> from imagenet_suite.testing import tiny_val_build
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> folder = tiny_val_build(root)  # two images, classes 0 and 1

        timm's tiny ``test_resnet``, randomly initialised (seed 0), over the two images:

        >>> from imagenet_suite.inference.models import load_model
        >>> from imagenet_suite.scoring import ModelOutputs
        >>> model = load_model("timm:test_resnet", weights="none", seed=0)
        >>> from imagenet_suite.inference.predict import PredictOptions
        >>> path = predict(folder, model, root / "outputs.pt", options=PredictOptions(workers=0, progress=False))
        >>> outputs = ModelOutputs.load(path)
        >>> outputs.ids, outputs.kind, tuple(outputs.values.shape)
        (('ILSVRC2012_val_00000001', 'ILSVRC2012_val_00000002'), 'logits', (2, 1000))
        >>> import shutil; shutil.rmtree(root)
    """
    return predict_batches(dataset, loaded, out, config=config, split=split, options=options).merge()


def predict_batches(
    dataset: str | Path | DatasetFolder,
    loaded: LoadedModel,
    out: str | Path,
    *,
    config: str | None = None,
    split: str | None = None,
    options: PredictOptions | None = None,
    rows: Sequence[int] | None = None,
) -> PredictedBatches:
    """:func:`predict`'s work without the merge: every batch's outputs in ``<out>.partial/`` (resumable as
    predict's), to read back batch by batch (:meth:`PredictedBatches.chunks`: a split too large to hold at
    once) or merge into ``out`` (:meth:`PredictedBatches.merge`). ``rows``: only the rows at these
    positions of the split (ascending), recorded in the resume manifest."""
    options = PredictOptions() if options is None else options
    out = check_outputs_file(out)
    job = PredictJob.of(dataset, loaded, options, config=config, split=split)
    units = job.units(rows)
    if not units:
        raise ConfigError(f"{param('rows')}: no rows of {job.folder.path} config {job.config!r} to predict")
    manifest = job.manifest()
    if rows is not None:  # only then: folders of runs over every row stay reusable
        manifest["rows"] = hashlib.sha256(_positions(rows).tobytes()).hexdigest()
    partial = out.with_name(out.name + ".partial")
    fresh = partial_folder(partial, manifest, "out")
    unit_ids = UnitIds()
    try:
        todo = missing_chunks(
            partial, units, lambda chunk, unit: _read_chunk(chunk, unit, options.features, unit_ids(unit)), "predict"
        )
        if todo:
            job.forward(todo, lambda index, chunk: write_chunk(partial, index, chunk))
    except BaseException:
        drop_if_empty(partial, fresh)  # nothing worth resuming: leave nothing behind
        raise
    return PredictedBatches(out, partial, units, options.features, unit_ids, loaded.zero_shot)


@dataclass(frozen=True)
class PredictedBatches:
    """Every batch of a predict run, finished: one chunk file per batch in ``partial``, rows in dataset order."""

    out: Path
    partial: Path
    units: list[Unit]
    features: bool
    unit_ids: UnitIds
    zero_shot: dict[str, Any] | None = None  # an open_clip model's head record, written beside the outputs

    @property
    def rows(self) -> int:
        return sum(unit.rows for unit in self.units)

    def chunks(self) -> Iterator[dict[str, Any]]:
        """Each batch's outputs in dataset order (``ids``, ``logits`` [+ ``features``]), read and checked one
        batch at a time."""
        for unit in self.units:
            yield _read_chunk(self.partial / chunk_name(unit.index), unit, self.features, self.unit_ids(unit))

    def merge(self) -> Path:
        """Write ``out`` (every batch's rows, in dataset order, atomically) and remove the partial folder."""
        _merge(self.units, self.partial, self.out, self.features, self.unit_ids, self.zero_shot)
        self.remove()
        return self.out

    def remove(self) -> None:
        """Remove the partial folder (but for rejected chunks), its outputs used."""
        remove_partial(self.partial)


@dataclass(frozen=True)
class PredictJob:
    """One split to predict with one model: where its rows are, how each image is preprocessed (on the CPU
    and, on the GPU decode path, on the device) and how the model runs (:class:`PredictOptions`).

    Made (and checked) by :meth:`of` before any image is read; :func:`predict` and the prediction store
    (:class:`~imagenet_suite.inference.store.PredictionStore`) run it over their batches with :meth:`forward`.
    """

    folder: DatasetFolder
    config: str
    split: str
    rows: int
    loaded: LoadedModel
    options: PredictOptions
    preprocess: TensorTransform | None = None  # the device twin of the transform (GPU decode path), or None

    @classmethod
    def of(
        cls,
        dataset: str | Path | DatasetFolder,
        loaded: LoadedModel,
        options: PredictOptions,
        *,
        config: str | None = None,
        split: str | None = None,
    ) -> PredictJob:
        """The job of ``config`` / ``split`` (default: the only one); ConfigError without an image column.
        On the GPU decode path a preprocessing without a tensor twin turns it off, with one warning line."""
        folder = dataset if isinstance(dataset, DatasetFolder) else DatasetFolder(dataset)
        config = folder.resolve_config(config)
        split = folder.resolve_split(config, split)
        if "image" not in folder.column_names(config):
            raise ConfigError(f"{folder.path} config {config!r} has no 'image' column to run a model on")
        rows = sum(pq.ParquetFile(path).metadata.num_rows for path in folder.split_files(config, split))
        if not rows:
            raise ConfigError(f"{folder.path} config {config!r} split {split!r} has no rows to predict")
        device = torch.device(options.device)
        preprocess = None
        if device.type == "cuda" if options.gpu_decode is None else options.gpu_decode:
            protocol = folder.protocol(config)
            preprocess, why_not = device_transform(loaded, protocol, options.transform, options.resize_only)
            if preprocess is None:
                _LOG.warning(
                    "predict: GPU decode is off, %s; every image is decoded and preprocessed on the CPU", why_not
                )
        return cls(folder, config, split, rows, loaded, options, preprocess)

    @property
    def device(self) -> torch.device:
        return torch.device(self.options.device)

    @property
    def call_rows(self) -> int:
        """Images in every model call: ``batch_size``, or the split's rows when it has fewer (a short batch
        is padded to it)."""
        return min(self.options.batch_size, self.rows)

    def units(self, positions: Sequence[int] | None = None) -> list[Unit]:
        """The batches of the split's rows: all, or those at ``positions`` (ascending, each once)."""
        return split_units(self.folder, self.config, self.split, self.options.batch_size, positions)

    def manifest(self) -> dict[str, Any]:
        """What a ``.partial`` folder's chunks were made by (a run that differs in any of it does not reuse
        them)."""
        manifest = _manifest(self.folder, self.config, self.split, self.loaded, self.options)
        if self.preprocess is not None:  # its inputs differ from the CPU path's by a level or two: do not mix
            manifest["decode"] = f"torchvision.io.decode_jpeg on {self.device.type}"
        return manifest

    def identity(self) -> dict[str, Any]:
        """What the outputs of one image depend on, whatever dataset, config or split it is a row of: the
        model (spec and parameter count), its weights and tag, the preprocessing as applied (override,
        resize-only by the options or by the build's protocol, border crop, the model's transform), features,
        precision, the images in every model call (:attr:`call_rows`: kernels compute each row of a batch of
        one shape alike), decode path, device type and torch version."""
        scope = ("dataset", "build", "config", "split", "preprocessing", "batch_size")
        identity = {key: value for key, value in self.manifest().items() if key not in scope}
        identity["call_rows"] = self.call_rows
        identity["params"] = sum(parameter.numel() for parameter in self.loaded.model.parameters())
        protocol = self.folder.protocol(self.config)
        resize_only = self.options.resize_only or no_center_crop(protocol)
        identity["resize_only"] = bool(resize_only) and self.options.transform is None
        identity["border_crop_px"] = _border_px(protocol)
        if self.options.transform is None:
            identity["model_transform"] = " ".join(
                repr(_model_transform(self.loaded, protocol, None, resize_only)).split()
            )
        identity["device"] = self.device.type
        identity["torch"] = torch.__version__
        return identity

    def forward(self, units: list[Unit], write: Callable[[int, dict[str, Any]], None]) -> None:
        """Run the model over ``units`` (read and decoded by ``options.workers`` DataLoader workers); hand
        each batch's outputs to ``write(unit index, {"ids", "logits"[, "features"]})`` (float32, CPU)."""
        options = self.options
        protocol = self.folder.protocol(self.config)
        cpu_transform = protocol_transform(self.loaded, protocol, options.transform, options.resize_only)
        images = BatchImages(units, cpu_transform, device_jpegs=self.preprocess is not None)
        to_device = DeviceInputs(self.preprocess, cpu_transform, self.device) if self.preprocess is not None else None
        forward = _Forward.of(self.loaded.model, write, self.device, options, self.call_rows)
        _run(images, units, forward, options, to_device)


def check_loader_arguments(workers: int | None, batch_size: int) -> None:
    """ConfigError naming the parameter unless ``workers`` is None (the default) or within its bound and
    ``batch_size`` within its bound (:data:`imagenet_suite.limits.LIMITS`: 0..512 workers, 1..65,536 images;
    :class:`PredictOptions` calls it when made)."""
    check_limit("workers", workers)
    check_limit("batch_size", batch_size)


def check_outputs_file(out: str | Path) -> Path:
    """``out`` if predict can write its outputs file there, else ConfigError naming ``out``: it must end
    in ``.pt``, not be a folder, and lie in a folder that exists or can be made and is writable (nothing is
    created here); ``<out>.partial`` must not be a file."""
    out = Path(out)
    if out.suffix != ".pt":
        raise ConfigError(f"{param('out')} {out} must end in .pt (the outputs file `score` reads)")
    if out.is_dir():
        raise ConfigError(f"{param('out')} {out}: is a folder; expected the path of a .pt file to write")
    partial = out.with_name(out.name + ".partial")
    if partial.exists() and not partial.is_dir():
        raise ConfigError(
            f"{param('out')} {out}: {partial} is in the way (predict keeps its partial outputs there); remove it"
        )
    problem = write_problem(out)
    if problem is not None:
        raise ConfigError(f"{param('out')} {out}: {problem}")
    return out


def _manifest(folder: DatasetFolder, config: str, split: str, loaded: LoadedModel, options: PredictOptions) -> dict:
    """What produced the chunks of a ``.partial`` folder: a run that differs in any of it does not reuse them
    (``preprocessing`` only with ``resize_only``, ``code_sha256`` only for a user model, so folders of earlier
    versions stay reusable). :meth:`PredictJob.identity` (the prediction store's) is built from it."""
    manifest = {
        "dataset": folder.name,
        "build": folder.build_info.get(SELF_HASH),
        "config": config,
        "split": split,
        "model": loaded.spec,
        "weights": weights_digest(loaded),
        "weights_tag": loaded.source.tag if loaded.source is not None else None,  # the preprocessing's, too
        "transform": options.transform_name or "model default",
        "features": options.features,
        "amp": options.amp,
        "batch_size": options.batch_size,
        "batches": PADDED,
    }
    if loaded.zero_shot is not None:  # the zero-shot head: class names, prompts, logit scale, probabilities
        manifest["zero_shot"] = head_identity(loaded.zero_shot)
    if loaded.code_sha256 is not None:  # a user model's source file: an edited model is another model
        manifest["code_sha256"] = loaded.code_sha256
    if options.resize_only:
        manifest["preprocessing"] = "resize only, no center crop"
    return manifest


PADDED = "every model call has min(batch_size, split rows) images (a short batch padded with copies of its last)"
CHUNK_CONTRACT = "a batch's outputs written by predict: {'ids': [str], 'logits': [n, C] float[, 'features': [n, d]]}"


class UnitIds:
    """The dataset ids of a unit's rows, read from the ``id`` column of its row groups (each read once)."""

    def __init__(self):
        self._groups: dict[tuple[str, int], list[str]] = {}

    def __call__(self, unit: Unit) -> list[str]:
        ids = []
        for piece in unit.pieces:
            key = (piece.path, piece.row_group)
            if key not in self._groups:
                table = pq.ParquetFile(piece.path).read_row_group(piece.row_group, columns=["id"])
                self._groups[key] = table.column("id").to_pylist()
            ids += self._groups[key][piece.offset : piece.offset + piece.length]
        keep = {(piece.path, piece.row_group) for piece in unit.pieces}  # units come in order: earlier groups are done
        self._groups = {key: value for key, value in self._groups.items() if key in keep}
        return ids


def _read_chunk(chunk: Path, unit: Unit, features: bool, expected_ids: list[str]) -> dict[str, Any]:
    """The outputs of ``unit`` in ``chunk``, checked: ids (those of the unit's rows, in order), logits
    ``[rows, C]`` float and, with ``features``, features ``[rows, d]``; ConfigError naming the chunk."""
    if not chunk.is_file():
        raise ConfigError(f"{chunk}: not a file")
    data = load_torch_file(chunk, ConfigError, CHUNK_CONTRACT)
    if not isinstance(data, dict) or not isinstance(data.get("ids"), list) or "logits" not in data:
        raise ConfigError(f"{chunk}: expected {CHUNK_CONTRACT}")
    ids = data["ids"]
    if len(ids) != unit.rows:
        raise ConfigError(f"{chunk}: holds {len(ids)} rows, expected the batch's {unit.rows}")
    if ids != expected_ids:
        at = next(i for i, (a, b) in enumerate(zip(ids, expected_ids)) if a != b)
        raise ConfigError(
            f"{chunk}: holds the rows of another batch (row {at} is {ids[at]!r}, the dataset's is {expected_ids[at]!r})"
        )
    for name in ("logits", "features") if features else ("logits",):
        value = data.get(name)
        if not isinstance(value, torch.Tensor) or value.ndim != 2 or not value.is_floating_point():
            found = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
            raise ConfigError(f"{chunk}: {name!r} must be a float tensor [rows, n], got {found}")
        if value.shape[0] != unit.rows:
            raise ConfigError(f"{chunk}: {name!r} has {value.shape[0]} rows, expected the batch's {unit.rows}")
    return data


def _run(images: BatchImages, todo: list[Unit], forward: _Forward, options: PredictOptions, to_device=None) -> None:
    """Read ``todo`` with ``options.workers`` DataLoader workers (default :func:`~imagenet_suite.scoring.threads.loader_workers`,
    each torch single-threaded) and hand each batch's outputs on (``forward``, with torch's threads bounded by the
    CPUs available: :func:`~imagenet_suite.scoring.threads.compute_threads`; its feature tap is removed from the
    model at the end)."""
    workers = loader_workers(options.workers)
    bar = tqdm(total=sum(unit.rows for unit in todo), unit="img", disable=not options.progress, desc="predict")
    try:
        loader = DataLoader(
            images,
            batch_size=None,
            num_workers=workers,
            pin_memory=forward.device.type == "cuda",
            persistent_workers=False,
            worker_init_fn=single_threaded_worker if workers else None,
        )
        forward.model.to(forward.device)
        done = set()
        with torch_threads(compute_threads()):  # no more threads than the CPUs the process may use
            for index, ids, batch in loader:
                if ids is None:
                    raise InvalidSourceData(batch)
                if to_device is not None:
                    batch = to_device(batch)
                forward(index, ids, batch)
                done.add(index)
                bar.update(len(ids))
    finally:
        bar.close()
        if forward.tap is not None:
            forward.tap.handle.remove()
    missing = [unit.index for unit in todo if unit.index not in done]
    if missing:
        raise ConfigError(f"predict finished without outputs for batches {missing[:5]}")


@dataclass(frozen=True)
class _Forward:
    """The model of a run, where it runs, how (autocast, feature tap, rows per call) and where each batch's
    outputs go (``write``)."""

    model: nn.Module
    device: torch.device
    write: Callable[[int, dict[str, Any]], None]
    rows: int
    tap: FeatureTap | None = None
    autocast: Any = None

    @classmethod
    def of(cls, model: nn.Module, write, device: torch.device, options: PredictOptions, rows: int) -> _Forward:
        autocast = None
        if options.amp:
            autocast = torch.autocast(device.type, torch.float16 if device.type == "cuda" else torch.bfloat16)
        tap = FeatureTap(model) if options.features else None
        return cls(model, device, write, rows, tap, autocast)

    def __call__(self, index: int, ids: list[str], batch: torch.Tensor) -> None:
        """Run the model on one batch, padded to ``rows`` images (copies of its last one, whose outputs are
        dropped): every call has the same shape, so an image's outputs do not depend on the other images of
        its batch. Hand its outputs (float32, on the CPU) to ``write``."""
        with torch.inference_mode(), self.autocast or nullcontext():
            inputs = batch.to(self.device, non_blocking=True)
            if inputs.shape[0] < self.rows:
                pad = inputs[-1:].expand(self.rows - inputs.shape[0], *inputs.shape[1:])
                inputs = torch.cat([inputs, pad])
            logits = self.model(inputs)
            feats = self.tap.take() if self.tap is not None else None
        if not isinstance(logits, torch.Tensor) or logits.ndim != 2 or logits.shape[0] != inputs.shape[0]:
            raise ConfigError(
                f"the model must return [batch, classes] logits; it returned {getattr(logits, 'shape', type(logits))}"
            )
        chunk = {"ids": ids, "logits": _first_rows(logits, len(ids))}
        if feats is not None:
            chunk["features"] = _first_rows(feats, len(ids))
        self.write(index, chunk)


def _first_rows(value: torch.Tensor, rows: int) -> torch.Tensor:
    """``value[:rows]`` as float32 on the CPU, in storage of its own (``torch.save`` writes a view's whole
    storage, padding rows included)."""
    kept = value[:rows].float().cpu()
    return kept.clone() if kept.untyped_storage().nbytes() != kept.nbytes else kept


def _merge(
    units: list[Unit], partial: Path, out: Path, features: bool, unit_ids: UnitIds, zero_shot: dict | None = None
) -> None:
    """The outputs file from the chunks (checked), rows in dataset order; a zero-shot model's head record
    goes beside them (``zero_shot``: class names, prompts, logit scale, probability convention)."""
    chunks = [_read_chunk(partial / chunk_name(unit.index), unit, features, unit_ids(unit)) for unit in units]
    for name in ("logits", "features") if features else ("logits",):
        first = chunks[0][name].shape[1]
        for unit, chunk in zip(units, chunks):
            if chunk[name].shape[1] != first:
                raise ConfigError(
                    f"{partial / chunk_name(unit.index)}: {name!r} has {chunk[name].shape[1]} columns, "
                    f"the first batch's has {first}; delete {partial} and run again"
                )
    merged: dict[str, Any] = {
        "ids": [row_id for chunk in chunks for row_id in chunk["ids"]],
        "logits": torch.cat([chunk["logits"] for chunk in chunks]),
    }
    if features:
        merged["features"] = torch.cat([chunk["features"] for chunk in chunks])
    if zero_shot is not None:
        merged["zero_shot"] = zero_shot
    atomic_write_bytes(out, torch_bytes(merged))


__all__ = [
    "PADDED",
    "BatchImages",
    "DeviceInputs",
    "FeatureTap",
    "JpegBatch",
    "Piece",
    "PredictJob",
    "PredictOptions",
    "PredictedBatches",
    "Unit",
    "check_loader_arguments",
    "check_outputs_file",
    "classifier_of",
    "device_transform",
    "predict",
    "predict_batches",
    "protocol_transform",
    "split_units",
]
