"""The App's page as the review serves it: FiftyOne's ``index.html`` with the review's settings in front.

FiftyOne 1.22's App opens an "Explore Enterprise" pop-over (with an invisible backdrop that takes
every click until it is dismissed) on the first visit of each browser profile; no App or server
setting turns it off: the App shows it unless its own localStorage key
(:data:`ENTERPRISE_POPOVER_KEY`) says it was dismissed. :class:`ReviewPage` serves the App's HTML
page with :data:`HEAD_SETTINGS` first in its ``<head>``: a script that records that dismissal before
the App's (deferred, module) scripts run, and a style that hides the "Explore Enterprise" header
button (a link to an external site the offline App cannot reach). At the top of the page, above
the App (the App's root gets the rest of the height: nothing is covered), one line says how to
review (:data:`BODY_SETTINGS`, :data:`HOW_TO_REVIEW`: the tags and the export command, with this
page's dataset): FiftyOne
1.22 shows neither a dataset's description nor a saved view's (only its edit dialog does). Nothing
else of the page changes; every other response passes through untouched.

``tests/test_review_guard.py`` checks that the installed App still reads that key.
"""

from __future__ import annotations

ENTERPRISE_POPOVER_KEY = "fiftyone-enterprise-tooltip-seen"  # FiftyOne's localStorage key ("Dismiss" sets it)
ENTERPRISE_BUTTON_ID = "fo-cta-enterprise-button"  # the header's "Explore Enterprise" link
NOTE_ID = "imagenet-suite-note"  # the "how to review" line above the App
HOW_TO_REVIEW = (
    "How to review: tick tiles, tag them <b>id</b>, <b>ood</b> or <b>unsure</b> (tag icon above the grid, "
    "Apply). Export: "
    f'<code>uv run imagenet-suite review export <span id="{NOTE_ID}-dataset">DATASET</span> '
    "--out decisions.csv</code>"
)
HEAD_SETTINGS = (
    "<script>/* imagenet-suite review: FiftyOne's enterprise pop-over off */"
    f"try{{localStorage.setItem({ENTERPRISE_POPOVER_KEY!r},'true')}}catch(e){{}}</script>"
    f"<style>#{ENTERPRISE_BUTTON_ID}{{display:none!important}}"
    f"#{NOTE_ID}{{flex:none;padding:3px 12px;font-size:13px;background:#1f3a5f;color:#fff;"
    "white-space:nowrap;overflow:hidden;text-overflow:ellipsis}"
    f"#{NOTE_ID} code{{font-size:12px}}"
    "body>#root{height:auto!important;flex:1 1 0;min-height:0}</style>"
).encode()
BODY_SETTINGS = (
    f'<div id="{NOTE_ID}" role="note">{HOW_TO_REVIEW}</div>'
    "<script>/* the dataset of this page (/datasets/NAME) in the export command */"
    "(function(){var p=location.pathname.split('/');if(p[1]==='datasets'&&p[2])"
    f"document.getElementById('{NOTE_ID}-dataset').textContent=decodeURIComponent(p[2]);}})();</script>"
).encode()
MAX_PAGE = 1 << 20  # bytes: an HTML answer larger than this passes through unchanged


def with_settings(html: bytes) -> bytes:
    """``html`` with :data:`HEAD_SETTINGS` right after its ``<head>`` tag and :data:`BODY_SETTINGS`
    right after its ``<body>`` tag (each unchanged where the tag is missing).

    Example:
        >>> page = with_settings(b"<html><head><title>x</title></head><body><div id=root></div></body></html>")
        >>> page.startswith(b"<html><head><script>"), page.index(b"<body>") + 6 == page.index(b"<div id=")
        (True, True)
        >>> with_settings(b"no head")
        b'no head'
    """
    for tag, settings in ((b"<head>", HEAD_SETTINGS), (b"<body>", BODY_SETTINGS)):
        at = html.find(tag)
        if at >= 0:
            html = html[: at + len(tag)] + settings + html[at + len(tag) :]
    return html


class ReviewPage:
    """ASGI middleware: HTML answers to GET (the App's page) go through :func:`with_settings`; others pass through."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "GET":
            return await self.app(scope, receive, send)
        start: dict | None = None
        body: list[bytes] = []

        async def send_page(message) -> None:
            nonlocal start
            if message["type"] == "http.response.start" and _is_html(message):
                start = message  # held until the whole body is here: its length changes
                return
            if start is None:
                return await send(message)
            body.append(message.get("body", b""))
            more = message.get("more_body", False)
            if more and sum(map(len, body)) <= MAX_PAGE:
                return None
            if more:  # larger than a page: passed on as it came, its headers untouched
                await send(start)
                await send({"type": "http.response.body", "body": b"".join(body), "more_body": True})
            else:
                page = with_settings(b"".join(body))
                headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
                await send({**start, "headers": [*headers, (b"content-length", str(len(page)).encode())]})
                await send({"type": "http.response.body", "body": page, "more_body": False})
            start = None
            body.clear()

        return await self.app(scope, receive, send_page)


def _is_html(message) -> bool:
    headers = dict((k.lower(), v) for k, v in message.get("headers", []))
    return message.get("status") == 200 and headers.get(b"content-type", b"").startswith(b"text/html")
