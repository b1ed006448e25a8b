"""Models to run over a built dataset: ``timm:<name>[.<tag>]``, ``torchvision:<name>[.<WEIGHTS>]``,
``open_clip:<arch>[.<tag>]`` (a zero-shot classifier, :mod:`~imagenet_suite.inference.zero_shot`),
``module:callable`` or ``path/to/file.py:callable``, with weights and the model's own eval preprocessing.

:func:`load_model` returns a :class:`LoadedModel`: the ``nn.Module`` in eval mode, its preprocessing
(PIL RGB image -> ``[3, H, W]`` float tensor), and what identifies the run (the model string, the
weights and their sha256, the library's weights tag, :class:`WeightsSource`, and for a user model the
sha256 of its source file, :mod:`~imagenet_suite.inference.user_models`).

Weights tags: a library model names its weights the library's way — ``torchvision:resnet50.IMAGENET1K_V1``
(a member of ``torchvision.models.get_model_weights("resnet50")``, ``DEFAULT`` included) or
``timm:resnet50.a1_in1k`` (a pretrained tag of ``timm.list_pretrained("resnet50.*")``) or ``open_clip:ViT-B-16.openai``
(a pair of ``open_clip.list_pretrained()``, checked offline; open_clip has no default tag). A spec without one
resolves to the library's default (torchvision's ``DEFAULT`` enum, timm's default tag), and the resolved
tag is what is recorded: ``torchvision:resnet50`` is ``IMAGENET1K_V2`` (80.9 % top-1), not the
``IMAGENET1K_V1`` (76.1 %) of the ResNet-50 rows of Beyond Accuracy (Hesse et al. 2025).
:func:`resolve_weights` says which weights a spec selects without loading anything; an unknown tag is a
one-line ConfigError listing the valid ones. The tag also chooses the architecture's configuration and
preprocessing (timm's pretrained_cfg, torchvision's ``transforms()``), so it is recorded with a weights
file or a random init too, as not loaded.

Weights (``weights``):

* a file — a state dict, ``.safetensors`` or ``.pt``/``.pth`` (read with ``weights_only=True``; a
  ``{"state_dict": ...}`` or ``{"model": ...}`` wrapper is unwrapped), loaded strictly: a file made
  for another architecture is refused, naming the first missing / unexpected / mis-shaped keys;
* ``"none"`` — a random init drawn from ``torch.manual_seed(seed)`` (the caller's RNG state is kept);
* ``None`` — the tag's pretrained weights (a one-line error naming them when they cannot be fetched).
  Their file is hashed: torchvision's is downloaded to torch.hub's cache by this module and must
  match the sha256 prefix in its URL's file name (a cached file that does not is refused); timm's is
  looked up in the Hugging Face (or torch.hub) cache after timm loaded it.

Preprocessing: timm models and user models use timm's ``resolve_data_config`` + ``create_transform``
(eval), as timm's ``validate.py`` does; torchvision models use their weights enum's ``transforms()``;
open_clip models open_clip's eval transform of their tag (``preprocess_val``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..errors import ConfigError, param
from ..files import sha256_file
from ..scoring.outputs import load_torch_file
from ..scoring.summary.suite_json import WEIGHTS_KINDS, WEIGHTS_LIBRARIES, weights_tag_text
from . import zero_shot
from .library_tags import library_metadata, open_clip_tag, timm_tag, torchvision_enum, torchvision_tag
from .user_models import MODEL_FORMS, load_callable, load_user_model
from .zero_shot import ZeroShotOptions

WEIGHT_SUFFIXES = (".safetensors", ".pt", ".pth")

Transform = Callable[[Any], torch.Tensor]

# The weights tags the papers state for their library rows, printed beside the tag a spec resolves to
# (docs/predict.md has the whole table). Beyond Accuracy (Hesse et al. 2025): every torchvision model
# with IMAGENET1K_V1 (its code's quba_constants.py); Anzaku et al. 2024: timm tags in its tables.
BEYOND_ACCURACY = "Beyond Accuracy (Hesse et al. 2025)"
BEYOND_ACCURACY_TORCHVISION = (
    "alexnet", "squeezenet1_1", "vgg11", "vgg13", "vgg16", "vgg19", "vgg16_bn", "resnet18", "resnet34", "resnet50",
    "resnet101", "resnet152", "wide_resnet50_2", "resnext50_32x4d", "resnext101_64x4d", "densenet121", "googlenet",
    "inception_v3", "mobilenet_v2", "mobilenet_v3_large", "efficientnet_b0", "regnet_y_8gf", "vit_b_16", "vit_l_16",
    "vit_b_32", "swin_t", "swin_s", "swin_b", "convnext_tiny", "convnext_small", "convnext_base", "convnext_large",
    "maxvit_t",
)  # fmt: skip
PAPER_TAGS: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {
    **{("torchvision", name): (("IMAGENET1K_V1", BEYOND_ACCURACY),) for name in BEYOND_ACCURACY_TORCHVISION},
    ("timm", "resnet50"): (("am_in1k", "Anzaku et al. 2024"),),
}
"""``{(library, architecture): ((tag, paper), ...)}``: the weights tags papers state for their rows."""


@dataclass(frozen=True)
class WeightsSource:
    """Which weights a model spec and ``weights`` select (:func:`resolve_weights`; nothing is loaded).

    ``library``: ``timm``, ``torchvision``, ``open_clip`` or None (a user model); ``architecture``: the
    library's model name without a tag (a user model: its ``module:callable``); ``tag``: the library's weights
    tag the spec resolves to (torchvision's enum member name, ``IMAGENET1K_V2`` for ``DEFAULT``; timm's or
    open_clip's pretrained tag), None for a user model; ``requested``: the tag as the spec writes it (None: it
    writes none, the library's default was taken); ``kind``: where the weights come from — ``torchvision``,
    ``timm`` or ``open_clip`` (the tag's pretrained weights), ``file`` or ``none`` (a random init from ``seed``); ``location``: the
    weights file (``kind`` file), or where the tag's weights live (a URL, or ``hf-hub:<repo id>``); ``family`` and
    ``pretraining``: the architecture family and the pretraining data the library states for the architecture and
    tag (:func:`~imagenet_suite.inference.library_tags.library_metadata`; None for a user model).
    """

    library: str | None
    architecture: str
    tag: str | None
    requested: str | None
    kind: str
    location: str | None
    seed: int | None = None
    family: str | None = None
    pretraining: str | None = None

    @property
    def loaded(self) -> bool:
        """Whether the tag's pretrained weights are the ones loaded."""
        return self.kind in WEIGHTS_LIBRARIES

    def tag_text(self) -> str | None:
        """``torchvision resnet50.IMAGENET1K_V2 (DEFAULT: no tag in the spec)``, ... (None without a tag)."""
        return weights_tag_text(self.record())

    def weights_text(self) -> str:
        """What the run's ``weights`` field says: the tag (pretrained), the file, or ``none (seed N)``."""
        if self.kind == "none":
            return f"none (seed {self.seed})"
        if self.kind == "file":
            return str(self.location)
        return str(self.tag_text())

    def statement(self) -> str:
        """The line ``predict`` and ``evaluate`` print before loading pretrained weights: the tag, where it
        is fetched from, and the tag the papers used for this architecture where it differs."""
        line = f"weights: {self.tag_text()} from {self.location}"
        papers = PAPER_TAGS.get((str(self.library), self.architecture), ())
        other = [(tag, paper) for tag, paper in papers if tag != self.tag]
        same = [paper for tag, paper in papers if tag == self.tag]
        if other:
            line += " — " + "; ".join(
                f"{paper} evaluated {self.architecture} with {tag} ({self.library}:{self.architecture}.{tag})"
                for tag, paper in other
            )
        elif same:
            line += " — as " + ", ".join(same)
        return line

    def record(self) -> dict[str, Any]:
        """The JSON form recorded in run.json and suite.json (``weights_source``)."""
        return {
            "kind": self.kind,
            "library": self.library,
            "architecture": self.architecture,
            "tag": self.tag,
            "requested": self.requested,
            "loaded": self.loaded,
            "location": self.location,
            "seed": self.seed,
            "family": self.family,
            "pretraining": self.pretraining,
        }


@dataclass
class LoadedModel:
    """A model ready for inference and what identifies it.

    ``weights`` says where the weights came from (the pretrained tag, ``none (seed N)`` or the file);
    ``weights_sha256`` is the sha256 of the weights file (a file given, or the library's pretrained
    file; None for a random init, or when timm's file is not found in its cache); ``data_config`` is
    timm's data config (input size, interpolation, mean, std, crop) when the transform came from timm;
    ``source``: the weights tag and where the weights came from (None for a LoadedModel made by hand);
    ``zero_shot``: how an ``open_clip:`` model's zero-shot head was made (class names, prompts, logit scale,
    probability convention: :func:`~imagenet_suite.inference.zero_shot.head_record`), None for other models;
    ``code_sha256``: the sha256 of a user model's source file, as executed (the ``.py`` named, or the
    module's file: :mod:`~imagenet_suite.inference.user_models`), None for library models.
    """

    model: nn.Module
    transform: Transform
    spec: str
    weights: str
    weights_sha256: str | None
    data_config: dict[str, Any] | None
    source: WeightsSource | None = None
    zero_shot: dict[str, Any] | None = None
    code_sha256: str | None = None


def resolve_weights(spec: str, weights: str | Path | None = None, seed: int = 0) -> WeightsSource:
    """Which weights :func:`load_model` would load for ``spec`` and ``weights``, nothing loaded or fetched:
    the library's tag (resolved to its default when the spec names none) and where the weights come from.

    Example:
        >>> source = resolve_weights("torchvision:resnet50")
        >>> source.tag, source.requested, source.kind, source.location
        ('IMAGENET1K_V2', None, 'torchvision', 'https://download.pytorch.org/models/resnet50-11ad3fa6.pth')
        >>> resolve_weights("torchvision:resnet50.IMAGENET1K_V1").tag_text()
        'torchvision resnet50.IMAGENET1K_V1'
        >>> resolve_weights("timm:test_resnet", "none", seed=3).record()["tag"]
        'r160_in1k'
        >>> resolve_weights("torchvision:resnet50.IMAGENET1K_V3")
        Traceback (most recent call last):
        ...
        imagenet_suite.errors.ConfigError: model 'torchvision:resnet50.IMAGENET1K_V3': torchvision has no weights 'IMAGENET1K_V3' for resnet50 (valid: IMAGENET1K_V1, IMAGENET1K_V2, DEFAULT = IMAGENET1K_V2)
    """
    source, name = _split_spec(spec)
    if weights is None:
        kind, location, used_seed = None, None, None
    elif str(weights) == "none":
        kind, location, used_seed = "none", None, seed
    else:
        kind, location, used_seed = "file", str(weights), None
    if source == "timm":
        architecture, tag, requested, tag_location = timm_tag(spec, name)
        library = "timm"
    elif source == "torchvision":
        architecture, tag, requested, tag_location = torchvision_tag(spec, name)
        library = "torchvision"
    elif source == "open_clip":
        architecture, tag, requested, tag_location = open_clip_tag(spec, name)
        library = "open_clip"
    else:
        if weights is None:
            raise ConfigError(
                f"model {spec!r} has no library weights: pass {param('weights')} FILE or {param('weights')} none"
            )
        return WeightsSource(None, spec, None, None, str(kind), location, used_seed)
    if kind is None:
        if library == "open_clip" and tag is None:
            tags = zero_shot.import_open_clip().list_pretrained_tags_by_model(architecture)
            raise ConfigError(
                f"model {spec!r}: open_clip has no default weights; name a pretrained tag, {spec}.<tag> (valid: "
                f"{', '.join(tags) or 'none'}), or pass {param('weights')} FILE, or {param('weights')} none"
            )
        if tag_location is None:
            raise ConfigError(
                f"model {spec!r}: {library} has no pretrained weights for {architecture}"
                + (f".{tag}" if tag else "")
                + f"; pass {param('weights')} FILE, or {param('weights')} none for a random init"
            )
        kind, location = library, tag_location
    stated = library_metadata(library, architecture, tag)
    return WeightsSource(library, architecture, tag, requested, kind, location, used_seed, **stated)


def load_model(
    spec: str, weights: str | Path | None = None, seed: int = 0, zero_shot_options: ZeroShotOptions | None = None
) -> LoadedModel:
    """Build the model ``spec`` names, load ``weights`` and return it in eval mode with its transform.

    ``zero_shot_options``: how an ``open_clip:`` model becomes a classifier (default ``ZeroShotOptions()``:
    CLIP's names, its 80 templates, 100·cos, softmax); ConfigError when given for any other model."""
    chosen = resolve_weights(spec, weights, seed)
    source, name = _split_spec(spec)
    if chosen.library == "open_clip":
        return _open_clip_classifier(spec, chosen, weights, seed, zero_shot_options or ZeroShotOptions())
    if zero_shot_options is not None:
        raise ConfigError(
            f"model {spec!r}: zero-shot options (prompts, class names, ...) apply to open_clip: models only"
        )
    digest = code = None
    if chosen.library == "timm":
        model, digest = _timm_model(spec, chosen, seed)
    elif chosen.library == "torchvision":
        model, digest = _torchvision_model(spec, chosen, seed)
    else:
        model, code = load_user_model(spec, source, name, seed=seed)
    if chosen.kind == "file":
        digest = load_weights(model, Path(str(weights)), spec)
    model.eval()
    transform, data_config = default_transform(model, source, name)
    return LoadedModel(model, transform, spec, chosen.weights_text(), digest, data_config, chosen, code_sha256=code)


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


def _open_clip_classifier(
    spec: str, chosen: WeightsSource, weights: str | Path | None, seed: int, options: ZeroShotOptions
) -> LoadedModel:
    """An ``open_clip:`` model as a :class:`~imagenet_suite.inference.zero_shot.ZeroShotClassifier`: the tokenizer
    first and every prompt checked against its context (fails fast), the model as its tag configures it (the
    tag's file fetched and hashed when loaded, else ``weights`` or a seeded random init), then the head of
    ``options``."""
    tokenizer = zero_shot.tokenizer_of(spec, chosen.architecture)
    zero_shot.check_context(tokenizer, options.parsed, zero_shot.class_names(options.class_names), spec)
    checkpoint = None
    if chosen.loaded:
        try:
            checkpoint = zero_shot.download_checkpoint(chosen.architecture, str(chosen.tag))
        except Exception as err:  # hub, network and HTTP errors have many types
            raise _unfetchable(spec, chosen, err) from err
    clip, transform = _seeded(seed, lambda: zero_shot.create_clip(spec, chosen.architecture, chosen.tag, checkpoint))
    digest = sha256_file(checkpoint) if checkpoint is not None else None
    if chosen.kind == "file":
        digest = load_weights(clip, Path(str(weights)), spec)
    key = zero_shot.ModelKey(chosen.architecture, chosen.tag, digest)
    model = zero_shot.build_classifier(clip, tokenizer, key, options).eval()
    return LoadedModel(model, transform, spec, chosen.weights_text(), digest, None, chosen, model.record)


def _timm_model(spec: str, chosen: WeightsSource, seed: int) -> tuple[nn.Module, str | None]:
    """timm's model of the resolved tag (its pretrained weights when ``chosen.loaded``) and the sha256 of
    the weights file timm read (looked up in its cache; None when not found)."""
    import timm

    name = f"{chosen.architecture}.{chosen.tag}" if chosen.tag else chosen.architecture
    model = _library_model(spec, chosen, seed, lambda: timm.create_model(name, pretrained=chosen.loaded))
    if not chosen.loaded:
        return model, None
    path = _timm_weights_file(getattr(model, "pretrained_cfg", None) or {})
    return model, sha256_file(path) if path is not None else None


def _timm_weights_file(pretrained_cfg: dict[str, Any]) -> Path | None:
    """The cached file timm loads a pretrained_cfg's weights from (the Hugging Face Hub's cache, torch.hub's
    for a URL, or the cfg's own file); None when it cannot be told."""
    try:
        from timm.models._builder import _resolve_pretrained_source
        from timm.models._hub import _get_safe_alternatives
    except ImportError:  # private timm helpers: without them the file is not named
        return None
    load_from, where = _resolve_pretrained_source(pretrained_cfg)
    if load_from == "hf-hub":
        from huggingface_hub import try_to_load_from_cache

        repo, filename = where if isinstance(where, tuple) else (where, "pytorch_model.bin")
        repo, _, revision = repo.partition("@")
        for candidate in (*_get_safe_alternatives(filename), filename):
            found = try_to_load_from_cache(repo, candidate, revision=revision or None)
            if isinstance(found, str):
                return Path(found)
        return None
    if load_from == "url":
        path = _hub_checkpoint(where)
    elif load_from in ("file", "local-dir") and isinstance(where, str):
        path = Path(where)
    else:
        return None
    return path if path.is_file() else None


def _url_file_name(url: str) -> str:
    from urllib.parse import urlparse

    return Path(urlparse(url).path).name


def _hub_checkpoint(url: str) -> Path:
    """Where torch.hub keeps the file of ``url`` (``<hub dir>/checkpoints/<file name>``)."""
    return Path(torch.hub.get_dir()) / "checkpoints" / _url_file_name(url)


def _torchvision_model(spec: str, chosen: WeightsSource, seed: int) -> tuple[nn.Module, str | None]:
    """torchvision's model (with the enum's pretrained weights when ``chosen.loaded``: their file is
    fetched first, checked against the sha256 prefix in its name, and hashed) and the file's sha256."""
    import torchvision

    if not chosen.loaded:
        return _seeded(seed, lambda: torchvision.models.get_model(chosen.architecture, weights=None)), None
    member = torchvision_enum(chosen.architecture)[chosen.tag]
    _, digest = _torchvision_weights_file(spec, chosen)
    model = _library_model(
        spec, chosen, seed, lambda: torchvision.models.get_model(chosen.architecture, weights=member)
    )
    return model, digest


def _torchvision_weights_file(spec: str, chosen: WeightsSource) -> tuple[Path, str]:
    """The enum's file in torch.hub's cache (downloaded unless there) and its sha256, which must begin
    with the hash prefix of the URL's file name (as torch.hub checks a download)."""
    url = str(chosen.location)
    path = _hub_checkpoint(url)
    prefix = _url_hash_prefix(url)
    if not path.is_file():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            torch.hub.download_url_to_file(url, str(path), hash_prefix=prefix, progress=True)
        except Exception as err:  # network, HTTP and hash errors have many types
            raise _unfetchable(spec, chosen, err) from err
    digest = sha256_file(path)
    if prefix and not digest.startswith(prefix):
        raise ConfigError(
            f"model {spec!r}: the cached file {path} of {chosen.tag_text()} has sha256 {digest[:12]}, but {url} "
            f"names a file whose sha256 begins {prefix}; delete it to download it again, or pass "
            f"{param('weights')} FILE"
        )
    return path, digest


def _url_hash_prefix(url: str) -> str | None:
    """The sha256 prefix torch.hub reads from a file name (``resnet50-0676ba61.pth`` -> ``0676ba61``)."""
    found = torch.hub.HASH_REGEX.search(_url_file_name(url))
    return found.group(1) if found and found.group(1) else None


def _library_model(spec: str, chosen: WeightsSource, seed: int, build: Callable[[], nn.Module]) -> nn.Module:
    """``build()`` under the seed; a failure to fetch pretrained weights becomes a one-line ConfigError."""
    try:
        return _seeded(seed, build)
    except Exception as err:  # hub, network and missing-tag errors have many types
        if not chosen.loaded:
            raise
        raise _unfetchable(spec, chosen, err) from err


def _unfetchable(spec: str, chosen: WeightsSource, err: Exception) -> ConfigError:
    return ConfigError(
        f"model {spec!r}: the pretrained weights {chosen.tag_text()} cannot be fetched from {chosen.location} "
        f"({type(err).__name__}: {' '.join(str(err).split())[:200]}); pass {param('weights')} FILE, or "
        f"{param('weights')} none for a random init"
    )


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
    """The model's own eval preprocessing and timm's data config (None for torchvision's transforms):
    a torchvision ``name`` (``resnet50`` or ``resnet50.IMAGENET1K_V1``) uses its weights enum's
    ``transforms()`` (``DEFAULT``'s without a tag); timm's follow the model's pretrained_cfg (its tag)."""
    if source == "torchvision":
        architecture, _, tag = name.partition(".")
        enum = torchvision_enum(architecture)
        if enum is None:
            raise ConfigError(f"torchvision model {architecture!r} has no weights enum to take its preprocessing from")
        return enum[tag or "DEFAULT"].transforms(), None
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
    * open_clip models: open_clip's eval transform with ``resize_mode="squash"``;
    * torchvision: resize to ``(crop_size, crop_size)`` with the weights' interpolation and antialias,
      then to a float tensor and normalise with their mean/std (what ``ImageClassification`` does, less
      the resize of the shorter side and the centre crop).

    ConfigError for any other preprocessing (it has no known input size to resize to)."""
    if loaded.data_config:
        return squash_transform(loaded.data_config)
    if isinstance(loaded.model, zero_shot.ZeroShotClassifier):
        return loaded.model.resize_only_transform()
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
    "PAPER_TAGS",
    "WEIGHTS_KINDS",
    "LoadedModel",
    "WeightsSource",
    "default_transform",
    "load_callable",
    "load_model",
    "load_weights",
    "resize_only_transform",
    "resolve_weights",
    "squash_transform",
    "weights_digest",
]
