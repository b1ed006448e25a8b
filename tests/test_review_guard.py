"""The review App's guard (:mod:`imagenet_suite.review.app_guard`) in process, around a stand-in for FiftyOne's app.

The stand-in echoes what reaches it (path, query, body) and serves ``/media?filepath=`` like
FiftyOne does (any file), so each test shows what the guard lets through. Host allowlist, token ->
cookie -> redirect, 403 without, Origin, websockets, ``/media`` roots (``..``, symlinks), the
``list_files`` operator, lifespan; error pages without a stack (debug off, 5xx bodies replaced, ``..``
segments refused, a websocket the app fails on closed). And the App's page as the review serves it
(:mod:`imagenet_suite.review.app_page`): FiftyOne's installed ``index.html`` with the pop-over off.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.testclient import TestClient
from starlette.websockets import WebSocket, WebSocketDisconnect

from imagenet_suite.review.app_guard import ReviewGuard, Session
from imagenet_suite.review.app_page import (
    BODY_SETTINGS,
    ENTERPRISE_BUTTON_ID,
    ENTERPRISE_POPOVER_KEY,
    HEAD_SETTINGS,
    ReviewPage,
    with_settings,
)
from imagenet_suite.review.media_paths import MediaRoots, outermost

PORT = 5151
TOKEN = "t0k3n-" + "x" * 40
BASE = f"http://127.0.0.1:{PORT}"
SESSION = Session(PORT, TOKEN)
AUTH = {"Authorization": f"token {TOKEN}"}


async def _echo(request: Request):
    return JSONResponse(
        {
            "path": request.url.path,
            "query": list(request.query_params.multi_items()),
            "body": (await request.body()).decode(),
        }
    )


async def _media(request: Request):  # FiftyOne's /media: whatever file is named
    return FileResponse(request.query_params["filepath"])


async def _socket(websocket: WebSocket):
    await websocket.accept()
    await websocket.send_text("hello")
    await websocket.close()


def _fiftyone_stand_in(events: list[str] | None = None) -> Starlette:
    @contextlib.asynccontextmanager
    async def lifespan(app):
        if events is not None:
            events.append("startup")
        yield
        if events is not None:
            events.append("shutdown")

    return Starlette(
        lifespan=lifespan,
        routes=[
            Route("/media", _media),
            Route("/operators/execute", _echo, methods=["POST"]),
            Route("/graphql", _echo, methods=["GET", "POST"]),
            WebSocketRoute("/ws", _socket),
            Route("/{rest:path}", _echo, methods=["GET", "HEAD", "POST"]),
        ],
    )


@pytest.fixture()
def roots(tmp_path):
    """cache/ (allowed, with an image), media/ (allowed), outside/ (not), and a secret outside."""
    for name in ("cache/ds/split", "media", "outside"):
        (tmp_path / name).mkdir(parents=True)
    (tmp_path / "cache/ds/split/a.png").write_bytes(b"PNG-a")
    (tmp_path / "media/b.jpg").write_bytes(b"JPG-b")
    (tmp_path / "outside/secret.txt").write_text("secret")
    return tmp_path


def _client(tmp_path, **kwargs) -> TestClient:
    media = MediaRoots([tmp_path / "cache", tmp_path / "media"])
    return TestClient(ReviewGuard(_fiftyone_stand_in(), SESSION, media), base_url=BASE, **kwargs)


def _with_cookie(client: TestClient) -> TestClient:
    reply = client.get(f"/fiftyone?token={TOKEN}", follow_redirects=False)
    assert reply.status_code == 302
    return client


@pytest.mark.parametrize("host", [f"127.0.0.1:{PORT}", f"localhost:{PORT}", f"[::1]:{PORT}", f"LOCALHOST:{PORT}"])
def test_hosts_of_this_app_are_served(roots, host):
    assert _client(roots).get("/fiftyone", headers={**AUTH, "Host": host}).status_code == 200


@pytest.mark.parametrize(
    "host",
    [
        "attacker.example",
        f"attacker.example:{PORT}",
        "127.0.0.1",
        f"127.0.0.1:{PORT + 1}",
        f"127.0.0.1:{PORT}.attacker.example",
        f"0.0.0.0:{PORT}",
        "",
    ],
)
def test_other_hosts_are_refused_even_with_the_token(roots, host):
    """403, as docs/review.md promises (a DNS-rebinding page's request is well-formed HTTP, just not for us)."""
    reply = _client(roots).get(f"/fiftyone?token={TOKEN}", headers={"Host": host}, follow_redirects=False)
    assert reply.status_code == 403 and reply.text.startswith("403: unexpected Host header")
    assert "set-cookie" not in reply.headers


def test_port_80_hosts_may_omit_the_port():
    assert Session(80, TOKEN).hosts == {"127.0.0.1:80", "localhost:80", "[::1]:80", "127.0.0.1", "localhost", "[::1]"}
    assert "http://localhost" in Session(80, TOKEN).origins and "127.0.0.1" not in SESSION.hosts


def test_missing_or_repeated_host_is_refused(roots):
    """Malformed HTTP (RFC 9112 3.2: a server answers 400 to no Host or several)."""
    app = ReviewGuard(_fiftyone_stand_in(), SESSION, MediaRoots([]))
    for headers in ([], [(b"host", f"127.0.0.1:{PORT}".encode())] * 2):
        assert _raw_get(app, "/fiftyone", headers + [(b"authorization", f"token {TOKEN}".encode())])["status"] == 400


def _raw_get(app, path: str, headers, query: bytes = b"") -> dict:
    """The response start of a GET with exactly this path and these headers (the test client always
    adds one Host, and reads ``//x`` as a host name)."""
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", PORT),
    }
    asyncio.run(app(scope, receive, send))
    return sent[0]


