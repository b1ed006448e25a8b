"""Where the build runner's shards are computed: local worker processes, or tasks on a Ray cluster.

The runner hands an executor one pure shard function, ``write(shard, config_dir, on_row)``, which
writes ``<config_dir>/<shard file>.incomplete`` and returns its :class:`~.writer.ShardStats`, and
gets back ``(shard, stats)`` for every shard once its temporary file is in the config folder on the
driver's disk. Everything after that — fsync, sha256, the resume journal, the atomic rename,
``build_info.json`` — is the runner's one publication path, whichever executor wrote the bytes, so
the output does not depend on the executor (nor on the number of workers).

* :class:`LocalExecutor` (``executor="local"``, the default): the shard function in this process
  (``num_proc=1``) or in ``num_proc`` fresh processes (forkserver).
* :class:`RayExecutor` (``executor="ray"``): each shard is a Ray task running the same function in a
  scratch folder on the worker; the Parquet bytes come back through the object store and are written
  by the driver. It connects to ``ray_address`` or ``$RAY_ADDRESS``, else starts a local embedded
  cluster with ``num_proc`` CPUs. A task that raises (a data error such as ``InvalidSourceData``) is
  not retried and fails the build, naming the shard.

Lost tasks (:class:`TaskRetries`): a task whose worker process or node dies (a node killed,
preempted or out of memory, its raylet crashed), or whose result was lost with its node before the
driver fetched it, is submitted again by the driver, up to :data:`MAX_RETRIES` times, and each loss
is one line on stderr (a ``logging`` warning) naming the node, the shard (or prediction) and the
attempt. Ray's own task retries are off (``max_retries=0``), since Ray retries silently. Re-running
a shard is safe: its bytes depend on nothing but the plan, a lost attempt delivers nothing, and the
driver publishes each shard once, by name (write, fsync, journal, atomic rename), so no row is lost
or written twice. The driver itself dying (the head's process killed) is the runner's resume: the
same command run again keeps the shards published and journalled, and says how many it kept.

Ray and ``uv run``: Ray 2.x, when the driver runs under ``uv run``, replaces the job's runtime
environment with one that ships the current working directory (``working_dir``) to every worker
and runs them with ``uv run`` (``ray._private.runtime_env.uv_runtime_env_hook``, on by default via
``RAY_ENABLE_UV_RUN_RUNTIME_ENV``). That zips whatever folder the build was started from (once a
77 GB one). The build needs none of it: its workers read only the sources (paths checked to be
visible on every node before scheduling) and import the installed ``imagenet_suite``. So
:func:`ray_init` turns the hook off (the variable before ``ray`` is imported, and the constant Ray
read from it if it was imported earlier), skips any ``RAY_RUNTIME_ENV_HOOK`` and passes an explicit
empty runtime environment: no ``working_dir``, no ``py_modules``, no ``pip``/``uv`` — the workers use
the Python environment the cluster runs in, which must have ``imagenet-suite`` installed.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import re
import socket
import tempfile
from collections import Counter
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ClusterError, ConfigError, ImagenetSuiteError, param
from ..files import incomplete_path
from .builder import Shard

if TYPE_CHECKING:  # the writer (Parquet) is the runner's: BuildOptions, checked before a build, needs none
    from .writer import ShardStats

EXECUTORS = ("local", "ray")
ShardFunction = Callable[..., "ShardStats"]  # (shard=, config_dir=, on_row=) -> stats of <config_dir>/<file>.incomplete
LOCAL_OBJECT_STORE_BYTES = 200 * 1024**2  # the embedded cluster's object store: shards pass through it one by one
MAX_RETRIES = 3  # attempts after a worker process or node dies mid-shard (TaskRetries)
_LOG = logging.getLogger(__name__)


class Executor:
    """Computes shards with the runner's shard function; see the module docstring."""

    def check_visible(self, paths: list[Path]) -> None:
        """Raise ConfigError if a worker cannot see one of ``paths`` (the sources the shards read)."""

    def write(
        self, write: ShardFunction, todo: list[Shard], config_dir: Path, bar, preload: list[str]
    ) -> Iterator[tuple[Shard, ShardStats]]:
        """``(shard, stats)`` for each shard of ``todo`` once ``<config_dir>/<file>.incomplete`` is written.
        ``bar``: progress (``update(n)`` rows); ``preload``: modules worth importing once per worker."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the executor started."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LocalExecutor(Executor):
    """The shard function in this process (``num_proc`` 1, or one shard) or in ``num_proc`` worker processes."""

    def __init__(self, num_proc: int = 1):
        self.num_proc = num_proc

    def write(self, write, todo, config_dir, bar, preload):
        if self.num_proc == 1 or len(todo) <= 1:
            for shard in todo:
                yield shard, write(shard=shard, config_dir=config_dir, on_row=bar.update)
            return
        pool = ProcessPoolExecutor(max_workers=min(self.num_proc, len(todo)), mp_context=_worker_context(preload))
        try:
            futures = {pool.submit(write, shard=shard, config_dir=config_dir, on_row=None): shard for shard in todo}
            for future in as_completed(futures):
                shard = futures[future]
                yield shard, future.result()
                bar.update(len(shard.keys))
        finally:
            pool.shutdown(wait=True, cancel_futures=True)  # on an error: no new shards, running ones finish


def _worker_context(preload: list[str]):
    """Fresh worker processes forked from a server that has the builder's modules imported once
    (safe like spawn — no inherited threads or state from this process — and fast like fork)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(preload)
    return context


