"""Model outputs: a score tensor ``[N, C]``, the dataset ``id`` of every row, and what the scores are.

On disk an outputs file is a mapping with exactly two entries, written by any framework:

* ``ids``: N strings, the ``id`` column of the dataset rows the model scored (any order);
* one array named for its kind, shape ``[N, C]``, any float dtype:
  ``logits`` (raw scores; the scorer applies softmax once), ``probs`` (rows already sum to 1) or
  ``log_probs`` (``log_softmax`` output).

Two containers are read and written:

* ``.npz`` (``numpy.savez(path, ids=np.asarray(ids, dtype=str), logits=array)``), loaded with
  ``allow_pickle=False``, so ``ids`` must be a string array, not an object array;
* ``.pt`` (``torch.save({"ids": list_of_str, "logits": tensor}, path)``), loaded with
  ``weights_only=True``; bf16/fp16 tensors are kept as they are.

Reading checks what a file promises before believing it: an ``.npz`` member's ``.npy`` header
(shape, dtype) against the zip directory (the stored size, and what the compressed size can expand
to), a ``.pt`` file's tensor metadata through ``mmap``; then rows == ids and, where the caller knows
them (``score``: the dataset split's rows and classes), the rows and classes, all before any array is
decompressed or copied. A ``.pt`` file that pickles other Python objects is refused unread
(:func:`load_torch_file`, shared with features, detector statistics and weights).

``ModelOutputs`` checks the structure when it is made (2-D float tensor, one string id per row,
no duplicate ids, a known kind) and the values in :meth:`ModelOutputs.validate` (NaN/inf, probability
rows that do not sum to 1), chunk by chunk on the tensor's own device.
"""

from __future__ import annotations

import pickle
import re
import warnings
import zipfile
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..errors import ImagenetSuiteError, OutputsError
from .batching import chunk_elements, map_chunks, row_chunks

KINDS = ("logits", "probs", "log_probs")
FORMAT = "imagenet-suite-outputs/1"
SUFFIXES = (".pt", ".npz")

# |row sum - 1| (probs) or |logsumexp(row)| (log_probs) allowed per storage dtype.
PROB_SUM_TOLERANCE = {torch.float64: 1e-6, torch.float32: 1e-3, torch.float16: 1e-2, torch.bfloat16: 2e-2}


