"""Adversarial robustness (Beyond Accuracy, Hesse et al. 2025, Eqs. 3-5): a model's accuracy under FGSM
and PGD (and AutoAttack), model in the loop.

Its code (visinf/beyond-accuracy) runs ``torchattacks==3.5.1`` with ``torchattacks.FGSM(model, eps=8/255)`` and
``torchattacks.PGD(model, eps=8/255, alpha=2/255, steps=10, random_start=True)`` (L-inf, untargeted,
cross-entropy) and reports ``AR = GM(FGSM-A / A, PGD-A / A)``, where A is the clean accuracy on the
same images. The attacks here are exactly those calls. Where they perturb is the attack convention
(``AttackOptions.attack_convention``, :mod:`~imagenet_suite.inference.attack_space`): ``hesse2025`` (the
default) attacks the normalised tensors the model's eval transform yields, as their code does, clamped to
[0, 1] by torchattacks: the scale of QUBA's μ/σ; ``pixel`` attacks in [0, 1] pixel space, the model's
Normalize inside the attacked module (:class:`PixelSpaceModel`), so eps, alpha and the clamp are in pixels.
An image is read as the model's own eval preprocessing *without* its final Normalize (resize, crop,
to-tensor; the dataset protocol's steps first, as in ``predict``); ``hesse2025`` applies that Normalize
on the device (the same float32 operations).

Rows: a seeded, class-stratified subset of ``n`` rows of the split (:func:`stratified_subset`; all
rows when ``n`` is at least the split's size), in dataset order, cut into batches of ``batch_size``.
Images are read by ``predict``'s reader (:class:`~imagenet_suite.inference.predict.BatchImages`)
through DataLoader workers.

Other attacks (``AttackOptions.attacks``): AutoAttack "standard" under L∞, L2 and L1, Heuillet et al.
2025's adversarial perturbation types (:mod:`imagenet_suite.inference.autoattack`), on the same rows and
batches. Each batch is predicted clean, then attacked by each attack in turn.

Resume (``AttackOptions.resume``, :mod:`~imagenet_suite.inference.resume`): each finished batch's correct
flags are written at once beside a manifest of what produced them; a run with the same manifest attacks
only the batches it lacks.

Determinism: PGD's random start draws from torch's global RNG. Batch ``i`` is attacked under
``torch.manual_seed(seed + i)`` inside ``torch.random.fork_rng`` (the caller's RNG state is kept), and
AutoAttack with ``seed + i``, so a result depends on ``seed`` and ``batch_size`` but not on the number
of workers, on resuming or on earlier RNG use. (Beyond Accuracy's ``eval.py`` seeds torch once per
process, so its random starts depend on all that was drawn before; on one batch seeded just before, the
draw is the same.)
On CUDA, bit-identical reruns also need deterministic kernels (``torch.use_deterministic_algorithms``);
otherwise a rare gradient sign may differ.

Clean accuracy 0: both ratios are undefined and :attr:`AdversarialResult.adversarial_robustness` is
NaN (as are ``fgsm_ratio`` and ``pgd_ratio``). A zero attack accuracy with a non-zero clean accuracy
gives AR = 0, like ``scipy.stats.mstats.gmean`` in Beyond Accuracy's code.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import nn
from torch.utils.data import DataLoader
from tqdm.auto import tqdm

from ..dataset.folder import SELF_HASH, DatasetFolder
from ..errors import ConfigError, InvalidSourceData, param
from ..scoring.metrics.classification import Fraction
from ..scoring.outputs import load_torch_file
from ..scoring.threads import loader_workers, single_threaded_worker
from .adversarial_rows import ids_and_labels, stratified_subset
from .attack_space import HESSE2025, PIXEL, PixelSpaceModel, check_attack_convention, pixel_space
from .autoattack import (
    DEFAULT_ATTACKS,
    FGSM,
    ITERATIONS,
    PGD,
    QUERIES,
    AttackSpec,
    AutoAttackRun,
    check_budget,
    parse_attacks,
)
from .models import LoadedModel, weights_digest
from .predict import BatchImages, Unit, check_loader_arguments, protocol_transform, split_units
from .resume import drop_if_empty, missing_chunks, partial_folder, remove_partial, write_chunk

_LOG = logging.getLogger(__name__)

EPS = 8 / 255
ALPHA = 2 / 255
STEPS = 10


@dataclass(frozen=True, eq=False)
class AdversarialResult:
    """Clean accuracy and each attack's accuracy of a model on the same rows, with per-row correct flags.

    ``ids`` are the attacked rows (dataset order); ``labels`` their 1000-way labels; ``clean_correct`` and
    ``correct[label]`` (per attack, its :attr:`~imagenet_suite.inference.autoattack.AttackSpec.label`:
    ``fgsm``, ``pgd``, ``autoattack-linf``, ...) are bool tensors aligned with ``ids``. The FGSM/PGD
    settings (``eps``, ``alpha``, ``steps``, ``random_start``; in units of the tensor attacked, which
    ``attack_convention`` says: ``hesse2025`` the normalised one, ``pixel`` [0, 1] pixels), each
    AutoAttack's record (``autoattack[label]``: norm, eps, version, iterations, queries, library; always in
    pixels) and what the random starts depend on (``seed``, ``batch_size``) label the result.
    """

    ids: tuple[str, ...]
    labels: torch.Tensor
    clean_correct: torch.Tensor
    correct: Mapping[str, torch.Tensor]
    eps: float
    alpha: float
    steps: int
    random_start: bool
    seed: int
    batch_size: int
    autoattack: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    attack_convention: str = HESSE2025

    @property
    def clean(self) -> Fraction:
        """Correct clean rows / rows."""
        return _fraction(self.clean_correct)

    def accuracy(self, label: str) -> Fraction:
        """Correct rows under attack ``label`` / rows (KeyError when it was not run)."""
        return _fraction(self.correct[label])

    @property
    def fgsm(self) -> Fraction:
        return self.accuracy(FGSM)

    @property
    def pgd(self) -> Fraction:
        return self.accuracy(PGD)

    @property
    def fgsm_correct(self) -> torch.Tensor:
        return self.correct[FGSM]

    @property
    def pgd_correct(self) -> torch.Tensor:
        return self.correct[PGD]

    @property
    def fgsm_ratio(self) -> float:
        """FGSM-A / A (NaN when clean accuracy is 0)."""
        return _ratio(self.fgsm, self.clean)

    @property
    def pgd_ratio(self) -> float:
        """PGD-A / A (NaN when clean accuracy is 0)."""
        return _ratio(self.pgd, self.clean)

    @property
    def adversarial_robustness(self) -> float:
        """Beyond Accuracy's AR = GM(FGSM-A / A, PGD-A / A); NaN when clean accuracy is 0 or either attack
        was not run."""
        if FGSM not in self.correct or PGD not in self.correct:
            return math.nan
        return adversarial_robustness(self.clean.value, self.fgsm.value, self.pgd.value)

    def summary(self) -> dict[str, float | int | bool | str]:
        """The scalars (accuracies; with FGSM and PGD their ratios and AR) and the attack settings, for a report."""
        found: dict[str, float | int | bool | str] = {"rows": len(self.ids), "clean_accuracy": self.clean.value}
        found |= {f"{label}_accuracy": self.accuracy(label).value for label in self.correct}
        if FGSM in self.correct and PGD in self.correct:
            found |= {
                "fgsm_ratio": self.fgsm_ratio,
                "pgd_ratio": self.pgd_ratio,
                "adversarial_robustness": self.adversarial_robustness,
            }
        return found | {
            "eps": self.eps,
            "alpha": self.alpha,
            "steps": self.steps,
            "random_start": self.random_start,
            "seed": self.seed,
            "batch_size": self.batch_size,
            "attack_convention": self.attack_convention,
        }


def _fraction(flags: torch.Tensor) -> Fraction:
    return Fraction(int(flags.sum()), len(flags))


def _ratio(attacked: Fraction, clean: Fraction) -> float:
    return attacked.value / clean.value if clean.value > 0 else math.nan


def adversarial_robustness(clean: float, fgsm: float, pgd: float) -> float:
    """``sqrt((fgsm / clean) * (pgd / clean))``, Beyond Accuracy's AR from the three accuracies.

    NaN when ``clean`` is 0 (or NaN): the ratios are undefined. A zero ratio gives 0.
    """
    if not clean > 0:
        return math.nan
    return math.sqrt((fgsm / clean) * (pgd / clean))


@dataclass(frozen=True)
class AttackOptions:
    """Which images :func:`adversarial_accuracy` attacks, with which attacks, and how it runs.

    Checked when made (ConfigError naming the field).

    Attributes:
        n: rows of the seeded class-stratified subset to attack, at least 1 (all rows if the split has
            fewer).
        seed: seed of the subset, of the DataLoader workers and (plus the batch index) of PGD's random
            start and AutoAttack's seed, 0 or more.
        batch_size: images per attack batch, 1 to 65,536. The random starts are seeded per batch, so it
            is part of what a result depends on.
        attacks: the attacks, in the order they run on each batch: names or ``name:eps=VALUE``
            (:func:`~imagenet_suite.inference.autoattack.parse_attacks`; ``fgsm``, ``pgd``,
            ``autoattack-linf``, ``autoattack-l2``, ``autoattack-l1``), default ``("fgsm", "pgd")``.
            Stored as :class:`~imagenet_suite.inference.autoattack.AttackSpec`.
        eps: the L∞ radius of FGSM and PGD (default 8/255), in units of the tensor ``attack_convention``
            attacks: normalised values (``hesse2025``) or [0, 1] pixels (``pixel``); in [0, 1].
        alpha: PGD's step size, in the same units (default 2/255).
        steps: PGD's number of steps, 0 or more (default 10).
        attack_convention: where FGSM and PGD perturb (:mod:`~imagenet_suite.inference.attack_space`):
            ``hesse2025`` (default), the normalised tensors the model's eval transform yields, clamped to
            [0, 1], as Beyond Accuracy's code (the scale of QUBA's μ/σ); ``pixel``, [0, 1] pixel space with
            the model's Normalize inside the attacked module. AutoAttack always runs in pixels.
        autoattack_iterations: AutoAttack's APGD-CE, APGD-T and FAB-T iterations (standard: 100; at
            least 5). Fewer: a quick, weaker check, recorded with the result.
        autoattack_queries: AutoAttack's Square queries (standard: 5000; at least 1).
        device: where the model and the attacks run (``"cpu"``, ``"cuda"``, ... or a ``torch.device``).
        workers: DataLoader workers reading the images, 0 to 512; None: ``min(4, CPUs)``. Both bounds:
            :data:`imagenet_suite.limits.LIMITS`.
        resume: a folder that keeps each finished batch's correct flags (:mod:`~imagenet_suite.inference.resume`):
            a run stopped part-way computes only the batches it lacks when run again with the same
            settings; removed when the run finishes. None: nothing is kept.
        progress: show a progress bar (stderr).

    Example:
        >>> from imagenet_suite.inference.adversarial import AttackOptions
        >>> AttackOptions(n=1000, seed=1).eps == 8 / 255
        True
        >>> [spec.label for spec in AttackOptions(n=10, attacks=("pgd", "autoattack-l2:eps=0.5")).attacks]
        ['pgd', 'autoattack-l2:eps=0.5']
        >>> AttackOptions(n=0)
        Traceback (most recent call last):
        ...
        imagenet_suite.errors.ConfigError: n must be at least 1 (rows to attack), got 0
    """

    n: int
    seed: int = 0
    batch_size: int = 64
    attacks: tuple[AttackSpec | str, ...] = DEFAULT_ATTACKS
    eps: float = EPS
    alpha: float = ALPHA
    steps: int = STEPS
    attack_convention: str = HESSE2025
    autoattack_iterations: int = ITERATIONS
    autoattack_queries: int = QUERIES
    device: str | torch.device = "cpu"
    workers: int | None = None
    resume: str | Path | None = None
    progress: bool = True

    def __post_init__(self) -> None:
        for name, minimum, rule in (
            ("n", 1, "at least 1 (rows to attack)"),
            ("seed", 0, "0 or more"),
            ("steps", 0, "0 or more"),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise ConfigError(f"{param(name)} must be {rule}, got {value!r}")
        check_loader_arguments(self.workers, self.batch_size)
        for name in ("eps", "alpha"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise ConfigError(f"{param(name)} must be a number in [0, 1], got {value!r}")
        check_attack_convention(self.attack_convention)
        object.__setattr__(self, "attacks", parse_attacks(self.attacks))
        check_budget(self.autoattack_iterations, self.autoattack_queries)

    @property
    def autoattacks(self) -> dict[str, AutoAttackRun]:
        """The AutoAttack runs among :attr:`attacks`, by label."""
        return {
            spec.label: AutoAttackRun(spec, self.autoattack_iterations, self.autoattack_queries)
            for spec in self.attacks
            if spec.norm is not None
        }


def adversarial_accuracy(
    loaded: LoadedModel,
    dataset: str | Path | DatasetFolder,
    options: AttackOptions,
    *,
    config: str | None = None,
    split: str | None = None,
) -> AdversarialResult:
    """Clean accuracy and each attack's accuracy of ``loaded`` on a seeded class-stratified subset of
    ``options.n`` rows.

    FGSM is ``torchattacks.FGSM(m, eps=eps)``, PGD ``torchattacks.PGD(m, eps=eps, alpha=alpha,
    steps=steps, random_start=True)``, AutoAttack its authors' ``AutoAttack(m, norm, eps,
    version='standard')`` (:mod:`~imagenet_suite.inference.autoattack`), with the settings of ``options``
    (:class:`AttackOptions`). FGSM and PGD: under ``attack_convention="hesse2025"`` ``m`` is the model
    itself and the images its eval transform's normalised tensors (Beyond Accuracy's code); under
    ``"pixel"`` ``m`` is the model behind its own Normalize (:class:`PixelSpaceModel`) and the images
    [0, 1] pixels, as for AutoAttack always. Labels are the dataset's 1000-way ``label`` column. Each batch is predicted clean, then attacked by
    each attack in turn. The model is in eval mode and its parameters do not require grad during the run
    (both restored afterwards); gradients are taken with respect to the images only. With
    ``options.resume`` each finished batch's flags are kept there until the run finishes.

    Example:
        >>> from imagenet_suite.inference import load_model
        >>> from imagenet_suite.inference.adversarial import AttackOptions, adversarial_accuracy
        >>> result = adversarial_accuracy(load_model("timm:resnet50"), "datasets/imagenet_val-1.0.0",
        ...                               AttackOptions(n=1000, device="cuda"))               # doctest: +SKIP
        >>> result.clean.value, result.fgsm.value, result.pgd.value                           # doctest: +SKIP
    """
    if not isinstance(options, AttackOptions):
        raise ConfigError(f"{param('options')} must be an AttackOptions, got {type(options).__name__}")
    autoattacks = options.autoattacks
    records = {label: run.record() for label, run in autoattacks.items()}  # the library is installed
    folder = dataset if isinstance(dataset, DatasetFolder) else DatasetFolder(dataset)
    config = folder.resolve_config(config)
    split = folder.resolve_split(config, split)
    ids, labels = ids_and_labels(folder, config, split)
    pixels_needed = options.attack_convention == PIXEL or bool(autoattacks)
    pixel_loaded, mean, std = pixel_space(loaded, required=pixels_needed)
    positions = stratified_subset(labels.tolist(), options.n, options.seed)
    if len(positions) < options.n:
        _LOG.warning(
            "adversarial: %s images to attack were asked for (--adversarial); %s %s/%s has %s: all of them are "
            "attacked (suite.json: summary.adversarial rows and requested_rows)",
            f"{options.n:,}",
            folder.path.name,
            config,
            split,
            f"{len(positions):,}",
        )
    units = split_units(folder, config, split, options.batch_size, positions)
    chosen_ids = [ids[p] for p in positions]
    chosen_labels = labels[positions]
    flags = torch.zeros(1 + len(options.attacks), len(positions), dtype=torch.bool)
    partial = Path(options.resume) if options.resume is not None else None
    todo, fresh = units, False
    if partial is not None:
        fresh = partial_folder(partial, _manifest(loaded, folder, (config, split), options, records), "resume")
        todo = _restore(partial, units, chosen_ids, options, flags)
    try:
        if todo:
            images = BatchImages(todo, protocol_transform(pixel_loaded, folder.protocol(config), None))
            model = PixelSpaceModel(loaded.model, mean, std).to(torch.device(options.device)).eval()
            for unit, batch_flags in _attacked(model, images, todo, chosen_ids, chosen_labels, options, folder):
                flags[:, _rows(unit, options)] = batch_flags
                if partial is not None:
                    write_chunk(partial, unit.index, {"ids": chosen_ids[_rows(unit, options)], "correct": batch_flags})
    except BaseException:
        if partial is not None:
            drop_if_empty(partial, fresh)
        raise
    if partial is not None:
        remove_partial(partial)
    return AdversarialResult(
        ids=tuple(chosen_ids),
        labels=chosen_labels,
        clean_correct=flags[0],
        correct={spec.label: flags[1 + i] for i, spec in enumerate(options.attacks)},
        eps=options.eps,
        alpha=options.alpha,
        steps=options.steps,
        random_start=True,
        seed=options.seed,
        batch_size=options.batch_size,
        autoattack=records,
        attack_convention=options.attack_convention,
    )


def _restore(
    partial: Path, units: list[Unit], chosen_ids: list[str], options: AttackOptions, flags: torch.Tensor
) -> list[Unit]:
    """Copy the flags of every sound chunk in ``partial`` into ``flags``; the units still to attack."""
    found: dict[int, torch.Tensor] = {}

    def check(chunk: Path, unit: Unit) -> None:
        found[unit.index] = _read_chunk(chunk, chosen_ids[_rows(unit, options)], len(flags))

    todo = missing_chunks(partial, units, check, "adversarial")
    for unit in units:
        if unit.index in found:
            flags[:, _rows(unit, options)] = found[unit.index]
    return todo


def _rows(unit: Unit, options: AttackOptions) -> slice:
    """The positions in the attacked subset of ``unit``'s rows."""
    return slice(unit.index * options.batch_size, unit.index * options.batch_size + unit.rows)


