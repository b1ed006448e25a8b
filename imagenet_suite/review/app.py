"""Serve the FiftyOne App on loopback for one dataset, behind the review guard.

The server is :mod:`.app_server` — FiftyOne's own server app (the App's static files come from the
installed wheel: no internet needed) wrapped in :class:`.app_guard.ReviewGuard` — bound to
``127.0.0.1`` and started through FiftyOne's service wrapper (``fiftyone/service/main.py``), which
stops it when this process exits, even on SIGKILL. It reaches the database through
``FIFTYONE_DATABASE_URI`` set by :mod:`.database` (journaled writes).

Each launch makes a session token; the dataset opens at
``http://127.0.0.1:<port>/datasets/<name>?view=<saved view>&token=<token>`` (:meth:`AppServer.url`),
which trades the token for a cookie. The token reaches the server through its environment, never its argv.
"""

from __future__ import annotations

import errno
import http.client
import json
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from ..errors import param
from .app_guard import Session
from .app_server import TOKEN_ENV
from .errors import ReviewError

ADDRESS = "127.0.0.1"
START_TIMEOUT = 300.0  # seconds for the server to answer (it imports FiftyOne: slow on a busy machine)
SERVICE_NAME = "imagenet-suite-app"  # the --51-service name of FiftyOne's service wrapper
_PACKAGE_PARENT = Path(__file__).resolve().parents[2]  # the server runs `-m imagenet_suite...` from here


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((ADDRESS, 0))
        return sock.getsockname()[1]


def check_port(port: int) -> None:
    """ReviewError if ``port`` cannot be bound on loopback (another program, or an App, holds it)."""
    if not 0 < port < 65536:
        raise ReviewError(f"{param('port')} {port}: expected 1..65535")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((ADDRESS, port))
        except OSError as err:
            reason = "is in use" if err.errno == errno.EADDRINUSE else f"cannot be bound ({err.strerror})"
            raise ReviewError(
                f"port {port} on {ADDRESS} {reason}; pass another {param('port')}, or none for a free one"
            ) from err


@dataclass
class AppServer:
    """A running App server; :meth:`stop` ends it."""

    session: Session
    service: object

    @property
    def port(self) -> int:
        return self.session.port

    @property
    def base_url(self) -> str:
        return f"http://{ADDRESS}:{self.port}"

    def url(self, dataset_name: str, view_slug: str | None = None) -> str:
        """The dataset's App URL, with the session token (what the reviewer opens).

        ``view_slug``: the saved view the App opens on (FiftyOne's ``?view=<slug>``; the guard's
        redirect that drops the token keeps it), else the whole dataset.
        """
        view = f"view={quote(view_slug)}&" if view_slug else ""
        return f"{self.base_url}/datasets/{quote(dataset_name)}?{view}token={self.session.token}"

    def running(self) -> bool:
        return self.service.child.poll() is None

    def stop(self) -> None:
        if self.running():
            self.service.stop()

    def get(self, path: str, timeout: float = 5.0) -> tuple[int, bytes]:
        """(status, body) of ``GET path`` with the token in the ``Authorization`` header."""
        connection = http.client.HTTPConnection(ADDRESS, self.port, timeout=timeout)
        try:
            connection.request("GET", path, headers={"Authorization": f"token {self.session.token}"})
            reply = connection.getresponse()
            return reply.status, reply.read()
        finally:
            connection.close()

    def wait_until_up(self, timeout: float = START_TIMEOUT) -> None:
        """Return once the server answers ``/fiftyone``; ReviewError (server stopped) if it exits or times out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running():
                raise ReviewError(
                    f"the FiftyOne App server on port {self.port} exited during startup "
                    f"(exit code {self.service.child.poll()})"
                )
            try:
                status, body = self.get("/fiftyone", timeout=2)
                if status == 200 and "version" in json.loads(body):
                    return
            except (OSError, http.client.HTTPException, ValueError):
                pass
            time.sleep(0.5)
        self.stop()
        raise ReviewError(f"the FiftyOne App server did not answer on {self.base_url} within {timeout:.0f} s")


def server_command(port: int, media_roots: Iterable[str | Path]) -> list[str]:
    """The App server's command line (no secret in it: ``ps`` shows it to every user)."""
    return [
        sys.executable,
        "-m",
        "imagenet_suite.review.app_server",
        "--port",
        str(port),
        "--address",
        ADDRESS,
        *(f"--media-root={root}" for root in media_roots),
    ]


def launch_app(port: int | None = None, media_roots: Iterable[str | Path] = ()) -> AppServer:
    """Start the App server on ``127.0.0.1:port`` (a free port if None) without waiting for it.

    ``media_roots``: the folders whose files the App may serve (:mod:`.media_paths`). Call after
    :func:`imagenet_suite.review.database.connect` (the server inherits the database). Raises
    ReviewError if the port is taken. Follow with :meth:`AppServer.wait_until_up`.
    """
    port = free_port() if port is None else port
    check_port(port)
    session = Session(port, secrets.token_urlsafe(32))
    service = _service_class()(
        server_command(port, media_roots), {TOKEN_ENV: session.token, "FIFTYONE_DO_NOT_TRACK": "1"}
    )
    if service.child is None:
        raise ReviewError(
            "FiftyOne services are disabled here (FIFTYONE_DISABLE_SERVICES or FIFTYONE_HEADLESS "
            "is set): unset it to serve the App"
        )
    return AppServer(session, service)


# Runs FiftyOne's wrapper script (argv[1]) as `python main.py ARGS` would, except that its one import,
# fiftyone.service.ipc, does not first run fiftyone/__init__.py (all of FiftyOne: seconds of CPU while the App
# server and the review start, and again to tear it down at exit): `fiftyone` is a bare package module there.
_LIGHT_WRAPPER = (
    "import importlib.util, os, runpy, sys, types\n"
    "package = types.ModuleType('fiftyone')\n"
    "package.__path__ = list(importlib.util.find_spec('fiftyone').submodule_search_locations)\n"
    "sys.modules['fiftyone'] = package\n"
    "sys.argv = sys.argv[1:]\n"
    "sys.path[0] = os.path.dirname(sys.argv[0])\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)


def _service_class():
    """FiftyOne's single-client service wrapper around :mod:`.app_server` (class made lazily: imports FiftyOne)."""
    import fiftyone.core.service as fos
    import psutil

    class GuardedAppService(fos.Service):
        """Runs ``command`` under ``fiftyone/service/main.py``, which ends it when this process dies."""

        service_name = SERVICE_NAME
        working_dir = str(_PACKAGE_PARENT)
        allow_headless = True

        def __init__(self, command: list[str], env: dict[str, str]):
            self._command, self._env = command, env
            super().__init__()

        @property
        def command(self):
            return self._command

        @property
        def env(self):
            return self._env

        def start(self):
            """:meth:`fos.Service.start` (same script, arguments, folder and environment), through :data:`_LIGHT_WRAPPER`."""
            script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(fos.__file__))), "service", "main.py")
            self.child = psutil.Popen(
                [sys.executable, "-c", _LIGHT_WRAPPER, script, *self._service_args, *self.command],
                cwd=self.working_dir,
                stdin=subprocess.PIPE,
                env={**os.environ, "FIFTYONE_DISABLE_SERVICES": "1", **self.env},
            )

    return GuardedAppService


def start_app(
    port: int | None = None, timeout: float = START_TIMEOUT, media_roots: Iterable[str | Path] = ()
) -> AppServer:
    """:func:`launch_app` and wait until the App answers."""
    server = launch_app(port, media_roots)
    server.wait_until_up(timeout)
    return server
