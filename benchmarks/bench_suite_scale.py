"""Benchmark: the whole suite at the papers' image counts (times ``--scale``), stage by stage, with a nearly
free model, so that what is measured is the pipeline: builds, ``ood fit-stats``, ``evaluate`` and a
300-run ``leaderboard``.

    uv run --frozen python benchmarks/bench_suite_scale.py --scale 0.02 0.1      # two sizes, compared
    uv run --frozen python benchmarks/bench_suite_scale.py --scale 0.002         # a quick check

For each scale, in a fresh folder (``--work``; removed afterwards unless ``--keep``):

1. *sources* — synthetic releases in their own layouts (``scale_sources.py``: the fixture writers of
   ``tests/fixtures/`` at ``REAL_COUNTS`` x scale): ImageNet val (+ boxes, ReaL, expert multi-labels), V2 x 3,
   A, R, Sketch, O, ObjectNet, NINCO (all its configs, at its real count), the popular OOD sets in OpenOOD
   v1.5's layout (+ MOS's SUN and Places), one ImageNet-C corruption at its five severities, ImageNet train;
2. *build* — ``imagenet-suite build`` of each builder, every config (``imagenet_train --option subset=100 x
   scale``), ``--num-proc`` processes;
3. *fit-stats* — ``imagenet-suite ood fit-stats`` of the model on the train subset;
4. *evaluate* — ``imagenet-suite evaluate`` of the model on every build but train, ``--features
   --detector-stats --bootstrap 1000 --benchmark openood-v1.5-imagenet --allow-partial`` (run by
   ``stage_run.py``, which also times its inner stages: predict, score, resample, intervals, ...);
5. *leaderboard* — ``imagenet-suite leaderboard`` over ``--runs`` synthetic run folders made from the run of
   step 4 (``scale_runs.py``; writing them is timed, not counted as a stage).

The model (``scale_sources.TINY_MODEL``) is a ``.py`` user model: one 3x3 convolution, pooling and a linear
head to 1000 classes on 32x32 inputs, with features.

Every command runs as a child process; per stage it prints wall seconds, CPU seconds (user + sys of the
process and its waited-for children: ``os.wait4``), peak RSS (the largest ``VmHWM`` of a process of the
tree, sampled every 0.25 s) and the largest sum of the tree's RSS sampled every 0.25 s (shared pages counted in each process),
bytes on disk it wrote, and its share of the whole. *Must hold* is what a stage cannot avoid holding (see
:func:`must_hold`); with two scales the peaks above the imports (``baseline``: a process importing the
same libraries) are compared with it: ``(peak - baseline) / must hold`` at each size and the growth
``Δpeak / Δmust hold`` between them. With several scales, every stage's time is fitted as ``a + b x images``
over the two largest and extrapolated to scale 1 (CPU seconds: wall seconds on a shared machine follow its load), and the other 14 ImageNet-C corruptions (not written) are
added as 14 times its build and 14 x 250,000 images at evaluate's seconds per image: extrapolated, and said so.
``--json FILE`` keeps every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

CLI = Path(sys.executable).with_name("imagenet-suite")
PAGE = os.sysconf("SC_PAGE_SIZE")
PSS_EVERY = 8  # TreeSampler's samples (0.25 s) per sample of the processes' PSS
CLASSES = 1000
FEATURES = 8  # the tiny model's penultimate width


@dataclass
class Measured:
    """One stage of one scale."""

    stage: str
    wall: float
    cpu: float
    peak_rss: int  # bytes: the largest process of the stage's tree
    tree_rss: int  # bytes: the largest sampled sum over the tree
    disk: int  # bytes written (apparent size of what the stage produced)
    images: int = 0
    must_hold: int = 0  # bytes (see must_hold())
    inner: dict = field(default_factory=dict)  # evaluate's inner stages (stage_run.py)
    load: str = ""  # /proc/loadavg at the stage's end


# -- measuring a child process --------------------------------------------------------------------------------


class TreeSampler(threading.Thread):
    """Every 0.25 s: the largest sum of RSS over a process and its descendants (``peak``), and the largest
    high-water mark (``VmHWM``: the peak RSS since its last exec, so it counts peaks between samples) of any
    one of them (``process_peak``). ``ru_maxrss`` is not used for the latter: after fork + exec a child's
    starts at its parent's peak, so a benchmark process grown large would be read as every child's. With
    ``pss``, also the largest sum of their proportional set sizes (``pss_peak``: a page shared by k processes
    counted 1/k in each, so processes forked without exec, sharing their parent's pages, are not counted twice),
    every :data:`PSS_EVERY` samples: reading it walks the process's pages (tens of ms for a GiB), which the
    measured process would otherwise compete with."""

    def __init__(self, pid: int, pss: bool = False):
        super().__init__(daemon=True)
        self.pid, self.peak, self.process_peak, self.done = pid, 0, 0, threading.Event()
        self.pss, self.pss_peak = pss, 0

    def run(self) -> None:
        tick = 0
        while not self.done.wait(0.25):
            tree = _tree(self.pid)
            self.peak = max(self.peak, sum(_rss(pid) for pid in tree))
            self.process_peak = max([self.process_peak, *(_hwm(pid) for pid in tree)])
            tick += 1
            if self.pss and tick % PSS_EVERY == 0:
                self.pss_peak = max(self.pss_peak, sum(_pss(pid) for pid in tree))


def _tree(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as handle:
                    todo += [int(child) for child in handle.read().split()]
        except OSError:
            continue
    return found


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as handle:
            return int(handle.read().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


def _hwm(pid: int) -> int:
    return _proc_bytes(pid, "status", "VmHWM:")


def _pss(pid: int) -> int:
    return _proc_bytes(pid, "smaps_rollup", "Pss:")


def _proc_bytes(pid: int, name: str, key: str) -> int:
    """The kB figure of the line ``key`` of ``/proc/<pid>/<name>``, in bytes (0 when the process is gone)."""
    try:
        with open(f"/proc/{pid}/{name}") as handle:
            for line in handle:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0


def run_child(argv: list[str], log: Path, sampler: TreeSampler | None = None) -> tuple[float, float, int, int]:
    """Run ``argv``; ``(wall, cpu, peak RSS of its largest process (VmHWM), largest sampled tree RSS)``; SystemExit with
    the log's tail when it fails. CPU: user + sys of the process and of the descendants it waited for. ``sampler``:
    a ``TreeSampler(0, pss=True)`` to fill (its ``pss_peak``), else one is made."""
    with open(log, "wb") as handle:
        start = time.perf_counter()
        process = subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT)
        sampler = TreeSampler(process.pid) if sampler is None else sampler
        sampler.pid = process.pid
        sampler.start()
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        sampler.done.set()
        sampler.join()
    if process.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise SystemExit(f"{' '.join(map(str, argv[:3]))} ... failed ({process.returncode}); {log}:\n{tail}")
    return wall, usage.ru_utime + usage.ru_stime, sampler.process_peak, sampler.peak


def disk_usage(*paths: Path) -> int:
    """Apparent bytes of the files under ``paths``, each inode once."""
    seen, total = set(), 0
    for path in paths:
        files = [path] if path.is_file() else (p for p in path.rglob("*") if p.is_file())
        for file in files:
            stat = file.stat()
            if (stat.st_dev, stat.st_ino) not in seen:
                seen.add((stat.st_dev, stat.st_ino))
                total += stat.st_size
    return total


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def baseline_rss(log: Path) -> int:
    """Peak RSS of a process that imports what the stages import and does nothing."""
    code = "import torch, pyarrow, datasets, timm, imagenet_suite.inference.evaluate, imagenet_suite.cli"
    return run_child([sys.executable, "-c", code], log)[2]


# -- the stages -----------------------------------------------------------------------------------------------


def must_hold(stage: str, images: dict[str, int], runs: int = 0, suite_bytes: int = 0) -> int:
    """Bytes a stage cannot avoid holding at once:

    * a build: its key list (about 100 bytes per image: id, label) — a shard in flight is a constant;
    * ``fit-stats``: nothing that grows with the images (per-class statistics and a KNN bank of at most
      100,000 x 8 float32 rows: a constant);
    * ``evaluate``: ImageNet val's logits and features (the ID side of every OOD set, kept for the whole run)
      and those of the largest other split, float32: (N_val + N_largest) x (1000 + 8) x 4;
    * ``leaderboard``: the runs' suite.json files (their bytes).
    """
    if stage.startswith("build "):
        return 100 * images[stage.removeprefix("build ")]
    if stage == "evaluate":
        return (images["val"] + images["largest"]) * (CLASSES + FEATURES) * 4
    if stage == "leaderboard":
        return runs * suite_bytes
    return 0


def run_scale(scale: float, work: Path, args) -> tuple[list[Measured], dict]:
    from scale_sources import REAL_COUNTS, TINY_MODEL, scaled, write_releases

    work.mkdir(parents=True, exist_ok=True)
    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    measured: list[Measured] = []
    print(f"== scale {scale}: sources", flush=True)
    wall, cpu = time.perf_counter(), time.process_time()
    releases = write_releases(work / "sources", scale)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    sources = Measured("(sources: written)", wall, cpu, 0, 0, disk_usage(work / "sources"), load=loadavg())
    sources.images = sum(release.images for release in releases)
    counts = {release.builder: release.images for release in releases}

    datasets = work / "datasets"
    folders: dict[str, Path] = {}
    for release in releases:
        stage = f"build {release.builder}"
        print(f"== scale {scale}: {stage} ({release.images:,} images)", flush=True)
        argv = [str(CLI), "build", release.builder, "--out", str(datasets), "--manual-dir", str(release.manual)]
        argv += [item for config in release.configs for item in ("--config", config)]
        argv += [item for name, value in release.options.items() for item in ("--option", f"{name}={value}")]
        argv += ["--num-proc", str(args.num_proc), "--no-progress", "--offline"]
        if release.pins:
            argv += ["--pins", str(release.manual / "checksums.tsv")]
        log = logs / f"{stage.replace(' ', '_')}.log"
        wall, cpu, peak, tree = run_child(argv, log)
        folders[release.builder] = Path(log.read_text().strip().splitlines()[-1])
        measured.append(
            Measured(stage, wall, cpu, peak, tree, disk_usage(folders[release.builder]), release.images, load=loadavg())
        )
        measured[-1].must_hold = must_hold(stage, counts)

    model = work / "tiny.py"
    model.write_text(TINY_MODEL)
    spec = f"{model}:make"
    loader = ["--batch-size", str(args.batch_size), "--no-progress", "--device", "cpu"]
    loader += ["--workers", str(args.workers)] if args.workers is not None else []
    stats = work / "stats.safetensors"
    print(f"== scale {scale}: fit-stats", flush=True)
    argv = [str(CLI), "ood", "fit-stats", "--model", spec, "--weights", "none", "--train"]
    argv += [str(folders["imagenet_train"]), "--out", str(stats), *loader]
    wall, cpu, peak, tree = run_child(argv, logs / "fit_stats.log")
    train_rows = scaled("train_subset", scale) * CLASSES
    measured.append(Measured("fit-stats", wall, cpu, peak, tree, disk_usage(stats), train_rows, load=loadavg()))

    run = work / "run"
    evaluated = [folder for name, folder in folders.items() if name != "imagenet_train"]
    images = sum(counts[name] for name in folders if name != "imagenet_train")
    print(f"== scale {scale}: evaluate ({images:,} images in {len(evaluated)} builds)", flush=True)
    inner = work / "evaluate_stages.json"
    argv = [sys.executable, str(HERE / "stage_run.py"), str(inner), "--", "evaluate", "--model", spec]
    argv += ["--weights", "none", "--datasets", *map(str, evaluated), "--out", str(run), "--features"]
    argv += ["--detector-stats", str(stats), "--bootstrap", str(args.bootstrap), "--allow-partial"]
    argv += ["--benchmark", "openood-v1.5-imagenet", *loader]
    wall, cpu, peak, tree = run_child(argv, logs / "evaluate.log")
    largest = max(
        [scaled(name, scale) for name in REAL_COUNTS if name not in ("imagenet_val", "imagenet_train", "train_subset")]
    )
    evaluate = Measured("evaluate", wall, cpu, peak, tree, disk_usage(run), images, load=loadavg())
    evaluate.inner = json.loads(inner.read_text())
    evaluate.must_hold = must_hold("evaluate", {"val": counts["imagenet_val"], "largest": largest})
    measured.append(evaluate)

    print(f"== scale {scale}: {args.runs} synthetic run folders, then leaderboard", flush=True)
    from scale_runs import write_runs

    written = time.perf_counter()
    runs = write_runs(run, work / "runs", args.runs)
    written = time.perf_counter() - written
    board = work / "leaderboard"
    wall, cpu, peak, tree = run_child([str(CLI), "leaderboard", *map(str, runs), "--out", str(board)], logs / "lb.log")
    suite_bytes = (run / "suite.json").stat().st_size
    leaderboard = Measured("leaderboard", wall, cpu, peak, tree, disk_usage(board), load=loadavg())
    leaderboard.must_hold = must_hold("leaderboard", {}, args.runs, suite_bytes)
    measured.append(leaderboard)
    extra = {
        "sources": asdict(sources),
        "runs_written_seconds": written,
        "runs_disk": disk_usage(work / "runs"),
        "suite_json_bytes": suite_bytes,
        "counts": counts,
    }
    return measured, extra


# -- the report -------------------------------------------------------------------------------------------------


def mib(value: float) -> str:
    return f"{value / 2**20:,.0f}"


def print_scale(scale: float, measured: list[Measured], extra: dict, baseline: int) -> None:
    total_wall = sum(m.wall for m in measured)
    total_cpu = sum(m.cpu for m in measured)
    sources = extra["sources"]
    print(f"\nscale {scale}: {sources['images']:,} images written in {sources['wall']:.1f} s "
          f"({mib(sources['disk'])} MiB of sources); baseline RSS (imports) {mib(baseline)} MiB")  # fmt: skip
    print("| stage | images | wall s | CPU s | share of wall | peak RSS MiB | tree RSS MiB | must hold MiB "
          "| (peak - baseline) / must hold | disk MiB | load at end |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for m in measured:
        ratio = f"{(m.peak_rss - baseline) / m.must_hold:.2f}" if m.must_hold >= 2**20 else "–"
        print(
            f"| {m.stage} | {m.images:,} | {m.wall:.1f} | {m.cpu:.1f} | {m.wall / total_wall:.1%} | "
            f"{mib(m.peak_rss)} | {mib(m.tree_rss)} | {mib(m.must_hold)} | {ratio} | {mib(m.disk)} | {m.load} |"
        )
    print(f"| all stages | | {total_wall:.1f} | {total_cpu:.1f} | 100% | | | | | | |")
    evaluate = next(m for m in measured if m.stage == "evaluate")
    if evaluate.inner:
        print("evaluate's inner stages (wall / CPU s of the main process's stages; each exclusive):")
        for name, stage in evaluate.inner.items():
            print(f"  {name:20s} {stage['calls']:5d} calls {stage['wall']:9.1f} / {stage['cpu']:9.1f}")
    print(f"({extra['runs_written_seconds']:.1f} s to write the synthetic run folders, {mib(extra['runs_disk'])} MiB; "
          f"suite.json {extra['suite_json_bytes'] / 1024:.0f} KiB)")  # fmt: skip


def compare(results: dict[float, tuple[list[Measured], dict]], baseline: int) -> None:
    """Peak RSS above the imports against what must be held, at the smallest and largest scale."""
    small, large = min(results), max(results)
    print(f"\npeak RSS, scale {small} vs {large} (MiB; growth = Δ(peak) / Δ(must hold)):")
    print("| stage | peak | peak | must hold | must hold | (peak - base)/must | (peak - base)/must | growth |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    first = {m.stage: m for m in results[small][0]}
    for m in results[large][0]:
        a = first.get(m.stage)
        if a is None:
            continue
        ratios = [f"{(x.peak_rss - baseline) / x.must_hold:.2f}" if x.must_hold >= 2**20 else "–" for x in (a, m)]
        grown = m.must_hold - a.must_hold
        growth = (
            f"{(m.peak_rss - a.peak_rss) / grown:.2f}"
            if grown >= 2**20
            else f"Δpeak {mib(m.peak_rss - a.peak_rss)} MiB"
        )
        print(f"| {m.stage} | {mib(a.peak_rss)} | {mib(m.peak_rss)} | {mib(a.must_hold)} | {mib(m.must_hold)} | "
              f"{ratios[0]} | {ratios[1]} | {growth} |")  # fmt: skip


def extrapolate(results: dict[float, tuple[list[Measured], dict]]) -> None:
    """Scale 1 from the two largest scales, each stage's CPU time (steadier than wall time on a shared machine) linear in the scale (``a + b x scale``: NINCO's
    fixed count is in ``a``); plus the 14 other ImageNet-C corruptions: 14 times the corruption's build, and
    14 x 5 x 50,000 images at evaluate's added seconds per added image between the two scales."""
    from scale_sources import REAL_COUNTS

    if len(results) < 2:
        return
    low, high = sorted(results)[-2:]
    first = {m.stage: m for m in results[low][0]}
    print(f"\nextrapolated to scale 1 (each stage's CPU seconds linear in the scale through {low} and {high}; "
          "not measured):")  # fmt: skip
    total = 0.0
    full = {}
    for m in results[high][0]:
        a = first[m.stage]
        full[m.stage] = m.cpu + (m.cpu - a.cpu) / (high - low) * (1 - high)
        total += full[m.stage]
        print(f"  {m.stage:28s} {full[m.stage] / 60:8.1f} CPU min")
    evaluate, evaluate_low = next(m for m in results[high][0] if m.stage == "evaluate"), first["evaluate"]
    per_image = (evaluate.cpu - evaluate_low.cpu) / (evaluate.images - evaluate_low.images)
    others = 14 * 5 * REAL_COUNTS["imagenet_c"]
    c_build, c_evaluate = 14 * full["build imagenet_c"], others * per_image
    print(f"  the other 14 ImageNet-C corruptions (extrapolated, not written): build {c_build / 60:.1f} CPU min, "
          f"evaluate {c_evaluate / 60:.1f} CPU min ({per_image * 1000:.2f} CPU ms per image)")  # fmt: skip
    total += c_build + c_evaluate
    print(f"  the whole suite at scale 1 with all 15 corruptions: {total / 3600:.1f} CPU hours (extrapolated)")


