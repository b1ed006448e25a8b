"""Benchmark: ``imagenet-suite leaderboard`` over many runs, this working tree against a baseline git ref,
measured in the same run: wall seconds, CPU seconds and peak RSS, at two or more run counts, and whether the
outputs are byte-identical.

    uv run --frozen python benchmarks/bench_leaderboard.py --run RUN_DIR --runs 100 300
    uv run --frozen python benchmarks/bench_leaderboard.py --run RUN_DIR --runs 100 300 --baseline-ref 143f04e

``RUN_DIR`` is one real run folder of ``imagenet-suite evaluate`` (with ``--bootstrap``: the leaderboard's paired
tests read its ``uncertainty/`` files), e.g. the ``run`` folder that ``bench_suite_scale.py --scale 0.002
--runs 1 --keep --work DIR`` leaves in ``DIR/scale-0.002/run``. From it, ``max(--runs)`` synthetic run folders
are written once (``scale_runs.write_runs``: its numbers moved, each a run the leaderboard accepts); each
count ``N`` takes the first ``N`` of them.

The baseline is the code at ``--baseline-ref`` (default ``143f04e``, main before the leaderboard was made
to scale): ``git archive`` of that ref into a temporary folder, whose CLI runs with ``PYTHONPATH`` pointing
there (the same virtual environment, so the same libraries); this tree's CLI runs with ``PYTHONPATH``
pointing at this checkout. Each code reads the runs as the ``evaluate`` of its time wrote them
(``scale_runs.rewrite_suites`` rewrites their suite.json files in place). A baseline whose ``evaluate`` writes
the format this tree's writes (format 4, the rows as columns) is measured in turn with this tree at each count,
on the same files. An older baseline reads them in format 3 (each report's rows a list of objects): all its
measurements come first, then the rewrite, then this tree's; ``--old-format-too`` then also measures this tree
on format 3 (runs evaluated before format 4). Each measurement (``--repeat`` times, the best wall time kept) is
a child process measured as ``bench_suite_scale.py`` measures its stages (``run_child``: wall, CPU = user + sys
of the process and the workers it waited for, peak RSS = the ``VmHWM`` of its largest process), and the peak of
the sum of its processes' proportional set sizes, sampled every 2 s (the code may fork workers, which share their
parent's pages). Then every file the two wrote (``leaderboard.md``, the CSVs, the PNGs,
``leaderboard.html``, ``leaderboard_runs.json``) is compared byte for byte and the result said; a difference is
a failure (exit code 1).

Printed: per count the two measurements and the ratios new / baseline, the peak's growth per added run
(``Δpeak / Δruns``, MiB) for each, ``/proc/loadavg`` at each measurement (the machine may be shared: wall
seconds include waiting for the cores; CPU seconds are the steadier figure).
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from bench_suite_scale import TreeSampler, loadavg, mib, run_child  # noqa: E402  (benchmarks/ on the path first)

CLI = "import sys; from imagenet_suite.cli import main; sys.exit(main())"
PYTHON = [sys.executable, "-P"]  # -P: not the current folder first on sys.path (a checkout there would win)
MAPPED = ("builders", "hierarchies", "cards")  # folders pyproject.toml maps into the imagenet_suite namespace


def archive(ref: str, into: Path) -> Path:
    """The tree of ``ref`` (``git archive``) in ``into``, laid out so that ``PYTHONPATH=into`` imports its
    ``imagenet_suite`` with its own builders, hierarchies and cards."""
    into.mkdir(parents=True, exist_ok=True)
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", ref], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar.stdout, check=True)
    for name in MAPPED:
        if (into / name).is_dir() and not (into / "imagenet_suite" / name).exists():
            (into / "imagenet_suite" / name).symlink_to(into / name, target_is_directory=True)
    return into


def imported_from(pythonpath: Path) -> str:
    """Where ``imagenet_suite`` is imported from with ``PYTHONPATH=pythonpath`` (checked, not assumed)."""
    code = "import imagenet_suite; print(imagenet_suite.__file__)"
    found = subprocess.run([*PYTHON, "-c", code], env=_env(pythonpath), check=True, capture_output=True)
    return found.stdout.decode().strip()


def _env(pythonpath: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(pythonpath)}


def measure(pythonpath: Path, runs: list[Path], out: Path, log: Path) -> dict:
    """One ``leaderboard`` of ``runs`` into ``out`` by the code at ``pythonpath``: wall, CPU, peak RSS, load."""
    shutil.rmtree(out, ignore_errors=True)
    argv = [*PYTHON, "-c", CLI, "leaderboard", *map(str, runs), "--out", str(out)]
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(pythonpath)  # run_child passes the environment on
    sampler = TreeSampler(0, pss=True)
    try:
        wall, cpu, peak, _ = run_child(argv, log, sampler)
    finally:
        if saved is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = saved
    return {"wall": wall, "cpu": cpu, "peak": peak, "pss": sampler.pss_peak, "load": loadavg()}


def written_format(pythonpath: Path) -> str:
    """The suite.json format ``evaluate`` of the code at ``pythonpath`` writes."""
    code = "from imagenet_suite.scoring.summary.suite_json import SUITE_FORMAT; print(SUITE_FORMAT)"
    found = subprocess.run([*PYTHON, "-c", code], env=_env(pythonpath), check=True, capture_output=True)
    return found.stdout.decode().strip()


def _format(runs: list[Path], current: bool) -> None:
    """The runs' suite.json in the format evaluate writes now (``current``) or in format 3, rewritten if need be."""
    from scale_runs import rewrite_suites

    from imagenet_suite.scoring.summary.suite_json import SUITE_FORMAT, SUITE_FORMAT_3

    wanted = SUITE_FORMAT if current else SUITE_FORMAT_3
    if json.loads((runs[0] / "suite.json").read_bytes()).get("format") != wanted:
        print(f"writing the runs' suite.json in {wanted} ...", flush=True)
        rewrite_suites(runs, current=current)
    size = sum((run / "suite.json").stat().st_size for run in runs) / len(runs) / 2**20
    print(f"suite.json ({wanted}): {size:.2f} MiB each", flush=True)


