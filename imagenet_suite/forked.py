"""Python work on more than one CPU, in processes forked from this one: :func:`map_forked` (a function over many
items, results in order; :func:`mapping_forked`, the same while this process goes on), :class:`Forks` (calls in a
few worker processes while this one goes on) and :func:`beside` (one call in another process for the length of a
block).

For work that holds the GIL (parsing JSON, checking it, drawing figures), threads do not help. A forked process
starts with this process's modules imported and its objects in place (copy-on-write), so it costs milliseconds,
where a fresh interpreter (spawn, forkserver) would spend seconds importing torch and pandas again. The workers
of :func:`map_forked` and :class:`Forks` get the function by name and its arguments pickled (what a
:class:`Forks`' ``initializer`` is given, they have: a fork); :func:`beside`'s process has them already. Results and exceptions come back pickled: an exception keeps its type and
message, not its traceback. :func:`map_forked` raises the first in the order of the items; a call's
``Future.result()`` raises its own.

Fork is used only on Linux, and only when this process may use two or more CPUs
(:func:`~imagenet_suite.cpus.available_cpus`). Otherwise, or for too little work (``least`` items, ``forking``),
the work runs in this process, with the same results and the same errors.

Forking a process that runs other threads is unsafe when a lock one of them holds is needed in the child. These
fork from the main thread, and start their processes before any thread of their own (:class:`Forks`' executor
forks its workers, then starts the thread that manages them, and joins it when shut down; :func:`beside` starts
none). The children run the standard library, NumPy, pandas, PyArrow and matplotlib on data they were given.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import sys
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, TypeVar

from .cpus import available_cpus

T = TypeVar("T")
R = TypeVar("R")


def can_fork(processes: int | None = None) -> int:
    """How many processes to fork for work worth ``processes`` (None: :func:`available_cpus`): 0 where processes
    are not forked (not Linux, fewer than two CPUs), else that many.

    Example:
        >>> can_fork(1)
        0
    """
    processes = available_cpus() if processes is None else processes
    return processes if processes >= 2 and sys.platform.startswith("linux") else 0


def map_forked(function: Callable[[T], R], items: Iterable[T], processes: int | None = None, least: int = 2) -> list[R]:
    """``[function(item) for item in items]``, in ``processes`` forked processes (None: the CPUs this process may
    use; at most one per item) when :func:`can_fork` and there are at least ``least`` items. ``function`` is
    sent by name (a module-level function, or a ``functools.partial`` of one), the items and results pickled. On
    the first error (in the items' order) the calls not started are cancelled; a process that dies mid-call is
    ``BrokenProcessPool``, not a hang.

    Example:
        >>> from operator import neg
        >>> map_forked(neg, range(5), processes=2)
        [0, -1, -2, -3, -4]
    """
    with mapping_forked(function, items, processes, least) as results:
        return results()


@contextlib.contextmanager
def mapping_forked(
    function: Callable[[T], R], items: Iterable[T], processes: int | None = None, least: int = 2
) -> Iterator[Callable[[], list[R]]]:
    """:func:`map_forked`, started in its processes as the block starts, while the block runs: the block calls
    what it is given for the results (and the first error). Where the calls run in this process, they run then.

    Example:
        >>> from operator import neg
        >>> with mapping_forked(neg, range(3), processes=2) as results:
        ...     meanwhile = sum(range(3))
        >>> results(), meanwhile
        ([0, -1, -2], 3)
    """
    items = list(items)
    processes = can_fork(min(available_cpus() if processes is None else processes, len(items)))
    if not processes or len(items) < least:
        yield lambda: [function(item) for item in items]
        return
    with Forks(processes) as forks:
        started = [forks.submit(function, item) for item in items]
        yield lambda: [found.result() for found in started]


class Forks:
    """Calls in up to ``limit`` (None: the CPUs this process may use) processes forked from this one when the first
    call is submitted (a ``ProcessPoolExecutor`` with the fork context): :meth:`submit` gives a Future while this
    process goes on. The function is sent by name (a module-level function), its arguments and its result or
    exception pickled; a process that dies mid-call breaks the pool (``BrokenProcessPool``). Used as a context
    manager, every call has ended when the block does; when the block raises, the calls not started are
    cancelled. Where :func:`can_fork` says 0, or not ``forking`` (too little work to be worth processes), each
    call runs at once, in this process.

    ``initializer(*initargs)`` runs in each worker process as it starts, with ``initargs`` not pickled (the
    workers are forks: they have them): a way to give every call large state that stays in place, such as a
    module-level variable the called function reads. It does not run where the calls run in this process.

    Example:
        >>> from operator import add
        >>> with Forks(limit=2) as forks:
        ...     sums = [forks.submit(add, i, 10) for i in range(3)]
        >>> [found.result() for found in sums]
        [10, 11, 12]
    """

    def __init__(
        self,
        limit: int | None = None,
        forking: bool = True,
        initializer: Callable[..., object] | None = None,
        initargs: tuple = (),
    ):
        self.limit = max(1, available_cpus() if limit is None else limit)
        self.forking = forking and bool(can_fork())
        self._started = (initializer, initargs)
        self._pool: ProcessPoolExecutor | None = None

    def submit(self, function: Callable[..., R], *args: Any) -> Future:
        if not self.forking:
            done: Future = Future()
            _settle(done, function, args)
            return done
        if self._pool is None:
            initializer, initargs = self._started
            self._pool = ProcessPoolExecutor(
                self.limit, multiprocessing.get_context("fork"), initializer=initializer, initargs=initargs
            )
        return self._pool.submit(function, *args)

    def __enter__(self) -> Forks:
        return self

    def __exit__(self, kind: type | None, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=kind is not None)


@contextlib.contextmanager
def beside(function: Callable[..., R], *args: Any, forking: bool = True) -> Iterator[Future]:
    """``function(*args)`` in a process forked from this one while the block runs (in this process, first, where
    :func:`can_fork` says 0, or not ``forking``: too little work to be worth a process). Yields its Future, whose
    result is there once the block ends: the process is waited for, also when the block raises. The function and
    its arguments are not pickled (the process is a fork: they are there), and no thread is started here (a process
    forked later in the block inherits none); the result or exception comes back pickled through a pipe. A process
    that ends without one (killed) is a ChildProcessError.

    Example:
        >>> from operator import add
        >>> with beside(add, 2, 3) as sum_:
        ...     product = 2 * 3
        >>> sum_.result(), product
        (5, 6)
    """
    done: Future = Future()
    if not (forking and can_fork()):
        _settle(done, function, args)
        yield done
        return
    context = multiprocessing.get_context("fork")
    receiving, sending = context.Pipe(duplex=False)
    process = context.Process(target=_send_outcome, args=(sending, function, args), daemon=True)
    process.start()
    sending.close()
    try:
        yield done
    finally:
        try:
            succeeded, outcome = receiving.recv()
        except EOFError:
            name = getattr(function, "__qualname__", repr(function))
            succeeded, outcome = False, ChildProcessError(f"{name}: its process ended without a result")
        process.join()
        receiving.close()
        (done.set_result if succeeded else done.set_exception)(outcome)


def _settle(done: Future, function: Callable[..., Any], args: tuple) -> None:
    try:
        done.set_result(function(*args))
    except Exception as err:  # raised by result(), as a process's error is
        done.set_exception(err)


def _send_outcome(sending, function: Callable[..., Any], args: tuple) -> None:
    done: Future = Future()
    _settle(done, function, args)
    sending.send((True, done.result()) if done.exception() is None else (False, done.exception()))


__all__ = ["Forks", "beside", "can_fork", "map_forked", "mapping_forked"]