class RayExecutor(Executor):
    """Shards as Ray tasks (see the module docstring). ``address``: a cluster to connect to (default
    ``$RAY_ADDRESS``); without one, a local cluster with ``num_cpus`` CPUs is started and stopped.
    If this process is already connected to Ray (``ray.is_initialized()``), that connection is used
    and left open."""

    def __init__(self, num_cpus: int = 1, address: str | None = None, max_retries: int = MAX_RETRIES):
        self.ray = import_ray()
        self.max_retries = max_retries
        address = address or os.environ.get("RAY_ADDRESS") or None
        if address:
            _check_reachable(address)  # also when already connected: a wrong address is an error, not ignored
        self.owned = not self.ray.is_initialized()
        if self.owned:
            ray_init(address, num_cpus)

    def close(self) -> None:
        if self.owned and self.ray.is_initialized():
            self.ray.shutdown()
            self.owned = False

    def check_visible(self, paths: list[Path]) -> None:
        """Stat ``paths`` on every alive node (a tiny task pinned to each) before any shard is scheduled."""
        ray = self.ray
        if not paths:
            return
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        stat = ray.remote(num_cpus=0, max_retries=1)(_missing_paths)
        refs = [
            (
                n["NodeManagerAddress"],
                stat.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote(
                    [str(p) for p in paths]
                ),
            )
            for n in ray.nodes()
            if n.get("Alive")
        ]
        for node, ref in refs:
            missing = ray.get(ref)
            if missing:
                raise ConfigError(
                    f"{param('executor')} ray: Ray node {node} cannot see {missing[0]}"
                    + (f" (and {len(missing) - 1} more source paths)" if len(missing) > 1 else "")
                    + f"; put the sources ({param('manual_dir')}, {param('inputs')}, the download cache) on a "
                    f"filesystem mounted at the same path on every node, or build with {param('executor')} local"
                )

    def write(self, write, todo, config_dir, bar, preload):
        ray = self.ray
        if not todo:
            return
        task = ray.remote(num_cpus=1, max_retries=0)(_ray_shard)  # lost tasks: self.retries, named
        write_ref = ray.put(write)  # the builder and its prepared data: once in the object store, not once per task
        retries = TaskRetries(self.max_retries)
        pending = {task.remote(write_ref, shard, str(config_dir)): shard for shard in todo}
        try:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                shard = pending.pop(done[0])
                try:
                    stats, data = ray.get(done[0])
                except ray.exceptions.RayError as err:
                    if retries.retry(shard.filename, f"writing {config_dir.name}/{shard.filename}", err):
                        pending[task.remote(write_ref, shard, str(config_dir))] = shard
                        continue
                    failure = self._failure(err, shard, config_dir, retries)
                    if failure is err:
                        raise
                    raise failure from err  # a RayTaskError carries the worker's traceback
                path = incomplete_path(config_dir / shard.filename)
                with open(path, "wb") as handle:  # fsynced, hashed and renamed by the runner's publication path
                    handle.write(data)
                del data
                yield shard, stats
                bar.update(len(shard.keys))
        finally:
            for ref in pending:  # on an error: no new shards
                ray.cancel(ref, force=False)

    def _failure(self, err: Exception, shard: Shard, config_dir: Path, retries: TaskRetries) -> BaseException:
        """What to raise for a task that failed for good: the exception it raised, as raised locally and
        naming the shard (the RayTaskError, with the worker's traceback, as its cause); or, for a task lost
        more than ``max_retries`` times, a :class:`~imagenet_suite.errors.ClusterError` saying so."""
        ray = self.ray
        if isinstance(err, ray.exceptions.RayTaskError) and isinstance(err.cause, BaseException):
            cause = err.cause
            if isinstance(cause, ImagenetSuiteError) and shard.filename not in str(cause):
                named = _retitled(cause, f"{config_dir.name}/{shard.filename}: {cause}")
                cause = cause if named is None else named
            return cause
        why = lost_task(err)
        if why is None:
            return err
        return ClusterError(
            f"{config_dir.name}/{shard.filename}: Ray lost this shard's task {retries.lost[shard.filename]} times, "
            f"the last time because {why}; see the Ray logs"
        )


