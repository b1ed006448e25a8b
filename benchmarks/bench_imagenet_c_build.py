"""Benchmark: imagenet_c build throughput (one corruption x severity) against the read+write floor, same run.

Makes a synthetic ``noise.tar`` in the release's layout (``<corruption>/<severity>/<wnid>/
ILSVRC2012_val_NNNNNNNN.JPEG``) holding N images of ``gaussian_noise/3`` plus N of
``gaussian_noise/1`` (so the config has to pick its members out of a larger tar, as in the
real 3-corruption x 5-severity tar), 224x224 noisy JPEGs like ImageNet-C's. Then times, on that tar:

* floor  — stream the tar with ``tarfile``, keep the ``gaussian_noise/3`` members and write ids,
           labels, val ids and the same bytes to Parquet with pyarrow alone (same columns, row
           groups and compression as ours: image bytes uncompressed);
* ours   — ``build_dataset("imagenet_c", config="gaussian_noise_3")`` with ``num_proc`` 1 and 2
           (source hashing, tar index, layout checks, JPEG header checks, card and build_info included).

Prints images/s, MB/s and the ratio floor/ours. Usage:
    uv run --frozen python benchmarks/bench_imagenet_c_build.py [--images 4000]
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fixtures import variants as fx

CONFIG = ("gaussian_noise", 3)


def make_images(n: int, severity: int, seed: int = 0) -> list[fx.Img]:
    """N 224x224 JPEGs (smooth base + per-pixel noise, quality 85), ~20-40 KB like ImageNet-C's noise images."""
    rng = np.random.default_rng(seed + severity)
    base = rng.integers(0, 256, size=(224 // 8, 224 // 8, 3), dtype=np.uint8)
    images = []
    for i in range(n):
        smooth = np.asarray(Image.fromarray(np.roll(base, i, axis=1)).resize((224, 224), Image.BILINEAR)).astype(
            np.int16
        )
        noisy = np.clip(smooth + rng.normal(0, 8 * severity, size=smooth.shape), 0, 255).astype(np.uint8)
        buffer = io.BytesIO()
        Image.fromarray(noisy).save(buffer, format="JPEG", quality=85)
        images.append(fx.Img(fx.wnid(i % 1000), f"ILSVRC2012_val_{i + 1:08d}.JPEG", buffer.getvalue()))
    return images


def floor(tar_path: Path, out: Path, shard_size: int) -> float:
    """Read the tar sequentially, keep one corruption x severity, write the same bytes with pyarrow; seconds."""
    from imagenet_suite import classes

    start = time.perf_counter()
    prefix = f"{CONFIG[0]}/{CONFIG[1]}/"
    schema = pa.schema(
        [
            ("id", pa.string()),
            ("file_name", pa.string()),
            ("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
            ("label", pa.int64()),
            ("val_id", pa.string()),
        ]
    )
    rows, shard = [], 0

    def flush():
        nonlocal rows, shard
        pq.write_table(
            pa.Table.from_pylist(rows, schema=schema),
            out / f"floor-{shard:05d}.parquet",
            row_group_size=100,
            compression={
                "image.bytes": "none",
                "id": "snappy",
                "file_name": "snappy",
                "image.path": "snappy",
                "label": "snappy",
                "val_id": "snappy",
            },
            use_dictionary=False,
        )
        rows, shard = [], shard + 1

    with tarfile.open(tar_path, "r:") as tar:
        for member in tar:
            if not member.name.startswith(prefix):
                continue
            data = tar.extractfile(member).read()
            wnid, file = member.name[len(prefix) :].split("/")
            rows.append(
                {
                    "id": member.name,
                    "file_name": member.name,
                    "image": {"bytes": data, "path": member.name},
                    "label": classes.index_of(wnid),
                    "val_id": file[:-5],
                }
            )
            if len(rows) == shard_size:
                flush()
    if rows:
        flush()
    return time.perf_counter() - start


def ours(manual: Path, out: Path, num_proc: int, shard_size: int) -> float:
    start = time.perf_counter()
    fx.build("imagenet_c", manual, out, [f"{CONFIG[0]}_{CONFIG[1]}"], num_proc=num_proc, shard_size=shard_size)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--images", type=int, default=4000, help="images of the built config (the tar holds twice as many)"
    )
    parser.add_argument(
        "--shard-size", type=int, default=1000, help="examples per shard (the real build: 5,000 of 50,000 = 10 shards)"
    )
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    work = Path(tempfile.mkdtemp(prefix="bench-c-"))
    try:
        config_images = make_images(args.images, CONFIG[1])
        contents = {CONFIG: config_images, (CONFIG[0], 1): make_images(args.images, 1)}
        manual = fx.write_imagenet_c(work / "manual", "noise", contents)
        tar_mb = (manual / "noise.tar").stat().st_size / 1e6
        config_mb = sum(len(im.data) for im in config_images) / 1e6
        print(
            f"synthetic noise.tar: {2 * args.images} images, {tar_mb:.1f} MB; config {CONFIG[0]}_{CONFIG[1]}: "
            f"{args.images} images, {config_mb:.1f} MB ({config_mb * 1e3 / args.images:.0f} KB/image), "
            f"{os.cpu_count()} CPU cores"
        )
        import datasets  # noqa: F401  (import costs are paid once per process, not per image)

        from imagenet_suite.core import registry

        registry.all_builders()  # imports every builder module once
        (work / "floor").mkdir()
        floor(manual / "noise.tar", work / "floor", args.shard_size)  # warm the page cache
        shutil.rmtree(work / "floor")
        (work / "floor").mkdir()
        t_floor = floor(manual / "noise.tar", work / "floor", args.shard_size)
        rate = lambda t: f"{args.images / t:8.0f} images/s {config_mb / t:7.1f} MB/s"  # noqa: E731
        print(f"floor (tarfile + pyarrow alone):         {t_floor:6.2f} s {rate(t_floor)}")
        # worker processes start once per build process (a forkserver importing datasets); a tiny
        # build first keeps that one-time cost out of the per-image rates
        small = fx.write_imagenet_c(work / "small", "noise", {CONFIG: config_images[:8]})
        ours(small, work / "warmup", 2, 2)
        for num_proc in (1, 2):
            t = ours(manual, work / f"ours{num_proc}", num_proc, args.shard_size)
            print(
                f"imagenet_c build, --num-proc {num_proc}:        {t:6.2f} s {rate(t)}  = {t_floor / t:5.1%} of the floor"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
