"""Benchmark: what the zero-shot head of an ``open_clip:`` model costs, against a plain classifier, same run.

One open_clip model (``--arch``, random init, seeded), one batch of random images, forward in
``inference_mode`` (autocast with ``--amp``):

* image tower    — ``clip.encode_image(x)`` alone: the floor;
* classifier     — ``encode_image`` + an ``nn.Linear(d, 1000)``: what a plain classifier head on the same
                   tower costs;
* zero-shot      — :class:`~imagenet_suite.inference.zero_shot.ZeroShotClassifier`: ``encode_image``,
                   L2-normalise, ``100 · h @ tᵀ`` over the 1000 class text embeddings (what ``predict`` runs);
* the two heads alone on the tower's output (the linear layer; normalise + ``100 · h @ tᵀ``): what each
  adds, measured apart from the tower, whose time varies far more than a head costs on a busy machine.

Then the head itself: the 1000 × T prompts of ``--prompts`` tokenized and encoded by the text tower with an
empty cache (cold), against the same head read back from the text-embedding cache and checked (warm).

All are warmed up, then rounds rotate which goes first; the best of each is printed with the ratios.
Usage:
    uv run --frozen python benchmarks/bench_zero_shot.py [--arch ViT-B-16] [--device cpu] [--batch-size 32]
        [--prompts photo] [--amp] [--rounds 3]
GPU (what benchmarks/gpu_checks.sh runs): --device cuda --batch-size 256 --prompts openai80 --amp
Quick check on a CPU: --arch ViT-B-32 --batch-size 8 --prompts photo --rounds 2
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def timed(run, device: torch.device) -> float:
    start = time.perf_counter()
    run()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def forwards(classifier, images: torch.Tensor, amp: bool) -> dict[str, object]:
    """The forwards over the same batch (each a callable of nothing)."""
    import torch.nn.functional as F

    device = images.device
    clip = classifier.clip
    linear = torch.nn.Linear(classifier.head.text.shape[1], 1000).to(device)
    dtype = torch.float16 if device.type == "cuda" else torch.bfloat16
    with torch.inference_mode(), torch.autocast(device.type, dtype, enabled=amp):
        embeddings = clip.encode_image(images)

    def run(forward, inputs):
        def call():
            with torch.inference_mode(), torch.autocast(device.type, dtype, enabled=amp):
                return forward(inputs)

        return call

    return {
        "image tower": run(clip.encode_image, images),
        "classifier": run(lambda x: linear(clip.encode_image(x)), images),
        "zero-shot": run(classifier, images),
        "linear head": run(linear, embeddings),
        "zero-shot head": run(lambda h: classifier.head(F.normalize(h, dim=-1)), embeddings),
    }


def best_of(runners: dict, rounds: int, device: torch.device) -> dict[str, float]:
    for run in runners.values():  # warm-up: kernels, allocator
        timed(run, device)
    times: dict[str, list[float]] = {name: [] for name in runners}
    names = list(runners)
    for index in range(rounds):  # rotate who goes first: no order bias
        for name in names[index % len(names) :] + names[: index % len(names)]:
            times[name].append(timed(runners[name], device))
    return {name: min(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arch", default="ViT-B-16", help="open_clip architecture (random init)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--prompts", default="photo", help="openai80, photo, taxonomy[:depth] or a templates file")
    parser.add_argument("--amp", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from imagenet_suite.inference import zero_shot

    device = torch.device(args.device)
    torch.manual_seed(0)
    spec = f"open_clip:{args.arch}"
    tokenizer = zero_shot.tokenizer_of(spec, args.arch)
    clip, _ = zero_shot.create_clip(spec, args.arch, None, None)
    key = zero_shot.ModelKey(args.arch, None, "0" * 64)  # a random init, cached under a made-up weights digest
    with tempfile.TemporaryDirectory() as cache:
        options = zero_shot.ZeroShotOptions(prompts=args.prompts, device=device, cache_dir=cache, progress=False)
        start = time.perf_counter()
        classifier = zero_shot.build_classifier(clip, tokenizer, key, options)
        if device.type == "cuda":
            torch.cuda.synchronize()
        cold = time.perf_counter() - start
        warm = min(timed(lambda: zero_shot.build_classifier(clip, tokenizer, key, options), device) for _ in range(3))
    classifier = classifier.to(device).eval()
    size = clip.visual.image_size
    size = size if isinstance(size, (tuple, list)) else (size, size)
    images = torch.randn(args.batch_size, 3, *size, device=device)
    best = best_of(forwards(classifier, images, args.amp), args.rounds, device)

    prompts = classifier.record["prompts_per_class"]
    print(
        f"open_clip {args.arch} (random init), {device}, batch {args.batch_size} of {size[0]}x{size[1]}, amp {args.amp}, "
        f"torch threads {torch.get_num_threads()}; best of {args.rounds} rotating rounds"
    )
    for name, seconds in best.items():
        print(f"  {name:14s} {seconds * 1000:10.3f} ms  {args.batch_size / seconds:10.1f} images/s")
    tower = best["image tower"]
    print(f"ratio zero-shot / classifier (time, end to end): {best['zero-shot'] / best['classifier']:.3f}x")
    print(
        f"head time / image tower time: zero-shot head {best['zero-shot head'] / tower:.2e}, linear head "
        f"{best['linear head'] / tower:.2e}; zero-shot head / linear head {best['zero-shot head'] / best['linear head']:.2f}x"
    )
    print(
        f"head of 1000 x {prompts} prompts ({args.prompts}): cold {cold:.2f} s (tokenize + text tower), "
        f"warm {warm:.3f} s (cache read and checked); ratio cold / warm {cold / warm:.0f}x"
    )


if __name__ == "__main__":
    main()
