"""Who may talk to the review App, and which files it may read: an ASGI middleware around FiftyOne's server.

:class:`ReviewGuard` wraps ``fiftyone.server.app:app`` in the review's App server
(:mod:`.app_server`). ``lifespan`` passes through; every ``http`` and ``websocket`` request must pass,
in order:

1. **Host** — the ``Host`` header is exactly ``127.0.0.1:PORT``, ``localhost:PORT`` or ``[::1]:PORT``
   (a DNS-rebinding page sends its own host name), else 403; a request with no ``Host`` or more than
   one is malformed HTTP and gets 400 (RFC 9112, section 3.2).
2. **Origin** — a request that has an ``Origin`` header comes from one of those origins, else 403.
3. **Token**, as Jupyter does — the request carries the session token (``secrets.token_urlsafe``,
   made by ``review open`` and printed in the App URL) as ``?token=``, as ``Authorization: token …``,
   or the cookie given in exchange for it, else 403. A GET/HEAD with a valid ``?token=`` is answered
   with the cookie (HttpOnly, SameSite=Strict, Path=/, named after the port) and a redirect to the
   same URL without the token; other requests with it get the cookie on their response.
   Comparisons are constant-time (:func:`hmac.compare_digest`).
4. **Files** — ``/media?filepath=`` and the ``list_files`` operator reach only paths under the
   :class:`.media_paths.MediaRoots`, else 403; ``/media`` is then handed the resolved path, so the
   file checked is the file served.

Websockets that fail a rule are closed before they are accepted (the server answers 403).

Errors never show the server's insides: a path with a ``.`` or ``..`` segment (which no browser sends:
it resolves them first) is refused with 400 before it reaches a file route; the wrapped app runs with
its web framework's debug mode off (Starlette's ``debug``, which FiftyOne turns on, renders a 500 as
the full traceback with source lines), every 5xx response of the app reaches the client as one plain
line without its body (FiftyOne's routes answer errors with ``{"stack": traceback}``; the App
server's log keeps the details), and a websocket the app fails on before accepting it (FiftyOne's
app has no websocket endpoint: its static mount asserts on one) is closed (403), not a 500.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, urlencode

from .media_paths import MediaRoots

TOKEN_PARAM = "token"
MEDIA_PATH = "/media"
OPERATOR_PREFIX = "/operators"
FILE_OPERATORS = frozenset({"@voxel51/operators/list_files"})  # operators that read a path from the request
MAX_OPERATOR_BODY = 64 * 1024 * 1024  # bytes of an /operators request read to check it
_LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Session:
    """The App's address and secret: what a request must match."""

    port: int
    token: str

    @property
    def hosts(self) -> frozenset[str]:
        names = ("127.0.0.1", "localhost", "[::1]")
        default_port = names if self.port == 80 else ()  # clients leave HTTP's default port out of Host/Origin
        return frozenset((*(f"{name}:{self.port}" for name in names), *default_port))

    @property
    def origins(self) -> frozenset[str]:
        return frozenset(f"http://{host}" for host in self.hosts)

    @property
    def cookie_name(self) -> str:
        return f"imagenet-suite-review-{self.port}"  # cookies ignore ports: one name per App

    @property
    def cookie_value(self) -> str:
        """Derived from the token (the cookie never holds the token itself)."""
        return hmac.new(self.token.encode(), b"imagenet-suite review cookie", hashlib.sha256).hexdigest()

    def set_cookie(self) -> str:
        return f"{self.cookie_name}={self.cookie_value}; Path=/; HttpOnly; SameSite=Strict"

    def token_matches(self, candidate: str | None) -> bool:
        return candidate is not None and hmac.compare_digest(candidate.encode(), self.token.encode())

    def cookie_matches(self, candidate: str | None) -> bool:
        return candidate is not None and hmac.compare_digest(candidate.encode(), self.cookie_value.encode())


