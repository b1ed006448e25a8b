"""``imagenet_val``: the 50,000 ILSVRC2012 validation images, original bytes, sorted-wnid labels.

Accepted layouts of the manual directory (``--manual-dir``), detected in this order:

1. ``tar``: ``ILSVRC2012_img_val.tar`` + ``ILSVRC2012_devkit_t12.tar.gz`` (ground truth is the
   devkit's ILSVRC2012_ID per image, mapped to a wnid through ``meta.mat`` — *not* an index into
   the sorted wnids);
2. ``kaggle``: ``ILSVRC/Data/CLS-LOC/val/*.JPEG`` + ``LOC_val_solution.csv`` +
   ``LOC_synset_mapping.txt`` (the Kaggle "ImageNet Object Localization Challenge" download);
3. ``folders``: ``val/<wnid>/*.JPEG`` (torchvision ImageFolder layout, e.g. after valprep.sh).

The ``boxes`` config adds the object boxes, from (first found) ``LOC_val_solution.csv``, the
Kaggle ``ILSVRC/Annotations/CLS-LOC/val/*.xml`` files, or ``ILSVRC2012_bbox_val_v3.tgz``.
Every layout yields the same rows: the shared image columns of :mod:`._image_columns` plus ``label``
(and ``objects`` for ``boxes``).
"""

from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from imagenet_suite import classes
from imagenet_suite.core.archives import TarIndex, index_tar, open_archive
from imagenet_suite.core.builder import Builder, BuilderConfig, Prepared, Shard
from imagenet_suite.core.sources import ResolvedSource, Source, SourceResolver
from imagenet_suite.errors import InvalidSourceData, ManualFileMissing, param
from imagenet_suite.files import decode_text, list_folder, read_text, sha256_file

from ._citations import ANZAKU_2024, BEYOND_ACCURACY, ILSVRC, LCA_ON_THE_LINE, NINCO, cite
from ._image_columns import image_features, image_row

NUM_VAL_IMAGES = 50_000
VAL_ID = re.compile(r"^ILSVRC2012_val_(\d{8})$")

VAL_TAR = Source(
    "val_tar",
    "ILSVRC2012_img_val.tar",
    md5="29b22e2961454d5413ddabcf34fc5622",
    instructions="Download ILSVRC2012_img_val.tar (6.3 GB) from https://image-net.org/download-images "
    "(login and terms acceptance required) and put it in --manual-dir.",
)
DEVKIT = Source(
    "devkit",
    "ILSVRC2012_devkit_t12.tar.gz",
    md5="fa75699e90414af021442c21a62c3abf",
    instructions="Download ILSVRC2012_devkit_t12.tar.gz from https://image-net.org/download-images "
    "and put it in --manual-dir beside ILSVRC2012_img_val.tar.",
)
BBOX_VAL = Source(
    "bbox_val",
    "ILSVRC2012_bbox_val_v3.tgz",
    instructions="Optional, for the boxes config: ILSVRC2012_bbox_val_v3.tgz from https://image-net.org/download-images.",
)
KAGGLE_SOLUTION = "LOC_val_solution.csv"
KAGGLE_MAPPING = "LOC_synset_mapping.txt"
KAGGLE_IMAGES = "ILSVRC/Data/CLS-LOC/val"
KAGGLE_XML = "ILSVRC/Annotations/CLS-LOC/val"
DEVKIT_GROUND_TRUTH = "ILSVRC2012_devkit_t12/data/ILSVRC2012_validation_ground_truth.txt"
DEVKIT_META = "ILSVRC2012_devkit_t12/data/meta.mat"

ACCEPTED_LAYOUTS = (
    "  1. ILSVRC2012_img_val.tar + ILSVRC2012_devkit_t12.tar.gz (from image-net.org)\n"
    "  2. ILSVRC/Data/CLS-LOC/val/*.JPEG + LOC_val_solution.csv + LOC_synset_mapping.txt (Kaggle)\n"
    "  3. val/<wnid>/*.JPEG (ImageFolder layout)\n"
    "  For the boxes config also one of: LOC_val_solution.csv, ILSVRC/Annotations/CLS-LOC/val/*.xml, "
    "ILSVRC2012_bbox_val_v3.tgz"
)


