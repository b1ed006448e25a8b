"""Benchmark: the chunked fit of the OOD detector statistics (``ood fit-stats``) against an in-memory
numpy/sklearn fit, same features, same run: rows/s and peak RSS, each side in a fresh process.

    uv run --frozen python benchmarks/bench_fit_stats.py                      # 100,000 x 2048, 1000 classes
    uv run --frozen python benchmarks/bench_fit_stats.py --rows 20000 --dim 512   # quick
    uv run --frozen python benchmarks/bench_fit_stats.py --device cuda        # our side on a GPU

Data: synthetic class-clustered float32 "penultimate features" (post-ReLU, ``--rows`` x ``--dim``, labels
``row % 1000``), written once to a raw float32 file, as predict's batches lie on disk during a real
``fit-stats``. Every side reads them from that file (page cache warm: the file was just written):

* ``sklearn``  — the file read whole (``np.fromfile``); class means with numpy; the shared precision of
                 the class-centred features with ``EmpiricalCovariance(assume_centered=True)`` (float64,
                 as NINCO's ``detection_methods.py``); the global one with ``EmpiricalCovariance()``;
* ``chunked``  — ``fit_detector_stats(FitChunks(...))`` over blocks of 2048 rows read from the file, pass
                 by pass: the same statistics (Mahalanobis and relative Mahalanobis: two passes);
* ``chunked-all`` — every statistic ``fit-stats`` fits (those two, ViM, KL-matching, the exact ReAct
                 quantile, a KNN bank of ``--knn-rows``), logits ``W h + b`` made per block.

Printed: seconds, rows/s and peak RSS (``ru_maxrss`` of each side's own process, the interpreter and
torch included: ``baseline`` is that process doing nothing but imports), the ratios against sklearn,
and the largest relative difference of the class means and the two precisions between the sides.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CLASSES = 1000
BLOCK_ROWS = 2048


def write_features(path: Path, rows: int, dim: int, seed: int = 0) -> None:
    """``rows`` x ``dim`` float32 features, written block by block (never all in memory here either)."""
    rng = np.random.default_rng(seed)
    centres = (rng.normal(0, 1, (CLASSES, dim)) * 0.6).astype(np.float32)
    with open(path, "wb") as handle:
        for start in range(0, rows, BLOCK_ROWS):
            labels = np.arange(start, min(rows, start + BLOCK_ROWS)) % CLASSES
            block = centres[labels] + rng.normal(0, 0.5, (len(labels), dim)).astype(np.float32) + 0.3
            np.maximum(block, 0).astype(np.float32).tofile(handle)


def read_block(handle, start: int, count: int, dim: int) -> np.ndarray:
    handle.seek(start * dim * 4)
    return np.fromfile(handle, dtype=np.float32, count=count * dim).reshape(count, dim)


def run_sklearn(path: Path, rows: int, dim: int, out: Path) -> None:
    from sklearn.covariance import EmpiricalCovariance

    features = np.fromfile(path, dtype=np.float32).reshape(rows, dim)
    labels = np.arange(rows) % CLASSES
    means = np.stack([features[labels == c].mean(axis=0, dtype=np.float64) for c in range(CLASSES)])
    precision = EmpiricalCovariance(assume_centered=True).fit(features - means[labels]).precision_
    global_precision = EmpiricalCovariance().fit(features).precision_
    np.savez(out, means=means, precision=precision, global_precision=global_precision)


def source_of(path: Path, rows: int, dim: int, device: str, logits: bool):
    """The features file as a :class:`FitChunks` (blocks read from disk on every pass), logits ``W h + b``."""
    import torch

    from imagenet_suite.scoring.metrics.ood_fit import FitChunks, FitSet

    rng = np.random.default_rng(1)
    weight = torch.from_numpy(rng.normal(0, 0.05, (CLASSES, dim)).astype(np.float32)).to(device)
    bias = torch.from_numpy(rng.normal(0, 0.1, CLASSES).astype(np.float32)).to(device)

    def chunks():
        with open(path, "rb") as handle:
            for start in range(0, rows, BLOCK_ROWS):
                count = min(BLOCK_ROWS, rows - start)
                h = torch.from_numpy(read_block(handle, start, count, dim)).to(device)
                labels = torch.arange(start, start + count, device=device) % CLASSES
                yield FitSet(h, labels, h @ weight.T + bias if logits else None)

    return FitChunks(chunks, rows, CLASSES), weight, bias


def run_chunked(path: Path, rows: int, dim: int, out: Path, device: str, every: bool, knn_rows: int) -> None:
    from imagenet_suite.scoring.metrics.ood_detector_fit import fit_detector_stats

    source, weight, bias = source_of(path, rows, dim, device, logits=every)
    detectors = None if every else ["mahalanobis", "relative_mahalanobis"]
    stats = fit_detector_stats(
        source, weight=weight if every else None, bias=bias if every else None, detectors=detectors, knn_rows=knn_rows
    )
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()
    np.savez(
        out,
        means=stats.class_means.cpu().numpy(),
        precision=stats.precision.cpu().numpy(),
        global_precision=stats.global_precision.cpu().numpy(),
    )


def child(args) -> None:
    """One side, in this (fresh) process: prints its seconds and peak RSS as JSON."""
    import sklearn.covariance  # noqa: F401
    import torch  # noqa: F401 -- the baseline's imports are every side's

    import imagenet_suite.scoring.metrics.ood_detector_fit  # noqa: F401

    start = time.perf_counter()
    if args.side == "sklearn":
        run_sklearn(args.path, args.rows, args.dim, args.out)
    elif args.side != "baseline":
        run_chunked(args.path, args.rows, args.dim, args.out, args.device, args.side == "chunked-all", args.knn_rows)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))


def side(name: str, args, folder: Path) -> dict:
    command = [sys.executable, __file__, "--side", name, "--path", str(folder / "features.f32"), "--out"]
    command += [str(folder / f"{name}.npz"), "--rows", str(args.rows), "--dim", str(args.dim)]
    command += ["--device", args.device, "--knn-rows", str(args.knn_rows)]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def largest_difference(a: Path, b: Path) -> dict[str, float]:
    with np.load(a) as left, np.load(b) as right:
        return {
            name: float(np.abs(left[name] - right[name]).max() / np.abs(right[name]).max())
            for name in ("means", "precision", "global_precision")
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=2048)
    parser.add_argument("--knn-rows", type=int, default=10_000, help="KNN bank rows of chunked-all")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--side", help=argparse.SUPPRESS)
    parser.add_argument("--path", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        child(args)
        return
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        write_features(folder / "features.f32", args.rows, args.dim)
        size = args.rows * args.dim * 4
        print(f"{args.rows:,} rows x {args.dim} float32 features ({size / 2**30:.2f} GiB), {CLASSES} classes; "
              f"ours on {args.device}")  # fmt: skip
        results = {name: side(name, args, folder) for name in ("baseline", "sklearn", "chunked", "chunked-all")}
        base = results["baseline"]["peak_rss"]
        print(f"{'side':12s} {'seconds':>9s} {'rows/s':>10s} {'peak RSS':>10s} {'above baseline':>15s}")
        for name, result in results.items():
            rate = args.rows / result["seconds"] if name != "baseline" else float("nan")
            print(
                f"{name:12s} {result['seconds']:9.2f} {rate:10.0f} {result['peak_rss'] / 2**30:9.2f}G "
                f"{(result['peak_rss'] - base) / 2**30:14.2f}G"
            )
        sk, ours = results["sklearn"], results["chunked"]
        print(
            f"chunked vs sklearn, same statistics: {sk['seconds'] / ours['seconds']:.2f}x the rows/s, "
            f"{(ours['peak_rss'] - base) / max(1, sk['peak_rss'] - base):.3f}x the memory above baseline"
        )
        print(
            "largest relative difference, chunked vs sklearn:",
            largest_difference(folder / "chunked.npz", folder / "sklearn.npz"),
        )
        print("largest relative difference, chunked-all vs chunked:", largest_difference(folder / "chunked-all.npz", folder / "chunked.npz"))  # fmt: skip


if __name__ == "__main__":
    main()
