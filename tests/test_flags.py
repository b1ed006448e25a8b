"""Library errors name parameters, the command line names flags (``errors.param``, ``commands/_flags.py``)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from imagenet_suite import cli
from imagenet_suite.commands._flags import FLAGS
from imagenet_suite.errors import ConfigError, param

PACKAGE = Path(cli.__file__).parent
FLAG = re.compile(r"(?<![\w-])--[a-z]")


def test_a_marked_parameter_reads_as_its_name_and_as_a_flag():
    err = ConfigError(f"{param('batch_size')} must be at least 1, got 0 (see {param('workers')})")
    assert str(err) == "batch_size must be at least 1, got 0 (see workers)"
    assert err.parameters == ("batch_size", "workers")
    assert err.with_flags({"batch_size": "--batch-size"}) == "--batch-size must be at least 1, got 0 (see workers)"
    assert ConfigError(f"wrapped ({err})").parameters == ()  # another error's text carries names, not marks
    with pytest.raises(ValueError, match="takes a Python identifier"):
        param("--batch-size")


def _flags(*argv: str) -> dict[str, str]:
    return getattr(cli.build_parser().parse_args(list(argv)), FLAGS).mapping()


def test_every_command_writes_parameters_as_its_own_flags():
    evaluate = _flags("evaluate", "--model", "m", "--datasets", "d", "--out", "o")
    assert (evaluate["run_dir"], evaluate["batch_size"], evaluate["adversarial_seed"]) == (
        "--out",
        "--batch-size",
        "--adversarial-seed",
    )
    predict = _flags("predict", "d", "--model", "m", "--out", "o.pt")
    assert (predict["out"], predict["folder"], predict["gpu_decode"]) == ("--out", "DATASET_DIR", "--gpu-decode")
    assert "run_dir" not in predict
    loaded = _flags("review", "load", "d")
    assert (loaded["other_review"], loaded["features"], loaded["database_uri"]) == (
        "--other-review",
        "--features",
        "--database-uri",
    )
    assert "port" not in loaded and _flags("review", "open", "d")["port"] == "--port"
    assert _flags("score", "d", "--outputs", "o")["lca_distances"] == "--lca-distance"
    assert _flags("leaderboard", "r", "--out", "b")["allow_mixed_builds"] == "--allow-mixed-builds"


def test_the_one_line_error_names_the_flag(capsys, tmp_path):
    argv = ["evaluate", "--model", "timm:test_resnet", "--datasets", str(tmp_path), "--out", str(tmp_path / "run")]
    assert cli.main([*argv, "--num-proc", "0", "--device", "cpu"]) == 2
    assert capsys.readouterr().err == "imagenet-suite evaluate: error: --num-proc must be ≥ 1, got 0\n"


@pytest.mark.parametrize("package", ["inference", "scoring", "review"])
def test_library_error_messages_name_no_flags(package):
    """A ``raise`` in the library names parameters (``errors.param``), never a flag of a command. (``Missing``
    is no error: the reason a QUBA dimension is missing, recorded in suite.json and shown as such.)"""
    found = []
    for path in sorted((PACKAGE / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and node.exc is not None and not _raises(node, "Missing"):
                texts = [
                    n.value for n in ast.walk(node.exc) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                ]
                found += [f"{path.relative_to(PACKAGE)}:{node.lineno}: {t!r}" for t in texts if FLAG.search(t)]
    assert not found, "\n".join(found)


def _raises(node: ast.Raise, name: str) -> bool:
    return isinstance(node.exc, ast.Call) and isinstance(node.exc.func, ast.Name) and node.exc.func.id == name
