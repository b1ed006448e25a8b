"""Run one model over a suite of built datasets and summarise it: predict + score per dataset, attacks,
the seed papers' headline numbers (``imagenet-suite evaluate``).

A *run folder* holds everything one model's evaluation produced::

    RUN_DIR/run.json                  the model it belongs to: spec, weights, their sha256 and tag,
                                      parameters (a folder of another model is refused, naming what differs)
    RUN_DIR/outputs/<key>.pt          predict's outputs per dataset split (reused when present); a multi-label
                                      set also has outputs/<key>@anzaku2024.pt, predicted resize-only
    RUN_DIR/builds/<key>.json         the dataset build outputs/<key>.pt is predicted from (written first)
    RUN_DIR/predictions/              the prediction store (unless SuiteOptions.prediction_store names another):
                                      which images each outputs file holds, by sha256, so that an image held by
                                      several splits is predicted once (:mod:`~imagenet_suite.inference.store`)
    RUN_DIR/reports/<key>.json        the score report per dataset split
    RUN_DIR/adversarial.json          the attacks' accuracies (with --adversarial N; FGSM/PGD, AutoAttack with
                                      --attack; reused for the same N, seed, batch size and ImageNet-val
                                      build, only the attacks it lacks run; adversarial.partial/ keeps the
                                      finished batches of a run that stopped)
    RUN_DIR/suite.json                {"format", "model", "weights", "weights_sha256", "weights_source",
                                       "params", "imagenet_suite", "hierarchy", "datasets": {key: report +
                                       "provenance"}, "skipped": {key: reason}, "summary": {...}}
    RUN_DIR/suite.md, *.png           the summary as tables and plots
    RUN_DIR/uncertainty/              with --bootstrap B (default 1000): the bootstrap replicates of every
                                      headline number with a 95 % interval, and per dataset the per-image
                                      correctness of its headline accuracy (for the leaderboard's paired tests;
                                      :mod:`imagenet_suite.scoring.summary.intervals`)

Every report names what it was computed from (``provenance``): the dataset split scored, the split whose
outputs were scored and, for an OOD set, the ImageNet-val split of the ID outputs, each as a *build*
``{"folder", "builder", "version", "config", "split", "build_info_sha256"}`` (the sha256 of the folder's
build_info.json, which pins every file of the build).

The settings of a run are one :class:`SuiteOptions` (its ``predict`` part a
:class:`~imagenet_suite.inference.predict.PredictOptions`), checked when made; the run folder and the
files it names are checked by :func:`check_arguments` before any model is loaded. A run folder is
checked before any work (:func:`check_run_folder`): run.json must name this model (spec,
weights, parameter count), an existing suite.json must be of a format this version reads and well
formed, and an outputs file is reused only when its record names the same build as the folder given
now. Outputs predicted from another build are refused (one line naming both builds), not predicted
again: the run folder is the evidence behind its suite.json, so it is not silently rewritten for other
data (a wrong ``datasets`` folder is the usual cause); delete the file, or choose another ``run_dir``.
An outputs file without a record (a run folder of an older imagenet-suite) is refused alike.

LCA distances (``SuiteOptions.hierarchy``, ``evaluate --hierarchy DIR``) come from the ImageNet-1k WordNet
tree shipped with the package, or from a built ``wordnet_hierarchy`` / ``kmeans_hierarchy`` folder over the
1000 ImageNet-1k classes (checked before any model is loaded). suite.json's ``hierarchy`` and each report
with LCA rows (``meta["hierarchy"]``) name it
(:func:`~imagenet_suite.scoring.metrics.lca_distances.hierarchy_record`: the build, its seed, options and
sources, and ``paper_distance``, the distance LCA-on-the-Line (Shi et al. 2024) reports with that kind of
hierarchy, which is listed first). Reports are always scored afresh from the stored outputs, so a run
folder evaluated again with another hierarchy has its LCA recomputed under it (outputs reused), never a mix.

``<key>`` is ``<dataset>[/<config>][/<split>]`` (config and split only when the folder has several; the
folder's directory name instead of the dataset when two folders hold the same dataset), plus
``@<protocol>`` for a split evaluated under another protocol than ``hesse2025``; in file names ``/``
becomes ``__``.

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
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import __version__
from ..core.executors import RayExecutor, check_executor, make_executor
from ..dataset.folder import DatasetFolder
from ..errors import ConfigError, DatasetFolderError, OutputsError, RunFolderError, param
from ..files import atomic_write_bytes
from ..scoring.benchmarks import BENCHMARKS, Benchmark
from ..scoring.evaluation.context import RESAMPLED
from ..scoring.evaluation.options import LCA_DISTANCES, LcaOptions, OodOptions, ScoreOptions
from ..scoring.evaluation.preprocessing import (
    ANZAKU2024,
    DEFAULT_PROTOCOLS,
    HESSE2025,
    check_protocols,
    is_multilabel_set,
    no_center_crop,
    protocol_key,
)
from ..scoring.evaluation.report import applicable_metrics, score
from ..scoring.metrics.lca_distances import hierarchy_record
from ..scoring.metrics.ood_detector_stats import DetectorStats, Embeddings
from ..scoring.outputs import ModelOutputs
from ..scoring.presentation.suite_markdown import write_suite_markdown
from ..scoring.summary.intervals import (
    Bootstrap,
    ReportReplicates,
    bootstrap_summary,
    resample_report,
    write_uncertainty,
)
from ..scoring.summary.json_schema import (
    COUNT,
    SHA256,
    TEXT,
    Fields,
    Maybe,
    Number,
    Text,
    check_json,
    describe_json,
    read_json,
)
from ..scoring.summary.reports import ID_DATASET
from ..scoring.summary.suite import suite_summary
from ..scoring.summary.suite_json import ADVERSARIAL, BUILD, SUITE_FORMAT, SUITE_JSON, WEIGHTS_SOURCE, read_suite
from ..scoring.threads import chunk_parallel_cpu
from .autoattack import DEFAULT_ATTACKS, ITERATIONS, QUERIES, AttackSpec, library_version, parse_attacks
from .benchmark import RunInputs, benchmark_targets, run_benchmark
from .models import LoadedModel, weights_digest
from .predict import PredictJob, PredictOptions, predict, protocol_transform
from .store import PredictionStore, check_store_folder
from .zero_shot import ZeroShotClassifier, head_identity, zero_shot_detector_stats

RUN_MANIFEST = "run.json"
PREDICTIONS = "predictions"  # the run folder's prediction store
ADVERSARIAL_JSON = "adversarial.json"
ADVERSARIAL_PARTIAL = "adversarial.partial"
RUN_FORMAT = "imagenet-suite.run/2"
OUTPUTS_RECORD_FORMAT = "imagenet-suite.outputs-record/1"
ZERO_SHOT_HEAD = Fields(
    {
        "prompts": TEXT,
        "class_names": TEXT,
        "prompts_sha256": SHA256,
        "prompts_per_class": COUNT,
        "logit_scale": Number(),
        "logit_bias": Maybe(Number()),
        "probabilities": TEXT,
    }
)
"""run.json's ``zero_shot``: what decides a zero-shot head's outputs (:func:`.zero_shot.head_identity`)."""
RUN_SCHEMAS: dict[str | None, Fields] = {
    None: Fields({"model": TEXT, "weights": SHA256}),  # before formats: "weights" held weights_digest()
    RUN_FORMAT: Fields(
        {
            "format": Text(choices=(RUN_FORMAT,)),
            "model": TEXT,
            "weights": TEXT,
            "weights_sha256": Maybe(SHA256),
            "weights_digest": SHA256,
            "params": COUNT,
        },
        # weights_source: absent in run.json written before tags were recorded; zero_shot: an open_clip model's head
        {"weights_source": Maybe(WEIGHTS_SOURCE), "zero_shot": Maybe(ZERO_SHOT_HEAD)},
    ),
}
OUTPUTS_RECORD = Fields({"format": Text(choices=(OUTPUTS_RECORD_FORMAT,)), "key": TEXT, "dataset": BUILD})


@dataclass(frozen=True)
class SuiteTarget:
    """One dataset split of the suite under one evaluation protocol, and the key it is reported under
    (``<key>`` under ``hesse2025``, ``<key>@<protocol>`` otherwise; a PatchML build keeps its key)."""

    key: str
    folder: DatasetFolder
    config: str
    split: str
    protocol: str = HESSE2025

    @property
    def has_images(self) -> bool:
        return "image" in self.folder.column_names(self.config)

    @property
    def file_stem(self) -> str:
        return self.key.replace("/", "__")

    @property
    def build_says_no_crop(self) -> bool:
        """The build's protocol says resize-only (PatchML): predicted so whatever the protocol."""
        return no_center_crop(self.folder.protocol(self.config))

    @property
    def resize_only(self) -> bool:
        """Whether predict is asked to resize without a centre crop (PredictOptions.resize_only)."""
        return self.protocol == ANZAKU2024 and not self.build_says_no_crop

    @property
    def multilabel(self) -> bool:
        """Whether Anzaku et al.'s multi-label metrics (ASMA) apply to it."""
        return is_multilabel_set(self.folder.config_info(self.config)["features"], self.folder.protocol(self.config))

    def under(self, protocol: str) -> SuiteTarget:
        """This ``hesse2025`` target under ``protocol`` (its key suffixed by :func:`protocol_key`)."""
        if protocol == self.protocol:
            return self
        return replace(self, key=protocol_key(self.key, protocol), protocol=protocol)