def _attacked(
    model: PixelSpaceModel,
    images: BatchImages,
    todo: list[Unit],
    chosen_ids: list[str],
    chosen_labels: torch.Tensor,
    options: AttackOptions,
    folder: DatasetFolder,
) -> Iterator[tuple[Unit, torch.Tensor]]:
    """Each unit of ``todo`` with its ``[1 + attacks, rows]`` correct flags (on the CPU): read by DataLoader
    workers, attacked in the main process with the model's parameters frozen."""
    device = torch.device(options.device)
    workers = loader_workers(options.workers)
    loader = DataLoader(  # its own generator: the workers' base seed is not drawn from the caller's RNG
        images,
        batch_size=None,
        num_workers=workers,
        pin_memory=device.type == "cuda",
        persistent_workers=False,
        worker_init_fn=single_threaded_worker if workers else None,
        generator=torch.Generator().manual_seed(options.seed),
    )
    by_index = {unit.index: unit for unit in todo}
    total = sum(unit.rows for unit in todo)
    bar = tqdm(total=total, unit="img", disable=not options.progress, desc="adversarial")
    done = 0
    with _inputs_only(model.model):
        attacks = _batch_attacks(model, options)
        try:
            for index, batch_ids, batch in loader:
                if batch_ids is None:
                    raise InvalidSourceData(batch)
                unit = by_index[index]
                rows = _rows(unit, options)
                if batch_ids != chosen_ids[rows]:
                    raise InvalidSourceData(
                        f"{folder.path}: batch {index} read rows {batch_ids[:3]}..., not the chosen ones"
                    )
                images_01 = batch.to(device, non_blocking=True)
                targets = chosen_labels[rows].to(device)
                yield unit, attack_batch(model, attacks, images_01, targets, options.seed + index).cpu()
                done += unit.rows
                bar.update(unit.rows)
        finally:
            bar.close()
    if done != total:
        raise ConfigError(f"the attacks finished after {done} of {total} rows")


