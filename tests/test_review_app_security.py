"""The App started by ``imagenet-suite review open`` (a real subprocess), probed over HTTP like an attacker would.

Only the printed token URL lets a client in (it sets the cookie, then the page loads); a foreign
``Host`` (DNS rebinding) is refused; ``/media`` serves the dataset's images and nothing else — not
``/etc/passwd``, not a file beside the cache, not a symlink in the cache pointing out — even with
the cookie. Error answers carry no stack (a ``..`` path, a websocket upgrade). The embedded mongod listens on no TCP port, only on a unix socket in a 0700 folder; the
token is in no command line. A SIGTERM stops the whole tree.
"""

from __future__ import annotations

import http.client
import os
import signal
import stat
from pathlib import Path
from urllib.parse import quote, urlsplit

import psutil

from imagenet_suite.review.app import free_port
from imagenet_suite.review.app_page import BODY_SETTINGS, HEAD_SETTINGS
from tests.fixtures.review_datasets import build_tiny_ood
from tests.fixtures.review_process import (
    ReviewProcess,
    kill,
    listening_inet,
    mongod_socket_folder,
    review_env,
    token_of,
)


class Probe:
    """HTTP/1.1 requests to the App with exactly the headers given (plus a Host unless one is given)."""

    def __init__(self, port: int):
        self.port = port
        self.cookie: str | None = None

    def get(self, target: str, headers: dict[str, str] | None = None, method: str = "GET", body: bytes | None = None):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        headers = dict(headers or {})
        if self.cookie and "Cookie" not in headers:
            headers["Cookie"] = self.cookie
        try:
            connection.putrequest(method, target, skip_host="Host" in headers)
            for name, value in headers.items():
                connection.putheader(name, value)
            connection.endheaders(body)
            reply = connection.getresponse()
            return reply.status, dict(reply.getheaders()), reply.read()
        finally:
            connection.close()


def test_the_app_lets_in_only_the_token_holder_and_serves_only_review_files(tmp_path):
    folder = build_tiny_ood(tmp_path / "out")
    port = free_port()
    review = ReviewProcess([str(folder), "--port", str(port)], review_env(tmp_path), tmp_path / "review-open.log")
    processes = []
    try:
        url = review.wait_for_url()
        processes = review.tree()
        token, page = token_of(url), urlsplit(url).path
        probe = Probe(port)

        for target, method in [
            ("/", "GET"),
            ("/fiftyone", "GET"),
            ("/graphql", "POST"),
            (page, "GET"),
            (f"/media?filepath={quote('/etc/passwd')}", "GET"),
        ]:
            assert probe.get(target, method=method, body=b"{}" if method == "POST" else None)[0] == 403, target
        assert probe.get(f"/fiftyone?token={token}", {"Host": "attacker.example"})[0] == 403  # DNS rebinding
        assert probe.get(f"/fiftyone?token={token}", {"Host": f"attacker.example:{port}"})[0] == 403

        status, headers, _ = probe.get(urlsplit(url).path + "?" + urlsplit(url).query)  # the printed URL
        assert status == 302 and headers["location"] == f"{page}?view=unreviewed"  # no outputs: no candidates view
        cookie = headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and token not in cookie
        probe.cookie = cookie.split(";")[0]
        status, _, html = probe.get(page)
        assert status == 200 and b"<html" in html.lower()
        assert HEAD_SETTINGS in html and BODY_SETTINGS in html  # the review's page: pop-over off, how-to line
        assert probe.get("/fiftyone")[0] == 200
        assert probe.get("/fiftyone", {"Host": "attacker.example", "Cookie": probe.cookie})[0] == 403
        _assert_errors_carry_no_stack(probe)

        images = sorted((tmp_path / "cache").rglob("*.png"))
        assert images, "review open materialised no image"
        status, _, data = probe.get(f"/media?filepath={quote(str(images[0]))}")
        assert status == 200 and data == images[0].read_bytes()
        (tmp_path / "secret.txt").write_text("not for the App")
        images[0].parent.joinpath("escape.png").symlink_to(tmp_path / "secret.txt")
        for path in [
            "/etc/passwd",
            str(tmp_path / "secret.txt"),
            str(images[0].parent / "escape.png"),
            str(images[0].parent / ".." / ".." / ".." / ".." / "secret.txt"),
        ]:
            status, _, data = probe.get(f"/media?filepath={quote(path)}")
            assert status in (403, 404) and b"not for the App" not in data and b"root:" not in data, path

        _assert_database_has_no_tcp_port(processes, port, token)
    finally:
        if review.process.poll() is None:
            review.process.send_signal(signal.SIGTERM)  # a clean stop: the App server and mongod follow
            review.process.wait(60)
        _, alive = psutil.wait_procs([p for p in processes if p.is_running()], timeout=60)
        kill(alive)
        kill([psutil.Process(review.process.pid)] if review.process.poll() is None else [])
        assert not alive, f"left running after SIGTERM: {[p.cmdline()[:4] for p in alive]}"


def _assert_errors_carry_no_stack(probe: Probe) -> None:
    """With the cookie: a ``..`` path is refused (400; it was FiftyOne's 500 with the traceback), a file the
    /plugins mount cannot serve shows no stack, and a websocket upgrade is refused (403; it was a 500)."""
    status, _, body = probe.get("/plugins/../..")
    assert status == 400 and b"Traceback" not in body
    status, _, body = probe.get("/plugins/none/index.js")
    assert b"Traceback" not in body and b'File "' not in body, (status, body[:300])
    upgrade = {
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    }
    for target in ("/graphql", "/"):
        status, _, body = probe.get(target, upgrade)
        assert status == 403 and b"Traceback" not in body, (target, status, body[:300])


def _assert_database_has_no_tcp_port(processes, port: int, token: str) -> None:
    mongod = next(p for p in processes if p.name() == "mongod")
    assert listening_inet(mongod) == []
    listening = [(a.ip, a.port) for p in processes for a in listening_inet(p)]
    assert listening == [("127.0.0.1", port)], listening
    folder: Path = mongod_socket_folder(mongod)
    info = folder.stat()
    assert stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == os.getuid()
    assert not any(token in " ".join(p.cmdline()) for p in processes)