@dataclass(frozen=True, eq=False)
class ModelOutputs:
    """Scores ``values[i]`` of the dataset row whose ``id`` is ``ids[i]``.

    ``values``: float tensor ``[N, C]`` on any device (never copied here). ``kind``: one of
    ``logits``, ``probs``, ``log_probs``; it decides how probabilities are obtained, so softmax
    is applied exactly once.
    """

    values: torch.Tensor
    ids: tuple[str, ...]
    kind: str = "logits"

    def __post_init__(self) -> None:
        if not isinstance(self.values, torch.Tensor):
            raise OutputsError(f"outputs values must be a torch.Tensor, got {type(self.values).__name__}")
        if self.values.ndim != 2:
            raise OutputsError(f"outputs must be a [N, C] tensor, got shape {tuple(self.values.shape)}")
        if not self.values.is_floating_point():
            raise OutputsError(f"outputs must be a float tensor (any precision), got dtype {self.values.dtype}")
        if self.kind not in KINDS:
            raise OutputsError(f"outputs kind {self.kind!r} is not one of {KINDS}")
        object.__setattr__(self, "ids", _as_id_tuple(self.ids))
        if len(self.ids) != self.values.shape[0]:
            raise OutputsError(
                f"outputs have {self.values.shape[0]} rows but {len(self.ids)} ids: one id per row is required"
            )
        _refuse_duplicate_ids(self.ids)

    @property
    def num_rows(self) -> int:
        return int(self.values.shape[0])

    @property
    def num_classes(self) -> int:
        return int(self.values.shape[1])

    @property
    def device(self) -> torch.device:
        return self.values.device

    def to(self, device: str | torch.device) -> ModelOutputs:
        """The same outputs on another device."""
        return ModelOutputs(self.values.to(device), self.ids, self.kind)

    def validate(self, num_classes: int | None = None, prob_tolerance: float | None = None) -> None:
        """Refuse outputs a metric would silently get wrong.

        Checks ``C == num_classes`` (when given), no NaN, no +inf (and no -inf except in
        ``log_probs``, where it is log(0)), and for ``probs``/``log_probs`` that every row is a
        distribution: values in [0, 1] and ``|sum - 1| <= prob_tolerance`` (default by dtype,
        :data:`PROB_SUM_TOLERANCE`). Runs in row chunks on the tensor's device.
        """
        if num_classes is not None and self.num_classes != num_classes:
            raise OutputsError(
                f"outputs have C={self.num_classes} scores per row, the dataset's label space has {num_classes} classes"
            )
        tolerance = prob_tolerance if prob_tolerance is not None else PROB_SUM_TOLERANCE.get(self.values.dtype, 1e-3)

        def check(rows: slice) -> None:
            chunk = self.values[rows].float()
            self._check_finite(chunk, rows.start)
            if self.kind != "logits":
                self._check_distribution(chunk, rows.start, tolerance)

        map_chunks(check, list(row_chunks(self.num_rows, self.num_classes, chunk_elements(self.device))), self.device)

    def _check_finite(self, chunk: torch.Tensor, offset: int) -> None:
        if bool(torch.isfinite(chunk.sum(dim=1)).all()):  # one pass: any NaN/inf makes its row sum non-finite
            return
        bad = torch.isnan(chunk) | (chunk == float("inf"))
        if self.kind != "log_probs":
            bad |= chunk == float("-inf")
        bad_rows = bad.any(dim=1)
        if bool(bad_rows.any()):
            row = offset + int(bad_rows.nonzero()[0, 0])
            raise OutputsError(
                f"outputs row {row} (id {self.ids[row]!r}) contains NaN or inf "
                f"({int(bad_rows.sum())} bad rows in rows {offset}..{offset + len(chunk) - 1})"
            )

    def _check_distribution(self, chunk: torch.Tensor, offset: int, tolerance: float) -> None:
        probs = chunk.exp() if self.kind == "log_probs" else chunk
        out_of_range = ((probs < 0) | (probs > 1 + tolerance)).any(dim=1)
        sums = probs.double().sum(dim=1)
        off = out_of_range | ((sums - 1).abs() > tolerance)
        if bool(off.any()):
            local = int(off.nonzero()[0, 0])
            row = offset + local
            what = "exp(row)" if self.kind == "log_probs" else "row"
            raise OutputsError(
                f"outputs are declared {self.kind!r} but {what} {row} (id {self.ids[row]!r}) sums to "
                f"{float(sums[local]):.6g} with values in [{float(probs[local].min()):.3g}, {float(probs[local].max()):.3g}] "
                f"(allowed |sum - 1| <= {tolerance:g}); save raw scores as 'logits' so softmax is applied once"
            )

    def save(self, path: str | Path) -> Path:
        """Write ``ids`` and the values under their kind's name (``.pt`` or ``.npz``, by suffix)."""
        path = Path(path)
        suffix = _suffix(path)
        if suffix == ".pt":
            torch.save({"format": FORMAT, "ids": list(self.ids), self.kind: self.values.detach().cpu()}, path)
        else:
            values = self.values.detach().cpu()
            if values.dtype == torch.bfloat16:  # numpy has no bfloat16; float32 holds it exactly
                values = values.float()
            np.savez(path, ids=np.asarray(self.ids, dtype=str), **{self.kind: values.numpy()})
        return path

    @classmethod
    def load(
        cls,
        path: str | Path,
        device: str | torch.device = "cpu",
        *,
        num_rows: int | None = None,
        num_classes: int | None = None,
        against: str = "the dataset",
    ) -> ModelOutputs:
        """Read an outputs file written by :meth:`save` or by any framework in the documented layout.

        Shapes and dtypes are checked from the ``.npy`` headers (``.npz``) or the tensor metadata of a
        memory-mapped ``.pt`` before any data is decompressed or copied: rows == ids and, when given,
        ``num_rows`` / ``num_classes`` (those of ``against``, named in the message).
        """
        path = Path(path)
        if not path.is_file():
            raise OutputsError(f"outputs file {path} does not exist")
        expect = Expected(num_rows, num_classes, per_row="scores per row", column_word="classes", against=against)
        if _suffix(path) == ".pt":
            ids, kind, values = read_pt_entries(path, KINDS, OUTPUTS_CONTRACT, expect, check_format=True)
        else:
            ids, kind, values = read_npz_entries(path, KINDS, OUTPUTS_CONTRACT, expect)
        try:
            return cls(values.to(device), ids, kind)
        except OutputsError as err:
            raise OutputsError(f"{path}: {err}") from err


def _suffix(path: Path) -> str:
    if path.suffix not in SUFFIXES:
        raise OutputsError(f"outputs file {path} must end in one of {SUFFIXES} (got {path.suffix!r})")
    return path.suffix


# -- reading files of ids + one [N, C] array, checking what the headers promise first ----------------------

