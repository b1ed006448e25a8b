"""Exception types of imagenet-suite. Every message names the file, row or argument at fault.

An argument is named by its Python parameter, marked with :func:`param`: ``str(err)`` shows the
parameter's name (``workers must be 0 or more, got -1``), and the command line shows the flag that
sets it instead (``--workers must be 0 or more, got -1``; :mod:`imagenet_suite.commands._flags`).
Library code never names a flag.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

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


class RunFolderError(ImagenetSuiteError):
    """A run folder of ``evaluate`` (suite.json, run.json, adversarial.json, an outputs record) is of another
    format, malformed, or was made by another model or from another build of a dataset."""
