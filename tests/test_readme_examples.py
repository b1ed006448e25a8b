"""The documentation's examples name commands, flags and modules that exist.

Every ``imagenet-suite ...`` line of a bash block in README.md, DEVELOPERS.md and the documentation
site's pages (``docs/*.md``, ``docs/papers/*.md``) is parsed by the real argument parser (optional ``[parts]`` included,
the first of ``a|b`` alternatives taken), and every ``from imagenet_suite... import ...`` line of a
python block is executed. A renamed command, flag, config or module fails here, naming the line.
Every such command line is written ``uv run imagenet-suite ...``, so that it runs as printed right
after ``uv sync`` (no activated environment assumed).
"""

from __future__ import annotations

import re
import shlex

import pytest

from imagenet_suite.cli import build_parser
from tests.helpers import REPO_ROOT

DOCS = (
    "README.md",
    "DEVELOPERS.md",
    *sorted(p.relative_to(REPO_ROOT).as_posix() for p in (REPO_ROOT / "docs").glob("*.md")),
    *sorted(p.relative_to(REPO_ROOT).as_posix() for p in (REPO_ROOT / "docs" / "papers").glob("*.md")),
)


def _blocks(language: str) -> list[tuple[str, str]]:
    """``(document, line)`` for every line of every ``language`` code block, continuations joined."""
    found = []
    for doc in DOCS:
        text = (REPO_ROOT / doc).read_text(encoding="utf-8")
        for block in re.findall(rf"```{language}\n(.*?)```", text, re.S):
            found += [(doc, line) for line in block.replace("\\\n", " ").splitlines()]
    return found


def _raw_command_lines() -> list[tuple[str, str]]:
    """``(document, line)`` for every bash line that runs ``imagenet-suite``, as printed."""
    lines = []
    for doc, line in _blocks("bash"):
        line = line.split(" #")[0].strip()
        if line.removeprefix("uv run ").startswith("imagenet-suite "):
            lines.append((doc, line))
    return lines


def _command_lines() -> list[tuple[str, str]]:
    return [(doc, line.removeprefix("uv run ")) for doc, line in _raw_command_lines()]


def _argv(line: str) -> list[str]:
    while re.search(r"\[[^\[\]]*\]", line):
        line = re.sub(r"\[([^\[\]]*)\]", r"\1", line)
    return [word.split("|")[0] for word in shlex.split(line)[1:]]


COMMANDS = _command_lines()
IMPORTS = [(doc, line.strip()) for doc, line in _blocks("python") if line.strip().startswith("from imagenet_suite")]


def test_every_documented_command_runs_as_printed_after_uv_sync():
    """After ``uv sync`` the console script is in ``.venv/bin`` only: a bare ``imagenet-suite`` is
    "command not found" in a fresh shell, so every example says ``uv run``."""
    bare = [f"{doc}: {line}" for doc, line in _raw_command_lines() if not line.startswith("uv run imagenet-suite ")]
    assert not bare, "commands without the `uv run ` prefix:\n" + "\n".join(bare)
    assert sum(doc == "README.md" for doc, _ in _raw_command_lines()) >= 20


def test_the_documents_have_examples():
    assert len(COMMANDS) >= 20 and len(IMPORTS) >= 3


@pytest.mark.parametrize(("doc", "line"), COMMANDS, ids=[line[:60] for _, line in COMMANDS])
def test_every_documented_command_parses(doc, line, capsys):
    argv = _argv(line)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as error:
        if argv[-1:] == ["--help"] and error.code == 0:  # `imagenet-suite [command] --help` prints help
            assert "usage: imagenet-suite" in capsys.readouterr().out
            return
        pytest.fail(f"{doc}: the parser refuses {line!r}")
    assert callable(args.func)


@pytest.mark.parametrize(("doc", "line"), IMPORTS, ids=[line for _, line in IMPORTS])
def test_every_documented_import_works(doc, line):
    exec(compile(line, doc, "exec"), {})
