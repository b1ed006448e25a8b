"""Run one model over a suite of built datasets and summarise it: predict + score per dataset, attacks,
the seed papers' headline numbers (``imagenet-suite evaluate``).

A *run folder* holds everything one model's evaluation produced::

    RUN_DIR/run.json                  the model it belongs to: spec, weights, their sha256 and tag,
                                      parameters (a folder of another model is refused, naming what differs)
    RUN_DIR/outputs/<key>.pt          predict's outputs per dataset split (reused when present and unchanged);
                                      a multi-label set also has outputs/<key>@anzaku2024.pt, predicted resize-only
    RUN_DIR/builds/<key>.json         the dataset build outputs/<key>.pt is predicted from (written first), and
                                      the file's sha256 once it is written (checked whenever the file is reused)
    RUN_DIR/predictions/              the prediction store (unless SuiteOptions.prediction_store names another):
                                      which images each outputs file holds, by sha256, so that an image held by
                                      several splits is predicted once (:mod:`~imagenet_suite.inference.store`)
    RUN_DIR/reports/<key>.json        the score report per dataset split
    RUN_DIR/adversarial.json          the attacks' accuracies (with --adversarial N; FGSM/PGD under
                                      --attack-convention, AutoAttack with --attack; reused for the same N,
                                      seed, batch size, attack convention and ImageNet-val build, only the
                                      attacks it lacks run; adversarial.partial/ keeps the finished batches
                                      of a run that stopped)
    RUN_DIR/suite.json                {"format", "model", "weights", "weights_sha256", "weights_source",
                                       "params", "imagenet_suite", "hierarchy", "datasets": {key: report +
                                       "provenance"}, "skipped": {key: reason}, "summary": {...}}
    RUN_DIR/suite.md, *.svg           the summary as tables and charts
    RUN_DIR/report.html               the same as one self-contained page (sortable tables, inline SVG figures)
    RUN_DIR/uncertainty/              with --bootstrap B (default 1000): the bootstrap replicates of every
                                      headline number with a 95 % interval, and per dataset the per-image
                                      correctness of its headline accuracy (for the leaderboard's paired tests;
                                      :mod:`imagenet_suite.scoring.summary.intervals`)

Every report names what it was computed from (``provenance``): the dataset split scored, the split whose
outputs were scored and, for an OOD set, the ImageNet-val split of the ID outputs, each as a *build*
``{"folder", "builder", "version", "config", "split", "build_info_sha256"}`` (the sha256 of the folder's
build_info.json, which pins every file of the build).

The settings of a run are one :class:`~imagenet_suite.inference.suite_options.SuiteOptions` (its ``predict``
part a :class:`~imagenet_suite.inference.predict.PredictOptions`), checked when made; the run folder and the
files it names are checked by :func:`~imagenet_suite.inference.suite_options.check_arguments` before any model is
loaded, and an existing run folder before any work
(:func:`~imagenet_suite.inference.run_folder.check_run_folder`: run.json must name this model — for a user
model, the same code too —, and an outputs file is reused only when its record names the same build as the
folder given now and the sha256 recorded when it was written is still the file's).

LCA distances (``SuiteOptions.hierarchy``, ``evaluate --hierarchy DIR``) come from the ImageNet-1k WordNet
tree shipped with the package, or from a built ``wordnet_hierarchy`` / ``kmeans_hierarchy`` folder over the
1000 ImageNet-1k classes (checked before any model is loaded). suite.json's ``hierarchy`` and each report
with LCA rows (``meta["hierarchy"]``) name it
(:func:`~imagenet_suite.scoring.metrics.lca_distances.hierarchy_record`: the build, its seed, options and
sources, ``paper_distance``, the distance LCA-on-the-Line (Shi et al. 2024) reports with that kind of
hierarchy, which is listed first, and ``paper_distances``, the OOD sets whose ImageNet LCA the paper takes in
another). Reports are always scored afresh from the stored outputs, so a run
folder evaluated again with another hierarchy has its LCA recomputed under it (outputs reused), never a mix.

``<key>`` names a dataset split under a protocol, ``<dataset>[/<config>][/<split>][@<protocol>]``
(:mod:`~imagenet_suite.inference.suite_targets`); in file names ``/`` becomes ``__``.

A zero-shot (``open_clip:``) model is also scored under each paper's convention
(:mod:`~imagenet_suite.inference.zero_shot_papers`): ObjectNet predicted again with LCA-on-the-Line's 113-way
head over ObjectNet's class names (``objectnet@objectnet113``, its own outputs file), and, when its outputs are
logits (``--probabilities softmax``), ImageNet val and the ``shape_bias_sets`` configs scored again on Beyond
Accuracy's wrapper output of those logits (report ``<key>@hesse2025_probabilities``, no outputs file of its
own), which QUBA reads (:func:`~imagenet_suite.scoring.summary.suite.suite_summary`).

Evaluation protocols (``SuiteOptions.protocols``, ``evaluate --protocol``;
:mod:`imagenet_suite.scoring.evaluation.preprocessing`): under ``hesse2025`` every split is predicted
with the model's own preprocessing (resize + centre crop), as Hesse et al. 2025 (QUBA) and the
accuracy tables; under ``anzaku2024`` every multi-label set (ReaL, PatchML: the configs ASMA applies
to) is predicted again resized to the model's input size without a centre crop (Anzaku et al. 2024,
App. B) into ``outputs/<key>@anzaku2024.pt`` and reported as ``<key>@anzaku2024``; the ReaL labels
config (no images) reads ``outputs/imagenet_val@anzaku2024.pt`` then. A PatchML build (its protocol
says no centre crop) is predicted once, resize-only, under its own key. Every report names its
protocol and transform in ``meta["preprocessing"]``. Both protocols by default. Every config of every folder is scored with every metric family
that applies (the same choice as ``imagenet-suite score``); a config without images (ReaL labels, NINCO
review logs) is scored with the ImageNet-val outputs when its rows are ImageNet-val ids, and a config
no family applies to is listed under ``skipped`` with the reason. The ImageNet-val outputs are the ID
side of every OOD set. Summary: :func:`imagenet_suite.scoring.summary.suite.suite_summary`.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import __version__
from ..core.executors import RayExecutor
from ..errors import ConfigError, OutputsError, param
from ..files import atomic_write_bytes, sha256_file
from ..scoring.evaluation.context import RESAMPLED
from ..scoring.evaluation.options import LcaOptions, OodOptions, ScoreOptions
from ..scoring.evaluation.preprocessing import ANZAKU2024, HESSE2025
from ..scoring.evaluation.report import applicable_metrics, score
from ..scoring.metrics.lca_distances import hierarchy_record
from ..scoring.metrics.ood_detector_stats import DetectorStats, Embeddings
from ..scoring.outputs import ModelOutputs
from ..scoring.presentation.html_run import write_run_report
from ..scoring.presentation.suite_markdown import PNG_CHART_FILES, run_charts, write_suite_markdown
from ..scoring.summary.intervals import (
    Bootstrap,
    ReportReplicates,
    bootstrap_summary,
    resample_report,
    write_uncertainty,
)
from ..scoring.summary.json_schema import read_json
from ..scoring.summary.quba import attack_convention_of
from ..scoring.summary.reports import ID_DATASET, WRAPPER_PROBABILITIES_KEY
from ..scoring.summary.suite import suite_summary
from ..scoring.summary.suite_json import SUITE_FORMAT, SUITE_JSON, suite_file_bytes
from ..scoring.threads import chunk_parallel_cpu
from .adversarial_record import adversarial_record, attack_recorded
from .autoattack import AttackSpec
from .benchmark import RunInputs, run_benchmark
from .models import LoadedModel, weights_digest
from .predict import PredictJob, PredictOptions, predict, protocol_transform
from .run_folder import (
    ADVERSARIAL_JSON,
    ADVERSARIAL_PARTIAL,
    PREDICTIONS,
    check_run_folder,
    claim_run_folder,
    json_bytes,
    reusable_outputs,
    run_manifest,
    write_outputs_record,
)
from .store import PredictionStore
from .suite_options import SuiteOptions, check_arguments, check_benchmark, lca_options
from .suite_targets import SuiteTarget, dataset_build, dataset_targets, protocol_targets, same_build
from .zero_shot import ZeroShotClassifier, zero_shot_detector_stats
from .zero_shot_papers import head_model, paper_targets, rescored_on_wrapper_output, wrapper_output


@dataclass
class OpenedRun:
    """A model's run folder, checked and claimed (:func:`open_run`): what :func:`run_suite` scores."""

    run: _Run
    targets: list[SuiteTarget]
    id_targets: dict[str, SuiteTarget]  # the ImageNet-val split per protocol (empty without one)
    manifest: dict[str, Any]  # run.json

    def missing_outputs(self) -> list[SuiteTarget]:
        """The splits whose outputs the reports need and the run folder lacks (each predicted alone by
        ``run.outputs(target)`` here, or as one Ray task)."""
        needed = (_outputs_target(target, self.id_targets) for target in self.targets)
        unique = {target.key: target for target in needed if target is not None}
        return [target for target in unique.values() if not reusable_outputs(self.run.outputs_path(target))]


