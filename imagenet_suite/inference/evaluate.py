"""Run one model over a suite of built datasets and summarise it: predict + score per dataset, attacks,
the seed papers' headline numbers (``imagenet-suite evaluate``).

A *run folder* holds everything one model's evaluation produced::

    RUN_DIR/run.json                  the model it belongs to (a folder of another model is refused)
    RUN_DIR/outputs/<key>.pt          predict's outputs per dataset split (reused when present)
    RUN_DIR/reports/<key>.json        the score report per dataset split
    RUN_DIR/adversarial.json          FGSM/PGD accuracies (with --adversarial N; reused for the same N, seed)
    RUN_DIR/suite.json                {"model", "weights", "weights_sha256", "datasets": {key: report},
                                       "skipped": {key: reason}, "summary": {...}}
    RUN_DIR/suite.md, *.png           the summary as tables and plots

``<key>`` is ``<dataset>[/<config>][/<split>]`` (config and split only when the folder has several; the
folder's directory name instead of the dataset when two folders hold the same dataset);
in file names ``/`` becomes ``__``. Every config of every folder is scored with every metric family
that applies (the same choice as ``imagenet-suite score``); a config without images (ReaL labels, NINCO
review logs) is scored with the ImageNet-val outputs when its rows are ImageNet-val ids, and a config
no family applies to is listed under ``skipped`` with the reason. The ImageNet-val outputs are the ID
side of every OOD set. Summary: :func:`imagenet_suite.scoring.suite.suite_summary`.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import __version__
from ..build.dataset_folder import DatasetFolder
from ..build.executors import MAX_RETRIES, RayExecutor, make_executor
from ..errors import ConfigError, DatasetFolderError, OutputsError
from ..files import atomic_write_bytes
from ..scoring.ood_detectors import DetectorStats, Embeddings
from ..scoring.options import OodOptions, ScoreOptions
from ..scoring.outputs import ModelOutputs
from ..scoring.report import applicable_metrics, score
from ..scoring.suite import ID_DATASET, suite_summary
from ..scoring.suite_markdown import write_suite_markdown
from .models import LoadedModel, weights_digest
from .predict import predict

RUN_MANIFEST = "run.json"
SUITE_JSON = "suite.json"


@dataclass(frozen=True)
class SuiteTarget:
    """One dataset split of the suite and the key it is reported under."""

    key: str
    folder: DatasetFolder
    config: str
    split: str

    @property
    def has_images(self) -> bool:
        return "image" in self.folder.column_names(self.config)

    @property
    def file_stem(self) -> str:
        return self.key.replace("/", "__")


def suite_targets(datasets: Sequence[str | Path]) -> list[SuiteTarget]:
    """Every (config, split) of every dataset folder, ImageNet val first.

    A folder is named by its dataset (``imagenet_r``), or by its directory name when two folders hold
    the same dataset; ConfigError on a folder that is not a built dataset or a repeated directory name.
    """
    folders = []
    for path in datasets:
        try:
            folders.append((Path(path), DatasetFolder(path)))
        except DatasetFolderError as err:
            raise ConfigError(f"--datasets {path}: not a built dataset folder ({err})") from None
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
        raise ConfigError(f"--datasets: two folders give the same report key(s) {repeated}; rename one folder")
    return sorted(targets, key=lambda target: (target.folder.name != ID_DATASET, keys.index(target.key)))


def run_suite(
    loaded: LoadedModel,
    datasets: Sequence[str | Path],
    run_dir: str | Path,
    *,
    device: str = "cpu",
    batch_size: int = 256,
    amp: bool = False,
    features: bool = False,
    detector_stats: str | Path | None = None,
    workers: int | None = None,
    adversarial: int = 0,
    adversarial_seed: int = 0,
    progress: bool = True,
    executor: str = "local",
    ray_address: str | None = None,
    num_proc: int = 1,
) -> dict[str, Any]:
    """Predict, score and summarise ``loaded`` on every split of ``datasets``; write the run folder.

    Returns suite.json's content. ``features``: store penultimate features too, so the feature-based
    OOD detectors run where their inputs allow; ``detector_stats``: the training statistics some of
    them need (as ``score --detector-stats``). ``adversarial``: number of ImageNet-val images to
    attack (0: no attacks; the adversarial-robustness dimension is then listed as missing).
    ``executor="ray"``: the outputs still missing are predicted as one Ray task per dataset split
    (:func:`predict_on_ray`; ``ray_address`` or ``$RAY_ADDRESS``, else a local cluster with
    ``num_proc`` CPUs); scoring, attacks and the summary stay on this process.
    """
    if adversarial < 0:
        raise ConfigError(f"adversarial must be 0 (no attacks) or a number of images, got {adversarial}")
    run_dir = Path(run_dir)
    targets = suite_targets(datasets)
    _claim_run_folder(run_dir, loaded)
    (run_dir / "reports").mkdir(exist_ok=True)
    id_target = next((t for t in targets if t.folder.name == ID_DATASET and t.has_images), None)
    stats = DetectorStats.load(detector_stats, device) if detector_stats is not None else None
    run = _Run(loaded, run_dir, device, batch_size, amp, features, workers, progress, stats)
    make_executor(executor, num_proc, ray_address, start=False)  # ConfigError on a bad combination, at once
    if executor == "ray":
        todo = [t for t in targets if t.has_images and not run.outputs_path(t).is_file()]
        predict_on_ray(run, todo, num_proc, ray_address)
    reports: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    for target in targets:
        report, reason = run.score_target(target, id_target)
        if report is None:
            skipped[target.key] = reason
            continue
        reports[target.key] = report
        atomic_write_bytes(run_dir / "reports" / f"{target.file_stem}.json", _json_bytes(report))
    attacks = None
    if adversarial:
        if id_target is None:
            raise ConfigError(
                "--adversarial attacks ImageNet-val images: add a built imagenet_val folder to --datasets"
            )
        attacks = run.adversarial(id_target, adversarial, adversarial_seed)
    params = sum(parameter.numel() for parameter in loaded.model.parameters())
    suite = {
        "model": loaded.spec,
        "weights": loaded.weights,
        "weights_sha256": loaded.weights_sha256,
        "params": params,
        "imagenet_suite": __version__,
        "datasets": reports,
        "skipped": skipped,
        "summary": suite_summary(reports, params_millions=params / 1e6, adversarial=attacks),
    }
    atomic_write_bytes(run_dir / SUITE_JSON, _json_bytes(suite))
    write_suite_markdown(suite, run_dir)
    return suite


def predict_on_ray(run: _Run, todo: list[SuiteTarget], num_cpus: int, address: str | None) -> None:
    """Predict ``todo`` as Ray tasks, one per dataset split, and write their outputs into the run folder.

    The model goes to the object store once (it must pickle: timm, torchvision and importable user
    models do); each task runs :func:`~imagenet_suite.inference.predict.predict` in a scratch folder
    on its worker, with one GPU when the cluster has GPUs and ``device`` is CUDA, and returns the
    outputs file's bytes. The dataset folders must be visible on every node (checked first). A worker
    that dies is retried; an error in the data is not.
    """
    if not todo:
        return
    with RayExecutor(num_cpus=num_cpus, address=address) as cluster:
        ray = cluster.ray
        cluster.check_visible(sorted({target.folder.path.resolve() for target in todo}))
        gpus = 1 if run.device.startswith("cuda") and ray.cluster_resources().get("GPU", 0) >= 1 else 0
        task = ray.remote(num_cpus=1, num_gpus=gpus, max_retries=MAX_RETRIES, retry_exceptions=False)(_predict_bytes)
        model = ray.put(run.loaded)
        settings = {"device": run.device, "batch_size": run.batch_size, "features": run.features, "amp": run.amp}
        pending = {task.remote(model, str(t.folder.path.resolve()), t.config, t.split, settings): t for t in todo}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            target = pending.pop(done[0])
            try:
                data = ray.get(done[0])
            except ray.exceptions.RayTaskError as err:
                for ref in pending:
                    ray.cancel(ref, force=False)
                cause = err.cause if isinstance(err.cause, BaseException) else err
                raise cause from None
            run.outputs_path(target).parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(run.outputs_path(target), data)
            if run.progress:
                print(f"predicted {target.key} on Ray")


def _predict_bytes(loaded: LoadedModel, folder: str, config: str, split: str, settings: dict[str, Any]) -> bytes:
    """On a Ray worker: :func:`predict` one split into a scratch file; its bytes."""
    with tempfile.TemporaryDirectory(prefix="imagenet-suite-predict-") as scratch:
        out = Path(scratch) / "outputs.pt"
        predict(folder, loaded, out, config=config, split=split, workers=0, progress=False, **settings)
        return out.read_bytes()


def _claim_run_folder(run_dir: Path, loaded: LoadedModel) -> None:
    """Record the model in ``run.json``; ConfigError if the folder belongs to another model's run."""
    manifest = {"model": loaded.spec, "weights": weights_digest(loaded)}
    recorded = run_dir / RUN_MANIFEST
    if recorded.is_file():
        found = json.loads(recorded.read_text())
        if found != manifest:
            raise ConfigError(
                f"{run_dir} holds the run of {found.get('model')} (weights {found.get('weights')}), not of "
                f"{manifest['model']}; choose another --out"
            )
        return
    if run_dir.exists() and not run_dir.is_dir():
        raise ConfigError(f"--out {run_dir}: is a file; expected a run folder")
    run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(recorded, _json_bytes(manifest))


