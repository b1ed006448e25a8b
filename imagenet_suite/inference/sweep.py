"""Many models over one suite (``imagenet-suite evaluate --models``): a run folder per model, resumable, the
leaderboard at the end; locally or on a Ray cluster.

The models (:func:`read_models`): model specs, or one *models file*, one model a line::

    # a comment; blank lines are skipped, and so is the rest of a line after " #"
    timm:resnet50.a1_in1k
    torchvision:resnet50.IMAGENET1K_V1
    models/mine.py:make      weights=checkpoints/mine.safetensors
    timm:test_resnet         weights=none  seed=3
    timm:resnet50.a1_in1k    detector_stats=stats/resnet50.safetensors

``MODEL`` as ``evaluate --model`` takes it, then optionally ``weights=FILE|none`` (as ``--weights``;
``--weights`` is the default of a line without one), ``seed=N`` (with ``weights=none``) and
``detector_stats=FILE`` (the model's own ``ood fit-stats`` file, instead of ``--detector-stats``). Paths are
relative to the current folder, as on the command line. Every line is checked before any model is loaded:
a bad line, a spec or tag the library does not have, a missing model or weights file, or a model listed
twice (same spec, weights and seed) is a one-line ConfigError naming ``FILE:LINE``.

The sweep folder (``out_dir``)::

    OUT/<run folder>/                   one run folder of :mod:`~imagenet_suite.inference.evaluate` per model
    OUT/sweep.json                      the sweep manifest (:data:`SWEEP_FORMAT`), rewritten after each model:
                                        {"format", "imagenet_suite", "datasets", "models": {run folder: {"model",
                                        "weights", "seed", "entry", "weights_tag"[, "code_sha256"], "status", ...}},
                                        "failures", "leaderboard"}
    OUT/failures/<run folder>.txt       the traceback of a model that failed (removed once it succeeds)
    OUT/leaderboard/                    what ``imagenet-suite leaderboard`` writes for the run folders of the
                                        models that are done, in the models' order (written afresh at the end)

A run folder is named after its model (:func:`run_folder_name`): the spec with ``:`` written ``+``, ``/``
written ``~`` and any other character but letters, digits, ``.``, ``_`` and ``-`` percent-encoded, then
``@none-seed<N>`` for a random init or ``@sha256-<16 hex digits of the weights file>`` for a weights file,
and for a user model ``-code-<16 hex digits of its source file>`` (``code_sha256``:
:mod:`~imagenet_suite.inference.user_models`): the same model always gets the same folder, two models never
share one, and an edited model file is a new model. A status is ``done`` (with the sha256 of its suite.json
and a fingerprint of what it was computed from: the model — a user model's code included —, the dataset
builds, the options that change results and the imagenet-suite version; ``seconds``: its wall time),
``failed`` (``stage``: ``load``, ``predict`` or ``evaluate``, and ``error``, one line) or ``pending``.

Resume: a model whose manifest entry is ``done`` with the same fingerprint, whose suite.json still has
the recorded sha256 and whose outputs files still have theirs
(:func:`~imagenet_suite.inference.run_folder.check_outputs_files`; a changed one fails the model, unloaded)
is skipped (not even loaded); any other model is evaluated, and its run folder reuses the outputs it holds
(:func:`~imagenet_suite.inference.evaluate.run_suite`, each checked against its recorded sha256), so a sweep
stopped part-way predicts only what is missing when it is started again. A model that fails (to load, to predict, to
score) is recorded and reported, and the sweep goes on with the others; :class:`SweepResult` lists the
failures (the command exits non-zero). A KeyboardInterrupt stops the sweep (what is done stays recorded).

With ``executor="ray"`` the outputs are predicted as one Ray task per (model, dataset split)
(:mod:`~imagenet_suite.inference.ray_predict`: the model deserialised once per worker process, GPUs
where the cluster has them and the device is CUDA), up to :data:`MODELS_IN_FLIGHT` models at once so
the cluster stays busy; the driver loads each model (run.json needs it), writes the outputs into its run
folder, and scores it as soon as its last split is predicted, while the cluster predicts the next
models. suite.json is byte-identical to a local sweep's on the same CPU type.
"""

from __future__ import annotations

