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

Every count here is bounded by the CPUs the process may actually use
(:func:`imagenet_suite.cpus.available_cpus`: its affinity mask and cgroup quota), never the machine's
``os.cpu_count()``: :func:`compute_threads` (torch's threads while a model runs), :func:`cpu_workers`
(chunk-parallel scoring) and :func:`loader_workers` (DataLoader worker processes, each of which runs
torch single-threaded: :func:`single_threaded_worker`, their ``worker_init_fn``). The OpenMP environment
that keeps idle threads from spinning on a shared machine is set before torch loads
(:func:`imagenet_suite.cpus.quiet_openmp`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import torch

from ..cpus import available_cpus

MAX_LOADER_WORKERS = 4
"""DataLoader workers by default: at most this many, and no more than the CPUs available."""

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
    intra-op thread count, bounded by the CPUs available (1 inside a worker thread, whose torch is
    single-threaded, so workers never start nested pools).
    """
    recorded = _chunk_workers.get()
    if recorded is not None:
        return recorded
    return compute_threads()


def compute_threads() -> int:
    """torch's intra-op threads for running a model here: its current count bounded by the CPUs available
    (:func:`~imagenet_suite.cpus.available_cpus`), at least 1. ``predict`` runs its batches under
    ``torch_threads(compute_threads())``."""
    return max(1, min(torch.get_num_threads(), available_cpus()))


def loader_workers(requested: int | None = None) -> int:
    """DataLoader worker processes: ``requested`` when given, else ``min(4, CPUs available)``.

    Example:
        >>> loader_workers(0), loader_workers(3)
        (0, 3)
    """
    return requested if requested is not None else min(MAX_LOADER_WORKERS, available_cpus())


def single_threaded_worker(worker_id: int) -> None:
    """A DataLoader ``worker_init_fn``: torch single-threaded in the worker process (its images are decoded
    and transformed one at a time; the model's threads are in the main process)."""
    torch.set_num_threads(1)


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


__all__ = [
    "MAX_LOADER_WORKERS",
    "chunk_parallel_cpu",
    "compute_threads",
    "cpu_workers",
    "loader_workers",
    "single_threaded_torch",
    "single_threaded_worker",
    "torch_threads",
]
