"""The embedded review database (:mod:`imagenet_suite.review.embedded_db`): FiftyOne's mongod on a private
unix socket, kept by one keeper process per data folder for as long as any client process lives.

Real processes: client processes attach and are SIGKILLed; mongod is probed for TCP sockets and
reached through its socket by pymongo (and, when the tests run as root, refused to another uid).
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from imagenet_suite.review import database, embedded_db, private_dir
from imagenet_suite.review.errors import ReviewError
from tests.fixtures.review_mongo import Mongod
from tests.fixtures.review_process import kill, listening_inet, mongod_socket_folder
from tests.helpers import REPO_ROOT

CLIENT = (
    "import sys, time\nfrom imagenet_suite.review import embedded_db\n"
    "print(embedded_db.attach(sys.argv[1]).socket, flush=True)\ntime.sleep(600)\n"
)


def _client(folder: Path) -> tuple[subprocess.Popen, Path]:
    """A process attached to the embedded mongod of ``folder``; (process, mongod's socket)."""
    process = subprocess.Popen(
        [sys.executable, "-c", CLIENT, str(folder)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    line = process.stdout.readline().strip()
    assert line, f"the client could not attach (exit {process.wait()})"
    return process, Path(line)


def _database_processes(folder: Path) -> list[psutil.Process]:
    """The keepers and mongods of ``folder``."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        args = process.info["cmdline"] or []
        if "--dbpath" in args and args[args.index("--dbpath") + 1] == str(folder):
            found.append(process)
    return found


def _ping(path: Path) -> dict:
    import pymongo

    client = pymongo.MongoClient(database.socket_uri(path), serverSelectionTimeoutMS=10000)
    try:
        return client.admin.command("ping")
    finally:
        client.close()


def test_private_dir_is_made_0700_and_unsafe_ones_are_refused(tmp_path, monkeypatch):
    made = private_dir.private_dir(tmp_path / "new")
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    assert private_dir.private_dir(made) == made  # an existing safe folder is fine
    (tmp_path / "open").mkdir(mode=0o755)
    os.chmod(tmp_path / "open", 0o755)
    with pytest.raises(ReviewError, match="has mode 0755.*chmod 700"):
        private_dir.private_dir(tmp_path / "open")
    (tmp_path / "link").symlink_to(made)
    with pytest.raises(ReviewError, match="must be a folder \\(not a symlink"):
        private_dir.private_dir(tmp_path / "link")
    monkeypatch.setattr(private_dir.os, "getuid", lambda: os.stat(made).st_uid + 1)
    with pytest.raises(ReviewError, match="belongs to uid .* not to you"):
        private_dir.private_dir(made)


def test_socket_folder_is_inside_the_data_folder_unless_the_path_is_too_long(tmp_path):
    assert private_dir.socket_dir(tmp_path / "db") == tmp_path / "db" / "sockets"
    deep = tmp_path / ("d" * 100) / "db"
    fallback = private_dir.socket_dir(deep)
    assert fallback.parent == Path(__import__("tempfile").gettempdir())
    assert fallback.name.startswith(f"imagenet-suite-{os.getuid()}-") and fallback == private_dir.socket_dir(deep)
    assert fallback != private_dir.socket_dir(tmp_path / ("e" * 100) / "db")  # one folder per data folder
    assert len(os.fsencode(fallback / "mongodb.sock")) <= private_dir.SOCKET_PATH_MAX


def test_mongod_listens_only_on_a_private_socket_and_lives_while_a_client_does(tmp_path):
    folder = tmp_path / "db"
    first, path = _client(folder)
    second = None
    try:
        second, same = _client(folder)
        assert same == path
        keeper, mongod = sorted(_database_processes(folder), key=lambda p: p.name() == "mongod")
        assert mongod.name() == "mongod" and mongod.ppid() == keeper.pid
        assert listening_inet(mongod) == [] and listening_inet(keeper) == []  # no TCP port at all
        assert mongod_socket_folder(mongod) == path.parent == folder / "sockets"
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700 and path.parent.stat().st_uid == os.getuid()
        assert stat.S_IMODE(path.stat().st_mode) == 0o700 and stat.S_ISSOCK(path.stat().st_mode)
        if os.getuid() == 0:
            assert _connects_as(65534, path) == "refused"
        assert _ping(path)["ok"] == 1

        first.kill()  # the first client dies: the database stays for the second
        first.wait()
        time.sleep(2)
        assert mongod.is_running() and _ping(path)["ok"] == 1

        second.kill()  # the last client dies: keeper and mongod stop
        second.wait()
        _gone, alive = psutil.wait_procs([keeper, mongod], timeout=60)
        assert not alive and not path.exists()
    finally:
        kill([psutil.Process(p.pid) for p in (first, second) if p is not None and p.poll() is None])
        kill([p for p in _database_processes(folder) if p.is_running()])


def _connects_as(uid: int, path: Path) -> str:
    """Whether a process running as ``uid`` can connect to the unix socket ``path`` (needs root)."""
    pid = os.fork()
    if pid == 0:  # the child: drop to uid, try, report through the exit code
        code = 1
        try:
            os.setgid(uid)
            os.setuid(uid)
            with socket.socket(socket.AF_UNIX) as probe:
                probe.connect(str(path))
            code = 0
        except PermissionError:
            code = 13
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return {0: "connected", 13: "refused"}.get(os.waitstatus_to_exitcode(status), "error")


def test_a_mongod_that_cannot_start_is_one_line(tmp_path):
    folder = tmp_path / "db"
    squatter = Mongod(folder).start()  # holds the folder's mongod.lock
    try:
        with pytest.raises(ReviewError) as error:
            embedded_db.attach(folder, timeout=120)
        message = str(error.value)
        assert "did not start: mongod exited with code" in message and "\n" not in message
    finally:
        squatter.stop()
    time.sleep(0.5)
    assert not [p for p in _database_processes(folder) if p.is_running()]


def test_an_unsafe_socket_folder_is_refused(tmp_path):
    folder = tmp_path / "db"
    (folder / "sockets").mkdir(parents=True)
    os.chmod(folder / "sockets", 0o777)
    with pytest.raises(ReviewError, match="sockets has mode 0777"):
        embedded_db.attach(folder)
    assert not _database_processes(folder)


def test_cli_says_so_in_one_line(tmp_path):
    folder = tmp_path / "db"
    (folder / "sockets").mkdir(parents=True)
    os.chmod(folder / "sockets", 0o755)
    env = {k: v for k, v in os.environ.items() if k != "FIFTYONE_DATABASE_URI"}
    result = subprocess.run(
        [sys.executable, "-m", "imagenet_suite.cli", "review", "status", "any"],
        cwd=REPO_ROOT,
        env={**env, "FIFTYONE_DATABASE_DIR": str(folder), "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("imagenet-suite review: error: ") and "has mode 0755" in result.stderr
