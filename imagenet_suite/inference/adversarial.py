"""Adversarial robustness (Beyond Accuracy, Hesse et al. 2025, Eqs. 3-5): a model's accuracy under FGSM
and PGD, model in the loop.

Its code (visinf/beyond-accuracy) runs ``torchattacks==3.5.1`` with ``torchattacks.FGSM(model, eps=8/255)`` and
``torchattacks.PGD(model, eps=8/255, alpha=2/255, steps=10, random_start=True)`` (L-inf, untargeted,
cross-entropy) and reports ``AR = GM(FGSM-A / A, PGD-A / A)``, where A is the clean accuracy on the
same images. The attacks here are exactly those calls, with one documented change: the threat model
is defined in [0, 1] pixel space (Hesse et al. fed already-normalised tensors to torchattacks). An image
is the model's own eval preprocessing *without* its final Normalize (resize, crop, to-tensor; the
dataset protocol's steps first, as in ``predict``), and :class:`PixelSpaceModel` applies that
Normalize inside the attacked module, so eps, alpha and the [0, 1] clamp are in pixels.

Rows: a seeded, class-stratified subset of ``n`` rows of the split (:func:`stratified_subset`; all
rows when ``n`` is at least the split's size), in dataset order, cut into batches of ``batch_size``.
Images are read by ``predict``'s reader (:class:`~imagenet_suite.inference.predict.BatchImages`)
through DataLoader workers.

Determinism: PGD's random start draws from torch's global RNG. Batch ``i`` is attacked under
``torch.manual_seed(seed + i)`` inside ``torch.random.fork_rng`` (the caller's RNG state is kept), so a
result depends on ``seed`` and ``batch_size`` but not on the number of workers or on earlier RNG use.
On CUDA, bit-identical reruns also need deterministic kernels (``torch.use_deterministic_algorithms``);
otherwise a rare gradient sign may differ.

Clean accuracy 0: both ratios are undefined and :attr:`AdversarialResult.adversarial_robustness` is
NaN (as are ``fgsm_ratio`` and ``pgd_ratio``). A zero attack accuracy with a non-zero clean accuracy
gives AR = 0, like ``scipy.stats.mstats.gmean`` in Beyond Accuracy's code.
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader
from tqdm.auto import tqdm

from ..dataset.folder import DatasetFolder
from ..errors import ConfigError, InvalidSourceData, param
from ..scoring.metrics.classification import Fraction
from .models import LoadedModel, Transform
from .predict import BatchImages, Unit, check_loader_arguments, protocol_transform, split_units

EPS = 8 / 255
ALPHA = 2 / 255
STEPS = 10
NUM_CLASSES = 1000
# Protocol keys that evaluate a dataset in another label space than 1000-way argmax (ImageNet-A/R,
# ObjectNet, the 16-class sets): the attacks here are defined on 1000-way argmax and CE only.
OTHER_LABEL_SPACES = ("class_subset", "class_mapping", "decision_mapping")


@dataclass(frozen=True, eq=False)
class AdversarialResult:
    """Clean, FGSM and PGD accuracy of a model on the same rows, with per-row correct flags.

    ``ids`` are the attacked rows (dataset order); ``labels`` their 1000-way labels; ``*_correct`` are
    bool tensors aligned with ``ids``; ``clean``/``fgsm``/``pgd`` are correct/rows. The attack
    settings (``eps``, ``alpha``, ``steps``, ``random_start``; eps and alpha in [0, 1] pixel units)
    and what PGD's random start depends on (``seed``, ``batch_size``) label the result.
    """

    ids: tuple[str, ...]
    labels: torch.Tensor
    clean: Fraction
    fgsm: Fraction
    pgd: Fraction
    clean_correct: torch.Tensor
    fgsm_correct: torch.Tensor
    pgd_correct: torch.Tensor
    eps: float
    alpha: float
    steps: int
    random_start: bool
    seed: int
    batch_size: int

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
        """Beyond Accuracy's AR = GM(FGSM-A / A, PGD-A / A); NaN when clean accuracy is 0."""
        return adversarial_robustness(self.clean.value, self.fgsm.value, self.pgd.value)

    def summary(self) -> dict[str, float | int | bool]:
        """The scalars (accuracies, ratios, AR) and the attack settings, for a report."""
        return {
            "rows": self.clean.denominator,
            "clean_accuracy": self.clean.value,
            "fgsm_accuracy": self.fgsm.value,
            "pgd_accuracy": self.pgd.value,
            "fgsm_ratio": self.fgsm_ratio,
            "pgd_ratio": self.pgd_ratio,
            "adversarial_robustness": self.adversarial_robustness,
            "eps": self.eps,
            "alpha": self.alpha,
            "steps": self.steps,
            "random_start": self.random_start,
            "seed": self.seed,
            "batch_size": self.batch_size,
        }