OUTPUTS_CONTRACT = f"a dict of 'ids' (N strings) and one of {KINDS} ([N, C] floats)"
MAX_DEFLATE_RATIO = 1032  # deflate expands at most ~1032:1 (a 258-byte match costs at least 2 bits)
MAX_ID_CHARS = 4096  # an id longer than this is no dataset's id: refused before its column is read


@dataclass(frozen=True)
class Expected:
    """What the caller knows of the array: its rows and columns (None: unknown), what a column is,
    and what the expectation comes from (named in the message)."""

    rows: int | None = None
    columns: int | None = None
    layout: str = "[N, C]"
    per_row: str = "values per row"
    column_word: str = "columns"
    against: str = "the dataset"


@dataclass(frozen=True)
class EntryHeader:
    """What a file says of one array before the array is read: how messages name it (``label``), its
    ``shape`` and ``dtype``, and whether that dtype is a float torch holds (``is_float``)."""

    label: str
    shape: tuple[int, ...]
    dtype: Any
    is_float: bool


def check_entry_shape(path: Path, entry: EntryHeader, ids_label: str, num_ids: int, expect: Expected) -> None:
    """OutputsError naming ``path`` unless the array ``entry`` is a 2-D float [N, C] with one row per id of
    ``ids_label`` (``num_ids`` of them) and the rows / columns ``expect`` gives."""
    shape, label = tuple(int(n) for n in entry.shape), entry.label
    if len(shape) != 2:
        raise OutputsError(f"{path}: {label} must be {expect.layout}, got shape {shape}")
    if not entry.is_float:
        raise OutputsError(f"{path}: {label} must hold floats, got dtype {entry.dtype}")
    if shape[0] != num_ids:
        raise OutputsError(f"{path}: {label} holds {shape[0]} rows but {ids_label} holds {num_ids} ids")
    if expect.rows is not None and shape[0] != expect.rows:
        raise OutputsError(
            f"{path}: {label} holds {shape[0]} rows, expected {expect.rows} (the rows of {expect.against})"
        )
    if expect.columns is not None and shape[1] != expect.columns:
        raise OutputsError(
            f"{path}: {label} holds {shape[1]} {expect.per_row}, expected {expect.columns} "
            f"(the {expect.column_word} of {expect.against})"
        )


def read_pt_entries(
    path: Path, names: tuple[str, ...], contract: str, expect: Expected, check_format: bool = False
) -> tuple[list[str], str, torch.Tensor]:
    """``(ids, name, values)`` of a ``.pt`` file holding ``ids`` and exactly one of ``names``.

    The file is memory-mapped: shapes and dtypes are checked from the tensor metadata, and only then is
    the array copied out of the file (into memory of its own)."""
    data = load_torch_file(path, OutputsError, contract, mmap=True)
    if not isinstance(data, dict):
        raise OutputsError(f"{path}: expected {contract}, got {type(data).__name__}")
    if check_format and "format" in data and data["format"] != FORMAT:
        raise OutputsError(f"{path}: format {data['format']!r}; this version of imagenet-suite reads {FORMAT}")
    name = _the_values_name(path, data, names)
    values = data[name]
    if not isinstance(values, torch.Tensor):
        raise OutputsError(f"{path}: {name!r} must be a tensor/array, got {type(values).__name__}")
    if "ids" not in data:
        raise OutputsError(f"{path}: no 'ids' entry; expected {contract}")
    ids = data["ids"]
    if not isinstance(ids, (list, tuple)):
        raise OutputsError(f"{path}: 'ids' must be a list of strings, got {type(ids).__name__}")
    try:
        _as_id_tuple(ids)
    except OutputsError as err:
        raise OutputsError(f"{path}: {err}") from err
    entry = EntryHeader(repr(name), tuple(values.shape), values.dtype, values.is_floating_point())
    check_entry_shape(path, entry, "'ids'", len(ids), expect)
    return list(ids), name, values.clone()  # a copy: the file may change once it is read


