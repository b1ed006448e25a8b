"""Benchmark: the verified read path (``DatasetFolder``) against reading the same shards unchecked.

Builds ``imagenet_val`` (default config) from a synthetic val of N distinct noise JPEGs of about
1.5 MB each (``--gigabytes 1`` gives a ~1 GB build), waits until its files are older than the
racy-clean window, then times, in one run, with a fresh hash cache:

* **unchecked** (baseline): ``pyarrow.parquet.read_table`` on the shard paths, as a reader that
  trusts the folder would;
* **first read**: ``DatasetFolder(...)`` + the same read, the cache cold (every shard hashed; a new
  empty cache for each repeat);
* **later reads**: a new ``DatasetFolder`` each time (a later command), the cache warm (a stat and
  a lookup per shard).

Each for two reads: ``score``'s (the ``id`` and ``label`` columns only) and ``predict``'s (every
column, images included). The files are in the page cache for all of them (the build just wrote
them), so the first read's cost is the sha256 itself, not the disk. Usage:

    uv run --frozen python benchmarks/bench_read_check.py [--gigabytes 1] [--repeats 5]
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fixtures.imagenet_layouts import ValImage, write_folders_layout


def noise_jpegs(total_bytes: int, seed: int = 0) -> list[ValImage]:
    """Distinct 1000x750 noise JPEGs (about 1.5 MB each) until ``total_bytes`` are reached."""
    rng = np.random.default_rng(seed)
    images, size = [], 0
    while size < total_bytes:
        buffer = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, size=(750, 1000, 3), dtype=np.uint8)).save(buffer, "JPEG", quality=90)
        data = buffer.getvalue()
        images.append(ValImage(f"ILSVRC2012_val_{len(images) + 1:08d}", data, len(images) % 1000, []))
        size += len(data)
    return images


def best_of(repeats: int, read) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        read()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gigabytes", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--shard-size", type=int, default=128, help="rows per shard (about 80 MB shards of these images by default)"
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-read-check-") as scratch:
        root = Path(scratch)
        os.environ["IMAGENET_SUITE_HASH_CACHE"] = str(root / "file-hashes.sqlite")
        import pyarrow.parquet as pq

        from imagenet_suite import files
        from imagenet_suite.core.options import BuildOptions
        from imagenet_suite.core.runner import build_dataset
        from imagenet_suite.dataset.folder import DatasetFolder

        images = noise_jpegs(int(args.gigabytes * 2**30))
        manual = write_folders_layout(root / "manual", images)
        start = time.perf_counter()
        built = build_dataset(
            "imagenet_val",
            root / "out",
            ["default"],
            options=BuildOptions(manual_dir=manual, shard_size=args.shard_size, progress=False),
        )
        build_seconds = time.perf_counter() - start
        shards = [built / rel for rel in DatasetFolder(built).config_info("default")["files"]]
        size = sum(p.stat().st_size for p in shards)
        print(f"build: {len(images)} images, {len(shards)} shards, {size / 2**30:.2f} GiB in {build_seconds:.1f} s")
        time.sleep(files.RACY_NS / 1e9)  # older than the racy-clean window, as any earlier build is

        for label, columns in (("score's read (id, label)", ["id", "label"]), ("predict's read (all columns)", None)):

            def unchecked(columns=columns):
                for path in shards:
                    pq.read_table(path, columns=columns)

            def checked(columns=columns):
                DatasetFolder(built).read_table("default", "validation", columns)

            def cold(checked=checked):
                os.environ["IMAGENET_SUITE_HASH_CACHE"] = str(Path(tempfile.mkdtemp(dir=root)) / "cold.sqlite")
                checked()

            baseline = best_of(args.repeats, unchecked)
            first = best_of(args.repeats, cold)  # each time with an empty hash cache
            later = best_of(args.repeats, checked)  # the cache of the last cold read
            print(
                f"{label}: unchecked {baseline * 1e3:.1f} ms; first read {first * 1e3:.1f} ms "
                f"({first / baseline:.2f}x, {size / 2**20 / (first - baseline):.0f} MiB/s hashed); "
                f"later reads {later * 1e3:.1f} ms ({later / baseline:.2f}x, "
                f"+{(later - baseline) * 1e3 / len(shards):.2f} ms per shard)"
            )


if __name__ == "__main__":
    main()
