"""Benchmark: what ``evaluate --bootstrap B`` adds to a run, against scoring the same split once, and the
anchored class-wise ACE against the per-resample method it replaced.

    uv run --frozen python benchmarks/bench_bootstrap.py                 # 50,000 x 1,000, B = 1000
    uv run --frozen python benchmarks/bench_bootstrap.py --quick         # 5,000 x 1,000, B = 200
    uv run --frozen python benchmarks/bench_bootstrap.py --no-baseline   # without the per-resample method
    uv run --frozen python benchmarks/bench_bootstrap.py --device cuda

Phases, each timed wall-clock (and CPU time of the process, all threads) on the device given
(synchronized on CUDA):

* ``score`` — the ImageNet-val families QUBA reads (top-k, calibration with class-wise ACE, class balance)
  on a synthetic ImageNet-val-like split, as ``evaluate`` scores it;
* ``val resamples`` — the val report's rows the summary reads (top-1, CE = sqrt(ECE · ACE), class balance)
  on B resamples (:func:`imagenet_suite.scoring.summary.intervals.resample_report`), class-wise ACE by the
  anchored method (:class:`~imagenet_suite.scoring.metrics.ace_replicates.ClasswiseAceReplicates`);
* ``val resamples, per-resample ACE`` (the baseline) — the same rows with class-wise ACE recomputed per
  resample (:func:`~imagenet_suite.scoring.metrics.ace_loop.exact_loop_replicates`, what ``evaluate`` did
  before), and how far the two sets of replicates and the CE interval are apart;
* ``other sets`` — a top-1 accuracy on B resamples of another N images, as for each ImageNet-C set
  (``evaluate`` on the full suite does this ~100 times);
* ``summaries`` — the whole suite summary recomputed B times (:func:`~imagenet_suite.scoring.summary.intervals.bootstrap_summary`)
  over ``--reports`` reports (1 report: ImageNet val alone).

The machine's load average (``/proc/loadavg``) is printed before and after: the figures depend on it.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from imagenet_suite.classes import imagenet_wnids
from imagenet_suite.scoring.evaluation.context import RESAMPLED
from imagenet_suite.scoring.evaluation.report import evaluate
from imagenet_suite.scoring.join import JoinedSplit
from imagenet_suite.scoring.metrics import calibration
from imagenet_suite.scoring.metrics.ace_loop import exact_loop_replicates
from imagenet_suite.scoring.metrics.paired_tests import percentile_interval
from imagenet_suite.scoring.metrics.row_statistics import row_statistics
from imagenet_suite.scoring.metrics.uncertainty import derived, proportion, resampled
from imagenet_suite.scoring.outputs import ModelOutputs
from imagenet_suite.scoring.summary.intervals import Bootstrap, bootstrap_summary, resample_report
from imagenet_suite.scoring.summary.suite import suite_summary
from imagenet_suite.scoring.threads import chunk_parallel_cpu

FAMILIES = ["topk_accuracy", "calibration", "class_balance"]
CE = ("calibration_error", "sqrt(ece*ace)", "")


def synthetic_val(rows: int, classes: int, device: str) -> JoinedSplit:
    """A ~75 %-accurate model's logits on an ImageNet-val-like split, joined to its labels."""
    generator = torch.Generator().manual_seed(0)
    labels = torch.randint(0, classes, (rows,), generator=generator)
    logits = torch.randn(rows, classes, generator=generator).mul_(1.5)
    logits[torch.arange(rows), labels] += 4.0 + torch.empty(rows).exponential_(0.3, generator=generator)
    ids = [f"ILSVRC2012_val_{i:08d}" for i in range(rows)]
    outputs = ModelOutputs(logits.mul_(2.2).to(device), ids)
    features = {"label": {"_type": "ClassLabel", "names": list(imagenet_wnids())[:classes]}}
    return JoinedSplit(outputs, {"label": labels.to(device)}, features, {}, "imagenet_val", "default", "validation")


def per_resample_ce(joined: JoinedSplit):
    """The reference: CE = sqrt(ECE · ACE) with class-wise ACE recomputed per resample (the exact loop)."""
    scores, labels = joined.outputs.values, joined.columns["label"]
    stats = row_statistics(scores, "logits", labels)
    correct = stats.label_rank == 0
    ids = joined.outputs.ids
    ece = resampled([ids], lambda counts: calibration.ece_replicates(stats.confidence, correct, counts[0]))
    ace = resampled([ids], lambda counts: exact_loop_replicates(scores, labels, stats.normalizer, counts[0]))
    return derived(torch.sqrt, derived(torch.mul, ece, ace))


