"""Benchmark: what ``evaluate --bootstrap B`` adds to a run, against scoring the same split once.

    uv run --frozen python benchmarks/bench_bootstrap.py                 # 50,000 x 1,000, B = 1000
    uv run --frozen python benchmarks/bench_bootstrap.py --quick         # 5,000 x 1,000, B = 200
    uv run --frozen python benchmarks/bench_bootstrap.py --device cuda

Phases, each timed wall-clock on the device given (synchronized on CUDA):

* ``score`` (the baseline) — the ImageNet-val families QUBA reads (top-k, calibration with class-wise ACE,
  class balance) on a synthetic ImageNet-val-like split, as ``evaluate`` scores it;
* ``val resamples`` — the val report's rows the summary reads (top-1, CE = sqrt(ECE · ACE), class
  balance) on B resamples (:func:`imagenet_suite.scoring.summary.intervals.resample_report`): class-wise
  ACE, recomputed on every resample, is nearly all of it;
* ``other sets`` — a top-1 accuracy on B resamples of another 50,000 images, as for each ImageNet-C set
  (``evaluate`` on the full suite does this ~100 times);
* ``summaries`` — the whole suite summary recomputed B times (:func:`~imagenet_suite.scoring.summary.intervals.bootstrap_summary`)
  over ``--reports`` reports.
"""

from __future__ import annotations

import argparse
import time

import torch

from imagenet_suite.classes import imagenet_wnids
from imagenet_suite.scoring.evaluation.context import RESAMPLED
from imagenet_suite.scoring.evaluation.report import evaluate
from imagenet_suite.scoring.join import JoinedSplit
from imagenet_suite.scoring.metrics.uncertainty import proportion
from imagenet_suite.scoring.outputs import ModelOutputs
from imagenet_suite.scoring.summary.intervals import Bootstrap, bootstrap_summary, resample_report
from imagenet_suite.scoring.summary.suite import suite_summary
from imagenet_suite.scoring.threads import chunk_parallel_cpu

FAMILIES = ["topk_accuracy", "calibration", "class_balance"]


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


def timed(device: str, function):
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    start = time.perf_counter()
    result = function()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return result, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--reports", type=int, default=100, help="reports of the summary recomputed B times")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--quick", action="store_true", help="5,000 rows, 200 resamples")
    args = parser.parse_args()
    if args.quick:
        args.rows, args.resamples = 5000, 200
    bootstrap = Bootstrap(args.resamples)
    joined = synthetic_val(args.rows, args.classes, args.device)
    scope = chunk_parallel_cpu if args.device == "cpu" else torch.inference_mode
    with scope(), torch.inference_mode():
        report, score_s = timed(args.device, lambda: evaluate(joined, FAMILIES))
        meta = {
            "dataset": "imagenet_val",
            "config": "default",
            "split": "validation",
            "preprocessing": {"protocol": "hesse2025"},
        }
        point = {**report.to_dict(), "meta": meta}
        val, val_s = timed(args.device, lambda: resample_report(point, report.artifacts[RESAMPLED], bootstrap))
        hits = (joined.outputs.values.argmax(dim=1) == joined.columns["label"]).cpu()
        other_ids = [f"other_{i}" for i in range(args.rows)]
        other = {("top1_accuracy", "", ""): proportion(other_ids, hits)}
        corrupted = {
            "meta": {"dataset": "imagenet_c", "config": "fog_3"},
            "metrics": [
                {"metric": "top1_accuracy", "variant": "", "subgroup": "", "value": float(hits.double().mean())}
            ],
        }
        found, other_s = timed(args.device, lambda: resample_report(corrupted, other, bootstrap))
    reports = {"imagenet_val": point, **{f"imagenet_c/set_{k}": corrupted for k in range(args.reports - 1)}}
    replicated = {"imagenet_val": val, **dict.fromkeys(list(reports)[1:], found)}
    summary = suite_summary(reports, params_millions=25.6)
    (record, _), summaries_s = timed(
        "cpu", lambda: bootstrap_summary(reports, replicated, summary, bootstrap, params_millions=25.6)
    )
    print(
        f"{args.rows} x {args.classes} on {args.device}, B = {args.resamples}, torch threads {torch.get_num_threads()}"
    )
    print(f"score (baseline)        {score_s:8.2f} s")
    print(f"val resamples           {val_s:8.2f} s  ({val_s / score_s:.1f}x the scoring)")
    print(f"other set resamples     {other_s:8.2f} s  per set of {args.rows} images")
    print(f"summaries ({args.reports} reports) {summaries_s:8.2f} s")
    print(f"QUBA calibration_error interval {record['ci95'].get('quba.dimensions.calibration_error.value')}")


if __name__ == "__main__":
    main()
