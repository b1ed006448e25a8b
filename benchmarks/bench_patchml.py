"""Benchmark: PatchML composites per second against the decode + encode floor, same run, 2 processes.

Makes a synthetic ImageNet val of N JPEGs of ImageNet-like size (500x375, ~110 KB, 1-2 object boxes
each, written by the fixture writers in the release's tar layout), builds ``imagenet_val --config
boxes`` from it, then times, on the same composites:

* floor — what any implementation must do: decode the source JPEGs each composite needs (bytes
          already in memory) and encode the finished 512x512 composite in the output format (pixels
          read from a memory-mapped array), in 2 worker processes;
* ours  — ``build_dataset("patchml", --input <val>, num_proc=2)``: pool, sampling, reading the
          sources from the val Parquet, crop/resize/paste, encoding, Parquet, card, counts, picture.

Prints composites/s, the ratio ours/floor (goal >= 70 %) and the time one full PatchML (72,431
composites, the paper's first seed) would take at the measured rate. ``--picture PATH`` also writes
the README picture (a grid of composites from smooth synthetic sources). Usage:
    uv run --frozen python benchmarks/bench_patchml.py [--images 500] [--format png] [--picture docs/images/patchml_grid.png]
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fixtures import imagenet_layouts as fx
from tests.fixtures.patchml_sources import build_synthetic_val, make_object_images

FULL_PATCHML = 72_431  # composites of PatchML1 in the paper's Table 2
PROCESSES = 2

_floor_state: dict = {}


def _floor_init(sources: dict[str, bytes], canvases: str, image_format: str) -> None:
    _floor_state.update(sources=sources, canvases=np.load(canvases, mmap_mode="r"), format=image_format)


def _floor_chunk(task: tuple[int, list[list[str]]]) -> int:
    """Decode each composite's sources, then encode its finished pixels; returns bytes written."""
    from imagenet_suite.builders.patchml import encoding_of
    from imagenet_suite.images.codec import encode

    start, needed = task
    written = 0
    for offset, source_ids in enumerate(needed):
        for source_id in source_ids:
            Image.open(io.BytesIO(_floor_state["sources"][source_id])).convert("RGB")
        canvas = Image.fromarray(np.asarray(_floor_state["canvases"][start + offset]))
        written += len(encode(canvas, encoding_of(_floor_state["format"])))
    return written


def floor(rows: list[dict], sources: dict[str, bytes], canvases: Path, image_format: str, chunk: int = 16) -> float:
    """Seconds for the decode + encode floor over ``rows`` (provenance) in ``PROCESSES`` processes."""
    tasks = [
        (start, [[p["source_id"] for p in row["patches"]] for row in rows[start : start + chunk]])
        for start in range(0, len(rows), chunk)
    ]
    with ProcessPoolExecutor(
        PROCESSES, initializer=_floor_init, initargs=(sources, str(canvases), image_format)
    ) as pool:
        list(pool.map(_floor_chunk, tasks[:PROCESSES]))  # start the workers outside the timing
        start = time.perf_counter()
        list(pool.map(_floor_chunk, tasks))
        return time.perf_counter() - start


def build_patchml(val: Path, out: Path, image_format: str, seed: int = 0, num_proc: int = PROCESSES) -> float:
    from imagenet_suite.core.options import BuildOptions
    from imagenet_suite.core.runner import build_dataset

    start = time.perf_counter()
    build_dataset(
        "patchml",
        out,
        ["images"],
        options=BuildOptions(
            seed=seed,
            inputs=[val],
            num_proc=num_proc,
            builder_options={"image_format": image_format},
            shard_size=64,
            progress=False,
        ),
    )
    return time.perf_counter() - start


def canvases_of(folder: Path, path: Path) -> list[dict]:
    """Decode our composites into a memory-mapped ``[n, F, F, 3]`` array; return the provenance rows."""
    from imagenet_suite.dataset.folder import DatasetFolder

    table = DatasetFolder(folder).read_table("images", None)
    rows = table.drop_columns(["image"]).to_pylist()
    first = np.asarray(Image.open(io.BytesIO(table.column("image")[0].as_py()["bytes"])).convert("RGB"))
    array = np.lib.format.open_memmap(path, mode="w+", dtype=np.uint8, shape=(len(rows), *first.shape))
    for index, image in enumerate(table.column("image").to_pylist()):
        array[index] = np.asarray(Image.open(io.BytesIO(image["bytes"])).convert("RGB"))
    array.flush()
    return rows


def write_picture(work: Path, path: Path) -> None:
    """README picture: a small build from smooth synthetic sources, first composites of each k."""
    from imagenet_suite.builders.patchml import grid_of_folder
    from imagenet_suite.core.options import BuildOptions
    from imagenet_suite.core.runner import build_dataset

    images = make_object_images(40, width=(160, 320), height=(120, 260), noise=3, max_objects=2, seed=11)
    manual = fx.write_kaggle_layout(work / "picture-src", images)
    val = build_dataset(
        "imagenet_val", work / "picture", ["boxes"], options=BuildOptions(manual_dir=manual, progress=False)
    )
    folder = build_dataset(
        "patchml", work / "picture", ["images"], options=BuildOptions(seed=0, inputs=[val], progress=False)
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(grid_of_folder(folder, per_k=2))
    print(f"wrote {path} ({path.stat().st_size / 1e3:.0f} KB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, default=500, help="synthetic val images (1-2 boxes each)")
    parser.add_argument("--format", choices=("png", "jpeg"), default="png")
    parser.add_argument("--picture", type=Path, help="also write the README picture here")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    work = Path(tempfile.mkdtemp(prefix="bench-patchml-"))
    try:
        images, val = build_synthetic_val(work, args.images, ["boxes"])
        boxes = sum(len(image.boxes) for image in images)
        mean_kb = np.mean([len(image.data) for image in images]) / 1e3
        print(
            f"synthetic val: {args.images} JPEGs 500x375 ({mean_kb:.0f} KB each), {boxes} boxes; "
            f"{os.cpu_count()} CPU cores, {PROCESSES} processes; format {args.format}"
        )
        build_patchml(val, work / "warmup", args.format, seed=99)  # starts the forkserver once (one-time cost)
        t_ours = build_patchml(val, work / "ours", args.format)
        folder = next((work / "ours").iterdir())
        rows = canvases_of(folder, work / "canvases.npy")
        sources = {image.image_id: image.data for image in images}
        t_floor = floor(rows, sources, work / "canvases.npy", args.format)
        n = len(rows)
        print(f"composites: {n} (pool {boxes}, k = 2, 3, 4, 6, 9)")
        print(f"floor (decode sources + encode output): {t_floor:6.2f} s {n / t_floor:7.1f} composites/s")
        print(
            f"patchml build, --num-proc {PROCESSES}:         {t_ours:6.2f} s {n / t_ours:7.1f} composites/s "
            f"= {t_floor / t_ours:5.1%} of the floor (goal >= 70%)"
        )
        full = FULL_PATCHML / (n / t_ours)
        print(
            f"one full PatchML ({FULL_PATCHML:,} composites) at this rate: {full / 60:.0f} min "
            f"({full / 3600:.2f} h) on {PROCESSES} cores; the floor alone: {FULL_PATCHML / (n / t_floor) / 60:.0f} min"
        )
        if args.picture:
            write_picture(work, args.picture)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
