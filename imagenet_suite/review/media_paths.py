"""Which files the review App may read by path: the review image cache and the dataset's own media folders.

FiftyOne's server reads any file a request names (``/media?filepath=...``, the ``list_files``
operator). The review server (:mod:`.app_guard`) lets such a request through only when
:meth:`MediaRoots.resolve` accepts its path: the path's realpath — symlinks and ``..`` resolved —
lies under the realpath of one of the roots. Roots are resolved at every check, so a root created
or replaced after the server started is judged as it is now. This module never imports FiftyOne.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


class MediaRoots:
    """Folders whose files (at any depth) the App may read."""

    def __init__(self, roots: Iterable[str | os.PathLike]):
        self.roots = tuple(os.path.abspath(r) for r in roots)

    def resolve(self, path: str) -> str | None:
        """The realpath of ``path`` if it lies under (or is) one of the roots, else None.

        A relative ``path`` is taken from the current folder, as the server would open it.
        """
        if not path or "\x00" in path:
            return None
        real = os.path.realpath(path)
        for root in self.roots:
            base = os.path.realpath(root)
            if real == base or real.startswith(base.rstrip(os.sep) + os.sep):
                return real
        return None


def review_media_roots(fo, load) -> list[Path]:
    """The media roots of a ``review open``: the image cache root of ``load`` (a :class:`.load.LoadPlan`)
    and, if its FiftyOne dataset exists already (made by imagenet-suite), the folders of its samples
    (loaded earlier with another cache). Nested folders are dropped."""
    from .load import INFO_KEY

    roots = [Path(load.cache)]
    if load.name in fo.list_datasets():
        dataset = fo.load_dataset(load.name)
        if dataset.info.get(INFO_KEY) is not None:
            roots += sorted({Path(os.path.dirname(p)) for p in dataset.distinct("filepath")})
    return outermost(roots)


def outermost(folders: Iterable[Path]) -> list[Path]:
    """``folders`` (made absolute) without those inside another one, sorted."""
    kept: list[Path] = []
    for folder in sorted({Path(os.path.abspath(f)) for f in folders}, key=lambda f: len(f.parts)):
        if not any(folder == k or k in folder.parents for k in kept):
            kept.append(folder)
    return sorted(kept)
