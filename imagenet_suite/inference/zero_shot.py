"""Zero-shot vision-language classifiers through open_clip: ``open_clip:<arch>[.<pretrained tag>]``.

open_clip (``open-clip-torch``, the ``zeroshot`` extra) builds CLIP, OpenCLIP, SigLIP, MetaCLIP and
MobileCLIP models. :func:`~imagenet_suite.inference.models.load_model` makes one a 1000-way ImageNet
classifier, :class:`ZeroShotClassifier`, the way the papers do:

* **The head** — for each ImageNet-1k class (index order), its prompts (:func:`prompt_texts`: class
  names × templates, or one taxonomy prompt) are encoded by the text tower, L2-normalised, averaged and
  normalised again (open_clip's ``build_zero_shot_classifier``, CLIP's notebook): ``t_c``, ``[1000, d]``.
* **The logits** — ``s · cos(image, t_c) [+ b]``: the image embedding L2-normalised, times the text
  embeddings, times the logit scale ``s`` (:attr:`ZeroShotOptions.logit_scale`; default 100 as CLIP's
  notebook, open_clip's zero-shot evaluation, Beyond Accuracy's CLIP/OpenCLIP/MobileCLIP wrappers and
  LCA-on-the-Line compute them; a model with a logit bias, SigLIP, uses its own ``s`` and ``b``).
* **The probabilities** (:data:`PROBABILITIES`, recorded by name): ``softmax`` (the outputs are those
  logits; the scorer applies softmax once) or ``hesse2025`` (the values Beyond Accuracy's wrappers
  return, ``softmax(s·cos)`` or SigLIP's ``sigmoid(s·cos + b)``, stored as logits so that the scorer
  softmaxes them again, as that paper's metrics did).
* **Features** (``predict --features``): the L2-normalised image embedding, the input of the head, so
  ``logits = W h + b`` with ``W = s·t``; :func:`zero_shot_detector_stats` gives the text embeddings as
  class means for NINCO's ``cosine`` and MCM (``rcos``, T = 1) detectors.
* **Preprocessing**: open_clip's own eval transform of the tag (``preprocess_val``).

Class names (:data:`CLASS_NAMES`: ``clip``, CLIP's curated list, or ``wordnet``), prompt sets
(:func:`parse_prompts`: ``openai80``, ``photo``, ``taxonomy[:depth]`` or a bounded FILE of templates) and
the check of every prompt against the text encoder's context (:func:`check_context`, with the model's own
tokenizer before the model is built: a class name past the context is refused, text cut after it is a
warning) live in :mod:`~imagenet_suite.inference.zero_shot_prompts`.

Text embeddings are cached (:func:`cached_text_embeddings`) per (architecture, tag, weights sha256,
device type, open_clip version, prompt texts) under ``$IMAGENET_SUITE_ZERO_SHOT_CACHE`` or the user
cache folder; a cached file is checked (key, shape, its own sha256) before it is used. A random init
has no weights file to key on and is never cached.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from ..errors import ConfigError, ImagenetSuiteError, param
from ..files import atomic_write_bytes
from ..scoring.metrics.ood_detector_stats import DetectorStats
from ..scoring.outputs import load_torch_file
from .resume import torch_bytes
from .zero_shot_prompts import (
    CLASS_NAMES,
    PROMPT_SETS,
    ClassPrompts,
    Prompts,
    check_context,
    class_names,
    import_open_clip,
    parse_prompts,
    prompt_texts,
    prompts_digest,
    read_templates,
    taxonomy_prompt,
    templates_of,
)

_LOG = logging.getLogger(__name__)

PROBABILITIES = {
    "softmax": "logits s·cos (+ b); the scorer applies softmax once (CLIP, open_clip's zero-shot evaluation, "
    "LCA-on-the-Line (Shi et al. 2024); NINCO's MCM is softmax(cos / 1) over the features)",
    "hesse2025": "the values Beyond Accuracy (Hesse et al. 2025)'s wrappers return — softmax(s·cos), or "
    "sigmoid(s·cos + b) for a model with a logit bias (SigLIP) — stored as logits, which the scorer softmaxes "
    "again as that paper's metrics did",
}
DEFAULT_LOGIT_SCALE = 100.0
CACHE_ENV = "IMAGENET_SUITE_ZERO_SHOT_CACHE"
CACHE_FORMAT = "imagenet-suite-text-embeddings/1"
CACHE_CONTRACT = "a text-embedding cache file of imagenet-suite (format, key, embeddings, sha256)"


# -- options -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ZeroShotOptions:
    """How :func:`~imagenet_suite.inference.models.load_model` makes an ``open_clip:`` model a classifier.

    Checked when made (ConfigError naming the field; a prompts file is read now).

    Attributes:
        prompts: ``openai80`` (default; CLIP's 80 templates, as Beyond Accuracy), ``photo`` ("a photo of a
            {}", LCA-on-the-Line, NINCO), ``taxonomy[:depth]`` or a templates file (:func:`parse_prompts`).
        class_names: ``clip`` (curated, default) or ``wordnet`` (:data:`CLASS_NAMES`).
        logit_scale: ``s`` in ``s·cos``: None (default) = 100, or the model's own scale and bias when it has
            a logit bias (SigLIP); ``"model"`` = the model's ``exp(logit_scale)`` (and bias); or a number > 0.
        probabilities: ``softmax`` or ``hesse2025`` (:data:`PROBABILITIES`).
        device: where the text tower encodes the prompts.
        cache_dir: the text-embedding cache; None: ``$IMAGENET_SUITE_ZERO_SHOT_CACHE``, else
            ``<user cache>/imagenet-suite/zero-shot``. ``"none"``: no cache.
        text_batch_size: prompts encoded at once.
        progress: a progress bar while encoding (stderr).

    Example:
        >>> ZeroShotOptions(prompts="photo", class_names="wordnet").parsed.kind
        'photo'
        >>> ZeroShotOptions(probabilities="double")
        Traceback (most recent call last):
        ...
        imagenet_suite.errors.ConfigError: probabilities 'double' is not one of softmax, hesse2025
    """

    prompts: str = "openai80"
    class_names: str = "clip"
    logit_scale: float | str | None = None
    probabilities: str = "softmax"
    device: str | torch.device = "cpu"
    cache_dir: str | Path | None = None
    text_batch_size: int = 1024
    progress: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "parsed", parse_prompts(str(self.prompts)))
        if self.class_names not in CLASS_NAMES:
            raise ConfigError(f"{param('class_names')} {self.class_names!r} is not one of {', '.join(CLASS_NAMES)}")
        if self.probabilities not in PROBABILITIES:
            raise ConfigError(
                f"{param('probabilities')} {self.probabilities!r} is not one of {', '.join(PROBABILITIES)}"
            )
        scale = self.logit_scale
        if scale is not None and scale != "model":
            number = float(scale) if isinstance(scale, (int, float)) and not isinstance(scale, bool) else math.nan
            if not (math.isfinite(number) and number > 0):
                raise ConfigError(f"{param('logit_scale')} must be a number > 0 or 'model', got {scale!r}")
        if (
            isinstance(self.text_batch_size, bool)
            or not isinstance(self.text_batch_size, int)
            or self.text_batch_size < 1
        ):
            raise ConfigError(f"{param('text_batch_size')} must be at least 1, got {self.text_batch_size!r}")
        try:
            torch.device(self.device)
        except (RuntimeError, TypeError) as err:
            raise ConfigError(f"{param('device')} {self.device!r} is not a torch device") from err


def cache_folder(options: ZeroShotOptions) -> Path | None:
    """Where text embeddings are cached (None: ``cache_dir="none"``)."""
    if str(options.cache_dir) == "none":
        return None
    if options.cache_dir is not None:
        return Path(options.cache_dir)
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("imagenet-suite")) / "zero-shot"


# -- open_clip models ----------------------------------------------------------------------------------


def tag_location(architecture: str, tag: str) -> str | None:
    """Where open_clip fetches a pretrained tag's weights from: ``hf-hub:<repo>`` or its URL."""
    cfg = import_open_clip().get_pretrained_cfg(architecture, tag) or {}
    hub = str(cfg.get("hf_hub") or "").strip("/")
    return f"hf-hub:{hub}" if hub else (cfg.get("url") or None)


def download_checkpoint(architecture: str, tag: str) -> Path:
    """The file of a pretrained tag (open_clip's ``download_pretrained``: its cache, else downloaded)."""
    open_clip = import_open_clip()
    return Path(open_clip.download_pretrained(open_clip.get_pretrained_cfg(architecture, tag)))


def tokenizer_of(spec: str, architecture: str) -> Callable[[list[str]], torch.Tensor]:
    """open_clip's tokenizer of ``architecture``; ConfigError (one line) when it cannot be made, e.g. a
    Hugging Face tokenizer (SigLIP) without the ``transformers`` package or the Hub."""
    open_clip = import_open_clip()
    try:
        with _quiet():
            return open_clip.get_tokenizer(architecture)
    except Exception as err:  # ImportError, OSError, HTTP errors: many types
        raise ConfigError(
            f"model {spec!r}: open_clip's tokenizer for {architecture} cannot be made ({type(err).__name__}: "
            f"{' '.join(str(err).split())[:200]}); Hugging Face tokenizers (SigLIP, ...) need the transformers "
            "package and, the first time, the Hugging Face Hub"
        ) from err


def create_clip(spec: str, architecture: str, tag: str | None, checkpoint: Path | None) -> tuple[nn.Module, Any]:
    """open_clip's model of ``architecture`` configured as ``tag`` says (QuickGELU, preprocessing) and its eval
    transform; ``checkpoint`` (the tag's file) loaded, else a random init (the caller seeds it)."""
    open_clip = import_open_clip()
    from open_clip.transform import PreprocessCfg, image_transform_v2

    cfg = (open_clip.get_pretrained_cfg(architecture, tag) if tag else None) or {}
    preprocess = {key: cfg[key] for key in PreprocessCfg.__dataclass_fields__ if key in cfg}
    try:
        with _quiet():
            model = open_clip.create_model(
                architecture,
                pretrained=None,
                force_quick_gelu=bool(cfg.get("quick_gelu")),
                force_preprocess_cfg=preprocess,
            )
            if checkpoint is not None:
                open_clip.load_checkpoint(model, str(checkpoint), strict=True)
    except ImagenetSuiteError:
        raise
    except Exception as err:  # hf text towers without transformers, checkpoints of another shape, ...
        raise ConfigError(
            f"model {spec!r}: open_clip cannot build {architecture} ({type(err).__name__}: "
            f"{' '.join(str(err).split())[:200]})"
        ) from err
    model.eval()
    return model, image_transform_v2(PreprocessCfg(**model.visual.preprocess_cfg), is_train=False)


@contextmanager
def _quiet():
    """open_clip logs on the root logger ("No pretrained weights loaded ..." for every random init)."""
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(previous)


# -- the classifier --------------------------------------------------------------------------------------


class ZeroShotHead(nn.Module):
    """``s · h @ tᵀ (+ b)`` for L2-normalised image embeddings ``h`` [n, d] and class text embeddings ``t``
    [C, d] (a buffer), then ``output``: ``logits`` (as is), ``softmax`` or ``sigmoid`` (Beyond Accuracy's
    wrappers). The order of operations is open_clip's (``logit_scale * image_features @ text_features.T``)."""

    def __init__(self, text: torch.Tensor, scale: float, bias: float | None, output: str = "logits"):
        super().__init__()
        self.register_buffer("text", text, persistent=False)
        self.scale = float(scale)
        self.bias = None if bias is None else float(bias)
        self.output = output

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        logits = self.scale * features @ self.text.T
        if self.bias is not None:
            logits = logits + self.bias
        if self.output == "softmax":
            return logits.softmax(dim=-1)
        if self.output == "sigmoid":
            return torch.sigmoid(logits)
        return logits


class ZeroShotClassifier(nn.Module):
    """An open_clip model (both towers: its parameters are counted as Beyond Accuracy counts them) with a
    zero-shot head: ``images -> head(normalize(encode_image(images)))``. ``record`` says how the head was
    made (:func:`head_record`); ``get_classifier()`` is the head (its input: the features)."""

    def __init__(self, clip: nn.Module, head: ZeroShotHead, record: dict[str, Any]):
        super().__init__()
        self.clip = clip
        self.head = head
        self.record = record

    def get_classifier(self) -> nn.Module:
        return self.head

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.head(F.normalize(self.clip.encode_image(images), dim=-1))

    def resize_only_transform(self) -> Any:
        """open_clip's eval transform with ``resize_mode="squash"``: the whole image resized to the input
        size, no centre crop (Anzaku et al. 2024, App. B)."""
        from open_clip.transform import PreprocessCfg, image_transform_v2

        cfg = PreprocessCfg(**{**self.clip.visual.preprocess_cfg, "resize_mode": "squash"})
        return image_transform_v2(cfg, is_train=False)


@dataclass(frozen=True)
class ModelKey:
    """What identifies the text tower whose embeddings are cached: ``architecture``, ``tag`` (its
    configuration) and ``weights_sha256`` (None: a random init, not cached)."""

    architecture: str
    tag: str | None
    weights_sha256: str | None


def build_classifier(
    clip: nn.Module, tokenizer: Callable, key: ModelKey, options: ZeroShotOptions
) -> ZeroShotClassifier:
    """The :class:`ZeroShotClassifier` of ``clip``: the class text embeddings of ``options`` (cached), the
    logit scale and bias, and the probability convention."""
    prompts = ClassPrompts(options.parsed, class_names(options.class_names))
    text = cached_text_embeddings(clip, tokenizer, prompts, key, options)
    scale, bias = logit_scale_and_bias(clip, options.logit_scale)
    output = "logits"
    if options.probabilities == "hesse2025":
        output = "sigmoid" if bias is not None else "softmax"
    head = ZeroShotHead(text, scale, bias, output)
    record = head_record(options, prompts, scale, bias, text)
    classifier = ZeroShotClassifier(clip, head, record)
    classifier.options, classifier.key = options, key  # for a head over other classes (ObjectNet's 113)
    return classifier


def logit_scale_and_bias(clip: nn.Module, logit_scale: float | str | None) -> tuple[float, float | None]:
    """``(s, b)``: 100 and no bias by default, the model's ``exp(logit_scale)`` and ``logit_bias`` for
    ``"model"`` or when the model has a logit bias (SigLIP), else the number given."""
    bias = getattr(clip, "logit_bias", None)
    if logit_scale == "model" or (logit_scale is None and bias is not None):
        return float(clip.logit_scale.exp()), (float(bias) if bias is not None else None)
    return float(DEFAULT_LOGIT_SCALE if logit_scale is None else logit_scale), None


def head_record(
    options: ZeroShotOptions, prompts: Sequence[tuple[str, ...]], scale: float, bias: float | None, text: torch.Tensor
) -> dict[str, Any]:
    """What the outputs file, predict's resume manifest and run.json record of a zero-shot head."""
    return {
        "library": "open_clip",
        "class_names": options.class_names,
        "prompts": options.parsed.text,
        "prompts_per_class": len(prompts[0]),
        "prompts_sha256": prompts_digest(prompts),
        "logit_scale": scale,
        "logit_bias": bias,
        "probabilities": options.probabilities,
        "probability_convention": PROBABILITIES[options.probabilities],
        "text_embeddings_sha256": tensor_digest(text),
    }


IDENTITY = ("class_names", "prompts_sha256", "prompts_per_class", "logit_scale", "logit_bias", "probabilities")


def head_identity(record: dict[str, Any]) -> dict[str, Any]:
    """The part of a head's record that decides its outputs (a prompts file by its content, not its path):
    what a resume manifest or run.json compares.

    Example:
        >>> record = {"prompts": "file:/tmp/t.txt", "class_names": "clip", "prompts_sha256": "ab", "prompts_per_class": 2,
        ...           "logit_scale": 100.0, "logit_bias": None, "probabilities": "softmax", "text_embeddings_sha256": "cd"}
        >>> head_identity(record)["prompts"], "text_embeddings_sha256" in head_identity(record)
        ('file', False)
    """
    prompts = str(record["prompts"])
    return {"prompts": "file" if prompts.startswith("file:") else prompts, **{key: record[key] for key in IDENTITY}}


def tensor_digest(tensor: torch.Tensor) -> str:
    """sha256 of a tensor's bytes (contiguous, on the CPU) and its dtype and shape."""
    data = tensor.detach().cpu().contiguous()
    header = f"{data.dtype}{tuple(data.shape)}".encode()
    return hashlib.sha256(header + data.view(torch.uint8).numpy().tobytes()).hexdigest()


# -- text embeddings and their cache ----------------------------------------------------------------------


def encode_prompts(
    clip: nn.Module, tokenizer: Callable, prompts: Sequence[tuple[str, ...]], options: ZeroShotOptions
) -> torch.Tensor:
    """``[C, d]`` float32 on the CPU: per class, its prompts encoded (L2-normalised), averaged and normalised
    again, as open_clip's ``build_zero_shot_classifier``; on ``options.device``, at most ``text_batch_size``
    prompts at a time — whole classes while a class has no more prompts than that, else each class in
    parts whose embeddings are summed, so that memory does not grow with the prompts per class. The model
    goes back to where it was (a loaded model stays on the CPU)."""
    device = torch.device(options.device)
    per_class = len(prompts[0])
    batch_size = options.text_batch_size
    home = next(clip.parameters()).device
    clip.to(device)

    def encoded(texts: Sequence[str]) -> torch.Tensor:
        return clip.encode_text(tokenizer(list(texts)).to(device), normalize=True).float()

    rows = []
    bar = tqdm(total=len(prompts), unit="class", desc="zero-shot head", disable=not options.progress)
    try:
        with torch.inference_mode():
            classes_per_batch = max(1, batch_size // per_class)
            for start in range(0, len(prompts), classes_per_batch):
                batch = prompts[start : start + classes_per_batch]
                if per_class <= batch_size:
                    embeddings = encoded([text for row in batch for text in row])
                    embeddings = embeddings.reshape(len(batch), per_class, -1).mean(dim=1)
                else:  # one class whose prompts are more than a batch: summed part by part
                    (row,) = batch
                    total = sum(encoded(row[at : at + batch_size]).sum(dim=0) for at in range(0, per_class, batch_size))
                    embeddings = (total / per_class)[None]
                rows.append((embeddings / embeddings.norm(dim=1, keepdim=True)).cpu())
                bar.update(len(batch))
    finally:
        bar.close()
        clip.to(home)
    return torch.cat(rows)


def cache_key(key: ModelKey, prompts: Sequence[tuple[str, ...]], options: ZeroShotOptions) -> dict[str, str] | None:
    """The record a cached file must hold to be used (None: not cached — a random init, or no cache)."""
    if key.weights_sha256 is None or cache_folder(options) is None:
        return None
    return {
        "architecture": key.architecture,
        "tag": str(key.tag),
        "weights_sha256": key.weights_sha256,
        "device_type": torch.device(options.device).type,
        "open_clip": str(import_open_clip().__version__),
        "prompts_sha256": prompts_digest(prompts),
    }


def cached_text_embeddings(
    clip: nn.Module, tokenizer: Callable, prompts: Sequence[tuple[str, ...]], key: ModelKey, options: ZeroShotOptions
) -> torch.Tensor:
    """:func:`encode_prompts`, read from the cache when a checked file is there, else computed and written
    (atomically). A file that fails its check is named in one warning line and replaced."""
    record = cache_key(key, prompts, options)
    if record is None:
        return encode_prompts(clip, tokenizer, prompts, options)
    path = Path(cache_folder(options)) / f"{hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()}.pt"
    if path.is_file():
        try:
            return read_cached(path, record, len(prompts))
        except ConfigError as err:
            _LOG.warning("zero-shot head: %s; computing it again", err)
    text = encode_prompts(clip, tokenizer, prompts, options)
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {"format": CACHE_FORMAT, "key": record, "embeddings": text, "sha256": tensor_digest(text)}
    atomic_write_bytes(path, torch_bytes(entry), durable=False, shared=True)
    return text


def read_cached(path: Path, record: dict[str, str], classes: int) -> torch.Tensor:
    """The embeddings of a cache file after checking it: its format, its key equal to ``record``, a finite
    float32 ``[classes, d]`` tensor whose sha256 is the one stored; ConfigError naming the file otherwise."""
    data = load_torch_file(path, ConfigError, CACHE_CONTRACT, name=f"cached text embeddings {path}")
    if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT:
        raise ConfigError(f"cached text embeddings {path}: not of format {CACHE_FORMAT}")
    if data.get("key") != record:
        raise ConfigError(f"cached text embeddings {path}: made for another model or prompts")
    text = data.get("embeddings")
    if not isinstance(text, torch.Tensor) or text.dtype != torch.float32 or text.ndim != 2 or len(text) != classes:
        raise ConfigError(f"cached text embeddings {path}: expected a float32 [{classes}, d] tensor")
    if data.get("sha256") != tensor_digest(text) or not bool(torch.isfinite(text).all()):
        raise ConfigError(f"cached text embeddings {path}: its sha256 does not match its embeddings (corrupt)")
    return text


# -- detectors -------------------------------------------------------------------------------------------


def zero_shot_detector_stats(model: nn.Module) -> DetectorStats:
    """The zero-shot head as detector statistics: ``class_means`` = the class text embeddings (NINCO's
    ``cosine`` and MCM, i.e. ``rcos`` with T = 1, over the features ``predict --features`` stores: Ming et
    al. 2022's ``max_c softmax_c(cos(h, t_c))``), ``weight`` = ``s·t`` and ``bias`` = ``b`` (0 without one), so
    ``logits = weight·h + bias`` for ``softmax`` heads. ConfigError for a model that is not zero-shot.

    Example:
        Two classes whose text embeddings are the axes, scale 100:

        >>> import torch
        >>> head = ZeroShotHead(torch.eye(2), 100.0, None)
        >>> model = ZeroShotClassifier(nn.Identity(), head, {"prompts": "photo"})
        >>> stats = zero_shot_detector_stats(model)
        >>> stats.class_means.tolist(), stats.weight.tolist(), stats.bias.tolist()
        ([[1.0, 0.0], [0.0, 1.0]], [[100.0, 0.0], [0.0, 100.0]], [0.0, 0.0])
    """
    if not isinstance(model, ZeroShotClassifier):
        raise ConfigError(f"{param('zero_shot_stats')} needs an open_clip: zero-shot model")
    head = model.head
    text = head.text.detach().to("cpu", torch.float64)
    stats = DetectorStats(
        "ninco",
        weight=head.scale * text,
        bias=torch.full((len(text),), head.bias or 0.0, dtype=torch.float64),
        class_means=text,
    )
    stats.extra = {
        "class_statistics": f"zero-shot text embeddings ({model.record.get('prompts')}), not train features",
        "weight": f"logit scale {head.scale:g} times the text embeddings",
    }
    return stats


__all__ = [
    "CLASS_NAMES",
    "PROBABILITIES",
    "PROMPT_SETS",
    "ClassPrompts",
    "ModelKey",
    "Prompts",
    "ZeroShotClassifier",
    "ZeroShotHead",
    "ZeroShotOptions",
    "build_classifier",
    "check_context",
    "class_names",
    "head_identity",
    "parse_prompts",
    "prompt_texts",
    "prompts_digest",
    "read_templates",
    "taxonomy_prompt",
    "templates_of",
    "zero_shot_detector_stats",
]
