"""Benchmark: ``evaluate``'s peak memory against the number of images of a split, with and without the bootstrap.

    uv run --frozen python benchmarks/bench_evaluate_memory.py                       # 1,000 .. 40,000 images
    uv run --frozen python benchmarks/bench_evaluate_memory.py --images 500 2000 --bootstrap 100   # a quick check
    uv run --frozen python benchmarks/bench_evaluate_memory.py --images 20000 40000 50000 --repeat 3

For each ``--images`` N: an ``imagenet_val`` build of N tiny synthetic images (the test fixture's tar layout),
then ``imagenet-suite evaluate`` of the nearly free ``.py`` model of ``scale_sources.py`` on it, as a child
process, once with ``--bootstrap 0`` (the baseline, same run) and once with ``--bootstrap B``. Per run: wall and
CPU seconds, and the peak RSS of the process (``VmHWM``, sampled). What the split must hold (its logits and
features, float32: N x 1,008 x 4 bytes) is printed beside the peaks; between consecutive sizes the growth of
each peak is printed per added image. Class-wise ACE, the bootstrap's largest working set, takes its resamples
in chunks of ``RESAMPLE_CHUNK_ELEMENTS`` counts (resamples x images): it grows with N only until a chunk holds
fewer resamples than B, then stays. The default sizes straddle that point (16,777 images at B = 1,000).
``--also-with NAME=VALUE`` also measures each bootstrap evaluate with that environment variable set, in the
same run: glibc's allocator settings (``MALLOC_MMAP_THRESHOLD_=131072``: every freed block of 128 KiB or more
returned to the system; ``MALLOC_ARENA_MAX=1``: one heap shared by the threads) change the peak (see
docs/benchmarks.md). ``--baseline-ref REF`` also measures each bootstrap evaluate with the code at that git ref
(``git archive``, as ``bench_leaderboard.py`` does; the same virtual environment), in the same run, and says whether
its numbers are byte-identical to this tree's (``reports/``, ``uncertainty/`` and the summary of ``suite.json``). ``--repeat R`` measures each evaluate R times (the peak of one process varies from run to run: when the
allocator returns memory and threads finish differ): every peak is printed, and the medians are compared.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import itertools
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_leaderboard import ROOT, archive
from bench_suite_scale import CLI, loadavg, run_child
from scale_sources import TINY_MODEL

from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.core.sources import read_pins_file
from imagenet_suite.scoring.metrics.ace_replicates import RESAMPLE_CHUNK_ELEMENTS
from tests.fixtures import imagenet_layouts as val_fx

WIDTH = 1000 + 8  # logits and the tiny model's features, per image
MIB = 1024**2


def build(work: Path, images: int) -> Path:
    manual = val_fx.write_tar_layout(work / f"src-{images}", val_fx.make_val_images(images))
    options = BuildOptions(
        manual_dir=manual, pins=read_pins_file(manual / "checksums.tsv"), offline=True, progress=False
    )
    return build_dataset("imagenet_val", work / f"val-{images}", ["default"], options=options)


def evaluate(work: Path, folder: Path, images: int, bootstrap: int, batch_size: int) -> tuple[float, float, int, str]:
    """One evaluate as a child process: ``(wall s, CPU s, peak bytes, sha256 of its numbers: :func:`_digest`)``."""
    out = work / f"run-{images}-{bootstrap}"
    argv = [str(CLI), "evaluate", "--model", f"{work / 'tiny.py'}:make", "--weights", "none", "--datasets",
            str(folder), "--out", str(out), "--workers", "0", "--no-progress", "--bootstrap", str(bootstrap),
            "--batch-size", str(batch_size)]  # fmt: skip
    wall, cpu, peak, _ = run_child(argv, work / f"evaluate-{images}-{bootstrap}.log")
    digest = _digest(out)
    shutil.rmtree(out)
    return wall, cpu, peak, digest


def _digest(run: Path) -> str:
    """sha256 over what a run's numbers are: every file under ``reports/`` and ``uncertainty/`` (the metric rows, the
    replicates), names and bytes in sorted order, and the ``summary`` of ``suite.json`` (with its intervals)."""
    digest = hashlib.sha256()
    for path in sorted([*(run / "reports").rglob("*"), *(run / "uncertainty").rglob("*")]):
        if path.is_file():
            digest.update(str(path.relative_to(run)).encode() + b"\0" + path.read_bytes())
    summary = json.loads((run / "suite.json").read_text())["summary"]
    digest.update(json.dumps(summary, sort_keys=True).encode())
    return digest.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, nargs="+", default=[1000, 8000, 20000, 40000])
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=1, help="measurements of each evaluate (medians compared)")
    parser.add_argument("--also-with", action="append", default=[], metavar="NAME=VALUE",
                        help="also measure each bootstrap evaluate with this environment variable set (e.g. glibc's "
                        "MALLOC_MMAP_THRESHOLD_=131072 or MALLOC_ARENA_MAX=1); repeatable")  # fmt: skip
    parser.add_argument("--baseline-ref", default=None, help="also measure each bootstrap evaluate with the code at "
                        "this git ref (e.g. main)")  # fmt: skip
    parser.add_argument("--work", type=Path, default=None, help="folder for the builds (default: a temp dir)")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-evaluate-memory-"))
    work.mkdir(parents=True, exist_ok=True)
    (work / "tiny.py").write_text(TINY_MODEL)
    print(f"load average {loadavg()} at the start; bootstrap {args.bootstrap}; resample chunk "
          f"{RESAMPLE_CHUNK_ELEMENTS:,} counts ({RESAMPLE_CHUNK_ELEMENTS // args.bootstrap:,} images at this B)")  # fmt: skip
    here = ("PYTHONPATH", str(ROOT))  # this tree's code, whichever checkout the environment installed
    variants = {"bootstrap 0": (0, [here]), f"bootstrap {args.bootstrap}": (args.bootstrap, [here])}
    for setting in args.also_with:
        name, _, value = setting.partition("=")
        if not name or not value:
            parser.error(f"--also-with {setting!r}: expected NAME=VALUE")
        variants[f"bootstrap {args.bootstrap}, {setting}"] = (args.bootstrap, [here, (name, value)])
    if args.baseline_ref:
        baseline = archive(args.baseline_ref, work / "baseline-code")
        variants[f"bootstrap {args.bootstrap}, {args.baseline_ref}"] = (args.bootstrap, [("PYTHONPATH", str(baseline))])
    rows = []
    for images in args.images:
        folder = build(work, images)
        measured: dict[str, list[tuple[float, float, int, str]]] = {label: [] for label in variants}
        for _ in range(args.repeat):
            for label, (bootstrap, settings) in variants.items():
                with _environment(settings):
                    measured[label].append(evaluate(work, folder, images, bootstrap, args.batch_size))
        rows.append((images, {label: _median(found) for label, found in measured.items()}))
        peaks = "; ".join(
            f"{label}: {', '.join(f'{m[2] / MIB:,.0f}' for m in found)}" for label, found in measured.items()
        )
        print(f"  {images:,} images, peak MiB: {peaks}", flush=True)
        if args.baseline_ref:
            digests = {m[3] for label, found in measured.items() if label != "bootstrap 0" for m in found}
            print(
                f"  {images:,} images, reports, replicates and intervals byte-identical in every bootstrap evaluate: {len(digests) == 1}"
            )
    print(f"\nmedians of {args.repeat} measurement(s), peak MiB (wall / CPU s):")
    print(f"| images | must hold MiB | {' | '.join(variants)} |")
    print(f"| ---: | ---: |{' ---: |' * len(variants)}")
    for images, found in rows:
        cells = " | ".join(f"{m[2] / MIB:,.0f} ({m[0]:.1f} / {m[1]:.1f})" for m in found.values())
        print(f"| {images:,} | {images * WIDTH * 4 / MIB:,.0f} | {cells} |")
    print(f"\ngrowth of the peak per added image (KiB), between consecutive sizes; must hold {WIDTH * 4 / 1024:.1f}:")
    for (n0, found0), (n1, found1) in itertools.pairwise(rows):
        growth = ", ".join(
            f"{label} {(found1[label][2] - found0[label][2]) / (n1 - n0) / 1024:.1f}" for label in variants
        )
        print(f"  {n0:,} -> {n1:,}: {growth}")
    print(f"load average {loadavg()} at the end")
    if args.work is None:
        shutil.rmtree(work)


@contextlib.contextmanager
def _environment(settings: list[tuple[str, str]]):
    """The environment variables ``settings`` (name, value) set for the child processes started in the block."""
    saved = {name: os.environ.get(name) for name, _ in settings}
    os.environ.update(dict(settings))
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value


def _median(measured: list[tuple[float, float, int, str]]) -> tuple[float, float, int]:
    """Per field (wall s, CPU s, peak bytes) the median of the measurements."""
    wall, cpu, peak, _ = zip(*measured, strict=True)
    return statistics.median(wall), statistics.median(cpu), int(statistics.median(peak))


if __name__ == "__main__":
    main()
