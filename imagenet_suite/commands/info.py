"""``imagenet-suite info NAME``: one builder — what it is, its configs, the exact files it reads, its options.

Shows the name, version and :meth:`~imagenet_suite.core.builder.Builder.summary`; homepage, license,
the BibTeX keys of its citation and whether rows depend on ``--seed``; every config with its description;
every source (URL or manual file, pinned size and hashes, instructions) and the manual layouts; the
options (``--option NAME=VALUE``) with default, choices and help; the release notes; and the card
template the build fills in (its prose is published with every build as the dataset's README.md, so it
is not repeated here). ``--features`` adds each config's columns (this imports ``datasets``: slower).
Reads the builder's declarations only.
"""

from __future__ import annotations

import re

from .list import plain

CITATION_KEY = re.compile(r"@\w+\s*\{\s*([^,\s]+)\s*,")  # the key of each BibTeX entry


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "info", help="show a builder: what it is, its configs, the exact files it reads and its options"
    )
    parser.add_argument("name", help="builder name (see `imagenet-suite list`)")
    parser.add_argument(
        "--features", action="store_true", help="also show each config's columns (imports datasets: slower)"
    )
    parser.set_defaults(func=run)


def run(args) -> int:
    from imagenet_suite.core import registry

    cls = registry.get(args.name)
    for line in describe(cls, features=args.features):
        print(line)
    return 0


def describe(cls, features: bool = False) -> list[str]:
    """The lines ``info`` prints for builder class ``cls``."""
    lines = [f"{cls.NAME} {cls.VERSION}: {plain(cls.summary())}", ""]
    keys = CITATION_KEY.findall(cls.CITATION)
    facts = {
        "homepage": cls.HOMEPAGE or "—",
        "license": cls.LICENSE,
        "cite": ", ".join(keys) + " (BibTeX: the card of a build)" if keys else "—",
        "seeded": "yes: rows depend on --seed" if cls.SEEDED else "no: rows do not depend on --seed",
    }
    lines += [f"  {name:9s} {value}" for name, value in facts.items()]
    lines += ["", f"Configs ({len(cls.CONFIGS)}; build one with --config NAME):"]
    width = max(len(config.name) for config in cls.CONFIGS)
    for config in cls.CONFIGS:
        lines.append(f"  {config.name:{width}s}  {config.description}")
        if features:
            lines.append(f"  {'':{width}s}  columns: {_columns(cls(config.name).features())}")
    if cls.SOURCES:
        lines += ["", f"Sources ({len(cls.SOURCES)}):"]
        for source in cls.SOURCES:
            lines.append(f"  {source.name}: {source.describe()}")
            if source.instructions:
                lines.append(f"      {source.instructions}")
    if cls.MANUAL_DOWNLOAD_INSTRUCTIONS:
        lines += ["", "Manual files:", *(f"  {line}" for line in cls.MANUAL_DOWNLOAD_INSTRUCTIONS.strip().splitlines())]
    if cls.OPTIONS:
        lines += ["", "Options (--option NAME=VALUE):"]
        for name, option in cls.OPTIONS.items():
            choices = f"; one of {', '.join(repr(c) for c in option.choices)}" if option.choices else ""
            lines.append(f"  {name} (default {option.default!r}{choices}): {option.help}")
    lines += ["", "Release notes:", *(f"  {version}: {note}" for version, note in cls.RELEASE_NOTES.items())]
    template = cls.CARD_TEMPLATE or cls.NAME
    lines += ["", f"Card: cards/{template}.md, filled in and written to every build as its README.md"]
    return lines


def _columns(features) -> str:
    """``name: type`` of every column, each type cut to 60 characters."""
    shown = []
    for name, feature in features.items():
        text = repr(feature)
        shown.append(f"{name}: {text if len(text) <= 60 else text[:59] + '…'}")
    return "; ".join(shown)
