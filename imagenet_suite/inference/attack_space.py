"""Where the attacks of :mod:`~imagenet_suite.inference.adversarial` perturb an image: the attack conventions.

An image reaches the attacks as the model's eval preprocessing *without* its final Normalize (pixels in
[0, 1]; :func:`pixel_space`), and the model as :class:`PixelSpaceModel` (that Normalize inside it). Then:

* ``hesse2025`` (:data:`~imagenet_suite.scoring.metrics.quba.QUBA_ATTACK_CONVENTION`, the default): FGSM and
  PGD perturb ``model.normalise(pixels)``, the very tensor the model's own eval transform yields (the same
  float32 ``(x - mean) / std`` as torchvision's ``Normalize``), and attack the bare model: Beyond Accuracy's
  code (Hesse et al. 2025) feeds the tensors of its dataloader, already normalised by the weights'
  transforms, to ``torchattacks.FGSM(model, eps=8/255)`` and ``torchattacks.PGD(model)``, whose ε, step
  and final ``clamp(0, 1)`` (torchattacks 3.5.1 checks no input range) then act on normalised values. QUBA's
  μ/σ of the adversarial dimension (0.186/0.111) are on this scale. A model whose transform ends in no
  Normalize (normalisation inside the model, as RobustBench's) is attacked on its transform's output, as
  their loader would yield it.
* ``pixel``: FGSM and PGD perturb the [0, 1] pixels and attack :class:`PixelSpaceModel`, so ε, α and the
  clamp are in pixels: the threat model of a robustness claim. It is no QUBA dimension.

AutoAttack (Heuillet et al. 2025's types) always runs in [0, 1] pixels, as their code does (its
``CustomModel`` normalises inside the model; the transforms end at ``ToTensor``).
The clean predictions are the same under both: ``PixelSpaceModel`` computes ``model(normalise(x))``.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import torch
from torch import nn

from ..errors import ConfigError, param, unknown_choice
from ..scoring.metrics.quba import ATTACK_CONVENTIONS, QUBA_ATTACK_CONVENTION
from .models import LoadedModel, Transform

HESSE2025 = QUBA_ATTACK_CONVENTION  # "hesse2025"
PIXEL = "pixel"


def check_attack_convention(value: Any) -> str:
    """``value`` when it is an attack convention, else a ConfigError naming ``attack_convention``.

    Example:
        >>> check_attack_convention("pixel")
        'pixel'
        >>> check_attack_convention("pixels")
        Traceback (most recent call last):
        ...
        imagenet_suite.errors.ConfigError: attack_convention must be hesse2025 or pixel, got 'pixels'; did you mean 'pixel'?
    """
    if not isinstance(value, str) or value not in ATTACK_CONVENTIONS:
        raise ConfigError(
            f"{param('attack_convention')} must be {' or '.join(ATTACK_CONVENTIONS)}, got {value!r}; "
            + unknown_choice(str(value), ATTACK_CONVENTIONS, "attack conventions")
        )
    return value


class PixelSpaceModel(nn.Module):
    """``model((x - mean) / std)`` for images ``x`` in [0, 1]: the model's Normalize moved inside it (none:
    ``mean`` and ``std`` empty, the images go to the model as they are)."""

    def __init__(self, model: nn.Module, mean: Sequence[float], std: Sequence[float]):
        super().__init__()
        self.model = model
        self.identity = not mean
        if not self.identity:
            shape = (1, -1, 1, 1)
            self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(shape), persistent=False)
            self.register_buffer("std", torch.tensor(std, dtype=torch.float32).view(shape), persistent=False)

    def normalise(self, images: torch.Tensor) -> torch.Tensor:
        """The model's Normalize: what its eval transform yields for these pixels."""
        return images if self.identity else (images - self.mean) / self.std

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.model(self.normalise(images))


def pixel_space(loaded: LoadedModel, required: bool = True) -> tuple[LoadedModel, tuple[float, ...], tuple[float, ...]]:
    """``loaded`` with a preprocessing that stops before its final Normalize (images in [0, 1]), and
    that Normalize's mean and std.

    Understands timm's ``create_transform`` (a Compose ending in Normalize) and torchvision's weights
    transforms (``ImageClassification``, with ``mean``/``std``); anything else is a ConfigError, or, with
    ``required`` False (the ``hesse2025`` FGSM/PGD attack the transform's output as it is), ``loaded``
    unchanged with empty mean and std. The data config's mean/std become 0/1 too, so a protocol's resize
    without centre crop (built from the data config) also stays in pixels.
    """
    transform, mean, std = _without_normalize(loaded.transform)
    if transform is None:
        if not required:
            return loaded, (), ()
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


__all__ = ["HESSE2025", "PIXEL", "PixelSpaceModel", "check_attack_convention", "pixel_space"]