import gc
import hashlib
import json
import re
import shutil
import string
import sys
import time
import traceback
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from .. import __version__
from ..core.executors import RayExecutor
from ..errors import ConfigError, RunFolderError, param
from ..files import atomic_write_bytes, sha256_file
from ..scoring.metrics.lca_distances import hierarchy_record
from ..scoring.presentation.html_leaderboard import write_leaderboard_html
from ..scoring.summary.json_schema import SHA256, TEXT, Fields, MapOf, Text, check_json, read_json
from ..scoring.summary.leaderboard import Leaderboard, leaderboard, load_suites, write_leaderboard
from ..scoring.summary.suite_json import SUITE_JSON
from .evaluate import OpenedRun, open_run, ray_split_tasks, run_suite, write_outputs
from .models import LoadedModel, WeightsSource, load_model, resolve_weights
from .ray_predict import RayPredictions
from .run_folder import RUN_MANIFEST, check_outputs_files
from .suite_options import SuiteOptions, check_arguments, check_benchmark
from .suite_targets import dataset_build, dataset_targets
from .user_models import model_code_sha256
from .zero_shot import ZeroShotOptions

SWEEP_JSON = "sweep.json"
SWEEP_FORMAT = "imagenet-suite.sweep/1"
LEADERBOARD_DIR = "leaderboard"
FAILURES_DIR = "failures"
MODELS_IN_FLIGHT = 4
"""On Ray: models whose splits are being predicted at once (each held in the driver's memory meanwhile)."""

STATUSES = ("done", "failed", "pending")
SWEEP_SCHEMA = Fields(
    {"format": Text(choices=(SWEEP_FORMAT,)), "models": MapOf(Fields({"status": Text(choices=STATUSES)}))},
)
DONE = Fields({"fingerprint": SHA256, "suite_sha256": SHA256, "model": TEXT})
LINE_FIELDS = ("weights", "seed", "detector_stats")
PLACEMENT = ("executor", "ray_address", "num_proc", "gpus_per_task")
"""SuiteOptions fields that say where results are computed, not what they are (left out of a fingerprint)."""
PREDICT_PLACEMENT = ("workers", "progress", "transform")  # ``transform_name`` stands for ``transform``

_SAFE = frozenset(string.ascii_letters + string.digits + "._-")
_MAX_NAME = 200  # bytes: file systems allow 255
_COMMENT = re.compile(r"(^|\s)#.*$")


def run_folder_name(spec: str, weights_tag: str | None = None) -> str:
    """The run folder of ``spec`` (+ ``@weights_tag``): ``:`` becomes ``+``, ``/`` becomes ``~``, every other
    character but ASCII letters, digits, ``.``, ``_`` and ``-`` is percent-encoded (UTF-8), and so is a
    leading ``.``. Distinct specs give distinct names (the encoding can be undone); a name over 200 bytes is
    cut and ends with ``%%`` and 16 hex digits of the whole name's sha256.

    Example:
        >>> run_folder_name("timm:resnet50.a1_in1k")
        'timm+resnet50.a1_in1k'
        >>> run_folder_name("models/my net.py:make", "none-seed3")
        'models~my%20net.py+make@none-seed3'
        >>> run_folder_name("a+b:c"), run_folder_name("a:b:c")
        ('a%2Bb+c', 'a+b+c')
    """
    encoded = []
    for char in spec:
        if char in _SAFE:
            encoded.append(char)
        else:
            encoded.append({":": "+", "/": "~"}.get(char) or "".join(f"%{byte:02X}" for byte in char.encode()))
    if encoded and encoded[0] == ".":
        encoded[0] = "%2E"
    name = "".join(encoded) + (f"@{weights_tag}" if weights_tag else "")
    if len(name) > _MAX_NAME:
        name = name[: _MAX_NAME - 18] + "%%" + hashlib.sha256(name.encode()).hexdigest()[:16]
    return name


