"""``list`` (a table: header, one line per builder, configs summarised), ``info`` (a builder's declarations,
not its card prose) and "did you mean" for misspelt commands, flags and choices on every command's parser.

What each line must hold is read from the builders' own declarations, never written out here. Misspelt
builder, config and option names of the library are in ``tests/test_cli_bad_inputs.py``'s tables.
"""

from __future__ import annotations

import re

import pytest

from imagenet_suite.cli import build_parser
from imagenet_suite.commands.list import CONFIGS_WIDTH, configs_cell, fit, plain, table
from imagenet_suite.core import card, registry
from tests.helpers import run_cli

# -- list ---------------------------------------------------------------------------------------------------


def test_list_is_a_table_of_every_builder_with_its_version_configs_and_what_it_is():
    out = run_cli("list").stdout.splitlines()
    builders = registry.all_builders()
    assert out[0].split() == ["builder", "version", "configs", "what", "it", "is"]
    rows = out[1 : 1 + len(builders)]
    starts = [out[0].index(column) for column in ("version", "configs", "what it is")]
    for line, (name, cls) in zip(rows, builders.items(), strict=True):
        cells = [line[: starts[0]], line[starts[0] : starts[1]], line[starts[1] : starts[2]], line[starts[2] :]]
        assert [cell.strip() for cell in cells] == [
            name,
            cls.VERSION,
            configs_cell([c.name for c in cls.CONFIGS]),
            plain(cls.summary()),
        ], line
        assert cls.summary() and "``" not in line
    assert out[1 + len(builders) :] == ["", "Every config, source and option of a builder: imagenet-suite info NAME"]


def test_list_counts_the_configs_of_a_builder_with_many():
    """ImageNet-C's 95 configs: the first names that fit and the count, not 95 names on one line."""
    names = [config.name for config in registry.get("imagenet_c").CONFIGS]
    line = next(line for line in run_cli("list").stdout.splitlines() if line.startswith("imagenet_c "))
    assert len(names) == 95 and names[0] in line and names[-1] not in line and "… (95)" in line
    cell = configs_cell(names)
    assert len(cell) <= CONFIGS_WIDTH and cell.startswith(f"{names[0]}, ") and cell.endswith(", … (95)")


def test_configs_cell_names_all_that_fit_and_the_count_of_the_rest():
    assert configs_cell(["a", "b"], width=3) == "a, … (2)"  # at least one name, even past the width
    assert configs_cell(["default"]) == "default"
    long = [f"config_{i}" for i in range(6)]
    assert configs_cell(long, width=len(", ".join(long))) == ", ".join(long)
    assert configs_cell(long, width=len(", ".join(long)) - 1).endswith(", … (6)")


def test_table_aligns_columns_and_fit_cuts_to_the_terminal_only():
    lines = table(("a", "bb", "c"), [("long-name", "1", "last column, not padded"), ("x", "22222", "y")])
    assert lines == ["a          bb     c", "long-name  1      last column, not padded", "x          22222  y"]
    assert fit("abcdef", 4) == "abc…" and fit("abcdef", 6) == "abcdef" and fit("abcdef", None) == "abcdef"


# -- info ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["imagenet_val", "perturbations", "imagenet_c", "ood_unit_tests"])
def test_info_shows_the_builders_declarations(name):
    cls = registry.get(name)
    out = run_cli("info", name).stdout
    lines = out.splitlines()
    assert lines[0] == f"{name} {cls.VERSION}: {plain(cls.summary())}"
    assert f"  license   {cls.LICENSE}" in lines and f"  homepage  {cls.HOMEPAGE or '—'}" in lines
    keys = re.findall(r"@\w+\s*\{\s*([^,\s]+)\s*,", cls.CITATION)
    assert keys and next(line for line in lines if line.startswith("  cite ")).count(",") == len(keys) - 1
    assert all(key in out for key in keys)
    assert f"Configs ({len(cls.CONFIGS)}; build one with --config NAME):" in lines
    for config in cls.CONFIGS:  # every config, ImageNet-C's 95 included, with its description
        assert re.search(rf"^  {re.escape(config.name)} +{re.escape(config.description)}$", out, re.M), config.name
    for source in cls.SOURCES:
        assert f"  {source.name}: {source.describe()}" in lines and (source.instructions or "") in out
    for option, declared in cls.OPTIONS.items():
        assert any(line.startswith(f"  {option} (default {declared.default!r}") for line in lines), option
    for version, note in cls.RELEASE_NOTES.items():
        assert f"  {version}: {note}" in lines
    assert (
        lines[-1]
        == f"Card: cards/{cls.CARD_TEMPLATE or name}.md, filled in and written to every build as its README.md"
    )


