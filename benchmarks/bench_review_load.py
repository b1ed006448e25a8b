"""Benchmark: load a 10,000-image dataset with predictions into FiftyOne and open the candidates view,
against FiftyOne's plain ``Dataset.add_samples`` of the same samples, same run.

Builds an OOD dataset of N generated JPEG/PNG images (``review_tiny_ood`` fixture builder, 64x64 by
default) and ImageNet-1k logits for every row (10% confident), starts FiftyOne's embedded mongod in a
temporary folder, then times:

* ours, cold — ``load_for_review`` into a new dataset: read Parquet, write every image once to the
  cache, top-5/MSP/energy from the logits, samples, saved views;
* ours, warm — the same call again (idempotent re-load: nothing to add);
* candidates — ``load_saved_view("contamination_candidates")``, its count and first page (50 rows),
  as the App asks when the view is picked;
* baseline — ``fo.Dataset().add_samples`` of copies of the very same samples (files already on
  disk), then the same candidates query on it.

Prints seconds, samples/s and ratios. Usage:
    uv run --frozen --all-extras python benchmarks/bench_review_load.py [--images 10000] [--size 64]
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

PAGE = 50  # samples the App's grid asks for first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=10_000)
    parser.add_argument("--size", type=int, default=64, help="image side in pixels")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-review-"))
    os.environ["FIFTYONE_DATABASE_DIR"] = str(work / "fiftyone-db")  # FiftyOne's embedded mongod, private folder
    os.environ.setdefault("FIFTYONE_DO_NOT_TRACK", "true")

    from tests.fixtures.review_datasets import build_tiny_ood, tiny_ood_ids, write_outputs

    start = time.perf_counter()
    folder = build_tiny_ood(work / "out", options={"images": args.images, "size": args.size}, shard_size=1000)
    ids = tiny_ood_ids(args.images)
    outputs = write_outputs(
        work / "outputs.pt", ids, {i: (n % 1000, 0.6 + 0.39 * (n % 97) / 97) for n, i in enumerate(ids) if n % 10 == 0}
    )
    print(
        f"{args.images} images of {args.size}x{args.size} built in {time.perf_counter() - start:.1f} s; "
        f"parquet {sum(p.stat().st_size for p in folder.rglob('*.parquet')) / 1e6:.0f} MB"
    )

    from imagenet_suite.curation import database
    from imagenet_suite.curation.load import load_for_review

    fo = database.connect()
    fo.Dataset("warm-up").delete()  # start mongod and connect outside the timings

    cold = _timed(lambda: load_for_review(folder, outputs=outputs, name="ours", cache_dir=work / "cache"))
    warm = _timed(lambda: load_for_review(folder, outputs=outputs, name="ours", cache_dir=work / "cache"))
    ours = cold.value
    view_s, candidates = _open_candidates(ours)

    samples = [sample.copy() for sample in ours.iter_samples()]
    baseline = fo.Dataset("baseline")
    plain = _timed(lambda: baseline.add_samples(samples, progress=False))
    baseline_view_s, _ = _open_candidates_like(baseline, ours)

    n = len(ours)
    print(f"ours, cold load       {cold.seconds:8.2f} s  {n / cold.seconds:8.0f} samples/s")
    print(f"ours, warm re-load    {warm.seconds:8.2f} s")
    print(f"candidates view open  {view_s:8.2f} s  ({candidates} candidates)")
    print(f"add_samples baseline  {plain.seconds:8.2f} s  {n / plain.seconds:8.0f} samples/s")
    print(f"same view, baseline   {baseline_view_s:8.2f} s")
    total, base = cold.seconds + view_s, plain.seconds + baseline_view_s
    print(
        f"ratio ours/baseline (load + open view): {total / base:.2f}x; warm re-load / baseline: "
        f"{warm.seconds / plain.seconds:.2f}x"
    )
    for name in ("ours", "baseline"):
        fo.load_dataset(name).delete()
    _stop_database()
    shutil.rmtree(work)


def _stop_database() -> None:
    """Stop this run's embedded mongod (FiftyOne's service wrapper ends it when its stdin closes)."""
    from imagenet_suite.curation import database

    service = database._state.pop("service")
    wrapper = service.child
    service.stop()
    wrapper.wait(timeout=120)


class _Timed:
    def __init__(self, value, seconds: float):
        self.value, self.seconds = value, seconds


def _timed(function) -> _Timed:
    start = time.perf_counter()
    value = function()
    return _Timed(value, time.perf_counter() - start)


def _open_candidates(dataset) -> tuple[float, int]:
    start = time.perf_counter()
    view = dataset.load_saved_view("contamination_candidates")
    count = view.count()
    view.limit(PAGE).values("row_id")
    return time.perf_counter() - start, count


def _open_candidates_like(baseline, ours) -> tuple[float, int]:
    """The same query (stages of our saved view) on the baseline dataset."""
    import fiftyone.core.view as fov

    stages = ours.load_saved_view("contamination_candidates")._serialize()
    start = time.perf_counter()
    view = fov.DatasetView._build(baseline, stages)
    count = view.count()
    view.limit(PAGE).values("row_id")
    return time.perf_counter() - start, count


if __name__ == "__main__":
    main()