class TaskRetries:
    """The driver's retries of Ray tasks lost with their worker process or node (see the module docstring):
    each loss is one warning naming what was lost, where, and the attempt; up to ``max_retries`` per task.
    ``lost`` counts the losses of each task by its key.
    """

    def __init__(self, max_retries: int = MAX_RETRIES):
        self.max_retries = max_retries
        self.lost: Counter[Hashable] = Counter()

    def retry(self, key: Hashable, what: str, err: BaseException) -> bool:
        """Whether to run the task ``key`` (``what`` it did, in words) again after ``ray.get`` raised ``err``:
        True, with the warning of :meth:`line`, for a loss with attempts left; False otherwise."""
        if lost_task(err) is None:
            return False
        self.lost[key] += 1
        if self.lost[key] > self.max_retries:
            return False
        _LOG.warning("%s", self.line(key, what, err))
        return True

    def line(self, key: Hashable, what: str, err: BaseException) -> str:
        """The warning for the latest loss of ``key``."""
        return f"{_capitalised(lost_task(err))} while {what}; running it again (retry {self.lost[key]} of {self.max_retries})"


_NODE = re.compile(r"Node IP: (?P<ip>[^,\s]+), node ID: (?P<id>[0-9a-f]+)")


def lost_task(err: BaseException) -> str | None:
    """Why a Ray task was lost, in words (``"Ray node 10.0.0.7 (node ID 6611188099cf) died"``), when ``err``
    (raised by ``ray.get``) says its worker process or node died or its result was lost with a node; None
    for anything else (an exception raised by the task, a cancellation, the driver's own objects lost)."""
    import ray.exceptions as exc

    if isinstance(err, exc.NodeDiedError):
        found = _NODE.search(str(err))
        return f"Ray node {found['ip']} (node ID {found['id'][:12]}) died" if found else "its Ray node died"
    if isinstance(err, exc.OutOfMemoryError):
        return "Ray's memory monitor killed its worker process (its node ran low on memory)"
    if isinstance(err, exc.WorkerCrashedError | exc.LocalRayletDiedError):
        return "its Ray worker process died"
    if isinstance(err, exc.ObjectLostError) and not isinstance(
        err, exc.OwnerDiedError | exc.ObjectFreedError | exc.ReferenceCountingAssertionError
    ):
        return "its result was lost with the Ray node holding it"
    return None


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def _ray_shard(write: ShardFunction, shard: Shard, config_dir: str) -> tuple[ShardStats, bytes]:
    """On a Ray worker: run the shard function in a scratch folder; the stats and the file's bytes.
    An error's message names the driver's config folder, not the scratch folder."""
    with tempfile.TemporaryDirectory(prefix="imagenet-suite-shard-") as scratch:
        try:
            stats = write(shard=shard, config_dir=Path(scratch), on_row=None)
        except ImagenetSuiteError as err:
            renamed = _retitled(err, str(err).replace(scratch, config_dir)) if scratch in str(err) else None
            if renamed is None:
                raise
            raise renamed from err
        return stats, incomplete_path(Path(scratch) / shard.filename).read_bytes()