@dataclass(frozen=True)
class ModelEntry:
    """One model of a sweep, checked (:meth:`make`): ``spec``, ``weights`` and ``seed`` as
    :func:`~imagenet_suite.inference.models.load_model` takes them, ``where`` it was given (``zoo.txt:3``,
    or the spec), its run folder's name, the weights it selects and, for a user model, the sha256 of its
    source file (:func:`~imagenet_suite.inference.user_models.model_code_sha256`)."""

    spec: str
    weights: str | None
    seed: int
    where: str
    run_name: str
    source: WeightsSource
    zero_shot: ZeroShotOptions | None = None
    detector_stats: str | None = None
    code_sha256: str | None = None

    def options(self, options: SuiteOptions) -> SuiteOptions:
        """The suite options of this model: ``options`` with its own ``detector_stats`` file, if it names one."""
        return options if self.detector_stats is None else replace(options, detector_stats=self.detector_stats)

    @classmethod
    def make(
        cls,
        spec: str,
        weights: str | Path | None = None,
        seed: int = 0,
        where: str = "",
        zero_shot: ZeroShotOptions | None = None,
    ) -> ModelEntry:
        """The entry of ``spec``; ConfigError naming ``models`` and ``where`` for a spec or tag the library
        lacks, a model file or weights file that does not exist (nothing is loaded). ``zero_shot``: the head
        of an ``open_clip:`` model (ignored for other models; None: ``ZeroShotOptions()``)."""
        where = where or spec
        prefix = f"{param('models')} {where}: "
        try:
            source = resolve_weights(spec, weights, seed)
        except ConfigError as err:
            raise ConfigError(prefix + err.args[0]) from err
        module = spec.rpartition(":")[0]
        if module.endswith(".py") and not Path(module).is_file():
            raise ConfigError(prefix + f"model file {module} does not exist")
        tag = None
        if source.kind == "none":
            tag = f"none-seed{seed}"
        elif source.kind == "file":
            path = Path(str(weights))
            if not path.is_file():
                raise ConfigError(prefix + f"weights file {path} does not exist")
            tag = f"sha256-{sha256_file(path)[:16]}"
        code = model_code_sha256(spec) if source.library is None else None
        if code is not None:
            tag = f"{tag}-code-{code[:16]}" if tag else f"code-{code[:16]}"
        chosen = None if weights is None else str(weights)
        head = (zero_shot or ZeroShotOptions()) if source.library == "open_clip" else None
        return cls(spec, chosen, seed, where, run_folder_name(spec, tag), source, head, code_sha256=code)

    def load(self) -> LoadedModel:
        return load_model(self.spec, self.weights, seed=self.seed, zero_shot_options=self.zero_shot)

    def record(self) -> dict[str, Any]:
        """Its part of sweep.json: ``model``, ``weights``, ``seed`` (random init only), ``entry``,
        ``weights_tag``, ``code_sha256`` (user models only)."""
        seed = self.seed if self.source.kind == "none" else None
        return {
            "model": self.spec,
            "weights": self.weights,
            "seed": seed,
            "entry": self.where,
            "weights_tag": self.source.tag_text(),
            **({"zero_shot": _head_choice(self.zero_shot)} if self.zero_shot is not None else {}),
            **({"detector_stats": self.detector_stats} if self.detector_stats is not None else {}),
            **({"code_sha256": self.code_sha256} if self.code_sha256 is not None else {}),
        }


def _head_choice(options: ZeroShotOptions) -> dict[str, Any]:
    """What of an open_clip model's head options changes its outputs (the prompts by their templates)."""
    prompts = options.parsed
    return {
        "prompts": prompts.text,
        "templates": list(prompts.templates),
        "class_names": options.class_names,
        "logit_scale": options.logit_scale,
        "probabilities": options.probabilities,
    }


def read_models(
    models: Sequence[str | Path], weights: str | None = None, seed: int = 0, zero_shot: ZeroShotOptions | None = None
) -> list[ModelEntry]:
    """The models of a sweep: one models file (a single value that is a file, or holds no ``:``), else
    model specs; ``weights`` and ``seed`` for each that names none (see the module docstring);
    ``zero_shot``: the head of every ``open_clip:`` model.

    Example:
        >>> [entry.run_name for entry in read_models(["timm:test_resnet", "timm:test_vit"], "none")]
        ['timm+test_resnet@none-seed0', 'timm+test_vit@none-seed0']
    """
    if not models:
        raise ConfigError(f"{param('models')}: no models given")
    first = str(models[0])
    if len(models) == 1 and (Path(first).is_file() or ":" not in first):
        return read_models_file(first, weights, seed, zero_shot)
    return _distinct([ModelEntry.make(str(spec), weights, seed, zero_shot=zero_shot) for spec in models])


