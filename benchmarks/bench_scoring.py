"""Benchmark: imagenet-suite's full classification report vs the anchors' own way, same run, same data.

    uv run --frozen python benchmarks/bench_scoring.py            # 50,000 x 1,000 and 50,000 x 21,843
    uv run --frozen python benchmarks/bench_scoring.py --quick    # 5,000 x 1,000 and 2,000 x 21,843
    uv run --frozen python benchmarks/bench_scoring.py --sizes 1000 --device cuda
    uv run --frozen python benchmarks/bench_scoring.py --sizes 1000 --floor   # + the primitives' floor

The "full classification report" is every metric :func:`imagenet_suite.scoring.evaluation.report.score`
computes for an ImageNet-val-like split with ``label`` and ``real_labels``: top-1/top-5, ReaL
top-1/top-5, per-class accuracy, ECE in three conventions, class-wise ACE, CE, and class balance in
two conventions. The anchors compute the same numbers the way their repositories do:

* top-k: timm ``utils.metrics.accuracy`` over batches of 256 with an ``AverageMeter`` (timm validate.py);
* ReaL: timm ``RealLabelsImagenet.add_result`` per batch (a Python loop over images);
* per-class accuracy and F_acc: torchmetrics ``MulticlassConfusionMatrix`` updated per batch (QUBA);
* ECE: torchmetrics ``MulticlassCalibrationError`` on per-batch softmax (QUBA); gpleiss ``_ECELoss``
  loop (Guo); netcal's numpy procedure (clip, argmax, ``binned_statistic_dd``, ``histogramdd``; for
  C > 1000 only the row maxima are clipped, as clipping the whole array would need another copy);
* ACE: Google robustness_metrics ``GeneralCalibrationError`` (adaptive, class-conditional), the numpy
  loop QUBA copied, on the accumulated probabilities (for C > 1000 the label column of each class is
  built on the fly instead of the N x C one-hot matrix, which would not fit in memory);
* F_conf: QUBA's per-class loop of ``np.std``.

Timings are wall-clock seconds on the device given (synchronized on CUDA). Peak memory is the
largest resident-set size above the level before each phase, sampled every 10 ms, so it includes
torch and numpy buffers that tracemalloc cannot see. Both sides check their numbers agree.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import math
import os
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch

OUR_METRICS = ("topk_accuracy", "per_class_accuracy", "calibration", "class_balance", "real_accuracy")
ACE_STAGE = "robustness_metrics ACE loop"
REAL_HISTOGRAM = [3163, 39394, 5408, 1319, 411, 161, 88, 41, 13, 2]  # labels per image in real.json


# ----------------------------------------------------------------------------- data


def synthetic_split(rows: int, classes: int, seed: int = 0):
    """float32 logits of a ~75 %-accurate model, labels, and ReaL-like label sets (real.json histogram)."""
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, classes, (rows,), generator=generator)
    logits = torch.randn(rows, classes, generator=generator).mul_(1.5)
    boost = 4.0 + torch.empty(rows).exponential_(0.3, generator=generator)
    logits[torch.arange(rows), labels] += boost
    logits.mul_(2.2)  # temperature: mean confidence ~ accuracy, as for a trained model
    rng = np.random.default_rng(seed)
    sizes = rng.choice(len(REAL_HISTOGRAM), size=rows, p=np.array(REAL_HISTOGRAM) / sum(REAL_HISTOGRAM))
    label_sets = []
    for row, size in enumerate(sizes):
        extra = rng.choice(classes, size=max(0, size - 1), replace=False).tolist()
        label_sets.append(sorted({int(labels[row]), *extra}) if size else [])
    return logits, labels, label_sets


def padded(label_sets: list[list[int]]) -> torch.Tensor:
    width = max(1, max(map(len, label_sets)))
    out = torch.full((len(label_sets), width), -1, dtype=torch.int64)
    for row, values in enumerate(label_sets):
        out[row, : len(values)] = torch.tensor(values, dtype=torch.int64)
    return out


# ----------------------------------------------------------------------------- measuring


class PeakRSS:
    """Largest resident set size (bytes) seen while active, sampled by a background thread."""

    def __init__(self, interval: float = 0.01):
        self.interval, self.peak, self._stop = interval, 0, threading.Event()

    @staticmethod
    def current() -> int:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.current())
            time.sleep(self.interval)

    def __enter__(self):
        self.baseline = self.peak = self.current()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.current())

    @property
    def above_baseline(self) -> int:
        return self.peak - self.baseline


@contextmanager
def timed(results: dict, name: str, device: torch.device):
    """Time the block; keeps the fastest of repeated measurements under the same name."""
    gc.collect()
    with PeakRSS() as memory:
        if device.type == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        start, cpu_start = time.perf_counter(), time.process_time()
        yield
        if device.type == "cuda":
            torch.cuda.synchronize()
        seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    entry = {"seconds": seconds, "cpu_seconds": cpu_seconds, "peak_rss_mb": memory.above_baseline / 2**20}
    if device.type == "cuda":
        entry["peak_gpu_mb"] = torch.cuda.max_memory_allocated() / 2**20
    previous = results.get(name)
    if previous is None or seconds < previous["seconds"]:
        entry["peak_rss_mb"] = max(entry["peak_rss_mb"], previous["peak_rss_mb"] if previous else 0)
        results[name] = entry


# ----------------------------------------------------------------------------- the floor


def floor_primitives(logits: torch.Tensor) -> dict[str, float]:
    """Single-threaded CPU seconds of the passes over all N x C scores that any exact full report runs,
    however it is organised: the finiteness check (as ``ModelOutputs.validate``: row sums), each row's top-6 (top-5 and its tie check), each
    row's softmax denominator, a row-major to class-major copy (class-wise ACE bins each class's N
    probabilities), and numpy's vectorized sort of every class's N float32 probabilities (the adaptive
    bin edges are order statistics and every value needs its bin). Each is the fastest of 3 runs, in
    cache-sized row chunks as the scorer walks them."""
    from imagenet_suite.scoring.batching import CPU_CHUNK_ELEMENTS, row_chunks
    from imagenet_suite.scoring.threads import torch_threads

    chunks = [logits[rows] for rows in row_chunks(logits.shape[0], logits.shape[1], CPU_CHUNK_ELEMENTS)]
    by_class = torch.empty(logits.shape[1], logits.shape[0])
    starts = list(itertools.accumulate((len(chunk) for chunk in chunks), initial=0))

    def to_class_major():
        for start, chunk in zip(starts, chunks):
            by_class[:, start : start + len(chunk)].copy_(chunk.T)

    passes = {
        "finiteness (row sums finite)": lambda: [bool(torch.isfinite(chunk.sum(dim=1)).all()) for chunk in chunks],
        "top-6 per row (torch.topk)": lambda: [chunk.topk(6, dim=1) for chunk in chunks],
        "softmax denominators (exp, sum)": lambda: [(chunk - chunk[:, :1]).exp_().sum(dim=1) for chunk in chunks],
        "row- to class-major copy": to_class_major,
        "sort of every class's N values (numpy)": lambda: np.sort(by_class.numpy(), axis=1),
    }
    seconds = {}
    with torch_threads(1):
        for name, work in passes.items():
            best = math.inf
            for _ in range(3):
                start = time.perf_counter()
                work()
                best = min(best, time.perf_counter() - start)
            seconds[name] = best
    return seconds


def report_floor(logits: torch.Tensor, anchors_total: float | None) -> dict[str, float]:
    seconds = floor_primitives(logits)
    workers = os.cpu_count() or 1
    total = sum(seconds.values())
    for name, value in seconds.items():
        print(f"  floor: {name:<44} {value:8.3f} s (one thread)", flush=True)
    line = f"  floor: {total:.3f} s of one thread -> at best {total / workers:.3f} s on {workers} CPUs"
    if anchors_total:
        line += f" -> at most {anchors_total * workers / total:.1f}x the anchors' {anchors_total:.3f} s"
    print(line, flush=True)
    return {"primitives": seconds, "one_thread_seconds": total, "workers": workers}


# ----------------------------------------------------------------------------- ours


def ours(logits: torch.Tensor, labels: torch.Tensor, label_sets: torch.Tensor, class_wise_ace: bool = True) -> dict:
    """The imagenet-suite evaluator on an in-memory joined split (label + real_labels): validation
    and every metric, but not the Parquet read of the label columns (the anchors get arrays too)."""
    from imagenet_suite.scoring.evaluation.options import CalibrationOptions, ScoreOptions
    from imagenet_suite.scoring.evaluation.report import evaluate, select_metrics
    from imagenet_suite.scoring.join import JoinedSplit
    from imagenet_suite.scoring.outputs import ModelOutputs

    classes = logits.shape[1]
    names = [str(i) for i in range(classes)]
    features = {
        "id": {"dtype": "string", "_type": "Value"},
        "label": {"names": names, "_type": "ClassLabel"},
        "real_labels": {"feature": {"names": names, "_type": "ClassLabel"}, "_type": "List"},
    }
    outputs = ModelOutputs(logits, [str(i) for i in range(len(logits))])
    outputs.validate(num_classes=classes)  # the NaN/inf pass `score` runs before any metric
    joined = JoinedSplit(
        outputs, {"label": labels, "real_labels": label_sets}, features, {}, "bench", "default", "validation"
    )
    metrics = [name for name in select_metrics(features, {}, None) if name in OUR_METRICS]
    report = evaluate(joined, metrics, ScoreOptions(calibration=CalibrationOptions(class_wise_ace=class_wise_ace)))
    return {(row.metric, row.variant): row.value for row in report.rows if not row.subgroup}


# ----------------------------------------------------------------------------- anchors


def anchor_topk(logits, labels, batch=256):
    from timm.utils.metrics import AverageMeter, accuracy

    top1, top5 = AverageMeter(), AverageMeter()
    for start in range(0, len(logits), batch):
        output, target = logits[start : start + batch], labels[start : start + batch]
        acc1, acc5 = accuracy(output, target, topk=(1, 5))
        top1.update(acc1.item(), output.size(0))
        top5.update(acc5.item(), output.size(0))
    return top1.avg / 100, top5.avg / 100


def anchor_real(logits, label_sets, batch=256):
    from timm.data.real_labels import RealLabelsImagenet

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "real.json"
        path.write_text(json.dumps(label_sets))
        filenames = [f"ILSVRC2012_val_{i + 1:08d}.JPEG" for i in range(len(label_sets))]
        real = RealLabelsImagenet(filenames, real_json=str(path))
        for start in range(0, len(logits), batch):
            real.add_result(logits[start : start + batch])
        return real.get_accuracy(1) / 100, real.get_accuracy(5) / 100


def anchor_quba_per_class(logits, labels, batch=256):
    """QUBA: MulticlassConfusionMatrix per batch, diag / row sums. For C > 1000 a C x C matrix per
    update is hopeless (torchmetrics' MulticlassAccuracy(average=None) also bincounts C^2 cells per
    batch: 20 minutes at 21,843 classes), so per-batch argmax + numpy bincount stands in."""
    from torchmetrics.classification import MulticlassConfusionMatrix

    classes = logits.shape[1]
    if classes <= 1000:
        metric = MulticlassConfusionMatrix(num_classes=classes).to(logits.device)
        for start in range(0, len(logits), batch):
            metric.update(logits[start : start + batch], labels[start : start + batch])
        confusion = metric.compute()
        class_accuracy = confusion.diag() / confusion.sum(1)
    else:
        hits = np.zeros(classes, dtype=np.int64)
        for start in range(0, len(logits), batch):
            predicted = logits[start : start + batch].argmax(1).cpu().numpy()
            target = labels[start : start + batch].cpu().numpy()
            hits += np.bincount(target[predicted == target], minlength=classes)
        counts = np.bincount(labels.cpu().numpy(), minlength=classes)
        class_accuracy = torch.from_numpy(np.where(counts > 0, hits / np.maximum(counts, 1), np.nan))
    present = ~torch.isnan(class_accuracy)
    return float(class_accuracy[present].mean()), 1 - float(torch.std(class_accuracy[present]))


def anchor_softmax_and_torchmetrics_ece(logits, labels, batch=256):
    """QUBA's loop: per-batch softmax, MulticlassCalibrationError.update, probabilities kept for ACE."""
    from torchmetrics.classification import MulticlassCalibrationError

    metric = MulticlassCalibrationError(num_classes=logits.shape[1], n_bins=15, norm="l1").to(logits.device)
    probs = np.empty(tuple(logits.shape), dtype=np.float32)
    for start in range(0, len(logits), batch):
        batch_probs = torch.softmax(logits[start : start + batch], dim=1)
        metric.update(batch_probs, labels[start : start + batch])
        probs[start : start + batch] = batch_probs.cpu().numpy()
    return float(metric.compute()), probs


