"""Errors keep their causes: the CLI prints one line, and ``--debug`` / ``IMAGENET_SUITE_DEBUG=1`` the chain.

Every error the library raises in place of another is raised ``from`` it (``raise NewError(...) from
err``), so the full traceback shows what went wrong underneath (a ``JSONDecodeError`` under "not valid
JSON", a ``FileNotFoundError`` under a missing ``--pins`` file). A test reads every module of the
package and fails on a ``raise ... from None``, which would drop the cause.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from imagenet_suite import cli
from tests.helpers import REPO_ROOT

DIRECT_CAUSE = "The above exception was the direct cause of the following exception"
PACKAGE_FOLDERS = ("imagenet_suite", "builders", "hierarchies")


@pytest.fixture
def bad_json_folder(tmp_path: Path) -> Path:
    """A dataset folder whose build_info.json is not JSON."""
    (tmp_path / "build_info.json").write_text('{"name": \n', encoding="utf-8")
    return tmp_path


def _run(argv: list[str], capsys) -> tuple[int, list[str]]:
    code = cli.main(argv)
    captured = capsys.readouterr()
    assert captured.out == ""
    return code, captured.err.splitlines()


def test_an_error_is_one_line_without_debug(bad_json_folder, capsys, monkeypatch):
    monkeypatch.delenv(cli.DEBUG_ENV, raising=False)
    code, lines = _run(["verify", str(bad_json_folder)], capsys)
    assert code == 2
    assert len(lines) == 1, lines
    assert lines[0].startswith("imagenet-suite verify: error: ") and "build_info.json: not valid JSON" in lines[0]


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_debug_prints_the_chain_of_causes(how, bad_json_folder, capsys, monkeypatch):
    monkeypatch.delenv(cli.DEBUG_ENV, raising=False)
    argv = ["verify", str(bad_json_folder)]
    if how == "flag":
        argv = ["--debug", *argv]
    else:
        monkeypatch.setenv(cli.DEBUG_ENV, "1")
    code, lines = _run(argv, capsys)
    err = "\n".join(lines)
    assert code == 2
    assert lines[0] == "Traceback (most recent call last):"
    cause = err.index("json.decoder.JSONDecodeError: ")
    assert err.index(DIRECT_CAUSE) > cause
    assert err.index("imagenet_suite.errors.DatasetFolderError: ") > err.index(DIRECT_CAUSE)
    assert lines[-1].startswith("imagenet-suite verify: error: ") and "not valid JSON" in lines[-1]


def test_debug_shows_the_cause_of_a_missing_pins_file(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(cli.DEBUG_ENV, raising=False)
    argv = ["build", "imagenet_val", "--pins", str(tmp_path / "missing.tsv"), "--out", str(tmp_path / "out")]
    code, lines = _run(["--debug", *argv], capsys)
    err = "\n".join(lines)
    assert code == 2
    assert err.index("FileNotFoundError: ") < err.index(DIRECT_CAUSE) < err.index("imagenet_suite.errors.SourceError")
    assert lines[-1].startswith("imagenet-suite build: error: --pins ") and "no such file" in lines[-1]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("value", ["", "0", "false", "off"])
def test_the_environment_variable_off(value, bad_json_folder, capsys, monkeypatch):
    monkeypatch.setenv(cli.DEBUG_ENV, value)
    code, lines = _run(["verify", str(bad_json_folder)], capsys)
    assert code == 2 and len(lines) == 1, lines


def test_help_documents_debug(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--debug" in text and f"{cli.DEBUG_ENV}=1" in text and "traceback" in text


def _raises_from_none(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        f"{path.relative_to(REPO_ROOT)}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Raise) and isinstance(node.cause, ast.Constant) and node.cause.value is None
    ]


def test_no_raise_from_none():
    """``raise X from None`` hides the cause from ``--debug``; raise it ``from err`` instead."""
    files = sorted(p for folder in PACKAGE_FOLDERS for p in (REPO_ROOT / folder).rglob("*.py"))
    assert len(files) > 50
    found = [hit for path in files for hit in _raises_from_none(path)]
    assert not found, "raise ... from None drops the cause (use `from err`): " + ", ".join(found)
