"""The ImageNet-1k class index: 1000 WordNet ids in sorted order, with lemmas and definitions.

Index ``i`` is the ``i``-th wnid in lexicographic order (the timm / torchvision convention), so
``label`` columns of every imagenet-suite dataset use these wnids as ``ClassLabel`` names
(:func:`imagenet_class_label`), and :func:`index_of` maps a wnid read from a release to its index.

The lists come from the files timm ships in ``timm/data/_info/`` (read as package data, without
importing timm and torch), not from hand-kept copies.
"""

from __future__ import annotations

import csv
import functools
import importlib.util
from pathlib import Path

from .errors import InvalidSourceData

NUM_CLASSES = 1000


class ClassIndexError(ValueError):
    """A wnid or class index that is not part of the requested class list."""


@functools.cache
def timm_info_dir() -> Path:
    """Folder of timm's class-list files (``timm/data/_info``), found without importing timm."""
    spec = importlib.util.find_spec("timm")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("timm is required for the ImageNet class lists: pip install timm")
    folder = Path(next(iter(spec.submodule_search_locations))) / "data" / "_info"
    if not (folder / "imagenet_synsets.txt").is_file():
        raise FileNotFoundError(f"{folder}/imagenet_synsets.txt is missing: reinstall timm")
    return folder


def _read_lines(name: str) -> tuple[str, ...]:
    return tuple(line.strip() for line in (timm_info_dir() / name).read_text().splitlines() if line.strip())


def _read_tsv(name: str) -> dict[str, str]:
    with open(timm_info_dir() / name, newline="", encoding="utf-8") as handle:
        return {row[0]: row[1] for row in csv.reader(handle, delimiter="\t") if row}


@functools.cache
def imagenet_wnids() -> tuple[str, ...]:
    """The 1000 ImageNet-1k wnids in sorted order; position = class index."""
    wnids = _read_lines("imagenet_synsets.txt")
    if len(wnids) != NUM_CLASSES or list(wnids) != sorted(wnids):
        raise RuntimeError("timm's imagenet_synsets.txt is not 1000 sorted wnids")
    return wnids


@functools.cache
def wnid_to_index() -> dict[str, int]:
    """Map from ImageNet-1k wnid to its class index 0..999."""
    return {wnid: index for index, wnid in enumerate(imagenet_wnids())}


def index_of(wnid: str, where: str | None = None, what: str = "") -> int:
    """Class index 0..999 of an ImageNet-1k wnid (its position among the sorted wnids).

    Any other string raises InvalidSourceData naming ``where`` (the file, member or row it came
    from) and ``what`` it is, e.g. ``"<where>: class folder 'n0144O764' is not one of the 1000
    ImageNet-1k wnids"``.
    """
    try:
        return wnid_to_index()[wnid]
    except KeyError as err:
        prefix = f"{where}: " if where else ""
        subject = f"{what} {wnid!r}" if what else repr(wnid)
        raise InvalidSourceData(f"{prefix}{subject} is not one of the {NUM_CLASSES} ImageNet-1k wnids") from err


def imagenet_class_label():
    """The 1000-way ``datasets.ClassLabel`` of every imagenet-suite dataset: the sorted wnids as names."""
    from datasets import ClassLabel

    return ClassLabel(names=list(imagenet_wnids()))


@functools.cache
def _lemmas() -> dict[str, str]:
    return _read_tsv("imagenet_synset_to_lemma.txt")


@functools.cache
def _definitions() -> dict[str, str]:
    return _read_tsv("imagenet_synset_to_definition.txt")


def lemma(wnid: str) -> str:
    """WordNet lemmas of any ImageNet-21k wnid, e.g. ``'tench, Tinca tinca'``."""
    try:
        return _lemmas()[wnid]
    except KeyError as err:
        raise ClassIndexError(f"{wnid!r} is not an ImageNet wnid known to timm") from err


def definition(wnid: str) -> str:
    """WordNet gloss of any ImageNet-21k wnid."""
    try:
        return _definitions()[wnid]
    except KeyError as err:
        raise ClassIndexError(f"{wnid!r} is not an ImageNet wnid known to timm") from err


def readable_name(wnid: str) -> str:
    """Short human-readable name: the first lemma (``'tench'``). Not unique (two 'crane')."""
    return lemma(wnid).split(",")[0].strip()


def imagenet_lemmas() -> tuple[str, ...]:
    """Lemmas of the 1000 classes, in class-index order."""
    return tuple(lemma(w) for w in imagenet_wnids())


def imagenet_definitions() -> tuple[str, ...]:
    """Definitions of the 1000 classes, in class-index order."""
    return tuple(definition(w) for w in imagenet_wnids())


SUBSETS = {"imagenet_a": "imagenet_a", "imagenet_r": "imagenet_r"}


@functools.cache
def subset_indices(subset: str) -> tuple[int, ...]:
    """Sorted ImageNet-1k class indices of a published class subset (``imagenet_a``, ``imagenet_r``).

    Read from timm's ``<subset>_indices.txt`` and cross-checked against ``<subset>_synsets.txt``.
    """
    if subset not in SUBSETS:
        raise ClassIndexError(f"unknown class subset {subset!r}; known: {sorted(SUBSETS)}")
    indices = tuple(int(x) for x in _read_lines(f"{SUBSETS[subset]}_indices.txt"))
    wnids = _read_lines(f"{SUBSETS[subset]}_synsets.txt")
    if tuple(index_of(w) for w in wnids) != indices:
        raise RuntimeError(f"timm's {subset} index and synset lists disagree")
    return indices
