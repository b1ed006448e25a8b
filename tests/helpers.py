"""Small helpers shared by tests: run the CLI, build fixtures, compare folders."""

from __future__ import annotations

import contextlib
import copy
import functools
import io
import os
import re
import subprocess
import sys
from pathlib import Path

from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.core.sources import read_pins_file

REPO_ROOT = Path(__file__).resolve().parents[1]
UNRENDERED = re.compile(r"\{\{\s*\w+\s*\}\}")  # a card placeholder left unfilled (BibTeX's {{ImageNet} is not one)


def run_cli(
    *args: str, check: bool = True, env: dict[str, str] | None = None, subprocess_: bool = False
) -> subprocess.CompletedProcess:
    """Run ``imagenet-suite ARGS``; its exit code, stdout and stderr as a ``CompletedProcess``.

    In this process (``cli.main``, stdout and stderr captured) unless ``subprocess_`` or ``env`` is
    given: then in a fresh interpreter through ``python -m imagenet_suite.cli`` (for what only a process
    shows: environment read at import, signals, the entry point itself). ``env`` adds variables.
    """
    if subprocess_ or env:
        result = subprocess.run(
            [sys.executable, "-m", "imagenet_suite.cli", *args],
            capture_output=True,
            text=True,
            cwd=REPO_ROOT,
            env={**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env or {})},
        )
    else:
        result = _run_in_process(list(args))
    if check and result.returncode != 0:
        raise AssertionError(f"imagenet-suite {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
    return result


def _run_in_process(args: list[str]) -> subprocess.CompletedProcess:
    from imagenet_suite import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(args)
        except SystemExit as exit_:  # argparse: usage errors (2), --help and --version (0)
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 2)
    return subprocess.CompletedProcess(["imagenet-suite", *args], code, out.getvalue(), err.getvalue())


def build_val(layouts: dict[str, Path], layout: str, out: Path, configs=("default",), **options) -> Path:
    """Build imagenet_val from one fixture layout (the tar layout's pins come from its checksums.tsv);
    ``options``: other fields of :class:`BuildOptions` (no progress bars unless given)."""
    manual = layouts[layout]
    pins = read_pins_file(manual / "checksums.tsv") if (manual / "checksums.tsv").exists() else None
    options.setdefault("progress", False)
    return build_dataset("imagenet_val", out, list(configs), BuildOptions(manual_dir=manual, pins=pins, **options))


def folder_bytes(folder: Path) -> dict[str, bytes]:
    """Every file of a dataset folder by relative path."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def load(folder: Path, config: str, split: str = "validation", cache_dir: Path | None = None):
    """``datasets.load_dataset`` of one config/split of a built folder.

    ``datasets`` parses the folder's card YAML (``yaml.safe_load``: pure Python) at every call, and a card lists the
    ClassLabel names of every config (thousands of lines: 0.3-1 s a parse); here a text parsed before is answered
    with a copy of its parse (:func:`_safe_load_once`), so each distinct card is parsed once, by the same parser.
    """
    import datasets
    import yaml

    real = yaml.safe_load
    yaml.safe_load = _safe_load_once
    try:
        return datasets.load_dataset(str(folder), config, split=split, cache_dir=str(cache_dir) if cache_dir else None)
    finally:
        yaml.safe_load = real


def _safe_load_once(stream):
    """``yaml.safe_load(stream)``; a text parsed once per distinct text (a deep copy of the parse: callers may change
    it), a file or bytes every time."""
    return copy.deepcopy(_parsed_yaml(stream)) if isinstance(stream, str) else _parsed_yaml.__wrapped__(stream)


@functools.lru_cache(maxsize=16)
def _parsed_yaml(stream):
    import yaml

    return yaml.load(stream, Loader=yaml.SafeLoader)  # what yaml.safe_load does


def one_line(capsys, argv: list[str]) -> str:
    """Run the CLI in this process; assert exit code 2 and one stderr line without a traceback; return it."""
    from imagenet_suite import cli

    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err.strip()