@dataclass(frozen=True)
class Layout:
    """Where the images of one layout are and what each image's label is."""

    name: str
    archive: ResolvedSource  # tar file or folder holding the images
    members: dict[str, str]  # id -> member name inside the archive
    labels: dict[str, int]  # id -> class index (sorted-wnid order)
    tar_index: TarIndex | None = None  # the tar's member index (tar layout), so workers skip the header scan


def val_id_of(file_name: str) -> str | None:
    """``ILSVRC2012_val_00000001`` for ``[dirs/]ILSVRC2012_val_00000001.JPEG``, else None."""
    stem = file_name.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return stem if VAL_ID.match(stem) and file_name.endswith(".JPEG") else None


# -- layout detection ------------------------------------------------------------------------------


def find_layout(resolver: SourceResolver) -> Layout:
    """Detect the first complete layout in the manual dir; ManualFileMissing lists all accepted ones."""
    if resolver.find_manual(VAL_TAR.filename):
        return _tar_layout(resolver)
    if resolver.find_manual(KAGGLE_IMAGES):
        return _kaggle_layout(resolver)
    if resolver.find_manual("val"):
        return _folders_layout(resolver)
    where = resolver.manual_dir or f"(no {param('manual_dir')} given)"
    raise ManualFileMissing(
        f"no ImageNet validation images found in {where}. "
        f"Accepted layouts of {param('manual_dir')}:\n{ACCEPTED_LAYOUTS}"
    )


def _tar_layout(resolver: SourceResolver) -> Layout:
    if not resolver.find_manual(DEVKIT.filename):
        raise ManualFileMissing(
            f"{DEVKIT.filename} not found in {resolver.manual_dir}: it holds the labels of "
            f"{VAL_TAR.filename}. {DEVKIT.instructions}\nAccepted layouts:\n{ACCEPTED_LAYOUTS}"
        )
    tar_source, index = resolver.resolve_with(VAL_TAR, index_tar)  # header scan while the tar is hashed
    devkit = resolver.resolve(DEVKIT)
    members = {}
    for name in index.members:
        image_id = val_id_of(name)
        if image_id is None:
            raise InvalidSourceData(
                f"{tar_source.path}: unexpected member {name!r} (expected ILSVRC2012_val_NNNNNNNN.JPEG)"
            )
        if image_id in members:
            raise InvalidSourceData(
                f"{tar_source.path}: image {image_id} is there twice, as {members[image_id]!r} and "
                f"{name!r}; refusing to pick one"
            )
        members[image_id] = name
    ids = sorted(members)
    ground_truth = _read_devkit_labels(devkit.path)
    _check_consecutive(ids, tar_source.path)
    if len(ground_truth) != len(ids):
        raise InvalidSourceData(
            f"{devkit.path}: {DEVKIT_GROUND_TRUTH} has {len(ground_truth)} labels but "
            f"{tar_source.path} has {len(ids)} images; the label file does not match the images"
        )
    labels = dict(zip(ids, ground_truth))
    return Layout("tar", tar_source, members, labels, index)


def _read_devkit_labels(devkit_path: Path) -> list[int]:
    """Sorted-wnid class index of each val image, from the devkit's ILSVRC2012_IDs and meta.mat."""
    import scipy.io

    with open_archive(devkit_path) as devkit:
        files = dict(devkit.iter_members([DEVKIT_GROUND_TRUTH, DEVKIT_META]))
    for needed in (DEVKIT_GROUND_TRUTH, DEVKIT_META):
        if needed not in files:
            raise InvalidSourceData(f"{devkit_path}: member {needed!r} is missing (not the ILSVRC2012 devkit?)")
    try:
        synsets = scipy.io.loadmat(io.BytesIO(files[DEVKIT_META]), squeeze_me=True)["synsets"]
        id_to_wnid = {int(s["ILSVRC2012_ID"]): str(s["WNID"]) for s in synsets if int(s["num_children"]) == 0}
    except (ValueError, KeyError, TypeError) as err:
        raise InvalidSourceData(f"{devkit_path}: {DEVKIT_META} is not the devkit's synsets table ({err})") from err
    labels = []
    ground_truth = decode_text(
        files[DEVKIT_GROUND_TRUTH], f"{devkit_path}:{DEVKIT_GROUND_TRUTH}", "ILSVRC2012_IDs, one a line"
    )
    for line_no, line in enumerate(ground_truth.split(), start=1):
        ilsvrc_id = int(line) if line.isdigit() else -1
        if ilsvrc_id not in id_to_wnid:
            raise InvalidSourceData(
                f"{devkit_path}: {DEVKIT_GROUND_TRUTH} line {line_no}: {line!r} is not an "
                f"ILSVRC2012_ID of a leaf synset in meta.mat"
            )
        labels.append(classes.index_of(id_to_wnid[ilsvrc_id], f"{devkit_path}: {DEVKIT_META}"))
    return labels


