"""The suite needs nothing beside the repository: the path guard, the copied data's checksums, no way back out.

See ``tests/repo_guard.py`` (the guard's rule) and ``tests/data/README.md`` (what is copied, from where).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import uuid
from pathlib import Path

import pytest

from tests import repo_guard
from tests.helpers import REPO_ROOT

TEST_DATA = REPO_ROOT / "tests" / "data"
needs_active_guard = pytest.mark.skipif(
    not repo_guard.ACTIVE,
    reason="the repository sits directly in scratch space "
    "or at the file-system root; the guard cannot tell siblings apart there",
)


SIBLING = "spec-folder"  # any folder beside the checkout: the guard does not care about its name


def beside(*parts: str) -> Path:
    """A path in the folder around the checkout that does not exist (nothing is ever created there)."""
    path = REPO_ROOT.parent / f"no-such-folder-{uuid.uuid4().hex}" / Path(*parts)
    assert not path.parent.exists()
    return path


# -- the classification rule -----------------------------------------------------------------------


@needs_active_guard
def test_paths_beside_the_repository_are_flagged():
    sibling = REPO_ROOT.parent / SIBLING / "data" / "x"
    assert repo_guard.outside_path(sibling) == str(sibling)
    assert repo_guard.outside_path(str(sibling)) == str(sibling)
    assert repo_guard.outside_path(os.fsencode(sibling)) == str(sibling)
    assert repo_guard.outside_path(REPO_ROOT / ".." / SIBLING / "spec" / "digest.md") == str(
        REPO_ROOT.parent / SIBLING / "spec" / "digest.md"
    )
    assert repo_guard.outside_path(REPO_ROOT / "tests" / ".." / ".." / "other-checkout") == str(
        REPO_ROOT.parent / "other-checkout"
    )
    sibling_with_the_repos_name_as_prefix = REPO_ROOT.parent / (REPO_ROOT.name + "-old") / "x"
    assert repo_guard.outside_path(sibling_with_the_repos_name_as_prefix) == str(sibling_with_the_repos_name_as_prefix)
    assert repo_guard.outside_path(f"../{SIBLING}/data", start=str(REPO_ROOT)) == str(
        REPO_ROOT.parent / SIBLING / "data"
    )


def test_paths_inside_the_repository_temp_dir_and_python_are_accepted(tmp_path):
    for path in (
        REPO_ROOT,
        REPO_ROOT / "tests" / "data" / "x",
        REPO_ROOT / ".venv" / "lib",
        Path(tempfile.gettempdir()) / "x",
        tmp_path / "x",
        Path(sys.prefix) / "lib",
        Path(sys.base_prefix) / "lib",
        Path("/"),
        Path(os.sep, "usr", "share", "wordnet"),
    ):
        assert repo_guard.outside_path(path) is None, path
    assert repo_guard.outside_path(REPO_ROOT.parent) is None  # the folder itself: listing it reads no sibling
    assert repo_guard.outside_path(3) is None  # file descriptors are ignored
    assert repo_guard.outside_path(None) is None
    assert repo_guard.outside_path("data", start=str(TEST_DATA)) is None


def test_exclusions_never_cover_the_whole_watched_folder():
    for root in repo_guard.EXCLUDED:
        assert not any(root == parent for parent in repo_guard.PARENTS)
        assert any(root.startswith(parent.rstrip(os.sep) + os.sep) for parent in repo_guard.PARENTS)


# -- the hook records what a test touches ----------------------------------------------------------


@needs_active_guard
def test_opening_listing_and_linking_beside_the_repository_are_recorded(request, tmp_path):
    assert repo_guard.current_test == request.node.nodeid
    missing = beside(SIBLING, "data", "real.json")
    with pytest.raises(FileNotFoundError):
        missing.open("rb").close()  # the audit event comes before the open fails: nothing is created
    with pytest.raises(FileNotFoundError):
        os.listdir(missing.parent)
    with pytest.raises(FileNotFoundError):
        missing.read_text()
    (tmp_path / "link").symlink_to(missing)  # a dangling link in tmp_path; its target is what counts
    inside = (TEST_DATA / "README.md").read_text(encoding="utf-8")  # inside: not recorded
    assert inside
    found = repo_guard.take(request.node.nodeid)  # taken, so this test's teardown does not fail
    assert [(event, path) for _, event, path in found] == [
        ("open", str(missing)),
        ("os.listdir", str(missing.parent)),
        ("open", str(missing)),
        ("os.symlink", str(missing)),
    ]


@needs_active_guard
def test_subprocess_command_lines_are_checked(request):
    missing = beside(SIBLING)
    subprocess.run([sys.executable, "-c", "pass", str(missing), f"--manual-dir={missing}", "plain"], check=True)
    found = repo_guard.take(request.node.nodeid)
    assert [(event, path) for _, event, path in found] == [("subprocess.Popen", str(missing))] * 2


@needs_active_guard
def test_a_run_that_reads_beside_the_repository_fails(tmp_path):
    """A pytest run with this suite's guard: the offending test errors in teardown, collection hits fail the run."""
    missing = beside(SIBLING, "data", "x.csv")
    (tmp_path / "conftest.py").write_text(
        textwrap.dedent("""
        from tests.conftest import (_stay_inside_the_repository, pytest_runtest_protocol, pytest_sessionfinish,
                                    pytest_terminal_summary)
    """)
    )
    (tmp_path / "test_inner.py").write_text(
        textwrap.dedent(f"""
        import os
        import pytest

        def test_reads_beside():
            with pytest.raises(FileNotFoundError):
                open({str(missing)!r})

        def test_stays_inside(tmp_path):
            (tmp_path / "x").write_text("fine")
    """)
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        check=False,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "2 passed, 1 error" in run.stdout, run.stdout  # its call passed; its teardown fails
    assert "ERROR at teardown of test_reads_beside" in run.stdout
    assert f"test_inner.py::test_reads_beside: open {missing}" in run.stdout

    (tmp_path / "test_inner.py").write_text(
        textwrap.dedent(f"""
        import os
        try:
            os.listdir({str(missing.parent)!r})  # at import, outside any test
        except FileNotFoundError:
            pass

        def test_fine():
            pass
    """)
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        check=False,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 passed" in run.stdout and "paths outside the repository" in run.stdout
    assert f"<collection>: os.listdir {missing.parent}" in run.stdout


# -- the copied data and the sources ----------------------------------------------------------------


def test_test_data_matches_its_checksums():
    listed = {}
    for line in (TEST_DATA / "SHA256SUMS").read_text(encoding="utf-8").splitlines():
        digest, name = line.split("  ", 1)
        listed[name] = digest
    present = sorted(
        p.relative_to(TEST_DATA).as_posix()
        for p in TEST_DATA.rglob("*")
        if p.is_file() and not (p.parent == TEST_DATA and p.name in ("README.md", "SHA256SUMS"))
    )
    assert sorted(listed) == present, "tests/data and its SHA256SUMS list different files (see tests/data/README.md)"
    changed = [
        name for name, digest in listed.items() if hashlib.sha256((TEST_DATA / name).read_bytes()).hexdigest() != digest
    ]
    assert not changed, f"copies differ from their upstream bytes (tests/data/SHA256SUMS): {changed}"
    for artifact, license_file in [
        ("reassessed-imagenet", "LICENSE"),
        ("ninco", "LICENSE"),
        ("texture-vs-shape", "DATASET_LICENSE"),
    ]:
        assert f"{artifact}/{license_file}" in listed
    readme = (TEST_DATA / "README.md").read_text(encoding="utf-8")
    for top in sorted({name.split("/")[0] for name in listed}):
        assert f"`{top}/" in readme, f"tests/data/{top} has no provenance row in tests/data/README.md"


def test_tests_hold_no_symlinks():
    links = [p for p in (REPO_ROOT / "tests").rglob("*") if p.is_symlink()]
    assert not links, f"symlinks in tests/ (copy the data instead): {links}"


# Path building that leads out of the checkout: "../shared", a "shared" path component, or climbing
# above the repository root. This file and the guard spell these out, so they are not scanned.
ESCAPES = re.compile(
    r"""["']\.\./shared|["']shared["']|parents\[\d+\]\.parent\b|\.parent\.parent\.parent|REPO_ROOT\.parent"""
)


def test_sources_do_not_build_paths_beside_the_checkout():
    skip = {Path(__file__).resolve(), Path(repo_guard.__file__).resolve()}
    offending = []
    for folder in ("tests", "benchmarks"):
        for path in sorted((REPO_ROOT / folder).rglob("*.py")):
            if path.resolve() in skip:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if ESCAPES.search(line):
                    offending.append(f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()}")
    assert not offending, "paths built outside the repository (put the data in tests/data):\n" + "\n".join(offending)