def open_run(
    loaded: LoadedModel, datasets: Sequence[str | Path], run_dir: str | Path, options: SuiteOptions
) -> OpenedRun:
    """Check the arguments (:func:`~imagenet_suite.inference.suite_options.check_arguments`) and the run folder
    (:func:`~imagenet_suite.inference.run_folder.check_run_folder`) of :func:`run_suite` and claim the folder for
    ``loaded`` (run.json); nothing is predicted or scored."""
    check_arguments(run_dir, options)
    run_dir = Path(run_dir)
    base = dataset_targets(datasets)
    targets = paper_targets(loaded, protocol_targets(base, options.protocols))  # a zero-shot model's other heads
    id_target = next((t for t in base if t.folder.name == ID_DATASET and t.has_images), None)
    id_targets = {HESSE2025: id_target, ANZAKU2024: id_target.under(ANZAKU2024)} if id_target is not None else {}
    manifest = run_manifest(loaded)
    check_run_folder(run_dir, manifest, [*targets, *id_targets.values()])
    device = str(options.predict.device)
    stats = DetectorStats.load(options.detector_stats, device) if options.detector_stats is not None else None
    if stats is not None:
        stats.refuse_other_model(loaded.spec, weights_digest(loaded), options.detector_stats, loaded.code_sha256)
    if stats is None and isinstance(loaded.model, ZeroShotClassifier):  # NINCO's cosine and MCM: text embeddings
        stats = zero_shot_detector_stats(loaded.model).to(device)
    run = _Run(loaded, run_dir, options.predict, stats, lca_options(options.hierarchy))
    if options.dedup:
        run.store = (
            PredictionStore(options.prediction_store)
            if options.prediction_store is not None
            else PredictionStore(run_dir / PREDICTIONS, "run_dir")
        )
    claim_run_folder(run_dir, manifest)
    (run_dir / "reports").mkdir(exist_ok=True)
    return OpenedRun(run, targets, id_targets, manifest)