def anchor_guo_ece(probs: np.ndarray, labels, n_bins=15):
    tensor = torch.from_numpy(probs)
    confidence, prediction = torch.max(tensor, 1)
    accuracy = prediction.eq(labels.cpu())
    edges = torch.linspace(0, 1, n_bins + 1)
    ece = torch.zeros(1)
    for lower, upper in itertools.pairwise(edges):
        in_bin = confidence.gt(lower.item()) * confidence.le(upper.item())
        proportion = in_bin.float().mean()
        if proportion.item() > 0:
            ece += torch.abs(confidence[in_bin].mean() - accuracy[in_bin].float().mean()) * proportion
    return ece.item()


def anchor_netcal_ece(probs: np.ndarray, labels: np.ndarray, bins=10):
    from scipy.stats import binned_statistic_dd

    eps = np.finfo(probs.dtype).eps
    if probs.shape[1] <= 1000:
        clipped = np.clip(probs, eps, 1 - eps)
        matched = np.argmax(clipped, axis=1) == labels
        confidence = np.max(clipped, axis=1, keepdims=True)
    else:  # netcal clips the whole N x C array (a second 4.4 GB copy at 21k classes); clip the max only
        matched = np.argmax(probs, axis=1) == labels
        confidence = np.clip(np.max(probs, axis=1, keepdims=True), eps, 1 - eps)
    bounds = [np.linspace(0.0, 1.0, bins + 1)]
    accuracy, _, _ = binned_statistic_dd(confidence, matched, statistic="mean", bins=bounds)
    mean_conf, _, _ = binned_statistic_dd(confidence, confidence[:, 0], statistic="mean", bins=bounds)
    counts, _ = np.histogramdd(confidence, bins=bounds)
    return float(np.sum(np.abs(np.nan_to_num(accuracy) - np.nan_to_num(mean_conf)) * counts / counts.sum()))