def _json_bytes(value: Any) -> bytes:
    return (json.dumps(value, indent=1, allow_nan=False) + "\n").encode()


@dataclass
class _Run:
    """The settings of one run and the outputs it has computed (ImageNet val's, for the OOD sets)."""

    loaded: LoadedModel
    run_dir: Path
    device: str
    batch_size: int
    amp: bool
    features: bool
    workers: int | None
    progress: bool
    stats: DetectorStats | None = None
    id_outputs: ModelOutputs | None = None  # loaded once, for every OOD set

    def outputs_path(self, target: SuiteTarget) -> Path:
        return self.run_dir / "outputs" / f"{target.file_stem}.pt"

    def outputs(self, target: SuiteTarget) -> Path:
        """The target's outputs file, predicted unless already in the run folder."""
        path = self.outputs_path(target)
        if not path.is_file():
            if self.progress:
                print(f"predict {target.key}")
            predict(
                target.folder,
                self.loaded,
                path,
                config=target.config,
                split=target.split,
                device=self.device,
                batch_size=self.batch_size,
                features=self.features,
                amp=self.amp,
                workers=self.workers,
                progress=self.progress,
            )
        return path

    def score_target(self, target: SuiteTarget, id_target: SuiteTarget | None) -> tuple[dict | None, str]:
        """``(report dict, "")`` or ``(None, why it was skipped)``."""
        folder, config = target.folder, target.config
        applicable = applicable_metrics(folder.config_info(config)["features"], folder.protocol(config))
        if not applicable:
            return None, f"no metric family applies to config {config!r} (columns {folder.column_names(config)})"
        if folder.protocol(config).get("ood") and id_target is None:
            return None, "an OOD set is scored against the ImageNet-val outputs: add a built imagenet_val folder"
        if target.has_images:
            path = self.outputs(target)
        elif id_target is not None:
            path = self.outputs(id_target)
        else:
            return None, "no images to run the model on, and no imagenet_val folder whose outputs it could join"
        outputs = ModelOutputs.load(path, device=self.device)
        options = ScoreOptions(ood=self.ood_options(target, id_target, path))
        try:
            report = score(folder, outputs, config, target.split, options=options)
        except OutputsError as err:
            if target.has_images:
                raise
            return None, f"its rows are not the imagenet_val rows predicted ({err})"
        return report.to_dict(), ""

    def ood_options(self, target: SuiteTarget, id_target: SuiteTarget | None, ood_path: Path) -> OodOptions:
        """ID outputs (and features) of ImageNet val for the OOD families; empty options without them."""
        if id_target is None or target is id_target:
            return OodOptions()
        id_path = self.outputs(id_target)
        if self.id_outputs is None:
            self.id_outputs = ModelOutputs.load(id_path, device=self.device)
        id_outputs = self.id_outputs
        if not self.features:
            return OodOptions(id_outputs=id_outputs, stats=self.stats)
        return OodOptions(
            id_outputs=id_outputs,
            stats=self.stats,
            id_features=Embeddings.load(id_path, self.device),
            ood_features=Embeddings.load(ood_path, self.device),
        )

    def adversarial(self, id_target: SuiteTarget, rows: int, seed: int) -> dict[str, Any]:
        """FGSM/PGD accuracies on ``rows`` seeded, class-stratified val images (reused when recorded)."""
        from .adversarial import adversarial_accuracy

        path = self.run_dir / "adversarial.json"
        batch_size = min(self.batch_size, 64)  # PGD's random start is seeded per batch: part of the result's key
        key = {"requested_rows": rows, "seed": seed, "batch_size": batch_size}
        if path.is_file():
            recorded = json.loads(path.read_text())
            if all(recorded.get(name) == value for name, value in key.items()):
                return recorded
        result = adversarial_accuracy(
            self.loaded,
            id_target.folder,
            n=rows,
            seed=seed,
            config=id_target.config,
            split=id_target.split,
            device=self.device,
            batch_size=batch_size,
            progress=self.progress,
        )
        recorded = {
            **key,
            "rows": result.clean.denominator,
            "clean_accuracy": result.clean.value,
            "fgsm_accuracy": result.fgsm.value,
            "pgd_accuracy": result.pgd.value,
            "attack": "torchattacks FGSM eps=8/255; PGD eps=8/255 alpha=2/255 steps=10 random_start, inputs in [0,1]",
            "ids": list(result.ids),
        }
        atomic_write_bytes(path, _json_bytes(recorded))
        return recorded


__all__ = ["SuiteTarget", "predict_on_ray", "run_suite", "suite_targets"]