def suite_targets(datasets: Sequence[str | Path], protocols: Sequence[str] = DEFAULT_PROTOCOLS) -> list[SuiteTarget]:
    """Every (config, split) of every dataset folder under each of ``protocols`` that applies to it,
    ImageNet val first (:func:`dataset_targets`, :func:`protocol_targets`)."""
    return protocol_targets(dataset_targets(datasets), protocols)


def protocol_targets(targets: Sequence[SuiteTarget], protocols: Sequence[str]) -> list[SuiteTarget]:
    """The ``hesse2025`` ``targets`` under ``protocols``, in order: a PatchML build once, resize-only
    (``anzaku2024``, its own key); a multi-label set under each protocol; any other split under
    ``hesse2025`` only (none when it is not among ``protocols``)."""
    protocols = check_protocols(protocols)
    expanded: list[SuiteTarget] = []
    for target in targets:
        if target.build_says_no_crop:
            expanded.append(replace(target, protocol=ANZAKU2024))
        elif target.multilabel:
            expanded += [target.under(protocol) for protocol in protocols]
        elif HESSE2025 in protocols:
            expanded.append(target)
    return expanded


def dataset_targets(datasets: Sequence[str | Path]) -> list[SuiteTarget]:
    """Every (config, split) of every dataset folder, ImageNet val first, under ``hesse2025``.

    A folder is named by its dataset (``imagenet_r``), or by its directory name when two folders hold
    the same dataset; ConfigError on a folder that is not a built dataset or a repeated directory name.
    """
    folders = []
    for path in datasets:
        try:
            folders.append((Path(path), DatasetFolder(path)))
        except DatasetFolderError as err:
            raise ConfigError(f"{param('datasets')} {path}: not a built dataset folder ({err})") from err
    names = [folder.name for _, folder in folders]
    targets: list[SuiteTarget] = []
    for path, folder in folders:
        name = folder.name if names.count(folder.name) == 1 else path.resolve().name
        configs = folder.configs
        for config in configs:
            splits = folder.splits(config)
            for split in splits:
                key = name + (f"/{config}" if len(configs) > 1 else "") + (f"/{split}" if len(splits) > 1 else "")
                targets.append(SuiteTarget(key, folder, config, split))
    keys = [target.key for target in targets]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise ConfigError(f"{param('datasets')}: two folders give the same report key(s) {repeated}; rename one folder")
    return sorted(targets, key=lambda target: (target.folder.name != ID_DATASET, keys.index(target.key)))


