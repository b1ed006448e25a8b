"""What a model library states about a model spec, nothing loaded or fetched: the weights tag a spec resolves
to and where its weights live (:func:`timm_tag`, :func:`torchvision_tag`, :func:`open_clip_tag`, used by
:func:`imagenet_suite.inference.models.resolve_weights`), and the model's architecture family and pretraining
data (:func:`library_metadata`), recorded in run.json and suite.json (``weights_source.family`` and
``weights_source.pretraining``) so that ``leaderboard`` can group models without a ``--groups`` file.

What each library states (:func:`library_metadata`):

* timm — ``family``: the module of timm that holds the architecture's entrypoint (``resnet``,
  ``vision_transformer``, ``convnext``, ...: ``timm.models.model_entrypoint(name).__module__``);
  ``pretraining``: the data the pretrained tag names (timm's pretrained_cfg ``tag``), its dataset tokens
  (:data:`TIMM_DATA`) from the first on, with ``ft`` between them: ``a1_in1k`` -> ``in1k``,
  ``augreg_in21k_ft_in1k`` -> ``in21k_ft_in1k``, ``fb_in22k`` -> ``in22k``; None when the tag names no
  dataset (``dino``, ``mae``).
* torchvision — ``family``: the module of its model builder (``torchvision.models.get_model_builder(name)``:
  ``resnet``, ``vision_transformer``, ...); ``pretraining``: the weights enum member without its version
  (``IMAGENET1K_V2`` -> ``IMAGENET1K``, ``IMAGENET1K_SWAG_E2E_V1`` -> ``IMAGENET1K_SWAG_E2E``).
* open_clip — ``family``: the architecture (``ViT-B-32``; open_clip has no family of its own);
  ``pretraining``: the pretrained tag without its schedule tokens (samples seen ``s34b``, batch size
  ``b79k``, epochs ``e32``): ``laion2b_s34b_b79k`` -> ``laion2b``, ``openai`` -> ``openai``.
* a user model (``module:callable``, ``file.py:callable``) — nothing: both None.

These are statements of the tag, also for a random init or a weights file (where the tag chose the
architecture's configuration and preprocessing only): ``weights_source.loaded`` says whether the tag's
pretrained weights were the ones used.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from ..errors import ConfigError
from . import zero_shot

TIMM_DATA = re.compile(
    r"^(in\d+k|inw21k|ig\d+[bm]|yfcc\d+m|laion\w*|openai|lvd\d+m|jft\d*m?|webli|cc\d+m|m38m|dfn\d+[bm]|"
    r"datacomp\w*|metaclip|merged2b)$"
)
"""The tokens of a timm pretrained tag that name a dataset (ImageNet-1k/-12k/-21k/-22k, Instagram, YFCC,
LAION, OpenAI's CLIP data, LVD, JFT, WebLI, CC, DFN, DataComp, MetaCLIP)."""
OPEN_CLIP_SCHEDULE = re.compile(r"^(s\d+[kmb]|b\d+k|e\d+)$")
"""The tokens of an open_clip pretrained tag that name its schedule, not its data."""


def library_metadata(library: str | None, architecture: str, tag: str | None) -> dict[str, str | None]:
    """``{"family": ..., "pretraining": ...}`` that ``library`` states for ``architecture`` and its resolved
    weights ``tag`` (module docstring); both None for a user model (``library`` None).

    Example:
        The family is where the library keeps the architecture; the pretraining data is read off the tag:

        >>> library_metadata("timm", "vit_base_patch16_224", "augreg_in21k_ft_in1k")
        {'family': 'vision_transformer', 'pretraining': 'in21k_ft_in1k'}
        >>> library_metadata("timm", "vit_small_patch16_224", "dino")
        {'family': 'vision_transformer', 'pretraining': None}
        >>> library_metadata("torchvision", "resnet50", "IMAGENET1K_V2")
        {'family': 'resnet', 'pretraining': 'IMAGENET1K'}
        >>> library_metadata("open_clip", "ViT-B-32", "laion2b_s34b_b79k")
        {'family': 'ViT-B-32', 'pretraining': 'laion2b'}
        >>> library_metadata(None, "my_models:net", None)
        {'family': None, 'pretraining': None}
    """
    if library == "timm":
        from timm.models import model_entrypoint

        family = model_entrypoint(architecture).__module__.rpartition(".")[2]
        return {"family": family, "pretraining": timm_pretraining(tag)}
    if library == "torchvision":
        import torchvision

        family = torchvision.models.get_model_builder(architecture).__module__.rpartition(".")[2]
        pretraining = re.sub(r"_V\d+$", "", tag) if tag else None
        return {"family": family, "pretraining": pretraining}
    if library == "open_clip":
        kept = [token for token in (tag or "").split("_") if token and not OPEN_CLIP_SCHEDULE.match(token)]
        return {"family": architecture, "pretraining": "_".join(kept) or None}
    return {"family": None, "pretraining": None}


def timm_pretraining(tag: str | None) -> str | None:
    """The data a timm pretrained tag names: its :data:`TIMM_DATA` tokens from the first on, joined by ``_``
    with the ``ft`` (fine-tuned on) tokens between them; None when it names none.

    Example:
        >>> timm_pretraining("clip_laion2b_ft_in12k_in1k"), timm_pretraining("fb_swsl_ig1b_ft_in1k_384")
        ('laion2b_ft_in12k_in1k', 'ig1b_ft_in1k')
        >>> timm_pretraining("r160_in1k"), timm_pretraining("mae") is None
        ('in1k', True)
    """
    kept: list[str] = []
    for token in (tag or "").split("_"):
        if TIMM_DATA.match(token) or (token == "ft" and kept):
            kept.append(token)
    while kept and kept[-1] == "ft":
        kept.pop()
    return "_".join(kept) or None


def split_tag(spec: str, name: str) -> tuple[str, str | None]:
    architecture, dot, tag = name.partition(".")
    if dot and not tag:
        raise ConfigError(
            f"model {spec!r}: an empty weights tag after '.'; write {architecture} or {architecture}.<tag>"
        )
    return architecture, tag or None


def open_clip_tag(spec: str, name: str) -> tuple[str, str | None, str | None, str | None]:
    """``(architecture, tag, requested tag, where the tag's weights live)`` of an open_clip name, checked
    against ``open_clip.list_models()`` / ``list_pretrained()`` (offline). open_clip has no default tag."""
    open_clip = zero_shot.import_open_clip()
    architecture, requested = split_tag(spec, name)
    if architecture not in open_clip.list_models():
        close = difflib.get_close_matches(architecture, open_clip.list_models(), n=5, cutoff=0.5)
        raise ConfigError(f"model {spec!r}: open_clip has no model {architecture!r} (similar: {close})")
    tags = open_clip.list_pretrained_tags_by_model(architecture)
    if requested is not None and requested not in tags:
        raise ConfigError(
            f"model {spec!r}: open_clip has no pretrained tag {requested!r} for {architecture} "
            f"(valid: {', '.join(tags) if tags else 'none, write ' + architecture})"
        )
    if requested is None:
        return architecture, None, None, None
    return architecture, requested, requested, zero_shot.tag_location(architecture, requested)


def timm_tag(spec: str, name: str) -> tuple[str, str | None, str | None, str | None]:
    """``(architecture, resolved tag, requested tag, where the tag's weights live)`` of a timm name."""
    import timm
    from timm.models import get_arch_pretrained_cfgs, get_pretrained_cfg

    architecture, requested = split_tag(spec, name)
    if not timm.is_model(architecture):
        close = timm.list_models(f"*{architecture.split('_')[0]}*")[:5]
        raise ConfigError(f"model {spec!r}: timm has no model {architecture!r} (similar: {close})")
    tags = [key.partition(".")[2] for key in get_arch_pretrained_cfgs(architecture)]
    if requested is not None and requested not in tags:
        raise ConfigError(
            f"model {spec!r}: timm has no pretrained tag {requested!r} for {architecture} "
            f"(valid: {', '.join(tags) if tags else 'none, write ' + architecture})"
        )
    cfg = get_pretrained_cfg(f"{architecture}.{requested}" if requested else architecture)
    if cfg is None:
        return architecture, None, requested, None
    location = f"hf-hub:{cfg.hf_hub_id}" if cfg.hf_hub_id else (cfg.url or cfg.file or None)
    return architecture, cfg.tag or None, requested, location


def torchvision_tag(spec: str, name: str) -> tuple[str, str | None, str | None, str | None]:
    """``(architecture, resolved enum member, requested member, its URL)`` of a torchvision name."""
    import torchvision

    architecture, requested = split_tag(spec, name)
    if architecture not in torchvision.models.list_models():
        raise ConfigError(f"model {spec!r}: torchvision has no model {architecture!r}")
    enum = torchvision_enum(architecture)
    members = [] if enum is None else [member for member in enum.__members__ if member != "DEFAULT"]
    if requested is not None and (enum is None or requested not in enum.__members__):
        valid = ", ".join(members + ([f"DEFAULT = {enum['DEFAULT'].name}"] if enum is not None else [])) or "none"
        raise ConfigError(
            f"model {spec!r}: torchvision has no weights {requested!r} for {architecture} (valid: {valid})"
        )
    if enum is None:
        return architecture, None, requested, None
    member = enum[requested or "DEFAULT"]
    return architecture, member.name, requested, member.url


def torchvision_enum(architecture: str) -> Any:
    """torchvision's weights enum of ``architecture`` (None when it has none)."""
    import torchvision

    try:
        return torchvision.models.get_model_weights(architecture)
    except (ValueError, KeyError, AttributeError):
        return None


__all__ = [
    "OPEN_CLIP_SCHEDULE",
    "TIMM_DATA",
    "library_metadata",
    "open_clip_tag",
    "split_tag",
    "timm_pretraining",
    "timm_tag",
    "torchvision_enum",
    "torchvision_tag",
]
