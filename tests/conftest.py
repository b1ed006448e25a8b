"""Shared pytest fixtures, and the guard that keeps tests inside the repository.

The suite runs from a bare ``git clone`` with nothing beside it. Real public artifacts that tests read
are copied into ``tests/data`` (origin, upstream commit, license and checksums in
``tests/data/README.md`` and ``tests/data/SHA256SUMS``); the ``test_data`` fixture points there.
Nothing may be read from beside the checkout (a spec or data folder beside it, another checkout,
any sibling folder).

The guard (``tests/repo_guard.py``, installed here before any test module is imported) is an audit
hook that records every file open, directory listing, glob, copy, link, rename, ``mkdir``/``chdir``
and subprocess command line whose path lies in the folder that contains the repository but outside
the repository itself, excluding the system temp dir, ``sys.prefix``/``sys.base_prefix``, the uv cache
and uv's Python installs (and ``$HOME``'s hidden entries when the repository sits directly in
``$HOME``); an exclusion that contains the repository's folder is ignored, and one that equals it
(a clone straight into ``/tmp``) turns the guard off. A test that touched such a path fails in its
teardown, naming the paths; hits outside any test (collection, module imports, session teardown)
fail the session. The rule and its limits are spelled out in ``tests/repo_guard.py``.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

from imagenet_suite.cpus import available_cpus, quiet_openmp
from tests import repo_guard

if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):  # a worker of tools/test.sh: its share of the CPUs for torch
    _share = available_cpus() // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, _share)))
quiet_openmp()  # before any test module imports torch: OpenMP reads it when loaded (imagenet_suite.cpus)
_DONT_WRITE_BYTECODE = sys.dont_write_bytecode
sys.dont_write_bytecode = False  # until collection ends: pytest keeps the test modules it rewrites (assertions) in
# tests/__pycache__ and reads them back in later runs; with PYTHONDONTWRITEBYTECODE set (as in CI) it kept none, and
# every run's workers rewrote all of them again (8 s of each one's collection)
repo_guard.install()

_SCRATCH = Path(tempfile.mkdtemp(prefix="imagenet-suite-tests-"))

os.environ.setdefault("FIFTYONE_DO_NOT_TRACK", "true")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ["HF_DATASETS_CACHE"] = str(_SCRATCH / "hf-datasets-cache")  # never the user's cache
os.environ["IMAGENET_SUITE_CACHE"] = str(_SCRATCH / "downloads")
os.environ["IMAGENET_SUITE_HASH_CACHE"] = str(_SCRATCH / "file-hashes.sqlite")  # the read check's remembered hashes
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.pop("IMAGENET_SUITE_DEBUG", None)  # the CLI tests expect one-line errors, no traceback

REPO_ROOT = Path(__file__).resolve().parents[1]
TEST_DATA = REPO_ROOT / "tests" / "data"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Attribute every path the guard sees during a test's setup, call and teardown to that test."""
    repo_guard.current_test = item.nodeid
    try:
        yield
    finally:
        repo_guard.current_test = "<between tests>"


SLOWEST_FIRST = (  # the test files that take longest (tools/test.sh --durations): run first, so that under
    # pytest-xdist (whole files per worker) none of them starts last and runs alone while the other workers idle
    "test_evaluate.py",
    "test_review_app_lookalikes.py",
    "test_review_app.py",
    "test_executor_ray.py",
    "test_ray_node_loss.py",
    "test_adversarial.py",
)


def pytest_collection_modifyitems(session, config, items):
    """The files of :data:`SLOWEST_FIRST` first (in that order), the others after them in collection order."""
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: a file's tests keep their order


def pytest_collection_finish(session):
    """The tests import modules as ``PYTHONDONTWRITEBYTECODE`` says (bytecode was written during collection only)."""
    sys.dont_write_bytecode = _DONT_WRITE_BYTECODE


@pytest.fixture(autouse=True)
def _stay_inside_the_repository(request):
    """Fail the test (in its teardown) if it, or a fixture it set up first, touched a path beside the repository."""
    yield
    found = repo_guard.take(request.node.nodeid)
    if found:
        pytest.fail(repo_guard.describe(found), pytrace=False)


def pytest_sessionfinish(session, exitstatus):
    """Paths touched outside any test, or by a fixture's teardown after its test's own: fail the run."""
    repo_guard.current_test = "<session end>"
    if repo_guard.hits and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    found = repo_guard.take()
    if found:
        terminalreporter.section("paths outside the repository", red=True)
        terminalreporter.write_line(repo_guard.describe(found))


@pytest.fixture(scope="session")
def test_data() -> Path:
    """``tests/data``: copies of the real public artifacts tests read (provenance in its README.md)."""
    return TEST_DATA


@pytest.fixture(scope="session")
def val_images():
    """Twelve tiny val JPEGs (one grayscale, one CMYK) with labels and boxes."""
    from tests.fixtures.imagenet_layouts import make_val_images

    return make_val_images(12)


@pytest.fixture(scope="session")
def val_layouts(tmp_path_factory, val_images) -> dict[str, Path]:
    """The same images in the three real ImageNet-val layouts: {"tar", "kaggle", "folders"} -> manual dir."""
    from tests.fixtures import imagenet_layouts as fx

    root = tmp_path_factory.mktemp("val-layouts")
    return {
        "tar": fx.write_tar_layout(root / "tar", val_images),
        "kaggle": fx.write_kaggle_layout(root / "kaggle", val_images),
        "folders": fx.write_folders_layout(root / "folders", val_images),
    }
