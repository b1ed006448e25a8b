"""The dataset-building framework: what a builder declares, and how a build runs and is checked.

* :mod:`.sources` — pinned source files and folders: downloads, cache, manual files, verification;
* :mod:`.archives` — tar / tar.gz / zip / folders read in place;
* :mod:`.builder` — the :class:`~.builder.Builder` contract (plan, generate, features, protocol);
* :mod:`.runner` — :func:`build_dataset`: resumable, verified, deterministic builds;
* :mod:`.writer` — rows → Parquet shards readable by ``datasets`` 3.6 … 5.x;
* :mod:`.card` — the dataset card (YAML + prose);
* :mod:`.dataset_folder` — reading a built dataset folder; :mod:`.verify` — re-checking it;
* :mod:`.hub` — publishing to the Hugging Face Hub; :mod:`.registry` — the registered builders.

It imports nothing above it (scoring, curation, builders, commands): the runner takes a generic
row transform (:class:`~.runner.RowTransform`) that review decisions plug into.
"""

from .runner import build_dataset

__all__ = ["build_dataset"]
