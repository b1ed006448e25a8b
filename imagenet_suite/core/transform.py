"""The runner's plug-in point: a change applied to the rows of every config of a build.

The build framework knows nothing of what the change means. A caller passes an object with this
interface to :func:`imagenet_suite.core.build_dataset` (``BuildOptions.transform``); review decisions
(:class:`imagenet_suite.review.rebuild.ReviewApplication`: drop or flag contaminated rows) are
one. The runner

1. names the output folder ``<name>-<version>...<folder_suffix>`` (never the plain build's folder);
2. asks :meth:`RowTransform.plan` about every config's planned keys (before anything is written;
   it raises to refuse) and keeps only :meth:`RowTransform.keep` of each shard's keys;
3. folds :attr:`RowTransform.fingerprint` into the plan fingerprint (resume never mixes versions);
4. writes :meth:`RowTransform.features` and passes the rows through :meth:`RowTransform.rows`
   (in the worker processes: the object must be picklable);
5. records :meth:`RowTransform.record` in ``build_info.json`` under :attr:`RowTransform.record_key`
   and appends :meth:`RowTransform.card_section` of it to the card.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any, Protocol


class RowTransform(Protocol):
    folder_suffix: str  # appended to the dataset folder name
    record_key: str  # key of the record in build_info.json
    fingerprint: str  # what the rows depend on beyond the plan (e.g. a table's sha256 and the action)

    def plan(self, config: str, keys: list[str]) -> int:
        """Check a config's planned keys (raise an ImagenetSuiteError to refuse); rows it will change."""

    def keep(self, keys: tuple[str, ...]) -> tuple[str, ...]:
        """The keys of a shard that stay in the build, in order."""

    def features(self, features):
        """The ``datasets.Features`` written, given the builder's."""

    def rows(self, rows: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """The rows written, given the builder's (one per kept key, in order)."""

    def record(self, changed: dict[str, int], previous: dict[str, Any] | None) -> dict[str, Any]:
        """The build_info record; ``changed``: rows changed per config built now; ``previous``: the
        record of an earlier run into the same folder (other configs), if any."""

    def card_section(self, record: dict[str, Any]) -> str:
        """Markdown appended to the card, saying what the transform did."""


def transformed_fingerprint(fingerprint: str, transform: RowTransform | None) -> str:
    """The plan fingerprint, extended by the transform's when there is one."""
    if transform is None:
        return fingerprint
    return hashlib.sha256(f"{fingerprint}:{transform.fingerprint}".encode()).hexdigest()


__all__ = ["RowTransform", "transformed_fingerprint"]