def dataset_build(target: SuiteTarget) -> dict[str, str]:
    """The build a target reads: its folder and the build's identity (``BUILD`` of suite.json)."""
    folder = target.folder
    return {
        "folder": str(folder.path.resolve()),
        "builder": folder.name,
        "version": folder.version,
        "config": target.config,
        "split": target.split,
        "build_info_sha256": folder.build_info_sha256,
    }


def same_build(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two builds are one (wherever their folders are now)."""
    return all(a.get(key) == b.get(key) for key in ("builder", "version", "config", "split", "build_info_sha256"))


def describe_build(build: dict[str, Any]) -> str:
    return (
        f"{build['builder']} {build['version']} config {build['config']} split {build['split']} "
        f"(build_info.json sha256 {build['build_info_sha256'][:12]}, {build['folder']})"
    )


def _build_change(old: dict[str, Any], new: dict[str, Any]) -> str:
    """What differs between the build outputs were predicted from and the one given now."""
    fields = ("builder", "version", "config", "split")
    if all(old[key] == new[key] for key in fields):
        return (
            f"predicted from another build of {old['builder']} {old['version']} (config {old['config']}, split "
            f"{old['split']}): build_info.json sha256 {old['build_info_sha256'][:12]} in {old['folder']}, now "
            f"{new['build_info_sha256'][:12]} in {new['folder']}"
        )
    return f"predicted from {describe_build(old)}, but {param('datasets')} now gives {describe_build(new)}"


@dataclass(frozen=True)
class SuiteOptions:
    """How :func:`run_suite` evaluates a model: prediction, OOD statistics, attacks, where outputs are predicted.

    Checked when made (ConfigError naming the field); the files and the executor are checked by
    :func:`check_arguments`.

    Attributes:
        predict: how every dataset split is predicted (device, batch size, workers, precision,
            ``features``; :class:`~imagenet_suite.inference.predict.PredictOptions`). With
            ``features=True`` the penultimate features are stored too and the feature-based OOD detectors
            run where their inputs allow. ``progress`` also prints a line per dataset split.
        detector_stats: a file of fitted train statistics (``DetectorStats.save``) that some OOD detectors
            need (as ``score --detector-stats``); None: those detectors are skipped.
        adversarial: number of ImageNet-val images to attack, 0 or more (0: no attacks; the
            adversarial-robustness dimension is then listed as missing).
        adversarial_seed: seed of the attacked class-stratified subset, of PGD's random start and of
            AutoAttack, 0 or more.
        attacks: the attacks on those images (``evaluate --attack``; names or ``name:eps=VALUE``,
            :mod:`~imagenet_suite.inference.autoattack`): ``fgsm``, ``pgd`` (Beyond Accuracy's; the
            default), ``autoattack-linf``, ``autoattack-l2``, ``autoattack-l1`` (Heuillet et al. 2025's
            AutoAttack "standard" at ε 4/255, 2.0, 75). Only with ``adversarial``.
        allow_partial: compute QUBA dimensions from partial inputs too (C-robustness from fewer than the
            75 ImageNet-C sets), listed in ``summary.quba.partial``; False: such a dimension is missing
            and there is no QUBA score.
        executor: ``"local"`` (predict in this process) or ``"ray"`` (the outputs still missing are
            predicted as one Ray task per dataset split; scoring, attacks and the summary stay here).
        ray_address: the Ray cluster (only with ``executor="ray"``); None: ``$RAY_ADDRESS``, else a local
            cluster of ``num_proc`` CPUs.
        num_proc: CPUs of that local Ray cluster, at least 1.
        gpus_per_task: GPUs each Ray prediction task reserves when ``predict.device`` is CUDA and the cluster
            has GPUs, in (0, 1] (a fraction packs several tasks on one GPU;
            :func:`~imagenet_suite.inference.ray_predict.task_resources`); only with ``executor="ray"``.
        protocols: the evaluation protocols, at least one of ``hesse2025`` (every split with the model's
            own preprocessing, centre crop: QUBA and the accuracy tables of Hesse et al. 2025) and
            ``anzaku2024`` (the multi-label sets resized to the input size without a centre crop, for
            ASMA: Anzaku et al. 2024, App. B); both by default, so one run gives both papers' numbers.
        hierarchy: a built ``wordnet_hierarchy`` / ``kmeans_hierarchy`` folder over the 1000 ImageNet-1k
            classes whose distances the LCA metrics use (e.g. a K-means hierarchy for LCA-on-the-Line's
            latent hierarchies, Shi et al. 2024, App. F.2); None: the WordNet tree shipped with the package.
        bootstrap: resamples of the percentile bootstrap over images behind the 95 % interval of every
            headline number (``summary.uncertainty``; :mod:`imagenet_suite.scoring.summary.intervals`), 0 or
            more (0: no intervals).
        bootstrap_seed: seed of the resamples, 0 or more; two runs with the same seed resample the same
            images alike (the leaderboard's paired tests need it).
        dedup: predict each distinct image once (:class:`~imagenet_suite.inference.store.PredictionStore`):
            ImageNet val's configs, ReaL's and the multi-labels' images are one forward pass per image, and the
            other splits' rows are copied (byte-identical to predicting them); False: every split is predicted.
        prediction_store: the store's folder, which runs of the same model and preprocessing may share (only
            with ``dedup``); None: ``RUN_DIR/predictions``.
        benchmark: a fixed OOD benchmark reported beside the papers' numbers (:data:`~imagenet_suite.scoring.benchmarks.BENCHMARKS`:
            ``openood-v1.5-imagenet``), in ``summary.benchmarks`` and suite.md; its builds must be among the datasets
            (:func:`check_benchmark`; ``evaluate`` checks it before loading the model); None: none.

    Example:
        >>> from imagenet_suite.inference.evaluate import SuiteOptions
        >>> from imagenet_suite.inference.predict import PredictOptions
        >>> options = SuiteOptions(predict=PredictOptions(batch_size=64, workers=0), adversarial=500)
        >>> options.predict.batch_size, options.adversarial
        (64, 500)
        >>> SuiteOptions(adversarial=-3)
        Traceback (most recent call last):
        ...
        imagenet_suite.errors.ConfigError: adversarial must be 0 (no attacks) or a number of images, got -3
    """

    predict: PredictOptions = field(default_factory=PredictOptions)
    detector_stats: str | Path | None = None
    adversarial: int = 0
    adversarial_seed: int = 0
    attacks: tuple[AttackSpec | str, ...] = DEFAULT_ATTACKS
    allow_partial: bool = False
    executor: str = "local"
    ray_address: str | None = None
    num_proc: int = 1
    gpus_per_task: float = 1.0
    protocols: tuple[str, ...] = DEFAULT_PROTOCOLS
    hierarchy: str | Path | None = None
    bootstrap: int = 1000
    bootstrap_seed: int = 0
    dedup: bool = True
    prediction_store: str | Path | None = None
    benchmark: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "protocols", check_protocols(self.protocols))
        if not isinstance(self.predict, PredictOptions):
            raise ConfigError(f"{param('predict')} must be a PredictOptions, got {type(self.predict).__name__}")
        _at_least("adversarial", self.adversarial, 0, "must be 0 (no attacks) or a number of images")
        _at_least("adversarial_seed", self.adversarial_seed, 0, "must be 0 or more")
        object.__setattr__(self, "attacks", parse_attacks(self.attacks))
        if not self.adversarial and self.attacks != parse_attacks(DEFAULT_ATTACKS):
            raise ConfigError(f"{param('attacks')} is only used with {param('adversarial')} N (images to attack)")
        _at_least("num_proc", self.num_proc, 1, "must be at least 1")
        _at_least("bootstrap", self.bootstrap, 0, "must be 0 (no intervals) or a number of resamples")
        _at_least("bootstrap_seed", self.bootstrap_seed, 0, "must be 0 or more")
        check_executor(self.executor, self.ray_address)
        gpus = self.gpus_per_task
        if isinstance(gpus, bool) or not isinstance(gpus, int | float) or not 0 < gpus <= 1:
            raise ConfigError(f"{param('gpus_per_task')} must be a number in (0, 1], got {gpus!r}")
        if gpus != 1 and self.executor != "ray":
            raise ConfigError(f"{param('gpus_per_task')} is only used with {param('executor')} ray")
        if self.benchmark is not None and self.benchmark not in BENCHMARKS:
            raise ConfigError(f"{param('benchmark')} must be one of {sorted(BENCHMARKS)}, got {self.benchmark!r}")
        if self.prediction_store is not None and not self.dedup:
            raise ConfigError(
                f"{param('prediction_store')} is only used with {param('dedup')} (it keeps deduplicated predictions)"
            )


def check_benchmark(targets: Sequence[SuiteTarget], name: str | None) -> Benchmark | None:
    """The benchmark ``name`` (None: none) after checking that ``targets`` (:func:`dataset_targets`) hold every
    build it reads (ConfigError naming those missing)."""
    if name is None:
        return None
    benchmark = BENCHMARKS[name]
    if not any(target.folder.name == ID_DATASET for target in targets):
        raise ConfigError(f"{param('benchmark')} {name}: add a built imagenet_val folder to {param('datasets')}")
    benchmark_targets(benchmark, targets)
    return benchmark


def check_arguments(run_dir: str | Path, options: SuiteOptions) -> None:
    """ConfigError naming the parameter of :func:`run_suite` that cannot work, before any model is loaded
    or any file is written: ``run_dir`` is not a file, ``options.detector_stats`` exists, ``options.hierarchy``
    is a built hierarchy over the ImageNet-1k classes, the executor can be used (Ray installed, its cluster
    reachable), AutoAttack is installed when an attack needs it."""
    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise ConfigError(f"{param('run_dir')} {run_dir}: is a file; expected a run folder")
    if options.detector_stats is not None and not Path(options.detector_stats).is_file():
        raise ConfigError(f"{param('detector_stats')} {options.detector_stats}: no such file")
    if options.hierarchy is not None:
        hierarchy_record(options.hierarchy)
    check_store_folder(options.prediction_store)
    make_executor(options.executor, options.num_proc, options.ray_address, start=False)
    if options.adversarial and any(spec.norm is not None for spec in options.attacks):
        library_version()


def lca_options(hierarchy: str | Path | None) -> LcaOptions:
    """Every LCA distance under ``hierarchy``, the one LCA-on-the-Line reports with that kind of hierarchy
    first (``info`` for WordNet, ``depth_one_sided`` for K-means: ``paper_distance`` of
    :func:`~imagenet_suite.scoring.metrics.lca_distances.hierarchy_record`)."""
    first = hierarchy_record(hierarchy)["paper_distance"]
    distances = (first, *(distance for distance in LCA_DISTANCES if distance != first))
    return LcaOptions(distances=distances, hierarchy=None if hierarchy is None else str(hierarchy))


def _at_least(name: str, value: Any, minimum: int, rule: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{param(name)} {rule}, got {value!r}")


def run_manifest(loaded: LoadedModel) -> dict[str, Any]:
    """run.json: what identifies the model of a run folder (``weights_source``: the weights tag and where
    the weights came from, :meth:`~imagenet_suite.inference.models.WeightsSource.record`)."""
    return {
        "format": RUN_FORMAT,
        "model": loaded.spec,
        "weights": loaded.weights,
        "weights_sha256": loaded.weights_sha256,
        "weights_digest": weights_digest(loaded),
        "weights_source": loaded.source.record() if loaded.source is not None else None,
        "params": sum(parameter.numel() for parameter in loaded.model.parameters()),
        **({"zero_shot": head_identity(loaded.zero_shot)} if loaded.zero_shot is not None else {}),
    }


def check_run_folder(run_dir: str | Path, manifest: dict[str, Any], targets: Sequence[SuiteTarget]) -> None:
    """Read-only checks of an existing run folder before any work (RunFolderError, one line): run.json
    names this model (else: what differs), suite.json and adversarial.json are well formed and of a
    format this version reads, and every outputs file present was predicted from the build given now."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return
    if (run_dir / RUN_MANIFEST).is_file():
        _check_manifest(run_dir, manifest)
    if (run_dir / SUITE_JSON).is_file():
        read_suite(run_dir / SUITE_JSON)
    if (run_dir / ADVERSARIAL_JSON).is_file():
        check_json(read_json(run_dir / ADVERSARIAL_JSON, ADVERSARIAL_JSON), ADVERSARIAL, run_dir / ADVERSARIAL_JSON)
    if (run_dir / ADVERSARIAL_PARTIAL).exists() and not (run_dir / ADVERSARIAL_PARTIAL).is_dir():
        raise RunFolderError(
            f"{run_dir / ADVERSARIAL_PARTIAL}: in the way (the attacks keep their finished batches there)"
        )
    for target in targets:
        if target.has_images:
            _check_outputs_record(run_dir, target, manifest["model"])


