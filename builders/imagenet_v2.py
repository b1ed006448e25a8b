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

Config ``matched_frequency_multilabel``: the MatchedFrequency images with the multi-labels of Anzaku et
al. 2024 ("Leveraging Human-Machine Interactions for Computer Vision Dataset Quality Enhancement", IHCI
2024; 9,858 images, used by Anzaku et al. 2024, "Re-assessing ImageNet", Table 1), which are not published
anywhere this package can download them: the user gives the file (``--option labels=FILE``, read by
:func:`read_v2_labels`). It is what the papers store labels as, a mapping ``image name → list of labels``:
a JSON object whose keys name MatchedFrequency images and whose values are lists of labels. Its sha256 is
recorded in the build (source ``labels``); the labels go to ``real_labels`` (a list of the 1000-way
``ClassLabel``, as ReaL's), so top-1, ReaL-style and ASMA accuracy apply (``label_count_subgroups`` 1–5,
as the paper scores V1 and V2).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from imagenet_suite import classes
from imagenet_suite.core.builder import BuilderConfig, Option, Prepared, Shard
from imagenet_suite.core.sources import ResolvedSource, Source, SourceResolver, sha256_file
from imagenet_suite.errors import InvalidSourceData, param
from imagenet_suite.files import read_text

from ._citations import ANZAKU_2024, LCA_ON_THE_LINE, cite
from ._variants import STRICT_COUNTS, ClassFolderBuilder, check_count

HF_MIRROR = "https://huggingface.co/datasets/vaishaal/ImageNetV2/resolve/main/"
NUMERIC_FOLDER = re.compile(r"^(0|[1-9]\d{0,2})$")
IMAGES_PER_CONFIG = 10_000
MULTILABEL = "matched_frequency_multilabel"
MULTILABEL_PROTOCOL = {
    "multi_label": "real_labels",
    "skip_empty_label_sets": True,
    "label_count_subgroups": [1, 2, 3, 4, 5],
}  # ASMA over images with 1-5 labels, as Anzaku et al. 2024 score V1 and V2; unlabelled images skipped


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
RELEASES[MULTILABEL] = RELEASES["matched_frequency"]  # Anzaku et al. relabelled the MatchedFrequency images


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


def read_v2_labels(path: Path, files: Mapping[str, str], root: str) -> dict[str, list[int]]:
    """``{image id: [class index, ...]}`` of a V2 multi-label file, checked against the release's images.

    The file is a JSON object ``{image name: [label, ...]}``. An image name is the image's path in the
    release below its root folder, ``<class folder>/<file name>`` (``"0/7e2b….jpeg"``), the class folder
    given as its number or its wnid whichever re-pack was built from, optionally with the root folder in
    front (``imagenetv2-matched-frequency-format-val/0/7e2b….jpeg``), or the bare file name when no other
    image of the release has it. A label is a class index 0..999 (sorted-wnid order, as ReaL's real.json and V2's
    numeric folders) or an ImageNet-1k wnid; each image's labels are distinct, kept in file order, and may
    be empty. Every name must be an image of the release (``files``: id -> the image's released path,
    root folder ``root`` included); images the file leaves out get no label (an empty list, skipped by the
    multi-label metrics, as ReaL's unlabelled images). InvalidSourceData naming the file and the entry
    otherwise.

    Example:
        Image ``0/a.jpeg`` (class 0, tench) labelled tench and goldfish (class 1, by its wnid):

        >>> import json, tempfile
        >>> files = {"n01440764/a.jpeg": "root/0/a.jpeg", "n01443537/b.jpeg": "root/1/b.jpeg"}
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     labels = Path(tmp) / "labels.json"
        ...     _ = labels.write_text(json.dumps({"0/a.jpeg": [0, "n01443537"]}))
        ...     read_v2_labels(labels, files, "root")
        {'n01440764/a.jpeg': [0, 1]}
    """
    prefix = root + "/"
    entries = _json_object(path)
    bare = _bare_names(files)
    found: dict[str, list[int]] = {}
    named_by: dict[str, str] = {}
    for name, labels in entries.items():
        image_id = _image_id(name.removeprefix(prefix), bare)
        if image_id not in files:
            example = min(files.values(), default=prefix)
            raise InvalidSourceData(
                f"{path}: entry {name!r} is not an image of ImageNetV2 MatchedFrequency (expected '<class "
                f"folder>/<file name>' as in the release, e.g. {example.removeprefix(prefix)!r})"
            )
        if image_id in named_by:
            raise InvalidSourceData(f"{path}: entries {named_by[image_id]!r} and {name!r} name the same image")
        named_by[image_id] = name
        found[image_id] = _labels(path, name, labels)
    return found