def _ratio(attacked: Fraction, clean: Fraction) -> float:
    return attacked.value / clean.value if clean.value > 0 else math.nan


def adversarial_robustness(clean: float, fgsm: float, pgd: float) -> float:
    """``sqrt((fgsm / clean) * (pgd / clean))``, Beyond Accuracy's AR from the three accuracies.

    NaN when ``clean`` is 0 (or NaN): the ratios are undefined. A zero ratio gives 0.
    """
    if not clean > 0:
        return math.nan
    return math.sqrt((fgsm / clean) * (pgd / clean))


def stratified_subset(labels: Sequence[int], n: int, seed: int) -> list[int]:
    """Sorted row positions of a seeded, class-stratified subset of ``n`` rows.

    Per-class counts are as equal as ``n`` and the class sizes allow (a class smaller than its share
    gives all its rows; the rest is spread over the others). Which classes get the rows that do not
    divide evenly, and which rows of a class are taken, are drawn from ``np.random.default_rng(seed)``
    (the same on every platform). ``n`` at least the number of rows gives every row.
    """
    if n < 1:
        raise ConfigError(f"the adversarial subset needs at least 1 row, got {n}")
    labels = np.asarray(labels, dtype=np.int64)
    if n >= len(labels):
        return list(range(len(labels)))
    _, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    rng = np.random.default_rng(seed)
    preference = rng.permutation(len(counts))  # classes early in it get the rows that do not divide evenly
    quota = _quotas(counts, n, preference)
    by_class = np.argsort(inverse, kind="stable")  # row positions grouped by class, dataset order within
    starts = np.concatenate([[0], np.cumsum(counts)])
    chosen = [rng.permutation(by_class[starts[c] : starts[c + 1]])[: quota[c]] for c in range(len(counts))]
    return sorted(int(position) for position in np.concatenate(chosen))


def _quotas(counts: np.ndarray, n: int, preference: np.ndarray) -> np.ndarray:
    """Rows per class summing to ``n`` (< counts.sum()): the highest level every class fills up to,
    plus one more row for the first classes in ``preference`` that still have rows."""
    low, high = 0, int(counts.max())
    while low < high:
        middle = (low + high + 1) // 2
        if int(np.minimum(counts, middle).sum()) <= n:
            low = middle
        else:
            high = middle - 1
    quota = np.minimum(counts, low)
    left = n - int(quota.sum())
    quota[[c for c in preference if counts[c] > low][:left]] += 1
    return quota


class PixelSpaceModel(nn.Module):
    """``model((x - mean) / std)`` for images ``x`` in [0, 1]: the model's Normalize moved inside it."""

    def __init__(self, model: nn.Module, mean: Sequence[float], std: Sequence[float]):
        super().__init__()
        self.model = model
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(1, -1, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(std, dtype=torch.float32).view(1, -1, 1, 1), persistent=False)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.model((images - self.mean) / self.std)


