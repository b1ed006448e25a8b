"""Python work on more than one CPU, in processes forked from this one: :func:`map_forked` (a function over many
items, results in order), :class:`Forks` (calls, each in its own process, while this one goes on) and
:func:`beside` (one such call for the length of a block).

For work that holds the GIL (parsing JSON, checking it, drawing figures), threads do not help. A forked process
starts with this process's modules imported and its objects in place (copy-on-write), so it costs milliseconds,
where a fresh interpreter (spawn, forkserver) would spend seconds importing torch and pandas again; its
arguments and results travel pickled. Fork is used only on Linux, and only when this process may use two or more
CPUs (:func:`~imagenet_suite.cpus.available_cpus`); otherwise, or for fewer items than ``least``, the work runs
in this process, with the same results and the same errors. A worker's exception is raised here (pickled: its
message and type, not its traceback): by :func:`map_forked`, the first in the order of the items; by a
:class:`Forks` call's ``Future.result()``.

Forking a process that runs other threads is unsafe when a lock one of them holds is needed in the child. The
callers here fork from a command's main thread before starting any thread of their own, and the children run
only the standard library, NumPy, pandas and matplotlib on data they were given.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import sys
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
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
    sent by name (a module-level function, or a ``functools.partial`` of one), the items and results pickled.

    Example:
        >>> from operator import neg
        >>> map_forked(neg, range(5), processes=2)
        [0, -1, -2, -3, -4]
    """
    items = list(items)
    processes = can_fork(min(available_cpus() if processes is None else processes, len(items)))
    if not processes or len(items) < least:
        return [function(item) for item in items]
    with multiprocessing.get_context("fork").Pool(processes) as pool:
        return list(pool.imap(function, items))


class Forks:
    """Calls, each in its own process forked from this one (:meth:`submit`: a Future), at most ``limit`` (None: the
    CPUs this process may use) running at once: one more waits for the oldest to end. The function and its
    arguments are not pickled (the process is a fork: they are there); the result or exception comes back pickled.
    A process that dies without either (killed) is a ChildProcessError. Used as a context manager, every call has
    ended when the block does, also when it raises. Where :func:`can_fork` says 0, each call runs at once, in this
    process.

    Example:
        >>> from operator import add
        >>> with Forks(limit=2) as forks:
        ...     sums = [forks.submit(add, i, 10) for i in range(3)]
        >>> [found.result() for found in sums]
        [10, 11, 12]
    """

    def __init__(self, limit: int | None = None):
        self.limit = max(1, available_cpus() if limit is None else limit)
        self.forking = bool(can_fork())
        self._running: list[tuple[Any, Any, _Forked, str]] = []

    def submit(self, function: Callable[..., R], *args: Any) -> Future:
        done = _Forked(self)
        if not self.forking:
            try:
                done.set_result(function(*args))
            except Exception as err:  # raised by result(), as a process's error is
                done.set_exception(err)
            return done
        while len(self._running) >= self.limit:
            self._finish(self._running[0][2])
        context = multiprocessing.get_context("fork")
        receiving, sending = context.Pipe(duplex=False)
        process = context.Process(target=_send_outcome, args=(sending, function, args), daemon=True)
        process.start()
        sending.close()
        self._running.append((process, receiving, done, getattr(function, "__qualname__", repr(function))))
        return done

    def _finish(self, until: Future) -> None:
        """Wait for the calls started up to ``until`` (in order), each result set on its Future."""
        while self._running and not until.done():
            process, receiving, done, name = self._running.pop(0)
            try:
                succeeded, outcome = receiving.recv()
            except EOFError:
                succeeded, outcome = False, ChildProcessError(f"{name}: its process ended without a result")
            process.join()
            receiving.close()
            if succeeded:
                done.set_result(outcome)
            else:
                done.set_exception(outcome)

    def __enter__(self) -> Forks:
        return self

    def __exit__(self, *exc: object) -> None:
        while self._running:
            self._finish(self._running[-1][2])


class _Forked(Future):
    """A :class:`Forks` call's Future: ``result()`` and ``exception()`` wait for its process."""

    def __init__(self, owner: Forks):
        super().__init__()
        self._owner = owner

    def result(self, timeout: float | None = None) -> Any:
        self._owner._finish(self)
        return super().result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._owner._finish(self)
        return super().exception(timeout)


@contextlib.contextmanager
def beside(function: Callable[..., R], *args: Any) -> Iterator[Future]:
    """``function(*args)`` in a forked process while the block runs (a :class:`Forks` call: in this process, first,
    where :func:`can_fork` says 0); yields its Future, the process waited for when the block ends.

    Example:
        >>> from operator import add
        >>> with beside(add, 2, 3) as sum_:
        ...     product = 2 * 3
        >>> sum_.result(), product
        (5, 6)
    """
    with Forks(limit=1) as forks:
        yield forks.submit(function, *args)


def _send_outcome(sending, function: Callable[..., Any], args: tuple) -> None:
    try:
        outcome = (True, function(*args))
    except Exception as err:
        outcome = (False, err)
    sending.send(outcome)


__all__ = ["Forks", "beside", "can_fork", "map_forked"]
