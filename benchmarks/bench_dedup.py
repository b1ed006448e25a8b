"""Benchmark: ``evaluate`` on ImageNet val (default + boxes), ReaL images and the multi-label images, with and
without one forward pass per distinct image (``SuiteOptions.dedup``, ``evaluate --no-dedup``), same run.

Makes a synthetic ImageNet val of N JPEGs of ImageNet-like size (500x375, the release's tar layout) and builds
from the one manual folder ``imagenet_val`` (``default``, ``boxes``), ``imagenet_real`` (``images``; ReaL's
real.json) and ``imagenet_multilabel`` (``images``: a human_accuracy JSON in the release's layout annotating
the first 40 % of the images, as Shankar et al.'s 20,000 of 50,000, two of them ImageNet-M): every split holds
the same images. Then runs the suite (both protocols, no bootstrap) with a timm model (random init):

* before — ``dedup=False``: every split predicted in full (val twice, ReaL and the multi-labels under both
  protocols);
* after  — ``dedup=True`` (the default), a fresh run folder and store: each image predicted once per
  preprocessing (centre crop; resize-only for Anzaku et al. 2024), the other rows copied;
* after, shared store — a second run folder sharing the first's store (``--prediction-store``): nothing to
  predict.

Each is run once untimed first (imports, kernels, page cache); rounds rotate which goes first. Prints the best
wall time of each, the images the model was run on (distinct rows of each call: a short call is padded with
copies of its last image) and the ratios to ``before``; checks that the outputs files are byte-identical.

    uv run --frozen python benchmarks/bench_dedup.py [--images 200] [--model resnet18] [--batch-size 32]
        [--workers 2] [--device cpu] [--rounds 2]
Quick check: --images 24 --model test_resnet --batch-size 8 --rounds 1
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fixtures.imagenet_layouts import write_checksums
from tests.fixtures.patchml_sources import build_synthetic_val

REAL_JSON = Path(__file__).resolve().parents[1] / "tests" / "data" / "reassessed-imagenet" / "real.json"
ANNOTATED = 0.4  # Shankar et al. 2020: 20,000 of the 50,000 val images


def build_suite(work: Path, count: int) -> list[Path]:
    """The four builds of one set of ``count`` synthetic val images: val (default, boxes), ReaL, multi-label."""
    from imagenet_suite.core.options import BuildOptions
    from imagenet_suite.core.runner import build_dataset
    from imagenet_suite.core.sources import read_pins_file

    images, val = build_synthetic_val(work, count, ["default", "boxes"])
    manual = work / "manual"
    shutil.copy(REAL_JSON, manual / "real.json")
    annotated = images[: max(2, int(count * ANNOTATED))]
    human = {
        "initial_annots": {image.file_name: {"correct": [image.wnid]} for image in annotated},
        "problematic_images": {},
        "imagenet_m": [image.file_name for image in annotated[:2]],
    }
    (manual / "human_accuracy_v3.0.0.json").write_text(json.dumps(human))
    write_checksums(manual)
    options = BuildOptions(manual_dir=manual, pins=read_pins_file(manual / "checksums.tsv"), progress=False)
    real = build_dataset("imagenet_real", work / "real", ["images"], options=options)
    multilabel = build_dataset("imagenet_multilabel", work / "multilabel", ["images"], options=options)
    return [val, real, multilabel]


class Images:
    """Counts the images a model is run on: the distinct rows of each call (the rest pad a short call)."""

    def __init__(self, model: torch.nn.Module):
        self.count = 0
        model.register_forward_pre_hook(self._count)

    def _count(self, module, args) -> None:
        self.count += len({hashlib.sha256(row.float().cpu().numpy().tobytes()).digest() for row in args[0]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=200)
    parser.add_argument("--model", default="resnet18", help="timm model name (random init)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    from imagenet_suite.inference import PredictOptions, load_model
    from imagenet_suite.inference.evaluate import run_suite
    from imagenet_suite.inference.suite_options import SuiteOptions

    loaded = load_model(f"timm:{args.model}", "none")
    images = Images(loaded.model)
    predict = PredictOptions(device=args.device, batch_size=args.batch_size, workers=args.workers, progress=False)
    work = Path(tempfile.mkdtemp(prefix="bench-dedup-"))
    try:
        datasets = build_suite(work, args.images)
        runs = 0

        def suite(name: str, **options) -> tuple[float, int, Path]:
            nonlocal runs
            runs += 1
            run_dir = work / f"{name}-{runs}"
            before = images.count
            start = time.perf_counter()
            run_suite(loaded, datasets, run_dir, SuiteOptions(predict, bootstrap=0, **options))
            return time.perf_counter() - start, images.count - before, run_dir

        store = work / "store"
        suite("warm-up", prediction_store=store)  # fills the shared store, warms imports, kernels, page cache
        runners = {
            "before": lambda: suite("before", dedup=False),
            "after": lambda: suite("after"),
            "second": lambda: suite("second", prediction_store=store),
        }
        suite("warm-up", dedup=False)
        results: dict[str, list[tuple[float, int, Path]]] = {name: [] for name in runners}
        names = list(runners)
        for round_index in range(args.rounds):
            for name in names[round_index % len(names) :] + names[: round_index % len(names)]:
                results[name].append(runners[name]())
        outputs = {
            name: {p.name: p.read_bytes() for p in sorted((found[-1][2] / "outputs").glob("*.pt"))}
            for name, found in results.items()
        }
        same = outputs["before"] == outputs["after"] == outputs["second"]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    annotated = max(2, int(args.images * ANNOTATED))
    print(
        f"{args.images} JPEGs 500x375 in imagenet_val (default, boxes), imagenet_real (images) and "
        f"imagenet_multilabel (images: {annotated} annotated); timm:{args.model} (random init), {args.device}, "
        f"batch {args.batch_size}, {args.workers} workers, torch threads {torch.get_num_threads()}; protocols "
        f"hesse2025 + anzaku2024, no bootstrap; best of {args.rounds} rotating rounds"
    )
    labels = {
        "before": "--no-dedup (every split in full)",
        "after": "dedup, fresh store",
        "second": "dedup, a second run sharing the store",
    }
    best = {name: min(found)[0] for name, found in results.items()}
    for name, found in results.items():
        times = " ".join(f"{t:.2f}" for t, _, _ in found)
        print(f"  {labels[name]:40s} {best[name]:7.2f} s  model run on {found[-1][1]:5d} images   (runs: {times} s)")
    for name in ("after", "second"):
        print(f"ratio before / {labels[name]}: {best['before'] / best[name]:.2f}x faster")
    print(f"outputs files byte-identical in all three: {same}")


if __name__ == "__main__":
    main()