def pixel_space(loaded: LoadedModel) -> tuple[LoadedModel, tuple[float, ...], tuple[float, ...]]:
    """``loaded`` with a preprocessing that stops before its final Normalize (images in [0, 1]), and
    that Normalize's mean and std.

    Understands timm's ``create_transform`` (a Compose ending in Normalize) and torchvision's weights
    transforms (``ImageClassification``, with ``mean``/``std``); anything else is a ConfigError. The
    data config's mean/std become 0/1 too, so a protocol's resize without centre crop (built from the
    data config) also stays in pixels.
    """
    transform, mean, std = _without_normalize(loaded.transform)
    if transform is None:
        raise ConfigError(
            f"model {loaded.spec!r}: its preprocessing ({type(loaded.transform).__name__}) does not end in a "
            "Normalize, so the attack cannot run in [0, 1] pixel space"
        )
    config = loaded.data_config
    if config is not None:
        config = {**config, "mean": (0.0,) * len(mean), "std": (1.0,) * len(std)}
    return replace(loaded, transform=transform, data_config=config), mean, std


def _without_normalize(transform: Any) -> tuple[Transform | None, tuple[float, ...], tuple[float, ...]]:
    from torchvision import transforms
    from torchvision.transforms._presets import ImageClassification

    if isinstance(transform, transforms.Compose) and transform.transforms:
        *steps, last = transform.transforms
        if isinstance(last, transforms.Normalize):
            return transforms.Compose(steps), _floats(last.mean), _floats(last.std)
        inner, mean, std = _without_normalize(last)
        if inner is not None:
            return transforms.Compose([*steps, inner]), mean, std
    elif isinstance(transform, ImageClassification):  # resize, crop, to float, normalize (mean, std)
        mean, std = _floats(transform.mean), _floats(transform.std)
        pixels = copy.copy(transform)
        pixels.mean, pixels.std = [0.0] * len(mean), [1.0] * len(std)  # x - 0 and x / 1 are exact
        return pixels, mean, std
    return None, (), ()


def _floats(values: Any) -> tuple[float, ...]:
    return tuple(float(v) for v in torch.as_tensor(values).flatten().tolist())


def subset_units(
    folder: DatasetFolder, config: str, split: str, positions: Sequence[int], batch_size: int
) -> list[Unit]:
    """The rows at ``positions`` (sorted), cut into batches of ``batch_size`` for ``BatchImages``;
    adjacent rows of one row group share a piece. All positions: the same batches as ``split_units``."""
    rows = split_units(folder, config, split, 1)  # one single-row piece per row, in dataset order
    units = []
    for index, start in enumerate(range(0, len(positions), batch_size)):
        chosen = positions[start : start + batch_size]
        pieces = []
        for position in chosen:
            piece = rows[position].pieces[0]
            last = pieces[-1] if pieces else None
            if last and (last.path, last.row_group, last.offset + last.length) == (
                piece.path,
                piece.row_group,
                piece.offset,
            ):
                pieces[-1] = replace(last, length=last.length + 1)
            else:
                pieces.append(piece)
        units.append(Unit(index, len(chosen), tuple(pieces)))
    return units


@dataclass(frozen=True)
class AttackOptions:
    """Which images :func:`adversarial_accuracy` attacks, with which attacks, and how it runs.

    Checked when made (ConfigError naming the field).

    Attributes:
        n: rows of the seeded class-stratified subset to attack, at least 1 (all rows if the split has
            fewer).
        seed: seed of the subset, of the DataLoader workers and (plus the batch index) of PGD's random
            start, 0 or more.
        batch_size: images per attack batch, at least 1. PGD's random start is seeded per batch, so it is
            part of what a result depends on.
        eps: the L∞ radius of both attacks, in [0, 1] pixel units (default 8/255).
        alpha: PGD's step size, in [0, 1] pixel units (default 2/255).
        steps: PGD's number of steps, 0 or more (default 10).
        device: where the model and the attacks run (``"cpu"``, ``"cuda"``, ... or a ``torch.device``).
        workers: DataLoader workers reading the images, 0 or more; None: ``min(4, CPUs)``.
        progress: show a progress bar (stderr).

    Example:
        >>> from imagenet_suite.inference.adversarial import AttackOptions
        >>> AttackOptions(n=1000, seed=1).eps == 8 / 255
        True
        >>> AttackOptions(n=0)
        Traceback (most recent call last):
        ...
        imagenet_suite.errors.ConfigError: n must be at least 1 (rows to attack), got 0
    """

    n: int
    seed: int = 0
    batch_size: int = 64
    eps: float = EPS
    alpha: float = ALPHA
    steps: int = STEPS
    device: str | torch.device = "cpu"
    workers: int | None = None
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
                raise ConfigError(f"{param(name)} must be a number in [0, 1] (pixel units), got {value!r}")