def read_models_file(
    path: str | Path, weights: str | None = None, seed: int = 0, zero_shot: ZeroShotOptions | None = None
) -> list[ModelEntry]:
    """The models of a models file (see the module docstring); ConfigError naming ``FILE:LINE``."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as err:
        raise ConfigError(
            f"{param('models')} {path}: no such models file (and no model spec: a spec holds a ':')"
        ) from err
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{param('models')} {path}: not a readable UTF-8 models file ({err})") from err
    entries = [
        _line_entry(line, f"{path}:{number}", weights, seed, zero_shot)
        for number, line in enumerate(text.splitlines(), 1)
        if _COMMENT.sub("", line).strip()
    ]
    if not entries:
        raise ConfigError(f"{param('models')} {path}: no models (every line is blank or a # comment)")
    return _distinct(entries)


def _line_entry(line: str, where: str, weights: str | None, seed: int, zero_shot: ZeroShotOptions | None) -> ModelEntry:
    spec, *items = _COMMENT.sub("", line).split()
    given: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or key not in LINE_FIELDS or not value:
            raise ConfigError(
                f"{param('models')} {where}: {item!r} is not weights=FILE|none, seed=N or detector_stats=FILE "
                "(a line is: MODEL [weights=FILE|none] [seed=N] [detector_stats=FILE])"
            )
        if key in given:
            raise ConfigError(f"{param('models')} {where}: {key}= is given twice")
        given[key] = value
    chosen = given.get("weights", weights)
    if "seed" in given:
        if chosen != "none":
            raise ConfigError(f"{param('models')} {where}: seed= is only used with weights=none (a random init)")
        if not re.fullmatch(r"[0-9]+", given["seed"]):
            raise ConfigError(f"{param('models')} {where}: seed must be an integer >= 0, got {given['seed']!r}")
    entry = ModelEntry.make(spec, chosen, int(given.get("seed", seed)), where, zero_shot)
    stats = given.get("detector_stats")
    if stats is not None and not Path(stats).is_file():
        raise ConfigError(f"{param('models')} {where}: detector_stats file {stats} does not exist")
    return entry if stats is None else replace(entry, detector_stats=stats)


def _distinct(entries: list[ModelEntry]) -> list[ModelEntry]:
    seen: dict[str, ModelEntry] = {}
    for entry in entries:
        if entry.run_name in seen:
            raise ConfigError(
                f"{param('models')} {entry.where}: the same model as {seen[entry.run_name].where} (spec, weights "
                "and seed); list each model once"
            )
        seen[entry.run_name] = entry
    return entries


@dataclass
class SweepResult:
    """What :func:`run_sweep` did: sweep.json's content (``record``), the models that failed in this run
    (their exceptions by run folder), the leaderboard of the models done (None when none is) and the
    leaderboard's files (``leaderboard.md`` last)."""

    record: dict[str, Any]
    errors: dict[str, BaseException] = field(default_factory=dict)
    leaderboard: Leaderboard | None = None
    written: list[Path] = field(default_factory=list)


def run_sweep(
    models: Sequence[ModelEntry],
    datasets: Sequence[str | Path],
    out_dir: str | Path,
    options: SuiteOptions | None = None,
) -> SweepResult:
    """Evaluate each of ``models`` (:func:`read_models`) on ``datasets`` into its run folder under ``out_dir``,
    then write the leaderboard of those done (see the module docstring).

    ``options``: as for :func:`~imagenet_suite.inference.evaluate.run_suite`, for every model; with
    ``executor="ray"`` every missing outputs file is one Ray task. The arguments, the datasets and
    ``out_dir`` are checked before any model is loaded (ConfigError / RunFolderError, one line).

    Example:
        >>> from imagenet_suite.inference.sweep import read_models, run_sweep
        >>> result = run_sweep(read_models(["zoo.txt"]), ["datasets/imagenet_val-1.0.0"], "runs/zoo")  # doctest: +SKIP
        >>> result.errors, result.written[-1]                                     # doctest: +SKIP
        ({}, PosixPath('runs/zoo/leaderboard/leaderboard.md'))
    """
    options = SuiteOptions() if options is None else options
    sweep = _Sweep(list(models), datasets, Path(out_dir), options)
    bar = tqdm(total=len(sweep.entries), unit="model", desc="sweep", disable=not sweep.progress)
    try:
        todo = [entry for entry in sweep.entries if not sweep.skip(entry, bar)]
        if options.executor == "ray":
            _sweep_on_ray(sweep, todo, bar)
        else:
            for entry in todo:
                _evaluate_locally(sweep, entry)
                bar.update()
    finally:
        bar.close()
    return sweep.finish()


