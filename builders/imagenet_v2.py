"""``imagenet_v2``: ImageNetV2 (Recht et al., 2019), three test sets of 10,000 images each.

Release: three ``.tar.gz`` archives (Hugging Face mirror ``vaishaal/ImageNetV2``, the one TFDS and
imagenetv2_pytorch use), one per config, each holding ``<root>/<class folder>/<image>.jpeg``:

=====================  =====================================  ==========================================
config                 archive                                root folder
=====================  =====================================  ==========================================
``matched_frequency``  ``imagenetv2-matched-frequency.tar.gz``  ``imagenetv2-matched-frequency-format-val``
``threshold_0.7``      ``imagenetv2-threshold0.7.tar.gz``       ``imagenetv2-threshold0.7-format-val``
``top_images``         ``imagenetv2-top-images.tar.gz``         ``imagenetv2-top-images-format-val``
=====================  =====================================  ==========================================

The archives were re-packed twice (TFDS issues #2461, #2888; ImageNetV2 #5, #6). Both class-folder
conventions they used are read:

* numeric folders ``0`` … ``999`` (the current archives): the folder is the class **index** in
  sorted-wnid order (``0`` = tench). Sorting them as strings (``0, 1, 10, 100, …``, what an
  ImageFolder does) gives wrong labels; here the number itself is the label.
* wnid folders ``n01440764`` … (the December 2020 re-pack).

Image file names changed too (``0.jpeg`` … ``9.jpeg`` then sha1 hashes); they are kept as released,
so ``id`` = ``<wnid>/<file name>`` is the same for both folder conventions of one archive.
"""

from __future__ import annotations

import re

from imagenet_suite import classes
from imagenet_suite.core.builder import BuilderConfig
from imagenet_suite.core.sources import Source
from imagenet_suite.errors import InvalidSourceData

from ._citations import ANZAKU_2024, LCA_ON_THE_LINE, cite
from ._variants import STRICT_COUNTS, ClassFolderBuilder, check_count

HF_MIRROR = "https://huggingface.co/datasets/vaishaal/ImageNetV2/resolve/main/"
NUMERIC_FOLDER = re.compile(r"^(0|[1-9]\d{0,2})$")
IMAGES_PER_CONFIG = 10_000


def _source(config: str, stem: str, size: int, sha256: str) -> Source:
    return Source(
        f"{config}_tar",
        f"{stem}.tar.gz",
        url=HF_MIRROR + f"{stem}.tar.gz",
        size=size,
        sha256=sha256,
        instructions=f"Download {HF_MIRROR}{stem}.tar.gz and put it in --manual-dir, or put its extracted "
        f"{stem}-format-val/ folder there.",
    )


# config -> (archive, root folder). Sizes and sha256 from TFDS's imagenet_v2 checksums.tsv, which match
# the HF mirror's X-Linked-ETag (the mirror files are the ones TFDS downloads).
RELEASES = {
    "matched_frequency": (
        _source(
            "matched_frequency",
            "imagenetv2-matched-frequency",
            1_264_079_360,
            "f0c37fdf925916b19ea1323cd9a2208cdb6959ba2c32eef2a7fc393835c9ca7c",
        ),
        "imagenetv2-matched-frequency-format-val",
    ),
    "threshold_0.7": (
        _source(
            "threshold_0.7",
            "imagenetv2-threshold0.7",
            1_249_906_176,
            "32142bfe998f9cfa4141be691f6a80eeb1e27b24bd532a668eb08c26d98897a2",
        ),
        "imagenetv2-threshold0.7-format-val",
    ),
    "top_images": (
        _source(
            "top_images",
            "imagenetv2-top-images",
            1_245_927_936,
            "85e4ace30f3f0d660152062254b8759dda66267b27f7ec0fd8d5768f1073a04b",
        ),
        "imagenetv2-top-images-format-val",
    ),
}


def v2_class_index(folder: str, where: str) -> int:
    """Class index of a V2 class folder: a number ``0``..``999`` (the index itself) or a wnid."""
    if NUMERIC_FOLDER.match(folder):
        return int(folder)
    if folder in classes.wnid_to_index():
        return classes.index_of(folder)
    raise InvalidSourceData(
        f"{where}: class folder {folder!r} is neither a class index 0..999 nor an ImageNet-1k "
        "wnid (renamed or foreign folder?)"
    )


def _check_one_convention(scanned: dict[str, tuple[str, int]], prefix: str, where: str) -> None:
    """Refuse an archive mixing numeric and wnid class folders (two re-packs merged)."""
    folders = {member[len(prefix) :].split("/", 1)[0] for member, _ in scanned.values()}
    numeric = sorted(f for f in folders if NUMERIC_FOLDER.match(f))
    if numeric and len(numeric) != len(folders):
        wnid = sorted(folders - set(numeric))
        raise InvalidSourceData(
            f"{where}: mixes numeric class folders (e.g. {numeric[0]!r}) and wnid folders "
            f"(e.g. {wnid[0]!r}); expected one convention"
        )


class ImagenetV2(ClassFolderBuilder):
    NAME = "imagenet_v2"
    VERSION = "1.0.0"
    RELEASE_NOTES = {
        "1.0.0": "Initial release: the three ImageNetV2 test sets (10,000 images each) as original bytes; "
        "numeric class folders mapped to sorted-wnid labels; both re-pack layouts read."
    }
    CONFIGS = (
        BuilderConfig("matched_frequency", "MatchedFrequency: 10,000 images, 10 per class", shard_size=1000),
        BuilderConfig("threshold_0.7", "Threshold0.7: 10,000 images, 10 per class", shard_size=1000),
        BuilderConfig("top_images", "TopImages: 10,000 images, 10 per class", shard_size=1000),
    )
    SOURCES = tuple(source for source, _ in RELEASES.values())
    OPTIONS = {"strict_counts": STRICT_COUNTS}
    MANUAL_DOWNLOAD_INSTRUCTIONS = (
        "Downloaded automatically from the Hugging Face mirror. Offline: put the config's "
        "imagenetv2-*.tar.gz (or its extracted imagenetv2-*-format-val/ folder) in "
        "--manual-dir."
    )
    HOMEPAGE = "https://github.com/modestyachts/ImageNetV2"
    LICENSE = "mit"
    CITATION = cite(
        """@inproceedings{recht2019imagenet,
  title = {Do {ImageNet} Classifiers Generalize to {ImageNet}?},
  author = {Benjamin Recht and Rebecca Roelofs and Ludwig Schmidt and Vaishaal Shankar},
  booktitle = {Proceedings of the 36th International Conference on Machine Learning (ICML)},
  series = {PMLR}, volume = {97}, pages = {5389--5400}, year = {2019},
  eprint = {1902.10811}, archivePrefix = {arXiv}}""",
        ANZAKU_2024,
        LCA_ON_THE_LINE,
    )

    def release(self) -> tuple[Source, str]:
        return RELEASES[self.config.name]

    def class_index(self):
        return v2_class_index

    def check_release(self, scanned: dict[str, tuple[str, int]], prefix: str, where: str) -> None:
        _check_one_convention(scanned, prefix, where)
        strict = self.options["strict_counts"]
        check_count(len(scanned), IMAGES_PER_CONFIG, strict, where, "images")
        check_count(len({label for _, label in scanned.values()}), classes.NUM_CLASSES, strict, where, "class folders")

    def protocol(self) -> dict:
        return {"num_classes": classes.NUM_CLASSES}
