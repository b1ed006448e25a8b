"""Predictions as Ray tasks: one task per (model, dataset split), each model deserialised once per worker.

:class:`RayPredictions` runs :func:`~imagenet_suite.inference.predict.predict` of a model on one dataset
split as one Ray task, in a scratch folder on the worker, and hands the outputs file's bytes back to the
driver, which writes them into its run folder (:func:`imagenet_suite.inference.evaluate.predict_on_ray`
for one model, :mod:`imagenet_suite.inference.sweep` for many); with a prediction store, a task predicts only
the rows of the images planned for it (:attr:`SplitTask.positions`) and hands back their batches' chunks,
which the driver keeps in the store (:func:`imagenet_suite.inference.evaluate.ray_split_tasks`). A model goes to the object store once
(it must pickle: timm, torchvision and user models do); a worker process keeps the last
:data:`WORKER_MODELS` models it ran, so a worker given many splits of one model deserialises it once
(and, on a GPU, moves it to the device once). Each task reports its worker's process id and whether it
deserialised the model (:class:`Finished`), so a caller can count the loads.

What a task reserves (:func:`task_resources`): with a CUDA ``device`` on a cluster with GPUs,
``gpus_per_task`` GPUs (a fraction packs several models' tasks on one GPU) and that share of a GPU node's
CPUs; otherwise this process's intra-op thread count of CPUs (a whole node's when no node has as many),
and torch runs with that many threads, as a local run would: CPU kernels sum in an order that depends
on it, so the outputs are byte-identical to a local run's on the same CPU type. Images are read in the
task's process (DataLoader ``workers=0``: no fork inside a Ray worker). A task lost with its worker
process or node is submitted again by the driver, up to :data:`~imagenet_suite.core.executors.MAX_RETRIES`
times, each loss one line on stderr naming the node, the split and the run
(:class:`~imagenet_suite.core.executors.TaskRetries`); its outputs are written once, when a task delivers
them (atomically, by name). An error raised in the task is not retried.
"""

from __future__ import annotations

import os
import tempfile
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from ..core.executors import MAX_RETRIES, TaskRetries, lost_task
from ..errors import ClusterError
from ..scoring.threads import torch_threads
from .models import LoadedModel
from .predict import PredictJob, PredictOptions, predict
from .store import predict_chunks

WORKER_MODELS = 2
"""Models a Ray worker process keeps between tasks (the last ones it ran)."""

_WORKER_CACHE: OrderedDict[str, LoadedModel] = OrderedDict()  # in each Ray worker process


@dataclass(frozen=True)
class SplitTask:
    """What one task predicts: a dataset split (``folder`` as every node sees it) with ``options``; its whole
    outputs file, or (``positions``) only those rows, as one chunk per batch (for a prediction store)."""

    folder: str
    config: str
    split: str
    options: PredictOptions
    positions: tuple[int, ...] | None = None


@dataclass(frozen=True)
class TaskResources:
    """What each prediction task reserves, and the torch intra-op threads it runs with."""

    num_cpus: int
    num_gpus: float
    threads: int