def anchor_ace(probs: np.ndarray, labels: np.ndarray, num_bins=15, threshold=0.0):
    """robustness_metrics GeneralCalibrationError(adaptive, class_conditional=True, max_prob=False, l1):
    per class, upper edges = sorted order statistics then 1.0, ``np.digitize``, ``np.bincount``."""
    classes = probs.shape[1]
    one_hot = np.eye(classes)[labels] if classes <= 1000 else None
    total = 0.0
    for j in range(classes):
        column = probs[:, j]
        positives = one_hot[:, j] if one_hot is not None else (labels == j).astype(np.float64)
        keep = column > threshold
        positives, column = positives[keep], column[keep]
        if column.size == 0:
            continue
        indices = np.minimum(
            np.round(np.linspace(0, len(column), num_bins, endpoint=False)).astype(int), len(column) - 1
        )
        upper_edges = np.concatenate((np.sort(column)[indices][1:], [1.0]))  # p == 1.0: a bin of its own
        bins = np.digitize(column, upper_edges)
        sums = np.bincount(bins, weights=column, minlength=num_bins).astype(np.float64)
        counts = np.bincount(bins, minlength=num_bins) + np.finfo(np.float64).eps
        accuracy = np.bincount(bins, weights=positives, minlength=num_bins) / counts
        total += np.sum(np.abs((accuracy - sums / counts) * counts / float(len(column)))) / classes
    return total


