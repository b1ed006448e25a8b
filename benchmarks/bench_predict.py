"""Benchmark: ``imagenet-suite predict`` against a timm ``validate.py``-style loop, same images, same run.

Writes N synthetic 500x375 JPEGs as ``val/<wnid>/*.JPEG`` and builds ``imagenet_val`` from them.
Then, with the same model (timm, random init), eval transform, batch size and DataLoader workers:

* baseline — timm's validate.py way: ``torchvision.datasets.ImageFolder`` over the JPEGs on disk with
             the model's eval transform, a ``DataLoader`` (pinned memory on CUDA), forward in
             ``inference_mode`` (autocast with ``--amp``), logits moved to the CPU;
* ours     — :func:`imagenet_suite.inference.predict` on the built dataset (Parquet row groups ->
             DataLoader workers -> model; outputs file written, resume chunks included). On CUDA its
             default GPU decode path: workers pass JPEG bytes, nvJPEG decodes each batch, the eval
             transform runs on the GPU;
* ours, CPU decode (CUDA only) — the same with ``gpu_decode=False`` (Pillow in the workers, as the
             baseline does), to show what the GPU decode path buys.

All are warmed up, then rounds rotate which goes first; the best of each is printed as images/s with
the ratio to the baseline.
Usage:
    uv run --frozen python benchmarks/bench_predict.py [--images 512] [--model resnet18] [--device cpu]
        [--batch-size 64] [--workers 2] [--amp] [--rounds 3]
GPU (target: at least 2x the timm loop): --model resnet50 --device cuda --batch-size 256 --amp --images 5000
Quick check on a CPU: --images 32 --model test_resnet --batch-size 16 --rounds 1
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def write_images(root: Path, count: int, seed: int = 0) -> Path:
    """``count`` 500x375 JPEGs (smooth noise, quality 90, ~60-110 KB) in val/<wnid>/ folders."""
    from imagenet_suite import classes

    rng = np.random.default_rng(seed)
    wnids = classes.imagenet_wnids()
    for i in range(count):
        small = rng.integers(0, 256, size=(47, 63, 3), dtype=np.uint8)
        picture = Image.fromarray(small).resize((500, 375), Image.BILINEAR)
        noisy = np.clip(np.asarray(picture, dtype=np.int16) + rng.normal(0, 6, (375, 500, 3)), 0, 255)
        folder = root / "val" / wnids[i % 1000]
        folder.mkdir(parents=True, exist_ok=True)
        buffer = io.BytesIO()
        Image.fromarray(noisy.astype(np.uint8)).save(buffer, format="JPEG", quality=90)
        (folder / f"ILSVRC2012_val_{i + 1:08d}.JPEG").write_bytes(buffer.getvalue())
    return root


def baseline(images: Path, loaded, device: torch.device, batch_size: int, workers: int, amp: bool) -> float:
    """timm validate.py's loop over an ImageFolder; seconds."""
    from torch.utils.data import DataLoader
    from torchvision.datasets import ImageFolder

    dataset = ImageFolder(str(images / "val"), transform=loaded.transform)
    loader = DataLoader(dataset, batch_size=batch_size, num_workers=workers, pin_memory=device.type == "cuda")
    model = loaded.model.to(device)
    dtype = torch.float16 if device.type == "cuda" else torch.bfloat16
    start = time.perf_counter()
    outputs = []
    with torch.inference_mode():
        for batch, _ in loader:
            batch = batch.to(device, non_blocking=True)
            with torch.autocast(device.type, dtype, enabled=amp):
                outputs.append(model(batch).float().cpu())
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def ours(
    dataset: Path, loaded, device, batch_size: int, workers: int, amp: bool, out: Path, gpu_decode: bool | None = None
) -> float:
    from imagenet_suite.inference import PredictOptions, predict

    options = PredictOptions(
        device=device, batch_size=batch_size, workers=workers, amp=amp, progress=False, gpu_decode=gpu_decode
    )
    out.unlink(missing_ok=True)
    start = time.perf_counter()
    predict(dataset, loaded, out, options=options)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=512)
    parser.add_argument("--model", default="resnet18", help="timm model name (random init)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--amp", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from imagenet_suite.core.options import BuildOptions
    from imagenet_suite.core.runner import build_dataset
    from imagenet_suite.inference import load_model

    device = torch.device(args.device)
    loaded = load_model(f"timm:{args.model}", "none")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_images(root / "images", args.images)
        dataset = build_dataset(
            "imagenet_val", root / "out", ["default"], options=BuildOptions(manual_dir=root / "images", progress=False)
        )
        common = (device, args.batch_size, args.workers, args.amp)
        runners = {
            "baseline": lambda: baseline(root / "images", loaded, *common),
            "ours": lambda: ours(dataset, loaded, *common, root / "o.pt"),
        }
        if device.type == "cuda":
            runners["ours_cpu_decode"] = lambda: ours(dataset, loaded, *common, root / "c.pt", gpu_decode=False)
        for run in runners.values():  # warm-up: imports, kernels, page cache
            run()
        times: dict[str, list[float]] = {name: [] for name in runners}
        names = list(runners)
        for round_index in range(args.rounds):  # rotate who goes first: no order bias
            for name in names[round_index % len(names) :] + names[: round_index % len(names)]:
                times[name].append(runners[name]())
    cpus = torch.get_num_threads()
    print(
        f"{args.images} JPEGs 500x375, timm:{args.model} (random init), {device}, batch {args.batch_size}, "
        f"{args.workers} workers, amp {args.amp}, torch threads {cpus}; best of {args.rounds} rotating rounds"
    )
    best = {name: min(values) for name, values in times.items()}
    labels = {
        "baseline": "timm validate.py loop (ImageFolder)",
        "ours": "imagenet-suite predict" + (" (GPU decode)" if device.type == "cuda" else ""),
        "ours_cpu_decode": "imagenet-suite predict (--no-gpu-decode)",
    }
    for name in times:
        runs = " ".join(f"{t:.2f}" for t in times[name])
        print(f"  {labels[name]:42s} {best[name]:7.2f} s  {args.images / best[name]:8.1f} images/s   (runs: {runs} s)")
    print(f"ratio {labels['ours']} / timm loop (images/s): {best['baseline'] / best['ours']:.2f}x")
    if "ours_cpu_decode" in best:
        print(
            f"ratio {labels['ours_cpu_decode']} / timm loop (images/s): {best['baseline'] / best['ours_cpu_decode']:.2f}x"
        )


if __name__ == "__main__":
    main()
