"""Private folders: mode 0700, owned by this user — where the embedded mongod's sockets live.

A unix socket is reachable by whoever can reach its folder, so the sockets of the review database
live in a folder only this user can enter. :func:`private_dir` creates it (mode 0700) or checks an
existing one and refuses — never repairs — a folder that is a symlink, belongs to someone else, or
is open to group/others: on a shared ``/tmp`` another user may have planted it.

:func:`socket_dir` picks the folder of a data folder's sockets: ``<data folder>/sockets`` when the
socket paths fit the kernel's limit (``sun_path``: 107 bytes and a NUL), else
``<tmp>/imagenet-suite-<uid>-<hash of the data folder>``.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from pathlib import Path

from .errors import ReviewError

SOCKET_PATH_MAX = 107  # bytes of a unix socket path (sun_path is 108 with the terminating NUL)
LONGEST_SOCKET_NAME = "mongodb.sock"  # the longest file name put in a socket folder (see embedded_db)


def socket_dir(database_dir: Path) -> Path:
    """The folder for the sockets of the mongod serving ``database_dir`` (not created here)."""
    inside = Path(database_dir) / "sockets"
    if _fits(inside):
        return inside
    digest = hashlib.sha256(os.fsencode(os.path.realpath(database_dir))).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"imagenet-suite-{os.getuid()}-{digest}"


def _fits(folder: Path) -> bool:
    return len(os.fsencode(os.path.abspath(folder / LONGEST_SOCKET_NAME))) <= SOCKET_PATH_MAX


def private_dir(path: Path) -> Path:
    """Create ``path`` with mode 0700 (its parent must exist), or check the existing one.

    Returns ``path``. Raises ReviewError if it is not a real folder (a symlink, a file), is not
    owned by this user, or grants any permission to group or others.
    """
    path = Path(path)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as err:
        raise ReviewError(f"cannot create the private folder {path}: {err.strerror}") from err
    check_private(path)
    return path


def check_private(path: Path) -> None:
    """ReviewError unless ``path`` is a folder (not a symlink) owned by this user with no group/other bits."""
    try:
        info = os.lstat(path)
    except OSError as err:
        raise ReviewError(f"{path}: {err.strerror}") from err
    if not stat.S_ISDIR(info.st_mode):
        raise ReviewError(f"{path} must be a folder (not a symlink or a file) only you can open; remove it")
    if info.st_uid != os.getuid():
        raise ReviewError(
            f"{path} belongs to uid {info.st_uid}, not to you (uid {os.getuid()}): another user may "
            "have planted it; remove it, or set FIFTYONE_DATABASE_DIR elsewhere"
        )
    if info.st_mode & 0o077:
        raise ReviewError(
            f"{path} has mode {stat.S_IMODE(info.st_mode):04o}; the database sockets need a folder "
            f"only you can open: `chmod 700 {path}`"
        )
