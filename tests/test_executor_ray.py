"""``build --executor ray``: shards as Ray tasks, published by the runner's one publication path.

A local Ray cluster (2 CPUs) is started once for this module, from a folder holding a 200 MB file,
the way ``imagenet-suite build --executor ray`` starts one. Checked: byte-identical output to
``--num-proc 1`` for builders that read raw sources (imagenet_val, both configs; imagenet_train, a tar of
class tars) and built inputs (patchml, perturbations, ood_unit_tests); resume after an interrupted Ray build; a worker process
that dies mid-shard is retried; a data error is not retried and names the shard and example; the
working directory is never packaged for the workers; bad CLI inputs are one-line errors. ``evaluate
--executor ray`` gives the local reports, and a sweep of three models (``evaluate --models``) on the
cluster writes the suite.json files and leaderboard of the local sweep of ``tests/test_sweep.py``.

The shard functions injected below (crash, worker death, data error) are module-level functions of
this file; they reach the Ray workers by value (``cloudpickle.register_pickle_by_value``), wrapping
the runner's real shard function.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (the `ray` extra: uv sync --all-extras)")

from ray import cloudpickle  # noqa: E402 — Ray's own copy, the one that pickles its tasks' arguments

import imagenet_suite.core.runner as runner  # noqa: E402
from imagenet_suite.cli import main  # noqa: E402
from imagenet_suite.core import executors  # noqa: E402
from imagenet_suite.errors import ConfigError, InvalidSourceData  # noqa: E402
from tests.builder_harness import build, first_build, sources_of  # noqa: E402
from tests.helpers import folder_bytes, run_cli  # noqa: E402
from tests.test_builders import BY_NAME  # noqa: E402

cloudpickle.register_pickle_by_value(sys.modules[__name__])

LARGE_FILE_BYTES = 200 * 1024**2


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A local Ray cluster started (as the executor starts one) from a folder holding a large sparse file."""
    cwd = tmp_path_factory.mktemp("big-cwd")
    with open(cwd / "large.bin", "wb") as handle:
        handle.truncate(LARGE_FILE_BYTES)
    before = os.getcwd()
    os.chdir(cwd)
    try:
        executors.ray_init(None, 2)
    finally:
        os.chdir(before)
    yield cwd
    ray.shutdown()


@pytest.fixture()
def scratch(tmp_path_factory):
    return lambda name: tmp_path_factory.mktemp(name)


@pytest.mark.parametrize("name", ["imagenet_val", "imagenet_train", "patchml", "perturbations", "ood_unit_tests"])
def test_ray_build_is_byte_identical_to_one_process(name, cluster, scratch, tmp_path):
    case = BY_NAME[name]
    on_ray = build(case, sources_of(case, scratch), tmp_path, executor="ray")
    assert folder_bytes(on_ray) == folder_bytes(first_build(case, scratch))


# -- shard functions injected into the Ray workers ----------------------------------------------------------


def _crash_on_second_shard(write, *, shard, config_dir, on_row):
    if shard.index == 1:
        raise RuntimeError("simulated crash")
    return write(shard=shard, config_dir=config_dir, on_row=on_row)


def _die_on_first_attempt(write, marker: str, *, shard, config_dir, on_row):
    """The worker process exits (no exception, no cleanup) the first time it is given shard 1."""
    if shard.index == 1 and not os.path.exists(marker):
        Path(marker).write_text("died once\n")
        os._exit(1)
    return write(shard=shard, config_dir=config_dir, on_row=on_row)


def _bad_data_in_second_shard(write, attempts: str, *, shard, config_dir, on_row):
    if shard.index == 1:
        with open(attempts, "a") as handle:
            handle.write(f"{shard.filename} {shard.keys[0]}\n")
        raise InvalidSourceData(f"{shard.keys[0]}: not a JPEG (simulated)")
    return write(shard=shard, config_dir=config_dir, on_row=on_row)


