"""Benchmark: vectorised LCA / top-5 LCA / ELCA vs a per-sample Python loop, same run.

The loop baseline re-implements, one sample at a time, what the LCA-on-the-line code computes
(``main.calculate_LCA`` with ``hier.FindLCA``): sort the row's logits, take the top prediction,
find the LCA from the padded root paths of the WordNet tree, and score
``info(gt) − info(lca)`` with ``info = −log2(uniform_leaf)``; correct samples are skipped. The
ELCA loop does the same for every class of the row (softmax-weighted). A second, stronger loop
baseline looks distances up in the precomputed C×C matrix instead of the tree.

The loops run on a subsample (``--loop-samples``) and are extrapolated linearly to N (they are
per-sample, so cost is linear); the vectorised functions run on all N. Results of both are
compared on the subsample. Synthetic logits (~70 % top-1 accuracy), seeded. Both sides report
their best of several repeats (a shared machine's noise only ever slows a run down).

    uv run --frozen python benchmarks/bench_lca.py            # 50,000 × 1,000
    uv run --frozen python benchmarks/bench_lca.py --quick    # 5,000 × 1,000
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from imagenet_suite.hierarchies.distances import tree_distance_matrix
from imagenet_suite.hierarchies.imagenet1k import imagenet1k_tree
from imagenet_suite.scoring.metrics import lca_scoring


def synthetic_outputs(n: int, c: int, seed: int, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, c, (n,), generator=generator)
    logits = 2.0 * torch.randn(n, c, generator=generator)
    logits[torch.arange(n), labels] += 6.5
    return logits.to(device), labels.to(device)


class LoopBaseline:
    """Per-sample Python loops in the style of the LCA-on-the-line code (see module docstring)."""

    def __init__(self, tree):
        self.paths = tree.paths  # [C, max_depth + 1] node ids root → leaf, -1 padded
        self.info = np.log2(tree.num_classes / tree.num_leaves.astype(np.float64))  # −log2 uniform_leaf
        self.leaf = np.asarray(tree.class_nodes)

    def _lca_nodes(self, gt: int, others: np.ndarray) -> np.ndarray:
        path_a, paths_b = self.paths[gt], self.paths[others]
        common = np.count_nonzero((path_a == paths_b) & (path_a >= 0) & (paths_b >= 0), axis=-1)
        return path_a[common - 1]

    def lca(self, logits: np.ndarray, labels: np.ndarray) -> float:
        distances = []
        for row, gt in zip(logits, labels):
            predicted = np.argsort(-row, kind="stable")[0]
            if predicted != gt:
                lca_node = self._lca_nodes(gt, np.array([predicted]))[0]
                distances.append(self.info[self.leaf[gt]] - self.info[lca_node])
        return float(np.mean(distances))

    def elca(self, logits: np.ndarray, labels: np.ndarray) -> float:
        classes, values = np.arange(logits.shape[1]), []
        for row, gt in zip(logits, labels):
            p = np.exp(row - row.max())
            p /= p.sum()
            lcad = self.info[self.leaf[gt]] - self.info[self._lca_nodes(gt, classes)]
            values.append(float(p @ lcad))
        return float(np.mean(values))

    @staticmethod
    def lca_matrix(logits: np.ndarray, labels: np.ndarray, distance: np.ndarray) -> float:
        distances = [distance[gt, row.argmax()] for row, gt in zip(logits, labels) if row.argmax() != gt]
        return float(np.mean(distances))

    @staticmethod
    def elca_matrix(logits: np.ndarray, labels: np.ndarray, distance: np.ndarray) -> float:
        values = []
        for row, gt in zip(logits, labels):
            p = np.exp(row - row.max())
            values.append(float(p @ distance[gt] / p.sum()))
        return float(np.mean(values))


def best_time(fn, repeats: int) -> tuple[float, object]:
    result, times = fn(), []  # warm-up
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return min(times), result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (N=5,000, loop on 500)")
    parser.add_argument("--num-samples", type=int, default=None, help="N (default 50,000; 5,000 with --quick)")
    parser.add_argument(
        "--loop-samples", type=int, default=None, help="loop subsample (default 2,000; 500 with --quick)"
    )
    parser.add_argument("--device", default="cpu", help="device of the outputs tensor (cpu, cuda)")
    parser.add_argument(
        "--repeats", type=int, default=15, help="timed repeats of the vectorised functions; the best is reported"
    )
    parser.add_argument(
        "--loop-repeats", type=int, default=3, help="timed repeats of each loop baseline; the best is reported"
    )
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    n = args.num_samples or (5_000 if args.quick else 50_000)
    n_loop = min(n, args.loop_samples or (500 if args.quick else 2_000))

    tree = imagenet1k_tree()
    distance_np = tree_distance_matrix(tree, "info")  # the tree's paths cached
    seconds, _ = best_time(
        lambda: [tree_distance_matrix(tree, m) for m in ("info", "depth_two_sided", "depth_one_sided")], 3
    )
    print(f"dense 1000 x 1000 distance matrices (info, depth_two_sided, depth_one_sided): {seconds:.3f} s together")
    distance = torch.as_tensor(distance_np, dtype=torch.float32, device=args.device)
    logits, labels = synthetic_outputs(n, tree.num_classes, seed=0, device=args.device)
    print(
        f"outputs: {n} x {tree.num_classes} float32 logits on {args.device}; torch threads: {torch.get_num_threads()}"
    )
    print(f"loop baselines: measured on the first {n_loop} samples, extrapolated x{n / n_loop:.1f} to N")

    ours = {
        "LCA (top-1)": lambda: lca_scoring.lca(logits, labels, distance),
        "top-5 LCA": lambda: lca_scoring.topk_lca(logits, labels, distance, k=5),
        "ELCA (all)": lambda: lca_scoring.elca(logits, labels, distance, kind="logits"),
    }
    timings = {name: best_time(fn, args.repeats) for name, fn in ours.items()}

    sub_logits, sub_labels = logits[:n_loop].cpu().numpy(), labels[:n_loop].cpu().numpy()
    baseline = LoopBaseline(tree)
    loops = {
        "LCA (top-1)": [
            ("tree loop", lambda: baseline.lca(sub_logits, sub_labels)),
            ("matrix loop", lambda: baseline.lca_matrix(sub_logits, sub_labels, distance_np)),
        ],
        "ELCA (all)": [
            ("tree loop", lambda: baseline.elca(sub_logits, sub_labels)),
            ("matrix loop", lambda: baseline.elca_matrix(sub_logits, sub_labels, distance_np)),
        ],
    }
    check = {
        "LCA (top-1)": lambda: lca_scoring.lca(logits[:n_loop], labels[:n_loop], distance).value,
        "ELCA (all)": lambda: lca_scoring.elca(logits[:n_loop], labels[:n_loop], distance, kind="logits").value,
    }

    print(f"\n{'metric':<13} {'vectorised':>11} {'value':>8}   baseline (extrapolated)        speed-up")
    for name, (seconds, score) in timings.items():
        print(f"{name:<13} {seconds * 1e3:9.1f}ms {score.value:8.4f}")
        for label, fn in loops.get(name, []):
            loop_seconds, loop_value = best_time(fn, args.loop_repeats)
            projected = loop_seconds * n / n_loop
            agree = abs(loop_value - check[name]()) < 1e-4
            print(
                f"{'':<13} {'':>11} {'':>8}   {label:<12} {projected:8.2f}s  {'(values agree)' if agree else '(VALUES DIFFER)'}"
                f"  {projected / seconds:8.0f}x"
            )


if __name__ == "__main__":
    main()
