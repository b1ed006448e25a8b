"""Exception types of imagenet-suite. Every message names the file, row or argument at fault.

An argument is named by its Python parameter, marked with :func:`param`: ``str(err)`` shows the
parameter's name (``workers must be 0 or more, got -1``), and the command line shows the flag that
sets it instead (``--workers must be 0 or more, got -1``; :mod:`imagenet_suite.commands._flags`).
Library code never names a flag.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

_MARK = "\x00"  # around a parameter's name in a message: no path, argument or value can hold it
_MARKED = re.compile(r"\x00([A-Za-z_][A-Za-z0-9_]*)\x00")


def param(name: str) -> str:
    """``name``, a parameter of the library, as it is written inside an error message.

    ``str(err)`` shows ``name``; :meth:`ImagenetSuiteError.with_flags` (used by the command line) shows
    the flag that sets it instead.

    Example:
        >>> from imagenet_suite.errors import ConfigError, param
        >>> err = ConfigError(f"{param('batch_size')} must be at least 1, got 0")
        >>> str(err)
        'batch_size must be at least 1, got 0'
        >>> err.parameters
        ('batch_size',)
        >>> err.with_flags({"batch_size": "--batch-size"})
        '--batch-size must be at least 1, got 0'
    """
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise ValueError(f"param() takes a Python identifier, got {name!r}")
    return f"{_MARK}{name}{_MARK}"


LISTED = 10  # known choices a message names at most (more: the first ones, the last and their count)


def closest(value: str, known: Iterable[str]) -> str | None:
    """The one of ``known`` that ``value`` is most likely a misspelling of, or None when none is close:
    :func:`difflib.get_close_matches` (the highest similarity ratio, at least 0.6).

    Example:
        ``objectnett`` is ``objectnet`` with one letter more (ratio 2·9/19 ≈ 0.95); ``cifar10`` shares
        too little with either name:

        >>> from imagenet_suite.errors import closest
        >>> closest("objectnett", ["imagenet_a", "objectnet"])
        'objectnet'
        >>> closest("cifar10", ["imagenet_a", "objectnet"]) is None
        True
    """
    import difflib

    found = difflib.get_close_matches(value, list(known), n=1, cutoff=0.6)
    return found[0] if found else None


def unknown_choice(value: str, known: Iterable[str], noun: str) -> str:
    """How a message about ``value``, which is none of the ``known`` ``noun`` (a plural: "configs"), ends:
    ``did you mean 'x'?`` for the :func:`closest` one, else the known ones (more than :data:`LISTED`: the
    first, the last and their count).

    Example:
        >>> from imagenet_suite.errors import ConfigError, unknown_choice
        >>> names = ["default", "boxes"]
        >>> str(ConfigError(f"no config 'boxs'; {unknown_choice('boxs', names, 'configs')}"))
        "no config 'boxs'; did you mean 'boxes'?"
        >>> unknown_choice("labels", names, "configs")
        'known configs: default, boxes'
        >>> unknown_choice("x", [f"c{i}" for i in range(95)], "configs")
        'known configs: c0, c1, c2, c3, c4, c5, c6, c7, c8, …, c94 (95 in all)'
    """
    known = [str(name) for name in known]
    match = closest(value, known)
    if match is not None:
        return f"did you mean {match!r}?"
    if not known:
        return f"there are no {noun}"
    if len(known) <= LISTED:
        return f"known {noun}: {', '.join(known)}"
    return f"known {noun}: {', '.join(known[: LISTED - 1])}, …, {known[-1]} ({len(known)} in all)"


class ImagenetSuiteError(Exception):
    """Base class: an error a user can act on (the CLI prints it without a traceback).

    Parameters named in the message with :func:`param` are listed by :attr:`parameters`.
    """

    def _marked(self) -> str:
        return str(self.args[0]) if len(self.args) == 1 else Exception.__str__(self)

    def __str__(self) -> str:
        return self.with_flags({})

    @property
    def parameters(self) -> tuple[str, ...]:
        """The parameters the message names (:func:`param`), in order of appearance."""
        return tuple(dict.fromkeys(_MARKED.findall(self._marked())))

    def with_flags(self, flags: Mapping[str, str]) -> str:
        """The message with each parameter it names written as ``flags[parameter]`` (its name if absent)."""
        return _MARKED.sub(lambda found: flags.get(found[1], found[1]), self._marked())


class SourceError(ImagenetSuiteError):
    """A source file is missing, has the wrong size or sha256, or cannot be downloaded."""


class ManualFileMissing(SourceError):
    """A gated file the user must supply was not found in the manual directory."""


class ChecksumMismatch(SourceError):
    """A file's size or sha256 differs from the pinned value."""


class InvalidSourceData(ImagenetSuiteError):
    """A source file is present but its content is not what the builder expects."""


class ConfigError(ImagenetSuiteError):
    """Unknown builder, config, option or argument."""


class DatasetFolderError(ImagenetSuiteError):
    """A folder is not an imagenet-suite dataset, or does not match its build_info.json."""


class HierarchyError(ImagenetSuiteError):
    """A class hierarchy cannot be built, read or queried as asked."""


class UnknownClass(HierarchyError, KeyError):
    """A wnid, node or class index that is not part of the hierarchy."""

    def __str__(self) -> str:  # KeyError would quote the message
        return self.with_flags({}) if self.args else ""


class WordNetMissing(HierarchyError):
    """WordNet 3.0 is not installed where imagenet-suite looks for it."""


class ShapeMismatch(HierarchyError, ValueError):
    """A tensor or matrix does not have the shape the other inputs imply (e.g. C×C vs [N, C])."""


class OutputsError(ImagenetSuiteError):
    """Model outputs are malformed or do not match the dataset they are scored against."""


class ClusterError(ImagenetSuiteError):
    """A distributed executor (Ray) lost a task with its worker process or node more times than it runs a task
    again (:data:`imagenet_suite.core.executors.MAX_RETRIES`)."""


class RunFolderError(ImagenetSuiteError):
    """A run folder of ``evaluate`` (suite.json, run.json, adversarial.json, an outputs record) is of another
    format, malformed, or was made by another model or from another build of a dataset."""
