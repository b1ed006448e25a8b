#!/usr/bin/env bash
# THE test command (README, DEVELOPERS.md, .ci/run): installs the system packages the tests need
# when they are missing, then runs the whole suite (or what the arguments select) with pytest:
#   tools/test.sh                          # everything: about 10 minutes on 2 CPU cores
#   tools/test.sh tests/test_docs.py -q    # arguments go to pytest
# System packages (Debian/Ubuntu, through apt-get, as root or with passwordless sudo):
#   wordnet-base     WordNet 3.0 (/usr/share/wordnet), read by the hierarchy and review tests
#   chromium, chromium-driver   headless Chromium that drives the review App tests
# Where they cannot be installed the script says so in one line and exits 1 before running pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(wordnet-base chromium chromium-driver)
missing=()
for package in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "tools/test.sh: the tests need ${missing[*]} (Debian/Ubuntu packages) and this system has no apt-get: install their equivalents by hand" >&2
    exit 1
  fi
  if [ "$(id -u)" -eq 0 ]; then
    as_root=()
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root=(sudo)
  else
    echo "tools/test.sh: the tests need ${missing[*]}; run 'sudo apt-get install -y ${missing[*]}' once (not root, no passwordless sudo)" >&2
    exit 1
  fi
  echo "tools/test.sh: installing ${missing[*]} (apt-get)" >&2
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  if ! "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
    echo "tools/test.sh: apt-get could not install ${missing[*]} (Debian's package names; on Ubuntu install chromium and its driver by hand)" >&2
    exit 1
  fi
fi

if ! command -v uv >/dev/null 2>&1; then
  echo "tools/test.sh: uv is not installed: 'pip install uv' (README, Install)" >&2
  exit 1
fi
# One pytest process per CPU this process may use (pytest-xdist); a test file stays whole on one worker, so its
# module fixtures are built once, in the order tests/conftest.py gives (its slowest files first, not xdist's
# most-tests-first). IMAGENET_SUITE_TEST_WORKERS=N sets the count (0: one process, no workers).
workers="${IMAGENET_SUITE_TEST_WORKERS:-$(nproc 2>/dev/null || echo 1)}"
# The project's own modules compiled once (uv sync --compile-bytecode compiles the installed packages, not this
# checkout's): where PYTHONDONTWRITEBYTECODE is set (CI), every process of the suite would compile them from source
# again (3 s of each worker's collection, 0.2 s of each CLI subprocess). A .pyc older than its source is not used.
uv run --frozen --all-extras python -m compileall -q -j 0 imagenet_suite builders hierarchies tests >/dev/null
exec uv run --frozen --all-extras pytest -n "$workers" --dist loadfile --no-loadscope-reorder "$@"
