"""Benchmark: what a model sweep (``imagenet-suite evaluate --models``) costs beyond predicting and scoring.

Writes N synthetic 500x375 JPEGs as ``val/<wnid>/*.JPEG`` (as ``bench_predict.py``) and builds
``imagenet_val`` from them. Then, with K random-init models of one architecture (seeds 0..K-1):

* baseline — :func:`imagenet_suite.inference.predict` of the first model over the N images, alone: the
             per-image predict time t (seconds per image);
* sweep    — :func:`imagenet_suite.inference.sweep.run_sweep` of the K models over the same build (predict,
             score, bootstrap, suite.json/suite.md, then the leaderboard), locally or with ``--executor ray``
             on a local Ray cluster of ``--num-proc`` CPUs; once per K given (``--models 2 8 24``), each in a
             fresh sweep folder.

Each sweep's time is split by stage (``stage_clock.StageClock``: wall and CPU seconds of this process, every
thread, each stage exclusive of the others): loading the model, opening its run folder, predicting, scoring,
the report rows on the bootstrap resamples (``resample``), the suite summary, the headline numbers on the
resamples (``intervals``), the uncertainty files, suite.md and its plots, sweep.json, the leaderboard, and the
rest. *Overhead* is everything but predicting, scoring and the bootstrap (``predict``, ``score``,
``resample``, ``intervals``), per model; with several K the per-model overhead of each is printed, and its
slope between the smallest and the largest K shows whether it is constant per model (a 300-model zoo is then
300 times it). CPU seconds are the figure to read on a shared machine: wall seconds there include waiting
for the cores.

It also prints t, the sweep's seconds per model and per image, and the cost of a zoo:
``images per suite x models x t`` (``--suite-images``, ``--zoo``), on this machine and at a throughput
given with ``--images-per-s`` (e.g. a GPU figure of docs/benchmarks.md).

``--outputs-of RUN_DIR`` (a run folder at the real image counts, e.g. ``bench_suite_scale.py``'s): a run's own
outputs (its charts, ``suite.md``, ``report.html``, as ``evaluate`` writes them) cost more at the real counts
than at the sweep's. The benchmark then times those three calls on RUN_DIR's suite.json and on the sweep's last
run's, interleaved in this process (``--output-calls`` each, after one call of each), and prints the median
difference and the per-model overhead of a zoo at RUN_DIR's counts: the slope above plus that difference.

``--model tiny``: a nearly free user model (a ``.py`` file: one 3x3 convolution, pooling, a linear head to
1000 classes; 32x32 input), so that the sweep's own costs are what is measured.

Usage:
    uv run --frozen python benchmarks/bench_sweep.py [--images 64] [--models 3] [--model resnet50|tiny]
        [--batch-size 32] [--workers 1] [--bootstrap 1000] [--executor local|ray] [--num-proc 2]
        [--suite-images 3845350] [--zoo 326] [--images-per-s 3826] [--outputs-of RUN_DIR] [--output-calls 6]
Zoo overhead: --images 16 --model tiny --models 2 12 --workers 0 --bootstrap 100 --outputs-of RUN_DIR
Quick check: --images 16 --models 2 --model test_resnet --bootstrap 50
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

QUBA_SUITE_IMAGES = 50_000 + 75 * 50_000 + 30_000 + (1_280 + 160 + 160 + 800 + 800) + 3 * 4_050
"""Images a model predicts for Beyond Accuracy's suite: ImageNet val, the 75 ImageNet-C sets, ImageNet-R, the
five shape-bias sets (cue-conflict, edge, silhouette, sketch, stylized) and IN-9 original, mixed_same,
mixed_rand."""

SCORING = ("predict", "score", "resample", "intervals")
"""The stages that are predicting and scoring (the bootstrap included); the others are the overhead."""


def stage_clock():
    """A StageClock over the stages of a sweep (see the module docstring)."""
    from stage_clock import StageClock, evaluate_stages

    from imagenet_suite.inference import sweep

    clock = StageClock()
    for owner, name, stage in (
        (sweep, "load_model", "load model"),
        (sweep._Sweep, "__init__", "check sweep"),
        *evaluate_stages(),
        (sweep._Sweep, "write", "sweep.json"),
        (sweep._Sweep, "finish", "leaderboard"),
    ):
        clock.wrap(owner, name, stage)
    return clock


def outputs_seconds(suite_files: dict[str, Path], calls: int) -> dict[str, list[float]]:
    """CPU seconds of a run's own outputs as ``evaluate`` writes them (``run_charts``, ``write_suite_markdown``,
    ``write_run_report``) for each suite.json of ``suite_files``: one call each first (not counted), then
    ``calls`` rounds, the suites interleaved within a round, into a scratch folder."""
    from imagenet_suite.scoring.presentation.html_run import write_run_report
    from imagenet_suite.scoring.presentation.suite_markdown import run_charts, write_suite_markdown
    from imagenet_suite.scoring.summary.suite_json import read_suite

    suites = {name: read_suite(path) for name, path in suite_files.items()}
    seconds: dict[str, list[float]] = {name: [] for name in suites}
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(calls + 1):
            for name, suite in suites.items():
                start = time.process_time()
                charts = run_charts(suite)
                write_suite_markdown(suite, scratch, charts)
                write_run_report(suite, scratch, charts)
                if round_:
                    seconds[name].append(time.process_time() - start)
    return seconds


def model_spec(name: str, root: Path) -> str:
    if name != "tiny":
        return f"timm:{name}"
    from scale_sources import TINY_MODEL

    (root / "tiny.py").write_text(TINY_MODEL)
    return f"{root / 'tiny.py'}:make"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=64)
    parser.add_argument("--models", type=int, nargs="+", default=[3], help="models per sweep (one sweep per value)")
    parser.add_argument("--model", default="resnet50", help="timm model name (random init), or 'tiny'")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--executor", choices=("local", "ray"), default="local")
    parser.add_argument("--num-proc", type=int, default=2, help="CPUs of the local Ray cluster (--executor ray)")
    parser.add_argument("--suite-images", type=int, default=QUBA_SUITE_IMAGES)
    parser.add_argument("--zoo", type=int, default=326, help="models of the zoo to estimate (Beyond Accuracy: 326)")
    parser.add_argument("--images-per-s", type=float, default=3826.0, help="another device's predict throughput")
    parser.add_argument("--outputs-of", type=Path, help="a run folder at the real counts: its own outputs' cost")
    parser.add_argument("--output-calls", type=int, default=6, help="timed calls of each run's outputs")
    args = parser.parse_args()

    from bench_predict import write_images

    from imagenet_suite.core.options import BuildOptions
    from imagenet_suite.core.runner import build_dataset
    from imagenet_suite.inference import PredictOptions, load_model, predict
    from imagenet_suite.inference.suite_options import SuiteOptions
    from imagenet_suite.inference.sweep import read_models, run_sweep

    print(
        f"load average at the start: {Path('/proc/loadavg').read_text().strip()}; {len(os.sched_getaffinity(0))} CPUs"
    )
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        spec = model_spec(args.model, root)
        write_images(root / "images", args.images)
        dataset = build_dataset(
            "imagenet_val", root / "out", ["default"], options=BuildOptions(manual_dir=root / "images", progress=False)
        )
        options = PredictOptions(device="cpu", batch_size=args.batch_size, workers=args.workers, progress=False)
        loaded = load_model(spec, "none", seed=0)
        predict(dataset, loaded, root / "warm.pt", options=options)  # imports, page cache
        start = time.perf_counter()
        predict(dataset, loaded, root / "alone.pt", options=options)
        per_image = (time.perf_counter() - start) / args.images
        del loaded
        ray = {"executor": "ray", "num_proc": args.num_proc} if args.executor == "ray" else {}
        suite = SuiteOptions(predict=options, bootstrap=args.bootstrap, **ray)
        zoo = root / "zoo.txt"
        zoo.write_text("".join(f"{spec} weights=none seed={seed}\n" for seed in range(max(args.models))))
        models = read_models([zoo])
        run_sweep(models[:1], [dataset], root / "warm-sweep", suite)  # the imports a first sweep pays
        clock = stage_clock()
        try:
            for count in args.models:
                clock.reset()
                wall, cpu = time.perf_counter(), time.process_time()
                result = run_sweep(models[:count], [dataset], root / f"sweep-{count}", suite)
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                assert not result.errors, result.errors
                results[count] = (wall, cpu, clock.snapshot(), result, Path("/proc/loadavg").read_text().split()[0])
        finally:
            clock.restore()
        if args.outputs_of:
            last = root / f"sweep-{args.models[-1]}"
            sweep_suite = next(last.rglob("suite.json"))
            outputs = outputs_seconds({"sweep": sweep_suite, "real": args.outputs_of / "suite.json"}, args.output_calls)
    print(
        f"{args.images} JPEGs 500x375, {spec} (random init), cpu, batch {args.batch_size}, "
        f"{args.workers} workers, torch threads {torch.get_num_threads()}, bootstrap {args.bootstrap}, "
        f"executor {args.executor}"
    )
    print(f"  predict alone:  {per_image * 1000:8.1f} ms per image ({1 / per_image:.2f} images/s)")
    overhead = {}
    for count, (wall, cpu, stages, result, load) in results.items():
        seconds = [record["seconds"] for record in result.record["models"].values()]
        predicted = count * args.images * per_image
        print(f"sweep of {count} models (load average {load} at its end): {wall:.2f} s wall, {cpu:.2f} s CPU")
        print(f"  {json.dumps(seconds)} s per model; {wall / (count * args.images) * 1000:.1f} ms per model-image")
        print(f"  {wall / predicted:.2f}x K x N x t; per model, by stage (wall / CPU seconds, each stage exclusive):")
        other_wall = wall - sum(stage.wall for stage in stages.values())
        other_cpu = cpu - sum(stage.cpu for stage in stages.values())
        for name, stage in [*stages.items(), ("other", None)]:
            w, c = (stage.wall, stage.cpu) if stage else (other_wall, other_cpu)
            mark = "" if name in SCORING else "  (overhead)"
            print(f"    {name:20s} {w / count:7.3f} / {c / count:7.3f}{mark}")
        beyond_wall = wall - sum(stages[name].wall for name in SCORING)
        beyond_cpu = cpu - sum(stages[name].cpu for name in SCORING)
        overhead[count] = (beyond_wall, beyond_cpu)
        print(
            f"  overhead beyond predicting and scoring: {beyond_wall / count:.3f} s wall, "
            f"{beyond_cpu / count:.3f} s CPU per model"
        )
    if len(overhead) > 1:
        low, high = min(overhead), max(overhead)
        slope_wall = (overhead[high][0] - overhead[low][0]) / (high - low)
        slope_cpu = (overhead[high][1] - overhead[low][1]) / (high - low)
        print(
            f"overhead per added model ({low} -> {high} models): {slope_wall:.3f} s wall, {slope_cpu:.3f} s CPU; "
            f"a 300-model zoo at that slope: {300 * slope_cpu:.0f} s CPU of overhead (extrapolated)"
        )
        if args.outputs_of:
            medians = {name: statistics.median(values) for name, values in outputs.items()}
            more = medians["real"] - medians["sweep"]
            print(
                f"a run's own outputs (charts, suite.md, report.html), CPU s, {args.output_calls} calls each: "
                f"{args.outputs_of}: {json.dumps([round(v, 3) for v in outputs['real']])}, median {medians['real']:.3f}; "
                f"the sweep's: {json.dumps([round(v, 3) for v in outputs['sweep']])}, median {medians['sweep']:.3f}"
            )
            print(
                f"overhead per added model at {args.outputs_of}'s counts: {slope_cpu:.3f} + {more:.3f} = "
                f"{slope_cpu + more:.3f} s CPU (target: under 1 s)"
            )
    images = args.suite_images * args.zoo
    print(f"zoo estimate: {args.suite_images:,} images per suite x {args.zoo} models = {images:,} model-images")
    print(f"  at {per_image * 1000:.1f} ms per image here: {images * per_image / 3600:,.0f} hours on this machine")
    print(f"  at {args.images_per_s:,.0f} images/s per device: {images / args.images_per_s / 3600:,.1f} device-hours")
    print(f"load average at the end: {Path('/proc/loadavg').read_text().strip()}")


if __name__ == "__main__":
    main()
