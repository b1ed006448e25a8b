"""The review's App server process: FiftyOne's server app behind :class:`.app_guard.ReviewGuard`, run by hypercorn.

Started by :func:`imagenet_suite.review.app.launch_app` through FiftyOne's service wrapper as::

    python -m imagenet_suite.review.app_server --port P --address 127.0.0.1 --media-root=DIR ...

with the session token in ``$IMAGENET_SUITE_REVIEW_TOKEN`` (the environment, not argv: ``ps`` shows
argv to every user) and the database in ``$FIFTYONE_DATABASE_URI``. It does what FiftyOne's
``fiftyone/server/main.py`` does — same app, same hypercorn server — with the guard in front, and
exits at most :data:`STOP_GRACE` seconds after SIGTERM (FiftyOne's shutdown waits on the database,
30 s when it is gone; decisions are journaled when acknowledged, so cutting it short loses none).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import threading

TOKEN_ENV = "IMAGENET_SUITE_REVIEW_TOKEN"
STOP_GRACE = 5.0  # s from SIGTERM/SIGINT to exit: a graceful hypercorn shutdown, then a hard exit


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m imagenet_suite.review.app_server")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--address", default="127.0.0.1")
    parser.add_argument(
        "--media-root",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder whose files /media may serve (repeatable)",
    )
    return parser.parse_args(argv)


def guarded_app(port: int, token: str, media_roots: list[str]):
    """FiftyOne's server app (imported here: slow), its page with the review's settings, behind the review guard."""
    from fiftyone.server.app import app

    from .app_guard import ReviewGuard, Session
    from .app_page import ReviewPage
    from .media_paths import MediaRoots

    return ReviewGuard(ReviewPage(app), Session(port, token), MediaRoots(media_roots))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    token = os.environ.pop(TOKEN_ENV, "")
    if len(token) < 32:
        print(f"app_server: ${TOKEN_ENV} must hold the session token (32+ characters)", file=sys.stderr)
        return 2
    os.environ.pop("FIFTYONE_DISABLE_SERVICES", None)  # as fiftyone/server/main.py does
    os.environ["FIFTYONE_SERVER"] = "1"
    from fiftyone.server.events import set_port
    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    app = guarded_app(args.port, token, args.media_root)
    config = Config()
    config.bind = [f"{args.address}:{args.port}"]
    set_port(args.port)
    asyncio.run(_serve_until_signal(serve, app, config))
    _leave_dataset_cleanup_to_the_review()
    return 0


def _leave_dataset_cleanup_to_the_review() -> None:
    """Drop FiftyOne's exit handler that deletes non-persistent datasets when this is the database's only client.

    FiftyOne registers it on the first connection; the review process (this server's parent, a client for
    as long as the server runs) runs its own on exit. Here it only delayed the exit: with the database
    gone (mongod killed with the review) it waited for a server until :data:`STOP_GRACE` cut it short.
    """
    import atexit

    import fiftyone.core.odm.database as fod

    handler = getattr(fod, "_delete_non_persistent_datasets_if_allowed", None)  # FiftyOne's private name
    if handler is not None:
        atexit.unregister(handler)


async def _serve_until_signal(serve, app, config) -> None:
    """hypercorn's ``serve`` until SIGTERM/SIGINT; then at most :data:`STOP_GRACE` s before the process exits."""
    stopping = asyncio.Event()

    def on_signal() -> None:
        stopping.set()
        timer = threading.Timer(STOP_GRACE, os._exit, args=(0,))
        timer.daemon = True
        timer.start()

    loop = asyncio.get_running_loop()
    for number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(number, on_signal)
    await serve(app, config, shutdown_trigger=stopping.wait)


if __name__ == "__main__":
    sys.exit(main())
