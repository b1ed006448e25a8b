"""The settings of a suite run (:func:`~imagenet_suite.inference.evaluate.run_suite`), checked when made
(:class:`SuiteOptions`, its ``predict`` part a :class:`~imagenet_suite.inference.predict.PredictOptions`), and
the checks of the run's arguments before any model is loaded: the run folder's path, the files the options
name and the executor (:func:`check_arguments`), the benchmark's builds among the datasets
(:func:`check_benchmark`). :func:`lca_options`: the LCA distances under ``SuiteOptions.hierarchy``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.executors import check_executor, make_executor
from ..errors import ConfigError, param
from ..files import write_problem
from ..limits import check_limit
from ..scoring.benchmarks import BENCHMARKS, Benchmark
from ..scoring.evaluation.options import LCA_DISTANCES, LcaOptions
from ..scoring.evaluation.preprocessing import DEFAULT_PROTOCOLS, check_protocols
from ..scoring.metrics.lca_distances import hierarchy_record
from ..scoring.summary.reports import ID_DATASET
from .attack_space import HESSE2025, check_attack_convention
from .autoattack import DEFAULT_ATTACKS, AttackSpec, library_version, parse_attacks
from .benchmark import benchmark_targets
from .predict import PredictOptions
from .run_folder import PREDICTIONS
from .store import check_store_folder
from .suite_targets import SuiteTarget


@dataclass(frozen=True)
class SuiteOptions:
    """How :func:`~imagenet_suite.inference.evaluate.run_suite` evaluates a model: prediction, OOD statistics,
    attacks, where outputs are predicted.

    Checked when made (ConfigError naming the field); the files and the executor are checked by
    :func:`check_arguments`.

    Attributes:
        predict: how every dataset split is predicted (device, batch size, workers, precision,
            ``features``; :class:`~imagenet_suite.inference.predict.PredictOptions`). With
            ``features=True`` the penultimate features are stored too and the feature-based OOD detectors
            run where their inputs allow. ``progress`` also prints a line per dataset split.
        detector_stats: a file of fitted train statistics (``DetectorStats.save``) that some OOD detectors
            need (as ``score --detector-stats``); None: those detectors are skipped.
        adversarial: number of ImageNet-val images to attack, 0 to 50,000 (0: no attacks; the
            adversarial-robustness dimension is then listed as missing).
        adversarial_seed: seed of the attacked class-stratified subset, of PGD's random start and of
            AutoAttack, 0 or more.
        attacks: the attacks on those images (``evaluate --attack``; names or ``name:eps=VALUE``,
            :mod:`~imagenet_suite.inference.autoattack`): ``fgsm``, ``pgd`` (Beyond Accuracy's; the
            default), ``autoattack-linf``, ``autoattack-l2``, ``autoattack-l1`` (Heuillet et al. 2025's
            AutoAttack "standard" at ε 4/255, 2.0, 75). Only with ``adversarial``.
        attack_convention: where FGSM and PGD perturb (:mod:`~imagenet_suite.inference.attack_space`):
            ``hesse2025`` (the default; the normalised tensors the model's eval transform yields, clamped to
            [0, 1], as Beyond Accuracy's code: the scale of QUBA's μ/σ) or ``pixel`` ([0, 1] pixel space:
            a robustness claim's threat model; no QUBA adversarial dimension then). Only with
            ``adversarial``. AutoAttack always runs in pixels.
        allow_partial: compute QUBA dimensions from partial inputs too (C-robustness from fewer than the
            75 ImageNet-C sets), listed in ``summary.quba.partial``; False: such a dimension is missing
            and there is no QUBA score.
        executor: ``"local"`` (predict in this process) or ``"ray"`` (the outputs still missing are
            predicted as one Ray task per dataset split; scoring, attacks and the summary stay here).
        ray_address: the Ray cluster (only with ``executor="ray"``); None: ``$RAY_ADDRESS``, else a local
            cluster of ``num_proc`` CPUs.
        num_proc: CPUs of that local Ray cluster, 1 to 512.
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
            headline number (``summary.uncertainty``; :mod:`imagenet_suite.scoring.summary.intervals`), 0 to
            100,000 (0: no intervals).
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

    The bounds of ``adversarial``, ``num_proc``, ``bootstrap`` (and of ``predict``'s batch size and workers) are
    :data:`imagenet_suite.limits.LIMITS`'s.

    Example:
        >>> from imagenet_suite.inference.suite_options import SuiteOptions
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
    attack_convention: str = HESSE2025
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
        check_limit("adversarial", self.adversarial)
        _at_least("adversarial_seed", self.adversarial_seed, 0, "must be 0 or more")
        object.__setattr__(self, "attacks", parse_attacks(self.attacks))
        if not self.adversarial and self.attacks != parse_attacks(DEFAULT_ATTACKS):
            raise ConfigError(f"{param('attacks')} is only used with {param('adversarial')} N (images to attack)")
        check_attack_convention(self.attack_convention)
        if not self.adversarial and self.attack_convention != HESSE2025:
            raise ConfigError(
                f"{param('attack_convention')} is only used with {param('adversarial')} N (images to attack)"
            )
        check_limit("num_proc", self.num_proc)
        check_limit("bootstrap", self.bootstrap)
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
    """The benchmark ``name`` (None: none) after checking that ``targets``
    (:func:`~imagenet_suite.inference.suite_targets.dataset_targets`) hold every build it reads (ConfigError
    naming those missing)."""
    if name is None:
        return None
    benchmark = BENCHMARKS[name]
    if not any(target.folder.name == ID_DATASET for target in targets):
        raise ConfigError(f"{param('benchmark')} {name}: add a built imagenet_val folder to {param('datasets')}")
    benchmark_targets(benchmark, targets)
    return benchmark


def check_arguments(run_dir: str | Path, options: SuiteOptions) -> None:
    """ConfigError naming the parameter of :func:`~imagenet_suite.inference.evaluate.run_suite` that cannot
    work, before any model is loaded or any file is written: ``run_dir`` is not a file and can be written
    (:func:`~imagenet_suite.files.write_problem`), so can the prediction store (``options.prediction_store``, or
    ``RUN_DIR/predictions``), ``options.detector_stats`` exists, ``options.hierarchy`` is a built hierarchy over
    the ImageNet-1k classes, the executor can be used (Ray installed, its cluster reachable), AutoAttack is
    installed when an attack needs it."""
    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise ConfigError(f"{param('run_dir')} {run_dir}: is a file; expected a run folder")
    problem = write_problem(run_dir, folder=True)
    if problem is not None:
        raise ConfigError(f"{param('run_dir')} {run_dir}: {problem}")
    if options.detector_stats is not None and not Path(options.detector_stats).is_file():
        raise ConfigError(f"{param('detector_stats')} {options.detector_stats}: no such file")
    if options.hierarchy is not None:
        hierarchy_record(options.hierarchy)
    if options.prediction_store is not None:
        check_store_folder(options.prediction_store)
    elif options.dedup:
        check_store_folder(run_dir / PREDICTIONS, "run_dir")
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


__all__ = ["SuiteOptions", "check_arguments", "check_benchmark", "lca_options"]