def test_info_leaves_the_card_prose_to_the_built_card():
    out = run_cli("info", "imagenet_val").stdout
    prose = [line for line in card.load_template("imagenet_val").splitlines() if len(line) > 40 and "{{" not in line]
    assert prose and not [line for line in prose if line in out]
    assert "features" not in out.lower()  # the columns only with --features (they import datasets)


def test_info_features_adds_the_columns_of_every_config():
    cls = registry.get("imagenet_val")
    lines = run_cli("info", "imagenet_val", "--features").stdout.splitlines()
    columns = [line.strip() for line in lines if line.strip().startswith("columns: ")]
    assert len(columns) == len(cls.CONFIGS)
    for config, line in zip(cls.CONFIGS, columns, strict=True):
        assert [cell.split(":")[0] for cell in line.removeprefix("columns: ").split("; ")] == list(
            cls(config.name).features()
        )


# -- did you mean -------------------------------------------------------------------------------------------


def _commands(parser, path=()):
    """``(argv prefix, parser)`` of every command that takes flags: the leaves of the parser tree."""
    subcommands = [action for action in parser._actions if action.__class__.__name__ == "_SubParsersAction"]
    if not subcommands:
        yield path, parser
    for action in subcommands:
        for name, child in action.choices.items():
            yield from _commands(child, (*path, name))


def _misspelt(flag: str) -> str:
    """``flag`` with two letters of its name swapped (never a prefix of it: argparse would take an abbreviation)."""
    i = 2 + (len(flag) - 2) // 2
    return flag[: i - 1] + flag[i] + flag[i - 1] + flag[i + 1 :] if flag[i] != flag[i - 1] else flag + "x"


COMMANDS = [(path, parser) for path, parser in _commands(build_parser())]


@pytest.mark.parametrize("path, parser", COMMANDS, ids=[" ".join(path) for path, _ in COMMANDS])
def test_every_command_suggests_the_flag_a_misspelt_one_stands_for(path, parser):
    """The longest flag of each command, misspelt, given alone: whether the command then lacks required arguments
    or not, its error line names the unknown flag and the flag it stands for."""
    flags = [option for action in parser._actions for option in action.option_strings if option.startswith("--")]
    flag = max(flags, key=len)
    wrong = _misspelt(flag)
    assert wrong != flag and not flag.startswith(wrong)
    result = run_cli(*path, wrong, check=False)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and lines[0].startswith(f"usage: imagenet-suite {' '.join(path)}"), result.stderr
    assert lines[-1] == f"imagenet-suite {' '.join(path)}: error: unrecognized arguments: {wrong}; did you mean {flag}?"


@pytest.mark.parametrize(
    "argv, line",
    [
        (["buidl"], "imagenet-suite: error: argument COMMAND: invalid choice: 'buidl' (choose from "),
        (["hierarchy", "distanse"], "imagenet-suite hierarchy: error: argument SUBCOMMAND: invalid choice: 'distanse'"),
        (["predict", "x", "--class-names", "wordnt"], "imagenet-suite predict: error: argument --class-names: invalid"),
    ],
)
def test_a_misspelt_command_or_choice_gets_the_closest_one(argv, line):
    result = run_cli(*argv, check=False)
    last = result.stderr.strip().splitlines()[-1]
    expected = {"buidl": "build", "distanse": "distance", "wordnt": "wordnet"}[argv[-1]]
    assert result.returncode == 2 and last.startswith(line) and last.endswith(f"; did you mean {expected!r}?"), last


def test_no_suggestion_when_nothing_is_close():
    result = run_cli("list", "--zzzzzzzz", check=False)
    assert result.stderr.strip().splitlines()[-1] == "imagenet-suite list: error: unrecognized arguments: --zzzzzzzz"
    result = run_cli("frobnicate", check=False)
    assert "did you mean" not in result.stderr and "invalid choice: 'frobnicate'" in result.stderr


def test_values_and_abbreviations_are_not_taken_for_misspelt_flags():
    """A negative number is a value; a prefix of a flag is argparse's abbreviation; after ``--`` nothing is a flag."""
    parser = next(parser for path, parser in COMMANDS if path == ("build",))
    assert parser.unknown_flags(["--num-pro", "2", "--max-pixels", "-3", "--shard-size=4", "-h", "--", "--x"]) == []
    assert parser.unknown_flags(["--num-procs", "2", "--nope=1", "-q"]) == ["--num-procs", "--nope", "-q"]