def test_token_buys_a_cookie_and_a_redirect_without_it(roots):
    client = _client(roots)
    reply = client.get(f"/datasets/ninco-1.0.0?token={TOKEN}&view=unreviewed", follow_redirects=False)
    assert reply.status_code == 302
    assert reply.headers["location"] == "/datasets/ninco-1.0.0?view=unreviewed"
    cookie = reply.headers["set-cookie"]
    name, value = cookie.split(";")[0].split("=", 1)
    assert name == f"imagenet-suite-review-{PORT}" and value == SESSION.cookie_value and TOKEN not in cookie
    assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= {a.strip() for a in cookie.split(";")[1:]}
    page = client.get(reply.headers["location"])  # the cookie is sent from now on
    assert page.status_code == 200 and page.json()["path"] == "/datasets/ninco-1.0.0"
    assert client.post("/graphql", content=b"{}").status_code == 200


def test_redirect_never_leaves_the_server(roots):
    app = ReviewGuard(_fiftyone_stand_in(), SESSION, MediaRoots([]))
    start = _raw_get(app, "//attacker.example/x", [(b"host", f"127.0.0.1:{PORT}".encode())], f"token={TOKEN}".encode())
    assert start["status"] == 302 and dict(start["headers"])[b"location"] == b"/attacker.example/x"


def test_token_on_a_post_is_accepted_and_sets_the_cookie(roots):
    reply = _client(roots).post(f"/graphql?token={TOKEN}", content=b"{}")
    assert reply.status_code == 200 and reply.headers["set-cookie"].startswith(f"imagenet-suite-review-{PORT}=")


@pytest.mark.parametrize(
    "method,path",
    [
        ("GET", "/"),
        ("GET", "/fiftyone"),
        ("POST", "/graphql"),
        ("GET", "/media?filepath=x"),
        ("GET", "/assets/index.js"),
        ("GET", "/datasets/x"),
        ("POST", "/operators/execute"),
    ],
)
def test_everything_needs_the_token_or_cookie(roots, method, path):
    client = _client(roots)
    assert client.request(method, path, follow_redirects=False).status_code == 403
    assert client.request(method, path + ("&" if "?" in path else "?") + "token=wrong").status_code == 403
    client.cookies.set(SESSION.cookie_name, "0" * 64)
    assert client.request(method, path).status_code == 403
    client.cookies.set(SESSION.cookie_name, TOKEN)  # the token is not the cookie
    assert client.request(method, path).status_code == 403
    client.cookies.set(f"imagenet-suite-review-{PORT + 1}", SESSION.cookie_value)  # another App's name
    client.cookies.delete(SESSION.cookie_name)
    assert client.request(method, path).status_code == 403