def _check_manifest(run_dir: Path, manifest: dict[str, Any]) -> None:
    path = run_dir / RUN_MANIFEST
    found = read_json(path, "run.json of `imagenet-suite evaluate`")
    if not isinstance(found, dict):
        raise RunFolderError(f"{path}: expected an object, found {describe_json(found)}")
    if "format" in found and found["format"] != RUN_FORMAT:
        raise RunFolderError(
            f"{path}: format is {describe_json(found['format'])}, but this imagenet-suite reads run.json of format "
            f"{json.dumps(RUN_FORMAT)} (or without one, as written before formats); choose another {param('run_dir')}"
        )
    check_json(found, RUN_SCHEMAS[found.get("format")], path)
    legacy = "format" not in found
    digest = found["weights"] if legacy else found["weights_digest"]
    differences = []
    if found["model"] != manifest["model"]:
        differences.append(f"model {found['model']} there, {manifest['model']} now")
    if digest != manifest["weights_digest"]:
        differences.append(f"weights {_weights_text(found, legacy)} there, {_weights_text(manifest)} now")
    elif found.get("weights_source") and manifest["weights_source"]:
        old, new = found["weights_source"].get("tag"), manifest["weights_source"].get("tag")
        if old != new:  # same weights, but the tag's architecture configuration and preprocessing differ
            differences.append(f"weights tag {old} there, {new} now")
    if found.get("zero_shot") != manifest.get("zero_shot"):
        differences.append(f"zero-shot head {_head_text(found)} there, {_head_text(manifest)} now")
    if not differences and not legacy and found["params"] != manifest["params"]:
        differences.append(
            f"{found['params']} parameters there, {manifest['params']} now (same spec and weights: the model's code changed)"
        )
    if differences:
        raise RunFolderError(
            f"{param('run_dir')} {run_dir} holds the run of {found['model']}, not of this model: "
            f"{'; '.join(differences)}; choose another {param('run_dir')}"
        )