def differing(first: Path, second: Path) -> list[str]:
    """The files (relative paths) present in only one folder or not byte-identical."""
    names = {p.relative_to(first) for p in first.rglob("*") if p.is_file()}
    others = {p.relative_to(second) for p in second.rglob("*") if p.is_file()}
    found = sorted(str(name) for name in names ^ others)
    found += sorted(str(n) for n in names & others if not filecmp.cmp(first / n, second / n, shallow=False))
    return found


def _measure_all(
    phases: list[tuple[str, Path]], runs: list[Path], counts: list[int], repeat: int, work: Path, results: dict
) -> None:
    """Each ``(label, code)`` of ``phases`` at each count, ``repeat`` times alternating; the best wall time kept in
    ``results[count][label]``; outputs in ``work/out-<label>-<count>``."""
    for count in counts:
        for attempt in range(repeat):
            for label, path in phases:
                out = work / f"out-{label.replace(' ', '-')}-{count}"
                found = measure(path, runs[:count], out, work / f"{label.replace(' ', '-')}-{count}-{attempt}.log")
                best = results[count].get(label)
                if best is None or found["wall"] < best["wall"]:
                    results[count][label] = found
                print(f"  {count} runs, {label}: {found['wall']:.1f} s wall, {found['cpu']:.1f} s CPU, "
                      f"peak {mib(found['peak'])} MiB, processes' PSS {mib(found['pss'])} MiB (load {found['load']})",
                      flush=True)  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, required=True, help="a real run folder of `imagenet-suite evaluate`")
    parser.add_argument("--runs", type=int, nargs="+", default=[100, 300], help="run counts to measure")
    parser.add_argument("--baseline-ref", default="143f04e", help="git ref of the baseline code")
    parser.add_argument("--repeat", type=int, default=1, help="measurements per count and code (best wall kept)")
    parser.add_argument("--real-sizes", type=float, default=None, metavar="SCALE",
                        help="RUN was evaluated at this --scale of bench_suite_scale.py: grow the synthetic runs to "
                        "the sizes of runs at the real image counts (scale_runs.RealSizes)")  # fmt: skip
    parser.add_argument("--work", type=Path, default=None, help="folder for the run folders (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument("--old-format-too", action="store_true",
                        help="also measure this tree on the runs in format 3, before they are rewritten")  # fmt: skip
    args = parser.parse_args()

    from scale_runs import RealSizes, write_runs

    from imagenet_suite.scoring.summary.suite_json import SUITE_FORMAT

    cores = len(os.sched_getaffinity(0))
    print(f"{cores} CPUs (affinity), load average {loadavg()} at the start; baseline {args.baseline_ref}")
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-leaderboard-"))
    work.mkdir(parents=True, exist_ok=True)
    failed = False
    try:
        codes = {"baseline": archive(args.baseline_ref, work / "baseline-code"), "new": ROOT}
        for label, path in codes.items():
            print(f"{label}: imagenet_suite from {imported_from(path)}")
        runs_dir = work / "runs"
        if len(list(runs_dir.glob("run_*"))) < max(args.runs):
            print(f"writing {max(args.runs)} synthetic run folders from {args.run} ...", flush=True)
            sizes = RealSizes(args.real_sizes) if args.real_sizes else None
            write_runs(args.run, runs_dir, max(args.runs), real_sizes=sizes, current_format=False)
        runs = sorted(runs_dir.glob("run_*"))
        results: dict[int, dict[str, dict]] = {count: {} for count in args.runs}
        baseline_format = written_format(codes["baseline"])
        print(f"the baseline's evaluate writes suite.json {baseline_format}; this tree's {SUITE_FORMAT}")
        if baseline_format == SUITE_FORMAT:  # both read the runs as evaluate writes them now, measured in turn
            _format(runs[: max(args.runs)], current=True)
            _measure_all([("baseline", codes["baseline"]), ("new", ROOT)], runs, sorted(args.runs), args.repeat, work,
                         results)  # fmt: skip
        else:
            _format(runs[: max(args.runs)], current=False)
            phases = [("baseline", codes["baseline"])] + ([("new on format 3", ROOT)] if args.old_format_too else [])
            _measure_all(phases, runs, sorted(args.runs), args.repeat, work, results)
            print("rewriting the suite.json files in the format evaluate writes now ...", flush=True)
            _format(runs[: max(args.runs)], current=True)
            _measure_all([("new", ROOT)], runs, sorted(args.runs), args.repeat, work, results)
        suite_bytes = sum((run / "suite.json").stat().st_size for run in runs[: max(args.runs)])
        for count in sorted(args.runs):
            for label in results[count]:
                if label == "baseline":
                    continue
                out = work / f"out-{label.replace(' ', '-')}-{count}"
                diff = differing(work / f"out-baseline-{count}", out)
                files = sum(1 for p in out.rglob("*") if p.is_file())
                if diff:
                    failed = True
                    print(f"  {count} runs, {label}: {len(diff)} of the outputs DIFFER from the baseline's: "
                          f"{', '.join(diff[:10])}")  # fmt: skip
                else:
                    print(f"  {count} runs, {label}: all {files} output files byte-identical to the baseline's")
        print(
            "\n| runs | code | wall s | CPU s | peak RSS MiB | peak PSS of all its processes MiB | load (1/5/15 min) |"
        )
        print("| ---: | --- | ---: | ---: | ---: | ---: | --- |")
        for count, found in results.items():
            for label, m in found.items():
                print(f"| {count} | {label} | {m['wall']:.1f} | {m['cpu']:.1f} | {mib(m['peak'])} | {mib(m['pss'])} | "
                      f"{m['load']} |")  # fmt: skip
            base = found["baseline"]
            for label, m in found.items():
                if label != "baseline":
                    print(f"| {count} | {label} / baseline | {m['wall'] / base['wall']:.2f}x | "
                          f"{m['cpu'] / base['cpu']:.2f}x | {m['peak'] / base['peak']:.2f}x | "
                          f"{m['pss'] / base['pss']:.2f}x | |")  # fmt: skip
        if len(results) > 1:
            low, high = min(results), max(results)
            print(f"\npeak growth per added run, {low} -> {high} runs (MiB per run):")
            for label in results[high]:
                grown = results[high][label]["peak"] - results[low][label]["peak"]
                pss = results[high][label]["pss"] - results[low][label]["pss"]
                print(f"  {label}: {grown / 2**20 / (high - low):.2f} (PSS of all its processes: "
                      f"{pss / 2**20 / (high - low):.2f})")  # fmt: skip
            print(f"  (suite.json bytes per run: {suite_bytes / max(args.runs) / 2**20:.2f} MiB)")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"load average at the end: {loadavg()}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
