"""Evaluation protocols: the preprocessing each paper's numbers were measured under, so that a number
means what it means in its paper.

=============  ====================================================  ==========================================
protocol       preprocessing                                         numbers
=============  ====================================================  ==========================================
``hesse2025``  each model's own eval preprocessing (timm's resize +  QUBA (Hesse et al. 2025), top-1 and the
               centre crop, torchvision's weights transforms, ...)   accuracy tables, ReaL top-1 (Beyer et al.
                                                                     2020), Shankar et al.'s multi-label accuracy
``anzaku2024`` the multi-label sets resized whole to the model's     ASMA, variable top-k and ReaL accuracy of
               input size, no centre crop (Anzaku et al. 2024,       Anzaku et al. 2024 (ImageNet val with ReaL
               App. B), with the model's interpolation, mean, std    labels, PatchML)
=============  ====================================================  ==========================================

A *multi-label set* is a dataset config Anzaku et al.'s multi-label families apply to
(:func:`is_multilabel_set`: a ``labels`` or ``real_labels`` list-of-ClassLabel column). ``evaluate``
scores such a set once per protocol: ``<key>`` under ``hesse2025`` and ``<key>@anzaku2024`` under
``anzaku2024`` (:func:`protocol_key`). A build whose protocol says ``no center crop`` (PatchML) is
predicted only once, resize-only, under its own key. Every report ``evaluate`` writes names its
protocol in ``meta["preprocessing"]`` (:func:`report_protocol` reads it, and infers it for reports
written before).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import ConfigError, param

HESSE2025 = "hesse2025"
ANZAKU2024 = "anzaku2024"
PROTOCOLS: dict[str, str] = {
    HESSE2025: "each model's own eval preprocessing (resize, centre crop), as Hesse et al. 2025 (QUBA) "
    "and the accuracy tables use",
    ANZAKU2024: "multi-label sets resized to the model's input size without a centre crop (Anzaku et al. 2024, App. B)",
}
DEFAULT_PROTOCOLS: tuple[str, ...] = (HESSE2025, ANZAKU2024)
KEY_SEPARATOR = "@"
NO_CENTER_CROP = "no center crop"  # PatchML's protocol "preprocessing" says so (Anzaku et al. 2024, App. B)


def check_protocols(protocols: Sequence[str]) -> tuple[str, ...]:
    """``protocols`` as a tuple, checked: at least one, each a known name, none twice (ConfigError).

    Example:
        >>> check_protocols(["anzaku2024"])
        ('anzaku2024',)
        >>> check_protocols(["crop"])
        Traceback (most recent call last):
        ...
        imagenet_suite.errors.ConfigError: protocols: unknown protocol(s) ['crop']; known: ['anzaku2024', 'hesse2025']
    """
    if isinstance(protocols, str) or not isinstance(protocols, Sequence):
        raise ConfigError(f"{param('protocols')} must be a sequence of protocol names, got {protocols!r}")
    protocols = tuple(protocols)
    unknown = [name for name in protocols if name not in PROTOCOLS]
    if unknown:
        raise ConfigError(f"{param('protocols')}: unknown protocol(s) {unknown}; known: {sorted(PROTOCOLS)}")
    if not protocols or len(set(protocols)) != len(protocols):
        raise ConfigError(f"{param('protocols')} must name at least one protocol, each once, got {list(protocols)}")
    return protocols


def no_center_crop(protocol: Mapping[str, Any]) -> bool:
    """Whether a build's protocol says its images are resized whole, without a centre crop (PatchML)."""
    return NO_CENTER_CROP in str(protocol.get("preprocessing", ""))


def is_multilabel_set(features: Mapping[str, Any], protocol: Mapping[str, Any]) -> bool:
    """Whether Anzaku et al.'s multi-label families (ASMA) apply to a config with these features and protocol."""
    from ..families.multilabel import applies_to_labels, applies_to_real_labels  # the scorers: torch

    return applies_to_labels(features, protocol) or applies_to_real_labels(features, protocol)


def protocol_key(key: str, protocol: str) -> str:
    """The report key of ``key`` under ``protocol``: ``key`` under ``hesse2025``, else ``key@protocol``.

    Example:
        >>> protocol_key("imagenet_real/images", "anzaku2024"), protocol_key("imagenet_val", "hesse2025")
        ('imagenet_real/images@anzaku2024', 'imagenet_val')
    """
    return key if protocol == HESSE2025 else f"{key}{KEY_SEPARATOR}{protocol}"


def report_protocol(report: Mapping[str, Any]) -> str:
    """The protocol a report was measured under: ``meta.preprocessing.protocol``; for a report written
    before protocols were recorded, ``anzaku2024`` where its build says no centre crop, else ``hesse2025``.

    Example:
        >>> report_protocol({"meta": {"preprocessing": {"protocol": "anzaku2024"}}})
        'anzaku2024'
        >>> report_protocol({"meta": {"protocol": {"preprocessing": "resize, no center crop"}}})
        'anzaku2024'
        >>> report_protocol({"meta": {}})
        'hesse2025'
    """
    meta = report.get("meta") or {}
    preprocessing = meta.get("preprocessing")
    if isinstance(preprocessing, dict) and preprocessing.get("protocol"):
        return preprocessing["protocol"]
    return ANZAKU2024 if no_center_crop(meta.get("protocol") or {}) else HESSE2025


__all__ = [
    "ANZAKU2024",
    "DEFAULT_PROTOCOLS",
    "HESSE2025",
    "KEY_SEPARATOR",
    "NO_CENTER_CROP",
    "PROTOCOLS",
    "check_protocols",
    "is_multilabel_set",
    "no_center_crop",
    "protocol_key",
    "report_protocol",
]