def _head_text(manifest: dict[str, Any]) -> str:
    head = manifest.get("zero_shot")
    if not head:
        return "none"
    return f"{head['class_names']} names, {head['prompts']} prompts ({head['prompts_sha256'][:12]}), {head['probabilities']}"


def _weights_text(manifest: dict[str, Any], legacy: bool = False) -> str:
    if legacy:
        return f"of digest {manifest['weights'][:12]} (a run.json of an older imagenet-suite names no more)"
    sha = manifest["weights_sha256"]
    return manifest["weights"] + (f" (sha256 {sha[:12]})" if sha else "")


def _record_path(outputs: Path) -> Path:
    """``RUN_DIR/builds/<key>.json`` of ``RUN_DIR/outputs/<key>.pt``."""
    return outputs.parent.parent / "builds" / f"{outputs.stem}.json"


def _check_outputs_record(run_dir: Path, target: SuiteTarget, model: str) -> None:
    path = run_dir / "outputs" / f"{target.file_stem}.pt"
    if not path.is_file():
        return
    record_path = _record_path(path)
    if not record_path.is_file():
        raise RunFolderError(
            f"{path}: no record of the dataset build it was predicted from ({record_path} is missing: a run "
            "folder of an older imagenet-suite, or a file put there by hand); delete it to predict again, or "
            f"choose another {param('run_dir')}"
        )
    record = read_json(record_path, "outputs record of `imagenet-suite evaluate`")
    check_json(record, OUTPUTS_RECORD, record_path)
    stale = None
    if record.get("protocol", target.protocol) != target.protocol:
        stale = f"predicted under evaluation protocol {record['protocol']!r}, but its key is {target.protocol!r}'s"
    elif "protocol" not in record and target.build_says_no_crop and model.startswith("torchvision:"):
        stale = "predicted with a centre crop (torchvision models on PatchML were, before imagenet-suite resized them)"
    if stale:
        raise RunFolderError(f"{path}: {stale}; delete it to predict again, or choose another {param('run_dir')}")
    now = dataset_build(target)
    if not same_build(record["dataset"], now):
        raise RunFolderError(
            f"{path}: {_build_change(record['dataset'], now)}; delete it to predict again, or choose another "
            f"{param('run_dir')}"
        )


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
        return [target for target in unique.values() if not self.run.outputs_path(target).is_file()]


