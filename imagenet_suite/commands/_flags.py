"""Library parameters -> this command's flags, for the one-line error of the command line.

The library names the parameter at fault (``errors.param``: ``workers must be 0 or more, got -1``);
the CLI prints the flag that sets it (``--workers must be 0 or more, got -1``). The flag of a parameter
is found in the command's own parser: the option whose ``dest`` is the parameter's name (its first long
option string; a positional argument by its metavar). A command whose flag sets a parameter of another
name says so once, in ``register``: ``rename(parser, run_dir="--out")``. A parameter no flag of the
command sets keeps its name.

``cli.build_parser`` gives every (sub)command's parser its :class:`Flags`; ``cli.main`` prints errors
with :func:`error_text`.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from ..errors import ImagenetSuiteError

FLAGS = "_flags"  # the namespace attribute holding the command's Flags
RENAMES = "_flag_renames"  # the parser default holding its renames


class Flags:
    """How the library's parameters are written on one command's line (read from its parser when needed)."""

    def __init__(self, parser: argparse.ArgumentParser):
        self.parser = parser

    def mapping(self) -> dict[str, str]:
        """Parameter -> flag: every argument of the parser by its ``dest``, then the command's renames."""
        found: dict[str, str] = {}
        for action in self.parser._actions:
            if action.dest in (argparse.SUPPRESS, "help") or isinstance(action, argparse._SubParsersAction):
                continue
            longs = [option for option in action.option_strings if option.startswith("--")]
            if longs:
                found.setdefault(action.dest, longs[0])
            elif not action.option_strings:  # a positional argument: as the usage line shows it
                metavar = action.metavar if isinstance(action.metavar, str) else None
                found.setdefault(action.dest, metavar or action.dest)
        found.update(self.parser.get_default(RENAMES) or {})
        return found


def rename(parser: argparse.ArgumentParser, **renames: str) -> None:
    """Declare flags that set a library parameter of another name, e.g. ``rename(parser, run_dir="--out")``."""
    parser.set_defaults(**{RENAMES: {**(parser.get_default(RENAMES) or {}), **renames}})


def attach(parser: argparse.ArgumentParser) -> None:
    """Give every command parser under ``parser`` (the leaves: parsers without subcommands) its Flags."""
    for leaf in _leaves(parser):
        leaf.set_defaults(**{FLAGS: Flags(leaf)})


def _leaves(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    subcommands = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    if not subcommands:
        yield parser
    for action in subcommands:
        for child in dict.fromkeys(action.choices.values()):  # an alias maps to the same parser
            yield from _leaves(child)


def error_text(err: ImagenetSuiteError, args: argparse.Namespace) -> str:
    """``err``'s message with the parameters it names written as the flags of the command that ran."""
    flags = getattr(args, FLAGS, None)
    return err.with_flags(flags.mapping() if flags is not None else {})


__all__ = ["Flags", "attach", "error_text", "rename"]