def _check_consecutive(ids: list[str], where: Path) -> None:
    """Val images are numbered 1..N without gaps (the release has N = 50,000)."""
    for position, image_id in enumerate(ids, start=1):
        if int(image_id[-8:]) != position:
            raise InvalidSourceData(
                f"{where}: expected ILSVRC2012_val_{position:08d}.JPEG, found {image_id}.JPEG "
                "(images are missing or misnamed)"
            )


def _kaggle_layout(resolver: SourceResolver) -> Layout:
    root = resolver.manual_dir
    for needed in (KAGGLE_SOLUTION, KAGGLE_MAPPING):
        if not resolver.find_manual(needed):
            raise ManualFileMissing(
                f"{needed} not found in {root}: the Kaggle layout needs {KAGGLE_SOLUTION} and "
                f"{KAGGLE_MAPPING} beside ILSVRC/.\nAccepted layouts:\n{ACCEPTED_LAYOUTS}"
            )
    _check_synset_mapping(root / KAGGLE_MAPPING)
    image_dir = root / KAGGLE_IMAGES
    files = list_folder(image_dir)
    members = {}
    for name in files:
        image_id = val_id_of(name)
        if image_id is None or "/" in name:
            raise InvalidSourceData(
                f"{image_dir / name}: unexpected file in {KAGGLE_IMAGES} (expected ILSVRC2012_val_NNNNNNNN.JPEG)"
            )
        members[image_id] = name
    solution = read_loc_solution(root / KAGGLE_SOLUTION)
    _check_same_ids(members, solution, image_dir, root / KAGGLE_SOLUTION)
    labels = {image_id: _single_label(image_id, boxes, root / KAGGLE_SOLUTION) for image_id, boxes in solution.items()}
    return Layout("kaggle", resolver.resolve_folder("val_images", image_dir, files), members, labels)


def _check_synset_mapping(path: Path) -> None:
    text = read_text(path, "the 1000 ImageNet-1k wnids, one '<wnid> <names>' a line")
    wnids = [line.split(" ", 1)[0] for line in text.splitlines() if line.strip()]
    if tuple(wnids) != classes.imagenet_wnids():
        raise InvalidSourceData(f"{path}: expected the 1000 ImageNet-1k wnids in sorted order, one per line")


def _single_label(image_id: str, boxes: list[dict], where: Path) -> int:
    wnids = {box["wnid"] for box in boxes}
    if len(wnids) != 1:
        raise InvalidSourceData(
            f"{where}: row {image_id} has boxes of classes {sorted(wnids)}; expected exactly one class"
        )
    return classes.index_of(wnids.pop(), f"{where}: row {image_id}")


def _check_same_ids(members: dict, labelled: dict, images_where: Path, labels_where: Path) -> None:
    missing_labels = sorted(set(members) - set(labelled))
    missing_images = sorted(set(labelled) - set(members))
    if missing_labels:
        raise InvalidSourceData(
            f"{labels_where}: no label for {len(missing_labels)} image(s) of {images_where}, "
            f"e.g. {missing_labels[0]}; the label file does not match the images"
        )
    if missing_images:
        raise InvalidSourceData(
            f"{labels_where}: {len(missing_images)} labelled image(s) are not in {images_where}, "
            f"e.g. {missing_images[0]}; the label file does not match the images"
        )


