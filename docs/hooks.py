"""MkDocs hook (``hooks:`` in mkdocs.yml): the dataset card templates as pages of the site.

Each ``cards/<name>.md`` becomes the page ``cards/<name>.md``, under a note saying what a template
is. A card's pictures (``![...](default/grid.png)``) are files of a built dataset folder, not of
the site, so they are shown as the path they have there.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File

NOTE = """!!! note "Card template"
    The template of the dataset card that `imagenet-suite build` publishes with every build, as
    `README.md` of the dataset folder. The build fills in `{{{{placeholders}}}}` and adds the YAML
    header, the configs table, the sources, the release notes and the citation. Source:
    `cards/{name}`.

"""
PICTURE = re.compile(r"!\[([^\]]*)\]\((?![a-z]+://)([^)\s]+)\)")


def card_page(path: Path) -> str:
    """The card under its title, then the note, then the rest."""
    text = PICTURE.sub(r"*(picture in the built dataset folder: `\2` — \1)*", path.read_text(encoding="utf-8"))
    title, rest = text.split("\n", 1) if text.startswith("# ") else ("", text)
    return f"{title}\n\n{NOTE.format(name=path.name)}{rest}"


def on_files(files, config):
    cards = Path(config["config_file_path"]).resolve().parent / "cards"
    for path in sorted(cards.glob("*.md")):
        files.append(File.generated(config, f"cards/{path.name}", content=card_page(path)))
    return files
