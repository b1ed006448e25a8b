"""A guard that catches tests reaching out of the repository into the folder around it.

The test suite must run from a bare ``git clone`` with nothing beside it: every file a test reads lives
in the repository (real artifacts in ``tests/data``, see its README) or is made by the test in a
temporary folder. A test that opens a file in any sibling folder of the checkout passes on a
machine that happens to have that folder and fails everywhere else; this guard makes it fail here.

How: :func:`install` adds a :func:`sys.addaudithook` hook (audit hooks cannot be removed; it stays for
the life of the process). The hook looks only at the events in :data:`WATCHED` (file opens, directory
listings, globbing, copies, links, renames, ``mkdir``/``chdir``, SQLite databases, subprocess command
lines); for every other event it returns after one set lookup, so it costs next to nothing. Each path
argument (str, bytes or os.PathLike; int file descriptors are ignored) is made absolute with
:func:`os.path.abspath` (no :func:`os.path.realpath`: that would stat every component of every open)
and classified by :func:`outside_path`:

* **watched area** -- the folder that contains the repository (``REPO_ROOT.parent``), minus the
  repository itself. That is exactly where a data folder or another checkout beside it would be. Paths anywhere
  else on the machine (``/usr``, ``/etc``, the Python installation, ...) are not this guard's business.
* **exclusions** inside the watched area, for a repository cloned into an unusual place:
  the system temp dir (:func:`tempfile.gettempdir`), ``sys.prefix`` / ``sys.base_prefix`` /
  ``sys.exec_prefix`` (a virtual environment or Python kept beside the checkout), the uv cache
  (``UV_CACHE_DIR``, else ``$XDG_CACHE_HOME/uv``, else ``~/.cache/uv``) and uv's Python installs
  (``UV_PYTHON_INSTALL_DIR``, else ``$XDG_DATA_HOME/uv/python``, else ``~/.local/share/uv/python``).
  When the repository is cloned straight into ``$HOME``, hidden entries of ``$HOME`` (``~/.cache``,
  ``~/.config``, ``~/.local``, ``~/.fiftyone``, ...) are excluded too: that is per-user tool state.
* An exclusion only counts when it lies strictly inside the watched folder. One that *contains* it
  (a clone in ``/tmp/x/repo``: the temp dir ``/tmp`` holds ``/tmp/x``) is dropped, since the tests'
  own temporary files then land outside the watched folder anyway and ``/tmp/x/data`` must still be
  caught. If an exclusion *is* the watched folder (a clone straight into ``/tmp``, or into a virtual
  environment's folder) the guard cannot tell a sibling from scratch space and is off
  (:data:`ACTIVE` is False). It is off as well for a repository at the file-system root (``/repo``:
  everything on the machine would be "beside" it).
* Both the resolved and the as-spelled location of the repository count as "inside" (a checkout
  reached through a symlinked path).

Each hit is recorded with the node id of the test that was running (set by ``tests/conftest.py``
around each test's setup, call and teardown, so module-scoped fixtures count for the test that first
used them; a plain global rather than a contextvar, so background threads of a build count as well).
``conftest.py`` fails that test in its teardown, and fails the session for hits outside any test
(collection, module imports, session teardown).

Not covered: subprocesses (a hit is recorded only for their command line and working directory, not
for what they open), ``os.stat``-style calls (``exists``/``is_dir`` raise no audit event), and
symlinks made before the run (``tests/test_standalone.py`` checks that the repository's tests hold
none; a symlink created during the run is checked by its target).
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]

# event -> indices of its arguments that are paths ("subprocess.Popen" is handled on its own)
WATCHED: dict[str, tuple[int, ...]] = {
    "open": (0,),
    "os.listdir": (0,),
    "os.scandir": (0,),
    "os.chdir": (0,),
    "os.mkdir": (0,),
    "os.link": (0, 1),
    "os.rename": (0, 1),
    "os.remove": (0,),
    "os.rmdir": (0,),
    "glob.glob": (0,),
    "glob.glob/2": (0, 2),  # pathname, recursive, root_dir, dir_fd
    "shutil.copyfile": (0, 1),
    "shutil.copytree": (0, 1),
    "shutil.move": (0, 1),
    "shutil.rmtree": (0,),
    "sqlite3.connect": (0,),
}
SYMLINK = "os.symlink"  # (target, link, dir_fd): a relative target is relative to the link's folder
POPEN = "subprocess.Popen"  # (executable, args, cwd, env)


def _spellings(path: Path) -> set[str]:
    return {os.path.normpath(os.path.abspath(path)), os.path.normpath(os.path.realpath(path))}


def _home() -> str | None:
    try:
        return os.path.normpath(os.path.abspath(os.path.expanduser("~")))
    except Exception:
        return None


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _exclusion_roots() -> list[str]:
    home = os.path.expanduser("~")
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")
    roots = [
        tempfile.gettempdir(),
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        os.environ.get("UV_CACHE_DIR") or os.path.join(cache, "uv"),
        os.environ.get("UV_PYTHON_INSTALL_DIR") or os.path.join(data, "uv", "python"),
    ]
    return sorted({spelling for root in roots if root for spelling in _spellings(Path(root))})


def _layout() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], bool, bool]:
    """(watched parent folders, repository spellings, exclusions strictly inside a parent, hide home dot-entries, active)."""
    repos = tuple(sorted(_spellings(REPO_ROOT) | {os.path.normpath(os.path.abspath(Path(__file__).parents[1]))}))
    parents = tuple(sorted({os.path.dirname(repo) for repo in repos}))
    excluded, active = [], all(os.path.dirname(parent) != parent for parent in parents)
    for root in _exclusion_roots():
        for parent in parents:
            if root == parent:
                active = False  # the repository sits directly in scratch space: siblings are indistinguishable
            elif _under(root, parent) and not any(_under(root, repo) for repo in repos):
                excluded.append(root)
    home = _home()
    return parents, repos, tuple(sorted(set(excluded))), home is not None and home in parents, active


PARENTS, REPOS, EXCLUDED, HIDE_HOME_DOT_ENTRIES, ACTIVE = _layout()
HOME = _home()
_PARENT_PREFIXES = tuple(parent.rstrip(os.sep) + os.sep for parent in PARENTS)  # strictly below a parent
_REPO_PREFIXES = tuple(repo.rstrip(os.sep) + os.sep for repo in REPOS)
_EXCLUDED_PREFIXES = tuple(root.rstrip(os.sep) + os.sep for root in EXCLUDED)

current_test = "<collection>"  # set by tests/conftest.py
hits: list[tuple[str, str, str]] = []  # (test node id, event, path)
_lock = threading.Lock()


def _as_str(path) -> str | None:
    if isinstance(path, str):
        return path
    if isinstance(path, bytes):
        return os.fsdecode(path)
    if isinstance(path, os.PathLike):
        value = os.fspath(path)
        return os.fsdecode(value) if isinstance(value, bytes) else value
    return None  # int file descriptors, None, ...


def outside_path(path, start: str | None = None) -> str | None:
    """The absolute, normalised ``path`` if it lies beside the repository (see the module docstring), else None.

    ``start`` is the folder a relative ``path`` is relative to (default: the current directory).
    """
    text = _as_str(path)
    if not text or "\0" in text:
        return None
    if start is not None and not os.path.isabs(text):
        text = os.path.join(start, text)
    full = os.path.abspath(text)  # normalised too
    if not ACTIVE or not full.startswith(_PARENT_PREFIXES):
        return None
    if full in REPOS or full.startswith(_REPO_PREFIXES):
        return None
    if full in EXCLUDED or full.startswith(_EXCLUDED_PREFIXES):
        return None
    if HIDE_HOME_DOT_ENTRIES and full.startswith(HOME.rstrip(os.sep) + os.sep + "."):
        return None
    return full


def _record(event: str, path) -> None:
    found = outside_path(path)
    if found is not None:
        with _lock:
            hits.append((current_test, event, found))


def _popen(args: tuple) -> None:
    _executable, argv, cwd, _env = args
    start = _as_str(cwd) if cwd is not None else None
    if start is not None:
        _record(POPEN, start)
    if isinstance(argv, (str, bytes, os.PathLike)):
        argv = [argv]
    for arg in argv or ():
        text = _as_str(arg)
        if text is None:
            continue
        if text.startswith("-") and "=" in text:
            text = text.split("=", 1)[1]  # --manual-dir=/path
        if text.startswith((os.sep, ".." + os.sep)):
            found = outside_path(text, start)
            if found is not None:
                with _lock:
                    hits.append((current_test, POPEN, found))


def _hook(event: str, args: tuple) -> None:
    indices = WATCHED.get(event)
    if indices is None and event != SYMLINK and event != POPEN:
        return
    try:
        if indices is not None:
            for i in indices:
                if i < len(args):
                    _record(event, args[i])
        elif event == SYMLINK:
            target, link = _as_str(args[0]), _as_str(args[1])
            if target is not None and link is not None:
                _record(event, link)
                found = outside_path(target, os.path.dirname(os.path.abspath(link)))
                if found is not None:
                    with _lock:
                        hits.append((current_test, event, found))
        else:
            _popen(args)
    except Exception:
        pass


_installed = False


def install() -> None:
    """Add the audit hook (once per process)."""
    global _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True


def take(test: str | None = None) -> list[tuple[str, str, str]]:
    """Remove and return the recorded hits of ``test`` (all hits when None)."""
    with _lock:
        mine = [hit for hit in hits if test is None or hit[0] == test]
        hits[:] = [hit for hit in hits if not (test is None or hit[0] == test)]
    return mine


def describe(found: list[tuple[str, str, str]]) -> str:
    lines = [f"  {test}: {event} {path}" for test, event, path in found]
    return (
        "paths outside the repository (tests must read only what the repository holds; real artifacts "
        "go in tests/data with their provenance, see tests/data/README.md):\n" + "\n".join(lines)
    )