def _wrapping_shard_function(monkeypatch, wrapper, *args) -> None:
    real = runner.ConfigRun.shard_function
    monkeypatch.setattr(runner.ConfigRun, "shard_function", lambda self: functools.partial(wrapper, real(self), *args))


def test_interrupted_ray_build_resumes_to_the_same_bytes(cluster, scratch, tmp_path, monkeypatch):
    case = BY_NAME["imagenet_val"]
    with monkeypatch.context() as patch:
        _wrapping_shard_function(patch, _crash_on_second_shard)
        with pytest.raises(RuntimeError, match="simulated crash"):
            build(case, sources_of(case, scratch), tmp_path, executor="ray")
    assert not list(tmp_path.rglob("*.incomplete"))
    resumed = build(case, sources_of(case, scratch), tmp_path, executor="ray")
    assert folder_bytes(resumed) == folder_bytes(first_build(case, scratch))


def test_a_killed_worker_is_retried_to_the_same_bytes(cluster, scratch, tmp_path, monkeypatch):
    case = BY_NAME["imagenet_val"]
    marker = tmp_path / "died"
    _wrapping_shard_function(monkeypatch, _die_on_first_attempt, str(marker))
    folder = build(case, sources_of(case, scratch), tmp_path / "out", executor="ray")
    assert marker.exists()  # a worker did die
    assert folder_bytes(folder) == folder_bytes(first_build(case, scratch))


def test_a_data_error_is_not_retried_and_names_shard_and_example(cluster, scratch, tmp_path, monkeypatch):
    case = BY_NAME["imagenet_val"]
    attempts = tmp_path / "attempts"
    _wrapping_shard_function(monkeypatch, _bad_data_in_second_shard, str(attempts))
    with pytest.raises(InvalidSourceData) as raised:
        build(case, sources_of(case, scratch), tmp_path / "out", executor="ray")
    lines = attempts.read_text().splitlines()
    assert len(lines) == 1  # one attempt: data errors are not retried (the first config fails the build)
    filename, key = lines[0].split()
    message = str(raised.value)
    assert f"default/{filename}" in message and key in message and "\n" not in message
    assert isinstance(raised.value.__cause__, ray.exceptions.RayTaskError)  # the worker's traceback, for --debug
    assert not list((tmp_path / "out").rglob("*.incomplete"))


def test_the_working_directory_is_never_packaged_for_the_workers(cluster):
    assert "working_dir" not in ray.get_runtime_context().runtime_env
    assert "py_executable" not in ray.get_runtime_context().runtime_env

    @ray.remote(num_cpus=0)
    def worker_cwd() -> str:
        return os.getcwd()

    assert "runtime_resources" not in ray.get(worker_cwd.remote())
    session = Path(ray._private.worker._global_node.get_session_dir_path())
    temp_root = session.parent
    assert not [p for p in temp_root.rglob("*") if p.name == "large.bin" or p.suffix == ".zip"]
    used = sum(p.lstat().st_blocks * 512 for p in session.rglob("*") if p.is_file() and not p.is_symlink())
    assert used < 64 * 1024**2, f"Ray's session folder holds {used / 1024**2:.0f} MiB"


def test_sources_a_worker_cannot_see_are_refused_before_scheduling(cluster, tmp_path):
    missing = tmp_path / "not-mounted-here"
    with pytest.raises(ConfigError, match=r"cannot see .*not-mounted-here.*same path on every node"):
        executors.RayExecutor().check_visible([tmp_path, missing])


