"""How many threads and workers, from the CPUs the process may actually use (``imagenet_suite.cpus``,
``imagenet_suite.scoring.threads``): the affinity mask bounded by the cgroup's CPU quota (v2 ``cpu.max`` and
v1 ``cpu.cfs_quota_us`` read from fake cgroup folders), the OpenMP environment set before torch loads, and
the counts predict and scoring use (``compute_threads``, ``cpu_workers``, ``loader_workers``)."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest
import torch
from torch.utils.data import DataLoader, Dataset

from imagenet_suite import cpus
from imagenet_suite.cpus import available_cpus, cgroup_cpu_limit, quiet_openmp
from imagenet_suite.scoring import threads
from imagenet_suite.scoring.threads import compute_threads, cpu_workers, loader_workers, single_threaded_worker
from tests.helpers import REPO_ROOT


def cgroup(tmp_path, self_lines: str, files: dict[str, str]):
    """A fake cgroup root with ``files`` (path below it -> content) and a /proc/self/cgroup of ``self_lines``."""
    root = tmp_path / "cgroup"
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    root.mkdir(exist_ok=True)
    self_cgroup = tmp_path / "self_cgroup"
    self_cgroup.write_text(self_lines)
    return {"cgroup_root": root, "self_cgroup": self_cgroup}


EIGHT = set(range(8))


@pytest.mark.parametrize(
    ("self_lines", "files", "limit", "available"),
    [
        # cgroup v2, a quota on the process's own cgroup: 1.5 CPUs -> 2 threads
        ("0::/user.slice/job.scope\n", {"user.slice/job.scope/cpu.max": "150000 100000\n"}, 1.5, 2),
        # a smaller quota above it wins
        (
            "0::/user.slice/job.scope\n",
            {"user.slice/job.scope/cpu.max": "max 100000\n", "user.slice/cpu.max": "100000 100000\n"},
            1.0,
            1,
        ),
        # a container: its own cgroup mounted at the root
        ("0::/\n", {"cpu.max": "200000 100000\n"}, 2.0, 2),
        # no quota anywhere: the affinity mask
        ("0::/a\n", {"a/cpu.max": "max 100000\n", "cpu.max": "max 100000\n"}, None, 8),
        # a quota above the affinity mask does not add CPUs
        ("0::/\n", {"cpu.max": "1600000 100000\n"}, 16.0, 8),
        # less than a CPU: still one thread
        ("0::/\n", {"cpu.max": "20000 100000\n"}, 0.2, 1),
        # cgroup v1: the cpu controller's folder (quota / period), other controllers ignored
        (
            "7:memory:/docker/abc\n5:cpu,cpuacct:/docker/abc\n",
            {
                "cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "300000\n",
                "cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n",
            },
            3.0,
            3,
        ),
        # v1 without a quota (-1)
        (
            "5:cpu,cpuacct:/x\n",
            {"cpu,cpuacct/x/cpu.cfs_quota_us": "-1\n", "cpu,cpuacct/x/cpu.cfs_period_us": "100000\n"},
            None,
            8,
        ),
        # unreadable content and a path leaving the root are ignored, never an error
        ("0::/../../etc\n", {"cpu.max": "lots\n"}, None, 8),
        # no /proc/self/cgroup lines at all: the root is still read
        ("", {"cpu.max": "400000 100000\n"}, 4.0, 4),
    ],
)
def test_available_cpus_is_the_affinity_bounded_by_the_cgroup_quota(tmp_path, self_lines, files, limit, available):
    where = cgroup(tmp_path, self_lines, files)
    assert cgroup_cpu_limit(**where) == (pytest.approx(limit) if limit is not None else None)
    assert available_cpus(EIGHT, **where) == available


def test_available_cpus_of_this_process_follow_its_affinity_mask():
    """The process's own mask is read (no ``affinity`` given): narrowed to one CPU, one CPU is available."""
    mask = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {min(mask)})
        assert available_cpus() == 1
        os.sched_setaffinity(0, mask)
        limit = cgroup_cpu_limit()
        assert available_cpus() == (len(mask) if limit is None else min(len(mask), max(1, math.ceil(limit - 1e-9))))
    finally:
        os.sched_setaffinity(0, mask)