def run_suite(
    loaded: LoadedModel,
    datasets: Sequence[str | Path],
    run_dir: str | Path,
    options: SuiteOptions | None = None,
) -> dict[str, Any]:
    """Predict, score and summarise ``loaded`` on every split of ``datasets``; write the run folder.

    Returns suite.json's content. ``options``: see
    :class:`~imagenet_suite.inference.suite_options.SuiteOptions` (default: every default, on the CPU, no
    attacks). With ``executor="ray"`` the outputs still missing are predicted as one Ray task per dataset split
    (:func:`predict_on_ray`).

    Example:
        >>> from imagenet_suite.inference import PredictOptions, load_model
        >>> from imagenet_suite.inference.evaluate import run_suite
        >>> from imagenet_suite.inference.suite_options import SuiteOptions
        >>> suite = run_suite(load_model("timm:resnet50"),                                 # doctest: +SKIP
        ...                   ["datasets/imagenet_val-1.0.0", "datasets/imagenet_r-1.0.0"], "runs/resnet50",
        ...                   SuiteOptions(predict=PredictOptions(device="cuda"), adversarial=1000))
        >>> suite["summary"]["quba"]["score"]                                               # doctest: +SKIP
    """
    options = SuiteOptions() if options is None else options
    opened = open_run(loaded, datasets, run_dir, options)
    run, targets, id_targets, manifest = opened.run, opened.targets, opened.id_targets, opened.manifest
    run_dir, id_target = run.run_dir, id_targets.get(HESSE2025)
    benchmark = check_benchmark(targets, options.benchmark)
    if options.executor == "ray":  # the splits of a zero-shot model's other heads are predicted here
        todo = [target for target in opened.missing_outputs() if not target.head]
        predict_on_ray(run, todo, options.num_proc, options.ray_address, options.gpus_per_task)
    reports: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    bootstrap = Bootstrap(options.bootstrap, options.bootstrap_seed) if options.bootstrap else None
    replicated: dict[str, ReportReplicates] = {}
    for target in targets:
        for wrapper in (False, True) if rescored_on_wrapper_output(loaded, target) else (False,):
            key = target.key + (WRAPPER_PROBABILITIES_KEY if wrapper else "")
            report, reason = run.score_target(target, id_targets, wrapper)
            if report is None:
                skipped[key] = reason
                continue
            reports[key] = report
            atomic_write_bytes(run_dir / "reports" / f"{key.replace('/', '__')}.json", json_bytes(report))
            if bootstrap is not None:
                replicated[key] = run.resample(report, bootstrap)
    attacks = None
    if options.adversarial:
        if id_target is None:
            raise ConfigError(
                f"{param('adversarial')} attacks ImageNet-val images: add a built imagenet_val folder to "
                f"{param('datasets')}"
            )
        attacks = run.adversarial(
            id_target, options.adversarial, options.adversarial_seed, options.attacks, options.attack_convention
        )
    params = manifest["params"]
    summary = suite_summary(
        reports,
        params_millions=params / 1e6,
        adversarial=attacks,
        allow_partial=options.allow_partial,
        zero_shot=loaded.zero_shot,
    )
    summary["benchmarks"] = None
    if benchmark is not None:
        inputs = RunInputs(run.outputs, dataset_build, run.device, bool(run.options.features), run.stats)
        summary["benchmarks"] = {benchmark.name: run_benchmark(inputs, benchmark, targets, id_target)}
    summary["uncertainty"] = None
    if bootstrap is not None:
        record, table = bootstrap_summary(
            reports,
            replicated,
            summary,
            bootstrap,
            params_millions=params / 1e6,
            adversarial=attacks,
            allow_partial=options.allow_partial,
            zero_shot=loaded.zero_shot,
        )
        summary["uncertainty"] = write_uncertainty(run_dir, record, table, replicated, summary["accuracies"])
    suite = {
        "format": SUITE_FORMAT,
        "model": loaded.spec,
        "weights": loaded.weights,
        "weights_sha256": loaded.weights_sha256,
        "weights_source": manifest["weights_source"],
        "params": params,
        "imagenet_suite": __version__,
        "hierarchy": hierarchy_record(options.hierarchy),
        **({"zero_shot": dict(loaded.zero_shot)} if loaded.zero_shot is not None else {}),
        "datasets": reports,
        "skipped": skipped,
        "summary": summary,
    }
    atomic_write_bytes(run_dir / SUITE_JSON, suite_file_bytes(suite))
    charts = run_charts(suite)  # drawn once, as SVG: the files beside suite.md and report.html's figures
    write_suite_markdown(suite, run_dir, charts)
    for stale in PNG_CHART_FILES:
        (run_dir / stale).unlink(missing_ok=True)
    write_run_report(suite, run_dir, charts)
    return suite


