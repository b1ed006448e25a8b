"""One forward pass per distinct image: a model's predictions kept by the sha256 of each image's bytes and
shared by every dataset, config and split that holds the image (:class:`PredictionStore`).

ImageNet val's ``default`` and ``boxes`` configs and the ``images`` configs of ReaL and of Shankar et al.'s
multi-labels hold the same 50,000 images. :meth:`PredictionStore.predict` writes the outputs file
:func:`~imagenet_suite.inference.predict.predict` writes, but runs the model only on the images the store
holds no prediction of (each once, however many rows hold it) and copies the other rows from where they
were predicted before: another config, dataset or run.

Rows are interchangeable because an image's outputs depend on the image and on the *identity* of the
prediction (:meth:`~imagenet_suite.inference.predict.PredictJob.identity`: model, weights and tag,
preprocessing as applied — Anzaku et al. 2024's resize-only is not a centre crop —, features, precision,
batch size, decode path, device type, torch version), not on the row, dataset or batch they came from:
predict pads every model call to ``batch_size`` images, and a batch of one shape is computed row by row
alike. So the outputs file is byte-identical to predict's (tested).

A store folder (``evaluate``: ``RUN_DIR/predictions/``, or one shared by runs)::

    images/<build_info sha256>/<config>/<split>.json   the sha256 of each row's image bytes, in row order
                                                       (hashed once per build: its build_info pins every file)
    <identity sha256>/identity.json                    the identity of the predictions below
    <identity sha256>/entries/<path sha256>.json       a prediction file: its path (relative to this folder),
                                                       sha256 and the image of each of its rows
    <identity sha256>/chunks/<sha256>.pt               a batch predicted and not yet in an outputs file

A prediction file is an outputs file (``{"ids", "logits"[, "features"]}``): an outputs file written by
:meth:`PredictionStore.predict` (it stays where it was written; the store names it) or a chunk. Each batch
is kept as a chunk as soon as it is predicted (an interrupted run resumes from them); the chunks an outputs
file covers are removed once it is written. Everything is checked when read: a list of image hashes against
the sha256 stored with it, a prediction file against its entry's sha256 and shape (rows, float ``[rows, n]``
logits and features). An entry that fails (an outputs file deleted or rewritten since, a
damaged chunk) is named in one warning line and set aside as ``<entry>.rejected`` (a chunk with it), and
its images are predicted again. Writes are atomic and names are content hashes, so processes sharing a
store never read half a file; two that predict one image at once keep equal bytes. A write that fails (a full
disk) is one ConfigError naming the file and the parameter that chose the store (:func:`writing`); what the
store holds is kept for the next run. :func:`check_store_folder` checks the folder before a model is loaded.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import logging
import os
import re
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import torch
from tqdm.auto import tqdm

from ..dataset.folder import DatasetFolder
from ..errors import ConfigError, InvalidSourceData, param
from ..files import atomic_write_bytes, write_problem
from ..scoring.outputs import load_torch_file
from ..scoring.threads import loader_workers
from .models import LoadedModel
from .predict import PredictJob, PredictOptions, check_outputs_file
from .resume import set_aside, torch_bytes

_LOG = logging.getLogger(__name__)
STORE_FORMAT = "imagenet-suite.prediction-store/1"
IMAGES = "images"
ENTRIES = "entries"
CHUNKS = "chunks"
IDENTITY = "identity.json"
ATTEMPTS = 3  # lookups before giving up on entries that keep failing their checks
_SHA256 = re.compile(r"[0-9a-f]{64}")
_CONTRACT = "a prediction file of the store: {'ids': [str], 'logits': [rows, C] float[, 'features': [rows, d]]}"


def image_sha256(folder: DatasetFolder, config: str, split: str, progress: bool = False) -> list[str]:
    """The hex sha256 of each row's image bytes (the ``image`` column's ``bytes``), in row order; row groups
    are read and hashed on ``min(4, CPUs)`` threads. InvalidSourceData naming the row when one has no bytes.

    Example:
        The images of a two-image ``imagenet_val`` build hash as their bytes do:

        >>> import hashlib, pathlib, tempfile
        >>> from imagenet_suite.dataset.folder import DatasetFolder
        >>> from imagenet_suite.testing import tiny_val_build
        >>> folder = DatasetFolder(tiny_val_build(pathlib.Path(tempfile.mkdtemp())))
        >>> rows = folder.read_table("default", "validation", ["image"]).column("image").to_pylist()
        >>> image_sha256(folder, "default", "validation") == [hashlib.sha256(r["bytes"]).hexdigest() for r in rows]
        True
    """
    groups = [
        (path, group)
        for path in folder.split_files(config, split)
        for group in range(pq.ParquetFile(path).metadata.num_row_groups)
    ]
    total = sum(_rows_of(path, group) for path, group in groups)
    bar = tqdm(total=total, unit="img", disable=not progress, desc="hash images")

    def hash_group(place: tuple[Path, int]) -> list[str]:
        path, group = place
        table = pq.ParquetFile(path).read_row_group(group, columns=["id", "image"])
        ids, images = table.column("id").to_pylist(), table.column("image").combine_chunks().field("bytes")
        hashes = []
        for row_id, data in zip(ids, images):
            if not data.is_valid:
                raise InvalidSourceData(f"{path}: row {row_id!r} has no image bytes")
            hashes.append(hashlib.sha256(data.as_buffer()).hexdigest())
        bar.update(len(hashes))
        return hashes

    try:
        with ThreadPoolExecutor(loader_workers() or 1) as pool:
            return [digest for hashes in pool.map(hash_group, groups) for digest in hashes]
    finally:
        bar.close()


def _rows_of(path: Path, group: int) -> int:
    return pq.ParquetFile(path).metadata.row_group(group).num_rows


def _list_sha256(hashes: Sequence[str]) -> str:
    """The sha256 stored beside a list of image hashes (of the hashes, concatenated)."""
    return hashlib.sha256("".join(hashes).encode()).hexdigest()


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


class _Stale(Exception):
    """An entry failed its check when read and was set aside: look up again."""


@dataclass(frozen=True)
class _Entry:
    """One prediction file: where it is, the image of each row (sorted digests + their rows, for lookups)."""

    file: Path
    sha256: str
    rows: int
    digests: np.ndarray  # sorted sha256 digests (S32)
    order: np.ndarray  # the row of each sorted digest

    @property
    def chunk(self) -> bool:
        return self.file.parent.name == CHUNKS


def _digests(hashes: Sequence[str]) -> np.ndarray:
    return np.array([bytes.fromhex(digest) for digest in hashes], dtype="S32")


@dataclass(frozen=True)
class Found:
    """Where each image of a lookup is: the index in ``names`` of the entry that holds it (-1: none) and
    its row there."""

    names: list[str]
    entry: np.ndarray
    row: np.ndarray

    def missing(self) -> np.ndarray:
        return self.entry < 0


class Shelf:
    """The predictions of one identity in a store folder: lookups by image sha256, reads checked, writes
    atomic (:class:`PredictionStore` makes one per identity and keeps its index between calls). A write that
    fails is a ConfigError naming the file and ``parameter`` (:func:`writing`)."""

    def __init__(self, folder: Path, identity: dict[str, Any], parameter: str = "prediction_store"):
        self.folder = folder
        self.identity = identity
        self.parameter = parameter
        self._index: dict[str, _Entry] = {}
        with writing(folder.parent, parameter):
            (folder / ENTRIES).mkdir(parents=True, exist_ok=True)
            (folder / CHUNKS).mkdir(exist_ok=True)
            recorded = folder / IDENTITY
            wanted = json.dumps(identity, indent=1, sort_keys=True).encode()
            if not recorded.is_file() or recorded.read_bytes() != wanted:
                atomic_write_bytes(recorded, wanted, shared=True)

    def lookup(self, hashes: Sequence[str]) -> Found:
        """Which entry holds each image (the first by entry name when several do)."""
        self._refresh()
        query = _digests(hashes)
        entry = np.full(len(query), -1, dtype=np.int64)
        row = np.zeros(len(query), dtype=np.int64)
        names = sorted(self._index)
        for number, name in enumerate(names):
            held = self._index[name]
            if not held.rows:
                continue
            at = np.searchsorted(held.digests, query).clip(max=held.rows - 1)
            hit = (held.digests[at] == query) & (entry < 0)
            entry[hit], row[hit] = number, held.order[at[hit]]
        return Found(names, entry, row)

    def gather(self, found: Found) -> dict[str, torch.Tensor]:
        """The rows ``found`` names, read from their files (each checked): ``{"logits"[, "features"]}``
        ``[len(found), n]``. ``_Stale`` when an entry fails its check (it is set aside)."""
        names = ("logits", "features") if self.identity.get("features") else ("logits",)
        out: dict[str, torch.Tensor] = {}
        for number in np.unique(found.entry):
            name = found.names[number]
            data = self._read(name)
            take = np.flatnonzero(found.entry == number)
            for key in names:
                value = data[key]
                if key not in out:
                    out[key] = torch.empty((len(found.entry), value.shape[1]), dtype=value.dtype)
                elif (out[key].shape[1], out[key].dtype) != (value.shape[1], value.dtype):
                    self._reject(name, f"{key!r} is {value.dtype} [rows, {value.shape[1]}], others' are "
                                 f"{out[key].dtype} [rows, {out[key].shape[1]}]")  # fmt: skip
                out[key][torch.from_numpy(take)] = value[torch.from_numpy(found.row[take])]
        return out

    def add_chunk(self, chunk: dict[str, Any] | bytes, hashes: Sequence[str]) -> None:
        """Keep one predicted batch (an outputs dict, or its ``torch.save`` bytes), whose rows are the images
        ``hashes``."""
        data = chunk if isinstance(chunk, bytes) else torch_bytes(chunk)
        sha256 = hashlib.sha256(data).hexdigest()
        path = self.folder / CHUNKS / f"{sha256}.pt"
        with writing(self.folder.parent, self.parameter):
            atomic_write_bytes(path, data, durable=False, shared=True)
        self._add_entry(path, sha256, hashes, durable=False)

    def add_file(self, path: Path, data: bytes, hashes: Sequence[str]) -> None:
        """Name the outputs file ``path`` (just written with ``data``), whose rows are the images ``hashes``;
        remove the chunks it covers."""
        self._add_entry(path, hashlib.sha256(data).hexdigest(), hashes, durable=True)
        covered = np.unique(_digests(hashes))
        for name, held in list(self._index.items()):
            if held.chunk and np.isin(held.digests, covered).all():
                (self.folder / ENTRIES / f"{name}.json").unlink(missing_ok=True)
                held.file.unlink(missing_ok=True)
                del self._index[name]

    def _add_entry(self, path: Path, sha256: str, hashes: Sequence[str], durable: bool) -> None:
        """Write the entry of the file at ``path``, named by the sha256 of its path relative to the shelf (a
        file written again replaces its entry)."""
        relative = os.path.relpath(Path(path).absolute(), self.folder.absolute())
        entry = {
            "format": STORE_FORMAT,
            "file": relative,
            "sha256": sha256,
            "images": list(hashes),
            "images_sha256": _list_sha256(hashes),
        }
        name = hashlib.sha256(relative.encode()).hexdigest()
        with writing(self.folder.parent, self.parameter):
            atomic_write_bytes(self.folder / ENTRIES / f"{name}.json", _json_bytes(entry), durable=durable, shared=True)
        self._index[name] = self._entry(self.folder / relative, sha256, hashes)

    @staticmethod
    def _entry(file: Path, sha256: str, hashes: Sequence[str]) -> _Entry:
        digests = _digests(hashes)
        order = np.argsort(digests, kind="stable")
        return _Entry(file, sha256, len(hashes), digests[order], order)

    def _refresh(self) -> None:
        """Read the entries other processes (or earlier runs) added; forget removed ones."""
        names = {path.stem for path in (self.folder / ENTRIES).glob("*.json") if _SHA256.fullmatch(path.stem)}
        for name in set(self._index) - names:
            del self._index[name]
        for name in sorted(names - set(self._index)):
            try:
                self._index[name] = self._load_entry(name)
            except _Stale:
                continue

    def _load_entry(self, name: str) -> _Entry:
        path = self.folder / ENTRIES / f"{name}.json"
        try:
            entry = json.loads(path.read_bytes())
        except FileNotFoundError as err:  # removed by another process since listed
            raise _Stale(name) from err
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            self._set_aside(path, None, f"not a readable entry ({err})")
        images = entry.get("images") if isinstance(entry, dict) else None
        if (
            not isinstance(entry, dict)
            or entry.get("format") != STORE_FORMAT
            or not isinstance(entry.get("file"), str)
            or not _SHA256.fullmatch(str(entry.get("sha256")))
            or not isinstance(images, list)
            or not all(isinstance(digest, str) and _SHA256.fullmatch(digest) for digest in images)
        ):
            self._set_aside(
                path, None, f"not an entry of {STORE_FORMAT} ({{format, file, sha256, images, images_sha256}})"
            )
        if entry.get("images_sha256") != _list_sha256(images):
            self._set_aside(path, None, "its list of images does not match the sha256 stored with it")
        return self._entry(self.folder / entry["file"], entry["sha256"], images)

    def _read(self, name: str) -> dict[str, Any]:
        """The prediction file of entry ``name``, checked (sha256, rows, float ``[rows, n]`` logits/features)."""
        held = self._index[name]
        try:
            data = held.file.read_bytes()
        except OSError as err:
            self._reject(name, f"its file {held.file} cannot be read ({err.strerror or err})")
        if hashlib.sha256(data).hexdigest() != held.sha256:
            recorded = self._load_entry(name)
            if recorded.sha256 != held.sha256:  # the file was written again, with its entry, since we read it
                self._index[name] = recorded
                raise _Stale(name)
            self._reject(name, f"its file {held.file} changed since it was stored (sha256 {held.sha256[:12]}… then)")
        try:
            value = load_torch_file(io.BytesIO(data), ConfigError, _CONTRACT, name=str(held.file))
        except ConfigError as err:
            self._reject(name, str(err))
        keys = ("logits", "features") if self.identity.get("features") else ("logits",)
        for key in keys:
            tensor = value.get(key) if isinstance(value, dict) else None
            if not isinstance(tensor, torch.Tensor) or tensor.ndim != 2 or not tensor.is_floating_point():
                self._reject(name, f"{held.file}: expected {_CONTRACT}")
            if tensor.shape[0] != held.rows:
                self._reject(name, f"{held.file}: {key!r} has {tensor.shape[0]} rows, the entry {held.rows}")
        return value

    def _reject(self, name: str, why: str) -> None:
        held = self._index.pop(name)
        self._set_aside(self.folder / ENTRIES / f"{name}.json", held.file if held.chunk else None, why)

    @staticmethod
    def _set_aside(entry: Path, chunk: Path | None, why: str) -> None:
        """Rename ``entry`` (and ``chunk``) to ``.rejected``, say so in one warning line; raise ``_Stale``."""
        moved = []
        for path in (entry, chunk) if chunk is not None else (entry,):
            try:
                moved.append(str(set_aside(path)))
            except FileNotFoundError:  # set aside by another process, or a chunk already removed
                continue
        _LOG.warning("prediction store: %s: %s; set aside (%s), its images are predicted again", entry, why, moved)
        raise _Stale(entry.stem)


class PredictionStore:
    """A folder of a model's predictions kept by image sha256 (the module docstring has its layout).

    ``root`` is made when first written to. One instance keeps each identity's index in memory between
    calls; other processes may share the folder (they see each other's entries at the next lookup).
    ``parameter``: the parameter that chose ``root`` (``prediction_store``; ``run_dir`` for a run folder's own
    store), which a failed write into it names (:func:`writing`).

    Example:
        The two rows of ``tiny_val_build`` are the same black picture (one image, two ids):

        >>> import pathlib, tempfile
        >>> from imagenet_suite.dataset import DatasetFolder
        >>> from imagenet_suite.inference import PredictOptions, load_model
        >>> from imagenet_suite.testing import tiny_val_build
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> folder = DatasetFolder(tiny_val_build(root))
        >>> store = PredictionStore(root / "store")
        >>> len(set(store.image_hashes(folder, "default", "validation")))
        1
        >>> model = load_model("timm:test_resnet", weights="none", seed=0)
        >>> options = PredictOptions(batch_size=2, workers=0, progress=False)
        >>> first = store.predict(folder, model, root / "first.pt", options=options)

        Predicted again (another file, the same store), nothing reaches the model and the bytes are equal:

        >>> calls = []
        >>> hook = model.model.register_forward_hook(lambda *args: calls.append(1))
        >>> again = store.predict(folder, model, root / "again.pt", options=options)
        >>> calls, first.read_bytes() == again.read_bytes()
        ([], True)
        >>> hook.remove()
    """

    def __init__(self, root: str | Path, parameter: str = "prediction_store"):
        self.root = Path(root)
        self.parameter = parameter
        self._shelves: dict[str, Shelf] = {}
        self._hashes: dict[tuple[str, str, str], list[str]] = {}

    def shelf(self, identity: dict[str, Any]) -> Shelf:
        """The predictions of ``identity`` (:meth:`PredictJob.identity`)."""
        digest = hashlib.sha256(_json_bytes(identity)).hexdigest()
        if digest not in self._shelves:
            self._shelves[digest] = Shelf(self.root / digest, identity, self.parameter)
        return self._shelves[digest]

    def image_hashes(self, folder: DatasetFolder, config: str, split: str, progress: bool = False) -> list[str]:
        """:func:`image_sha256` of the split, read from ``images/`` when hashed before (the list is checked
        against its sha256 and row count, else hashed again with a warning), else hashed and kept there."""
        key = (folder.build_info_sha256, config, split)
        if key in self._hashes:
            return self._hashes[key]
        path = self.root / IMAGES / folder.build_info_sha256 / config / f"{split}.json"
        rows = sum(pq.ParquetFile(file).metadata.num_rows for file in folder.split_files(config, split))
        hashes = _read_hash_list(path, rows) if path.is_file() else None
        if hashes is None:
            hashes = image_sha256(folder, config, split, progress)
            record = {"format": STORE_FORMAT, "images": hashes, "images_sha256": _list_sha256(hashes)}
            with writing(self.root, self.parameter):
                path.parent.mkdir(parents=True, exist_ok=True)
                atomic_write_bytes(path, _json_bytes(record), shared=True)
        self._hashes[key] = hashes
        return hashes

    def predict(
        self,
        dataset: str | Path | DatasetFolder,
        loaded: LoadedModel,
        out: str | Path,
        *,
        config: str | None = None,
        split: str | None = None,
        options: PredictOptions | None = None,
    ) -> Path:
        """:func:`~imagenet_suite.inference.predict.predict` through the store: the model runs only on the
        images of the split the store has no prediction of (each distinct image once); ``out`` is written
        (byte-identical to predict's) and named in the store. Arguments as predict's."""
        options = PredictOptions() if options is None else options
        out = check_outputs_file(out)
        job = PredictJob.of(dataset, loaded, options, config=config, split=split)
        hashes = self.image_hashes(job.folder, job.config, job.split, options.progress)
        shelf = self.shelf(job.identity())
        for _ in range(ATTEMPTS):
            found = shelf.lookup(hashes)
            todo = first_missing(hashes, found)
            if todo:
                forward_into(job, todo, hashes, shelf)
                found = shelf.lookup(hashes)
                if found.missing().any():  # a batch removed by another process since: look again
                    continue
            try:
                rows = shelf.gather(found)
                break
            except _Stale:
                continue
        else:
            raise ConfigError(f"{param('prediction_store')} {self.root}: its entries keep failing their checks")
        ids = job.folder.read_table(job.config, job.split, ["id"]).column("id").to_pylist()
        head = {"zero_shot": loaded.zero_shot} if loaded.zero_shot is not None else {}  # as predict writes it
        data = torch_bytes({"ids": ids, **rows, **head})
        out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(out, data)
        shelf.add_file(out, data, hashes)
        return out

    def plan(self, jobs: Sequence[PredictJob]) -> list[list[int]]:
        """The rows each job must predict so that every image the store lacks is predicted once, by the
        first job (of its identity) that holds it: positions in the job's split, sorted."""
        planned: dict[str, set[str]] = {}
        plans = []
        for job in jobs:
            hashes = self.image_hashes(job.folder, job.config, job.split, job.options.progress)
            shelf = self.shelf(job.identity())
            taken = planned.setdefault(str(shelf.folder), set())
            positions = [p for p in first_missing(hashes, shelf.lookup(hashes)) if hashes[p] not in taken]
            taken.update(hashes[p] for p in positions)
            plans.append(positions)
        return plans

    def add_chunks(self, job: PredictJob, positions: Sequence[int], chunks: Sequence[bytes]) -> None:
        """Keep the chunks :func:`predict_chunks` returned for ``positions`` of ``job``'s split."""
        hashes = self.image_hashes(job.folder, job.config, job.split)
        shelf = self.shelf(job.identity())
        size = job.options.batch_size
        for index, data in enumerate(chunks):
            shelf.add_chunk(data, [hashes[p] for p in positions[index * size : (index + 1) * size]])


def _read_hash_list(path: Path, rows: int) -> list[str] | None:
    """The image hashes kept at ``path``, or None (with a warning) when the file fails its check."""
    try:
        record = json.loads(path.read_bytes())
        hashes = record["images"]
        if (
            record.get("format") != STORE_FORMAT
            or not isinstance(hashes, list)
            or not all(isinstance(digest, str) and _SHA256.fullmatch(digest) for digest in hashes)
        ):
            raise ValueError(f"not a list of image hashes of {STORE_FORMAT}")
        if len(hashes) != rows:
            raise ValueError(f"{len(hashes)} hashes for a split of {rows} rows")
        if record.get("images_sha256") != _list_sha256(hashes):
            raise ValueError("the list does not match the sha256 stored with it")
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as err:
        _LOG.warning("prediction store: %s: %s; the images are hashed again", path, err)
        return None
    return hashes


def first_missing(hashes: Sequence[str], found: Found) -> list[int]:
    """The first row of each distinct image that ``found`` has no entry for, in row order."""
    seen: set[str] = set()
    todo = []
    for position in np.flatnonzero(found.missing()).tolist():
        if hashes[position] not in seen:
            seen.add(hashes[position])
            todo.append(position)
    return todo


def forward_into(job: PredictJob, positions: Sequence[int], hashes: Sequence[str], shelf: Shelf) -> None:
    """Predict the rows at ``positions`` of ``job``'s split; keep each batch in ``shelf`` as it is done."""
    size = job.options.batch_size

    def keep(index: int, chunk: dict[str, Any]) -> None:
        shelf.add_chunk(chunk, [hashes[p] for p in positions[index * size : (index + 1) * size]])

    job.forward(job.units(positions), keep)


def predict_chunks(job: PredictJob, positions: Sequence[int]) -> list[bytes]:
    """The outputs of the rows at ``positions`` of ``job``'s split, one ``torch.save``'d chunk per batch
    (for :meth:`PredictionStore.add_chunks`; a Ray task returns them)."""
    chunks: dict[int, bytes] = {}
    job.forward(job.units(positions), lambda index, chunk: chunks.__setitem__(index, torch_bytes(chunk)))
    return [chunks[index] for index in sorted(chunks)]


@contextmanager
def writing(root: Path, parameter: str) -> Iterator[None]:
    """A write into the store at ``root`` that fails (disk full, a read-only or foreign folder) raised again as
    one ConfigError naming the file it was writing and ``parameter``, the choice of store: what the store holds
    already is kept, and the next run reuses it."""
    try:
        yield
    except OSError as err:
        what = " ".join((err.strerror or str(err)).split())
        room = "free space there or " if err.errno in (errno.ENOSPC, errno.EDQUOT) else ""
        raise ConfigError(
            f"{param(parameter)} {root}: cannot write {os.fsdecode(err.filename or root)}: {what} ({room}choose "
            f"another {param(parameter)}; the predictions it holds are kept and reused by the next run)"
        ) from err


def check_store_folder(path: str | Path | None, parameter: str = "prediction_store") -> None:
    """ConfigError naming ``parameter`` unless ``path`` is None, or a folder this process can write in, or absent
    and can be made (:func:`~imagenet_suite.files.write_problem`: no file on the way, a writable folder above).
    Commands run it before a model is loaded."""
    if path is None:
        return
    if Path(path).exists() and not Path(path).is_dir():
        raise ConfigError(f"{param(parameter)} {path}: is a file; expected a folder (made if absent)")
    problem = write_problem(path, folder=True)
    if problem is not None:
        raise ConfigError(f"{param(parameter)} {path}: {problem}")


__all__ = [
    "STORE_FORMAT",
    "Found",
    "PredictionStore",
    "Shelf",
    "check_store_folder",
    "first_missing",
    "forward_into",
    "image_sha256",
    "predict_chunks",
    "writing",
]