def open_run(
    loaded: LoadedModel, datasets: Sequence[str | Path], run_dir: str | Path, options: SuiteOptions
) -> OpenedRun:
    """Check the arguments (:func:`check_arguments`) and the run folder (:func:`check_run_folder`) of
    :func:`run_suite` and claim the folder for ``loaded`` (run.json); nothing is predicted or scored."""
    check_arguments(run_dir, options)
    run_dir = Path(run_dir)
    base = dataset_targets(datasets)
    targets = protocol_targets(base, options.protocols)
    id_target = next((t for t in base if t.folder.name == ID_DATASET and t.has_images), None)
    id_targets = {HESSE2025: id_target, ANZAKU2024: id_target.under(ANZAKU2024)} if id_target is not None else {}
    manifest = run_manifest(loaded)
    check_run_folder(run_dir, manifest, [*targets, *id_targets.values()])
    device = str(options.predict.device)
    stats = DetectorStats.load(options.detector_stats, device) if options.detector_stats is not None else None
    if stats is not None:
        stats.refuse_other_model(loaded.spec, weights_digest(loaded), options.detector_stats)
    if stats is None and isinstance(loaded.model, ZeroShotClassifier):  # NINCO's cosine and MCM: text embeddings
        stats = zero_shot_detector_stats(loaded.model).to(device)
    run = _Run(loaded, run_dir, options.predict, stats, lca_options(options.hierarchy))
    if options.dedup:
        run.store = PredictionStore(options.prediction_store or run_dir / PREDICTIONS)
    _claim_run_folder(run_dir, manifest)
    (run_dir / "reports").mkdir(exist_ok=True)
    return OpenedRun(run, targets, id_targets, manifest)


