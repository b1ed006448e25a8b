"""``backgrounds_challenge``: ImageNet-9 (IN-9) and its background/foreground variants (Xiao et al., 2021).

"Noise or Signal: The Role of Image Backgrounds in Object Recognition" (ICLR 2021) groups ImageNet-1k
classes into 9 coarse classes and edits each test image's background and foreground. The test sets
are one release asset of MadryLab/backgrounds_challenge, ``backgrounds_challenge_data.tar.gz``::

    bg_challenge/<variant>/val/<NN_class>/<file>.JPEG    8 variants x 9 classes x 450 images
    bg_challenge/fg_mask/val/<NN_class>/<file>.npy        the foreground masks (not read here)

with the class folders ``00_dog``, ``01_bird``, ``02_wheeled vehicle``, ``03_reptile``,
``04_carnivore``, ``05_insect``, ``06_musical instrument``, ``07_primate``, ``08_fish`` (spaces
included), the order ``torchvision.datasets.ImageFolder`` indexes them 0..8 in the upstream
``in9_eval.py``. One config per variant (:data:`VARIANTS`), split ``validation`` (the release's
``val``), 4,050 rows each; the extracted ``bg_challenge/<variant>/val/`` folder in --manual-dir is
read too, with the same rows.

Columns: the image columns of :mod:`._image_columns` (``file_name`` = the image's path in the
release, ``bg_challenge/<variant>/val/<NN_class>/<file>``) and ``label9``, a ClassLabel over the 9 IN-9
classes (:data:`IN9_CLASSES`). There is no 1000-way ``label`` (an IN-9 image is a dog, not one of 116
dog breeds), so the 9-way label has its own name, like ObjectNet's ``objectnet_label``. Rows are
sorted by ``id`` = ``<variant>/<NN_class>/<file>``; file names are kept as released, not parsed.

Protocol (``protocol()``, read by ``imagenet-suite score``): a 1000-way model's top-1 class is mapped
to IN-9 through the upstream ``in_to_in9.json`` (370 ImageNet classes in 9 groups, 630 mapped to -1);
a prediction outside IN-9 counts as wrong (``mapping_rule = "argmax_then_map"``; the mapping is
published inverted, IN-9 class -> ImageNet indices, as ``class_mapping``). The mapping is
:data:`IN9_IMAGENET_INDICES`; the build downloads ``in_to_in9.json`` (pinned at a commit) and refuses
to build unless it is exactly that mapping. Object focus (Beyond Accuracy, Hesse et al. 2025) is computed from the
``mixed_same`` and ``mixed_rand`` accuracies: :func:`imagenet_suite.scoring.metrics.object_focus`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from imagenet_suite import classes
from imagenet_suite.core.builder import Builder, BuilderConfig, Prepared, Shard
from imagenet_suite.core.sources import Source, SourceResolver
from imagenet_suite.errors import ChecksumMismatch, InvalidSourceData, SourceError, param
from imagenet_suite.files import read_text

from ._citations import BEYOND_ACCURACY, cite
from ._image_columns import image_features
from ._variants import STRICT_COUNTS, Images, check_count, list_members, locate, read_in_order, scan_class_folders

ROOT = "bg_challenge"
SPLIT = "validation"
RELEASE_SPLIT = "val"  # the folder below each variant
LABEL_COLUMN = "label9"
MAPPING_RULE = "argmax_then_map"
IMAGES_PER_CLASS = 450
REPO = "MadryLab/backgrounds_challenge"
REPO_COMMIT = "46d224bb02a296681eddbae44a49da9abb5ba038"  # newest; in_to_in9.json unchanged since d19b354 (2020-06-16)

# The release's class folders, in index order, and the IN-9 class names (the folder without "NN_").
IN9_FOLDERS = (
    "00_dog",
    "01_bird",
    "02_wheeled vehicle",
    "03_reptile",
    "04_carnivore",
    "05_insect",
    "06_musical instrument",
    "07_primate",
    "08_fish",
)
IN9_CLASSES = tuple(folder[3:] for folder in IN9_FOLDERS)

# IN-9 class -> its ImageNet-1k classes (sorted-wnid indices), the inverse of the upstream
# in_to_in9.json at REPO_COMMIT; the other 630 classes map to -1 there (no IN-9 class).
# fmt: off
IN9_IMAGENET_INDICES: dict[str, tuple[int, ...]] = {
    "dog": (*range(151, 171), *range(173, 269)),
    "bird": (*range(7, 25), *range(87, 101), *range(127, 147)),
    "wheeled vehicle": (
        407, 408, 428, 436, 444, 468, 511, 547, 555, 561, 565, 569, 573, 586, 603, 609, 612, 627, 656, 661, 665,
        670, 671, 675, 690, 705, 717, 734, 751, 757, 791, 802, 803, 817, 820, 829, 847, 864, 866, 867, 870, 880,
    ),
    "reptile": (*range(33, 69),),
    "carnivore": (*range(269, 281), *range(286, 300), *range(356, 363), 387, 388),
    "insect": (*range(300, 327),),
    "musical instrument": (
        401, 402, 420, 432, 486, 494, 513, 541, 546, 558, 566, 577, 579, 593, 594, 641, 642, 683, 684, 687, 699,
        776, 822, 875, 881, 889,
    ),
    "primate": (*range(365, 385),),
    "fish": (*range(0, 7), *range(389, 398)),
}
# fmt: on

# (config = release folder, description), in the order of the upstream README's figure.
VARIANTS = (
    ("original", "the IN-9 test images as they are (foreground and background)"),
    ("only_bg_b", "background only: the foreground's bounding box blacked out"),
    ("only_bg_t", "background only: the foreground's bounding box filled with tiles of the background"),
    ("no_fg", "the segmented foreground blacked out, the background kept"),
    ("only_fg", "the segmented foreground on a black background"),
    ("mixed_same", "the foreground on the background of another image of the same class"),
    ("mixed_rand", "the foreground on the background of an image of a random class"),
    ("mixed_next", "the foreground on the background of an image of the next class (class + 1 mod 9)"),
)

ARCHIVE = Source(
    "archive",
    "backgrounds_challenge_data.tar.gz",
    url=f"https://github.com/{REPO}/releases/download/data/backgrounds_challenge_data.tar.gz",
    instructions=f"backgrounds_challenge_data.tar.gz from https://github.com/{REPO}/releases (tag 'data'; no "
    "published sha256: the first build records it in build_info.json; pin it with --pins checksums.tsv), or its "
    f"extracted {ROOT}/ folder.",
)
IN_TO_IN9 = Source(
    "in_to_in9",
    "in_to_in9.json",
    url=f"https://raw.githubusercontent.com/{REPO}/{REPO_COMMIT}/in_to_in9.json",
    size=10_520,
    sha256="5b72ab44c804129744f5dff9372d8048c3b85da38d48385d73686ee0b0e7b638",  # git show 46d224b:in_to_in9.json
    instructions=f"in_to_in9.json of https://github.com/{REPO} at commit {REPO_COMMIT[:7]} "
    f"(https://raw.githubusercontent.com/{REPO}/{REPO_COMMIT}/in_to_in9.json).",
)


def imagenet_to_in9() -> tuple[int, ...]:
    """The 1000 entries of ``in_to_in9.json`` in index order: IN-9 class 0..8, or -1 (no IN-9 class)."""
    mapped = [-1] * classes.NUM_CLASSES
    for label, name in enumerate(IN9_CLASSES):
        for index in IN9_IMAGENET_INDICES[name]:
            mapped[index] = label
    return tuple(mapped)


def read_in_to_in9(path: Path) -> tuple[int, ...]:
    """``in_to_in9.json`` (``{"<index>": <IN-9 class or -1>}`` for the 1000 indices) as 1000 ints."""
    try:
        data = json.loads(read_text(path, 'JSON of {"<index>": <IN-9 class>}'))
    except (OSError, ValueError) as err:
        raise InvalidSourceData(f"{path}: not readable JSON ({err})") from err
    expected_keys = {str(index) for index in range(classes.NUM_CLASSES)}
    if not isinstance(data, dict) or set(data) != expected_keys:
        raise InvalidSourceData(f'{path}: expected {{"<index>": <class>}} for each of the indices "0".."999"')
    for key, value in data.items():
        if type(value) is not int or not -1 <= value < len(IN9_CLASSES):
            raise InvalidSourceData(f"{path}: index {key} maps to {value!r}; expected an IN-9 class 0..8 or -1")
    return tuple(data[str(index)] for index in range(classes.NUM_CLASSES))


def check_in_to_in9(found: tuple[int, ...], where: Path) -> None:
    """The release's mapping must be :data:`IN9_IMAGENET_INDICES` (else the published protocol would be wrong)."""
    expected = imagenet_to_in9()
    for index, (got, want) in enumerate(zip(found, expected, strict=True)):
        if got != want:
            raise InvalidSourceData(
                f"{where}: ImageNet-1k class {index} maps to {_class_text(got)}, expected {_class_text(want)} "
                f"(the published 1000 -> IN-9 mapping of {REPO}@{REPO_COMMIT[:7]})"
            )