def adversarial_accuracy(
    loaded: LoadedModel,
    dataset: str | Path | DatasetFolder,
    options: AttackOptions,
    *,
    config: str | None = None,
    split: str | None = None,
) -> AdversarialResult:
    """Clean, FGSM and PGD accuracy of ``loaded`` on a seeded class-stratified subset of ``options.n`` rows.

    FGSM is ``torchattacks.FGSM(m, eps=eps)``, PGD ``torchattacks.PGD(m, eps=eps, alpha=alpha,
    steps=steps, random_start=True)`` with ``m`` the model behind its own Normalize
    (:class:`PixelSpaceModel`) and the settings of ``options`` (:class:`AttackOptions`); labels are the
    dataset's 1000-way ``label`` column. The model is in eval mode and its parameters do not require
    grad during the run (both restored afterwards); gradients are taken with respect to the images only.

    Example:
        >>> from imagenet_suite.inference import load_model
        >>> from imagenet_suite.inference.adversarial import AttackOptions, adversarial_accuracy
        >>> result = adversarial_accuracy(load_model("timm:resnet50"), "datasets/imagenet_val-1.0.0",
        ...                               AttackOptions(n=1000, device="cuda"))               # doctest: +SKIP
        >>> result.clean.value, result.fgsm.value, result.pgd.value                           # doctest: +SKIP
    """
    import torchattacks

    if not isinstance(options, AttackOptions):
        raise ConfigError(f"{param('options')} must be an AttackOptions, got {type(options).__name__}")
    folder = dataset if isinstance(dataset, DatasetFolder) else DatasetFolder(dataset)
    config = folder.resolve_config(config)
    split = folder.resolve_split(config, split)
    seed, batch_size, eps, alpha, steps = options.seed, options.batch_size, options.eps, options.alpha, options.steps
    ids, labels = _ids_and_labels(folder, config, split)
    pixel_loaded, mean, std = pixel_space(loaded)
    positions = stratified_subset(labels.tolist(), options.n, seed)
    units = subset_units(folder, config, split, positions, batch_size)
    images = BatchImages(units, protocol_transform(pixel_loaded, folder.protocol(config), None))
    chosen_ids = [ids[p] for p in positions]
    chosen_labels = labels[positions]

    device = torch.device(options.device)
    model = PixelSpaceModel(loaded.model, mean, std).to(device).eval()
    flags = torch.zeros(3, len(positions), dtype=torch.bool)
    workers = min(4, os.cpu_count() or 1) if options.workers is None else options.workers
    loader = DataLoader(  # its own generator: the workers' base seed is not drawn from the caller's RNG
        images,
        batch_size=None,
        num_workers=workers,
        pin_memory=device.type == "cuda",
        persistent_workers=False,
        generator=torch.Generator().manual_seed(seed),
    )
    bar = tqdm(total=len(positions), unit="img", disable=not options.progress, desc="adversarial")
    done = 0
    with _inputs_only(loaded.model):
        fgsm = torchattacks.FGSM(model, eps=eps)
        pgd = torchattacks.PGD(model, eps=eps, alpha=alpha, steps=steps, random_start=True)
        try:
            for index, batch_ids, batch in loader:
                if batch_ids is None:
                    raise InvalidSourceData(batch)
                rows = slice(index * batch_size, index * batch_size + len(batch_ids))
                if batch_ids != chosen_ids[rows]:
                    raise InvalidSourceData(
                        f"{folder.path}: batch {index} read rows {batch_ids[:3]}..., not the chosen ones"
                    )
                images_01 = batch.to(device, non_blocking=True)
                targets = chosen_labels[rows].to(device)
                flags[:, rows] = attack_batch(model, fgsm, pgd, images_01, targets, seed + index).cpu()
                done += len(batch_ids)
                bar.update(len(batch_ids))
        finally:
            bar.close()
    if done != len(positions):
        raise ConfigError(f"the attacks finished after {done} of {len(positions)} rows")
    clean, fgsm_flags, pgd_flags = flags
    return AdversarialResult(
        ids=tuple(chosen_ids),
        labels=chosen_labels,
        clean=Fraction(int(clean.sum()), len(positions)),
        fgsm=Fraction(int(fgsm_flags.sum()), len(positions)),
        pgd=Fraction(int(pgd_flags.sum()), len(positions)),
        clean_correct=clean,
        fgsm_correct=fgsm_flags,
        pgd_correct=pgd_flags,
        eps=eps,
        alpha=alpha,
        steps=steps,
        random_start=True,
        seed=seed,
        batch_size=batch_size,
    )


