"""How a build runs: :class:`BuildOptions`, everything :func:`~.runner.build_dataset` takes beside the
builder, the output folder and the configs.

One frozen object, made once by its caller (``imagenet-suite build`` makes it from its flags) and
checked when it is made: a bad value raises ConfigError naming the field (``num_proc must be ≥ 1, got 0``;
marked with :func:`imagenet_suite.errors.param`), which the command line shows as its flag
(``--num-proc must be ≥ 1, got 0``).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, param
from ..images import DEFAULT_MAX_PIXELS, ImageChecks
from ..limits import check_limit
from .executors import Executor, check_executor
from .transform import RowTransform


@dataclass(frozen=True)
class BuildOptions:
    """Everything a build takes beside the builder's name, the output folder and the configs.

    Every field has a default; the output bytes depend only on ``seed``, ``builder_options``,
    ``shard_size``, ``transform`` and the sources, never on ``num_proc`` or ``executor``.

    Attributes:
        seed: seed of seeded builders (an integer; ignored by the others, recorded always).
        manual_dir: folder holding manually supplied (gated) source files; None: no such folder. A
            symlink in it that leads outside it is refused.
        num_proc: worker processes computing shards, 1 to 512 (:data:`imagenet_suite.limits.LIMITS`); with
            ``executor="ray"`` and no cluster, the CPUs of the local Ray cluster started.
        builder_options: the builder's options by name (``Builder.OPTIONS``; values as Python
            values or as the strings the command line passes, e.g. ``{"nested": "true"}``).
        offline: never download (None: ``$IMAGENET_SUITE_OFFLINE`` / ``$HF_HUB_OFFLINE`` decide).
        pins: overrides of the builder's pinned files, by file name: ``{"size": bytes, "sha256": hex}``
            (:func:`~.sources.read_pins_file` reads them from a ``checksums.tsv``); None: the builder's.
        cache_dir: download cache (None: :func:`~.sources.default_cache_dir`).
        shard_size: examples per Parquet shard (≥ 1; None: the config's).
        inputs: built dataset folders the builder reads (e.g. ``imagenet_val`` for ``patchml``), a
            sequence of paths (kept as a tuple).
        progress: show progress bars (on stderr).
        transform: a change applied to the rows of every config (:class:`~.transform.RowTransform`),
            e.g. review decisions (:class:`imagenet_suite.review.rebuild.ReviewApplication`: a new
            version with the decided rows dropped or flagged, in a folder suffixed
            ``-reviewed-<action>-<sha256[:8]>``); None: the rows as the builder makes them.
        max_pixels: refuse released images with more pixels (width x height) than this (≥ 1; None:
            no bound); see :class:`imagenet_suite.images.ImageChecks`.
        deep_verify: also decode every released image (slower; catches corrupt compressed data).
        executor: where shards are computed (:mod:`~.executors`): ``"local"`` (``num_proc``
            processes), ``"ray"`` (Ray tasks; the cluster at ``ray_address`` or ``$RAY_ADDRESS``, else a
            local one with ``num_proc`` CPUs), or an :class:`~.executors.Executor`, which the build uses
            and leaves open.
        ray_address: the Ray cluster (``HOST:PORT``, ``ray://HOST:PORT`` or ``auto``); only with
            ``executor="ray"``.

    Example:
        >>> from dataclasses import replace
        >>> from imagenet_suite.core.options import BuildOptions
        >>> options = BuildOptions(seed=3, num_proc=2, builder_options={"nested": "true"}, progress=False)
        >>> options.num_proc, options.inputs, options.checks
        (2, (), ImageChecks(max_pixels=89478485, deep=False))
        >>> replace(options, inputs=["datasets/imagenet_val-1.0.0"]).inputs
        ('datasets/imagenet_val-1.0.0',)
        >>> BuildOptions(shard_size=0)
        Traceback (most recent call last):
        ...
        imagenet_suite.errors.ConfigError: shard_size must be ≥ 1, got 0

        A build with them: ``build_dataset("kmeans_hierarchy", "datasets", options=options)``
        (:func:`imagenet_suite.core.build_dataset`).
    """

    seed: int = 0
    manual_dir: str | Path | None = None
    num_proc: int = 1
    builder_options: Mapping[str, Any] = field(default_factory=dict)
    offline: bool | None = None
    pins: Mapping[str, Mapping[str, Any]] | None = None
    cache_dir: str | Path | None = None
    shard_size: int | None = None
    inputs: Sequence[str | Path] = ()
    progress: bool = True
    transform: RowTransform | None = None
    max_pixels: int | None = DEFAULT_MAX_PIXELS
    deep_verify: bool = False
    executor: str | Executor = "local"
    ray_address: str | None = None

    def __post_init__(self) -> None:
        _integer("seed", self.seed)
        check_limit("num_proc", self.num_proc)
        if self.shard_size is not None and _integer("shard_size", self.shard_size) < 1:
            raise ConfigError(f"{param('shard_size')} must be ≥ 1, got {self.shard_size}")
        if self.max_pixels is not None and _integer("max_pixels", self.max_pixels) < 1:
            raise ConfigError(f"{param('max_pixels')} must be a positive number of pixels, got {self.max_pixels}")
        if not isinstance(self.builder_options, Mapping):
            raise ConfigError(
                f"{param('builder_options')} must map option names to values, got {self.builder_options!r}"
            )
        if isinstance(self.inputs, (str, Path)):
            raise ConfigError(
                f"{param('inputs')} must be a sequence of folders, got the single path {str(self.inputs)!r}"
            )
        if isinstance(self.executor, str):
            check_executor(self.executor, self.ray_address)
        object.__setattr__(self, "builder_options", dict(self.builder_options))
        object.__setattr__(self, "inputs", tuple(self.inputs))

    @property
    def checks(self) -> ImageChecks:
        """The image checks of ``max_pixels`` and ``deep_verify``."""
        return ImageChecks(self.max_pixels, self.deep_verify)


def _integer(name: str, value: Any) -> int:
    """``value`` as an int (bool refused); ConfigError naming the field otherwise."""
    try:
        if isinstance(value, bool):
            raise TypeError
        return operator.index(value)
    except TypeError as err:
        raise ConfigError(f"`{name}` must be an integer, got {value!r}") from err


__all__ = ["BuildOptions"]
