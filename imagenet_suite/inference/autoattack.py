"""Which attacks ``evaluate --attack`` runs, and AutoAttack "standard" (Croce & Hein 2020) on one batch.

Attack names (``--attack fgsm,pgd,autoattack-linf,autoattack-l2,autoattack-l1``, default ``fgsm,pgd``):

* ``fgsm``, ``pgd`` — Beyond Accuracy's (Hesse et al. 2025) FGSM and PGD at L∞ 8/255
  (:mod:`imagenet_suite.inference.adversarial`), the inputs of its adversarial-robustness dimension.
* ``autoattack-linf``, ``autoattack-l2``, ``autoattack-l1`` — AutoAttack ``version='standard'`` under
  L∞ ε = 4/255, L2 ε = 2.0 and L1 ε = 75.0 in [0, 1] pixel space: Heuillet et al. 2025's adversarial
  perturbation types ("p=1,2,∞, and ϵ=75.0, 2.0, 4/255 … standard choices in robustness benchmarks"; their
  code calls ``AutoAttack(model, norm=..., eps=..., version='standard')`` then
  ``run_standard_evaluation``). ``name:eps=VALUE`` (``autoattack-linf:eps=8/255``) sets another radius
  (a number or a fraction ``a/b``).

AutoAttack is the authors' code (fra31/auto-attack), as packaged on PyPI by ``pyautoattack`` (the
package RobustBench depends on; extra ``imagenet-suite[autoattack]``): its attack modules are those of
fra31/auto-attack's HEAD a392200 (only their imports differ), so "standard" is exactly the published
protocol: APGD-CE, APGD-T, FAB-T and Square in turn, each on the rows still classified correctly (the
per-image worst case), with 100 iterations, 9 target classes (5 for APGD-T under L1, where APGD runs 5
restarts with its larger-ε schedule) and 5000 Square queries. The robust accuracy of a batch is
``run_standard_evaluation``'s: a row counts when the model is right on it clean and on the returned
image. torchattacks' ``AutoAttack`` is not used: it has no L1, and its "standard" differs from the
original (10 iterations, and ``n_classes - 1`` target classes: 999 on ImageNet).

Determinism: AutoAttack seeds every attack with its ``seed``; batch ``i`` runs with ``seed + i`` inside
``torch.random.fork_rng`` (as PGD's start), so a result depends on the seed and the batch size only.

Example:
    >>> from imagenet_suite.inference.autoattack import parse_attacks
    >>> [spec.label for spec in parse_attacks(["fgsm", "autoattack-l2", "autoattack-linf:eps=8/255"])]
    ['fgsm', 'autoattack-l2', 'autoattack-linf:eps=0.0313725']
    >>> parse_attacks(["autoattack-l3"])
    Traceback (most recent call last):
    ...
    imagenet_suite.errors.ConfigError: attacks: unknown attack 'autoattack-l3'; expected one of fgsm, pgd, ...
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata

import torch
from torch import nn

from ..errors import ConfigError, param

FGSM, PGD = "fgsm", "pgd"
AUTOATTACK_NORMS = {"autoattack-linf": "Linf", "autoattack-l2": "L2", "autoattack-l1": "L1"}
"""AutoAttack's attack names and their ``norm`` argument."""
AUTOATTACK_EPS = {"autoattack-linf": 4 / 255, "autoattack-l2": 2.0, "autoattack-l1": 75.0}
"""Heuillet et al. 2025's radii (Sec. 3.1; their config's ``epsilon: 0.015686275`` is 4/255), [0, 1] pixels."""
ATTACKS = (FGSM, PGD, *AUTOATTACK_NORMS)
DEFAULT_ATTACKS = (FGSM, PGD)
STANDARD = ("apgd-ce", "apgd-t", "fab-t", "square")
"""AutoAttack "standard"'s attacks, in the order they run."""
ITERATIONS, QUERIES = 100, 5000
"""AutoAttack "standard"'s iterations of APGD-CE, APGD-T and FAB-T, and Square's queries."""
EXTRA = "imagenet-suite[autoattack]"


@dataclass(frozen=True)
class AttackSpec:
    """One attack to run: its ``name`` (:data:`ATTACKS`) and, for AutoAttack, its radius ``eps`` in [0, 1]
    pixel units (None for FGSM and PGD, whose settings are :class:`~imagenet_suite.inference.adversarial.AttackOptions`')."""

    name: str
    eps: float | None = None

    @property
    def norm(self) -> str | None:
        """AutoAttack's ``norm`` (``Linf``, ``L2``, ``L1``); None for FGSM and PGD."""
        return AUTOATTACK_NORMS.get(self.name)

    @property
    def label(self) -> str:
        """The perturbation type it gives a run: its name, with ``:eps=`` when the radius is not the default."""
        if self.eps is None or self.eps == AUTOATTACK_EPS[self.name]:
            return self.name
        return f"{self.name}:eps={self.eps:.6g}"