class BatchAttack(Protocol):
    """One attack on one batch: ``attack(model, images, labels, seed)`` → bool flags, right under attack."""

    def __call__(self, model: nn.Module, images: torch.Tensor, labels: torch.Tensor, seed: int) -> torch.Tensor: ...


@dataclass(frozen=True)
class Torchattack:
    """A torchattacks attack as a :class:`BatchAttack`; ``seeded``: run under ``torch.manual_seed(seed)``
    inside ``fork_rng`` (PGD's random start; the caller's RNG state is kept); ``normalised`` (the
    ``hesse2025`` convention): the [0, 1] images become the tensors the model's eval transform yields
    (``model.normalise``, ``model`` a :class:`PixelSpaceModel`), which ``attack``, made on the bare model,
    perturbs and the bare model predicts."""

    attack: Any
    seeded: bool = False
    normalised: bool = False

    def __call__(self, model: nn.Module, images: torch.Tensor, labels: torch.Tensor, seed: int) -> torch.Tensor:
        if self.normalised:
            images, model = model.normalise(images), model.model
        if not self.seeded:
            return _predict(model, self.attack(images, labels)) == labels
        cuda = list(range(torch.cuda.device_count())) if images.device.type == "cuda" else []
        with torch.random.fork_rng(devices=cuda):
            torch.manual_seed(seed)
            adversarial = self.attack(images, labels)
        return _predict(model, adversarial) == labels


