"""Benchmark: imagenet_train build throughput, and its extrapolation to the full 1,281,167 images.

Makes N JPEGs of ImageNet-like size (~110 KB, as ``bench_imagenet_val_build.py``) over K classes and lays
them out as the release does (``ILSVRC2012_img_train.tar``: a tar of per-class tars; and
``train/<wnid>/``). Measures, same run:

* ``hash``  — md5 + sha256 of the tar in one read (what the pinned md5 and the recorded sha256 cost);
* ``scan``  — :func:`~imagenet_suite.core.archives.index_nested_tar` (the headers of every class tar);
* ``build`` — ``build_dataset("imagenet_train")`` from the tar layout with ``num_proc`` 1 and 2 (checks
  of every image, shards fsynced and hashed, card and build_info), and from the folder layout;
* ``floor`` — the class tars read in order with ``tarfile`` and the same bytes written with pyarrow alone.

Prints each in images/s and MB/s, and the full build's cost extrapolated from those rates (hash and scan
overlap: the longer one counts; then the build). An extrapolation: the real tar's page cache and disk
(138 GB does not fit in RAM) and the real image sizes differ from these.

    uv run --frozen python benchmarks/bench_imagenet_train_build.py [--images 2000] [--classes 20]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

FULL_IMAGES = 1_281_167
FULL_BYTES = 147_897_477_120


def lay_out(root: Path, images: int, classes: int) -> tuple[Path, Path, int]:
    """The tar and folder layouts of ``images`` JPEGs over ``classes`` classes; their image bytes."""
    from bench_imagenet_val_build import make_jpegs

    from tests.fixtures import imagenet_train as fx

    train = [
        fx.TrainImage(f"{fx.classes.imagenet_wnids()[i % classes]}_{i}", image.data, i % classes)
        for i, image in enumerate(make_jpegs(images))
    ]
    return (
        fx.write_tar_layout(root / "tar", train),
        fx.write_folders_layout(root / "folders", train),
        sum(len(image.data) for image in train),
    )


def build(manual: Path, out: Path, num_proc: int) -> float:
    from bench_imagenet_val_build import ours

    return ours(manual, out, num_proc, 500, "imagenet_train")


def floor(tar_path: Path, out: Path) -> float:
    """The class tars in order with tarfile, the bytes to Parquet with pyarrow alone."""
    import tarfile

    from bench_imagenet_val_build import write_floor_shard

    start = time.perf_counter()
    rows, shard = [], 0
    with tarfile.open(tar_path, "r:") as outer:
        for class_tar in outer:
            with tarfile.open(fileobj=outer.extractfile(class_tar), mode="r:") as inner:
                for member in inner:
                    data = inner.extractfile(member).read()
                    rows.append({"id": member.name[:-5], "file_name": member.name, "image": {"bytes": data, "path": member.name}, "label": 0})  # fmt: skip
                    if len(rows) == 500:
                        write_floor_shard(rows, out, shard)
                        rows, shard = [], shard + 1
    if rows:
        write_floor_shard(rows, out, shard)
    return time.perf_counter() - start


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--classes", type=int, default=20)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from imagenet_suite.core.archives import index_nested_tar
    from imagenet_suite.files import file_digests

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        tar_manual, folders_manual, image_bytes = lay_out(root, args.images, args.classes)
        tar = tar_manual / "ILSVRC2012_img_train.tar"
        size = tar.stat().st_size
        seconds = {
            "hash (md5 + sha256)": timed(lambda: file_digests(tar, ["sha256", "md5"], progress=False)),
            "scan (nested headers)": timed(lambda: index_nested_tar(tar)),
            "floor (tarfile + pyarrow)": timed(lambda: floor(tar, (root / "floor").mkdir() or root / "floor")),
            "build, tar, 1 process": build(tar_manual, root / "b1", 1),
            "build, tar, 2 processes": build(tar_manual, root / "b2", 2),
            "build, folders, 2 processes": build(folders_manual, root / "b3", 2),
        }
    print(
        f"{args.images:,} images over {args.classes} classes, {image_bytes / 1e6:.0f} MB of JPEG ({size / 1e6:.0f} MB tar)"
    )
    print(f"{'step':30s} {'seconds':>8s} {'images/s':>9s} {'MB/s':>7s}")
    for name, value in seconds.items():
        print(f"{name:30s} {value:8.2f} {args.images / value:9.0f} {size / 1e6 / value:7.1f}")
    rate = {name: value / size for name, value in seconds.items()}  # seconds per byte of tar
    verify = max(rate["hash (md5 + sha256)"], rate["scan (nested headers)"]) * FULL_BYTES
    for name in ("build, tar, 1 process", "build, tar, 2 processes"):
        total = verify + rate[name] * FULL_BYTES
        print(
            f"extrapolated full build ({FULL_IMAGES:,} images, {FULL_BYTES / 1e9:.1f} GB), {name[12:]}: "
            f"{verify / 60:.0f} min verifying + {rate[name] * FULL_BYTES / 60:.0f} min building = {total / 60:.0f} min "
            "(page cache warm; a cold tar adds the disk time of reading it twice and writing as much)"
        )


if __name__ == "__main__":
    main()
