"""``imagenet-suite list``: the builders as a table — name, version, configs (a few named) and what each is.

One line per builder under a header. Its configs are named while they fit :data:`CONFIGS_WIDTH` characters,
then counted (ImageNet-C's 95: ``gaussian_noise_1, gaussian_noise_2, … (95)``); ``info NAME`` lists them all.
"What it is" is :meth:`~imagenet_suite.core.builder.Builder.summary`. On a terminal, lines are cut to its
width (with ``…``); piped, they are whole. Reads the builders' declarations only: imports no torch,
datasets or image library.
"""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Sequence

CONFIGS_WIDTH = 40  # characters of config names a row shows before it counts them
HEADER = ("builder", "version", "configs", "what it is")


def register(subparsers) -> None:
    parser = subparsers.add_parser("list", help="list the builders: version, configs and what each one is")
    parser.set_defaults(func=run)


def run(args) -> int:
    from imagenet_suite.core import registry

    rows = [
        (name, cls.VERSION, configs_cell([c.name for c in cls.CONFIGS]), plain(cls.summary()))
        for name, cls in registry.all_builders().items()
    ]
    width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
    for line in table(HEADER, rows):
        print(fit(line, width))
    print("\nEvery config, source and option of a builder: imagenet-suite info NAME")
    return 0


def configs_cell(names: Sequence[str], width: int = CONFIGS_WIDTH) -> str:
    """``names`` joined while they fit in ``width`` characters; the rest as ``…`` and the count of all.

    Example:
        Five names take 43 characters; two of them and the count take 23, a third would make it 32:

        >>> from imagenet_suite.commands.list import configs_cell
        >>> configs_cell(["default", "boxes"])
        'default, boxes'
        >>> configs_cell([f"noise_{s}" for s in range(1, 6)], width=24)
        'noise_1, noise_2, … (5)'
    """
    if len(", ".join(names)) <= width:
        return ", ".join(names)
    shown: list[str] = []
    for name in names:
        if len(", ".join([*shown, name, f"… ({len(names)})"])) > width and shown:
            break
        shown.append(name)
    return ", ".join([*shown, f"… ({len(names)})"])


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Lines of a plain-text table: ``header``, then ``rows``, columns left-aligned two spaces apart (the
    last one not padded)."""
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header) - 1)]
    return [
        "  ".join([*(str(cell).ljust(w) for cell, w in zip(row, widths, strict=False)), str(row[-1])]).rstrip()
        for row in [header, *rows]
    ]


def plain(text: str) -> str:
    """Docstring text for a terminal: reST ````code```` without its backquotes."""
    return re.sub(r"``([^`]+)``", r"\1", text)


def fit(line: str, width: int | None) -> str:
    """``line`` cut to ``width`` characters, its end marked ``…`` (None: whole)."""
    return line if width is None or len(line) <= width else line[: max(width - 1, 0)] + "…"
