"""The CPUs this process may use, and the OpenMP settings of a process that shares them (no torch here: the
command line reads this before torch is imported).

:func:`available_cpus` is what every thread and worker count starts from: the CPUs of the process's
affinity mask (``taskset``, a batch scheduler's cpuset) bounded by its cgroup's CPU quota (a container's
``--cpus``, Kubernetes' CPU limit; :func:`cgroup_cpu_limit`), at least 1. ``os.cpu_count()`` counts the
machine's CPUs, which the process may not get: 64 threads under a 2-CPU quota spend most of their time
throttled.

:func:`quiet_openmp` sets the OpenMP environment of a process that shares its CPUs
(:data:`OPENMP_ENVIRONMENT`), before torch is imported (OpenMP reads it when it is loaded): an idle OpenMP
thread sleeps at once instead of spinning (GNU OpenMP's default is about 300,000 spins, a few
milliseconds, at every barrier: on a machine busy with other work, one thread of a team spins through its
time slice while the thread it waits for is not running, and a 2-thread forward pass took 2.5x the CPU
time and 2-3x the wall time it takes with ``OMP_WAIT_POLICY=PASSIVE``). ``OMP_NUM_THREADS`` is set to
:func:`available_cpus`, so torch's intra-op threads follow a cgroup quota too. A variable already set
is kept: the user's choice wins. ``imagenet-suite`` calls it first thing (:func:`imagenet_suite.cli.main`);
the test suite's ``conftest.py`` too.
"""

from __future__ import annotations

import math
import os
from collections.abc import MutableMapping
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
SELF_CGROUP = Path("/proc/self/cgroup")
OPENMP_ENVIRONMENT = {"OMP_WAIT_POLICY": "PASSIVE", "KMP_BLOCKTIME": "0"}
"""Idle OpenMP threads sleep at once: GNU OpenMP (torch's, and MKL's GNU threading) reads
``OMP_WAIT_POLICY``, Intel's OpenMP ``KMP_BLOCKTIME`` (milliseconds)."""


def available_cpus(
    affinity: set[int] | None = None, cgroup_root: Path = CGROUP_ROOT, self_cgroup: Path = SELF_CGROUP
) -> int:
    """CPUs this process may use: its affinity mask's CPUs (``affinity``: that set, for tests), at most the
    cgroup quota rounded up (:func:`cgroup_cpu_limit`), at least 1.

    Example:
        >>> from pathlib import Path
        >>> available_cpus({0, 1, 2, 3}, cgroup_root=Path("/nonexistent"))  # no cgroup files: the affinity
        4
    """
    if affinity is None:
        affinity = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))
    count = max(1, len(affinity))
    limit = cgroup_cpu_limit(cgroup_root, self_cgroup)
    if limit is not None:
        count = min(count, max(1, math.ceil(limit - 1e-9)))
    return count


def cgroup_cpu_limit(cgroup_root: Path = CGROUP_ROOT, self_cgroup: Path = SELF_CGROUP) -> float | None:
    """The CPU quota of this process's cgroup in CPUs (``quota / period``; the smallest along its path to the
    root), None when there is none or it cannot be read.

    cgroup v2: ``cpu.max`` (``"max 100000"`` or ``"<quota> <period>"``) in the process's cgroup folder (the
    ``0::<path>`` line of ``/proc/self/cgroup`` below ``cgroup_root``) and each folder above it. cgroup v1:
    ``cpu.cfs_quota_us`` (-1: none) and ``cpu.cfs_period_us`` in the ``cpu`` controller's folder (its line's
    path below ``cgroup_root/cpu`` or ``cgroup_root/cpu,cpuacct``), and each folder above it. In a container
    the process's own cgroup is usually mounted at ``cgroup_root`` itself, which is read too.
    """
    limits = []
    for folder in _cgroup_folders(cgroup_root, self_cgroup):
        limit = _v2_limit(folder / "cpu.max")
        if limit is None:
            limit = _v1_limit(folder / "cpu.cfs_quota_us", folder / "cpu.cfs_period_us")
        if limit is not None:
            limits.append(limit)
    return min(limits) if limits else None


def _cgroup_folders(root: Path, self_cgroup: Path) -> list[Path]:
    """The folders that may hold this process's CPU limits: its cgroup's and every one above it (v2 and v1's
    cpu controller), and ``root`` itself (and v1's controller roots)."""
    bases = [root, root / "cpu", root / "cpu,cpuacct"]
    folders = list(bases)
    try:
        lines = self_cgroup.read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        lines = []
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if controllers == "":
            base = root
        elif "cpu" in controllers.split(","):
            base = root / controllers
        else:
            continue
        parts = [part for part in path.split("/") if part and part not in (".", "..")]
        folders += [base.joinpath(*parts[:end]) for end in range(len(parts), 0, -1)]
    return list(dict.fromkeys(folders))


def _v2_limit(path: Path) -> float | None:
    try:
        quota, period = path.read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError, UnicodeDecodeError, ZeroDivisionError):
        return None


def _v1_limit(quota_path: Path, period_path: Path) -> float | None:
    try:
        quota, period = int(quota_path.read_text().strip()), int(period_path.read_text().strip())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return quota / period if quota > 0 and period > 0 else None


def quiet_openmp(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Set :data:`OPENMP_ENVIRONMENT` and ``OMP_NUM_THREADS`` (:func:`available_cpus`) in ``environ``
    (default ``os.environ``) where they are not set; return what was set. Call it before torch (or anything
    loading OpenMP) is imported: OpenMP reads them when it is loaded.

    Example:
        >>> environ = {"OMP_NUM_THREADS": "3"}
        >>> sorted(quiet_openmp(environ)), environ["OMP_NUM_THREADS"], environ["OMP_WAIT_POLICY"]
        (['KMP_BLOCKTIME', 'OMP_WAIT_POLICY'], '3', 'PASSIVE')
    """
    environ = os.environ if environ is None else environ
    wanted = {**OPENMP_ENVIRONMENT, "OMP_NUM_THREADS": str(available_cpus())}
    chosen = {name: value for name, value in wanted.items() if name not in environ}
    environ.update(chosen)
    return chosen


__all__ = ["OPENMP_ENVIRONMENT", "available_cpus", "cgroup_cpu_limit", "quiet_openmp"]