def test_authorization_header_works_like_the_cookie(roots):
    client = _client(roots)
    assert client.get("/fiftyone", headers={"Authorization": f"Token {TOKEN}"}).status_code == 200
    assert client.get("/fiftyone", headers={"Authorization": "token nope"}).status_code == 403
    assert client.get("/fiftyone", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 403


def test_cross_origin_requests_are_refused(roots):
    client = _with_cookie(_client(roots))
    assert client.post("/graphql", content=b"{}", headers={"Origin": "http://attacker.example"}).status_code == 403
    assert client.post("/graphql", content=b"{}", headers={"Origin": "null"}).status_code == 403
    assert client.post("/graphql", content=b"{}", headers={"Origin": f"http://localhost:{PORT}"}).status_code == 200


def test_websockets_need_the_cookie_and_a_good_host(roots):
    client = _client(roots)
    host = {"Host": f"127.0.0.1:{PORT}"}  # the test client's websockets use neither base_url nor its cookies
    with pytest.raises(WebSocketDisconnect) as refused, client.websocket_connect("/ws", headers=host) as socket:
        socket.receive_text()
    assert refused.value.code == 1008 and "token" in refused.value.reason
    host["Cookie"] = f"{SESSION.cookie_name}={SESSION.cookie_value}"
    with client.websocket_connect("/ws", headers=host) as socket:
        assert socket.receive_text() == "hello"
    for headers, reason in (
        ({"Host": "attacker.example"}, "Host"),
        ({**host, "Origin": "http://attacker.example"}, "cross-origin"),
    ):
        with pytest.raises(WebSocketDisconnect) as refused, client.websocket_connect("/ws", headers=headers) as socket:
            socket.receive_text()
        assert reason in refused.value.reason


def test_media_serves_only_files_under_the_roots(roots):
    client = _with_cookie(_client(roots))
    image = roots / "cache/ds/split/a.png"
    assert client.get("/media", params={"filepath": str(image)}).content == b"PNG-a"
    assert client.get("/media", params={"filepath": str(roots / "media/b.jpg")}).content == b"JPG-b"
    for path in [
        "/etc/passwd",
        str(roots / "outside/secret.txt"),
        str(roots / "cache/../outside/secret.txt"),
        str(roots / "cache/ds/split/../../../outside/secret.txt"),
        str(roots / "cache-evil/x"),
        "cache/ds/split/a.png",
        "a.png\x00",
        "",
    ]:
        assert client.get("/media", params={"filepath": path}).status_code in (400, 403), path
    both = f"/media?filepath={image}&filepath=/etc/passwd"
    assert client.get(both).status_code == 403
    assert client.get("/media/", params={"filepath": "/etc/passwd"}).status_code == 403


def test_media_symlinks_are_judged_by_their_target(roots):
    client = _with_cookie(_client(roots))
    (roots / "cache/ds/split/evil.png").symlink_to("/etc/passwd")
    (roots / "cache/ds/split/out").symlink_to(roots / "outside")
    (roots / "media/fine.png").symlink_to(roots / "cache/ds/split/a.png")
    assert client.get("/media", params={"filepath": str(roots / "cache/ds/split/evil.png")}).status_code == 403
    assert client.get("/media", params={"filepath": str(roots / "cache/ds/split/out/secret.txt")}).status_code == 403
    assert client.get("/media", params={"filepath": str(roots / "media/fine.png")}).content == b"PNG-a"


def test_media_hands_fiftyone_the_checked_path(roots):
    seen = []

    async def recording(scope, receive, send):
        seen.append(scope["query_string"])
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    client = TestClient(ReviewGuard(recording, SESSION, MediaRoots([roots / "cache"])), base_url=BASE)
    (roots / "cache/link.png").symlink_to(roots / "cache/ds/split/a.png")
    client.get("/media", params={"filepath": str(roots / "cache/ds/../link.png"), "other": "1"}, headers=AUTH)
    assert seen == [f"filepath={os.path.realpath(roots / 'cache/ds/split/a.png')}".replace("/", "%2F").encode()]


def test_list_files_operator_only_lists_review_folders(roots):
    client = _with_cookie(_client(roots))

    def call(uri: str, params: dict):
        return client.post("/operators/execute", content=json.dumps({"operator_uri": uri, "params": params}))

    assert call("@voxel51/operators/list_files", {"path": "/etc"}).status_code == 403
    assert call("@voxel51/operators/list_files", {"path": str(roots / "cache/../outside")}).status_code == 403
    allowed = call("@voxel51/operators/list_files", {"path": str(roots / "cache")})
    assert allowed.status_code == 200 and json.loads(allowed.json()["body"])["params"]["path"] == str(roots / "cache")
    assert call("@voxel51/operators/list_files", {"list_filesystems": True}).status_code == 200
    other = call("@voxel51/operators/list_saved_views", {"path": "/etc"})  # not a file operator: untouched
    assert other.status_code == 200 and json.loads(other.json()["body"])["params"] == {"path": "/etc"}


def test_lifespan_passes_through(roots):
    events: list[str] = []
    with TestClient(ReviewGuard(_fiftyone_stand_in(events), SESSION, MediaRoots([])), base_url=BASE):
        assert events == ["startup"]
    assert events == ["startup", "shutdown"]


def test_media_roots_and_outermost(tmp_path):
    (tmp_path / "a/b").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "a")
    roots = MediaRoots([tmp_path / "link"])  # a root that is a symlink counts as its target
    assert roots.resolve(str(tmp_path / "a/b/c.png")) == str(tmp_path / "a/b/c.png")
    assert roots.resolve(str(tmp_path / "a")) == str(tmp_path / "a")
    assert roots.resolve(str(tmp_path / "ab")) is None and roots.resolve(str(tmp_path)) is None
    assert outermost([tmp_path / "a/b", tmp_path / "a", tmp_path / "x", tmp_path / "a/b/c"]) == [
        tmp_path / "a",
        tmp_path / "x",
    ]