def _batch_attacks(model: PixelSpaceModel, options: AttackOptions) -> list[BatchAttack]:
    """``options.attacks`` as :class:`BatchAttack` s against ``model``, in order (FGSM and PGD against the
    bare model under the ``hesse2025`` convention)."""
    import torchattacks

    autoattacks = options.autoattacks
    normalised = options.attack_convention == HESSE2025
    target = model.model if normalised else model
    made: dict[str, BatchAttack] = {
        FGSM: Torchattack(torchattacks.FGSM(target, eps=options.eps), normalised=normalised),
        PGD: Torchattack(
            torchattacks.PGD(target, eps=options.eps, alpha=options.alpha, steps=options.steps, random_start=True),
            seeded=True,
            normalised=normalised,
        ),
    }
    return [made[spec.name] if spec.norm is None else autoattacks[spec.label] for spec in options.attacks]


def attack_batch(
    model: nn.Module, attacks: Sequence[BatchAttack], images: torch.Tensor, labels: torch.Tensor, seed: int
) -> torch.Tensor:
    """``[1 + len(attacks), batch]`` correct flags of one batch of [0, 1] images: clean, then each attack
    in turn (``seed`` is the batch's: PGD's start and AutoAttack's seed)."""
    with torch.no_grad():
        clean = _predict(model, images) == labels
    return torch.stack([clean, *(attack(model, images, labels, seed) for attack in attacks)])


