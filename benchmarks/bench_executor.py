"""Benchmark: ``--executor ray`` (local cluster) against ``--executor local --num-proc 2``, same run.

Makes a synthetic ImageNet val of N JPEGs of ImageNet-like size (500x375, 1-2 object boxes each, the
release's tar layout), builds ``imagenet_val`` (default + boxes) from it, then builds, each with 2
workers:

* PatchML (``images``, seed 0) from the boxes config;
* perturbations (``imagenet_c_regenerated`` with ``--corruptions`` at ``--severities``, plus clean)
  from the default config;

once with local worker processes (``--num-proc 2``) and once as Ray tasks on a local 2-CPU Ray
cluster (started once, outside the timings, as ``imagenet-suite build --executor ray`` starts one;
each build is run once untimed first, so worker start-up and imports are not counted on either
side). Checks both give the same bytes, and prints both times, the overhead ratio ray/local, the
measured CPU-seconds per example and per shard on Ray, and what that gives for a full ImageNet-C
(50,000 x 19 corruptions x 5 severities) and a 5-seed PatchML (5 x 72,431) on N nodes. Usage:

    uv run --frozen python benchmarks/bench_executor.py [--images 96] [--corruptions gaussian_noise,contrast,glass_blur]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fixtures.patchml_sources import build_synthetic_val

WORKERS = 2
FULL_IMAGENET_C = 50_000 * 19 * 5
FULL_PATCHML_5_SEEDS = 5 * 72_431


def timed_build(name, out, config, inputs, options, shard_size, executor) -> tuple[float, Path]:
    from imagenet_suite.core.options import BuildOptions
    from imagenet_suite.core.runner import build_dataset

    start = time.perf_counter()
    folder = build_dataset(
        name,
        out,
        [config],
        options=BuildOptions(
            inputs=inputs,
            builder_options=options,
            shard_size=shard_size,
            num_proc=WORKERS,
            executor=executor,
            progress=False,
        ),
    )
    return time.perf_counter() - start, folder


def folder_bytes(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, default=96, help="synthetic val images (1-2 boxes each)")
    parser.add_argument("--corruptions", default="gaussian_noise,contrast,glass_blur")
    parser.add_argument("--severities", default="3")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    work = Path(tempfile.mkdtemp(prefix="bench-executor-"))
    try:
        import ray

        from imagenet_suite.core.executors import ray_init
        from imagenet_suite.dataset.folder import DatasetFolder

        _, val = build_synthetic_val(work, args.images, ["default", "boxes"])
        start = time.perf_counter()
        ray_init(None, WORKERS)
        t_start = time.perf_counter() - start
        print(
            f"synthetic val: {args.images} JPEGs 500x375; {os.cpu_count()} CPU cores; {WORKERS} workers; "
            f"local Ray cluster started in {t_start:.1f} s (once per build, not in the times below)"
        )
        jobs = [
            ("patchml", "images", {}, 64, FULL_PATCHML_5_SEEDS, "a 5-seed PatchML"),
            (
                "perturbations",
                "imagenet_c_regenerated",
                {"corruptions": args.corruptions, "severities": args.severities},
                64,
                FULL_IMAGENET_C,
                "a full ImageNet-C (19 x 5 x 50,000)",
            ),
        ]
        for name, config, options, shard_size, full, full_name in jobs:
            times, folders = {}, {}
            for executor in ("local", "ray"):
                timed_build(name, work / f"warm-{executor}-{name}", config, [val], options, shard_size, executor)
                times[executor], folders[executor] = timed_build(
                    name, work / f"{executor}-{name}", config, [val], options, shard_size, executor
                )
            same = folder_bytes(folders["local"]) == folder_bytes(folders["ray"])
            info = DatasetFolder(folders["ray"]).build_info["configs"][config]
            rows = sum(s["num_examples"] for s in info["splits"].values())
            shards = len([f for f in info["files"] if f.endswith(".parquet")])
            cpu_per_example = times["ray"] * WORKERS / rows
            print(
                f"{name}/{config}: {rows} examples in {shards} shards of <= {shard_size}; "
                f"local --num-proc {WORKERS}: {times['local']:.2f} s; ray ({WORKERS} CPUs): {times['ray']:.2f} s; "
                f"overhead ray/local {times['ray'] / times['local']:.2f}x; byte-identical: {same}"
            )
            print(
                f"  on Ray: {cpu_per_example * 1e3:.1f} CPU-ms per example, "
                f"{cpu_per_example * shard_size:.2f} CPU-s per {shard_size}-example shard; "
                f"{full_name} = {full * cpu_per_example / 3600:,.1f} CPU-h -> "
                + ", ".join(
                    f"{n} x 32-core nodes: {full * cpu_per_example / (32 * n) / 3600:.2f} h" for n in (1, 4, 16)
                )
            )
            if not same:
                raise SystemExit("ray and local builds differ")
        ray.shutdown()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