def run_suite(
    loaded: LoadedModel,
    datasets: Sequence[str | Path],
    run_dir: str | Path,
    options: SuiteOptions | None = None,
) -> dict[str, Any]:
    """Predict, score and summarise ``loaded`` on every split of ``datasets``; write the run folder.

    Returns suite.json's content. ``options``: see :class:`SuiteOptions` (default: every default, on
    the CPU, no attacks). With ``executor="ray"`` the outputs still missing are predicted as one Ray
    task per dataset split (:func:`predict_on_ray`).

    Example:
        >>> from imagenet_suite.inference import PredictOptions, load_model
        >>> from imagenet_suite.inference.evaluate import SuiteOptions, run_suite
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
    if options.executor == "ray":
        predict_on_ray(run, opened.missing_outputs(), options.num_proc, options.ray_address, options.gpus_per_task)
    reports: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    bootstrap = Bootstrap(options.bootstrap, options.bootstrap_seed) if options.bootstrap else None
    replicated: dict[str, ReportReplicates] = {}
    for target in targets:
        report, reason = run.score_target(target, id_targets)
        if report is None:
            skipped[target.key] = reason
            continue
        reports[target.key] = report
        atomic_write_bytes(run_dir / "reports" / f"{target.file_stem}.json", _json_bytes(report))
        if bootstrap is not None:
            replicated[target.key] = run.resample(report, bootstrap)
    attacks = None
    if options.adversarial:
        if id_target is None:
            raise ConfigError(
                f"{param('adversarial')} attacks ImageNet-val images: add a built imagenet_val folder to "
                f"{param('datasets')}"
            )
        attacks = run.adversarial(id_target, options.adversarial, options.adversarial_seed, options.attacks)
    params = manifest["params"]
    summary = suite_summary(
        reports, params_millions=params / 1e6, adversarial=attacks, allow_partial=options.allow_partial
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
        "datasets": reports,
        "skipped": skipped,
        "summary": summary,
    }
    atomic_write_bytes(run_dir / SUITE_JSON, _json_bytes(suite))
    write_suite_markdown(suite, run_dir)
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
        atomic_write_bytes(path, data)
    if run.options.progress:
        print(f"predicted {target.key} on Ray")


def _outputs_target(target: SuiteTarget, id_targets: dict[str, SuiteTarget]) -> SuiteTarget | None:
    """The split whose outputs ``target`` is scored with: itself, or for a config without images the
    ImageNet-val split under the same protocol (None without one)."""
    return target if target.has_images else id_targets.get(target.protocol)


def _claim_run_folder(run_dir: Path, manifest: dict[str, Any]) -> None:
    """Record the model in ``run.json`` (after :func:`check_run_folder`; a run.json written before formats
    is rewritten in the current layout)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    recorded = run_dir / RUN_MANIFEST
    if not recorded.is_file() or read_json(recorded, RUN_MANIFEST) != manifest:
        atomic_write_bytes(recorded, _json_bytes(manifest))


