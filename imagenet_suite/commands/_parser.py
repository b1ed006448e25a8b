"""The argument parser of every command: argparse's, plus "did you mean" for a misspelt flag or choice.

A misspelt flag (``--num-procs``) or choice (``buidl``, ``--class-names wordnt``) ends its error line with
the closest known one (:func:`imagenet_suite.errors.closest`), the same way on every Python (argparse's own
``suggest_on_error``, Python 3.14+, is turned off so the wording does not depend on the version):

    imagenet-suite build: error: unrecognized arguments: --num-procs 2; did you mean --num-proc?

Unknown arguments are reported by the command they were given to (its usage and name), not by the
top-level parser; an unknown flag is reported before the required arguments it may have stood for
(``--ouputs x.pt`` for ``--outputs``). As for every argparse error: usage, one error line, exit code 2.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence

from ..errors import closest

_INVALID_CHOICE = re.compile(r"invalid choice: (?P<value>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")")
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")  # a value, as argparse tells them (no flag of ours looks so)


class Parser(argparse.ArgumentParser):
    """:class:`argparse.ArgumentParser` whose errors suggest the closest flag or choice (its subparsers too)."""

    def __init__(self, *args, **kwargs):
        if sys.version_info >= (3, 14):
            kwargs.setdefault("suggest_on_error", False)  # ours, worded alike on every version
        super().__init__(*args, **kwargs)
        self._given: list[str] = []

    def parse_known_args(self, args: Sequence[str] | None = None, namespace=None):
        self._given = list(sys.argv[1:] if args is None else args)
        namespace, extras = super().parse_known_args(args, namespace)
        if extras and not self._subcommand_actions():
            # a command's own parser (called by its parent's subparsers action with every argument after the
            # command's name): its unknown arguments are its error, under its own usage
            self.error(f"unrecognized arguments: {' '.join(extras)}{self._flag_hint(extras)}")
        return namespace, extras

    def error(self, message: str):
        unknown = self.unknown_flags(self._given)
        if unknown and message.startswith("the following arguments are required"):
            message = f"unrecognized arguments: {' '.join(unknown)}{self._flag_hint(unknown)}"
        elif (found := _INVALID_CHOICE.search(message)) and "maybe you meant" not in message:
            message += self._choice_hint(found["value"][1:-1])
        super().error(message)

    # -- what was misspelt -------------------------------------------------------------------------------
    def flags(self) -> list[str]:
        """Every flag of this parser (``-h``, ``--help``, ...), in the order they were added."""
        return [option for action in self._actions for option in action.option_strings]

    def unknown_flags(self, given: Sequence[str]) -> list[str]:
        """The arguments in ``given`` that look like flags (``-x``, ``--name``, ``--name=value``; not a
        negative number, not after ``--``) that no option of this parser takes, nor abbreviates."""
        known = self.flags()
        unknown = []
        for arg in given:
            if arg == "--":
                break
            if not arg.startswith(tuple(self.prefix_chars)) or arg in tuple(self.prefix_chars):
                continue
            if _NEGATIVE_NUMBER.match(arg):
                continue  # a value, e.g. --adversarial -3
            flag = arg.split("=", 1)[0]
            if flag in known or arg[:2] in known:
                continue  # exact, or a short flag with its value attached (-n3)
            if self.allow_abbrev and flag.startswith("--") and any(f.startswith(flag) for f in known):
                continue  # an abbreviation argparse resolves (or reports as ambiguous)
            unknown.append(flag)
        return unknown

    def _flag_hint(self, extras: Sequence[str]) -> str:
        for flag in self.unknown_flags(extras):
            match = closest(flag, [known for known in self.flags() if known.startswith("--")])
            if match is not None:
                return f"; did you mean {match}?"
        return ""

    def _choice_hint(self, value: str) -> str:
        candidates = [
            [str(choice) for choice in action.choices]
            for action in self._actions
            if action.choices is not None and value not in [str(choice) for choice in action.choices]
        ]
        matches = [match for choices in candidates if (match := closest(value, choices)) is not None]
        return f"; did you mean {matches[0]!r}?" if matches else ""

    def _subcommand_actions(self) -> list[argparse.Action]:
        return [action for action in self._actions if isinstance(action, argparse._SubParsersAction)]


__all__ = ["Parser"]
