"""The read side of the imagenet-suite output format: a built dataset folder, checked before it is read.

* :mod:`.folder` — :class:`~.folder.DatasetFolder`: ``build_info.json`` (checked against its own
  hash), the card, the Parquet shards of each config and split, handed out only after their size and
  sha256 match (hashes remembered against each file's stat); label columns read by projection;
* :mod:`.verify` — ``imagenet-suite verify``: every file hashed afresh, the card, row counts, every
  stored image (structure, pixel bound; a strict decode with ``--deep-verify``);
* :mod:`.hub` — ``imagenet-suite push``: a verified folder to a Hugging Face dataset repository.

Every reader (scoring, inference, review, builders that take ``--input``) opens folders through
:class:`~.folder.DatasetFolder`; the write side (:mod:`imagenet_suite.core`) builds them.
"""

from .folder import DatasetFolder

__all__ = ["DatasetFolder"]