def _folders_layout(resolver: SourceResolver) -> Layout:
    root = resolver.manual_dir / "val"
    for entry in sorted(root.iterdir()):
        if not entry.is_dir():
            raise InvalidSourceData(f"{entry}: expected only <wnid> folders in {root}")
        classes.index_of(entry.name, str(entry), "class folder")
    files = list_folder(root)
    members, labels = {}, {}
    for name in files:
        parts = name.split("/")
        if len(parts) != 2:
            raise InvalidSourceData(
                f"{root / name}: unexpected file (expected only val/<wnid>/ILSVRC2012_val_NNNNNNNN.JPEG)"
            )
        image_id = val_id_of(parts[1])
        if image_id is None:
            raise InvalidSourceData(f"{root / name}: unexpected file (expected ILSVRC2012_val_NNNNNNNN.JPEG)")
        if image_id in members:
            raise InvalidSourceData(f"{root / name}: {image_id} also appears as {root / members[image_id]}")
        members[image_id], labels[image_id] = name, classes.index_of(parts[0], f"{root / parts[0]}", "class folder")
    _check_consecutive(sorted(members), root)
    return Layout("folders", resolver.resolve_folder("val_images", root, files), members, labels)


# -- boxes -----------------------------------------------------------------------------------------


def read_loc_solution(path: Path) -> dict[str, list[dict]]:
    """Kaggle ``LOC_val_solution.csv``: id -> boxes ``{wnid, xmin, ymin, xmax, ymax}`` (pixels, as released)."""
    out: dict[str, list[dict]] = {}
    reader = csv.reader(io.StringIO(read_text(path, "a CSV of ImageId,PredictionString rows"), newline=""))
    header = next(reader, None)
    if header != ["ImageId", "PredictionString"]:
        raise InvalidSourceData(f"{path}: expected header ImageId,PredictionString, got {header}")
    for line_no, row in enumerate(reader, start=2):
        parts = row[1].split() if len(row) == 2 else []
        if len(row) != 2 or not parts or len(parts) % 5 or not VAL_ID.match(row[0]):
            raise InvalidSourceData(
                f"{path}: line {line_no}: expected 'ILSVRC2012_val_N,<wnid x0 y0 x1 y1>...', got {row}"
            )
        try:
            out[row[0]] = [_box(parts[i], *parts[i + 1 : i + 5]) for i in range(0, len(parts), 5)]
        except ValueError as err:
            raise InvalidSourceData(f"{path}: line {line_no}: box coordinates are not integers: {row[1]!r}") from err
    return out


def _box(wnid: str, xmin: str, ymin: str, xmax: str, ymax: str) -> dict:
    return {"wnid": wnid, "xmin": int(xmin), "ymin": int(ymin), "xmax": int(xmax), "ymax": int(ymax)}


def parse_val_xml(data: bytes, where: str) -> list[dict]:
    """Boxes of one PASCAL-VOC style val annotation (``<object><name>``/``<bndbox>``)."""
    try:
        root = ET.fromstring(data)
        return [
            _box(obj.findtext("name"), *(obj.find("bndbox").findtext(k) for k in ("xmin", "ymin", "xmax", "ymax")))
            for obj in root.iter("object")
        ]
    except (ET.ParseError, AttributeError, TypeError, ValueError) as err:
        raise InvalidSourceData(f"{where}: not a valid box annotation ({err})") from err