def write_json(path: Path, cores: int, baseline: int, results: dict) -> None:
    record = {
        "cores": cores,
        "baseline_rss": baseline,
        "scales": {str(s): {"stages": [asdict(m) for m in ms], **extra} for s, (ms, extra) in results.items()},
    }
    path.write_text(json.dumps(record, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, nargs="+", default=[0.02, 0.1], help="scales of the real counts")
    parser.add_argument("--runs", type=int, default=300, help="synthetic run folders for the leaderboard")
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--num-proc", type=int, default=len(os.sched_getaffinity(0)), help="build processes")
    parser.add_argument("--workers", type=int, default=None, help="DataLoader workers (default: the library's)")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--work", type=Path, default=None, help="folder for the scales' files (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the files")
    parser.add_argument("--json", type=Path, default=None, help="write every figure to this file")
    args = parser.parse_args()

    cores = len(os.sched_getaffinity(0))
    print(f"{cores} CPUs (affinity), load average {loadavg()} at the start; model: the tiny .py model; "
          f"bootstrap {args.bootstrap}; build --num-proc {args.num_proc}")  # fmt: skip
    root = args.work or Path(tempfile.mkdtemp(prefix="suite-scale-"))
    root.mkdir(parents=True, exist_ok=True)
    baseline = baseline_rss(root / "baseline.log")
    results = {}
    try:
        for scale in args.scale:
            started = time.perf_counter()
            results[scale] = run_scale(scale, root / f"scale-{scale}", args)
            print(f"scale {scale} took {(time.perf_counter() - started) / 60:.1f} min in all", flush=True)
            print_scale(scale, *results[scale], baseline)
            if args.json:  # kept as each scale finishes
                write_json(args.json, cores, baseline, results)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    if len(results) > 1:
        compare(results, baseline)
        extrapolate(results)
    print(f"load average at the end: {loadavg()}")


if __name__ == "__main__":
    main()