def task_resources(nodes: Sequence[dict[str, Any]], device: str, gpus_per_task: float, threads: int) -> TaskResources:
    """The resources of a prediction task on a cluster of ``nodes`` (``ray.nodes()``).

    A CUDA ``device`` on a cluster with GPUs: ``gpus_per_task`` GPUs and the same share of the CPUs per GPU
    of the GPU node with the fewest (at least one), as many threads. Otherwise ``threads`` CPUs, or the
    largest node's CPUs when no node has as many, still run with ``threads`` threads (the outputs then
    equal a local run's with ``threads`` threads).

    Example:
        Two nodes: 16 CPUs with 8 GPUs, and 4 CPUs without a GPU.

        >>> nodes = [{"Alive": True, "Resources": {"CPU": 16.0, "GPU": 8.0}},
        ...          {"Alive": True, "Resources": {"CPU": 4.0}}]
        >>> task_resources(nodes, "cuda", 0.5, threads=16)   # 16 / 8 = 2 CPUs per GPU, half of them
        TaskResources(num_cpus=1, num_gpus=0.5, threads=1)
        >>> task_resources(nodes, "cpu", 1.0, threads=8)
        TaskResources(num_cpus=8, num_gpus=0, threads=8)
        >>> task_resources(nodes, "cpu", 1.0, threads=32)    # no node has 32 CPUs: all of the largest's
        TaskResources(num_cpus=16, num_gpus=0, threads=32)
    """
    alive = [node["Resources"] for node in nodes if node.get("Alive")]
    gpu_nodes = [resources for resources in alive if resources.get("GPU", 0) > 0]
    if str(device).startswith("cuda") and gpu_nodes:
        per_gpu = min(int(resources.get("CPU", 0) // resources["GPU"]) for resources in gpu_nodes)
        cpus = max(1, int(per_gpu * gpus_per_task))
        return TaskResources(num_cpus=cpus, num_gpus=gpus_per_task, threads=cpus)
    largest = max([int(resources.get("CPU", 0)) for resources in alive] + [1])
    return TaskResources(num_cpus=min(threads, largest), num_gpus=0, threads=threads)


@dataclass
class Finished:
    """A task that ended: ``data`` (the outputs file's bytes) or ``error`` (raised in the task, its
    ``__cause__`` the Ray error with the worker's traceback); ``owner`` and ``item`` as submitted; the worker's
    process id and whether it deserialised the model for this task."""

    owner: Hashable
    item: Any
    data: bytes | None = None
    error: BaseException | None = None
    worker: int | None = None
    loaded: bool = False


class RayPredictions:
    """Prediction tasks on the cluster ``ray`` is connected to; see the module docstring."""

    def __init__(self, ray, device: str, gpus_per_task: float = 1.0):
        self.ray = ray
        self.resources = task_resources(ray.nodes(), device, gpus_per_task, torch.get_num_threads())
        self.task = ray.remote(
            num_cpus=self.resources.num_cpus,
            num_gpus=self.resources.num_gpus,
            max_retries=0,  # lost tasks: self.retries, named
        )(_predict_bytes)
        self.pending: dict[Any, _Submitted] = {}  # ObjectRef -> what it computes
        self.retries = TaskRetries(MAX_RETRIES)
        self._submitted = 0

    @property
    def slots(self) -> int:
        """How many tasks the cluster runs at once (at least 1)."""
        total = self.ray.cluster_resources()
        if self.resources.num_gpus:
            return max(1, int(total.get("GPU", 0) / self.resources.num_gpus))
        return max(1, int(total.get("CPU", 0) // self.resources.num_cpus))

    def submit(self, loaded: LoadedModel, tasks: Sequence[tuple[Any, SplitTask]], owner: Hashable) -> None:
        """One task per ``(item, task)`` of ``tasks``, the model put in the object store once."""
        if not tasks:
            return
        model = self.ray.put(loaded)
        key = model.hex()
        for item, task in tasks:
            options = replace(task.options, workers=0, progress=False)
            args = (
                key,
                [model],
                task.folder,
                (task.config, task.split),
                options,
                self.resources.threads,
                task.positions,
            )
            self._submitted += 1
            submitted = _Submitted(owner, item, args, _describe(task, owner), self._submitted)
            self.pending[self.task.remote(*args)] = submitted

    def next_finished(self) -> Finished:
        """Wait for the next task to end (there must be one pending); a task lost with its worker or node is
        submitted again (:class:`~imagenet_suite.core.executors.TaskRetries`) and waited for."""
        ray = self.ray
        while True:
            done, _ = ray.wait(list(self.pending), num_returns=1)
            submitted = self.pending.pop(done[0])
            owner, item = submitted.owner, submitted.item
            try:
                data, worker, loaded = ray.get(done[0])
            except ray.exceptions.RayError as err:
                if self.retries.retry(submitted.number, submitted.what, err):
                    self.pending[self.task.remote(*submitted.args)] = submitted
                    continue
                return Finished(owner, item, error=self._failure(err, submitted))
            return Finished(owner, item, data=data, worker=worker, loaded=loaded)

    def _failure(self, err: BaseException, submitted: _Submitted) -> BaseException:
        """The error of a task that failed for good: the exception it raised (its ``__cause__`` the RayTaskError,
        with the worker's traceback), or a ClusterError naming a task lost more than ``MAX_RETRIES`` times."""
        cause = getattr(err, "cause", None)
        if isinstance(cause, BaseException):
            cause.__cause__ = err
            return cause
        why = lost_task(err)
        if why is None:
            return err
        failure = ClusterError(
            f"{submitted.what}: Ray lost this task {self.retries.lost[submitted.number]} times, the last time "
            f"because {why}; see the Ray logs"
        )
        failure.__cause__ = err
        return failure

    def owners(self) -> set[Hashable]:
        """The owners with tasks pending."""
        return {submitted.owner for submitted in self.pending.values()}

    def cancel(self, owner: Hashable | None = None) -> None:
        """Cancel the pending tasks of ``owner`` (all of them with None); running ones finish."""
        for ref, submitted in list(self.pending.items()):
            if owner is None or submitted.owner == owner:
                self.ray.cancel(ref, force=False)
                del self.pending[ref]


@dataclass(frozen=True)
class _Submitted:
    """A task as submitted: for :class:`Finished`, for submitting it again, and for naming it."""

    owner: Hashable
    item: Any
    args: tuple
    what: str
    number: int


def _describe(task: SplitTask, owner: Hashable) -> str:
    """``task`` in words, e.g. ``predicting imagenet_val-1.0.0 default/validation (12 images) for run resnet50``."""
    rows = f" ({len(task.positions)} images)" if task.positions is not None else ""
    return f"predicting {Path(task.folder).name} {task.config}/{task.split}{rows} for run {Path(str(owner)).name}"


def _predict_bytes(
    key: str,
    model: list,
    folder: str,
    part: tuple[str, str],
    options: PredictOptions,
    threads: int,
    positions: tuple[int, ...] | None = None,
) -> tuple[bytes | list[bytes], int, bool]:
    """On a Ray worker: :func:`predict` one ``(config, split)`` into a scratch file with torch on ``threads``
    intra-op threads, its bytes; or, given ``positions``, those rows' chunks
    (:func:`~imagenet_suite.inference.store.predict_chunks`); with this process's id and whether the model
    was deserialised for it."""
    loaded, fresh = _worker_model(key, model)
    config, split = part
    with tempfile.TemporaryDirectory(prefix="imagenet-suite-predict-") as scratch, torch_threads(threads):
        if positions is not None:
            job = PredictJob.of(folder, loaded, options, config=config, split=split)
            return predict_chunks(job, positions), os.getpid(), fresh
        out = Path(scratch) / "outputs.pt"
        predict(folder, loaded, out, config=config, split=split, options=options)
        return out.read_bytes(), os.getpid(), fresh


def _worker_model(key: str, model: list) -> tuple[LoadedModel, bool]:
    """The model put under ``key`` (``model``: its ObjectRef in a list, so that Ray leaves it unresolved):
    from this worker's cache, or fetched from the object store (then cached, the oldest dropped)."""
    if key in _WORKER_CACHE:
        _WORKER_CACHE.move_to_end(key)
        return _WORKER_CACHE[key], False
    import ray

    loaded = ray.get(model[0])
    _WORKER_CACHE[key] = loaded
    while len(_WORKER_CACHE) > WORKER_MODELS:
        _WORKER_CACHE.popitem(last=False)
    return loaded, True


__all__ = ["WORKER_MODELS", "Finished", "RayPredictions", "SplitTask", "TaskResources", "task_resources"]