class _Request:
    """What the rules read from an ASGI scope: headers (lower-case names) and query parameters."""

    def __init__(self, scope: dict):
        self.scope = scope
        self.headers: dict[str, list[str]] = {}
        for name, value in self.scope.get("headers", []):
            self.headers.setdefault(name.decode("latin-1").lower(), []).append(value.decode("latin-1"))
        self.query = parse_qsl(self.scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)

    def header(self, name: str) -> str | None:
        """The header's only value (None if absent or repeated)."""
        values = self.headers.get(name, [])
        return values[0] if len(values) == 1 else None

    def params(self, name: str) -> list[str]:
        return [v for k, v in self.query if k == name]

    def cookies(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for header in self.headers.get("cookie", []):
            for pair in header.split(";"):
                name, sep, value = pair.strip().partition("=")
                if sep:
                    found.setdefault(name, []).append(value)
        return found


class ReviewGuard:
    """ASGI middleware enforcing the rules of this module for one :class:`Session` and its media roots."""

    def __init__(self, app, session: Session, media: MediaRoots):
        self.app = _hiding_server_errors(without_debug(app))
        self.session = session
        self.media = media

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        request = _Request(scope)
        refusal = self._refusal(request)
        if refusal is not None:
            return await _refuse(scope, send, *refusal)
        if scope["type"] == "websocket":
            return await _websocket(self.app, scope, receive, send)
        given_token = self.session.token_matches(_only(request.params(TOKEN_PARAM)))
        if given_token and scope["type"] == "http" and scope["method"] in ("GET", "HEAD"):
            return await self._redirect_without_token(request, send)
        if scope["path"].rstrip("/") == MEDIA_PATH:
            return await self._media(request, receive, send)
        if scope["type"] == "http" and scope["path"].startswith(OPERATOR_PREFIX) and scope["method"] == "POST":
            return await self._operator(request, receive, _with_cookie(send, self.session) if given_token else send)
        return await self.app(scope, receive, _with_cookie(send, self.session) if given_token else send)

    def _refusal(self, request: _Request) -> tuple[int, str] | None:
        """(status, reason) of the first rule the request breaks (Host, Origin, token), or None."""
        hosts = request.headers.get("host", [])
        if len(hosts) != 1:
            return 400, "a request needs exactly one Host header"
        if hosts[0].lower() not in self.session.hosts:
            return 403, "unexpected Host header: open the App at the URL printed by `imagenet-suite review open`"
        origin = request.headers.get("origin")
        if origin is not None and (len(origin) != 1 or origin[0] not in self.session.origins):
            return 403, "cross-origin request refused"
        if not self._authenticated(request):
            return 403, "missing or wrong token: open the App at the URL printed by `imagenet-suite review open`"
        if any(segment in (".", "..") for segment in request.scope["path"].split("/")):
            return 400, "a path with '.' or '..' segments (a browser resolves them before it asks)"
        return None

    def _authenticated(self, request: _Request) -> bool:
        if self.session.token_matches(_only(request.params(TOKEN_PARAM))):
            return True
        scheme, _, value = (request.header("authorization") or "").partition(" ")
        if scheme.lower() == "token" and self.session.token_matches(value.strip()):
            return True
        return any(self.session.cookie_matches(v) for v in request.cookies().get(self.session.cookie_name, []))

    async def _redirect_without_token(self, request: _Request, send) -> None:
        path = "/" + request.scope["path"].lstrip("/")  # never "//host/…": that would leave this server
        rest = [(k, v) for k, v in request.query if k != TOKEN_PARAM]
        location = quote(path) + (f"?{urlencode(rest)}" if rest else "")
        await _respond(
            send,
            302,
            b"",
            [
                (b"location", location.encode("latin-1")),
                (b"set-cookie", self.session.set_cookie().encode()),
                (b"cache-control", b"no-store"),
                (b"referrer-policy", b"no-referrer"),
            ],
        )

    async def _media(self, request: _Request, receive, send) -> None:
        """Only files under the media roots; FiftyOne gets the resolved path (other parameters dropped)."""
        paths = request.params("filepath")
        if not paths:
            return await self.app(request.scope, receive, send)  # FiftyOne answers 400
        resolved = {self.media.resolve(p) for p in paths}
        if None in resolved or len(resolved) != 1:
            return await _refuse(request.scope, send, 403, "this file is not part of the review")
        scope = dict(request.scope, query_string=urlencode([("filepath", resolved.pop())]).encode("latin-1"))
        return await self.app(scope, receive, send)

    async def _operator(self, request: _Request, receive, send) -> None:
        """Operator calls: those that read a path (``list_files``) only under the media roots."""
        body = await _read_body(receive, MAX_OPERATOR_BODY)
        if body is None:
            return await _refuse(request.scope, send, 413, "request too large")
        if not self._operator_allowed(body):
            return await _refuse(request.scope, send, 403, "this folder is not part of the review")
        return await self.app(request.scope, _replay(body, receive), send)

    def _operator_allowed(self, body: bytes) -> bool:
        try:
            call = json.loads(body or b"{}")
        except ValueError:
            return True  # FiftyOne rejects it
        if not isinstance(call, dict) or call.get("operator_uri") not in FILE_OPERATORS:
            return True
        params = call.get("params") or {}
        path = params.get("path") if isinstance(params, dict) else None
        return not path or (isinstance(path, str) and self.media.resolve(path) is not None)


def without_debug(app):
    """``app`` with its web framework's debug mode off (a Starlette app's ``debug``; anything else as is).

    In debug mode Starlette answers an unhandled exception with the full traceback, local source
    included; FiftyOne's server app is made with ``debug=True``.
    """
    if getattr(app, "debug", False) is True:
        app.debug = False
        if hasattr(app, "middleware_stack"):
            app.middleware_stack = None  # Starlette builds it, debug setting included, at the next request
    return app


def _hiding_server_errors(app):
    """``app`` whose 5xx responses to http requests are :func:`_without_error_bodies`."""

    async def hiding(scope, receive, send):
        await app(scope, receive, _without_error_bodies(send) if scope["type"] == "http" else send)

    return hiding


def _without_error_bodies(send):
    """``send`` that answers any 5xx response with one plain line, its own headers and body dropped
    (the cookie added by :func:`_with_cookie` still comes, below this)."""
    hiding = False

    async def sending(message):
        nonlocal hiding
        if message["type"] == "http.response.start" and message["status"] >= 500:
            hiding = True
            status = message["status"]
            body = f"{status}: the App server failed on this request (the App server's log has the details)\n"
            await _respond(
                send,
                status,
                body.encode(),
                [(b"content-type", b"text/plain; charset=utf-8"), (b"cache-control", b"no-store")],
            )
        elif not hiding:
            await send(message)

    return sending


async def _websocket(app, scope, receive, send) -> None:
    """Hand a websocket to ``app``; if it fails before accepting or closing it, close it (the server
    answers 403) instead of letting the server answer 500."""
    answered = False

    async def sending(message):
        nonlocal answered
        answered = answered or message["type"] in (
            "websocket.accept",
            "websocket.close",
            "websocket.http.response.start",
        )
        await send(message)

    try:
        await app(scope, receive, sending)
    except Exception:
        if answered:
            raise
        _LOG.warning("the App refused a websocket to %s it cannot serve", scope.get("path"), exc_info=True)
        await send({"type": "websocket.close", "code": 1008, "reason": "no websocket is served here"})


def _only(values: list[str]) -> str | None:
    return values[0] if len(values) == 1 else None


def _with_cookie(send, session: Session):
    """``send`` that adds the session cookie to the response headers."""

    async def sending(message):
        if message["type"] == "http.response.start":
            headers = [*message.get("headers", []), (b"set-cookie", session.set_cookie().encode())]
            message = {**message, "headers": headers}
        await send(message)

    return sending


async def _respond(send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-length", str(len(body)).encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _refuse(scope, send, status: int, reason: str) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008, "reason": reason[:120]})
        return
    await _respond(
        send,
        status,
        f"{status}: {reason}\n".encode(),
        [(b"content-type", b"text/plain; charset=utf-8"), (b"cache-control", b"no-store")],
    )


async def _read_body(receive, limit: int) -> bytes | None:
    """The whole request body, or None if longer than ``limit`` bytes."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if size > limit:
            return None
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive):
    """A ``receive`` that yields ``body`` once, then defers to the real one (for the disconnect)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replaying():
        return pending.pop() if pending else await receive()

    return replaying
