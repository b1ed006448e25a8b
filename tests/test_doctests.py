"""The ``Example:`` blocks of the package's docstrings, run as doctests by the README's test command.

Collection reads source text only: a module is a test case when its file holds a ``>>>`` line, and
it is imported when its case runs, so collecting the suite imports nothing of the package (FiftyOne
in ``review/``, Ray in ``core/executors``) and costs a file scan. Each module is imported by its
package name (``imagenet_suite.builders.x``, never ``builders.x``: the folders ``builders/`` and
``hierarchies/`` are mapped into the ``imagenet_suite`` namespace). Doctest options are
``doctest_optionflags`` of ``[tool.pytest.ini_options]`` (the same flags apply to
``pytest --doctest-modules FILE`` run by hand).

Run only these: ``uv run --frozen --all-extras pytest tests/test_doctests.py``.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# source folder -> the package it is imported as
PACKAGES = {
    "imagenet_suite": "imagenet_suite",
    "builders": "imagenet_suite.builders",
    "hierarchies": "imagenet_suite.hierarchies",
}
PROMPT = re.compile(r"^\s*>>> ", re.MULTILINE)
ENTRY_POINTS = (
    ("imagenet_suite.core.runner", "build_dataset"),
    ("imagenet_suite.scoring.evaluation.report", "score"),
    ("imagenet_suite.inference.predict", "predict"),
)


def modules_with_examples() -> list[str]:
    """Dotted names of the modules whose source holds a doctest prompt, found without importing them."""
    names = []
    for folder, package in PACKAGES.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            if PROMPT.search(path.read_text(encoding="utf-8")):
                parts = path.relative_to(REPO / folder).with_suffix("").parts
                names.append(".".join((package, *(parts[:-1] if parts[-1] == "__init__" else parts))))
    return names


def optionflags(config: pytest.Config) -> int:
    flags = 0
    for name in config.getini("doctest_optionflags"):
        flags |= doctest.OPTIONFLAGS_BY_NAME[name]
    return flags


@pytest.mark.parametrize("module_name", modules_with_examples())
def test_examples(module_name: str, pytestconfig: pytest.Config) -> None:
    module = importlib.import_module(module_name)
    runner = doctest.DocTestRunner(optionflags=optionflags(pytestconfig))
    report: list[str] = []
    for test in doctest.DocTestFinder(exclude_empty=True).find(module, module_name):
        runner.run(test, out=report.append)
    results = runner.summarize(verbose=False)
    assert results.attempted, f"{module_name}: its source has '>>>' but no docstring example was found"
    assert not results.failed, "".join(report)


def has_example(function) -> bool:
    """True when the docstring has an ``Example:`` section with at least one ``>>>`` line after it."""
    doc = inspect.getdoc(function) or ""
    _, found, rest = doc.partition("Example:")
    return bool(found) and bool(PROMPT.search(rest))


def test_every_public_scoring_function_has_an_example() -> None:
    """The functions ``imagenet_suite.scoring`` exports (``__all__``) each show an example."""
    import imagenet_suite.scoring as scoring

    functions = {name: getattr(scoring, name) for name in scoring.__all__ if inspect.isfunction(getattr(scoring, name))}
    assert len(functions) > 20  # the check sees the functions (not only classes and constants)
    missing = sorted(name for name, function in functions.items() if not has_example(function))
    assert not missing, f"public functions of imagenet_suite.scoring without an 'Example:' block: {missing}"


def test_every_metric_function_and_entry_point_has_an_example() -> None:
    """Every public function defined in ``scoring/metrics/*.py``, and the Python entry points."""
    import imagenet_suite.scoring.metrics as metrics

    functions = {f"{module}:{name}": getattr(importlib.import_module(module), name) for module, name in ENTRY_POINTS}
    for info in pkgutil.iter_modules(metrics.__path__):
        module = importlib.import_module(f"{metrics.__name__}.{info.name}")
        for name, value in vars(module).items():
            if not name.startswith("_") and inspect.isfunction(value) and value.__module__ == module.__name__:
                functions[f"{module.__name__}:{name}"] = value
    assert len(functions) > 100
    missing = sorted(name for name, function in functions.items() if not has_example(function))
    assert not missing, f"functions without an 'Example:' block: {missing}"


def test_the_example_check_sees_a_missing_example() -> None:
    def documented():
        """Do.

        Example:
            >>> 1
            1
        """

    def undocumented():
        """Do, with ``>>>`` mentioned but no Example section."""

    assert has_example(documented) and not has_example(undocumented)


def test_modules_are_found_by_their_package_names() -> None:
    names = modules_with_examples()
    assert "imagenet_suite.scoring.metrics.classification" in names
    assert not [name for name in names if not name.startswith("imagenet_suite.")]