def test_bad_executor_arguments_are_one_line_errors(capsys, tmp_path):
    code = main(["build", "imagenet_val", "--out", str(tmp_path), "--ray-address", "127.0.0.1:6379"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "--ray-address is only used with --executor ray" in err and "\n" not in err
    with pytest.raises(ConfigError, match=r"^ray_address 127\.0\.0\.1:1: cannot reach a Ray cluster"):
        executors.make_executor("ray", 1, "127.0.0.1:1")
    with pytest.raises(ConfigError, match=r"expected HOST:PORT"):
        executors.make_executor("ray", 1, "not an address")
    assert not list(tmp_path.iterdir())


def test_evaluate_on_ray_gives_the_local_reports(cluster, scratch, tmp_path):
    """``evaluate --executor ray``: one Ray task per dataset split predicts; every report equals the local run's."""
    from imagenet_suite.inference import PredictOptions, load_model
    from imagenet_suite.inference.evaluate import run_suite
    from imagenet_suite.inference.suite_options import SuiteOptions

    folders = [first_build(BY_NAME[name], scratch) for name in ("imagenet_val", "imagenet_r")]
    model = load_model("timm:test_resnet", "none", seed=0)
    local = SuiteOptions(PredictOptions(batch_size=4, workers=0, progress=False), bootstrap=0)
    local = run_suite(model, folders, tmp_path / "local", local)
    on_ray = SuiteOptions(PredictOptions(batch_size=4, progress=False), bootstrap=0, executor="ray")
    remote = run_suite(model, folders, tmp_path / "ray", on_ray)
    assert remote["datasets"] == local["datasets"] and remote["summary"] == local["summary"]
    assert sorted(p.name for p in (tmp_path / "ray" / "outputs").iterdir()) == [
        "imagenet_r.pt", "imagenet_val__boxes.pt", "imagenet_val__default.pt"
    ]  # fmt: skip


def test_evaluate_executor_arguments_are_checked(tmp_path):
    from imagenet_suite.inference.suite_options import SuiteOptions

    with pytest.raises(ConfigError, match="^ray_address is only used with executor ray") as refused:
        SuiteOptions(ray_address="localhost:1")
    assert refused.value.parameters == ("ray_address", "executor")


def test_a_sweep_on_ray_writes_the_suite_json_of_a_local_sweep(cluster, scratch, tmp_path):
    """``evaluate --models FILE --executor ray``: one task per (model, dataset split) with images the prediction
    store lacks, each model deserialised once per worker; every suite.json byte-identical to the (interrupted, resumed) local sweep's, and the
    same leaderboard."""
    from tests.test_sweep import OUTPUT_STEMS, local_sweep, sweep_args

    local = local_sweep(scratch)
    assert run_cli(*sweep_args(local.zoo, local.datasets, tmp_path, "--executor", "ray")).returncode == 0
    for name in local.names:
        assert (tmp_path / name / "suite.json").read_bytes() == (local.out / name / "suite.json").read_bytes()
    board = tmp_path / "leaderboard" / "leaderboard.md"
    assert board.read_bytes() == (local.out / "leaderboard" / "leaderboard.md").read_bytes()
    on_ray = [record["ray"] for record in json.loads((tmp_path / "sweep.json").read_text())["models"].values()]
    for name in local.names:  # the outputs too, those of the boxes config written from the prediction store
        for stem in OUTPUT_STEMS:
            outputs = f"outputs/{stem}.pt"
            assert (tmp_path / name / outputs).read_bytes() == (local.out / name / outputs).read_bytes()
    # imagenet_val's boxes config holds the default config's images: with the prediction store (the default)
    # it needs no task of its own
    assert [record["tasks"] for record in on_ray] == [len(OUTPUT_STEMS) - 1] * 3
    assert all(record["model_loads"] == record["workers"] <= record["tasks"] for record in on_ray)  # once a worker


def test_a_model_failing_on_ray_is_reported_and_the_others_go_on(cluster, scratch, tmp_path):
    from tests.test_sweep import local_sweep, sweep_args

    local = local_sweep(scratch)
    zoo = tmp_path / "zoo.txt"
    zoo.write_text(f"{local.zoo.parent / 'tiny.py'}:Broken weights=none\ntimm:test_resnet weights=none seed=0\n")
    result = run_cli(*sweep_args(zoo, local.datasets[1:], tmp_path / "out", "--executor", "ray"), check=False)
    assert result.returncode == 1 and "simulated failure in forward" in result.stderr
    record = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert [(f["stage"], f["error"].split(":")[0]) for f in record["failures"]] == [("predict", "RuntimeError")]
    assert [model["status"] for model in record["models"].values()] == ["failed", "done"]