def read_npz_entries(
    path: Path, names: tuple[str, ...], contract: str, expect: Expected
) -> tuple[list[str], str, torch.Tensor]:
    """``(ids, name, values)`` of an ``.npz`` holding ``ids`` and exactly one of ``names`` (other members
    are not read). Every member's ``.npy`` header is read first and checked against the zip directory
    (its stored size, and what its compressed size can expand to); the arrays' shapes and dtypes are
    checked against each other and ``expect``; only then are the two arrays decompressed."""
    if not zipfile.is_zipfile(path):
        raise OutputsError(f"{path}: not an .npz archive (write it with numpy.savez)")
    try:
        with zipfile.ZipFile(path) as archive:
            headers = _npy_headers(path, archive)
            name = _the_values_name(path, headers, names)
            if "ids" not in headers:
                raise OutputsError(f"{path}: no 'ids' entry; expected {contract}")
            ids_info, ids_shape, ids_dtype = headers["ids"]
            _check_ids_header(path, ids_shape, ids_dtype)
            info, shape, dtype = headers[name]
            label = f"member {name + '.npy'!r}"
            if dtype.hasobject:
                raise OutputsError(f"{path}: {label} holds Python objects (dtype object); expected floats")
            is_float = dtype.kind == "f" and dtype.itemsize in (2, 4, 8)  # float16/32/64: what torch holds
            check_entry_shape(path, EntryHeader(label, shape, dtype, is_float), "'ids.npy'", ids_shape[0], expect)
            ids = _npz_ids(path, _read_member(path, archive, ids_info))
            values = _read_member(path, archive, info)
    except (OSError, EOFError, zipfile.BadZipFile, zlib.error, MemoryError, RuntimeError, NotImplementedError) as err:
        raise OutputsError(f"{path}: not a readable .npz file ({type(err).__name__}: {err})") from err
    if not values.dtype.isnative:  # torch holds native byte order only
        values = values.astype(values.dtype.newbyteorder("="))
    return ids, name, torch.from_numpy(np.ascontiguousarray(values))


def _npy_headers(path: Path, archive: zipfile.ZipFile) -> dict[str, tuple[zipfile.ZipInfo, tuple, np.dtype]]:
    """``{name: (member, shape, dtype)}`` for every ``.npy`` member, from its header alone.

    OutputsError if a member's directory entry claims more bytes than its compressed bytes can hold,
    if its header declares more or fewer bytes than the member holds (a corrupt or crafted header would
    otherwise make numpy allocate whatever it claims), or if a name appears twice."""
    headers = {}
    for info in archive.infolist():
        if not info.filename.endswith(".npy"):
            continue
        name = info.filename[: -len(".npy")]
        if name in headers:
            raise OutputsError(f"{path}: member {info.filename!r} appears twice; the file is corrupt")
        _check_member_sizes(path, info)
        with archive.open(info) as member:
            try:
                version = np.lib.format.read_magic(member)
                read_header = (
                    np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
                )
                shape, _, dtype = read_header(member)
            except (ValueError, OSError, EOFError) as err:
                raise OutputsError(f"{path}: member {info.filename!r} has no valid .npy header ({err})") from err
            offset = member.tell()
        declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
        stored = info.file_size - offset
        if not dtype.hasobject and declared != stored:
            raise OutputsError(
                f"{path}: member {info.filename!r} declares shape {tuple(shape)} of {dtype} "
                f"({declared:,} bytes) but holds {stored:,} bytes: the file is corrupt"
            )
        headers[name] = (info, tuple(shape), dtype)
    return headers


def _check_member_sizes(path: Path, info: zipfile.ZipInfo) -> None:
    """OutputsError if the zip directory's uncompressed size cannot come from the member's compressed bytes."""
    if info.compress_type == zipfile.ZIP_STORED:
        possible = info.file_size == info.compress_size
    elif info.compress_type == zipfile.ZIP_DEFLATED:
        possible = info.file_size <= MAX_DEFLATE_RATIO * info.compress_size + 1024
    else:
        return
    if not possible:
        raise OutputsError(
            f"{path}: member {info.filename!r} claims {info.file_size:,} bytes from {info.compress_size:,} "
            f"compressed bytes, more than its compression can expand to: the file is corrupt or forged"
        )


def _check_ids_header(path: Path, shape: tuple, dtype: np.dtype) -> None:
    if dtype.hasobject:
        raise OutputsError(
            f"{path}: 'ids.npy' holds Python objects (dtype object), which are not read (no pickle); "
            "save the ids as a string array: np.asarray(ids, dtype=str)"
        )
    if len(shape) != 1:
        raise OutputsError(f"{path}: 'ids' must be 1-D, got shape {shape} in the header of 'ids.npy'")
    if dtype.kind not in "US":
        raise OutputsError(f"{path}: 'ids' must be strings, got dtype {dtype}; save np.asarray(ids, dtype=str)")
    chars = dtype.itemsize // (4 if dtype.kind == "U" else 1)
    if chars > MAX_ID_CHARS:
        raise OutputsError(
            f"{path}: 'ids.npy' declares ids of up to {chars:,} characters; ids are at most {MAX_ID_CHARS:,}"
        )


