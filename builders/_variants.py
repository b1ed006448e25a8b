"""Shared reading of ImageNet variant releases laid out as class folders of images.

Every variant release (ImageNetV2, -A, -R, -Sketch, -O, each severity of -C, ObjectNet) is, inside
its archive or extracted folder, ``<root>/<class folder>/<image file>``. This module finds such a
release (:func:`locate`), lists its images (:func:`scan_class_folders`), and reads them back in
plan order (:func:`read_in_order`) as original bytes, through
:mod:`imagenet_suite.core.archives` (tars by their cached member index); :class:`ClassFolderBuilder`
is the builder for configs that are one archive of class folders (A, R, Sketch, O, each V2 set).
Rows have the shared image columns of :mod:`._image_columns`.

Conventions shared by all variant builders:

* one split, ``test``; rows sorted by ``id`` (ImageNet-C: by ImageNet-val id);
* ``id`` is ``<class>/<file name>`` with the class as a wnid (numeric V2 folders are written as
  their wnid; ObjectNet keeps its own folder names), prefixed by what else distinguishes an image
  within the release (``<corruption>/<severity>/`` for ImageNet-C);
* ``file_name`` (and ``image.path``) is the image's path in the release, root folder included
  (``imagenet-a/n01498041/0.000116_digital clock _ digital clock_0.865662.jpg``), whether it was
  read from the archive or from an extracted copy of it;
* ``label`` is the 1000-way ``ClassLabel`` over the sorted ImageNet-1k wnids (ImageNet-O and ObjectNet
  have no such label: see their modules);
* ``strict_counts`` (default on) refuses a copy without the release's published image count.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar

from imagenet_suite import classes
from imagenet_suite.core.archives import TarIndex, open_archive
from imagenet_suite.core.builder import Builder, Option, Prepared, Shard
from imagenet_suite.core.sources import ResolvedSource, Source, SourceResolver
from imagenet_suite.errors import InvalidSourceData, param

from ._image_columns import image_features, image_row

SPLIT = "test"
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
WNID = re.compile(r"^n\d{8}$")
# Files at a release's root that are documentation, not images (e.g. imagenet-a/README.txt).
ROOT_DOC_FILES = re.compile(r"^(readme|license|licence|copying)([._-].*)?$", re.IGNORECASE)

STRICT_COUNTS = Option(
    True,
    (True, False),
    help="fail unless the release has its published number of images (and classes); turn off only to build "
    "from a deliberately partial or modified copy (recorded in the card, build_info and the folder name)",
)

ClassIndex = Callable[[str, str], "int | None"]  # (class folder, where) -> class index, None = not in this dataset


@dataclass(frozen=True)
class Located:
    """A release found on disk: an archive file or an extracted folder, and where its root folder is.

    ``member_prefix`` is prepended to a path relative to the release root to get the member name
    inside ``source.path``; ``file_prefix`` is prepended to a member name to get the released
    file name (the root folder included).
    """

    source: ResolvedSource
    member_prefix: str
    file_prefix: str
    layout: str  # "archive" or "extracted folder"


@dataclass(frozen=True)
class Images:
    """The images one config reads (picklable: workers receive it).

    ``members``: id -> member name inside ``path``; ``labels``: id -> class index (or any int
    the builder maps, e.g. an ObjectNet class); ``tar_index``: the index of those members when
    ``path`` is a tar, so workers skip the header scan.
    """

    path: Path
    file_prefix: str
    members: dict[str, str]
    labels: dict[str, int]
    tar_index: TarIndex | None = None

    def file_name(self, image_id: str) -> str:
        return self.file_prefix + self.members[image_id]

    def where(self, image_id: str) -> str:
        return f"{self.path}:{self.members[image_id]}"

    def row(self, image_id: str, data: bytes) -> dict[str, Any]:
        """The shared image columns of one row (:func:`._image_columns.image_row`)."""
        return image_row(image_id, data, self.file_name(image_id), self.where(image_id))


# -- finding a release ------------------------------------------------------------------------------


def locate(resolver: SourceResolver, source: Source, root: str, extracted: str | None = None) -> Located:
    """Find a release: ``source`` in --manual-dir, else the extracted folder ``extracted`` (default
    ``root``) in --manual-dir, else ``source`` from the cache or its URL (verified against its pins).

    ``root`` is the release's root folder inside the archive (``imagenet-a``).
    """
    extracted = extracted or root
    if resolver.find_manual(source.filename) is None:
        folder = resolver.find_manual(extracted)
        if folder is not None and folder.is_dir():
            return Located(resolver.resolve_folder(source.name, folder), "", f"{root}/", "extracted folder")
    return Located(resolver.resolve(source), f"{root}/", "", "archive")


def list_members(located: Located) -> tuple[list[str], TarIndex | None]:
    """Member names of a located release, and its member index when it is a tar (the index is
    cached per process: the ImageNet-C configs of one family share a 20+ GB tar)."""
    with open_archive(located.source.path) as archive:
        return list(archive.names()), archive.index()


# -- listing class folders --------------------------------------------------------------------------


def wnid_of(index: int) -> str:
    return classes.imagenet_wnids()[index]


def wnid_class(allowed: Iterable[int] | None = None, what: str = "ImageNet-1k") -> ClassIndex:
    """A :data:`ClassIndex` for wnid-named class folders, optionally restricted to ``allowed`` indices."""
    allowed_set = None if allowed is None else frozenset(allowed)

    def class_index(folder: str, where: str) -> int:
        index = classes.index_of(folder, where, "class folder")
        if allowed_set is not None and index not in allowed_set:
            raise InvalidSourceData(
                f"{where}: class folder {folder!r} is an ImageNet-1k wnid but not one of the "
                f"{len(allowed_set)} {what} classes"
            )
        return index

    return class_index


def scan_class_folders(
    names: Iterable[str],
    prefix: str,
    where: str,
    class_index: ClassIndex,
    skip_outside: bool = False,
    class_name: Callable[[int], str] = wnid_of,
) -> dict[str, tuple[str, int]]:
    """Images laid out as ``<prefix><class folder>/<file>``: ``{"<class name>/<file>": (member, class index)}``.

    ``class_index(folder, where)`` gives a folder's class (None: a folder of the release that this
    dataset leaves out); ``class_name(index)`` names it in the id (default: the wnid, so numeric
    folders become wnids). Documentation files at the root (README, LICENSE) and hidden files are
    ignored. Anything else — a member outside ``prefix`` (unless ``skip_outside``), a file at the
    root, deeper nesting, a non-image suffix, an unknown class folder, two folders of one class —
    raises InvalidSourceData naming ``where`` and the member.
    """
    found: dict[str, tuple[str, int]] = {}
    folder_of_class: dict[int, str] = {}
    for name in names:
        if not name.startswith(prefix):
            if skip_outside:
                continue
            raise InvalidSourceData(f"{where}: unexpected member {name!r} (expected {prefix}<class folder>/<image>)")
        parts = name[len(prefix) :].split("/")
        if parts[-1].startswith("."):
            continue
        if len(parts) == 1 and ROOT_DOC_FILES.match(parts[0]):
            continue
        if len(parts) != 2 or not parts[0]:
            raise InvalidSourceData(f"{where}: unexpected member {name!r} (expected {prefix}<class folder>/<image>)")
        folder, file = parts
        index = class_index(folder, where)
        if index is None:
            continue
        if PurePosixPath(file).suffix.lower() not in IMAGE_SUFFIXES:
            raise InvalidSourceData(f"{where}: member {name!r} is not an image (expected one of {IMAGE_SUFFIXES})")
        if folder_of_class.setdefault(index, folder) != folder:
            raise InvalidSourceData(
                f"{where}: class folders {folder_of_class[index]!r} and {folder!r} are the same "
                f"class {class_name(index)}"
            )
        found[f"{class_name(index)}/{file}"] = (name, index)
    return found


def top_folders(names: Iterable[str], depth: int = 1) -> list[str]:
    """The distinct first ``depth`` path components of member names (for error messages)."""
    return sorted({"/".join(n.split("/")[:depth]) for n in names if n.count("/") >= depth})


def check_count(found: int, expected: int, strict: bool, where: str, what: str) -> None:
    """Refuse a release whose image count is not the published one (unless ``strict`` is off)."""
    if strict and found != expected:
        raise InvalidSourceData(
            f"{where}: found {found:,} {what}, the release has {expected:,} (incomplete or "
            f"different copy?); pass {param('builder_options')} strict_counts=false to build it anyway"
        )


# -- reading rows -------------------------------------------------------------------------------------


def read_in_order(images: Images, keys: Iterable[str]) -> Iterator[tuple[str, bytes]]:
    """``(id, original bytes)`` for ``keys`` in the given order, read in place
    (:meth:`imagenet_suite.core.archives.Archive.read_members`: one pass over a compressed tar)."""
    keys = list(keys)
    with open_archive(images.path, images.tar_index) as archive:
        members = archive.read_members([images.members[key] for key in keys])
        for key, (_, data) in zip(keys, members, strict=True):
            yield key, data


# -- the builder of single-archive wnid-folder releases ------------------------------------------------


class ClassFolderBuilder(Builder):
    """A config that is one archive of ``<root>/<class folder>/<image>`` (ImageNet-A, -R, -Sketch, -O, V2).

    Subclasses declare ``SOURCES`` (the one archive), ``ROOT`` (its root folder), ``EXPECTED_IMAGES``,
    optionally ``CLASS_SUBSET`` (a :func:`imagenet_suite.classes.subset_indices` name the folders must
    belong to) and ``LABEL_COLUMN`` (default ``label``). Hooks: :meth:`release` (archive and root per
    config), :meth:`class_index` (folder name -> class), :meth:`check_release` (completeness),
    :meth:`extra_features` / :meth:`extra_columns` (more columns). The archive may also be given as
    its extracted root folder in --manual-dir; both give the same rows.
    """

    ROOT: ClassVar[str]
    EXPECTED_IMAGES: ClassVar[int]
    CLASS_SUBSET: ClassVar[str | None] = None
    LABEL_COLUMN: ClassVar[str] = "label"
    OPTIONS = {"strict_counts": STRICT_COUNTS}

    # -- hooks ---------------------------------------------------------------------------------
    def release(self) -> tuple[Source, str]:
        """The current config's archive and the root folder inside it (default: the one source declared)."""
        (source,) = self.SOURCES  # a builder with one archive per config overrides this (ImageNetV2)
        return source, self.ROOT

    def class_index(self) -> ClassIndex:
        """How a class folder name becomes a 1000-way index (default: a wnid, within ``CLASS_SUBSET``)."""
        subset = classes.subset_indices(self.CLASS_SUBSET) if self.CLASS_SUBSET else None
        return wnid_class(subset, self.CLASS_SUBSET or "ImageNet-1k")

    def check_release(self, scanned: dict[str, tuple[str, int]], prefix: str, where: str) -> None:
        """Refuse a release that is not complete (``strict_counts``): images, and subset classes."""
        strict = self.options["strict_counts"]
        check_count(len(scanned), self.EXPECTED_IMAGES, strict, where, "images")
        if self.CLASS_SUBSET:
            check_count(
                len({label for _, label in scanned.values()}),
                len(classes.subset_indices(self.CLASS_SUBSET)),
                strict,
                where,
                "class folders",
            )

    def extra_features(self) -> dict[str, Any]:
        """Columns besides the label (``datasets`` feature types)."""
        return {}

    def extra_columns(self, image_id: str, label: int) -> dict[str, Any]:
        """Values of :meth:`extra_features` for one row."""
        return {}

    # -- the contract ----------------------------------------------------------------------------
    def features(self):
        return image_features({self.LABEL_COLUMN: classes.imagenet_class_label(), **self.extra_features()})

    def prepare(self, resolver: SourceResolver) -> Prepared:
        source, root = self.release()
        located = locate(resolver, source, root)
        names, index = list_members(located)
        where = str(located.source.path)
        if not any(n.startswith(located.member_prefix) for n in names):
            raise InvalidSourceData(
                f"{where}: no {located.member_prefix}<class folder>/ folders; top-level entries are "
                f"{top_folders(names)[:10] or sorted(names)[:10]} (renamed root folder, or the "
                "wrong archive?)"
            )
        scanned = scan_class_folders(names, located.member_prefix, where, self.class_index())
        self.check_release(scanned, located.member_prefix, where)
        members = {k: v[0] for k, v in scanned.items()}
        images = Images(
            located.source.path,
            located.file_prefix,
            members,
            {k: v[1] for k, v in scanned.items()},
            index.subset(members.values()) if index is not None else None,
        )
        return Prepared({source.name: located.source}, {"images": images, "layout": located.layout})

    def split_keys(self, prepared: Prepared) -> dict[str, list[str]]:
        return {SPLIT: sorted(prepared.data["images"].members)}

    def generate(self, prepared: Prepared, shard: Shard) -> Iterator[dict]:
        images: Images = prepared.data["images"]
        for image_id, data in read_in_order(images, shard.keys):
            label = images.labels[image_id]
            yield {**images.row(image_id, data), self.LABEL_COLUMN: label, **self.extra_columns(image_id, label)}

    def card_context(self, prepared: Prepared) -> dict:
        return {"layout": prepared.data["layout"]}
