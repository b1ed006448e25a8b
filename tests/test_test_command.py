"""``tools/test.sh``, the test command of the README and of ``.ci/run``.

The script runs in bash with stand-ins for the system's tools on ``PATH`` (``dpkg-query``,
``id``, ``sudo``, ``apt-get``, ``uv``), so every branch is exercised without touching the machine:
packages present → pytest at once; missing and installable → apt-get, then pytest; missing and not
installable → one line saying why, exit code 1, no pytest.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from tests.helpers import REPO_ROOT

SCRIPT = REPO_ROOT / "tools" / "test.sh"
PACKAGES = ["wordnet-base", "chromium", "chromium-driver"]
COMPILE = "uv run --frozen --all-extras python -m compileall -q -j 0 imagenet_suite builders hierarchies tests"
"""The first uv call: the checkout's own modules compiled (the suite's processes then load them)."""
REAL_TOOLS = ["bash", "grep", "dirname", "env", "cat"]


def _stub(folder, name, body):
    path = folder / name
    path.write_text(f"#!/bin/bash\n{body}\n")
    path.chmod(0o755)


def _run(tmp_path, *, installed, uid, sudo=False, apt=True, args=(), environ=None):
    """Run the script with a ``PATH`` of stand-ins; the log file records what they were asked."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in REAL_TOOLS:
        (bin_dir / tool).symlink_to(shutil.which(tool))
    log = tmp_path / "calls.log"
    status = "install ok installed" if installed else "unknown ok not-installed"
    _stub(bin_dir, "dpkg-query", f"echo -n '{status}'")
    _stub(bin_dir, "id", f"echo {uid}")
    _stub(bin_dir, "nproc", "echo 3")  # the CPUs this process may use
    _stub(bin_dir, "uv", f'echo "uv $*" >> {log}')
    _stub(bin_dir, "sudo", 'if [ "$1" = -n ]; then exit 0; fi; "$@"' if sudo else "exit 1")
    if apt:
        _stub(bin_dir, "apt-get", f'echo "apt-get $*" >> {log}')
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path), **(environ or {})}
    result = subprocess.run(
        [str(bin_dir / "bash"), str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=60
    )
    calls = log.read_text().splitlines() if log.exists() else []
    return result, calls


def test_packages_present_runs_pytest_with_the_arguments(tmp_path):
    result, calls = _run(tmp_path, installed=True, uid=1000, args=("tests/test_docs.py", "-q"))
    assert result.returncode == 0, result.stderr
    assert calls == [
        COMPILE,
        "uv run --frozen --all-extras pytest -n 3 --dist loadfile --no-loadscope-reorder tests/test_docs.py -q",
    ]


def test_the_worker_count_can_be_set_and_zero_runs_one_process(tmp_path):
    result, calls = _run(tmp_path, installed=True, uid=1000, environ={"IMAGENET_SUITE_TEST_WORKERS": "0"})
    assert result.returncode == 0, result.stderr
    assert calls == [COMPILE, "uv run --frozen --all-extras pytest -n 0 --dist loadfile --no-loadscope-reorder"]


@pytest.mark.parametrize("as_root", [True, False], ids=["root", "passwordless-sudo"])
def test_missing_packages_are_installed_then_pytest_runs(tmp_path, as_root):
    result, calls = _run(tmp_path, installed=False, uid=0 if as_root else 1000, sudo=not as_root)
    assert result.returncode == 0, result.stderr
    assert calls[0] == "apt-get update -qq"
    assert calls[1] == "apt-get install -y -qq --no-install-recommends " + " ".join(PACKAGES)
    assert calls[2:] == [COMPILE, "uv run --frozen --all-extras pytest -n 3 --dist loadfile --no-loadscope-reorder"]


def test_no_root_no_sudo_says_what_to_install_in_one_line(tmp_path):
    result, calls = _run(tmp_path, installed=False, uid=1000, sudo=False)
    assert result.returncode == 1 and calls == []
    assert result.stderr.count("\n") == 1
    assert "sudo apt-get install -y " + " ".join(PACKAGES) in result.stderr


def test_no_apt_says_so_in_one_line(tmp_path):
    result, calls = _run(tmp_path, installed=False, uid=0, apt=False)
    assert result.returncode == 1 and calls == []
    assert result.stderr.count("\n") == 1 and "no apt-get" in result.stderr


def test_ci_and_the_docs_run_exactly_this_script():
    ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    commands = [line.strip() for line in ci.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert "tools/test.sh" in commands and not any(re.match(r"(uv run .*)?pytest\b", line) for line in commands)
    assert os.access(SCRIPT, os.X_OK)
    for doc in ("README.md", "DEVELOPERS.md", "docs/development.md"):
        text = (REPO_ROOT / doc).read_text(encoding="utf-8")
        assert re.search(r"```bash\ntools/test\.sh ", text) or "\ntools/test.sh " in text, doc
        assert "uv run --frozen --all-extras pytest\n" not in text, f"{doc} still documents bare pytest"
