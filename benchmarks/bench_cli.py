"""Benchmark: how fast the CLI answers what needs no model and no data, against the interpreter's own start.

Times, each as a fresh process of the ``imagenet-suite`` console script (as users run it):

* ``--help``;
* argument errors: a misspelt flag (argparse), a misspelt builder and a misspelt config (the library's
  "did you mean"), and a value the library's options refuse (``predict --batch-size 0``: its check runs
  after torch is imported, shown for comparison);
* ``list``, ``info imagenet_val``, ``info imagenet_c`` (95 configs);

against, in the same run: ``python -c pass`` (the interpreter's start: the floor) and ``python -c "import
torch"`` / ``"import datasets"`` (what every command used to pay at least in part, and what the commands
above no longer import). Every command runs ``--rounds`` times, round-robin (so a change in the machine's
load falls on all alike); the median and the minimum are printed, with the median's ratio to the floor.

Bytecode: ``--compile`` (the default) first compiles imagenet-suite's own modules into their
``__pycache__`` folders (git-ignored), as the first run of any command does where bytecode may be written;
``--no-compile`` leaves them as they are (with ``PYTHONDONTWRITEBYTECODE`` set and no cache, every run
compiles the modules it imports). The header states the condition, the CPU count and the load average.

    uv run --frozen python benchmarks/bench_cli.py [--rounds 7] [--no-compile] [--no-heavy]
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = str(Path(sys.executable).with_name("imagenet-suite"))


def commands(tmp: Path, heavy: bool) -> dict[str, list[str]]:
    """Label -> argv, the floor first."""
    out = str(tmp / "out")
    found = {
        "python -c pass (floor)": [sys.executable, "-c", "pass"],
        "--help": [CLI, "--help"],
        "error: misspelt flag": [CLI, "build", "imagenet_val", "--out", out, "--num-procs", "2"],
        "error: misspelt builder": [CLI, "info", "imagenet_vall"],
        "error: misspelt config": [CLI, "build", "imagenet_val", "--config", "boxs", "--out", out],
        "list": [CLI, "list"],
        "info imagenet_val": [CLI, "info", "imagenet_val"],
        "info imagenet_c": [CLI, "info", "imagenet_c"],
    }
    if heavy:
        found |= {
            "error: predict --batch-size 0": [
                CLI,
                "predict",
                out,
                "--model",
                "timm:resnet50",
                "--out",
                out + ".pt",
                "--batch-size",
                "0",
                "--device",
                "cpu",
            ],
            'python -c "import torch"': [sys.executable, "-c", "import torch"],
            'python -c "import datasets"': [sys.executable, "-c", "import datasets"],
        }
    return found


def run_once(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, check=False)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="runs of every command (default 7)")
    parser.add_argument(
        "--compile",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="compile imagenet-suite's modules first (default: yes)",
    )
    parser.add_argument(
        "--heavy",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time import torch / datasets and a value error checked after torch (default: yes)",
    )
    args = parser.parse_args()

    if args.compile:
        for folder in ("imagenet_suite", "builders", "hierarchies"):
            compileall.compile_dir(ROOT / folder, quiet=1)
    bytecode = (
        "compiled first"
        if args.compile
        else f"as found (PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r})"
    )
    print(
        f"{os.cpu_count()} CPUs, load average {' '.join(f'{v:.1f}' for v in os.getloadavg())} at the start; "
        f"imagenet-suite bytecode {bytecode}; {args.rounds} rounds, round-robin"
    )

    with tempfile.TemporaryDirectory() as tmp:
        todo = commands(Path(tmp), args.heavy)
        for argv in todo.values():  # warm-up: page cache, bytecode written where it may be
            run_once(argv)
        times: dict[str, list[float]] = {label: [] for label in todo}
        for _ in range(args.rounds):
            for label, argv in todo.items():
                times[label].append(run_once(argv))
    print(f"load average {' '.join(f'{v:.1f}' for v in os.getloadavg())} at the end\n")

    floor = statistics.median(times["python -c pass (floor)"])
    print(f"{'command':34s} {'median s':>9s} {'min s':>7s} {'× floor':>8s}")
    for label, values in times.items():
        median = statistics.median(values)
        print(f"{label:34s} {median:9.3f} {min(values):7.3f} {median / floor:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