def _json_object(path: Path) -> dict[str, Any]:
    """The file's JSON object (a key given twice refused: JSON would silently keep the last)."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in items:
            if key in seen:
                raise InvalidSourceData(f"{path}: entry {key!r} is given twice")
            seen[key] = value
        return seen

    try:
        value = json.loads(read_text(path, "a JSON object of image names -> label lists"), object_pairs_hook=pairs)
    except json.JSONDecodeError as err:
        raise InvalidSourceData(f"{path}: not valid JSON ({err})") from err
    if not isinstance(value, dict) or not value:
        raise InvalidSourceData(
            f"{path}: expected a non-empty JSON object mapping image names to lists of labels, "
            f"got {type(value).__name__}{' (empty)' if isinstance(value, dict) else ''}"
        )
    return value


def _bare_names(files: Mapping[str, str]) -> dict[str, str]:
    """``{file name: id}`` of the file names that only one image of the release has."""
    bare: dict[str, list[str]] = {}
    for image_id, file_name in files.items():
        bare.setdefault(PurePosixPath(file_name).name, []).append(image_id)
    return {file: ids[0] for file, ids in bare.items() if len(ids) == 1}


def _image_id(name: str, bare: Mapping[str, str]) -> str | None:
    """The id an image name gives (``<wnid>/<file>``; the folder a class index or a wnid), None if none."""
    parts = name.split("/")
    if len(parts) == 1:
        return bare.get(name)
    folder, file = parts if len(parts) == 2 else ("", "")
    if NUMERIC_FOLDER.match(folder):
        return f"{classes.imagenet_wnids()[int(folder)]}/{file}"
    return f"{folder}/{file}" if folder in classes.wnid_to_index() else None


def _labels(path: Path, name: str, labels: Any) -> list[int]:
    """One entry's labels as class indices (distinct, in file order)."""
    if not isinstance(labels, list):
        raise InvalidSourceData(f"{path}: entry {name!r} is {labels!r}; expected a list of labels")
    indices = []
    for label in labels:
        if isinstance(label, int) and not isinstance(label, bool) and 0 <= label < classes.NUM_CLASSES:
            index = label
        elif isinstance(label, str) and label in classes.wnid_to_index():
            index = classes.index_of(label)
        else:
            raise InvalidSourceData(
                f"{path}: entry {name!r} has label {label!r}; expected a class index 0..999 or an ImageNet-1k wnid"
            )
        if index in indices:
            raise InvalidSourceData(
                f"{path}: entry {name!r} lists class {index} ({classes.imagenet_wnids()[index]}) twice"
            )
        indices.append(index)
    return indices


class ImagenetV2(ClassFolderBuilder):
    NAME = "imagenet_v2"
    VERSION = "1.1.0"
    RELEASE_NOTES = {
        "1.0.0": "Initial release: the three ImageNetV2 test sets (10,000 images each) as original bytes; "
        "numeric class folders mapped to sorted-wnid labels; both re-pack layouts read.",
        "1.1.0": "New config matched_frequency_multilabel: the MatchedFrequency images with the multi-labels of "
        "Anzaku et al. 2024 from a user-given file (--option labels=FILE) in real_labels; the other configs' "
        "rows are unchanged.",
    }
    CONFIGS = (
        BuilderConfig("matched_frequency", "MatchedFrequency: 10,000 images, 10 per class", shard_size=1000),
        BuilderConfig("threshold_0.7", "Threshold0.7: 10,000 images, 10 per class", shard_size=1000),
        BuilderConfig("top_images", "TopImages: 10,000 images, 10 per class", shard_size=1000),
        BuilderConfig(
            MULTILABEL,
            "MatchedFrequency images with the multi-labels of Anzaku et al. 2024 (a user-given file)",
            shard_size=1000,
        ),
    )
    SOURCES = tuple(source for config, (source, _) in RELEASES.items() if config != MULTILABEL)
    OPTIONS = {
        "strict_counts": STRICT_COUNTS,
        "labels": Option(
            "",
            help=f"{MULTILABEL} only: a JSON file {{image name: [labels]}} of the Anzaku et al. 2024 multi-labels "
            "(not published; see the card)",
        ),
    }
    MANUAL_DOWNLOAD_INSTRUCTIONS = (
        "Downloaded automatically from the Hugging Face mirror. Offline: put the config's "
        "imagenetv2-*.tar.gz (or its extracted imagenetv2-*-format-val/ folder) in "
        "--manual-dir. matched_frequency_multilabel also needs --option labels=FILE, the Anzaku et al. 2024 "
        "label file, which is not published for download."
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

    @property
    def multilabel(self) -> bool:
        return self.config.name == MULTILABEL

    def release(self) -> tuple[Source, str]:
        return RELEASES[self.config.name]

    def extra_features(self) -> dict[str, Any]:
        from datasets import List

        return {"real_labels": List(classes.imagenet_class_label())} if self.multilabel else {}

    def prepare(self, resolver: SourceResolver) -> Prepared:
        if not self.multilabel:
            return super().prepare(resolver)
        if not self.options["labels"]:  # checked before the archive is read
            raise InvalidSourceData(
                f"imagenet_v2 config {MULTILABEL} needs {param('builder_options')} labels=FILE: the Anzaku et al. 2024 "
                "multi-labels as a JSON object {image name: [labels]} (not published; see the imagenet_v2 card)"
            )
        path = Path(self.options["labels"])
        if not path.is_file():
            raise InvalidSourceData(f"{path}: no such labels file")
        prepared = super().prepare(resolver)
        images = prepared.data["images"]
        files = {image_id: images.file_name(image_id) for image_id in images.members}
        real = read_v2_labels(path, files, RELEASES[MULTILABEL][1])
        source = ResolvedSource("labels", path, path.stat().st_size, sha256_file(path))
        return Prepared({**prepared.sources, "labels": source}, {**prepared.data, "real_labels": real})

    def generate(self, prepared: Prepared, shard: Shard) -> Iterator[dict]:
        real = prepared.data.get("real_labels")
        for row in super().generate(prepared, shard):
            yield row if real is None else {**row, "real_labels": real.get(row["id"], [])}

    def class_index(self):
        return v2_class_index

    def check_release(self, scanned: dict[str, tuple[str, int]], prefix: str, where: str) -> None:
        _check_one_convention(scanned, prefix, where)
        strict = self.options["strict_counts"]
        check_count(len(scanned), IMAGES_PER_CONFIG, strict, where, "images")
        check_count(len({label for _, label in scanned.values()}), classes.NUM_CLASSES, strict, where, "class folders")

    def protocol(self) -> dict:
        return {"num_classes": classes.NUM_CLASSES, **(MULTILABEL_PROTOCOL if self.multilabel else {})}