def _class_text(value: int) -> str:
    return "-1 (no IN-9 class)" if value < 0 else f"{value} ({IN9_CLASSES[value]})"


def _class_index(folder: str, where: str) -> int:
    if folder in IN9_FOLDERS:
        return IN9_FOLDERS.index(folder)
    raise InvalidSourceData(
        f"{where}: class folder {folder!r} is not one of the 9 IN-9 class folders {list(IN9_FOLDERS)}"
    )


def _layouts(variant: str) -> str:
    return (
        f"  1. {ARCHIVE.filename} (the release archive)\n"
        f"  2. {ROOT}/{variant}/{RELEASE_SPLIT}/<NN_class>/*.JPEG (that archive extracted)"
    )


class BackgroundsChallenge(Builder):
    NAME = "backgrounds_challenge"
    VERSION = "1.0.0"
    RELEASE_NOTES = {
        "1.0.0": "Initial release: the 8 IN-9 test variants of the Backgrounds Challenge (4,050 images each) as "
        "original bytes, 9-class label9, the 1000 -> IN-9 argmax-then-map protocol from in_to_in9.json."
    }
    CONFIGS = tuple(
        BuilderConfig(variant, f"IN-9 {variant}: {description}", shard_size=1000) for variant, description in VARIANTS
    )
    SOURCES = (ARCHIVE, IN_TO_IN9)
    OPTIONS = {"strict_counts": STRICT_COUNTS}
    MANUAL_DOWNLOAD_INSTRUCTIONS = (
        "Downloaded automatically (the release archive and in_to_in9.json). Offline, put in --manual-dir: "
        f"{ARCHIVE.filename} (or its extracted {ROOT}/ folder) and {IN_TO_IN9.instructions}"
    )
    HOMEPAGE = f"https://github.com/{REPO}"
    LICENSE = "other"
    CITATION = cite(
        """@inproceedings{xiao2021noise,
  title = {Noise or Signal: The Role of Image Backgrounds in Object Recognition},
  author = {Kai Xiao and Logan Engstrom and Andrew Ilyas and Aleksander Madry},
  booktitle = {International Conference on Learning Representations (ICLR)}, year = {2021},
  eprint = {2006.09994}, archivePrefix = {arXiv}}""",
        BEYOND_ACCURACY,
    )

    @property
    def variant(self) -> str:
        return self.config.name

    def features(self):
        from datasets import ClassLabel

        return image_features({LABEL_COLUMN: ClassLabel(names=list(IN9_CLASSES))})

    def prepare(self, resolver: SourceResolver) -> Prepared:
        mapping = resolver.resolve(IN_TO_IN9)
        check_in_to_in9(read_in_to_in9(mapping.path), mapping.path)
        release = f"{ROOT}/{self.variant}/{RELEASE_SPLIT}"
        try:
            located = locate(resolver, ARCHIVE, release)
        except ChecksumMismatch:
            raise
        except SourceError as err:
            raise type(err)(
                f"{err}\nAccepted layouts of {param('manual_dir')} for {self.variant}:\n{_layouts(self.variant)}"
            ) from err
        names, index = list_members(located)
        where = str(located.source.path)
        prefix = located.member_prefix  # "bg_challenge/<variant>/val/" in the archive, "" in an extracted folder
        if located.layout == "archive" and not any(name.startswith(prefix) for name in names):
            present = sorted({n.split("/")[1] for n in names if n.startswith(f"{ROOT}/") and n.count("/") >= 2})
            raise InvalidSourceData(
                f"{where}: no {prefix}<NN_class>/ members: the variant folder {self.variant!r} is missing "
                f"(the archive holds {ROOT}/{present or '<nothing>'}; renamed folder, or the wrong archive?)"
            )
        scanned = scan_class_folders(
            names, prefix, where, _class_index, skip_outside=True, class_name=IN9_FOLDERS.__getitem__
        )
        members = {f"{self.variant}/{key}": member for key, (member, _) in scanned.items()}
        labels = {f"{self.variant}/{key}": label for key, (_, label) in scanned.items()}
        self._check_counts(labels, f"{where}: {release}")
        images = Images(
            located.source.path,
            located.file_prefix,
            members,
            labels,
            index.subset(members.values()) if index is not None else None,
        )
        sources = {ARCHIVE.name: located.source, IN_TO_IN9.name: mapping}
        return Prepared(sources, {"images": images, "layout": located.layout})

    def _check_counts(self, labels: dict[str, int], where: str) -> None:
        """With ``strict_counts``: 4,050 images, 450 in each of the 9 class folders."""
        strict = self.options["strict_counts"]
        check_count(len(labels), IMAGES_PER_CLASS * len(IN9_CLASSES), strict, where, "images")
        counts = Counter(labels.values())
        for label, folder in enumerate(IN9_FOLDERS):
            check_count(counts[label], IMAGES_PER_CLASS, strict, f"{where}/{folder}", "images")

    def split_keys(self, prepared: Prepared) -> dict[str, list[str]]:
        return {SPLIT: sorted(prepared.data["images"].members)}

    def generate(self, prepared: Prepared, shard: Shard) -> Iterator[dict]:
        images: Images = prepared.data["images"]
        for image_id, data in read_in_order(images, shard.keys):
            yield {**images.row(image_id, data), LABEL_COLUMN: images.labels[image_id]}

    def protocol(self) -> dict:
        protocol = {
            "label_column": LABEL_COLUMN,
            "mapping_rule": MAPPING_RULE,
            "class_mapping": {name: list(IN9_IMAGENET_INDICES[name]) for name in IN9_CLASSES},
            "num_classes": classes.NUM_CLASSES,
            "mapping_note": "a 1000-way model's top-1 class (ties to the lowest index) is mapped to the IN-9 class "
            "whose list holds it; a top-1 class in no list (630 of the 1000, -1 in in_to_in9.json) is wrong. "
            f"Accuracy = correct / all rows (upstream in9_eval.py). Mapping: in_to_in9.json of {REPO}@{REPO_COMMIT[:7]}",
        }
        if self.variant in ("mixed_same", "mixed_rand"):
            protocol["object_focus"] = (
                "1 - (top1_accuracy(mixed_same) - top1_accuracy(mixed_rand)), both through this mapping "
                "(object focus of Beyond Accuracy, Hesse et al. 2025; imagenet_suite.scoring.metrics.object_focus)"
            )
        return protocol

    def card_context(self, prepared: Prepared) -> dict:
        return {"layout": prepared.data["layout"]}
