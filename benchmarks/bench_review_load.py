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

Then, with every review signal (``--references`` ImageNet reference images, 0 to skip): a toy linear
model's logits, ``--dim``-d features and fitted detector statistics for the same rows, and a built
synthetic ``imagenet_val`` as the look-alike reference, it times

* ours, signals — ``load_for_review`` with ``id_outputs``/``features``/``id_features``/``detector_stats``/
  ``reference`` into a new dataset: all 11 detector scores computed by the scorer, unit-test
  verdicts, the WordNet pre-check, the reference images, the look-alike fields, the Brain similarity
  index and the PCA embeddings plot;
* baseline, the plain FiftyOne way — ``add_samples`` of copies of the same samples without the signal
  fields, then ``set_values`` of each signal field (values handed over precomputed: the baseline does
  not compute a score), then ``compute_similarity`` and ``compute_visualization`` on the same embeddings.

Prints seconds, samples/s and ratios. Usage:
    uv run --frozen --all-extras python benchmarks/bench_review_load.py [--images 10000] [--size 64]
        [--references 1000] [--dim 256]
"""

from __future__ import annotations

import argparse
import gc
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
    parser.add_argument("--references", type=int, default=1000, help="ImageNet reference images (0: no signals run)")
    parser.add_argument("--dim", type=int, default=256, help="feature dimension of the signals run")
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

    from imagenet_suite.review import database
    from imagenet_suite.review.load import LoadOptions, load_for_review

    fo = database.connect()
    fo.Dataset("warm-up").delete()  # start mongod and connect outside the timings

    cold = _timed(
        lambda: load_for_review(folder, options=LoadOptions(outputs=outputs, name="ours", cache_dir=work / "cache"))
    )
    warm = _timed(
        lambda: load_for_review(folder, options=LoadOptions(outputs=outputs, name="ours", cache_dir=work / "cache"))
    )
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
    if args.references:
        _bench_signals(fo, work, folder, ids, args)
    _stop_database()
    shutil.rmtree(work)


def _stop_database() -> None:
    """Stop this run's embedded mongod (FiftyOne's service wrapper ends it when its stdin closes)."""
    from imagenet_suite.review import database

    service = database._state.pop("service")
    wrapper = service.child
    service.stop()
    wrapper.wait(timeout=120)


def _bench_signals(fo, work: Path, folder: Path, ids: list[str], args) -> None:
    import fiftyone.brain as fob
    from fiftyone import ViewField as F

    from imagenet_suite.review.load import LoadOptions, load_for_review
    from imagenet_suite.review.lookalikes import BRAIN_KEY, PLOT_KEY
    from tests.fixtures.patchml_sources import build_synthetic_val
    from tests.fixtures.review_datasets import signal_arguments, write_signal_inputs

    start = time.perf_counter()
    _, val = build_synthetic_val(work / "reference", args.references, ["default"])
    from imagenet_suite.dataset.folder import DatasetFolder

    reference_ids = DatasetFolder(val).read_table(None, None, ["id"]).column("id").to_pylist()
    (work / "signals").mkdir()
    inputs = write_signal_inputs(work / "signals", ids, reference_ids, extra_id_rows=2000, dim=args.dim)
    print(
        f"signals: {len(reference_ids)} reference images built, {args.dim}-d features, "
        f"{len(inputs['id_ids'])} ID rows, in {time.perf_counter() - start:.1f} s"
    )
    ours = _timed(
        lambda: load_for_review(
            folder,
            options=LoadOptions(
                **signal_arguments(inputs), reference=val, name="ours-signals", cache_dir=work / "cache"
            ),
        )
    )
    dataset = ours.value
    n = len(dataset)
    detectors = dataset.info["imagenet_suite"]["detectors"]["ran"]
    signal_fields = [
        f
        for f in dataset.get_field_schema()
        if f.startswith(("ood_", "precheck_", "lookalike")) or f in ("is_reference",)
    ]
    print(
        f"ours, signals load    {ours.seconds:8.2f} s  {n / ours.seconds:8.0f} samples/s  "
        f"({n} samples incl. {len(reference_ids)} references; {len(detectors)} detectors computed, "
        f"{len(signal_fields)} signal fields, similarity index + PCA plot)"
    )
    order = dataset.values("row_id")
    values = {f: dataset.values(f) for f in signal_fields}
    embeddings = dict(zip(dataset.values("row_id"), dataset.load_brain_results(BRAIN_KEY).embeddings))
    samples = [s.copy(omit_fields=signal_fields) for s in dataset.iter_samples()]
    baseline = fo.Dataset("baseline-signals")

    parts: dict[str, float] = {}

    def plain():
        tick = time.perf_counter()
        baseline.add_samples(samples, progress=False)
        samples.clear()  # else every set_values reloads all 10,000 in-memory samples
        gc.collect()
        parts["add_samples"], tick = time.perf_counter() - tick, time.perf_counter()
        by_row = dict(zip(baseline.values("row_id"), baseline.values("id")))
        sample_ids = [by_row[r] for r in order]
        for name in signal_fields:  # FiftyOne's bulk path: {sample id: value}
            tock = time.perf_counter()
            baseline.set_values(name, dict(zip(sample_ids, values[name])), key_field="id")
            parts[f"field {name}"] = time.perf_counter() - tock
        parts["set_values"], tick = time.perf_counter() - tick, time.perf_counter()
        indexed = baseline.select([by_row[r] for r in embeddings], ordered=True)
        import numpy as np

        array = np.stack(list(embeddings.values()))
        fob.compute_similarity(indexed, embeddings=array, backend="sklearn", metric="cosine", brain_key=BRAIN_KEY)
        fob.compute_visualization(indexed, embeddings=array, method="pca", brain_key=PLOT_KEY, seed=0)
        parts["brain"] = time.perf_counter() - tick

    base = _timed(plain)
    assert sorted(baseline.values("ood_msp", missing_value=-1.0)) == sorted(
        dataset.values("ood_msp", missing_value=-1.0)
    )
    print(
        f"plain FiftyOne         {base.seconds:8.2f} s  {n / base.seconds:8.0f} samples/s  "
        f"(add_samples {parts['add_samples']:.2f} s + set_values per field {parts['set_values']:.2f} s + "
        f"compute_similarity/visualization {parts['brain']:.2f} s; scores given, not computed)"
    )
    per_field = [v for k, v in parts.items() if k.startswith("field ")]
    print(f"plain set_values: {len(per_field)} fields, {min(per_field):.2f}-{max(per_field):.2f} s each")
    print(f"ratio ours/plain (signals): {ours.seconds / base.seconds:.2f}x")
    print(f"reference samples: {len(dataset.match(F('is_reference') == True))}")  # noqa: E712
    for name in ("ours-signals", "baseline-signals"):
        fo.load_dataset(name).delete()


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