# -- error pages carry no stack -------------------------------------------------------------------------------


def _failing_app(static: os.PathLike) -> Starlette:
    """FiftyOne's app as it fails: made with ``debug=True``; a route that raises, one that answers its
    error as ``{"kind": ..., "stack": traceback}`` (fiftyone/server/decorators.py), and the static mount
    at ``/`` that asserts on a websocket."""

    async def raising(request: Request):
        raise RuntimeError("secret detail of the server")

    async def stack_in_json(request: Request):
        return JSONResponse({"kind": "Server Error", "stack": 'Traceback (most recent call last):\n  File "x.py"'}, 500)

    async def teapot(request: Request):
        return JSONResponse({"detail": "Malformed JSON body"}, 418)

    return Starlette(
        debug=True,
        routes=[
            Route("/boom", raising, methods=["GET", "POST"]),
            Route("/stack", stack_in_json, methods=["GET", "POST"]),
            Route("/teapot", teapot),
            Mount("/", app=StaticFiles(directory=static, html=True)),
        ],
    )


def test_the_apps_debug_mode_is_turned_off(tmp_path):
    app = _failing_app(tmp_path)
    ReviewGuard(app, SESSION, MediaRoots([]))
    assert app.debug is False


@pytest.mark.parametrize("path", ["/boom", "/stack"])
def test_a_server_error_reaches_the_client_as_one_plain_line(tmp_path, path):
    """Neither Starlette's debug page (the traceback, with source lines) nor FiftyOne's ``stack`` reaches
    the client; the status stays, and the cookie a token bought still comes."""
    client = TestClient(
        ReviewGuard(_failing_app(tmp_path), SESSION, MediaRoots([])), base_url=BASE, raise_server_exceptions=False
    )
    for reply in (client.get(path, headers=AUTH), client.post(f"{path}?token={TOKEN}")):
        assert reply.status_code == 500 and reply.headers["content-type"].startswith("text/plain")
        assert reply.text == "500: the App server failed on this request (the App server's log has the details)\n"
        assert "Traceback" not in reply.text and "secret" not in reply.text
    assert reply.headers["set-cookie"].startswith(f"{SESSION.cookie_name}=")
    teapot = client.get("/teapot", headers=AUTH)  # a 4xx of the app carries no stack: kept as it is
    assert teapot.status_code == 418 and teapot.json() == {"detail": "Malformed JSON body"}


