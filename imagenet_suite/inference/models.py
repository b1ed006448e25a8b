"""Models to run over a built dataset: ``timm:<name>``, ``torchvision:<name>``, ``module:callable`` or
``path/to/file.py:callable``, with weights and the model's own eval preprocessing.

:func:`load_model` returns a :class:`LoadedModel`: the ``nn.Module`` in eval mode, its preprocessing
(PIL RGB image -> ``[3, H, W]`` float tensor), and what identifies the run (the model string and the
sha256 of the weights file, or how the weights were chosen).

Weights (``weights``):

* a file — a state dict, ``.safetensors`` or ``.pt``/``.pth`` (read with ``weights_only=True``; a
  ``{"state_dict": ...}`` or ``{"model": ...}`` wrapper is unwrapped), loaded strictly: a file made
  for another architecture is refused, naming the first missing / unexpected / mis-shaped keys;
* ``"none"`` — a random init drawn from ``torch.manual_seed(seed)`` (the caller's RNG state is kept);
* ``None`` — the library's pretrained weights (a one-line error when they cannot be fetched).

Preprocessing: timm models and user models use timm's ``resolve_data_config`` + ``create_transform``
(eval), as timm's ``validate.py`` does; torchvision models use their weights' ``transforms()``.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..errors import ConfigError, param
from ..files import sha256_file
from ..scoring.outputs import load_torch_file

MODEL_FORMS = "timm:<name>, torchvision:<name>, <module>:<callable> or <path/to/file.py>:<callable>"
WEIGHT_SUFFIXES = (".safetensors", ".pt", ".pth")

Transform = Callable[[Any], torch.Tensor]


@dataclass
class LoadedModel:
    """A model ready for inference and what identifies it.

    ``weights`` says where the weights came from (``pretrained``, ``none (seed N)`` or the file);
    ``weights_sha256`` is the file's sha256 (None unless a file was given); ``data_config`` is timm's
    data config (input size, interpolation, mean, std, crop) when the transform came from timm.
    """

    model: nn.Module
    transform: Transform
    spec: str
    weights: str
    weights_sha256: str | None
    data_config: dict[str, Any] | None


def load_model(spec: str, weights: str | Path | None = None, seed: int = 0) -> LoadedModel:
    """Build the model ``spec`` names, load ``weights`` and return it in eval mode with its transform."""
    source, name = _split_spec(spec)
    if source == "timm":
        model = _timm_model(spec, name, pretrained=weights is None, seed=seed)
    elif source == "torchvision":
        model = _torchvision_model(spec, name, pretrained=weights is None, seed=seed)
    else:
        model = _user_model(spec, source, name, seed=seed)
        if weights is None:
            raise ConfigError(
                f"model {spec!r} has no library weights: pass {param('weights')} FILE or {param('weights')} none"
            )
    digest, described = None, "pretrained"
    if weights is not None and str(weights) == "none":
        described = f"none (seed {seed})"
    elif weights is not None:
        digest, described = load_weights(model, Path(weights), spec), str(weights)
    model.eval()
    transform, data_config = default_transform(model, source, name)
    return LoadedModel(model, transform, spec, described, digest, data_config)


def _split_spec(spec: str) -> tuple[str, str]:
    """``(source, name)``: source is ``timm``, ``torchvision``, a module path or a ``.py`` file."""
    source, sep, name = spec.rpartition(":")
    if not sep or not source or not name:
        raise ConfigError(f"model {spec!r} is not one of {MODEL_FORMS}")
    return source, name


def _seeded(seed: int, build: Callable[[], nn.Module]) -> nn.Module:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build()


def _timm_model(spec: str, name: str, pretrained: bool, seed: int) -> nn.Module:
    import timm

    if not timm.is_model(name):
        close = timm.list_models(f"*{name.split('_')[0]}*")[:5]
        raise ConfigError(f"model {spec!r}: timm has no model {name!r} (similar: {close})")
    return _library_model(spec, seed, pretrained, lambda: timm.create_model(name, pretrained=pretrained))


def _torchvision_model(spec: str, name: str, pretrained: bool, seed: int) -> nn.Module:
    import torchvision

    if name not in torchvision.models.list_models():
        raise ConfigError(f"model {spec!r}: torchvision has no model {name!r}")
    weights = "DEFAULT" if pretrained else None
    return _library_model(spec, seed, pretrained, lambda: torchvision.models.get_model(name, weights=weights))


def _library_model(spec: str, seed: int, pretrained: bool, build: Callable[[], nn.Module]) -> nn.Module:
    """``build()`` under the seed; a failure to fetch pretrained weights becomes a one-line ConfigError."""
    try:
        return _seeded(seed, build)
    except Exception as err:  # hub, network and missing-tag errors have many types
        if not pretrained:
            raise
        raise ConfigError(
            f"model {spec!r}: the pretrained weights cannot be fetched ({type(err).__name__}: "
            f"{' '.join(str(err).split())[:200]}); pass {param('weights')} FILE, or {param('weights')} none for a random init"
        ) from err


def _user_model(spec: str, source: str, name: str, seed: int) -> nn.Module:
    factory = load_callable(spec, source, name)
    try:
        model = _seeded(seed, factory)
    except Exception as err:
        raise ConfigError(f"model {spec!r}: {name}() failed ({type(err).__name__}: {err})") from err
    if not isinstance(model, nn.Module):
        raise ConfigError(f"model {spec!r}: {name}() returned {type(model).__name__!r}, not a torch nn.Module")
    return model


def load_callable(spec: str, source: str, name: str) -> Callable[..., Any]:
    """The callable ``name`` of a module path or a ``.py`` file (ConfigError naming what is missing)."""
    if source.endswith(".py"):
        path = Path(source)
        if not path.is_file():
            raise ConfigError(f"{spec!r}: file {path} does not exist")
        module_spec = importlib.util.spec_from_file_location(f"imagenet_suite_user_{path.stem}", path)
        module = importlib.util.module_from_spec(module_spec)
        try:
            module_spec.loader.exec_module(module)
        except Exception as err:
            raise ConfigError(f"{spec!r}: importing {path} failed ({type(err).__name__}: {err})") from err
    else:
        try:
            module = importlib.import_module(source)
        except ImportError as err:
            raise ConfigError(f"{spec!r}: cannot import module {source!r} ({err}); expected {MODEL_FORMS}") from err
    factory = getattr(module, name, None)
    if not callable(factory):
        raise ConfigError(f"{spec!r}: {source} has no callable {name!r}")
    return factory


def load_weights(model: nn.Module, path: Path, spec: str) -> str:
    """Load the state dict in ``path`` into ``model`` strictly; return the file's sha256."""
    if not path.is_file():
        raise ConfigError(f"weights file {path} does not exist (or pass {param('weights')} none for a random init)")
    if path.suffix not in WEIGHT_SUFFIXES:
        raise ConfigError(f"weights file {path} must end in one of {WEIGHT_SUFFIXES}")
    state = _read_state_dict(path)
    problems = _mismatch(model.state_dict(), state)
    if problems:
        raise ConfigError(f"weights file {path} does not fit model {spec!r}: {problems}")
    model.load_state_dict(state, strict=True)
    return sha256_file(path)


