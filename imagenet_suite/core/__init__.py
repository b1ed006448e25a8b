"""The dataset-building framework: what a builder declares, and how a build runs and is checked.

* :mod:`.sources` — pinned source files and folders: downloads, cache, manual files, verification;
* :mod:`.archives` — tar / tar.gz / zip / folders read in place;
* :mod:`.builder` — the :class:`~.builder.Builder` contract (plan, generate, features, protocol);
* :mod:`.runner` — :func:`build_dataset`: resumable, verified, deterministic builds;
* :mod:`.options` — :class:`~.options.BuildOptions`: how a build runs (seed, sources, workers, checks);
* :mod:`.writer` — rows → Parquet shards readable by ``datasets`` 3.6 … 5.x;
* :mod:`.card` — the dataset card (YAML + prose);
* :mod:`.registry` — the registered builders; :mod:`.executors` — where shards are computed
  (local processes or Ray tasks); :mod:`.transform` — the row-transform hook;
* :mod:`.ninco_review_logs` — the NINCO authors' review logs, a release file that both the ``ninco``
  builder and the review read.

Reading, verifying and publishing a built folder is the read side, :mod:`imagenet_suite.dataset`.
It imports nothing above it (scoring, review, builders, commands): the runner takes a generic
row transform (:class:`~.runner.RowTransform`) that review decisions plug into.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .options import BuildOptions
    from .runner import build_dataset

# imported on first use (PEP 562), so that importing ``imagenet_suite.core.registry`` or ``.builder`` — what the
# builders' metadata (``imagenet-suite list``/``info``) needs — does not import the runner, Parquet and NumPy
_LAZY = {"BuildOptions": ".options", "build_dataset": ".runner"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["BuildOptions", "build_dataset"]