@pytest.mark.parametrize("path", ["/plugins/../..", "/plugins/..", "/./fiftyone", "/media/../etc/passwd"])
def test_dot_segments_are_refused_before_any_route(roots, path):
    """A browser resolves ``.`` and ``..`` before it asks; FiftyOne's /plugins mount failed on them with a 500."""
    app = ReviewGuard(_fiftyone_stand_in(), SESSION, MediaRoots([]))
    assert _raw_get(app, path, [(b"host", f"127.0.0.1:{PORT}".encode()), *_auth()])["status"] == 400
    assert _raw_get(app, "/plugins/x..y/a.js", [(b"host", f"127.0.0.1:{PORT}".encode()), *_auth()])["status"] == 200


def _auth() -> list[tuple[bytes, bytes]]:
    return [(b"authorization", f"token {TOKEN}".encode())]


def test_a_websocket_the_app_cannot_serve_is_closed_not_a_server_error(tmp_path):
    client = TestClient(ReviewGuard(_failing_app(tmp_path), SESSION, MediaRoots([])), base_url=BASE)
    headers = {"Host": f"127.0.0.1:{PORT}", "Cookie": f"{SESSION.cookie_name}={SESSION.cookie_value}"}
    with pytest.raises(WebSocketDisconnect) as closed, client.websocket_connect("/graphql", headers=headers) as socket:
        socket.receive_text()
    assert closed.value.code == 1008 and "no websocket" in closed.value.reason


def _fiftyone_static() -> Path:
    """The installed App's static folder (found without importing FiftyOne)."""
    return Path(importlib.util.find_spec("fiftyone").submodule_search_locations[0]) / "server" / "static"


def test_the_app_page_is_served_with_the_enterprise_popover_off():
    """FiftyOne's own index.html through ReviewPage: the settings come first in <head>, before the App's
    module scripts, the how-to-review note first in <body>, before the App's root; the length header
    matches; other files pass byte for byte."""
    static = _fiftyone_static()
    client = TestClient(ReviewPage(Starlette(routes=[Mount("/", StaticFiles(directory=static, html=True))])))
    page = client.get("/")
    original = (static / "index.html").read_bytes()
    assert page.status_code == 200 and page.content == with_settings(original) != original
    assert int(page.headers["content-length"]) == len(page.content)
    head = page.content.split(b"<head>", 1)[1]
    assert head.startswith(HEAD_SETTINGS) and head.index(HEAD_SETTINGS) < head.index(b'<script type="module"')
    body = page.content.split(b"<body>", 1)[1]
    assert body.startswith(BODY_SETTINGS) and body.index(b'<div id="root">') > len(BODY_SETTINGS)
    asset = next((static / "assets").glob("*.css"))
    assert client.get(f"/assets/{asset.name}").content == asset.read_bytes()
    assert client.head("/").status_code == 200


def test_a_large_html_answer_passes_unchanged():
    """An HTML answer over MAX_PAGE streamed in parts is passed on as it came (no settings, its length kept)."""
    from starlette.responses import StreamingResponse

    from imagenet_suite.review.app_page import MAX_PAGE

    part = b"<head>" + b"x" * (MAX_PAGE // 2)

    async def big(request: Request):
        async def parts():
            for _ in range(3):
                yield part

        return StreamingResponse(parts(), media_type="text/html", headers={"content-length": str(3 * len(part))})

    reply = TestClient(ReviewPage(Starlette(routes=[Route("/", big)]))).get("/")
    assert reply.content == 3 * part and int(reply.headers["content-length"]) == 3 * len(part)


def test_the_installed_app_reads_the_popover_key_the_page_sets():
    """A FiftyOne upgrade that renames the pop-over's localStorage key or the button's id fails here."""
    scripts = [p.read_text(errors="replace") for p in (_fiftyone_static() / "assets").glob("*.js")]
    popover = [s for s in scripts if "Explore Enterprise" in s]
    assert popover and all(ENTERPRISE_POPOVER_KEY in s and ENTERPRISE_BUTTON_ID in s for s in popover)
