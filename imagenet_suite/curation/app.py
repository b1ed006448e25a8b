"""Serve the FiftyOne App on loopback for one dataset.

The App is FiftyOne's own server (``fiftyone/server/main.py``, serving the App's static files from
the installed wheel: no internet needed), bound to ``127.0.0.1`` and started through FiftyOne's
service wrapper, which stops it when this process exits — even on SIGKILL. It reaches the database
through ``FIFTYONE_DATABASE_URI`` set by :mod:`.database` (journaled writes). The dataset opens at
``http://127.0.0.1:<port>/datasets/<name>``.
"""

from __future__ import annotations

import errno
import json
import socket
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from urllib.parse import quote

from .errors import ReviewError

ADDRESS = "127.0.0.1"
START_TIMEOUT = 300.0  # seconds for the server to answer (it imports FiftyOne: slow on a busy machine)


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((ADDRESS, 0))
        return sock.getsockname()[1]


def check_port(port: int) -> None:
    """ReviewError if ``port`` cannot be bound on loopback (another program, or an App, holds it)."""
    if not 0 < port < 65536:
        raise ReviewError(f"--port {port}: expected 1..65535")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((ADDRESS, port))
        except OSError as err:
            reason = "is in use" if err.errno == errno.EADDRINUSE else f"cannot be bound ({err.strerror})"
            raise ReviewError(f"port {port} on {ADDRESS} {reason}; pass another --port, or none for a free one") from None


@dataclass
class AppServer:
    """A running App server; :meth:`stop` ends it."""

    port: int
    service: object

    @property
    def base_url(self) -> str:
        return f"http://{ADDRESS}:{self.port}"

    def url(self, dataset_name: str) -> str:
        return f"{self.base_url}/datasets/{quote(dataset_name)}"

    def running(self) -> bool:
        return self.service.child.poll() is None

    def stop(self) -> None:
        if self.running():
            self.service.stop()

    def wait_until_up(self, timeout: float = START_TIMEOUT) -> None:
        """Return once the server answers ``/fiftyone``; ReviewError (server stopped) if it exits or times out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running():
                raise ReviewError(f"the FiftyOne App server on port {self.port} exited during startup "
                                  f"(exit code {self.service.child.poll()})")
            try:
                with urllib.request.urlopen(f"{self.base_url}/fiftyone", timeout=2) as reply:
                    if "version" in json.loads(reply.read()):
                        return
            except (urllib.error.URLError, OSError, ValueError):
                pass
            time.sleep(0.5)
        self.stop()
        raise ReviewError(f"the FiftyOne App server did not answer on {self.base_url} within {timeout:.0f} s")


def launch_app(port: int | None = None) -> AppServer:
    """Start the App server on ``127.0.0.1:port`` (a free port if None) without waiting for it.

    Call after :func:`imagenet_suite.curation.database.connect` (the server inherits the database).
    Raises ReviewError if the port is taken. Follow with :meth:`AppServer.wait_until_up`.
    """
    import fiftyone.core.service as fos

    port = free_port() if port is None else port
    check_port(port)

    class _Server(fos.ServerService):
        def start(self):  # no attach-to-whatever-answers, no fixed 60 s port wait: we poll ourselves
            fos.Service.start(self)

    return AppServer(port, _Server(port, address=ADDRESS, do_not_track=True))


def start_app(port: int | None = None, timeout: float = START_TIMEOUT) -> AppServer:
    """:func:`launch_app` and wait until the App answers."""
    server = launch_app(port)
    server.wait_until_up(timeout)
    return server