def _read_member(path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> np.ndarray:
    with archive.open(info) as member:
        try:
            return np.lib.format.read_array(member, allow_pickle=False)
        except ValueError as err:
            raise OutputsError(f"{path}: member {info.filename!r} cannot be read ({err})") from err


def _the_values_name(path: Path, entries, names: tuple[str, ...]) -> str:
    present = [name for name in names if name in entries]
    if len(present) == 1:
        return present[0]
    found = sorted(str(k) for k in entries if k != "format")
    if len(names) == 1:
        raise OutputsError(f"{path}: no {names[0]!r} entry beside 'ids', found entries {found}")
    raise OutputsError(f"{path}: needs exactly one of {names} beside 'ids', found entries {found}")


def _npz_ids(path: Path, ids: np.ndarray) -> list[str]:
    if ids.dtype.kind == "U":
        return ids.tolist()
    decoded = []
    for row, value in enumerate(ids.tolist()):
        try:
            decoded.append(value.decode("utf-8"))
        except UnicodeDecodeError as err:
            raise OutputsError(
                f"{path}: 'ids' row {row} ({value!r}) is not UTF-8 text; save the ids as np.asarray(ids, dtype=str)"
            ) from err
    return decoded


# -- torch files: tensors only, refused in one line otherwise -------------------------------------------

_GLOBAL = re.compile(r"GLOBAL (\S+)")
_UNREADABLE_TAIL = re.compile(r"\s*(This is an internal miniz error|In PyTorch 2\.6|Check the documentation).*$")


def load_torch_file(
    path: Path,
    error: type[ImagenetSuiteError],
    expected: str,
    *,
    mmap: bool = False,
    name: str | None = None,
) -> Any:
    """``torch.load(path, weights_only=True)`` on the CPU, every failure one line (``error``) naming the file
    (``name``, default the path) and what was ``expected``.

    A pickle of Python objects other than tensors is refused unread — torch's weights-only unpickler
    never calls them — and named as such, with the global it names (never torch's advice to load it
    with ``weights_only=False``). ``mmap``: map the file instead of reading it (files in torch's zip
    format; older files are read whole), so that tensor shapes can be checked before their data is read.
    A raw pickle (not torch's format) is refused like any unreadable file, without torch's warning about
    its pickle protocol: the error line is all that is printed.
    """
    name = name or str(path)
    if mmap and not zipfile.is_zipfile(path):
        mmap = False  # torch's legacy (pre-1.6) format cannot be mapped
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"Detected pickle protocol", category=UserWarning)
            return torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
    except pickle.UnpicklingError as err:
        text = str(err)
        found = _GLOBAL.search(text)
        if found or "unrecognized function" in text or "Can only create new object" in text:
            named = f" ({found.group(1).rstrip('.')})" if found else ""
            raise error(
                f"{name}: holds pickled Python objects other than tensors{named}; refused unread (nothing in it "
                f"ran); expected {expected}"
            ) from err
        raise error(
            f"{name}: not a readable torch file (corrupt pickle: {_torch_reason(text)}); expected {expected}"
        ) from err
    except Exception as err:  # torch raises RuntimeError, KeyError, EOFError, UnicodeDecodeError, ... on damage
        raise error(
            f"{name}: not a readable torch file ({type(err).__name__}: {_torch_reason(str(err))}); expected {expected}"
        ) from err


def _torch_reason(text: str) -> str:
    """The part of torch's message that says what is wrong, on one line."""
    if "WeightsUnpickler error:" in text:
        text = text.rsplit("WeightsUnpickler error:", 1)[1]
    text = _UNREADABLE_TAIL.sub("", " ".join(text.split()))
    return text[:200] or "no detail"


def _as_id_tuple(ids: Iterable[str] | Sequence[str]) -> tuple[str, ...]:
    if isinstance(ids, (str, bytes)):
        raise OutputsError("outputs ids must be a sequence of strings, got a single string")
    ids = tuple(ids)
    for index, value in enumerate(ids):
        if not isinstance(value, str):
            raise OutputsError(f"outputs id at row {index} is {value!r} ({type(value).__name__}); ids must be strings")
    return ids


def _refuse_duplicate_ids(ids: tuple[str, ...]) -> None:
    if len(set(ids)) == len(ids):
        return
    seen: dict[str, int] = {}
    for row, value in enumerate(ids):
        if value in seen:
            raise OutputsError(f"outputs id {value!r} appears twice (rows {seen[value]} and {row}); ids must be unique")
        seen[value] = row
