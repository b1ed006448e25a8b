"""Benchmark: imagenet_val build throughput against the pyarrow read+write floor, same run.

Makes N JPEGs of ImageNet-like size in two real layouts of the release and times, on each:

* floor  — read the images in order with the standard library alone (``tarfile`` for the tar layout;
           ``open().read()`` over the sorted ``val/<wnid>/`` files for the folder layout) and write
           ids, labels and the same bytes to Parquet with pyarrow alone (same column layout and
           compression as ours: image bytes uncompressed; no checks, no hashing, no fsync);
* ours   — ``build_dataset("imagenet_val")`` with ``num_proc`` 1 and 2: source verification (the tar's
           pinned sha256; the folder's per-file content sha256, both in the background), layout
           detection, the structural check and pixel bound of every image, shards fsynced and
           hashed before their rename, card and build_info included;
* load   — cold and warm ``datasets.load_dataset`` of the result.

Prints images/s, MB/s and the ratio floor/ours — best run against best run, and the median of the
per-round ratios (the runs are interleaved, so a round's floor and builds see the same machine
speed; this VM's speed drifts by up to 2x over seconds) — once with the files on the system temp
dir (a disk) and once on /dev/shm (RAM): a VM disk that throttles writes adds seconds of noise to
both sides, RAM shows what the software costs.
Usage:
    uv run --frozen python benchmarks/bench_imagenet_val_build.py [--images 4000] [--layout tar --layout folders]
                                                                   [--work-dir DIR ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

# Worker processes (--num-proc 2) re-run this script's top level: CPython's forkserver cannot
# preload __main__. Like the imagenet-suite console script, it therefore imports only the standard
# library here; everything heavy is imported inside the functions.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def make_jpegs(n: int, seed: int = 0) -> list:
    """N JPEGs of ~110 KB (500x375, smooth noise + texture), like ImageNet val's average file."""
    import io

    import numpy as np
    from PIL import Image

    from tests.fixtures import imagenet_layouts as fx  # fixture writers: same layout as the release

    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, size=(375 // 5, 500 // 5, 3), dtype=np.uint8)
    images = []
    for i in range(n):
        small = np.roll(base, i, axis=1)
        array = np.asarray(Image.fromarray(small).resize((500, 375), Image.BILINEAR)).astype(np.int16)
        array = np.clip(array + rng.integers(-24, 24, size=array.shape), 0, 255).astype(np.uint8)
        buffer = io.BytesIO()
        Image.fromarray(array).save(buffer, format="JPEG", quality=90)
        images.append(
            fx.ValImage(f"ILSVRC2012_val_{i + 1:08d}", buffer.getvalue(), int(rng.integers(0, 1000)), [(0, 0, 10, 10)])
        )
    return images


def write_floor_shard(rows: list[dict], out: Path, shard: int) -> None:
    """One shard of the floor: the rows as Parquet with pyarrow alone (ours' columns, row groups and
    compression: image bytes uncompressed, the rest snappy, no dictionaries)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema(
        [
            ("id", pa.string()),
            ("file_name", pa.string()),
            ("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
            ("label", pa.int64()),
        ]
    )
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
        },
        use_dictionary=False,
    )


def floor(tar_path: Path, labels: list[int], out: Path, shard_size: int) -> float:
    """Read the tar sequentially and write the same bytes with pyarrow alone; return seconds."""
    import tarfile

    start = time.perf_counter()
    rows, shard = [], 0
    with tarfile.open(tar_path, "r:") as tar:
        for index, member in enumerate(tar):
            data = tar.extractfile(member).read()
            rows.append(
                {
                    "id": member.name[:-5],
                    "file_name": member.name,
                    "image": {"bytes": data, "path": member.name},
                    "label": labels[index],
                }
            )
            if len(rows) == shard_size:
                write_floor_shard(rows, out, shard)
                rows, shard = [], shard + 1
    if rows:
        write_floor_shard(rows, out, shard)
    return time.perf_counter() - start


def folder_floor(root: Path, labels: dict[str, int], out: Path, shard_size: int) -> float:
    """Read ``val/<wnid>/*.JPEG`` in sorted order and write the same bytes with pyarrow alone; return seconds."""
    start = time.perf_counter()
    files = sorted((folder.name, name) for folder in os.scandir(root / "val") for name in os.listdir(folder.path))
    files.sort(key=lambda wnid_name: wnid_name[1])  # id order, as the build writes
    for shard, first in enumerate(range(0, len(files), shard_size)):
        rows = []
        for wnid, name in files[first : first + shard_size]:
            with open(root / "val" / wnid / name, "rb") as handle:
                data = handle.read()
            rows.append(
                {"id": name[:-5], "file_name": name, "image": {"bytes": data, "path": name}, "label": labels[name[:-5]]}
            )
        write_floor_shard(rows, out, shard)
    return time.perf_counter() - start


def ours(manual: Path, out: Path, num_proc: int, shard_size: int, builder: str = "imagenet_val") -> float:
    from imagenet_suite.core.options import BuildOptions
    from imagenet_suite.core.runner import build_dataset
    from imagenet_suite.core.sources import read_pins_file

    pins = manual / "checksums.tsv"
    start = time.perf_counter()
    build_dataset(
        builder,
        out,
        options=BuildOptions(
            manual_dir=manual,
            pins=read_pins_file(pins) if pins.exists() else None,
            num_proc=num_proc,
            shard_size=shard_size,
            progress=False,
        ),
    )
    return time.perf_counter() - start


def load_times(folder: Path, cache: Path) -> tuple[float, float]:
    import datasets

    datasets.disable_progress_bars()
    times = []
    for _ in range(2):
        start = time.perf_counter()
        datasets.load_dataset(str(folder), "default", split="validation", cache_dir=str(cache))
        times.append(time.perf_counter() - start)
    return times[0], times[1]


def default_work_dirs() -> list[str | None]:
    """The system temp dir (a disk), and /dev/shm (RAM) where the machine has one."""
    shm = Path("/dev/shm")
    return [None] + ([str(shm)] if shm.is_dir() and os.access(shm, os.W_OK) else [])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument(
        "--layout",
        action="append",
        choices=("tar", "folders"),
        default=None,
        help="release layout to build from; repeatable (default: both)",
    )
    parser.add_argument(
        "--shard-size", type=int, default=500, help="examples per shard (the real build: 2,500 of 50,000 = 20 shards)"
    )
    parser.add_argument(
        "--work-dir",
        action="append",
        default=None,
        help="where the tar and the outputs go; repeatable (default: the system temp dir, then "
        "/dev/shm, which takes a throttled disk's write stalls out of both sides)",
    )
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    images = make_jpegs(args.images)
    for work_dir in args.work_dir or default_work_dirs():
        for layout in args.layout or ("tar", "folders"):
            measure(images, args, work_dir, layout)


def measure(images: list, args: argparse.Namespace, work_dir: str | None, layout: str) -> None:
    """Lay the images out under ``work_dir`` and print floor vs ours (best of interleaved runs)."""
    from tests.fixtures import imagenet_layouts as fx

    work = Path(tempfile.mkdtemp(prefix="bench-val-", dir=work_dir))
    try:
        if layout == "tar":
            manual = fx.write_tar_layout(work / "manual", images, with_boxes=False)
            size_mb = (manual / "ILSVRC2012_img_val.tar").stat().st_size / 1e6
            labels = [im.label for im in images]
            run_floor = lambda out: floor(manual / "ILSVRC2012_img_val.tar", labels, out, args.shard_size)  # noqa: E731
            what = f"synthetic val tar of {len(images)} images, {size_mb:.1f} MB"
        else:
            manual = fx.write_folders_layout(work / "manual", images)
            size_mb = sum(len(im.data) for im in images) / 1e6
            labels = {im.image_id: im.label for im in images}
            run_floor = lambda out: folder_floor(manual, labels, out, args.shard_size)  # noqa: E731
            what = f"val/<wnid>/ folders of {len(images)} images, {size_mb:.1f} MB (content hashing included)"
        print(
            f"\n== {layout} layout in {work.parent}: {what} ({size_mb * 1e3 / len(images):.0f} KB/image), "
            f"{os.cpu_count()} CPU cores"
        )
        import datasets  # noqa: F401  (import costs are paid once per process, not per image)
        import scipy.io  # noqa: F401

        import imagenet_suite.builders.imagenet_val  # noqa: F401

        # worker processes start once per build process (a forkserver importing datasets, ~3 s);
        # a tiny build first keeps that one-time cost out of the per-image rates
        small = fx.write_tar_layout(work / "small", images[:8], with_boxes=False)
        startup = ours(small, work / "warmup", 2, 2)
        runs = {
            "floor": run_floor,
            "num_proc 1": lambda out: ours(manual, out, 1, args.shard_size),
            "num_proc 2": lambda out: ours(manual, out, 2, args.shard_size),
        }
        times = {name: [] for name in runs}
        for _ in range(args.repeat):  # interleaved, each after a sync, so page-cache writeback hits all alike
            for name, run in runs.items():
                out = work / f"out-{name.replace(' ', '')}"
                shutil.rmtree(out, ignore_errors=True)
                out.mkdir()
                os.sync()
                times[name].append(run(out))
        rate = lambda t: f"{len(images) / t:8.0f} images/s {size_mb / t:7.1f} MB/s"  # noqa: E731
        t_floor = min(times["floor"])
        print(
            f"best of {args.repeat} interleaved runs (and, robust to the VM's speed drifting between runs, the median "
            "of each round's floor/ours ratio):"
        )
        print(f"floor (standard library + pyarrow alone): {t_floor:6.2f} s {rate(t_floor)}")
        for name in ("num_proc 1", "num_proc 2"):
            t = min(times[name])
            paired = statistics.median(f / o for f, o in zip(times["floor"], times[name], strict=True))
            print(
                f"imagenet_val build, --{name.replace('_', '-')}:         {t:6.2f} s {rate(t)}  = {t_floor / t:5.1%} of the "
                f"floor (median per round {paired:5.1%})"
            )
        for name, values in times.items():
            print(f"  all runs, {name:<10}: " + " ".join(f"{t:.2f}" for t in values) + " s")
        print(
            f"(once per process with --num-proc >= 2: starting the worker server, {startup:.1f} s, not in the rates above)"
        )
        cold, warm = load_times(work / "out-num_proc1" / "imagenet_val-1.0.0", work / "hf-cache")
        print(f"load_dataset of the result: cold {cold:.2f} s, warm {warm:.2f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
