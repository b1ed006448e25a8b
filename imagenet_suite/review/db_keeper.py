"""The keeper of the embedded mongod: one process per data folder, shared by every review process on it.

Started by :func:`imagenet_suite.review.embedded_db.attach` as
``python -m imagenet_suite.review.db_keeper --dbpath DATA --run-dir SOCKETS`` (never by hand). It

1. takes ``SOCKETS/keeper.lock`` (``flock``) for its whole life: one keeper, one mongod per data folder;
2. listens on ``SOCKETS/keeper.sock`` — a review process *attaches* by connecting and keeping the
   connection open for its life (only connections from this user's uid are accepted);
3. starts FiftyOne's ``mongod`` on ``DATA`` listening only on ``SOCKETS/mongodb.sock`` (no TCP port,
   socket mode 0700, in a 0700 folder: :mod:`.private_dir`); mongod gets SIGTERM if the keeper dies;
4. answers each client ``ready`` once mongod accepts connections (``error MESSAGE`` if it cannot start);
5. stops mongod (SIGTERM, a clean shutdown) and exits when the last client's connection closes —
   also when clients are SIGKILLed, since the kernel closes their sockets — or when mongod exits.

This replaces FiftyOne's multi-client database service (``service/main.py --multi``), whose clients
register over a loopback TCP port that unpickles whatever any local user sends.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import fcntl
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

from .embedded_db import KEEPER_LOCK, KEEPER_SOCKET, MONGOD_SOCKET, mongod_command
from .private_dir import check_private

LOCK_TIMEOUT = 120.0  # s to wait for a previous keeper of the same folder to finish stopping its mongod
MONGOD_START_TIMEOUT = 300.0  # s for mongod to accept connections (journal recovery on a busy disk is slow)
IDLE_TIMEOUT = 60.0  # s a keeper waits for its first client before giving up
STOP_TIMEOUT = 60.0  # s for mongod to shut down cleanly before SIGKILL
PR_SET_PDEATHSIG = 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m imagenet_suite.review.db_keeper")
    parser.add_argument("--dbpath", type=Path, required=True)
    parser.add_argument("--run-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    check_private(args.run_dir)
    lock = _acquire_lock(args.run_dir / KEEPER_LOCK, LOCK_TIMEOUT)
    if lock is None:
        print(f"another keeper holds {args.run_dir / KEEPER_LOCK}", file=sys.stderr)
        return 3
    listener = _listen(args.run_dir / KEEPER_SOCKET)
    mongod = _start_mongod(args.dbpath, args.run_dir)
    _log(f"keeper {os.getpid()}: mongod {mongod.pid} on {args.dbpath}, socket {args.run_dir / MONGOD_SOCKET}")
    error = _wait_for_mongod(mongod, args.run_dir / MONGOD_SOCKET, MONGOD_START_TIMEOUT)
    if error:
        _log(error)
        _refuse_waiting_clients(listener, error)
        _stop(listener, args.run_dir / KEEPER_SOCKET, mongod)
        return 1
    try:
        _serve(listener, mongod)
    finally:
        _stop(listener, args.run_dir / KEEPER_SOCKET, mongod)
        _log(f"keeper {os.getpid()}: mongod stopped (exit code {mongod.returncode})")
    return 0


def _log(message: str) -> None:
    print(time.strftime("%Y-%m-%dT%H:%M:%S"), message, file=sys.stderr, flush=True)


def _acquire_lock(path: Path, timeout: float):
    """An open file holding an exclusive flock on ``path``, or None after ``timeout`` seconds."""
    handle = open(path, "a")  # noqa: SIM115 -- returned holding the lock; the caller closes it
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return handle
        except BlockingIOError:
            if time.monotonic() > deadline:
                handle.close()
                return None
            time.sleep(0.2)


def _listen(path: Path) -> socket.socket:
    """The clients' unix socket (a stale file from a killed keeper is replaced: we hold the lock)."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    os.chmod(path, 0o600)
    listener.listen(64)
    return listener


def _start_mongod(dbpath: Path, run_dir: Path) -> subprocess.Popen:
    with contextlib.suppress(FileNotFoundError):
        (run_dir / MONGOD_SOCKET).unlink()  # left by a mongod killed with SIGKILL
    return subprocess.Popen(
        mongod_command(dbpath, run_dir),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        preexec_fn=_die_with_parent,
    )  # stderr: the keeper's log


def _die_with_parent() -> None:
    """In mongod's process before exec: SIGTERM when the keeper dies (Linux prctl), whatever kills it."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _wait_for_mongod(mongod: subprocess.Popen, path: Path, timeout: float) -> str | None:
    """None once mongod accepts connections on ``path``; else a one-line reason."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if mongod.poll() is not None:
            return f"mongod exited with code {mongod.returncode} during startup"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(str(path))
                return None
            except OSError:
                pass
        time.sleep(0.2)
    return f"mongod did not accept connections on {path} within {timeout:.0f} s"


def _same_user(connection: socket.socket) -> bool:
    """Whether the peer of a unix connection runs as this user (SO_PEERCRED: pid, uid, gid)."""
    creds = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1] == os.getuid()


def _serve(listener: socket.socket, mongod: subprocess.Popen) -> None:
    """Accept clients and answer ``ready``; return when the last one has gone, or when mongod exits."""
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    clients = 0
    served = False
    idle_since = time.monotonic()
    while mongod.poll() is None:
        for key, _ in selector.select(timeout=0.5):
            if key.fileobj is listener:
                connection, _ = listener.accept()
                if not _same_user(connection):
                    connection.close()
                    continue
                connection.sendall(b"ready\n")
                selector.register(connection, selectors.EVENT_READ)
                clients, served = clients + 1, True
            elif not _drain(key.fileobj):
                selector.unregister(key.fileobj)
                key.fileobj.close()
                clients -= 1
        if clients == 0 and (served or time.monotonic() - idle_since > IDLE_TIMEOUT):
            break
    for key in list(selector.get_map().values()):
        if key.fileobj is not listener:
            key.fileobj.close()


def _drain(connection: socket.socket) -> bool:
    """Read what a client sent (nothing is expected); False once it has closed the connection."""
    try:
        return bool(connection.recv(4096))
    except OSError:
        return False


def _refuse_waiting_clients(listener: socket.socket, error: str) -> None:
    listener.setblocking(False)
    while True:
        try:
            connection, _ = listener.accept()
        except OSError:
            return
        with connection, contextlib.suppress(OSError):
            connection.sendall(f"error {error}\n".encode())


def _stop(listener: socket.socket, path: Path, mongod: subprocess.Popen) -> None:
    """Stop accepting clients first (a new one then starts a new keeper), then stop mongod cleanly."""
    listener.close()
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    if mongod.poll() is None:
        mongod.terminate()
        try:
            mongod.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            mongod.kill()
            mongod.wait()


if __name__ == "__main__":
    sys.exit(main())