def predict_on_ray(
    run: _Run, todo: list[SuiteTarget], num_cpus: int, address: str | None, gpus_per_task: float = 1.0
) -> None:
    """Predict ``todo`` as Ray tasks, one per dataset split, and write their outputs into the run folder.

    The model goes to the object store once and is deserialised once per worker process; each task runs
    :func:`~imagenet_suite.inference.predict.predict` in a scratch folder on its worker, with
    ``gpus_per_task`` GPUs when the cluster has GPUs and ``device`` is CUDA, else this process's intra-op
    thread count of CPUs and threads (outputs byte-identical to a local run's on the same CPU type), and
    returns the outputs file's bytes (:class:`~imagenet_suite.inference.ray_predict.RayPredictions`). The
    dataset folders must be visible on every node (checked first). A worker that dies is retried; an error
    in the data is not: the other tasks are cancelled and it is raised here.

    With a prediction store (``run.store``) each distinct image the store lacks is predicted by one task
    (:func:`ray_split_tasks`), whose batches come back as chunks kept in the store; the outputs files are
    then written from the store by :func:`run_suite`.
    """
    if not todo:
        return
    from .ray_predict import RayPredictions

    with RayExecutor(num_cpus=num_cpus, address=address) as cluster:
        cluster.check_visible(sorted({target.folder.path.resolve() for target in todo}))
        tasks = RayPredictions(cluster.ray, run.device, gpus_per_task)
        for target in todo:
            run.record_outputs(target)
        tasks.submit(run.loaded, [((t, task), task) for t, task in ray_split_tasks(run, todo)], owner=run.run_dir)
        try:
            while tasks.pending:
                finished = tasks.next_finished()
                if finished.error is not None:
                    raise finished.error
                write_outputs(run, *finished.item, finished.data)
        finally:
            tasks.cancel()


