"""Library errors in the command line's words: parameters become the flags that set them.

Library code names a Python parameter (or field) in its messages in backticks, e.g.
``ConfigError("`num_proc` must be ≥ 1, got 0")`` (:class:`imagenet_suite.core.options.BuildOptions`),
and never a flag. ``cli.main`` prints every error through :func:`in_flags`, which writes the flag
of each backticked parameter listed in ``FLAGS`` in its place: ``--num-proc must be ≥ 1, got 0``.
Backticked text that is not in ``FLAGS`` (a command, an extra's name) stays as written.

A parameter has one flag in every command that takes it; a new one a library message names gets
its row here.
"""

from __future__ import annotations

import re

FLAGS = {
    # imagenet-suite build (BuildOptions) and the commands sharing its flags
    "out_dir": "--out",
    "seed": "--seed",
    "manual_dir": "--manual-dir",
    "inputs": "--input",
    "num_proc": "--num-proc",
    "executor": "--executor",
    "ray_address": "--ray-address",
    "builder_options": "--option",
    "pins": "--pins",
    "shard_size": "--shard-size",
    "max_pixels": "--max-pixels",
    "deep_verify": "--deep-verify",
    # a built dataset's config and split (score, predict, review, ...)
    "config": "--config",
    "split": "--split",
    # push
    "repo_id": "--repo-id",
    "private=False": "--public",
}

_BACKTICKED = re.compile(r"`([^`\s]+)`")


def in_flags(message: str) -> str:
    """``message`` with each backticked parameter of ``FLAGS`` written as its flag.

    >>> in_flags("`ray_address` is only used with `executor` ray (install the `ray` extra)")
    '--ray-address is only used with --executor ray (install the `ray` extra)'
    """
    return _BACKTICKED.sub(lambda m: FLAGS.get(m.group(1), m.group(0)), message)


__all__ = ["FLAGS", "in_flags"]