def _json_bytes(value: Any) -> bytes:
    return (json.dumps(value, indent=1, allow_nan=False) + "\n").encode()


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
        record = {
            "format": OUTPUTS_RECORD_FORMAT,
            "key": target.key,
            "dataset": dataset_build(target),
            "protocol": target.protocol,
        }
        path = _record_path(self.outputs_path(target))
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, _json_bytes(record))

    def outputs(self, target: SuiteTarget) -> Path:
        """The target's outputs file, predicted unless already in the run folder (its record was checked by
        :func:`check_run_folder`)."""
        path = self.outputs_path(target)
        if not path.is_file():
            if self.options.progress:
                print(f"predict {target.key}")
            self.record_outputs(target)
            options = self.predict_options(target)
            predictor = self.store.predict if self.store is not None else predict
            predictor(target.folder, self.loaded, path, config=target.config, split=target.split, options=options)
        return path

    def score_target(self, target: SuiteTarget, id_targets: dict[str, SuiteTarget]) -> tuple[dict | None, str]:
        """``(report dict, "")`` or ``(None, why it was skipped)``. ``id_targets``: the ImageNet-val split
        per protocol (empty without one)."""
        folder, config = target.folder, target.config
        id_target = id_targets.get(HESSE2025)
        applicable = applicable_metrics(folder.config_info(config)["features"], folder.protocol(config))
        if not applicable:
            return None, f"no metric family applies to config {config!r} (columns {folder.column_names(config)})"
        if folder.protocol(config).get("ood") and id_target is None:
            return None, "an OOD set is scored against the ImageNet-val outputs: add a built imagenet_val folder"
        outputs_target = _outputs_target(target, id_targets)
        if outputs_target is None:
            return None, "no images to run the model on, and no imagenet_val folder whose outputs it could join"
        path = self.outputs(outputs_target)
        outputs = ModelOutputs.load(path, device=self.device)
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
        self, id_target: SuiteTarget, rows: int, seed: int, attacks: Sequence[AttackSpec]
    ) -> dict[str, Any]:
        """The attacks' accuracies on ``rows`` seeded, class-stratified val images: adversarial.json, where
        the attacks it lacks are added (all of them when it was measured on another subset or build)."""
        from .adversarial import AttackOptions, adversarial_accuracy

        path = self.run_dir / ADVERSARIAL_JSON
        batch_size = min(self.options.batch_size, 64)  # the random starts are seeded per batch: part of the key
        key = {"requested_rows": rows, "seed": seed, "batch_size": batch_size}
        build = dataset_build(id_target)
        recorded = None
        if path.is_file():  # checked by check_run_folder
            found = read_json(path, ADVERSARIAL_JSON)
            same = all(found.get(name) == value for name, value in key.items())
            if same and found.get("dataset") is not None and same_build(found["dataset"], build):
                recorded = found

        def options(specs: Sequence[AttackSpec]) -> AttackOptions:
            return AttackOptions(
                n=rows,
                seed=seed,
                batch_size=batch_size,
                attacks=tuple(specs),
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
        atomic_write_bytes(path, _json_bytes(record))
        return record


def attack_recorded(recorded: dict[str, Any] | None, spec: AttackSpec, options: Any) -> bool:
    """Whether adversarial.json (``recorded``) holds ``spec``'s accuracy, measured with ``options``' settings."""
    if recorded is None:
        return False
    if spec.norm is None:
        return f"{spec.name}_accuracy" in recorded
    entry = (recorded.get("autoattack") or {}).get(spec.label)
    settings = options.autoattacks[spec.label].record()
    return entry is not None and all(entry.get(name) == settings[name] for name in AUTOATTACK_SETTINGS)


AUTOATTACK_SETTINGS = ("norm", "eps", "version", "iterations", "queries")
"""What an AutoAttack accuracy of adversarial.json is reused for (the library version is recorded, not matched)."""
FGSM_PGD_TEXT = {
    "fgsm": "FGSM eps=8/255",
    "pgd": "PGD eps=8/255 alpha=2/255 steps=10 random_start",
}


def adversarial_record(
    recorded: dict[str, Any] | None, result: Any, key: dict[str, Any], build: dict[str, Any]
) -> dict[str, Any]:
    """adversarial.json: ``recorded``'s accuracies (when on the same rows) with ``result``'s added."""
    record = {**key, "rows": result.clean.denominator, "clean_accuracy": result.clean.value}
    old = recorded or {}
    for name in FGSM_PGD_TEXT:
        value = result.accuracy(name).value if name in result.correct else old.get(f"{name}_accuracy")
        if value is not None:
            record[f"{name}_accuracy"] = value
    autoattack = dict(old.get("autoattack") or {})
    for label, settings in result.autoattack.items():
        autoattack[label] = {"accuracy": result.accuracy(label).value, **settings}
    record["attack"] = attack_text(record, autoattack)
    if autoattack:
        record["autoattack"] = {label: autoattack[label] for label in sorted(autoattack)}
    correct = {"clean": result.clean_correct} | {
        name: result.correct[name] for name in FGSM_PGD_TEXT if name in result.correct
    }
    flags = {name: "".join("1" if flag else "0" for flag in found.tolist()) for name, found in correct.items()}
    for name in FGSM_PGD_TEXT:  # an attack of the file reused: its flags, when the file has them
        if name not in flags and (old.get("correct") or {}).get(name) is not None:
            flags[name] = old["correct"][name]
    return {**record, "ids": list(result.ids), "correct": flags, "dataset": build}


def attack_text(record: dict[str, Any], autoattack: dict[str, Any]) -> str:
    """The attacks of an adversarial.json in one line (``attack``), e.g. ``torchattacks FGSM eps=8/255; PGD
    eps=8/255 alpha=2/255 steps=10 random_start, inputs in [0,1]``."""
    parts = [text for name, text in FGSM_PGD_TEXT.items() if f"{name}_accuracy" in record]
    if parts:
        parts[0] = "torchattacks " + parts[0]
    for label in sorted(autoattack):
        entry = autoattack[label]
        budget = (
            ""
            if (entry["iterations"], entry["queries"]) == (ITERATIONS, QUERIES)
            else (f" ({entry['iterations']} iterations, {entry['queries']} queries)")
        )
        parts.append(
            f"AutoAttack {entry['version']} {entry['norm']} eps={entry['eps']:.6g}{budget} ({entry['library']})"
        )
    return "; ".join(parts) + ", inputs in [0,1]"


__all__ = [
    "ADVERSARIAL_JSON",
    "ADVERSARIAL_PARTIAL",
    "OUTPUTS_RECORD_FORMAT",
    "RUN_FORMAT",
    "RUN_MANIFEST",
    "SUITE_JSON",
    "OpenedRun",
    "SuiteOptions",
    "SuiteTarget",
    "check_arguments",
    "check_run_folder",
    "dataset_build",
    "dataset_targets",
    "lca_options",
    "open_run",
    "predict_on_ray",
    "protocol_targets",
    "run_manifest",
    "run_suite",
    "same_build",
    "suite_targets",
]
