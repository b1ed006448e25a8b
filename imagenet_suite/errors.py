"""Exception types of imagenet-suite. Every message names the file, row or argument at fault."""

from __future__ import annotations


class ImagenetSuiteError(Exception):
    """Base class: an error a user can act on (the CLI prints it without a traceback)."""


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
        return str(self.args[0]) if self.args else ""


class WordNetMissing(HierarchyError):
    """WordNet 3.0 is not installed where imagenet-suite looks for it."""


class ShapeMismatch(HierarchyError, ValueError):
    """A tensor or matrix does not have the shape the other inputs imply (e.g. C×C vs [N, C])."""


class OutputsError(ImagenetSuiteError):
    """Model outputs are malformed or do not match the dataset they are scored against."""


class RunFolderError(ImagenetSuiteError):
    """A run folder of ``evaluate`` (suite.json, run.json, adversarial.json, an outputs record) is of another
    format, malformed, or was made by another model or from another build of a dataset."""
