"""The ``imagenet-suite`` command line.

Each top-level command lives in its own module under ``imagenet_suite.commands`` and exposes
``register(subparsers)``, which adds its parser and sets ``func(args) -> int``. Conventions:
results a script consumes go to stdout (``build`` prints the dataset folder as its last line),
progress bars and messages go to stderr, and an ``ImagenetSuiteError`` (the parameters it names
written as the command's flags: :mod:`imagenet_suite.commands._flags`) — or an ``OSError`` from the
system (disk full, permission denied, a path that is not a folder) — becomes a message naming the
file (one line, plus the accepted choices where it lists them) and exit code 2, never a traceback.
``--debug`` (before the command) or ``IMAGENET_SUITE_DEBUG=1`` prints the full traceback, with the
chain of causes (every library error is raised ``from`` the one it replaces), before that line.

The numbers that scale a run (``--batch-size``, ``--workers``, ``--num-proc``, ``--bootstrap``, ``--adversarial``,
``--per-class``, ``--knn-rows``, ``--per-k``) are checked against their bounds (:mod:`imagenet_suite.limits`) as
soon as the arguments are parsed, with the message the library's options would give: a bad one is refused before
a command imports torch or loads a model.

A misspelt flag, command or choice gets "did you mean" (:mod:`imagenet_suite.commands._parser`). Building
the parser imports every command module, and those import nothing heavy at the top: ``--help``, ``list``,
``info`` and argument errors import no torch, datasets, FiftyOne, NumPy or Pillow
(``tests/test_cli_startup.py``; timings: ``benchmarks/bench_cli.py``).
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import pkgutil
import sys
import traceback

from . import commands
from .commands._flags import attach, error_text
from .commands._parser import Parser
from .cpus import quiet_openmp
from .errors import ImagenetSuiteError
from .limits import check_limits


class _Version(argparse.Action):
    """``--version``: the installed version, read only when asked (importlib.metadata is slow to import)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from . import __version__

        print(f"imagenet-suite {__version__}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="imagenet-suite",
        description="Versioned HF datasets for the ImageNet evaluation ecosystem, hierarchies, review and scoring.",
    )
    parser.add_argument("--version", action=_Version, help="show the version and exit")
    parser.add_argument(
        "--debug",
        action="store_true",
        help=(
            "on an error, print the full traceback with its chain of causes to stderr before the one-line "
            f"message (exit code 2 still); {DEBUG_ENV}=1 does the same"
        ),
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if not module_info.name.startswith("_"):
            importlib.import_module(f"{commands.__name__}.{module_info.name}").register(subparsers)
    attach(parser)  # errors name library parameters; each command's line shows its flags instead
    return parser


DEBUG_ENV = "IMAGENET_SUITE_DEBUG"


def main(argv: list[str] | None = None) -> int:
    quiet_openmp()  # before any command imports torch: idle OpenMP threads sleep, as many as the CPUs we get
    args = build_parser().parse_args(argv)
    debug = args.debug or debug_from_environment()
    try:
        check_limits(args)  # the bounded numbers (--batch-size, --bootstrap, ...) before a command imports torch
        return int(args.func(args) or 0)
    except ImagenetSuiteError as err:
        _report(err, f"imagenet-suite {args.command}: error: {error_text(err, args)}", debug)
        return 2
    except OSError as err:
        _report(err, f"imagenet-suite {args.command}: error: {describe_os_error(err, args.command)}", debug)
        return 2
    except KeyboardInterrupt as err:
        _report(err, "interrupted", debug)
        return 130


def debug_from_environment() -> bool:
    """``IMAGENET_SUITE_DEBUG`` set to anything but empty, ``0``, ``false``, ``no`` or ``off``."""
    return os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no", "off")


def _report(err: BaseException, line: str, debug: bool) -> None:
    """The one line on stderr; with ``debug``, the traceback and its chained causes before it."""
    if debug:
        traceback.print_exception(err, file=sys.stderr)
    print(line, file=sys.stderr)


def describe_os_error(err: OSError, command: str | None = None) -> str:
    """One line for an OSError: what failed, on which file, and what to do where that is clear (a full disk
    during ``build``: the finished shards are kept and the next run resumes)."""
    what = " ".join((err.strerror or str(err)).split())
    where = " -> ".join(os.fsdecode(f) for f in (err.filename, err.filename2) if f is not None)
    text = f"{where}: {what}" if where else what
    if err.errno == errno.ENOSPC or "No space left on device" in str(err):  # pyarrow's OSError has only a message
        text += (
            " (disk full: free space there or choose another --out; finished shards are kept and the next run resumes)"
            if command == "build"
            else " (disk full: free space there, or write elsewhere)"
        )
    return text


if __name__ == "__main__":
    sys.exit(main())
