"""Benchmark: corrupted images per second, ours vs the upstream per-image NumPy style, same run.

For each ImageNet-C corruption (and severity), both implementations corrupt the same 224x224 images
with the same seeds on ``--workers`` processes (default 2, one image per task):

* reference — ``tests/fixtures/naive_corruptions.py``: the upstream algorithms written the way
  ``make_imagenet_c.py`` / ``imagecorruptions`` are (float64, ``scipy.ndimage.zoom``,
  ``map_coordinates``, skimage HSV, Python loops for glass blur and motion-blur shifts);
* ours — :func:`imagenet_suite.perturbations.corruptions.corrupt`.

Prints images/s per corruption, the ratio ours/reference, and the overall ratio (total time for
the same work). With a GPU (or ``--torch-device``), also times :func:`corruptions_torch.corrupt_batch`
on the heavy corruptions. Images: the real 224x224 cue-conflict sample in tests/data (48 images;
synthetic smooth images past those); frost pictures are synthetic. Usage:

    uv run --frozen python benchmarks/bench_perturbations.py [--images 16] [--severities 3] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from imagenet_suite.core.builder import example_rng
from imagenet_suite.perturbations import corruptions as C
from tests.fixtures.naive_corruptions import naive_corrupt

SAMPLE = Path(__file__).resolve().parents[1] / "tests" / "data" / "texture-vs-shape" / "stimuli" / "cue-conflict-sample"


def load_images(count: int) -> list[np.ndarray]:
    files = sorted(SAMPLE.glob("*/*.png"))[:count] if SAMPLE.is_dir() else []
    images = [np.asarray(Image.open(f).convert("RGB")) for f in files]
    rng = np.random.default_rng(0)
    while len(images) < count:
        base = rng.integers(0, 256, (29, 29, 3), dtype=np.uint8)
        images.append(np.asarray(Image.fromarray(base).resize((224, 224), Image.BICUBIC)))
    return images


def frost_pictures() -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(1)
    return tuple(
        np.asarray(
            Image.fromarray(rng.integers(0, 256, (60, 80, 3), dtype=np.uint8)).resize(
                (400 + 20 * i, 300 + 10 * i), Image.BICUBIC
            )
        )
        for i in range(6)
    )


_STATE: dict = {}


def _init(images, frost):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    _STATE.update(images=images, frost=frost)


def _task(args) -> float:
    """CPU seconds this worker spent corrupting one image."""
    kind, index, name, severity = args
    x = _STATE["images"][index]
    rng = example_rng(0, name, index)
    start = time.process_time()
    if kind == "ours":
        C.corrupt(x, name, severity, rng, "imagenet_c", _STATE["frost"])
    else:
        naive_corrupt(x, name, severity, rng, "imagenet_c", _STATE["frost"])
    return time.process_time() - start


def run(pool, kind: str, name: str, severities, count: int) -> tuple[float, float]:
    """(wall seconds, summed worker CPU seconds) for ``count`` images x ``severities`` of ``name``."""
    tasks = [(kind, i, name, s) for s in severities for i in range(count)]
    start = time.perf_counter()
    cpu = sum(pool.map(_task, tasks, chunksize=1))
    return time.perf_counter() - start, cpu


def _line(name: str, done: int, timed: dict, workers: int) -> str:
    (ref_wall, ref_cpu), (wall, cpu) = timed["reference"], timed["ours"]
    return (
        f"{name:18s} {done / ref_wall:9.1f} {done / wall:9.1f} {ref_wall / wall:6.2f}   "
        f"{done * workers / ref_cpu:8.1f} {done * workers / cpu:8.1f} {ref_cpu / cpu:6.2f}"
    )


def bench_torch(images, severities, device: str) -> None:
    import torch

    from imagenet_suite.perturbations import corruptions_torch as T

    batch = np.stack(images)
    print(f"\ntorch path on {device} (batch of {len(images)}):")
    for name in T.TORCH_CORRUPTIONS:
        for severity in severities:
            rngs = [example_rng(0, name, i) for i in range(len(images))]
            T.corrupt_batch(batch[:2], name, severity, rngs[:2], device=device)  # warm-up
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            start = time.perf_counter()
            T.corrupt_batch(batch, name, severity, [example_rng(0, name, i) for i in range(len(images))], device=device)
            seconds = time.perf_counter() - start
            cpu_start = time.perf_counter()
            for image, rng in zip(images, rngs, strict=True):
                C.corrupt(image, name, severity, rng)
            cpu = time.perf_counter() - cpu_start
            print(
                f"  {name:18s} s{severity}: {len(images) / seconds:8.1f} img/s  (NumPy, 1 process: "
                f"{len(images) / cpu:7.1f} img/s, x{cpu / seconds:.1f})"
            )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, default=16)
    parser.add_argument("--severities", default="3", help="comma-separated, e.g. 1,2,3,4,5")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--corruptions", default=",".join(C.IMAGENET_C))
    parser.add_argument("--torch-device", default=None, help="also time the torch path here (default: cuda if present)")
    args = parser.parse_args(argv)
    severities = [int(s) for s in args.severities.split(",")]
    images, frost = load_images(args.images), frost_pictures()
    print(f"{args.images} images 224x224, severities {severities}, {args.workers} worker processes")
    print("images/s on the workers: wall clock, and from the workers' CPU time (robust to other load)")
    print(
        f"{'corruption':18s} {'ref wall':>9s} {'ours wall':>9s} {'ratio':>6s}   {'ref cpu':>8s} {'ours cpu':>8s} {'ratio':>6s}"
    )
    totals = {kind: [0.0, 0.0] for kind in ("reference", "ours")}
    workers = args.workers
    with ProcessPoolExecutor(workers, initializer=_init, initargs=(images, frost)) as pool:
        list(pool.map(_task, [("ours", 0, "contrast", 1)] * workers))  # start the workers
        for name in args.corruptions.split(","):
            timed = {kind: run(pool, kind, name, severities, args.images) for kind in ("reference", "ours")}
            for kind in totals:
                totals[kind] = [a + b for a, b in zip(totals[kind], timed[kind], strict=True)]
            print(_line(name, args.images * len(severities), timed, workers))
    print(
        _line("overall", args.images * len(severities) * len(args.corruptions.split(",")), totals, workers)
        + "   (goal >= 2)"
    )
    device = args.torch_device
    if device is None:
        import torch

        device = "cuda" if torch.cuda.is_available() else None
    if device:
        bench_torch(images, severities, device)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