def _retitled(err: BaseException, text: str) -> BaseException | None:
    """An exception of ``err``'s type with the message ``text``; None where that type takes other arguments."""
    try:
        return type(err)(text)
    except Exception:
        return None


def _missing_paths(paths: list[str]) -> list[str]:
    return [p for p in paths if not os.path.exists(p)]


def import_ray():
    """The ``ray`` module, with Ray's ``uv run`` runtime-environment hook off (see the module docstring)."""
    os.environ["RAY_ENABLE_UV_RUN_RUNTIME_ENV"] = "0"  # read when ray is first imported
    try:
        import ray
    except ImportError as err:
        raise ConfigError(
            f"{param('executor')} ray needs Ray: install the `ray` extra (pip install 'imagenet-suite[ray]', "
            "or `uv sync --extra ray`)"
        ) from err
    from ray._private import ray_constants

    ray_constants.RAY_ENABLE_UV_RUN_RUNTIME_ENV = False  # if ray was imported before the variable was set
    return ray


def ray_init(address: str | None, num_cpus: int):
    """Connect to the cluster at ``address``, or start a local one with ``num_cpus`` CPUs, no dashboard
    and a small object store; either way with an explicit, empty runtime environment.

    Without ``address`` the cluster is always a new one (``address="local"``): Ray's own default would join
    the latest cluster started on this machine (``ray start``, or another process's test cluster) and then
    refuse ``num_cpus``."""
    ray = import_ray()
    common = {"runtime_env": {}, "_skip_env_hook": True, "configure_logging": False, "log_to_driver": True}
    if address:
        _check_reachable(address)
        try:
            return ray.init(address=address, **common)
        except (ConnectionError, RuntimeError, ValueError) as err:
            raise ConfigError(
                f"{param('ray_address')} {address}: cannot connect to a Ray cluster there ({_one_line(err)})"
            ) from err
    return ray.init(
        address="local",
        num_cpus=num_cpus,
        include_dashboard=False,
        object_store_memory=LOCAL_OBJECT_STORE_BYTES,
        **common,
    )


def _check_reachable(address: str) -> None:
    """A quick TCP connect to ``host:port`` (``ray://`` included), so an unreachable address fails in
    seconds, not after Ray's own minute of retries. ``auto`` and other forms are left to Ray."""
    target = address.removeprefix("ray://")
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit() or not host:
        if address == "auto":
            return
        raise ConfigError(f"{param('ray_address')} {address!r}: expected HOST:PORT, ray://HOST:PORT or auto")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=5):
            pass
    except OSError as err:
        raise ConfigError(
            f"{param('ray_address')} {address}: cannot reach a Ray cluster there ({_one_line(err)}); "
            "check the address and that the cluster is running (`ray status`)"
        ) from err


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split()) or type(err).__name__
    return text[:300]


def check_executor(executor: str, ray_address: str | None = None) -> None:
    """ConfigError for an executor name other than those of ``EXECUTORS``, or a ``ray_address`` without
    ``executor="ray"``; imports and starts nothing."""
    if executor not in EXECUTORS:
        raise ConfigError(f"{param('executor')} {executor!r}: expected one of {', '.join(EXECUTORS)}")
    if ray_address is not None and executor != "ray":
        raise ConfigError(f"{param('ray_address')} is only used with {param('executor')} ray")


def make_executor(
    executor: str, num_proc: int, ray_address: str | None = None, *, start: bool = True
) -> Executor | None:
    """The executor named ``executor`` (``ray_address`` only with ``ray``); with ``start=False`` only
    the checks of the arguments (ConfigError: :func:`check_executor`, Ray installed, the cluster
    reachable), nothing started."""
    check_executor(executor, ray_address)
    if not start:
        if executor == "ray":
            import_ray()  # ConfigError now if Ray is not installed
            address = ray_address or os.environ.get("RAY_ADDRESS") or None
            if address:
                _check_reachable(address)
        return None
    if executor == "ray":
        return RayExecutor(num_cpus=num_proc, address=ray_address)
    return LocalExecutor(num_proc)


__all__ = [
    "EXECUTORS",
    "Executor",
    "LocalExecutor",
    "RayExecutor",
    "TaskRetries",
    "check_executor",
    "import_ray",
    "lost_task",
    "make_executor",
    "ray_init",
]
