"""Benchmark: OpenOOD v1.5's ImageNet-1k table (``evaluate --benchmark openood-v1.5-imagenet``), imagenet-suite vs
OpenOOD's own metric code, same run, same scores, at the benchmark's real sizes.

    uv run --frozen python benchmarks/bench_openood_benchmark.py            # 45,000 ID; 49,000 / 5,879 / 10,000 / 5,160 / 15,869 OOD
    uv run --frozen python benchmarks/bench_openood_benchmark.py --quick    # a tenth of each

Scores: one detector's synthetic scores (ID ~ N(1, 1), each OOD set shifted down), float64, rounded to 3
decimals so that ties occur as with MSP. Ours: :func:`imagenet_suite.scoring.benchmarks.benchmark_table`
(per set AUROC, OOD-positive FPR@95, AUPR_IN, AUPR_OUT and NINCO's FPR@95, then the near/far means).
Baseline ("OpenOOD"): ``openood/evaluators/metrics.py`` ``compute_all_metrics`` (HEAD 3c35632: sklearn
``roc_curve``, two ``precision_recall_curve`` + ``auc``) on the concatenated ID + OOD scores per set, plus
NINCO's ``np.quantile`` FPR@95, and ``np.mean`` of the per-set rows as ``Evaluator._eval_ood``.

Printed: seconds per side (best of ``--repeats``), the speed-up, and the largest difference between the two
tables (every metric, every row).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from sklearn import metrics

from imagenet_suite.scoring.benchmarks import OPENOOD_V15_IMAGENET, benchmark_table

SIZES = {
    "id": 45_000,
    "ssb_hard": 49_000,
    "ninco": 5_879,
    "inaturalist": 10_000,
    "textures": 5_160,
    "openimage_o": 15_869,
}
SHIFT = {"ssb_hard": 0.4, "ninco": 0.8, "inaturalist": 2.0, "textures": 1.5, "openimage_o": 1.2}


def openood_rows(id_scores: np.ndarray, ood: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """OpenOOD's per-set metrics (OOD positive) and NINCO's FPR@95, then the group means."""
    rows = {}
    for name, values in ood.items():
        conf = np.concatenate([id_scores, values])
        is_ood = np.concatenate([np.zeros(len(id_scores), dtype=int), np.ones(len(values), dtype=int)])
        fpr_list, tpr_list, _ = metrics.roc_curve(is_ood, -conf)
        precision_in, recall_in, _ = metrics.precision_recall_curve(1 - is_ood, conf)
        precision_out, recall_out, _ = metrics.precision_recall_curve(is_ood, -conf)
        rows[name] = {
            "fpr95_openood_v15": fpr_list[np.argmax(tpr_list >= 0.95)],
            "auroc": metrics.auc(fpr_list, tpr_list),
            "aupr_in": metrics.auc(recall_in, precision_in),
            "aupr_out": metrics.auc(recall_out, precision_out),
            "fpr95": float(np.mean(values >= np.quantile(id_scores, 0.05))),
        }
    for group in OPENOOD_V15_IMAGENET.groups:
        members = [s.name for s in OPENOOD_V15_IMAGENET.sets if s.group == group]
        rows[f"{group}ood"] = {m: float(np.mean([rows[n][m] for n in members])) for m in rows[members[0]]}
    return rows


def best_of(repeats: int, function) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    rng = np.random.default_rng(0)
    id_scores = np.round(rng.normal(1.0, 1.0, SIZES["id"] // scale), 3)
    ood = {name: np.round(rng.normal(1.0 - SHIFT[name], 1.0, SIZES[name] // scale), 3) for name in SHIFT}
    ours_s, ours = best_of(
        args.repeats,
        lambda: benchmark_table(
            OPENOOD_V15_IMAGENET,
            {"msp": torch.from_numpy(id_scores)},
            {name: {"msp": torch.from_numpy(values)} for name, values in ood.items()},
            accuracy=None,
        )["msp"],
    )
    base_s, base = best_of(args.repeats, lambda: openood_rows(id_scores, ood))
    worst = max(abs(row[m] - base[row["set"]][m]) for row in ours for m in base[row["set"]])
    print(
        f"ID {len(id_scores):,}; OOD "
        + ", ".join(f"{n} {len(v):,}" for n, v in ood.items())
        + f"; torch threads {torch.get_num_threads()}"
    )
    print(f"imagenet-suite benchmark_table : {ours_s:8.3f} s")
    print(f"OpenOOD compute_all_metrics    : {base_s:8.3f} s")
    print(f"speed-up vs OpenOOD            : {base_s / ours_s:8.2f}x")
    print(f"largest difference (all rows)  : {worst:.3g}")


if __name__ == "__main__":
    main()