def find_boxes(resolver: SourceResolver, ids: list[str]) -> tuple[dict[str, list[dict]], dict[str, ResolvedSource]]:
    """Boxes of every id from the first box source present; ManualFileMissing if none."""
    if resolver.find_manual(KAGGLE_SOLUTION):
        path = resolver.manual_dir / KAGGLE_SOLUTION
        boxes, source = read_loc_solution(path), ResolvedSource("boxes", path, path.stat().st_size, sha256_file(path))
    elif resolver.find_manual(KAGGLE_XML):
        folder = resolver.manual_dir / KAGGLE_XML
        files = [name for name in list_folder(folder) if name.endswith(".xml") and "/" not in name]
        boxes = {name[:-4]: parse_val_xml((folder / name).read_bytes(), str(folder / name)) for name in files}
        source = resolver.resolve_folder("boxes", folder, files)
    elif resolver.find_manual(BBOX_VAL.filename):
        source = resolver.resolve(BBOX_VAL)
        with open_archive(source.path) as archive:
            boxes = {
                Path(n).stem: parse_val_xml(d, f"{source.path}:{n}")
                for n, d in archive.iter_members([n for n in archive.names() if n.endswith(".xml")])
            }
    else:
        raise ManualFileMissing(
            f"the boxes config needs a box source in {resolver.manual_dir}: {KAGGLE_SOLUTION}, "
            f"{KAGGLE_XML}/*.xml or {BBOX_VAL.filename}"
        )
    _check_same_ids(dict.fromkeys(ids), boxes, Path("the images"), source.path)
    return {i: boxes[i] for i in ids}, {"boxes": source}


# -- the builder -------------------------------------------------------------------------------------


class ImagenetVal(Builder):
    NAME = "imagenet_val"
    VERSION = "1.0.0"
    RELEASE_NOTES = {
        "1.0.0": "Initial release: 50,000 validation images as original bytes, sorted-wnid labels, "
        "image mode and size; boxes config with the released object boxes."
    }
    CONFIGS = (
        BuilderConfig("default", "images, labels, image mode and size", shard_size=2500),
        BuilderConfig("boxes", "default columns plus the released object boxes", shard_size=2500),
    )
    SOURCES = (VAL_TAR, DEVKIT, BBOX_VAL)
    MANUAL_DOWNLOAD_INSTRUCTIONS = f"Put one of these layouts in --manual-dir:\n{ACCEPTED_LAYOUTS}"
    HOMEPAGE = "https://image-net.org/challenges/LSVRC/2012/"
    LICENSE = "other"
    CITATION = cite(ILSVRC, BEYOND_ACCURACY, ANZAKU_2024, NINCO, LCA_ON_THE_LINE)

    def features(self):
        from datasets import List, Value

        label = classes.imagenet_class_label()
        features = image_features({"label": label})
        if self.config.name == "boxes":
            features["objects"] = List(
                {
                    "label": label,
                    "xmin": Value("int32"),
                    "ymin": Value("int32"),
                    "xmax": Value("int32"),
                    "ymax": Value("int32"),
                }
            )
        return features

    def prepare(self, resolver: SourceResolver) -> Prepared:
        layout = find_layout(resolver)
        sources = {"images": layout.archive}
        if layout.name == "tar":
            sources["devkit"] = resolver.resolve(DEVKIT)
        data = {"layout": layout}
        if self.config.name == "boxes":
            data["boxes"], box_sources = find_boxes(resolver, sorted(layout.members))
            sources.update(box_sources)
        return Prepared(sources, data)

    def split_keys(self, prepared: Prepared) -> dict[str, list[str]]:
        return {"validation": sorted(prepared.data["layout"].members)}

    def generate(self, prepared: Prepared, shard: Shard) -> Iterator[dict]:
        layout: Layout = prepared.data["layout"]
        boxes = prepared.data.get("boxes")
        for image_id, data in read_images(layout, shard.keys):
            where = f"{layout.archive.path}:{layout.members[image_id]}"
            row = {**image_row(image_id, data, f"{image_id}.JPEG", where), "label": layout.labels[image_id]}
            if boxes is not None:
                row["objects"] = [
                    {
                        "label": classes.index_of(b["wnid"], f"box of {image_id}"),
                        **{k: b[k] for k in ("xmin", "ymin", "xmax", "ymax")},
                    }
                    for b in boxes[image_id]
                ]
            yield row

    def card_context(self, prepared: Prepared) -> dict:
        return {"layout": prepared.data["layout"].name}


def read_images(layout: Layout, ids: tuple[str, ...]) -> Iterator[tuple[str, bytes]]:
    """``(id, original bytes)`` for ``ids`` in the given order, read in place from the layout's archive."""
    with open_archive(layout.archive.path, layout.tar_index) as archive:
        for image_id, (_, data) in zip(ids, archive.read_members(layout.members[i] for i in ids), strict=True):
            yield image_id, data