def ray_split_tasks(run: _Run, todo: Sequence[SuiteTarget]) -> list[tuple[SuiteTarget, Any]]:
    """The Ray tasks (:class:`~imagenet_suite.inference.ray_predict.SplitTask`) predicting ``todo``: without a
    prediction store, one per split, its whole outputs file; with one, one per split holding images the store
    lacks, predicting only those rows (each distinct image once: :meth:`PredictionStore.plan`)."""
    from .ray_predict import SplitTask

    def task(target: SuiteTarget, positions: tuple[int, ...] | None = None) -> SplitTask:
        options = run.predict_options(target)
        return SplitTask(str(target.folder.path.resolve()), target.config, target.split, options, positions)

    if run.store is None:
        return [(target, task(target)) for target in todo]
    jobs = [PredictJob.of(t.folder, run.loaded, run.predict_options(t), config=t.config, split=t.split) for t in todo]
    return [(t, task(t, tuple(rows))) for t, rows in zip(todo, run.store.plan(jobs)) if rows]


def write_outputs(run: _Run, target: SuiteTarget, task: Any, data: bytes | list[bytes]) -> None:
    """Keep what the Ray ``task`` (:func:`ray_split_tasks`) predicted for ``target``: its rows' chunks in the
    run's prediction store, or the bytes of its outputs file in the run folder."""
    if task.positions is not None:
        job = PredictJob.of(
            target.folder, run.loaded, run.predict_options(target), config=target.config, split=target.split
        )
        run.store.add_chunks(job, list(task.positions), data)
    else:
        path = run.outputs_path(target)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_outputs_record(
            path, target, hashlib.sha256(data).hexdigest()
        )  # the file is absent or untrusted until then
        atomic_write_bytes(path, data)
    if run.options.progress:
        print(f"predicted {target.key} on Ray")


def _outputs_target(target: SuiteTarget, id_targets: dict[str, SuiteTarget]) -> SuiteTarget | None:
    """The split whose outputs ``target`` is scored with: itself, or for a config without images the
    ImageNet-val split under the same protocol (None without one)."""
    return target if target.has_images else id_targets.get(target.protocol)


