"""Benchmark: where the time goes before ``imagenet-suite review open`` prints the App URL.

Builds the tiny OOD dataset of the App tests (12 images, ImageNet-1k logits with 3 confident rows),
then times, each in a fresh Python process on a private embedded database:

* ``import imagenet_suite.cli`` — the CLI's own start;
* ``import fiftyone`` — what every review command pays before it can talk to the database;
* ``import fiftyone.server.app`` — what the App server process pays before it can answer;
* ``review load`` — the whole load without the App: CLI, FiftyOne, mongod, samples, saved views;
* ``review open`` until the URL is printed (and until each line it prints on stderr), killed then.

``review open`` starts the App server before it loads the dataset, so the floor FiftyOne allows is
about ``max(review load, import fiftyone.server.app + its start)``: the benchmark prints time-to-URL
against ``review load`` and against the server's import. It also counts the deprecation warnings
``review open`` printed (every line that is not its own: expected 0). Usage:

    uv run --frozen --all-extras python benchmarks/bench_review_open.py [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CONFIDENT = {"waffles_002_1002": (931, 0.97), "donuts_001_1001": (500, 0.9), "s_sky_003_1003": (10, 0.6)}
URL_TIMEOUT = 600.0


def _env(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "FIFTYONE_DATABASE_URI"}
    env.update(
        FIFTYONE_DATABASE_DIR=str(work / "fiftyone-db"),
        IMAGENET_SUITE_REVIEW_CACHE=str(work / "cache"),
        FIFTYONE_DO_NOT_TRACK="true",
        PYTHONPATH=str(ROOT),
    )
    return env


def _timed(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, cwd=ROOT, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def _open_until_url(args: list[str], env: dict[str, str]) -> tuple[float, list[tuple[float, str]]]:
    """Seconds until ``review open`` prints its URL, and its stderr lines with their times."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "imagenet_suite.cli", "review", "open", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = []
    try:
        for line in process.stdout:
            lines.append((time.perf_counter() - start, line.rstrip()))
            if line.startswith("http://127.0.0.1:"):
                return lines[-1][0], lines
            if time.perf_counter() - start > URL_TIMEOUT:
                break
        raise SystemExit("review open printed no URL; its output:\n" + "\n".join(t for _, t in lines))
    finally:
        process.terminate()
        process.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="review open runs (the first is cold: new dataset)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-review-open-"))
    try:
        from tests.fixtures.review_datasets import build_tiny_ood, tiny_ood_ids, write_outputs

        folder = build_tiny_ood(work / "out")
        outputs = write_outputs(work / "outputs.npz", tiny_ood_ids(), CONFIDENT)
        env = _env(work)
        python = [sys.executable, "-c"]
        imports = {
            "import imagenet_suite.cli": _timed([*python, "import imagenet_suite.cli"], env),
            "import fiftyone": _timed([*python, "import fiftyone"], env),
            "import fiftyone.server.app": _timed([*python, "import fiftyone.server.app"], env),
        }
        review = [str(folder), "--outputs", str(outputs), "--reviewer", "bench"]
        load = _timed([sys.executable, "-m", "imagenet_suite.cli", "review", "load", *review], env)
        for name, seconds in imports.items():
            print(f"{name:<34} {seconds:7.1f} s")
        print(f"{'review load (warm dataset)':<34} {load:7.1f} s")
        for run in range(args.repeat):
            url_s, lines = _open_until_url(review, env)
            ours = ("In the App", "dataset: ", "http://127.0.0.1:")
            other = sum(not text.startswith(ours) for _, text in lines)
            print(f"review open, run {run + 1}: URL after {url_s:.1f} s ({other} lines not of the review: warnings)")
            for seconds, text in lines:
                print(f"    {seconds:6.1f} s  {text[:110]}")
            floor = max(load, imports["import fiftyone.server.app"])
            print(
                f"    time-to-URL / review load = {url_s / load:.2f}; "
                f"/ App server import = {url_s / imports['import fiftyone.server.app']:.2f}; "
                f"/ max of both = {url_s / floor:.2f}"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