def anchor_quba_conf_balance(probs: np.ndarray, labels: np.ndarray):
    stds = [np.std(probs[labels == c, c]) for c in range(probs.shape[1]) if (labels == c).any()]
    return 1 - float(np.mean(stds))


def import_anchor_libraries() -> None:
    """Import what the anchors use before timing them (timm and torchmetrics take seconds to import)."""
    import scipy.stats  # noqa: F401
    import timm.data.real_labels
    import timm.utils.metrics  # noqa: F401
    import torchmetrics.classification  # noqa: F401


def anchors(
    logits: torch.Tensor, labels: torch.Tensor, label_sets: list[list[int]], device: torch.device, repeat: int = 1
) -> tuple[dict, dict]:
    """Run every anchor stage ``repeat`` times (fastest kept); returns (timings, values)."""
    import_anchor_libraries()
    anchor_topk(logits[:512], labels[:512])  # warm-up, as for imagenet-suite
    timings, values = {}, {}
    for _ in range(repeat):
        values = anchor_stages(logits, labels, label_sets, device, timings)
    return timings, values


def anchor_stages(logits, labels, label_sets, device, timings: dict) -> dict:
    values = {}
    labels_np = labels.cpu().numpy()
    with timed(timings, "timm top-k", device):
        values["top1"], values["top5"] = anchor_topk(logits, labels)
    with timed(timings, "timm ReaL", device):
        values["real_top1"], values["real_top5"] = anchor_real(logits, label_sets)
    with timed(timings, "torchmetrics per-class accuracy, F_acc", device):
        values["mean_per_class"], values["f_acc"] = anchor_quba_per_class(logits, labels)
    with timed(timings, "softmax + torchmetrics ECE", device):
        values["ece_torchmetrics"], probs = anchor_softmax_and_torchmetrics_ece(logits, labels)
    with timed(timings, "Guo ECE loop", device):
        values["ece_guo"] = anchor_guo_ece(probs, labels)
    with timed(timings, "netcal ECE", device):
        values["ece_netcal"] = anchor_netcal_ece(probs, labels_np)
    with timed(timings, "robustness_metrics ACE loop", device):
        values["ace"] = anchor_ace(probs, labels_np)
    with timed(timings, "QUBA F_conf loop", device):
        values["f_conf"] = anchor_quba_conf_balance(probs, labels_np)
    del probs
    return values