@dataclass
class _Run:
    """The settings of one run and the outputs it has computed (ImageNet val's, for the OOD sets)."""

    loaded: LoadedModel
    run_dir: Path
    options: PredictOptions
    stats: DetectorStats | None = None
    lca: LcaOptions = field(default_factory=LcaOptions)
    id_outputs: ModelOutputs | None = None  # loaded once, for every OOD set
    estimates: dict[Any, Any] = field(default_factory=dict)  # the last report's artifacts[RESAMPLED]
    store: PredictionStore | None = None  # with SuiteOptions.dedup
    heads: dict[str, LoadedModel] = field(default_factory=dict)  # a zero-shot model's other heads, by target key

    @property
    def device(self) -> str:
        return str(self.options.device)

    def outputs_path(self, target: SuiteTarget) -> Path:
        return self.run_dir / "outputs" / f"{target.file_stem}.pt"

    def predict_options(self, target: SuiteTarget) -> PredictOptions:
        """The run's PredictOptions for ``target``: resize-only under ``anzaku2024``."""
        return replace(self.options, resize_only=target.resize_only) if target.resize_only else self.options

    def preprocessing(self, target: SuiteTarget) -> dict[str, Any]:
        """``meta["preprocessing"]`` of the reports on ``target``'s outputs: the protocol, whether the
        images were centre-cropped, and the transform (one line)."""
        options = self.predict_options(target)
        if options.transform is not None:
            transform, crop = f"override {options.transform_name or options.transform!r}", None
        else:
            protocol = target.folder.protocol(target.config)
            transform = protocol_transform(self.loaded, protocol, None, options.resize_only)
            transform, crop = " ".join(repr(transform).split()), not (options.resize_only or target.build_says_no_crop)
        return {"protocol": target.protocol, "centre_crop": crop, "transform": transform}

    def record_outputs(self, target: SuiteTarget) -> None:
        """Write ``builds/<key>.json``, the build the outputs are about to be predicted from (and under which
        evaluation protocol)."""
        write_outputs_record(self.outputs_path(target), target)

    def outputs(self, target: SuiteTarget) -> Path:
        """The target's outputs file, predicted unless already in the run folder with its sha256 recorded (the
        record and the file's sha256 were checked by
        :func:`~imagenet_suite.inference.run_folder.check_run_folder`); the sha256 of a file predicted here is
        recorded once it is written."""
        path = self.outputs_path(target)
        if not reusable_outputs(path):
            if self.options.progress:
                print(f"predict {target.key}")
            self.record_outputs(target)
            options = self.predict_options(target)
            predictor = self.store.predict if self.store is not None else predict
            predictor(
                target.folder, self.model(target), path, config=target.config, split=target.split, options=options
            )
            write_outputs_record(path, target, sha256_file(path))
        return path

    def model(self, target: SuiteTarget) -> LoadedModel:
        """The model that predicts ``target``: the run's, or its zero-shot model with another head
        (:func:`~imagenet_suite.inference.zero_shot_papers.head_model`, made once)."""
        if not target.head:
            return self.loaded
        if target.key not in self.heads:
            self.heads[target.key] = head_model(self.loaded, target)
        return self.heads[target.key]

    def score_target(
        self, target: SuiteTarget, id_targets: dict[str, SuiteTarget], wrapper: bool = False
    ) -> tuple[dict | None, str]:
        """``(report dict, "")`` or ``(None, why it was skipped)``. ``id_targets``: the ImageNet-val split
        per protocol (empty without one); ``wrapper``: scored on Beyond Accuracy's wrapper output of a zero-shot
        model's logits (:func:`~imagenet_suite.inference.zero_shot_papers.wrapper_output`)."""
        folder, config = target.folder, target.config
        id_target = id_targets.get(HESSE2025)
        applicable = applicable_metrics(folder.config_info(config)["features"], folder.protocol(config))
        if not applicable:
            return None, f"no metric family applies to config {config!r} (columns {folder.column_names(config)})"
        try:
            head = self.model(target).zero_shot if target.head else None
        except ConfigError as err:
            return None, f"not predicted with the {target.head} head: {err}"
        if folder.protocol(config).get("ood") and id_target is None:
            return None, "an OOD set is scored against the ImageNet-val outputs: add a built imagenet_val folder"
        outputs_target = _outputs_target(target, id_targets)
        if outputs_target is None:
            return None, "no images to run the model on, and no imagenet_val folder whose outputs it could join"
        path = self.outputs(outputs_target)
        outputs = ModelOutputs.load(path, device=self.device)
        if wrapper:
            outputs = replace(outputs, values=wrapper_output(outputs.values.float(), self.loaded.zero_shot))
        options = ScoreOptions(lca=self.lca, ood=self.ood_options(target, id_target, path))
        try:
            report = score(folder, outputs, config, target.split, options=options)
        except OutputsError as err:
            if target.has_images:
                raise
            return None, f"its rows are not the imagenet_val rows predicted ({err})"
        uses_id = bool(folder.protocol(config).get("ood")) and id_target is not None and target != id_target
        provenance = {
            "dataset": dataset_build(target),
            "outputs": dataset_build(outputs_target),
            "id_outputs": dataset_build(id_target) if uses_id else None,
        }
        found = report.to_dict()
        found["meta"] = {**found["meta"], "preprocessing": self.preprocessing(outputs_target)}
        if head is not None:
            found["meta"]["zero_shot_head"] = head["head"]
        if wrapper:
            found["meta"]["probabilities"] = "Beyond Accuracy's wrapper output of the stored logits, softmaxed again"
        self.estimates = report.artifacts.get(RESAMPLED, {})
        return {**found, "provenance": provenance}, ""

    def resample(self, report: dict[str, Any], bootstrap: Bootstrap) -> ReportReplicates:
        """The last scored report's rows on the bootstrap resamples (then its per-image data is let go)."""
        estimates, self.estimates = self.estimates, {}
        with chunk_parallel_cpu() if self.device.startswith("cpu") else contextlib.nullcontext():
            return resample_report(report, estimates, bootstrap)

    def ood_options(self, target: SuiteTarget, id_target: SuiteTarget | None, ood_path: Path) -> OodOptions:
        """ID outputs (and features) of ImageNet val for the OOD families; empty options without them."""
        if id_target is None or target == id_target:
            return OodOptions()
        id_path = self.outputs(id_target)
        if self.id_outputs is None:
            self.id_outputs = ModelOutputs.load(id_path, device=self.device)
        id_outputs = self.id_outputs
        if not self.options.features:
            return OodOptions(id_outputs=id_outputs, stats=self.stats)
        return OodOptions(
            id_outputs=id_outputs,
            stats=self.stats,
            id_features=Embeddings.load(id_path, self.device),
            ood_features=Embeddings.load(ood_path, self.device),
        )

    def adversarial(
        self, id_target: SuiteTarget, rows: int, seed: int, attacks: Sequence[AttackSpec], convention: str
    ) -> dict[str, Any]:
        """The attacks' accuracies on ``rows`` seeded, class-stratified val images under the attack
        ``convention``: adversarial.json, where the attacks it lacks are added (all of them when it was
        measured on another subset, build or convention)."""
        from .adversarial import AttackOptions, adversarial_accuracy

        path = self.run_dir / ADVERSARIAL_JSON
        batch_size = min(self.options.batch_size, 64)  # the random starts are seeded per batch: part of the key
        key = {"requested_rows": rows, "seed": seed, "batch_size": batch_size, "attack_convention": convention}
        build = dataset_build(id_target)
        recorded = None
        if path.is_file():  # checked by check_run_folder
            found = read_json(path, ADVERSARIAL_JSON)
            found = {**found, "attack_convention": attack_convention_of(found)}  # none recorded: pixel space
            same = all(found.get(name) == value for name, value in key.items())
            if same and found.get("dataset") is not None and same_build(found["dataset"], build):
                recorded = found

        def options(specs: Sequence[AttackSpec]) -> AttackOptions:
            return AttackOptions(
                n=rows,
                seed=seed,
                batch_size=batch_size,
                attacks=tuple(specs),
                attack_convention=convention,
                device=self.options.device,
                resume=self.run_dir / ADVERSARIAL_PARTIAL,
                progress=self.options.progress,
            )

        todo = [spec for spec in attacks if not attack_recorded(recorded, spec, options([spec]))]
        if not todo:
            return recorded
        result = adversarial_accuracy(
            self.loaded, id_target.folder, options(todo), config=id_target.config, split=id_target.split
        )
        if recorded is not None and recorded["clean_accuracy"] != result.clean.value:
            # measured on other clean predictions (another device, say): its attacks do not combine with these
            recorded, todo = None, list(attacks)
            result = adversarial_accuracy(
                self.loaded, id_target.folder, options(todo), config=id_target.config, split=id_target.split
            )
        record = adversarial_record(recorded, result, key, build)
        atomic_write_bytes(path, json_bytes(record))
        return record


__all__ = ["OpenedRun", "open_run", "predict_on_ray", "ray_split_tasks", "run_suite", "write_outputs"]