def attack_batch(
    model: nn.Module, fgsm: Any, pgd: Any, images: torch.Tensor, labels: torch.Tensor, pgd_seed: int
) -> torch.Tensor:
    """``[3, batch]`` correct flags (clean, FGSM, PGD) of one batch of [0, 1] images; PGD's random start
    is drawn under ``torch.manual_seed(pgd_seed)`` inside ``fork_rng`` (the caller's RNG state is kept)."""
    with torch.no_grad():
        clean = _predict(model, images) == labels
    fgsm_correct = _predict(model, fgsm(images, labels)) == labels
    cuda = list(range(torch.cuda.device_count())) if images.device.type == "cuda" else []
    with torch.random.fork_rng(devices=cuda):
        torch.manual_seed(pgd_seed)
        adversarial = pgd(images, labels)
    pgd_correct = _predict(model, adversarial) == labels
    return torch.stack([clean, fgsm_correct, pgd_correct])


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


def _ids_and_labels(folder: DatasetFolder, config: str, split: str) -> tuple[list[str], torch.Tensor]:
    """The split's ids and 1000-way labels (ConfigError naming the dataset when it has none)."""
    where = f"{folder.name} ({folder.path}) config {config!r}"
    label = folder.config_info(config)["features"].get("label")
    if not isinstance(label, dict) or label.get("_type") != "ClassLabel":
        raise ConfigError(f"{where} has no 'label' column: the adversarial attacks need the 1000-way ImageNet label")
    if len(label.get("names") or []) != NUM_CLASSES:
        raise ConfigError(f"{where}: its 'label' has {len(label.get('names') or [])} classes, not ImageNet's 1000")
    other = [key for key in OTHER_LABEL_SPACES if folder.protocol(config).get(key)]
    if other:
        raise ConfigError(
            f"{where} is scored in another label space (protocol {other[0]!r}); the adversarial attacks "
            "are defined on 1000-way argmax (Beyond Accuracy, Hesse et al. 2025: ImageNet val)"
        )
    if "image" not in folder.column_names(config):
        raise ConfigError(f"{where} has no 'image' column to attack")
    table = folder.read_table(config, split, ["id", "label"])
    labels = torch.tensor(table.column("label").to_pylist(), dtype=torch.int64)
    if len(labels) == 0:
        raise ConfigError(f"{where} split {split!r} has no rows to attack")
    outside = ((labels < 0) | (labels >= NUM_CLASSES)).nonzero()
    if len(outside):
        row = int(outside[0, 0])
        raise ConfigError(f"{where} split {split!r}: row {row} has label {int(labels[row])}, outside 0..999")
    return table.column("id").to_pylist(), labels


__all__ = [
    "ALPHA",
    "EPS",
    "STEPS",
    "AdversarialResult",
    "AttackOptions",
    "PixelSpaceModel",
    "adversarial_accuracy",
    "adversarial_robustness",
    "attack_batch",
    "pixel_space",
    "stratified_subset",
    "subset_units",
]
