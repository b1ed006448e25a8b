"""The bounds of the numeric parameters that scale a run's time or memory: one table (:data:`LIMITS`), one check.

A value outside its bound is refused (ConfigError naming the parameter: :func:`imagenet_suite.errors.param`)
before any work: the options dataclasses that hold these parameters check them when made (``PredictOptions``,
``SuiteOptions``, ``FitStatsOptions``, ``AttackOptions``, ``BuildOptions``, ``Bootstrap``; ``grid_of_folder`` of
``patchml`` its ``per_k``, Fig. 8's ``examples`` its ``examples``), and ``cli.main``
checks the parsed arguments of the same names first (:func:`check_limits`), before a command imports torch or
loads a model: this module imports nothing heavy. Both run :func:`check_limit`, so a value gets the same message
either way.

A bound is never about the data: a number larger than the data it draws from (``--adversarial`` above the rows
of the split, ``--per-class`` above a class's images) takes all of it, as each parameter's documentation says.
The upper bounds are ceilings no meaningful run reaches, chosen so that a typo (an extra digit, a pasted
number) is refused at once instead of running until killed; each entry says why (``why``), and the docs of
each command list them (``docs/evaluate.md``, ``docs/predict.md``, ``docs/ood.md``, ``docs/building.md``,
``docs/patchml.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError, param


@dataclass(frozen=True)
class Limit:
    """The integers a parameter accepts: ``minimum`` to ``maximum``, and None where ``none`` says what it means.

    ``low``: the message of a value below ``minimum`` or not an integer, a template with ``{value}``; ``why``:
    what the number counts and why the maximum is where it is, in a few words (the message of a value above
    it; the docs' tables say more).
    """

    minimum: int
    maximum: int
    low: str
    why: str
    none: str | None = None

    def message(self, name: str, value: Any) -> str | None:
        """Why ``value`` is refused for parameter ``name`` (None: accepted)."""
        if value is None and self.none is not None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < self.minimum:
            return f"{param(name)} {self.low.format(value=value)}"
        if value > self.maximum:
            return f"{param(name)} must be at most {self.maximum:,} ({self.why}), got {value:,}"
        return None


PROCESSES = 512
"""Worker processes (DataLoader workers, build processes, a local Ray cluster's CPUs): the hardware threads of a
two-socket server of 128-core CPUs. More processes than hardware threads add memory (each is a Python process
holding the reader and the transform), not speed."""

LIMITS: Mapping[str, Limit] = {
    "batch_size": Limit(
        1, 65_536, "must be at least 1, got {value}", "images per model call: 39 GB of float32 input at 224x224"
    ),
    "workers": Limit(
        0,
        PROCESSES,
        "must be 0 or more, got {value} (0: read images in the main process)",
        "DataLoader worker processes: the hardware threads of a two-socket server",
        none="min(4, CPUs)",
    ),
    "num_proc": Limit(
        1, PROCESSES, "must be ≥ 1, got {value}", "processes or CPUs: the hardware threads of a two-socket server"
    ),
    "bootstrap": Limit(
        0,
        100_000,
        "must be 0 (no intervals) or a number of resamples, got {value}",
        "bootstrap resamples: 100 times the default",
    ),
    "adversarial": Limit(
        0,
        50_000,
        "must be 0 (no attacks) or a number of images, got {value}",
        "images to attack: the images of ImageNet-1k val",
    ),
    "per_class": Limit(
        1,
        1_300,
        "must be a number of images per class, at least 1, or None (every row); got {value!r}",
        "images per class: the largest class of ImageNet-1k train",
        none="every row",
    ),
    "knn_rows": Limit(
        1,
        1_281_167,
        "must be a number of KNN bank rows, at least 1, or None (all rows); got {value!r}",
        "KNN bank rows: the images of ImageNet-1k train",
        none="every train row",
    ),
    "per_k": Limit(1, 100, "must be at least 1, got {value}", "composites of each k: 100 rows of 200-pixel panels"),
    "examples": Limit(1, 100, "must be at least 1, got {value}", "composites drawn: 100 rows of 260-pixel panels"),
}
"""Every bounded parameter, by its library name (also the ``dest`` of the flags that set it)."""


def check_limit(name: str, value: Any) -> Any:
    """``value`` if parameter ``name`` accepts it (:data:`LIMITS`), else ConfigError naming ``name``.

    Example:
        >>> from imagenet_suite.limits import check_limit
        >>> check_limit("batch_size", 256)
        256
        >>> check_limit("bootstrap", 10**9)
        Traceback (most recent call last):
        ...
        imagenet_suite.errors.ConfigError: bootstrap must be at most 100,000 (bootstrap resamples: 100 times the default), got 1,000,000,000
    """
    problem = LIMITS[name].message(name, value)
    if problem is not None:
        raise ConfigError(problem)
    return value


def check_limits(values: Any) -> None:
    """:func:`check_limit` on each attribute of ``values`` (an options object, parsed arguments) named in
    :data:`LIMITS`; the command line runs it on every command's arguments before anything else."""
    for name in LIMITS:
        if hasattr(values, name):
            check_limit(name, getattr(values, name))


__all__ = ["LIMITS", "PROCESSES", "Limit", "check_limit", "check_limits"]
