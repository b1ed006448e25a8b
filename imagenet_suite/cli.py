"""The ``imagenet-suite`` command line.

Each top-level command lives in its own module under ``imagenet_suite.commands`` and exposes
``register(subparsers)``, which adds its parser and sets ``func(args) -> int``. Conventions:
results a script consumes go to stdout (``build`` prints the dataset folder as its last line),
progress bars and messages go to stderr, and an ``ImagenetSuiteError`` (the parameters it names
written as the command's flags: :mod:`imagenet_suite.commands._flags`) — or an ``OSError`` from the
system (disk full, permission denied, a path that is not a folder) — becomes a message naming the
file (one line, plus the accepted choices where it lists them) and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import pkgutil
import sys

from . import __version__, commands
from .commands._flags import attach, error_text
from .errors import ImagenetSuiteError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="imagenet-suite",
        description="Versioned HF datasets for the ImageNet evaluation ecosystem, hierarchies, review and scoring.",
    )
    parser.add_argument("--version", action="version", version=f"imagenet-suite {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if not module_info.name.startswith("_"):
            importlib.import_module(f"{commands.__name__}.{module_info.name}").register(subparsers)
    attach(parser)  # errors name library parameters; each command's line shows its flags instead
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ImagenetSuiteError as err:
        print(f"imagenet-suite {args.command}: error: {error_text(err, args)}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"imagenet-suite {args.command}: error: {describe_os_error(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def describe_os_error(err: OSError) -> str:
    """One line for an OSError: what failed, on which file, and what to do where that is clear."""
    what = " ".join((err.strerror or str(err)).split())
    where = " -> ".join(os.fsdecode(f) for f in (err.filename, err.filename2) if f is not None)
    text = f"{where}: {what}" if where else what
    if err.errno == errno.ENOSPC or "No space left on device" in str(err):  # pyarrow's OSError has only a message
        text += (
            " (disk full: free space there or choose another --out; finished shards are kept and the next run resumes)"
        )
    return text


if __name__ == "__main__":
    sys.exit(main())