class _Sweep:
    """The state of a sweep: its checked arguments, the manifest found and the records of this run."""

    def __init__(self, entries: list[ModelEntry], datasets: Sequence[str | Path], out: Path, options: SuiteOptions):
        _check_sweep_folder(out)
        check_arguments(out, options)
        _distinct(entries)
        base = dataset_targets(datasets)
        check_benchmark(base, options.benchmark)
        self.entries, self.datasets, self.out, self.options = entries, list(datasets), out, options
        self.progress = options.predict.progress
        self.folders = sorted({target.folder.path.resolve() for target in base})
        inputs = {
            "imagenet_suite": __version__,
            "datasets": [dataset_build(target) for target in base],
            "options": result_options(options),
        }
        self.fingerprints = {entry.run_name: _fingerprint(entry, inputs) for entry in entries}
        self.previous = _read_manifest(out)
        self.records: dict[str, dict[str, Any]] = {}
        self.errors: dict[str, BaseException] = {}

    def run_dir(self, entry: ModelEntry) -> Path:
        return self.out / entry.run_name

    def skip(self, entry: ModelEntry, bar) -> bool:
        """Whether ``entry`` needs no work now: done with these inputs (its record carried over), or done but
        with an outputs file changed since (recorded as failed, unloaded: evaluating it again would refuse the
        run folder alike); the bar moved on."""
        found = self.previous.get(entry.run_name) or {}
        suite = self.run_dir(entry) / SUITE_JSON
        done = (
            found.get("status") == "done"
            and found.get("fingerprint") == self.fingerprints[entry.run_name]
            and suite.is_file()
            and sha256_file(suite) == found.get("suite_sha256")
        )
        if done:
            try:
                check_outputs_files(self.run_dir(entry))
            except RunFolderError as err:
                self.failed(entry, "evaluate", err)
                bar.update()
                return True
            self.records[entry.run_name] = found
            self.log(entry, "done before (skipped)")
            bar.update()
        return done

    def load(self, entry: ModelEntry) -> LoadedModel | None:
        """The model, or None when it failed to load (recorded)."""
        if self.progress and entry.source.loaded:
            print(entry.source.statement(), file=sys.stderr, flush=True)
        try:
            return entry.load()
        except Exception as err:
            self.failed(entry, "load", err)
            return None

    def done(self, entry: ModelEntry, started: float, **extra: Any) -> None:
        seconds = time.monotonic() - started
        self.records[entry.run_name] = {
            **entry.record(),
            "status": "done",
            "fingerprint": self.fingerprints[entry.run_name],
            "suite_sha256": sha256_file(self.run_dir(entry) / SUITE_JSON),
            "seconds": round(seconds, 3),
            **extra,
        }
        (self.out / FAILURES_DIR / f"{entry.run_name}.txt").unlink(missing_ok=True)
        self.write()
        self.log(entry, f"done in {seconds:.1f} s")

    def failed(self, entry: ModelEntry, stage: str, err: BaseException) -> None:
        line = _one_line(err)
        self.records[entry.run_name] = {**entry.record(), "status": "failed", "stage": stage, "error": line}
        self.errors[entry.run_name] = err
        failures = self.out / FAILURES_DIR
        failures.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(failures / f"{entry.run_name}.txt", "".join(traceback.format_exception(err)).encode())
        self.write()
        self.log(entry, f"FAILED ({stage}): {line}")

    def log(self, entry: ModelEntry, text: str) -> None:
        if self.progress:
            number = self.entries.index(entry) + 1
            tqdm.write(f"[{number}/{len(self.entries)}] {entry.spec} ({entry.run_name}): {text}", file=sys.stderr)

    def manifest(self, leaderboard: str | None = None) -> dict[str, Any]:
        models = {
            entry.run_name: self.records.get(entry.run_name) or {**entry.record(), "status": "pending"}
            for entry in self.entries
        }
        failures = [
            {"run_folder": name, **{key: record[key] for key in ("model", "entry", "stage", "error")}}
            for name, record in models.items()
            if record["status"] == "failed"
        ]
        return {
            "format": SWEEP_FORMAT,
            "imagenet_suite": __version__,
            "datasets": [str(Path(path).resolve()) for path in self.datasets],
            "models": models,
            "failures": failures,
            "leaderboard": leaderboard,
        }

    def write(self, leaderboard: str | None = None) -> dict[str, Any]:
        record = self.manifest(leaderboard)
        self.out.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.out / SWEEP_JSON, (json.dumps(record, indent=1) + "\n").encode())
        return record

    def finish(self) -> SweepResult:
        """The leaderboard of the models done, written afresh; the final sweep.json."""
        done = [
            self.run_dir(entry)
            for entry in self.entries
            if self.records.get(entry.run_name, {}).get("status") == "done"
        ]
        folder = self.out / LEADERBOARD_DIR
        if folder.is_dir():
            shutil.rmtree(folder)
        if not done:
            return SweepResult(self.write(), self.errors)
        suites = load_suites(done)  # read once: the tables and the page share them
        board = leaderboard(suites, folders=dict(zip(suites, map(Path, done), strict=True)))
        written = write_leaderboard(board, folder)
        write_leaderboard_html(board, suites, folder, done)
        record = self.write(str(written[-1].relative_to(self.out)))
        return SweepResult(record, self.errors, board, written)