CHUNK_CONTRACT = "a batch's flags written by the attacks: {'ids': [str], 'correct': bool tensor [1 + attacks, rows]}"


def _read_chunk(chunk: Path, expected_ids: list[str], kinds: int) -> torch.Tensor:
    """The ``[kinds, rows]`` flags a chunk holds for the rows ``expected_ids``; ConfigError naming it otherwise."""
    data = load_torch_file(chunk, ConfigError, CHUNK_CONTRACT)
    if not isinstance(data, dict) or data.get("ids") != expected_ids:
        raise ConfigError(f"{chunk}: does not hold its batch's rows (expected {CHUNK_CONTRACT})")
    correct = data.get("correct")
    shape = (kinds, len(expected_ids))
    if not isinstance(correct, torch.Tensor) or correct.dtype != torch.bool or tuple(correct.shape) != shape:
        found = tuple(correct.shape) if isinstance(correct, torch.Tensor) else type(correct).__name__
        raise ConfigError(f"{chunk}: 'correct' must be a bool tensor {list(shape)}, got {found}")
    return correct


def _manifest(
    loaded: LoadedModel,
    folder: DatasetFolder,
    part: tuple[str, str],
    options: AttackOptions,
    autoattacks: Mapping[str, Mapping[str, Any]],
) -> dict[str, Any]:
    """What produced the chunks of a resume folder: a run that differs in any of it does not reuse them."""
    code = {"code_sha256": loaded.code_sha256} if loaded.code_sha256 is not None else {}  # a user model's file
    return {
        **code,
        "model": loaded.spec,
        "weights": weights_digest(loaded),
        "weights_tag": loaded.source.tag if loaded.source is not None else None,
        "dataset": folder.name,
        "build": folder.build_info.get(SELF_HASH),
        "config": part[0],
        "split": part[1],
        "n": options.n,
        "seed": options.seed,
        "batch_size": options.batch_size,
        "attacks": [spec.label for spec in options.attacks],
        "fgsm_pgd": {"eps": options.eps, "alpha": options.alpha, "steps": options.steps, "random_start": True},
        "attack_convention": options.attack_convention,
        "autoattack": {label: dict(record) for label, record in autoattacks.items()},
    }


def _predict(model: nn.Module, images: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        logits = model(images)
    if not isinstance(logits, torch.Tensor) or logits.ndim != 2 or logits.shape[0] != len(images):
        raise ConfigError(
            f"the model must return [batch, classes] logits; it returned {getattr(logits, 'shape', type(logits))}"
        )
    return logits.argmax(dim=1)


@contextmanager
def _inputs_only(model: nn.Module) -> Iterator[None]:
    """Eval mode and no parameter gradients for the duration; every module's and parameter's own
    setting restored after."""
    parameters = [(parameter, parameter.requires_grad) for parameter in model.parameters()]
    modules = [(module, module.training) for module in model.modules()]
    model.eval()
    for parameter, _ in parameters:
        parameter.requires_grad_(False)
    try:
        yield
    finally:
        for parameter, flag in parameters:
            parameter.requires_grad_(flag)
        for module, training in modules:
            module.training = training


__all__ = [
    "ALPHA",
    "EPS",
    "STEPS",
    "AdversarialResult",
    "AttackOptions",
    "BatchAttack",
    "PixelSpaceModel",
    "Torchattack",
    "adversarial_accuracy",
    "adversarial_robustness",
    "attack_batch",
    "pixel_space",
    "stratified_subset",
]
