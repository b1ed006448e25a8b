"""What the CLI imports to answer what needs no model and no data: none of the heavy libraries.

``--help``, ``list``, ``info`` and argument errors (argparse's, the library's "did you mean" for a
builder, config or option, and a number out of its bound) run in a fresh interpreter, in-process through ``cli.main``; afterwards none of
torch, datasets, FiftyOne, NumPy, Pillow, pyarrow, ... may be in ``sys.modules``. ``list`` and ``info``
import every builder module for its declarations, so this holds every builder module to importing its
heavy libraries inside the functions that use them. A behavioural check, not a timing:
``benchmarks/bench_cli.py`` times the same commands.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import REPO_ROOT

HEAVY = (
    "torch",
    "torchvision",
    "timm",
    "open_clip",
    "datasets",
    "huggingface_hub",
    "fiftyone",
    "ray",
    "numpy",
    "scipy",
    "cv2",
    "PIL",
    "pyarrow",
    "pandas",
    "matplotlib",
    "sklearn",
    "skimage",
    "imgaug",
    "simplejpeg",
    "tqdm",
)

# runs the CLI in-process on each argv (argparse's SystemExit included), then prints the heavy top-level
# packages found in sys.modules as the last line of stdout
SCRIPT = """
import json, sys
from imagenet_suite import cli
for argv in json.loads(sys.argv[1]):
    try:
        code = cli.main(argv)
    except SystemExit as exit_:
        code = exit_.code
    print(json.dumps({"argv": argv, "code": code}))
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules} & set(json.loads(sys.argv[2])))))
"""


def imported_by(*argvs: list[str]) -> tuple[list[dict], list[str]]:
    """``(exit codes, heavy packages imported)`` of running ``argvs`` one after another in a fresh interpreter."""
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(list(argvs)), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    runs = [json.loads(line) for line in lines[:-1] if line.startswith('{"argv"')]
    return runs, json.loads(lines[-1])


CASES = [
    (["--help"], 0),
    (["list"], 0),
    (["info", "imagenet_c"], 0),
    (["info", "objectnett"], 2),  # a misspelt builder: "did you mean 'objectnet'?"
    (["build", "imagenet_val", "--num-procs", "2", "--out", "unused"], 2),  # argparse: a misspelt flag
    (["build", "imagenet_c", "--config", "gausian_noise_3", "--out", "unused"], 2),  # a misspelt config
    (["build", "perturbations", "--option", "severites=3", "--out", "unused"], 2),  # a misspelt builder option
    (["build", "imagenet_val", "--num-proc", "0", "--out", "unused"], 2),  # a value BuildOptions refuses
    # a number out of its bound (imagenet_suite.limits), refused before the command imports torch (issue 40)
    (["predict", "unused", "--model", "m", "--out", "o.pt", "--batch-size", "1000000000"], 2),
    (["evaluate", "--model", "m", "--datasets", "unused", "--out", "unused", "--bootstrap", "1000000000"], 2),
    (["ood", "fit-stats", "--model", "m", "--train", "unused", "--out", "o.safetensors", "--per-class", "0"], 2),
]


@pytest.mark.parametrize("argv, code", CASES, ids=[" ".join(argv) for argv, _ in CASES])
def test_answers_that_need_no_model_or_data_import_no_heavy_library(argv, code):
    runs, heavy = imported_by(argv)
    assert [run["code"] for run in runs] == [code]
    assert heavy == [], f"imagenet-suite {' '.join(argv)} imported {heavy}"


def test_every_command_help_imports_no_heavy_library():
    from imagenet_suite.cli import build_parser

    top = build_parser()
    names = next(action for action in top._actions if action.dest == "command").choices
    runs, heavy = imported_by(*([name, "--help"] for name in names))
    assert [run["code"] for run in runs] == [0] * len(names)
    assert heavy == [], f"--help of a command imported {heavy}"


def test_the_check_sees_a_heavy_import():
    """The guard itself: a command that does import one is caught (``info --features`` imports datasets)."""
    runs, heavy = imported_by(["info", "imagenet_val", "--features"])
    assert runs[0]["code"] == 0 and "datasets" in heavy