WEIGHTS_CONTRACT = "safetensors or a state dict (a mapping of names to tensors, torch.save)"


def _read_state_dict(path: Path) -> dict[str, torch.Tensor]:
    """The state dict in ``path``; a pickle of other Python objects is refused unread (one line)."""
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        try:
            state = load_file(str(path))
        except Exception as err:  # safetensors raises its own error types
            raise ConfigError(
                f"weights file {path} cannot be read ({type(err).__name__}: {' '.join(str(err).split())[:200]})"
            ) from err
    else:
        state = load_torch_file(path, ConfigError, WEIGHTS_CONTRACT, name=f"weights file {path}")
    for wrapper in ("state_dict", "model"):
        if isinstance(state, dict) and isinstance(state.get(wrapper), dict):
            state = state[wrapper]
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ConfigError(f"weights file {path} holds no state dict (a mapping of names to tensors)")
    return state


def _mismatch(expected: dict[str, torch.Tensor], given: dict[str, torch.Tensor]) -> str:
    """'' when ``given`` fits ``expected`` exactly, else what differs (first few of each kind)."""
    missing = [k for k in expected if k not in given]
    unexpected = [k for k in given if k not in expected]
    shapes = [
        f"{k} {tuple(given[k].shape)} vs {tuple(v.shape)}"
        for k, v in expected.items()
        if k in given and given[k].shape != v.shape
    ]
    parts = [
        f"{len(items)} {what}, e.g. {items[:3]}"
        for what, items in (("missing keys", missing), ("unexpected keys", unexpected), ("shape mismatches", shapes))
        if items
    ]
    return "; ".join(parts)


def default_transform(model: nn.Module, source: str, name: str) -> tuple[Transform, dict[str, Any] | None]:
    """The model's own eval preprocessing and timm's data config (None for torchvision's transforms)."""
    if source == "torchvision":
        import torchvision

        return torchvision.models.get_model_weights(name).DEFAULT.transforms(), None
    from timm.data import create_transform, resolve_data_config

    config = resolve_data_config({}, model=model)
    return create_transform(**config), config


def squash_transform(data_config: dict[str, Any]) -> Transform:
    """timm's eval transform resizing the whole image to the input size, no centre crop (PatchML, Anzaku et al. 2024)."""
    from timm.data import create_transform

    return create_transform(**{**data_config, "crop_pct": 1.0, "crop_mode": "squash"})


def resize_only_transform(loaded: LoadedModel) -> Transform:
    """The model's eval preprocessing resizing the whole image to its input size, no centre crop
    (Anzaku et al. 2024, App. B), for every model source:

    * timm and user models (timm's data config): :func:`squash_transform`;
    * torchvision: resize to ``(crop_size, crop_size)`` with the weights' interpolation and antialias,
      then to a float tensor and normalise with their mean/std (what ``ImageClassification`` does, less
      the resize of the shorter side and the centre crop).

    ConfigError for any other preprocessing (it has no known input size to resize to)."""
    if loaded.data_config:
        return squash_transform(loaded.data_config)
    from torchvision import transforms
    from torchvision.transforms._presets import ImageClassification

    preset = loaded.transform
    if isinstance(preset, ImageClassification):
        size = [int(v) for v in preset.crop_size]
        return transforms.Compose(
            [
                transforms.Resize((size[0], size[-1]), interpolation=preset.interpolation, antialias=preset.antialias),
                transforms.ToTensor(),
                transforms.Normalize(list(preset.mean), list(preset.std)),
            ]
        )
    raise ConfigError(
        f"model {loaded.spec!r}: its preprocessing ({type(preset).__name__}) has no known input size to resize to "
        "without a centre crop (Anzaku et al. 2024); timm, torchvision and user models loaded by load_model have one"
    )


def weights_digest(loaded: LoadedModel) -> str:
    """What identifies the weights in a resume manifest: the file's sha256, or how they were chosen."""
    return loaded.weights_sha256 or hashlib.sha256(loaded.weights.encode()).hexdigest()


__all__ = [
    "MODEL_FORMS",
    "LoadedModel",
    "default_transform",
    "load_callable",
    "load_model",
    "load_weights",
    "resize_only_transform",
    "squash_transform",
    "weights_digest",
]