def parse_attack(text: str | AttackSpec) -> AttackSpec:
    """``name`` or ``name:eps=VALUE`` (VALUE a positive number or fraction ``a/b``) as an :class:`AttackSpec`,
    AutoAttack's default radius filled in; ConfigError naming ``attacks`` otherwise."""
    if isinstance(text, AttackSpec):
        text = text.name if text.eps is None else f"{text.name}:eps={text.eps!r}"
    if not isinstance(text, str):
        raise ConfigError(f"{param('attacks')}: expected attack names, got {type(text).__name__}")
    name, _, setting = text.strip().partition(":")
    if name not in ATTACKS:
        raise ConfigError(f"{param('attacks')}: unknown attack {name!r}; expected one of {', '.join(ATTACKS)}")
    if name not in AUTOATTACK_NORMS:
        if setting:
            raise ConfigError(
                f"{param('attacks')}: {text!r}: {name} is Beyond Accuracy's fixed protocol (L∞ eps 8/255); "
                "only the autoattack-* attacks take :eps="
            )
        return AttackSpec(name)
    if not setting:
        return AttackSpec(name, AUTOATTACK_EPS[name])
    key, _, value = setting.partition("=")
    eps = _positive(value) if key == "eps" else None
    if eps is None:
        raise ConfigError(f"{param('attacks')}: {text!r}: expected {name}:eps=VALUE, VALUE a positive number or a/b")
    if name == "autoattack-linf" and eps > 1:
        raise ConfigError(f"{param('attacks')}: {text!r}: an L∞ radius above 1 covers all of [0, 1] pixel space")
    return AttackSpec(name, eps)


def _positive(text: str) -> float | None:
    numerator, slash, denominator = text.partition("/")
    try:
        value = float(numerator) / float(denominator) if slash else float(numerator)
    except (ValueError, ZeroDivisionError):
        return None
    return value if math.isfinite(value) and value > 0 else None


def parse_attacks(items: Sequence[str | AttackSpec] | str) -> tuple[AttackSpec, ...]:
    """The attacks of ``items`` (names as :func:`parse_attack` reads them, or one comma-separated string),
    in order; at least one, each name once; ConfigError naming ``attacks`` otherwise."""
    if isinstance(items, str):
        items = [item for item in items.split(",") if item.strip()] or [""]
    specs = tuple(parse_attack(item) for item in items)
    if not specs:
        raise ConfigError(f"{param('attacks')}: name at least one attack ({', '.join(ATTACKS)})")
    names = [spec.name for spec in specs]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ConfigError(f"{param('attacks')}: {repeated[0]} is named twice; each attack runs once, at one radius")
    return specs


def library_version() -> str:
    """``pyautoattack <version>``; ConfigError (one line, how to install it) when it is not installed."""
    try:
        return f"pyautoattack {metadata.version('pyautoattack')}"
    except metadata.PackageNotFoundError as err:
        raise ConfigError(
            f"{param('attacks')} autoattack-*: AutoAttack (the pyautoattack package) is not installed; "
            f"pip install '{EXTRA}'"
        ) from err


@dataclass(frozen=True)
class AutoAttackRun:
    """AutoAttack "standard" of one :class:`AttackSpec` against ``model`` (images in [0, 1] → logits).

    ``iterations`` and ``queries`` are the standard's (100, 5000); fewer make it faster and weaker, for
    quick checks only (a result records them).
    """

    spec: AttackSpec
    iterations: int = ITERATIONS
    queries: int = QUERIES

    def __call__(self, model: nn.Module, images: torch.Tensor, labels: torch.Tensor, seed: int) -> torch.Tensor:
        """Bool flags: right on the image clean and on what AutoAttack returns for it (``run_standard_evaluation``
        on this batch, ``seed``ed inside ``fork_rng``; the caller's RNG and tracer are kept)."""
        from pyautoattack import AutoAttack

        cuda = list(range(torch.cuda.device_count())) if images.device.type == "cuda" else []
        tracer = sys.gettrace()  # its check for dynamic defences sets and clears sys.settrace
        try:
            with torch.random.fork_rng(devices=cuda):
                attack = AutoAttack(
                    model, norm=self.spec.norm, eps=self.spec.eps, seed=seed, version="standard", device=images.device
                )
                self._configure(attack)
                _, predicted = attack.run_standard_evaluation(images, labels, batch_size=len(images))
        finally:
            sys.settrace(tracer)
        return predicted == labels

    def _configure(self, attack) -> None:
        if self.iterations != ITERATIONS:
            for apgd in (attack.apgd, attack.apgd_targeted):
                apgd.n_iter = apgd.n_iter_orig = self.iterations
            attack.fab.n_iter = self.iterations
        attack.square.n_queries = self.queries

    def record(self) -> dict[str, object]:
        """What the result depends on, for adversarial.json and the resume manifest."""
        return {
            "norm": self.spec.norm,
            "eps": self.spec.eps,
            "version": "standard",
            "attacks": list(STANDARD),
            "iterations": self.iterations,
            "queries": self.queries,
            "library": library_version(),
        }


def check_budget(iterations: int, queries: int) -> None:
    """ConfigError naming the option unless AutoAttack's ``iterations`` >= 5 (its L1 schedule splits them
    30/30/40 %) and ``queries`` >= 1."""
    for name, value, minimum in (("autoattack_iterations", iterations, 5), ("autoattack_queries", queries, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ConfigError(f"{param(name)} must be an integer of at least {minimum}, got {value!r}")


__all__ = [
    "ATTACKS",
    "AUTOATTACK_EPS",
    "AUTOATTACK_NORMS",
    "DEFAULT_ATTACKS",
    "FGSM",
    "ITERATIONS",
    "PGD",
    "QUERIES",
    "STANDARD",
    "AttackSpec",
    "AutoAttackRun",
    "check_budget",
    "library_version",
    "parse_attack",
    "parse_attacks",
]
