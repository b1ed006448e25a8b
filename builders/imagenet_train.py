"""``imagenet_train``: the 1,281,167 ILSVRC2012 training images, original bytes, sorted-wnid labels.

Accepted layouts of the manual directory (``--manual-dir``), detected in this order:

1. ``tar``: ``ILSVRC2012_img_train.tar``, as released: a tar of 1,000 per-class tars
   (``n01440764.tar`` holding ``n01440764_10026.JPEG``, ...). Read in place, never extracted: one
   header scan of every inner tar (:func:`imagenet_suite.core.archives.index_nested_tar`) while the tar
   is hashed, then each image with one seek;
2. ``kaggle``: ``ILSVRC/Data/CLS-LOC/train/<wnid>/<wnid>_<n>.JPEG`` + ``LOC_synset_mapping.txt`` (the
   Kaggle "ImageNet Object Localization Challenge" download; ``LOC_train_solution.csv`` is not read);
3. ``folders``: ``train/<wnid>/<wnid>_<n>.JPEG`` (torchvision ImageFolder layout, the tar extracted).

The label of an image is its class folder (tar), which is also the prefix of its file name; every
layout yields the same rows. Option ``subset=N``: N images per class, a seeded class-stratified draw
(:func:`imagenet_suite.seeding.class_stratified`, the same draw as ``ood fit-stats --per-class N``),
for train-set statistics on a budget.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from imagenet_suite import classes
from imagenet_suite.core.archives import TarIndex, index_nested_tar, index_tar, open_archive
from imagenet_suite.core.builder import Builder, BuilderConfig, Option, Prepared, Shard
from imagenet_suite.core.sources import ResolvedSource, Source, SourceResolver
from imagenet_suite.errors import ConfigError, InvalidSourceData, ManualFileMissing, param
from imagenet_suite.files import list_folder
from imagenet_suite.seeding import class_stratified

from ._citations import ILSVRC, NINCO, cite
from ._image_columns import image_features, image_row
from .imagenet_val import KAGGLE_MAPPING, _check_synset_mapping

NUM_TRAIN_IMAGES = 1_281_167
TRAIN_ID = re.compile(r"^(n\d{8})_\d+$")

TRAIN_TAR = Source(
    "train_tar",
    "ILSVRC2012_img_train.tar",
    size=147_897_477_120,
    md5="1d675b47d978889d74fa0da5fadfb00e",
    instructions="Download ILSVRC2012_img_train.tar (138 GB) from https://image-net.org/download-images "
    "(login and terms acceptance required) and put it in --manual-dir; it is read in place, never extracted.",
)
KAGGLE_IMAGES = "ILSVRC/Data/CLS-LOC/train"
FOLDER_IMAGES = "train"

ACCEPTED_LAYOUTS = (
    "  1. ILSVRC2012_img_train.tar (from image-net.org: a tar of the 1000 per-class tars)\n"
    "  2. ILSVRC/Data/CLS-LOC/train/<wnid>/<wnid>_<n>.JPEG + LOC_synset_mapping.txt (Kaggle)\n"
    "  3. train/<wnid>/<wnid>_<n>.JPEG (ImageFolder layout)"
)


@dataclass(frozen=True)
class Layout:
    """Where the images of one layout are: the tar or the folder of class folders, and every image id.

    A member's name follows from its id (:meth:`member`), so workers get no per-image table: a shard of
    the tar layout indexes only its classes' tars, from ``outer`` (the tar's index of its class tars).
    """

    name: str
    archive: ResolvedSource
    ids: tuple[str, ...]  # every image of the release, sorted
    outer: TarIndex | None = None

    def member(self, image_id: str) -> str:
        wnid = image_id.split("_", 1)[0]
        return f"{wnid}.tar/{image_id}.JPEG" if self.name == "tar" else f"{wnid}/{image_id}.JPEG"


def train_id_of(member: str) -> str | None:
    """``n01440764_10026`` for a member ``n01440764.tar/n01440764_10026.JPEG`` (tar) or
    ``n01440764/n01440764_10026.JPEG`` (folders) whose class matches its name's prefix, else None.

    Example:
        >>> train_id_of("n01440764.tar/n01440764_10026.JPEG"), train_id_of("n01440764/n01443537_1.JPEG")
        ('n01440764_10026', None)
    """
    parts = member.split("/")
    if len(parts) != 2 or not parts[1].endswith(".JPEG"):
        return None
    folder, stem = parts[0].removesuffix(".tar"), parts[1][: -len(".JPEG")]
    found = TRAIN_ID.match(stem)
    return stem if found and found.group(1) == folder else None


# -- layout detection ------------------------------------------------------------------------------


def find_layout(resolver: SourceResolver) -> Layout:
    """Detect the first layout present in the manual dir; ManualFileMissing lists all accepted ones."""
    if resolver.find_manual(TRAIN_TAR.filename):
        return _tar_layout(resolver)
    if resolver.find_manual(KAGGLE_IMAGES):
        root = resolver.manual_dir
        if not resolver.find_manual(KAGGLE_MAPPING):
            raise ManualFileMissing(
                f"{KAGGLE_MAPPING} not found in {root}: the Kaggle layout needs it beside ILSVRC/.\n"
                f"Accepted layouts:\n{ACCEPTED_LAYOUTS}"
            )
        _check_synset_mapping(root / KAGGLE_MAPPING)
        return _folder_layout(resolver, "kaggle", KAGGLE_IMAGES)
    if resolver.find_manual(FOLDER_IMAGES):
        return _folder_layout(resolver, "folders", FOLDER_IMAGES)
    where = resolver.manual_dir or f"(no {param('manual_dir')} given)"
    raise ManualFileMissing(
        f"no ImageNet training images found in {where}. Accepted layouts of {param('manual_dir')}:\n{ACCEPTED_LAYOUTS}"
    )


def _tar_layout(resolver: SourceResolver) -> Layout:
    source, index = resolver.resolve_with(TRAIN_TAR, index_nested_tar)  # header scans while the tar is hashed
    outer = index_tar(source.path)  # the class tars (kept by index_tar since the scan)
    for name in outer.names():
        if not name.endswith(".tar"):
            raise InvalidSourceData(f"{source.path}: unexpected member {name!r} (expected only <wnid>.tar class tars)")
        _check_class(name.removesuffix(".tar"), f"{source.path}:{name}")
    return Layout("tar", source, _ids(index.members, source.path, "<wnid>.tar holding <wnid>_<n>.JPEG"), outer)


def _folder_layout(resolver: SourceResolver, name: str, folder: str) -> Layout:
    root = resolver.manual_dir / folder
    for entry in sorted(root.iterdir()):
        if not entry.is_dir():
            raise InvalidSourceData(f"{entry}: expected only <wnid> folders in {root}")
        _check_class(entry.name, str(entry))
    files = list_folder(root)
    ids = _ids(files, root, "<wnid>/<wnid>_<n>.JPEG")
    return Layout(name, resolver.resolve_folder("train_images", root, files), ids)


def _check_class(wnid: str, where: str) -> None:
    classes.index_of(wnid, where, "class folder")


def _ids(members, where, expected: str) -> tuple[str, ...]:
    """The sorted image ids of the members; InvalidSourceData names the first one that is not an image."""
    ids = []
    for member in members:
        image_id = train_id_of(member)
        if image_id is None:
            raise InvalidSourceData(f"{where}: unexpected member {member!r} (expected {expected})")
        ids.append(image_id)
    return tuple(sorted(ids))


# -- the builder -------------------------------------------------------------------------------------


class ImagenetTrain(Builder):
    NAME = "imagenet_train"
    VERSION = "1.0.0"
    RELEASE_NOTES = {
        "1.0.0": "Initial release: the 1,281,167 training images as original bytes, sorted-wnid labels, image "
        "mode and size; option subset=N for a seeded class-stratified N images per class."
    }
    CONFIGS = (BuilderConfig("default", "images, labels, image mode and size", shard_size=2500),)
    SOURCES = (TRAIN_TAR,)
    OPTIONS = {
        "subset": Option(
            0, help="images per class, a seeded class-stratified draw (the build's --seed); 0: every image"
        ),
    }
    MANUAL_DOWNLOAD_INSTRUCTIONS = f"Put one of these layouts in --manual-dir:\n{ACCEPTED_LAYOUTS}"
    HOMEPAGE = "https://image-net.org/challenges/LSVRC/2012/"
    LICENSE = "other"
    CITATION = cite(ILSVRC, NINCO)

    def seeded(self) -> bool:
        return self.options["subset"] > 0

    def features(self):
        return image_features({"label": classes.imagenet_class_label()})

    def prepare(self, resolver: SourceResolver) -> Prepared:
        subset = self.options["subset"]
        if subset < 0:
            raise ConfigError(f"option subset={subset}: expected 0 (every image) or a number of images per class")
        layout = find_layout(resolver)
        keys = list(layout.ids)
        if subset:
            by_class: dict[str, list[str]] = {}
            for image_id in keys:
                by_class.setdefault(image_id.split("_", 1)[0], []).append(image_id)
            keys = class_stratified(by_class, subset, self.seed)
        return Prepared({"images": layout.archive}, {"layout": layout, "keys": keys})

    def split_keys(self, prepared: Prepared) -> dict[str, list[str]]:
        return {"train": prepared.data["keys"]}

    def generate(self, prepared: Prepared, shard: Shard) -> Iterator[dict]:
        layout: Layout = prepared.data["layout"]
        for image_id, data in read_images(layout, shard.keys):
            where = f"{layout.archive.path}:{layout.member(image_id)}"
            label = classes.index_of(image_id.split("_", 1)[0], where)
            yield {**image_row(image_id, data, f"{image_id}.JPEG", where), "label": label}

    def card_context(self, prepared: Prepared) -> dict:
        layout: Layout = prepared.data["layout"]
        subset = self.options["subset"]
        chosen = (
            f"{len(prepared.data['keys']):,} of its {len(layout.ids):,} images: {subset} per class (all of a "
            f"smaller class), drawn with seed {self.seed}"
            if subset
            else f"all {len(layout.ids):,} images"
        )
        return {"layout": layout.name, "chosen": chosen}


def read_images(layout: Layout, ids: tuple[str, ...]) -> Iterator[tuple[str, bytes]]:
    """``(id, original bytes)`` for ``ids`` in the given order, read in place (the tar: only the class
    tars of ``ids`` are indexed)."""
    index = None
    if layout.outer is not None:
        wanted = {layout.member(image_id).split("/", 1)[0] for image_id in ids}
        index = index_nested_tar(
            layout.archive.path, layout.outer.subset(n for n in layout.outer.names() if n in wanted)
        )
    with open_archive(layout.archive.path, index) as archive:
        members = (layout.member(image_id) for image_id in ids)
        for image_id, (_, data) in zip(ids, archive.read_members(members), strict=True):
            yield image_id, data
