"""Scoped CPU thread settings: torch's intra-op thread count changed only for the duration of a call.

torch keeps the count per thread (OpenMP) and a default that threads started later pick up;
``torch.set_num_threads`` sets both, for the calling thread. The scorer changes them only through
:func:`torch_threads`, a context manager that restores what it found when the body ends, also when
it raises: a scoring call leaves ``torch.get_num_threads()`` as it found it, and threads started
after it get the count they would have got without it.

:func:`chunk_parallel_cpu` is the evaluation-wide setting built on it: torch single-threaded, and
whole chunks of rows or classes spread over worker threads instead (:func:`cpu_workers` says how
many; :func:`imagenet_suite.scoring.batching.map_chunks` uses them). Chunk-level parallelism needs no
OpenMP team per operation, which on small or shared machines costs more than the operations.

Overlapping scopes (nested on one thread, or concurrent on several): a scope that closes while
others are open restores its own thread's count; the last one to close restores the count found
by the first, so neither the caller's thread nor threads started later keep a scoped value.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import torch

_lock = threading.Lock()
_open_scopes = 0  # torch_threads scopes open in this process, on any thread
_count_before_scopes = 1  # the calling thread's count when the first open scope was entered

_chunk_workers: ContextVar[int | None] = ContextVar("imagenet_suite_chunk_workers", default=None)


@contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """Run the body with torch's intra-op thread count set to ``count``; restore what was found afterwards.

    Overlapping scopes follow the module's contract: the last to close restores the count that was
    in force before the first opened.
    """
    if count < 1:
        raise ValueError(f"torch_threads needs a positive thread count, got {count}")
    global _open_scopes, _count_before_scopes
    with _lock:
        found = torch.get_num_threads()
        if _open_scopes == 0:
            _count_before_scopes = found
        _open_scopes += 1
        _set(count)
    try:
        yield
    finally:
        with _lock:
            _open_scopes -= 1
            if _open_scopes:
                _set(found)
            else:
                torch.set_num_threads(_count_before_scopes)  # always: also resets the default of new threads


def _set(count: int) -> None:
    if torch.get_num_threads() != count:
        torch.set_num_threads(count)


def single_threaded_torch():
    """``torch_threads(1)``: torch ops on the calling thread only, for the duration."""
    return torch_threads(1)


def cpu_workers() -> int:
    """Worker threads for chunk-parallel CPU work, at least 1.

    Inside :func:`chunk_parallel_cpu`: the count recorded when it was entered. Elsewhere: torch's
    intra-op thread count, bounded by the CPU count (1 inside a worker thread, whose torch is
    single-threaded, so workers never start nested pools).
    """
    recorded = _chunk_workers.get()
    if recorded is not None:
        return recorded
    return max(1, min(torch.get_num_threads(), os.cpu_count() or 1))


@contextmanager
def chunk_parallel_cpu() -> Iterator[None]:
    """For a whole evaluation: torch single-threaded, parallelism only across chunks.

    Records :func:`cpu_workers` (the threads torch was configured with) for the body, then runs it
    under ``torch_threads(1)``. Both settings end with the body. Nested use is a no-op.
    """
    if _chunk_workers.get() is not None:
        yield
        return
    marker = _chunk_workers.set(cpu_workers())
    try:
        with single_threaded_torch():
            yield
    finally:
        _chunk_workers.reset(marker)


__all__ = ["chunk_parallel_cpu", "cpu_workers", "single_threaded_torch", "torch_threads"]
