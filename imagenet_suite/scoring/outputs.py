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

``ModelOutputs`` checks the structure when it is made (2-D float tensor, one string id per row,
no duplicate ids, a known kind) and the values in :meth:`ModelOutputs.validate` (NaN/inf, probability
rows that do not sum to 1), chunk by chunk on the tensor's own device.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..errors import OutputsError
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
    def load(cls, path: str | Path, device: str | torch.device = "cpu") -> ModelOutputs:
        """Read an outputs file written by :meth:`save` or by any framework in the documented layout."""
        path = Path(path)
        if not path.is_file():
            raise OutputsError(f"outputs file {path} does not exist")
        entries = _read_pt(path) if _suffix(path) == ".pt" else _read_npz(path)
        kind, values = _the_values_entry(path, entries)
        if "ids" not in entries:
            raise OutputsError(f"{path}: no 'ids' entry; an outputs file holds 'ids' (N strings) and one of {KINDS}")
        try:
            return cls(values.to(device), entries["ids"], kind)
        except OutputsError as err:
            raise OutputsError(f"{path}: {err}") from None


def _suffix(path: Path) -> str:
    if path.suffix not in SUFFIXES:
        raise OutputsError(f"outputs file {path} must end in one of {SUFFIXES} (got {path.suffix!r})")
    return path.suffix


def _read_pt(path: Path) -> dict:
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises many types for bad pickles
        raise OutputsError(f"{path}: not a readable torch file ({type(err).__name__}: {err})") from None
    if not isinstance(data, dict):
        raise OutputsError(f"{path}: expected a dict with 'ids' and one of {KINDS}, got {type(data).__name__}")
    return dict(data)


def _read_npz(path: Path) -> dict:
    if not zipfile.is_zipfile(path):
        raise OutputsError(f"{path}: not an .npz archive (write it with numpy.savez)")
    try:
        _check_npy_headers(path)
        with np.load(path, allow_pickle=False) as archive:
            entries = {name: archive[name] for name in archive.files}
    except ValueError as err:
        raise OutputsError(
            f"{path}: cannot be read without pickle ({err}); save ids as a string array: np.asarray(ids, dtype=str)"
        ) from None
    except (OSError, EOFError, zipfile.BadZipFile, MemoryError) as err:
        raise OutputsError(f"{path}: not a readable .npz file ({type(err).__name__}: {err})") from None
    for kind in KINDS:
        if kind in entries:
            entries[kind] = torch.from_numpy(np.ascontiguousarray(entries[kind]))
    if "ids" in entries:
        entries["ids"] = _npz_ids(path, entries["ids"])
    return entries


def _check_npy_headers(path: Path) -> None:
    """OutputsError if an array's header in the .npz declares more or fewer bytes than the member holds
    (a corrupt or crafted header would otherwise make numpy allocate whatever it claims)."""
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            if not info.filename.endswith(".npy"):
                continue
            with archive.open(info) as member:
                try:
                    version = np.lib.format.read_magic(member)
                    read_header = (
                        np.lib.format.read_array_header_1_0
                        if version == (1, 0)
                        else np.lib.format.read_array_header_2_0
                    )
                    shape, _, dtype = read_header(member)
                except (ValueError, OSError, EOFError) as err:
                    raise OutputsError(f"{path}: member {info.filename!r} has no valid .npy header ({err})") from None
                if dtype.hasobject:
                    continue  # refused by allow_pickle=False, with its own message
                declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
                stored = info.file_size - member.tell()
            if declared != stored:
                raise OutputsError(
                    f"{path}: member {info.filename!r} declares shape {tuple(shape)} of {dtype} "
                    f"({declared:,} bytes) but holds {stored:,} bytes: the file is corrupt"
                )


def _npz_ids(path: Path, ids: np.ndarray) -> list[str]:
    if ids.ndim != 1:
        raise OutputsError(f"{path}: 'ids' must be 1-D, got shape {ids.shape}")
    if ids.dtype.kind == "U":
        return ids.tolist()
    if ids.dtype.kind == "S":
        decoded = []
        for row, value in enumerate(ids.tolist()):
            try:
                decoded.append(value.decode("utf-8"))
            except UnicodeDecodeError:
                raise OutputsError(
                    f"{path}: 'ids' row {row} ({value!r}) is not UTF-8 text; save the ids as np.asarray(ids, dtype=str)"
                ) from None
        return decoded
    raise OutputsError(f"{path}: 'ids' must be strings, got dtype {ids.dtype}; save np.asarray(ids, dtype=str)")


def _the_values_entry(path: Path, entries: dict) -> tuple[str, torch.Tensor]:
    present = [kind for kind in KINDS if kind in entries]
    if len(present) != 1:
        found = sorted(k for k in entries if k != "format")
        raise OutputsError(f"{path}: needs exactly one of {KINDS} beside 'ids', found entries {found}")
    values = entries[present[0]]
    if not isinstance(values, torch.Tensor):
        raise OutputsError(f"{path}: {present[0]!r} must be a tensor/array, got {type(values).__name__}")
    return present[0], values


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
