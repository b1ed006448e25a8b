"""Randomness that depends only on a seed and an example's key, never on worker or iteration order."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .errors import ConfigError, param

if TYPE_CHECKING:
    import numpy as np


def example_rng(seed: int, *key: str | int) -> np.random.Generator:
    """A numpy Generator seeded by ``seed`` and an example key (any strings/ints).

    Independent of worker, process and iteration order: the same (seed, key) always gives the
    same stream, and different keys give independent streams (SeedSequence hashing).
    """
    import numpy as np  # here, not at the top: the builders' metadata (``imagenet-suite list``) needs no NumPy

    digest = hashlib.sha256(json.dumps([str(k) for k in key]).encode()).digest()
    words = np.frombuffer(digest, dtype=np.uint32).tolist()
    seed_bits = int(seed) % (1 << 64)  # any integer seed, negative ones included
    return np.random.default_rng(np.random.SeedSequence([seed_bits & 0xFFFFFFFF, seed_bits >> 32, *words]))


def class_stratified(classes: Mapping[Any, Iterable[str]], per_class: int, seed: int) -> list[str]:
    """A seeded, class-stratified subset: ``per_class`` keys of every class (all of a smaller one), sorted.

    ``classes``: class -> its keys (any order; the class is named in the key of its RNG, so use a
    stable name or index). Each class's keys are sorted and permuted by ``example_rng(seed, "class
    subset", class)``, and the first ``per_class`` kept: the choice depends only on the seed, the class
    and its keys, never on the order given or on other classes, and a smaller ``per_class`` chooses a
    subset of a larger one's (same seed). The ``imagenet_train`` builder's ``subset`` option and
    ``ood fit-stats --per-class`` choose the same images this way.

    Example:
        Two of class ``"a"``'s three keys, the single key of ``"b"``; a smaller subset is nested in it:

        >>> chosen = class_stratified({"a": ["a1", "a2", "a3"], "b": ["b1"]}, 2, seed=0)
        >>> len(chosen), "b1" in chosen, set(class_stratified({"a": ["a3", "a1", "a2"]}, 1, seed=0)) < set(chosen)
        (3, True, True)
    """
    if isinstance(per_class, bool) or not isinstance(per_class, int) or per_class < 1:
        raise ConfigError(f"{param('per_class')} must be a number of images per class, at least 1; got {per_class!r}")
    chosen: list[str] = []
    for name, keys in classes.items():
        ordered = sorted(keys)
        order = example_rng(seed, "class subset", name).permutation(len(ordered))
        chosen += [ordered[i] for i in order[:per_class]]
    return sorted(chosen)


__all__ = ["class_stratified", "example_rng"]
