"""Randomness that depends only on a seed and an example's key, never on worker or iteration order."""

from __future__ import annotations

import hashlib
import json

import numpy as np


def example_rng(seed: int, *key: str | int) -> np.random.Generator:
    """A numpy Generator seeded by ``seed`` and an example key (any strings/ints).

    Independent of worker, process and iteration order: the same (seed, key) always gives the
    same stream, and different keys give independent streams (SeedSequence hashing).
    """
    digest = hashlib.sha256(json.dumps([str(k) for k in key]).encode()).digest()
    words = np.frombuffer(digest, dtype=np.uint32).tolist()
    seed_bits = int(seed) % (1 << 64)  # any integer seed, negative ones included
    return np.random.default_rng(np.random.SeedSequence([seed_bits & 0xFFFFFFFF, seed_bits >> 32, *words]))


__all__ = ["example_rng"]
