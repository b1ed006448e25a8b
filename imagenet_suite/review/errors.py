"""Errors of the review workflow. Each message names the file, row, dataset or argument at fault."""

from __future__ import annotations

from ..errors import ImagenetSuiteError


class ReviewError(ImagenetSuiteError):
    """A review dataset, database, App launch or decision operation cannot be done as asked."""


class DecisionTableError(ReviewError):
    """A decision table (or an authors' review log) is malformed or does not match the dataset."""
