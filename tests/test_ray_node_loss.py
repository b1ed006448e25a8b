"""A Ray cluster that loses a node: builds, ``evaluate --executor ray`` and sweeps end byte-identical to a local run.

One multi-node cluster for the module (``ray.cluster_utils.Cluster``: a head with no CPUs, where the driver and
its objects live, and two worker nodes of one CPU each, small object stores, health checks every 0.5 s so a dead
node is noticed in about 2 s). In each test one task, on its first attempt, claims a marker file, writes the ID
of the node it runs on and blocks; a thread of the test waits for that file and kills that node
(``Cluster.remove_node(node, allow_graceful=False)``: its raylet and workers SIGKILLed) while the task runs on
it, so the kill moment is fixed by the task, not by timing. The driver must run the lost task again on the other
worker, say so in one warning naming the node and the shard (or the split and run), and end with the bytes of a
local run: no row lost or written twice. A new worker node replaces the killed one after each test.

The head's driver killed: ``imagenet-suite build --executor ray --ray-address`` in a subprocess that stops
(sleeps) right after publishing its first shard is SIGKILLed there; the same command run again says how many
shards it kept and ends with the bytes of a local build.

Marked ``ray_cluster`` (``tools/test.sh -m ray_cluster`` runs only these). The blocking functions are
module-level functions of this file, sent to the workers by value (``cloudpickle.register_pickle_by_value``).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (the `ray` extra: uv sync --all-extras)")

from ray import cloudpickle  # noqa: E402 — Ray's own copy, the one that pickles its tasks' arguments
from ray.cluster_utils import Cluster  # noqa: E402

import imagenet_suite.core.runner as runner  # noqa: E402
from imagenet_suite.core import executors  # noqa: E402
from imagenet_suite.core.builder import Shard  # noqa: E402
from imagenet_suite.errors import ClusterError  # noqa: E402
from imagenet_suite.inference import ray_predict  # noqa: E402
from tests.builder_harness import build, first_build, sources_of  # noqa: E402
from tests.helpers import REPO_ROOT, folder_bytes, run_cli  # noqa: E402
from tests.test_builders import BY_NAME  # noqa: E402

cloudpickle.register_pickle_by_value(sys.modules[__name__])

pytestmark = pytest.mark.ray_cluster

WORKER = {"num_cpus": 1, "object_store_memory": 80 * 1024**2}
HEALTH_CHECKS = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 500, "health_check_failure_threshold": 4}
BLOCK_SECONDS = 60  # a blocked task gives up (fails) if its node was not killed by then
LOSS_LOGGER = "imagenet_suite.core.executors"


@pytest.fixture(scope="module")
def cluster():
    """Head (no CPUs: every task runs on a worker node) + two one-CPU worker nodes; this process its driver."""
    executors.import_ray()  # Ray's `uv run` runtime-environment hook off before any node starts
    nodes = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 0,
            "object_store_memory": WORKER["object_store_memory"],
            "include_dashboard": False,
            "_system_config": HEALTH_CHECKS,
        },
    )
    try:
        for _ in range(2):
            nodes.add_node(**WORKER)
        nodes.wait_for_nodes()
        executors.ray_init(nodes.address, 1)  # as `--ray-address` connects
        yield nodes
    finally:
        ray.shutdown()
        nodes.shutdown()


@pytest.fixture()
def scratch(tmp_path_factory):
    return lambda name: tmp_path_factory.mktemp(name)


# -- in the Ray workers ------------------------------------------------------------------------------------


def _block_first_claim(claim: str) -> None:
    """The first task to get here claims ``claim``, writes its node's ID to ``claim + ".node"`` and blocks (its node
    is killed meanwhile); every later task (a retry included) goes on at once."""
    try:
        os.close(os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return
    Path(claim + ".tmp").write_text(ray.get_runtime_context().get_node_id())
    os.replace(claim + ".tmp", claim + ".node")
    deadline = time.monotonic() + BLOCK_SECONDS
    while time.monotonic() < deadline:
        time.sleep(0.05)
    raise RuntimeError(f"node not killed within {BLOCK_SECONDS} s")


def _shard_blocking_once(write, claim: str, *, shard, config_dir, on_row):
    if shard.index == 1:
        _block_first_claim(claim)
    return write(shard=shard, config_dir=config_dir, on_row=on_row)


def _predict_blocking_once(claim: str):
    real = ray_predict._predict_bytes

    def predict_bytes(*args):
        _block_first_claim(claim)
        return real(*args)

    return predict_bytes


# -- in the test (driver) ----------------------------------------------------------------------------------


@contextlib.contextmanager
def node_killed_under_blocked_task(cluster: Cluster, claim: Path):
    """Kill the worker node a task blocked on (``claim``) as soon as it says which; yields ``{"node": ID}`` once
    killed. Afterwards a new worker node takes its place."""
    killed: dict[str, str] = {}
    stop = threading.Event()
    announced = Path(f"{claim}.node")

    def watch() -> None:
        while not stop.wait(0.02):
            if announced.exists():
                node_id = announced.read_text()
                node = next(n for n in cluster.worker_nodes if n.node_id == node_id)
                cluster.remove_node(node, allow_graceful=False)
                killed["node"] = node_id
                return

    watcher = threading.Thread(target=watch, name="node-killer", daemon=True)
    watcher.start()
    try:
        yield killed
    finally:
        stop.set()
        watcher.join()
        if killed:
            cluster.add_node(**WORKER)
            cluster.wait_for_nodes()


def loss_lines(caplog, killed: dict[str, str]) -> list[str]:
    """The warnings about lost tasks: each says the task runs again, and one at least names the killed node (the
    blocked task's; a task that was only queued there may be named by its lost worker instead)."""
    lines = [r.getMessage() for r in caplog.records if r.name == LOSS_LOGGER]
    assert killed, "no node was killed"
    assert all("; running it again (retry " in line for line in lines), lines
    assert any(f"(node ID {killed['node'][:12]}) died while " in line for line in lines), lines
    return lines


def test_a_build_loses_a_node_mid_shard_and_ends_byte_identical(cluster, scratch, tmp_path, monkeypatch, caplog):
    case = BY_NAME["imagenet_val"]
    real = runner.ConfigRun.shard_function
    claim = tmp_path / "claim"
    monkeypatch.setattr(
        runner.ConfigRun, "shard_function", lambda self: functools.partial(_shard_blocking_once, real(self), str(claim))
    )
    caplog.set_level(logging.WARNING, LOSS_LOGGER)
    with node_killed_under_blocked_task(cluster, claim) as killed:
        folder = build(case, sources_of(case, scratch), tmp_path / "out", executor="ray")
    lines = loss_lines(caplog, killed)
    blocked = "died while writing default/validation-00001-of-00003.parquet; running it again (retry 1 of 3)"
    assert [line for line in lines if "default/validation-00001-of-00003" in line] == [
        f"Ray node {cluster.address.split(':')[0]} (node ID {killed['node'][:12]}) {blocked}"
    ]
    assert folder_bytes(folder) == folder_bytes(first_build(case, scratch))  # every row once, as built locally
    info = json.loads((folder / "build_info.json").read_text())
    assert [c["splits"]["validation"]["num_examples"] for c in info["configs"].values()] == [12, 12]


def test_evaluate_on_ray_loses_a_node_mid_prediction_and_ends_byte_identical(
    cluster, scratch, tmp_path, monkeypatch, caplog
):
    from imagenet_suite.inference import PredictOptions, load_model
    from imagenet_suite.inference.evaluate import run_suite
    from imagenet_suite.inference.suite_options import SuiteOptions

    folders = [first_build(BY_NAME[name], scratch) for name in ("imagenet_val", "imagenet_r")]
    model = load_model("timm:test_resnet", "none", seed=0)
    predict = PredictOptions(batch_size=4, workers=0, progress=False)
    local = run_suite(model, folders, tmp_path / "local", SuiteOptions(predict, bootstrap=20))
    claim = tmp_path / "claim"
    monkeypatch.setattr(ray_predict, "_predict_bytes", _predict_blocking_once(str(claim)))
    caplog.set_level(logging.WARNING, LOSS_LOGGER)
    options = SuiteOptions(predict, bootstrap=20, executor="ray", ray_address=cluster.address)
    with node_killed_under_blocked_task(cluster, claim) as killed:
        remote = run_suite(model, folders, tmp_path / "ray", options)
    lines = loss_lines(caplog, killed)
    assert len(lines) >= 1 and all(" for run ray; " in line for line in lines), lines
    assert remote["datasets"] == local["datasets"] and remote["summary"] == local["summary"]
    outputs = sorted(p.name for p in (tmp_path / "local" / "outputs").iterdir())
    assert outputs == sorted(p.name for p in (tmp_path / "ray" / "outputs").iterdir())
    for name in outputs:
        assert (tmp_path / "ray" / "outputs" / name).read_bytes() == (
            tmp_path / "local" / "outputs" / name
        ).read_bytes()


def test_a_sweep_on_ray_loses_a_node_and_ends_byte_identical(cluster, scratch, tmp_path, monkeypatch, caplog):
    from tests.test_sweep import TINY_MODEL, sweep_args

    (tmp_path / "tiny.py").write_text(TINY_MODEL)
    zoo = tmp_path / "zoo.txt"
    zoo.write_text(f"timm:test_resnet weights=none seed=0\n{tmp_path / 'tiny.py'}:make weights=none\n")
    datasets = [first_build(BY_NAME[name], scratch) for name in ("imagenet_val", "imagenet_r")]
    assert run_cli(*sweep_args(zoo, datasets, tmp_path / "local")).returncode == 0
    claim = tmp_path / "claim"
    monkeypatch.setattr(ray_predict, "_predict_bytes", _predict_blocking_once(str(claim)))
    args = sweep_args(zoo, datasets, tmp_path / "ray", "--executor", "ray", "--ray-address", cluster.address)
    caplog.set_level(logging.WARNING, LOSS_LOGGER)
    with node_killed_under_blocked_task(cluster, claim) as killed:
        assert run_cli(*args).returncode == 0
    lines = loss_lines(caplog, killed)
    assert len(lines) >= 1 and all(" died while predicting " in line for line in lines), lines
    names = json.loads((tmp_path / "local" / "sweep.json").read_text())["models"]
    record = json.loads((tmp_path / "ray" / "sweep.json").read_text())
    assert list(record["models"]) == list(names) and not record["failures"]
    assert [model["status"] for model in record["models"].values()] == ["done", "done"]
    for name in names:
        local_run, ray_run = tmp_path / "local" / name, tmp_path / "ray" / name
        assert (ray_run / "suite.json").read_bytes() == (local_run / "suite.json").read_bytes()
        for path in sorted((local_run / "outputs").iterdir()):
            assert (ray_run / "outputs" / path.name).read_bytes() == path.read_bytes()
    board = "leaderboard/leaderboard.md"
    assert (tmp_path / "ray" / board).read_bytes() == (tmp_path / "local" / board).read_bytes()


_DRIVER = """
import sys, time
from pathlib import Path
from imagenet_suite.core import runner
from imagenet_suite.cli import main

real = runner.ConfigRun.publish

def publish_then_stop(self, shard, stats, hashed):
    published = real(self, shard, stats, hashed)
    Path(sys.argv[1]).write_text(shard.filename)
    time.sleep(300)  # SIGKILLed here by the test
    return published

runner.ConfigRun.publish = publish_then_stop
sys.exit(main(sys.argv[2:]))
"""


def test_the_killed_driver_is_run_again_and_resumes_to_the_same_bytes(cluster, scratch, tmp_path):
    case = BY_NAME["imagenet_val"]
    sources = sources_of(case, scratch)
    args = ["build", "imagenet_val", "--config", "default", "--config", "boxes", "--out", str(tmp_path / "out"),
            "--manual-dir", str(sources.manual_dir), "--pins", str(sources.manual_dir / "checksums.tsv"),
            "--shard-size", str(case.shard_size), "--offline", "--no-progress",
            "--executor", "ray", "--ray-address", cluster.address]  # fmt: skip
    published = tmp_path / "published"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    driver = subprocess.Popen(
        [sys.executable, "-c", _DRIVER, str(published), *args], cwd=REPO_ROOT, env=env, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 120
        while not published.exists() and driver.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert published.exists(), driver.communicate(timeout=5)[1].decode()[-3000:]
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.communicate()
    assert driver.returncode == -signal.SIGKILL
    again = run_cli(*args, subprocess_=True)
    resumed = [line for line in again.stderr.splitlines() if "resuming" in line]
    assert resumed == [
        "imagenet_val/default: resuming: 1 of 3 shards kept from an interrupted build (same plan, sources and "
        "journalled sha256), 2 to write"
    ], again.stderr
    folder = Path(again.stdout.splitlines()[-1])
    assert folder_bytes(folder) == folder_bytes(first_build(case, scratch))


def test_what_is_a_lost_task_and_how_often_it_is_run_again(caplog):
    """No cluster: the errors of ``ray.get`` that mean a lost task, their words, and the retry bound."""
    died = ray.exceptions.NodeDiedError(
        "Task failed because the node it was running on is dead or unavailable. Node IP: 10.0.3.7, "
        "node ID: 2033998e43c7a1b2c3d4e5f6. This can happen if the node was preempted, ..."
    )
    assert executors.lost_task(died) == "Ray node 10.0.3.7 (node ID 2033998e43c7) died"
    assert executors.lost_task(ray.exceptions.WorkerCrashedError()) == "its Ray worker process died"
    assert executors.lost_task(ray.exceptions.TaskCancelledError()) is None
    assert executors.lost_task(ray.exceptions.RayTaskError("f", "traceback", ValueError("bad row"))) is None
    retries = executors.TaskRetries(max_retries=2)
    caplog.set_level(logging.WARNING, LOSS_LOGGER)
    assert [retries.retry("shard-1", "writing default/shard-1", died) for _ in range(3)] == [True, True, False]
    assert retries.retry("shard-2", "writing default/shard-2", ValueError("not a loss")) is False
    assert [r.getMessage() for r in caplog.records] == [
        f"Ray node 10.0.3.7 (node ID 2033998e43c7) died while writing default/shard-1; running it again (retry {n} of 2)"
        for n in (1, 2)
    ]
    assert retries.lost == {"shard-1": 3}
    shard = Shard("validation", 1, 3, ("a",))
    while retries.retry(shard.filename, "writing default/" + shard.filename, died):
        pass
    executor = types.SimpleNamespace(ray=ray)  # _failure reads nothing else of the executor
    failure = executors.RayExecutor._failure(executor, died, shard, Path("out/default"), retries)
    assert isinstance(failure, ClusterError)  # an error the user can act on: one line from the CLI, no traceback
    assert str(failure) == (
        "default/validation-00001-of-00003.parquet: Ray lost this shard's task 3 times, the last time because "
        "Ray node 10.0.3.7 (node ID 2033998e43c7) died; see the Ray logs"
    )


def test_without_an_address_a_new_local_cluster_is_started_not_the_running_one(cluster, monkeypatch):
    """With this module's cluster running on the machine, Ray's default ``ray.init()`` would join it (and then
    refuse ``num_cpus``: what the other Ray tests hit when both files ran at once); ``ray_init`` without an
    address asks for a new local cluster instead."""
    from ray._private.services import get_ray_address_from_environment

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert get_ray_address_from_environment(None, None) == cluster.address
    asked = {}
    monkeypatch.setattr(ray, "init", lambda **kwargs: asked.update(kwargs))
    executors.ray_init(None, 2)
    assert asked["address"] == "local" and asked["num_cpus"] == 2
