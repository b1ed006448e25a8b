"""Benchmark: what a model sweep (``imagenet-suite evaluate --models``) costs beyond predicting its images.

Writes N synthetic 500x375 JPEGs as ``val/<wnid>/*.JPEG`` (as ``bench_predict.py``) and builds
``imagenet_val`` from them. Then, with K random-init timm models of one architecture (seeds 0..K-1):

* baseline — :func:`imagenet_suite.inference.predict` of the first model over the N images, alone: the
             per-image predict time t (seconds per image);
* sweep    — :func:`imagenet_suite.inference.sweep.run_sweep` of the K models over the same build (predict,
             score, bootstrap, suite.json/suite.md, then the leaderboard), locally or with ``--executor ray``
             on a local Ray cluster of ``--num-proc`` CPUs.

It prints t, the sweep's seconds per model and per image, the per-model overhead beyond K x N x t
(scoring, the bootstrap, the leaderboard, loading the model), and the cost of a zoo:
``images per suite x models x t`` (``--suite-images``, ``--zoo``), on this machine and at a throughput
given with ``--images-per-s`` (e.g. a GPU figure of docs/benchmarks.md).

Usage:
    uv run --frozen python benchmarks/bench_sweep.py [--images 64] [--models 3] [--model resnet50]
        [--batch-size 32] [--workers 1] [--bootstrap 1000] [--executor local|ray] [--num-proc 2]
        [--suite-images 3845350] [--zoo 326] [--images-per-s 3826]
Quick check: --images 16 --models 2 --model test_resnet --bootstrap 50
"""

from __future__ import annotations

import argparse
import json
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=64)
    parser.add_argument("--models", type=int, default=3, help="models in the sweep (seeds of one architecture)")
    parser.add_argument("--model", default="resnet50", help="timm model name (random init)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--executor", choices=("local", "ray"), default="local")
    parser.add_argument("--num-proc", type=int, default=2, help="CPUs of the local Ray cluster (--executor ray)")
    parser.add_argument("--suite-images", type=int, default=QUBA_SUITE_IMAGES)
    parser.add_argument("--zoo", type=int, default=326, help="models of the zoo to estimate (Beyond Accuracy: 326)")
    parser.add_argument("--images-per-s", type=float, default=3826.0, help="another device's predict throughput")
    args = parser.parse_args()

    from bench_predict import write_images

    from imagenet_suite.core.options import BuildOptions
    from imagenet_suite.core.runner import build_dataset
    from imagenet_suite.inference import PredictOptions, load_model, predict
    from imagenet_suite.inference.suite_options import SuiteOptions
    from imagenet_suite.inference.sweep import read_models, run_sweep

    spec = f"timm:{args.model}"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
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
        zoo.write_text("".join(f"{spec} weights=none seed={seed}\n" for seed in range(args.models)))
        models = read_models([zoo])
        start = time.perf_counter()
        result = run_sweep(models, [dataset], root / "sweep", suite)
        wall = time.perf_counter() - start
    assert not result.errors, result.errors
    seconds = [record["seconds"] for record in result.record["models"].values()]
    predicted = args.models * args.images * per_image
    print(
        f"{args.images} JPEGs 500x375, {args.models} x {spec} (random init), cpu, batch {args.batch_size}, "
        f"{args.workers} workers, torch threads {torch.get_num_threads()}, bootstrap {args.bootstrap}, "
        f"executor {args.executor}"
    )
    print(f"  predict alone:  {per_image * 1000:8.1f} ms per image ({1 / per_image:.2f} images/s)")
    print(f"  sweep:          {wall:8.2f} s for {args.models} models ({json.dumps(seconds)} s per model)")
    print(f"                  {wall / (args.models * args.images) * 1000:8.1f} ms per model-image")
    print(
        f"  overhead:       {(wall - predicted) / args.models:8.2f} s per model beyond K x N x t ({wall / predicted:.2f}x)"
    )
    images = args.suite_images * args.zoo
    print(f"zoo estimate: {args.suite_images:,} images per suite x {args.zoo} models = {images:,} model-images")
    print(f"  at {per_image * 1000:.1f} ms per image here: {images * per_image / 3600:,.0f} hours on this machine")
    print(f"  at {args.images_per_s:,.0f} images/s per device: {images / args.images_per_s / 3600:,.1f} device-hours")


if __name__ == "__main__":
    main()