def test_quiet_openmp_sets_only_what_is_unset(monkeypatch):
    monkeypatch.setattr(cpus, "available_cpus", lambda: 3)
    environ = {"OMP_WAIT_POLICY": "active", "PATH": "/bin"}
    assert quiet_openmp(environ) == {"KMP_BLOCKTIME": "0", "OMP_NUM_THREADS": "3"}
    assert environ == {"OMP_WAIT_POLICY": "active", "PATH": "/bin", "KMP_BLOCKTIME": "0", "OMP_NUM_THREADS": "3"}
    assert quiet_openmp(environ) == {}  # a second call changes nothing


def test_the_command_line_sets_the_openmp_environment_before_any_torch_import(tmp_path):
    """A fresh process: ``cli.main`` (here ``list``, which imports no torch) leaves the OpenMP variables set."""
    code = (
        "import os, sys\n"
        "from imagenet_suite import cli\n"
        "assert 'torch' not in sys.modules\n"
        "with open(os.devnull, 'w') as sink:\n"
        "    sys.stdout = sink\n"
        "    code = cli.main(['list'])\n"
        "sys.stdout = sys.__stdout__\n"
        "print(code, 'torch' in sys.modules, os.environ['OMP_WAIT_POLICY'], os.environ['OMP_NUM_THREADS'])\n"
    )
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "KMP_"))}
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, env=environ)
    assert found.returncode == 0, found.stderr
    assert found.stdout.split() == ["0", "False", "PASSIVE", str(available_cpus())]


@pytest.fixture
def three_torch_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(3)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize(("available", "compute", "workers"), [(1, 1, 1), (2, 2, 2), (16, 3, 4)])
def test_thread_and_worker_counts_follow_the_cpus_available(
    monkeypatch, three_torch_threads, available, compute, workers
):
    monkeypatch.setattr(threads, "available_cpus", lambda: available)
    assert compute_threads() == compute  # torch's 3 threads, no more than the CPUs available
    assert cpu_workers() == compute
    assert loader_workers() == workers  # min(4, CPUs available)
    assert loader_workers(0) == 0 and loader_workers(7) == 7  # asked for: as asked


class _Threads(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, index):
        return torch.get_num_threads()


def test_a_dataloader_worker_runs_torch_single_threaded(three_torch_threads):
    loader = DataLoader(_Threads(), batch_size=None, num_workers=1, worker_init_fn=single_threaded_worker)
    assert [int(n) for n in loader] == [1, 1]


SEEN: list[int] = []


class _Counting(torch.nn.Module):
    """A model that records torch's thread count at each forward."""

    def __init__(self):
        super().__init__()
        self.head = torch.nn.Linear(3, 1000)

    def forward(self, x):
        SEEN.append(torch.get_num_threads())
        return self.head(x.mean(dim=(2, 3)))


def make_counting() -> torch.nn.Module:
    return _Counting()


def test_predict_runs_the_model_on_no_more_threads_than_the_cpus_available(tmp_path, monkeypatch, three_torch_threads):
    from imagenet_suite.inference import PredictOptions, load_model, predict
    from imagenet_suite.testing import tiny_val_build

    loaded = load_model("tests.test_cpus:make_counting", "none")
    monkeypatch.setattr(threads, "available_cpus", lambda: 2)
    folder = tiny_val_build(tmp_path / "val")
    SEEN.clear()
    predict(folder, loaded, tmp_path / "out.pt", options=PredictOptions(workers=0, batch_size=1, progress=False))
    assert SEEN and set(SEEN) == {2}
    assert torch.get_num_threads() == 3  # restored afterwards
