"""The bounds of the numbers that scale a run (issue 40: ``evaluate --bootstrap 1000000000`` ran until killed).

One table (``imagenet_suite.limits.LIMITS``): every options object holding such a number refuses a value above
its bound when made, naming the parameter; the command line refuses it before a command imports torch
(``tests/test_cli_startup.py``) and before a model is loaded (``tests/test_cli_bad_inputs.py``, with a model that
fails to load); and the docs page of every command that takes one lists its bound, as the table says.
"""

from __future__ import annotations

import argparse
import re

import pytest

from imagenet_suite.errors import ConfigError, DatasetFolderError
from imagenet_suite.limits import LIMITS, check_limit, check_limits
from tests.helpers import REPO_ROOT


def _predict(**fields):
    from imagenet_suite.inference.predict import PredictOptions

    return PredictOptions(**fields)


def _suite(**fields):
    from imagenet_suite.inference.suite_options import SuiteOptions

    return SuiteOptions(**fields)


def _fit_stats(**fields):
    from imagenet_suite.inference.fit_stats import FitStatsOptions

    return FitStatsOptions(**fields)


def _attack(**fields):
    from imagenet_suite.inference.adversarial import AttackOptions

    return AttackOptions(n=10, **fields)


def _build(**fields):
    from imagenet_suite.core.options import BuildOptions

    return BuildOptions(**fields)


def _bootstrap(bootstrap):
    from imagenet_suite.scoring.summary.intervals import Bootstrap

    return Bootstrap(resamples=bootstrap)


def _grid(per_k):
    from imagenet_suite.builders.patchml import grid_of_folder

    return grid_of_folder(REPO_ROOT / "no-such-folder", per_k=per_k)  # the bound is checked before the folder


def _examples(examples):
    from imagenet_suite.scoring.presentation.figures.anzaku2024_examples import prediction_examples as fig8

    return fig8(REPO_ROOT / "no-such-folder", REPO_ROOT / "no-such-file.pt", examples=examples)  # checked first


HOLDERS = [
    (_predict, "batch_size"),
    (_predict, "workers"),
    (_suite, "adversarial"),
    (_suite, "bootstrap"),
    (_suite, "num_proc"),
    (_fit_stats, "per_class"),
    (_fit_stats, "knn_rows"),
    (_attack, "batch_size"),
    (_attack, "workers"),
    (_build, "num_proc"),
    (_bootstrap, "bootstrap"),
    (_grid, "per_k"),
    (_examples, "examples"),
]


@pytest.mark.parametrize(("make", "name"), HOLDERS, ids=[f"{m.__name__[1:]}.{n}" for m, n in HOLDERS])
def test_every_holder_refuses_one_above_the_bound_naming_the_parameter(make, name):
    maximum = LIMITS[name].maximum
    with pytest.raises(ConfigError) as refused:
        make(**{name: maximum + 1})
    assert refused.value.parameters == (name,)
    assert str(refused.value) == f"{name} must be at most {maximum:,} ({LIMITS[name].why}), got {maximum + 1:,}"
    if make in (_grid, _examples):  # the bound itself is accepted: they go on to read their (absent) folder
        with pytest.raises(DatasetFolderError, match="no-such-folder: not a directory"):
            make(**{name: maximum})
    else:
        make(**{name: maximum})  # the bound itself is accepted


@pytest.mark.parametrize("name", list(LIMITS))
def test_below_the_minimum_and_not_a_number_are_refused_and_none_only_where_it_means_something(name):
    limit = LIMITS[name]
    for value in (limit.minimum - 1, "many", 2.5, True):
        with pytest.raises(ConfigError, match=rf"^{name} must be "):
            check_limit(name, value)
    assert check_limit(name, limit.minimum) == limit.minimum
    if limit.none is None:
        with pytest.raises(ConfigError):
            check_limit(name, None)
    else:
        assert check_limit(name, None) is None


def test_the_command_line_check_reads_the_arguments_of_those_names_only():
    check_limits(argparse.Namespace(batch_size=256, seed=-5, other=10**12))
    with pytest.raises(ConfigError, match=r"^bootstrap must be at most 100,000"):
        check_limits(argparse.Namespace(bootstrap=10**9))


def test_the_command_line_and_the_options_give_the_same_message():
    """``cli.main`` checks the parsed arguments before the command builds its options: the same words."""
    from imagenet_suite.inference.suite_options import SuiteOptions

    for name, value in (("bootstrap", 10**9), ("adversarial", -3), ("num_proc", 0)):
        with pytest.raises(ConfigError) as early:
            check_limits(argparse.Namespace(**{name: value}))
        with pytest.raises(ConfigError) as late:
            SuiteOptions(**{name: value})
        assert str(early.value) == str(late.value)


# -- the docs of each command list the bounds of its flags ------------------------------------------------

PAGES = {
    ("predict",): "predict.md",
    ("evaluate",): "evaluate.md",
    ("ood", "fit-stats"): "ood.md",
    ("build",): "building.md",
    ("patchml", "materialise"): "patchml.md",
    ("patchml", "grid"): "patchml.md",
    ("patchml", "predictions"): "patchml.md",
}


def _commands() -> dict[tuple[str, ...], argparse.ArgumentParser]:
    """Every leaf command of the CLI by its words (``("ood", "fit-stats")``)."""
    from imagenet_suite.cli import build_parser

    found = {}

    def walk(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> None:
        subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subparsers:
            found[words] = parser
        for action in subparsers:
            for name, child in action.choices.items():
                walk(child, (*words, name))

    walk(build_parser(), ())
    return found


def _bounded_flags(parser: argparse.ArgumentParser) -> dict[str, str]:
    """The flags of a command that set a bounded parameter: ``{parameter: flag}``."""
    from imagenet_suite.commands._flags import Flags

    return {name: flag for name, flag in Flags(parser).mapping().items() if name in LIMITS}


def test_every_command_taking_a_bounded_number_has_a_docs_page_listed_here():
    taking = {words for words, parser in _commands().items() if _bounded_flags(parser)}
    assert taking == set(PAGES)


@pytest.mark.parametrize("words", list(PAGES), ids=[" ".join(words) for words in PAGES])
def test_the_docs_page_of_the_command_lists_the_bound_of_each_flag(words):
    text = (REPO_ROOT / "docs" / PAGES[words]).read_text(encoding="utf-8")
    for name, flag in _bounded_flags(_commands()[words]).items():
        sub = rf" \(`{words[1]}`\)" if words[0] == "patchml" else ""
        rows = re.findall(rf"^\s*\| `{flag}`{sub} \| ([\d,]+) to ([\d,]+)\b", text, flags=re.MULTILINE)
        assert rows, f"docs/{PAGES[words]} has no row of bounds for {flag}"
        limit = LIMITS[name]
        assert {(int(low.replace(",", "")), int(high.replace(",", ""))) for low, high in rows} == {
            (limit.minimum, limit.maximum)
        }, f"docs/{PAGES[words]}: the bounds of {flag} differ from imagenet_suite.limits.LIMITS[{name!r}]"