def timed(device: str, function):
    """``(result, wall seconds, CPU seconds of the process)``."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    start, cpu = time.perf_counter(), time.process_time()
    result = function()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return result, time.perf_counter() - start, time.process_time() - cpu


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--reports", type=int, default=100, help="reports of the summary recomputed B times")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--quick", action="store_true", help="5,000 rows, 200 resamples")
    parser.add_argument("--no-baseline", action="store_true", help="skip the per-resample ACE (minutes at full size)")
    args = parser.parse_args()
    if args.quick:
        args.rows, args.resamples = 5000, 200
    print(f"load average before: {load()}")
    bootstrap = Bootstrap(args.resamples)
    joined = synthetic_val(args.rows, args.classes, args.device)
    scope = chunk_parallel_cpu if args.device == "cpu" else torch.inference_mode
    meta = {
        "dataset": "imagenet_val",
        "config": "default",
        "split": "validation",
        "preprocessing": {"protocol": "hesse2025"},
    }
    with scope(), torch.inference_mode():
        report, score_s, score_cpu = timed(args.device, lambda: evaluate(joined, FAMILIES))
        point = {**report.to_dict(), "meta": meta}
        estimates = report.artifacts[RESAMPLED]
        val, val_s, val_cpu = timed(args.device, lambda: resample_report(point, estimates, bootstrap))
        baseline = None
        if not args.no_baseline:
            reference = {**estimates, CE: per_resample_ce(joined)}
            baseline = timed(args.device, lambda: resample_report(point, reference, bootstrap))
        hits = (joined.outputs.values.argmax(dim=1) == joined.columns["label"]).cpu()
        other_ids = [f"other_{i}" for i in range(args.rows)]
        other = {("top1_accuracy", "", ""): proportion(other_ids, hits)}
        corrupted = {
            "meta": {"dataset": "imagenet_c", "config": "fog_3"},
            "metrics": [
                {"metric": "top1_accuracy", "variant": "", "subgroup": "", "value": float(hits.double().mean())}
            ],
        }
        found, other_s, _ = timed(args.device, lambda: resample_report(corrupted, other, bootstrap))
    alone = {"imagenet_val": point}
    (record, _), alone_s, _ = timed(
        "cpu", lambda: bootstrap_summary(alone, {"imagenet_val": val}, suite_summary(alone), bootstrap)
    )
    reports = {"imagenet_val": point, **{f"imagenet_c/set_{k}": corrupted for k in range(args.reports - 1)}}
    replicated = {"imagenet_val": val, **dict.fromkeys(list(reports)[1:], found)}
    summary = suite_summary(reports, params_millions=25.6)
    _, summaries_s, _ = timed(
        "cpu", lambda: bootstrap_summary(reports, replicated, summary, bootstrap, params_millions=25.6)
    )
    print(
        f"{args.rows} x {args.classes} on {args.device}, B = {args.resamples}, torch threads {torch.get_num_threads()}"
    )
    print(f"score                             {score_s:8.2f} s wall {score_cpu:8.2f} s CPU")
    print(
        f"val resamples                     {val_s:8.2f} s wall {val_cpu:8.2f} s CPU  ({val_s / score_s:.1f}x the scoring)"
    )
    if baseline is not None:
        old, old_s, old_cpu = baseline
        print(f"val resamples, per-resample ACE   {old_s:8.2f} s wall {old_cpu:8.2f} s CPU  (baseline)")
        print(f"  anchored ACE: {old_s / val_s:.1f}x faster wall, {old_cpu / val_cpu:.1f}x less CPU")
        for row in val.replicates:
            a, b = val.replicates[row], old.replicates[row]
            difference = float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)))
            print(
                f"  {'/'.join(part for part in row if part)}: replicates apart by at most {difference:.2g} (relative)"
            )
        new_ci, old_ci = percentile_interval(val.replicates[CE]), percentile_interval(old.replicates[CE])
        print(f"  CE interval anchored {list(new_ci)}, per-resample {list(old_ci)}")
    print(f"other set resamples               {other_s:8.2f} s  per set of {args.rows} images")
    print(f"summary of ImageNet val alone     {alone_s:8.2f} s")
    print(f"summaries ({args.reports} reports)            {summaries_s:8.2f} s")
    print(f"ImageNet val's bootstrap in all   {val_s + alone_s:8.2f} s  (val resamples and its summaries)")
    print(f"QUBA calibration_error interval {record['ci95'].get('quba.dimensions.calibration_error.value')}")
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