def result_options(options: SuiteOptions) -> dict[str, Any]:
    """What of ``options`` a run folder's results depend on (JSON-ready): every field but where and how
    fast they are computed (:data:`PLACEMENT`, :data:`PREDICT_PLACEMENT`), files by their sha256, the
    hierarchy by its record."""
    values = {item.name: getattr(options, item.name) for item in fields(options) if item.name not in PLACEMENT}
    values["predict"] = {
        item.name: getattr(options.predict, item.name)
        for item in fields(options.predict)
        if item.name not in PREDICT_PLACEMENT
    }
    values["attacks"] = [spec.label for spec in options.attacks]
    if options.detector_stats is not None:
        values["detector_stats"] = sha256_file(options.detector_stats)
    values["hierarchy"] = hierarchy_record(options.hierarchy)
    return json.loads(json.dumps(values, default=str))


def _fingerprint(entry: ModelEntry, inputs: dict[str, Any]) -> str:
    model = {key: value for key, value in entry.record().items() if key != "entry"}
    if entry.detector_stats is not None:
        model["detector_stats"] = sha256_file(entry.detector_stats)
    text = json.dumps({**inputs, "model": model, "run_folder": entry.run_name}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _check_sweep_folder(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{param('out_dir')} {out}: is a file; expected a sweep folder")
    if (out / RUN_MANIFEST).is_file():
        raise ConfigError(
            f"{param('out_dir')} {out}: holds the run folder of one model ({RUN_MANIFEST}); a sweep writes a run "
            f"folder per model under {param('out_dir')}: choose another"
        )


def _read_manifest(out: Path) -> dict[str, dict[str, Any]]:
    """The model records of an existing sweep.json (checked: RunFolderError naming it), else none."""
    path = out / SWEEP_JSON
    if not path.is_file():
        return {}
    found = read_json(path, "sweep.json of `imagenet-suite evaluate --models`")
    check_json(found, SWEEP_SCHEMA, path)
    for name, record in found["models"].items():
        if record["status"] == "done":
            check_json(record, DONE, f"{path} (models[{json.dumps(name)}])")
    return found["models"]


def _one_line(err: BaseException) -> str:
    return f"{type(err).__name__}: {' '.join(str(err).split())}"[:500]


def _release(device: str) -> None:
    """On a GPU, give back the memory of the model just evaluated before the next is loaded (on the CPU,
    dropping the last reference is enough)."""
    if device.startswith("cuda"):
        gc.collect()
        torch.cuda.empty_cache()


def _evaluate_locally(sweep: _Sweep, entry: ModelEntry) -> None:
    started = time.monotonic()
    loaded = sweep.load(entry)
    if loaded is None:
        return
    try:
        run_suite(loaded, sweep.datasets, sweep.run_dir(entry), entry.options(sweep.options))
    except Exception as err:
        sweep.failed(entry, "evaluate", err)
    else:
        sweep.done(entry, started)
    finally:
        del loaded
        _release(str(sweep.options.predict.device))


@dataclass
class _Flight:
    """A model whose splits are being predicted on Ray."""

    entry: ModelEntry
    loaded: LoadedModel
    opened: OpenedRun
    started: float
    tasks: int
    workers: set[int] = field(default_factory=set)
    loads: int = 0

    @property
    def name(self) -> str:
        return self.entry.run_name


def _sweep_on_ray(sweep: _Sweep, todo: list[ModelEntry], bar) -> None:
    """Predict the missing outputs of ``todo`` as Ray tasks, up to :data:`MODELS_IN_FLIGHT` models at once,
    scoring each model here once its last split is written."""
    options = sweep.options
    local = replace(options, executor="local", ray_address=None, gpus_per_task=1.0)
    with RayExecutor(num_cpus=options.num_proc, address=options.ray_address) as cluster:
        cluster.check_visible(sweep.folders)
        tasks = RayPredictions(cluster.ray, str(options.predict.device), options.gpus_per_task)
        queue, flights = deque(todo), {}
        try:
            while queue or flights:
                while queue and len(flights) < MODELS_IN_FLIGHT and len(tasks.pending) < 2 * tasks.slots:
                    flight = _launch(sweep, queue.popleft(), tasks, local)
                    if flight is not None and flight.tasks:
                        flights[flight.name] = flight
                    else:
                        _land(sweep, flight, local, bar)
                if flights:
                    _receive(sweep, tasks, flights, local, bar)
        finally:
            tasks.cancel()


def _launch(sweep: _Sweep, entry: ModelEntry, tasks: RayPredictions, local: SuiteOptions) -> _Flight | None:
    """Load ``entry``, claim its run folder and submit a task per missing outputs file (None: it failed)."""
    started = time.monotonic()
    loaded = sweep.load(entry)
    if loaded is None:
        return None
    try:
        opened = open_run(loaded, sweep.datasets, sweep.run_dir(entry), entry.options(local))
        todo = opened.missing_outputs()
        for target in todo:
            opened.run.record_outputs(target)
        split_tasks = ray_split_tasks(opened.run, todo)
        tasks.submit(loaded, [((target, task), task) for target, task in split_tasks], entry.run_name)
    except Exception as err:
        sweep.failed(entry, "evaluate", err)
        return None
    return _Flight(entry, loaded, opened, started, len(split_tasks))


def _receive(sweep: _Sweep, tasks: RayPredictions, flights: dict[str, _Flight], local: SuiteOptions, bar) -> None:
    """Take the next finished task: write its outputs, or fail its model (its other tasks cancelled)."""
    finished = tasks.next_finished()
    flight = flights[finished.owner]
    if finished.error is not None:
        tasks.cancel(finished.owner)
        del flights[flight.name]
        sweep.failed(flight.entry, "predict", finished.error)
        bar.update()
        return
    write_outputs(flight.opened.run, *finished.item, finished.data)
    flight.workers.add(finished.worker)
    flight.loads += finished.loaded
    if finished.owner not in tasks.owners():
        del flights[flight.name]
        _land(sweep, flight, local, bar)


def _land(sweep: _Sweep, flight: _Flight | None, local: SuiteOptions, bar) -> None:
    """Score a model whose outputs are all written (None: one that failed before any task)."""
    if flight is not None:
        entry = flight.entry
        try:
            run_suite(flight.loaded, sweep.datasets, sweep.run_dir(entry), entry.options(local))
        except Exception as err:
            sweep.failed(entry, "evaluate", err)
        else:
            ray = {"tasks": flight.tasks, "workers": len(flight.workers), "model_loads": flight.loads}
            sweep.done(entry, flight.started, ray=ray)
        finally:
            flight.loaded = None
            _release(str(sweep.options.predict.device))
    bar.update()


__all__ = [
    "FAILURES_DIR",
    "LEADERBOARD_DIR",
    "MODELS_IN_FLIGHT",
    "SWEEP_FORMAT",
    "SWEEP_JSON",
    "ModelEntry",
    "SweepResult",
    "read_models",
    "read_models_file",
    "result_options",
    "run_folder_name",
    "run_sweep",
]