def compare(ours_values: dict, anchor_values: dict) -> list[str]:
    pairs = {
        "top1": ("top1_accuracy", ""),
        "top5": ("top5_accuracy", ""),
        "real_top1": ("real_top1_accuracy", ""),
        "real_top5": ("real_top5_accuracy", ""),
        "mean_per_class": ("mean_per_class_accuracy", ""),
        "f_acc": ("class_balance_accuracy", "reference_impl"),
        "ece_torchmetrics": ("ece", "torchmetrics"),
        "ece_guo": ("ece", "guo"),
        "ece_netcal": ("ece", "netcal"),
        "ace": ("ace", "adaptive_classwise"),
        "f_conf": ("class_balance_confidence", "reference_impl"),
    }
    lines = []
    for name, key in pairs.items():
        difference = abs(ours_values[key] - anchor_values[name])
        lines.append(
            f"    {name:<18} ours {ours_values[key]:.8f}  anchor {anchor_values[name]:.8f}  |diff| {difference:.1e}"
        )
    return lines


# ----------------------------------------------------------------------------- main


def run_size(
    rows: int, classes: int, device: torch.device, skip_anchors: bool, repeat: int = 1, floor: bool = False
) -> dict:
    logits, labels, label_sets = synthetic_split(rows, classes)
    logits, labels = logits.to(device), labels.to(device)
    sets = padded(label_sets).to(device)
    print(
        f"\n== {rows:,} x {classes:,} float32 logits on {device} ({logits.numel() * 4 / 2**30:.2f} GiB) ==", flush=True
    )
    ours_timing: dict = {}
    ours(logits[:64], labels[:64], sets[:64])  # warm-up (imports, kernels)
    for _ in range(repeat):
        with timed(ours_timing, "imagenet-suite full report", device):
            ours_values = ours(logits, labels, sets)
    result = {"rows": rows, "classes": classes, "device": str(device), "ours": ours_timing}
    for _ in range(repeat):
        with timed(ours_timing, "imagenet-suite without class-wise ACE", device):
            ours(logits, labels, sets, class_wise_ace=False)
    for name, stage in ours_timing.items():
        print(
            f"  {name:<48} {stage['seconds']:8.3f} s  cpu {stage['cpu_seconds']:8.3f} s   "
            f"peak +{stage['peak_rss_mb']:.0f} MiB RSS",
            flush=True,
        )
    if skip_anchors:
        return result
    anchor_timing, anchor_values = anchors(logits, labels, label_sets, device, repeat)
    result["anchors"] = anchor_timing
    total = sum(stage["seconds"] for stage in anchor_timing.values())
    for name, stage in anchor_timing.items():
        print(
            f"  anchor: {name:<40} {stage['seconds']:8.3f} s  cpu {stage['cpu_seconds']:8.3f} s   "
            f"peak +{stage['peak_rss_mb']:.0f} MiB RSS",
            flush=True,
        )
    for clock in ("seconds", "cpu_seconds"):
        total = sum(stage[clock] for stage in anchor_timing.values())
        mine = ours_timing["imagenet-suite full report"][clock]
        without = total - anchor_timing[ACE_STAGE][clock]
        mine_without = ours_timing["imagenet-suite without class-wise ACE"][clock]
        result[f"speedup_{clock}"] = total / mine
        result[f"speedup_without_ace_{clock}"] = without / mine_without
        label = "wall" if clock == "seconds" else "cpu "
        print(
            f"  {label}: anchors {total:8.3f} s vs imagenet-suite {mine:7.3f} s -> {total / mine:5.1f}x   "
            f"| without class-wise ACE: {without:8.3f} s vs {mine_without:7.3f} s -> {without / mine_without:5.1f}x",
            flush=True,
        )
    print("  agreement:")
    print("\n".join(compare(ours_values, anchor_values)))
    if floor and device.type == "cpu":
        result["floor"] = report_floor(logits, sum(stage["seconds"] for stage in anchor_timing.values()))
    return result


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (5,000 x 1,000 and 2,000 x 21,843)")
    parser.add_argument("--sizes", nargs="+", type=int, default=[1000, 21843], help="class counts to run")
    parser.add_argument("--rows", type=int, help="rows per size (default 50,000; --quick: 5,000 / 2,000)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--skip-anchors", action="store_true", help="time imagenet-suite only")
    parser.add_argument("--repeat", type=int, default=1, help="repeat each timing, keep the fastest (default 1)")
    parser.add_argument("--json", type=Path, help="write all timings here")
    parser.add_argument(
        "--floor", action="store_true", help="on the CPU, also time the passes any exact full report needs (the floor)"
    )
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    device = torch.device(args.device)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs "
        f"(load average {load:.1f}), device {device}"
        + (f" ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else "")
    )
    results = []
    for classes in args.sizes:
        rows = args.rows or ((5000 if classes <= 1000 else 2000) if args.quick else 50000)
        results.append(run_size(rows, classes, device, args.skip_anchors, args.repeat, args.floor))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
