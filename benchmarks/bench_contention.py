"""Benchmark: predict and evaluate on CPUs shared with other work, against their fair share of the CPUs.

    uv run --frozen python benchmarks/bench_contention.py [--burners 8] [--images 48] [--model resnet18]
    Quick check: --burners 2 --images 8 --model test_resnet --bootstrap 20

Builds ``imagenet_val`` from ``--images`` synthetic 500x375 JPEGs (as ``bench_predict.py``), then times two
``imagenet-suite`` commands as child processes — ``predict`` and ``evaluate --bootstrap B`` with a random-init
timm model — once with no added load and once while ``--burners`` CPU-burning processes (``while True:
pass``) run beside them, each in two ways:

* ``as shipped`` — the ``imagenet-suite`` command: it sets the OpenMP environment before torch loads
  (``imagenet_suite.cpus.quiet_openmp``: idle OpenMP threads sleep, ``OMP_NUM_THREADS`` = the CPUs the
  process may use);
* ``spinning``  — the same command with torch imported before it, so OpenMP runs with its defaults (GNU
  OpenMP spins about 300,000 times at every barrier before sleeping): what every run did before.

*Fair share*: with ``R`` runnable threads of other processes (sampled before each run from
``/proc/<pid>/task/<tid>/stat``, each weighted by its nice level as the scheduler weighs it: a ``nice -n 10``
job counts about 0.1), the command's own parallelism ``u`` (its CPU seconds / wall seconds with no added
load) and ``C`` CPUs, CFS gives each runnable thread an equal share: the command gets ``min(u, C u / (R + k
+ u))`` CPUs with ``k`` burners. The fair slowdown is that share with none over that share with
``--burners``; the measured slowdown over it should stay under 1.5. On an idle machine ``R`` is 0 and 8
burners on 2 CPUs give a fair slowdown of 5x; on a machine already busy the expectation says so. CPU
seconds are printed too: spinning threads burn CPU time without doing work.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

CLI = Path(sys.executable).with_name("imagenet-suite")
SPINNING = "import sys, torch; from imagenet_suite.cli import main; sys.exit(main(sys.argv[1:]))"


def nice_weight(nice: int) -> float:
    """CFS's weight of a thread at ``nice`` relative to nice 0 (1024): each nice level is about 1.25x."""
    return 1.25 ** (-nice)


def running_weight(exclude: set[int]) -> float:
    """The runnable threads of the machine now (state ``R`` in ``/proc/<pid>/task/<tid>/stat``), each weighted by
    its nice level as CFS weighs it (:func:`nice_weight`), less the processes in ``exclude``."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/task/*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        if fields[0] == "R" and int(stat.parts[2]) not in exclude:
            total += nice_weight(int(fields[16]))
    return total


def others_running(seconds: float = 2.0) -> float:
    """Mean weighted runnable threads of other processes (:func:`running_weight`) over ``seconds``: other
    engineers' ``nice -n 10`` jobs weigh about 0.1 of a thread, a burner 1."""
    found = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        found.append(running_weight({os.getpid()}))
        time.sleep(0.1)
    return sum(found) / len(found)


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + sys of the process and its children) of ``argv``."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv[:4])} ... failed: {process.stderr.read().decode()[-2000:]}")
    process.stderr.close()
    return wall, usage.ru_utime + usage.ru_stime


def burn(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def stop(burners: list[subprocess.Popen]) -> None:
    for process in burners:
        process.kill()
    for process in burners:
        process.wait()


def share(parallelism: float, others: float, cpus: int) -> float:
    """CPUs a command of ``parallelism`` gets beside ``others`` runnable threads on ``cpus`` CPUs (CFS)."""
    return min(parallelism, cpus * parallelism / max(cpus, others + parallelism))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--burners", type=int, default=8)
    parser.add_argument("--images", type=int, default=48)
    parser.add_argument("--model", default="resnet18", help="timm model (random init)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--bootstrap", type=int, default=100)
    parser.add_argument("--commands", nargs="+", choices=("predict", "evaluate"), default=["predict", "evaluate"])
    args = parser.parse_args()

    from bench_predict import write_images

    from imagenet_suite.core.options import BuildOptions
    from imagenet_suite.core.runner import build_dataset
    from imagenet_suite.cpus import available_cpus

    cpus = available_cpus()
    print(f"{cpus} CPUs available; load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])} at the start")
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "KMP_", "GOMP_"))}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_images(root / "images", args.images)
        dataset = build_dataset(
            "imagenet_val", root / "out", ["default"], options=BuildOptions(manual_dir=root / "images", progress=False)
        )
        model = ["--model", f"timm:{args.model}", "--weights", "none", "--device", "cpu", "--no-progress"]
        loader = ["--batch-size", str(args.batch_size)]
        commands = {
            "predict": ["predict", *model, *loader, str(dataset), "--out", str(root / "out.pt")],
            "evaluate": ["evaluate", *model, *loader, "--datasets", str(dataset), "--bootstrap", str(args.bootstrap)],
        }
        ways = {"as shipped": [str(CLI)], "spinning": [sys.executable, "-c", SPINNING]}
        rows = []
        for name, command in ((name, commands[name]) for name in args.commands):
            for way, prefix in ways.items():
                found = {}
                for burners in (0, args.burners):
                    others = others_running()
                    running = burn(burners)
                    try:
                        time.sleep(0.5)
                        out = ["--out", str(root / f"run-{name}-{way}-{burners}")] if name == "evaluate" else []
                        found[burners] = (*timed([*prefix, *command, *out], environ), others)
                    finally:
                        stop(running)
                    (root / "out.pt").unlink(missing_ok=True)
                    print(f"  {name} {way} with {burners} burners: {found[burners][0]:.1f} s wall, "
                          f"{found[burners][1]:.1f} s CPU, {others:.1f} other runnable threads", flush=True)  # fmt: skip
                rows.append((name, way, found))
    print(f"\n{args.images} images, timm {args.model} (random init), batch {args.batch_size}, bootstrap {args.bootstrap}; "
          f"{args.burners} burners; {cpus} CPUs")  # fmt: skip
    print(
        "| command | way | wall alone | CPU alone | wall, burners | CPU, burners | slowdown | fair slowdown | ratio |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, way, found in rows:
        (wall0, cpu0, others0), (wall1, cpu1, others1) = found[0], found[args.burners]
        parallelism = cpu0 / wall0
        fair = share(parallelism, others0, cpus) / share(parallelism, others1 + args.burners, cpus)
        slowdown = wall1 / wall0
        print(f"| {name} | {way} | {wall0:.1f} | {cpu0:.1f} | {wall1:.1f} | {cpu1:.1f} | {slowdown:.2f}x | "
              f"{fair:.2f}x | {slowdown / fair:.2f} |")  # fmt: skip
    print(f"load average at the end: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")


if __name__ == "__main__":
    main()
