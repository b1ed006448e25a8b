"""Resuming work done in batches: a ``.partial`` folder of one chunk file per finished batch beside a
manifest of what produced them (``predict``'s outputs, the adversarial attacks' correct flags).

A run writes :data:`MANIFEST` when it starts (:func:`partial_folder`) and each batch's chunk
(:func:`chunk_name`) as soon as the batch is done. A later run with the same manifest computes only the
batches without a sound chunk (:func:`missing_chunks`); a folder made by another run (another manifest,
or one that cannot be read) is refused, one line naming what differs, and nothing in it is deleted. A
chunk that fails its check is named in one warning line, renamed to ``<chunk>.rejected`` (kept, never
deleted: :func:`set_aside`) and its batch computed again. When the final result is written the folder
is removed, but for the rejected chunks (:func:`remove_partial`).

Example:
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp()) / "out.pt.partial"
    >>> partial_folder(folder, {"model": "a"}, "out")
    True
    >>> partial_folder(folder, {"model": "b"}, "out")
    Traceback (most recent call last):
    ...
    imagenet_suite.errors.ConfigError: ... holds partial outputs of a different run (differs in ['model']); ...
    >>> remove_partial(folder); folder.exists()
    False
"""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import torch

from ..errors import ConfigError, param
from ..files import atomic_write_bytes

_LOG = logging.getLogger(__name__)
MANIFEST = "manifest.json"
REJECTED = ".rejected"
CHUNK_GLOB = "unit_*.pt"


class Batch(Protocol):
    """A unit of resumable work: its ``index`` names its chunk."""

    @property
    def index(self) -> int: ...


B = TypeVar("B", bound=Batch)


def chunk_name(index: int) -> str:
    """The file holding the result of batch ``index`` in the ``.partial`` folder."""
    return f"unit_{index:07d}.pt"


def partial_folder(partial: Path, manifest: dict[str, Any], choose: str) -> bool:
    """Make ``partial`` hold this run's ``manifest`` (written when the folder has none); whether the folder
    was made just now. ConfigError (one line) when it holds another run's manifest or an unreadable one;
    ``choose`` is the parameter that names another place (``out``, ``run_dir``)."""
    recorded = partial / MANIFEST
    if recorded.is_file():
        try:
            found = json.loads(recorded.read_bytes().decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise ConfigError(
                f"{recorded}: not a readable manifest ({err}); the run that made {partial} is unknown: "
                f"delete the folder or choose another {param(choose)}"
            ) from err
        if not isinstance(found, dict):
            raise ConfigError(f"{recorded}: not a manifest of a resumable run (a JSON object); delete {partial}")
        if found != manifest:
            changed = sorted(k for k in {*manifest, *found} if found.get(k) != manifest.get(k))
            raise ConfigError(
                f"{partial} holds partial outputs of a different run (differs in {changed}); "
                f"delete it or choose another {param(choose)}"
            )
        return False
    fresh = not partial.exists()
    partial.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(recorded, json.dumps(manifest, indent=1, sort_keys=True).encode())
    return fresh


def missing_chunks(partial: Path, batches: Sequence[B], check: Callable[[Path, B], Any], what: str) -> list[B]:
    """The batches without a sound chunk in ``partial``. ``check(chunk, batch)`` raises ConfigError for a
    chunk that cannot be read or does not hold its batch: it is named in one warning line (``what:``
    first), renamed to ``<chunk>.rejected`` and its batch computed again."""
    todo = []
    for batch in batches:
        chunk = partial / chunk_name(batch.index)
        if not chunk.exists():
            todo.append(batch)
            continue
        try:
            check(chunk, batch)
        except ConfigError as err:
            rejected = set_aside(chunk)
            _LOG.warning("%s: %s; moved to %s, its batch is recomputed", what, err, rejected)
            todo.append(batch)
    return todo


def write_chunk(partial: Path, index: int, value: Any) -> None:
    """Write batch ``index``'s result (``torch.save``) to its chunk, atomically."""
    atomic_write_bytes(partial / chunk_name(index), torch_bytes(value), durable=False)


def torch_bytes(value: Any) -> bytes:
    """``value`` as ``torch.save`` writes it."""
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def set_aside(chunk: Path) -> Path:
    """Rename ``chunk`` to ``<chunk>.rejected`` (``.rejected.1``, ... if taken); return the new path."""
    target, number = chunk.with_name(chunk.name + REJECTED), 0
    while target.exists():
        number += 1
        target = chunk.with_name(f"{chunk.name}{REJECTED}.{number}")
    os.replace(chunk, target)
    return target


def remove_partial(partial: Path) -> None:
    """Remove the ``.partial`` folder once the result is written, except chunks set aside as rejected
    (kept for inspection: the warning named them)."""
    kept = False
    for entry in partial.iterdir():
        if REJECTED in entry.name:
            kept = True
        elif entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    if not kept:
        partial.rmdir()


def drop_if_empty(partial: Path, fresh: bool) -> None:
    """After a failed run: remove a folder made just now that holds no chunk (nothing worth resuming)."""
    if fresh and not any(partial.glob(CHUNK_GLOB)):
        shutil.rmtree(partial, ignore_errors=True)


__all__ = [
    "CHUNK_GLOB",
    "MANIFEST",
    "REJECTED",
    "chunk_name",
    "drop_if_empty",
    "missing_chunks",
    "partial_folder",
    "remove_partial",
    "set_aside",
    "torch_bytes",
    "write_chunk",
]
