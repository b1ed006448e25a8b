"""``imagenet_multilabel``: expert multi-labels of 20,000 val images (Shankar et al. 2020) and ImageNet-M.

The source is ``human_accuracy_v3.0.0.json`` of "When does dough become a bagel?" (Vasudevan et
al. 2022; the file TFDS's ``imagenet2012_multilabel`` 3.0.0 reads, pinned by size and sha256):

* ``initial_annots``: file name -> ``{"correct": [wnid...], "wrong": [...], "unclear": [...]}``, each
  key absent when its list would be empty. It also holds the ImageNetV2 images of the paper (names
  without the ``ILSVRC2012_val_`` prefix); like TFDS, only the ``ILSVRC2012_val_`` entries are kept
  (the 20,000 annotated val images).
* ``problematic_images``: file name -> review record; those images get ``is_problematic = True``
  (rows are kept; the scorer leaves them out, as the authors do).
* ``imagenet_m``: the 68 file names of ImageNet-M (the ``imagenet_m`` split).

Configs (splits ``validation`` and ``imagenet_m``, rows in id order, ids aligned with
``imagenet_val`` and ``imagenet_real``):

* ``labels`` — no images: ``id``, ``file_name``, ``label`` (the original val label),
  ``correct_labels``, ``wrong_labels``, ``unclear_labels`` (lists of ClassLabel, in the release's
  order), ``is_problematic``.
* ``images`` — the ``imagenet_val`` rows joined with the same columns.

The original label is imagenet_val's label of the file. It comes from a built ``imagenet_val``
given with ``--input`` (any config), else from ``--manual-dir``: the ``labels`` config needs only
the labels — ``ILSVRC2012_devkit_t12.tar.gz`` (without the image tar), or ``LOC_val_solution.csv``
+ ``LOC_synset_mapping.txt``, or the ``val/<wnid>/`` folders — while the ``images`` config reads
one of the full ``imagenet_val`` layouts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from imagenet_suite import classes
from imagenet_suite.core.builder import Builder, BuilderConfig, Prepared, Shard
from imagenet_suite.core.sources import ResolvedSource, Source, SourceResolver
from imagenet_suite.errors import InvalidSourceData, ManualFileMissing, param
from imagenet_suite.files import read_text

from ._citations import ILSVRC, cite
from .imagenet_val import (
    DEVKIT,
    KAGGLE_MAPPING,
    KAGGLE_SOLUTION,
    NUM_VAL_IMAGES,
    ImagenetVal,
    _check_synset_mapping,
    _read_devkit_labels,
    _single_label,
    find_layout,
    read_loc_solution,
)

HUMAN_ACCURACY_JSON = Source(
    "human_accuracy_json",
    "human_accuracy_v3.0.0.json",
    url="https://storage.googleapis.com/brain-car-datasets/imagenet-mistakes/human_accuracy_v3.0.0.json",
    size=200_417_830,
    sha256="d5b2b6111fc9efea16aaebd21bc5a401d16ad18285d3fd99635d8b32ebdb6287",
    instructions="human_accuracy_v3.0.0.json from https://storage.googleapis.com/brain-car-datasets/"
    "imagenet-mistakes/human_accuracy_v3.0.0.json (linked from github.com/google-research/imagenet-mistakes)",
)
VAL_PREFIX = "ILSVRC2012_val_"
VAL_FILE = re.compile(r"^ILSVRC2012_val_(\d{8})\.JPEG$")
TOP_LEVEL_KEYS = ("initial_annots", "problematic_images", "imagenet_m")
ANNOTATION_KEYS = ("correct", "wrong", "unclear")
LABEL_COLUMNS = {"correct": "correct_labels", "wrong": "wrong_labels", "unclear": "unclear_labels"}
SPLITS = ("validation", "imagenet_m")
VAL_BUILD_HINT = (
    "Or build one first: `imagenet-suite build imagenet_val --manual-dir DIR --out datasets` and pass "
    "--input datasets/imagenet_val-1.0.0."
)
LABEL_SOURCES = (
    "  1. a built imagenet_val dataset with --input DIR\n"
    "  2. ILSVRC2012_devkit_t12.tar.gz (the image tar is not needed for the labels config)\n"
    "  3. LOC_val_solution.csv + LOC_synset_mapping.txt (Kaggle)\n"
    "  4. val/<wnid>/*.JPEG (ImageFolder layout)"
)


@dataclass(frozen=True)
class Annotations:
    """The validated content of ``human_accuracy_v3.0.0.json`` (val images only)."""

    labels: dict[str, dict[str, list[int]]]  # id -> {"correct"|"wrong"|"unclear": [class index]}
    problematic: frozenset[str]  # ids of the problematic val images
    imagenet_m: tuple[str, ...]  # ids of ImageNet-M, in id order
    skipped: int  # initial_annots entries that are not val images (ImageNetV2)


def read_human_accuracy(path: Path) -> Annotations:
    """Parse and validate the release JSON; InvalidSourceData names the file, key and entry."""
    try:
        data = json.loads(read_text(path, "the human-accuracy release JSON"))
    except json.JSONDecodeError as err:
        raise InvalidSourceData(f"{path}: not valid JSON ({err})") from err
    if not isinstance(data, dict):
        raise InvalidSourceData(f"{path}: expected a JSON object with keys {list(TOP_LEVEL_KEYS)}")
    for key in TOP_LEVEL_KEYS:
        if key not in data:
            raise InvalidSourceData(f"{path}: key {key!r} is missing (expected {list(TOP_LEVEL_KEYS)})")
    annots, problematic, imagenet_m = (data[key] for key in TOP_LEVEL_KEYS)
    if not isinstance(annots, dict) or not isinstance(problematic, dict):
        raise InvalidSourceData(f"{path}: 'initial_annots' and 'problematic_images' must be objects keyed by file name")
    if not isinstance(imagenet_m, list) or not all(isinstance(name, str) for name in imagenet_m):
        raise InvalidSourceData(f"{path}: 'imagenet_m' must be a list of file names")
    labels: dict[str, dict[str, list[int]]] = {}
    skipped = 0
    for name, entry in annots.items():
        if not name.startswith(VAL_PREFIX):
            skipped += 1  # an ImageNetV2 image of the paper (TFDS keeps only the val images too)
            continue
        image_id = _val_id(name, path, "initial_annots")
        where = f"{path}: initial_annots[{name!r}]"
        if not isinstance(entry, dict):
            raise InvalidSourceData(f"{where}: expected an object with keys {list(ANNOTATION_KEYS)}")
        unknown = sorted(set(entry) - set(ANNOTATION_KEYS))
        if unknown:
            raise InvalidSourceData(f"{where}: unknown key(s) {unknown}; expected only {list(ANNOTATION_KEYS)}")
        sets = {}
        for key in ANNOTATION_KEYS:
            wnids = entry.get(key, [])
            if not isinstance(wnids, list) or not all(isinstance(w, str) for w in wnids):
                raise InvalidSourceData(f"{where}[{key!r}]: expected a list of wnids, got {wnids!r}")
            sets[key] = [classes.index_of(w, f"{where}[{key!r}]", "wnid") for w in wnids]
        labels[image_id] = sets
    flagged = frozenset(
        _val_id(name, path, "problematic_images") for name in problematic if name.startswith(VAL_PREFIX)
    )
    m_ids = [_val_id(name, path, "imagenet_m") for name in imagenet_m]
    for image_id in m_ids:
        if image_id not in labels:
            raise InvalidSourceData(f"{path}: imagenet_m lists {image_id}.JPEG, which has no entry in initial_annots")
    if len(set(m_ids)) != len(m_ids):
        twice = sorted(i for i in set(m_ids) if m_ids.count(i) > 1)[0]
        raise InvalidSourceData(f"{path}: imagenet_m lists {twice}.JPEG twice")
    return Annotations(labels, flagged, tuple(sorted(m_ids)), skipped)


def _val_id(name: str, path: Path, key: str) -> str:
    match = VAL_FILE.match(name) if isinstance(name, str) else None
    if match is None or not 1 <= int(match.group(1)) <= NUM_VAL_IMAGES:
        raise InvalidSourceData(
            f"{path}: {key} names {name!r}, which is not an ImageNet val file name "
            f"(ILSVRC2012_val_NNNNNNNN.JPEG, 1..{NUM_VAL_IMAGES})"
        )
    return name[: -len(".JPEG")]


# -- the original labels ---------------------------------------------------------------------------


def original_labels(resolver: SourceResolver) -> tuple[dict[str, int], dict[str, ResolvedSource], str]:
    """imagenet_val's label of every val image, without reading images: ``(id -> label, sources, where)``."""
    if resolver.inputs:
        folder, source = resolver.input_dataset("imagenet_val", None, build_hint=VAL_BUILD_HINT)
        config = "default" if "default" in folder.configs else folder.configs[0]
        table = folder.read_table(config, "validation", columns=["id", "label"]).to_pydict()
        return dict(zip(table["id"], table["label"], strict=True)), {"imagenet_val": source}, str(folder.path)
    if resolver.find_manual(DEVKIT.filename):
        devkit = resolver.resolve(DEVKIT)
        ground_truth = _read_devkit_labels(devkit.path)
        ids = [f"ILSVRC2012_val_{i + 1:08d}" for i in range(len(ground_truth))]
        return dict(zip(ids, ground_truth, strict=True)), {"devkit": devkit}, str(devkit.path)
    if resolver.find_manual(KAGGLE_SOLUTION):
        if not resolver.find_manual(KAGGLE_MAPPING):
            raise ManualFileMissing(
                f"{KAGGLE_MAPPING} not found in {resolver.manual_dir}: it goes with {KAGGLE_SOLUTION}"
            )
        root = resolver.manual_dir
        _check_synset_mapping(root / KAGGLE_MAPPING)
        solution_path = root / KAGGLE_SOLUTION
        labels = {i: _single_label(i, boxes, solution_path) for i, boxes in read_loc_solution(solution_path).items()}
        sources = {"val_solution": resolver.resolve_folder("val_solution", root, [KAGGLE_SOLUTION, KAGGLE_MAPPING])}
        return labels, sources, str(solution_path)
    if resolver.find_manual("val"):
        layout = find_layout(resolver)
        return dict(layout.labels), {"images": layout.archive}, str(layout.archive.path)
    raise ManualFileMissing(
        f"the original val labels were not found ({param('manual_dir')} {resolver.manual_dir or 'not given'}). "
        f"Give one of:\n{LABEL_SOURCES}"
    )


def _check_in_val(annotations: Annotations, labels: dict[str, int], json_path: Path, where: str) -> None:
    outside = sorted(set(annotations.labels) - set(labels))
    if outside:
        raise InvalidSourceData(
            f"{json_path}: initial_annots names {outside[0]}.JPEG ({len(outside)} such), which is not among "
            f"the {len(labels)} validation images of {where}"
        )


# -- the builder -----------------------------------------------------------------------------------


class ImagenetMultilabel(Builder):
    NAME = "imagenet_multilabel"
    VERSION = "1.0.0"
    RELEASE_NOTES = {
        "1.0.0": "Initial release: the expert multi-labels of human_accuracy_v3.0.0.json (Shankar et al. 2020 "
        "with the corrections of Vasudevan et al. 2022) for 20,000 val images, and the 68-image ImageNet-M "
        "split; labels config (no images) and images config (joined onto imagenet_val)."
    }
    CONFIGS = (
        BuilderConfig(
            "labels", "expert multi-labels of 20,000 val images, no images", shard_size=20_000, row_group_rows=5000
        ),
        BuilderConfig("images", "imagenet_val images and labels joined with the expert multi-labels", shard_size=2500),
    )
    SOURCES = (HUMAN_ACCURACY_JSON, *ImagenetVal.SOURCES)
    MANUAL_DOWNLOAD_INSTRUCTIONS = (
        "human_accuracy_v3.0.0.json is downloaded (or put it in --manual-dir). The original val labels: "
        f"labels config, one of:\n{LABEL_SOURCES}\n"
        "images config: a built imagenet_val with --input DIR, or " + ImagenetVal.MANUAL_DOWNLOAD_INSTRUCTIONS
    )
    HOMEPAGE = "https://github.com/modestyachts/evaluating_machine_accuracy_on_imagenet"
    LICENSE = "unknown"
    CITATION = cite(
        """@inproceedings{shankar2020evaluating,
  title = {Evaluating Machine Accuracy on {ImageNet}},
  author = {Vaishaal Shankar and Rebecca Roelofs and Horia Mania and Alex Fang and Benjamin Recht and Ludwig Schmidt},
  booktitle = {Proceedings of the 37th International Conference on Machine Learning (ICML)},
  series = {PMLR}, volume = {119}, pages = {8634--8644}, year = {2020}}""",
        """@article{vasudevan2022does,
  title = {When does dough become a bagel? Analyzing the remaining mistakes on {ImageNet}},
  author = {Vijay Vasudevan and Benjamin Caine and Raphael Gontijo-Lopes and Sara Fridovich-Keil and Rebecca Roelofs},
  journal = {arXiv preprint arXiv:2205.04596}, year = {2022},
  eprint = {2205.04596}, archivePrefix = {arXiv}}""",
        ILSVRC,
    )

    def _val(self) -> ImagenetVal:
        return ImagenetVal("default", seed=self.seed, shard_size=self.shard_size)

    def features(self):
        from datasets import Features, List, Value

        label = classes.imagenet_class_label()
        extra = {column: List(label) for column in LABEL_COLUMNS.values()}
        extra["is_problematic"] = Value("bool")
        if self.config.name == "labels":
            return Features({"id": Value("string"), "file_name": Value("string"), "label": label, **extra})
        return Features({**self._val().features(), **extra})

    def protocol(self) -> dict:
        return {
            "multilabel_accuracy": {
                "correct": "correct_labels",
                "unclear": "unclear_labels",
                "exclude": "is_problematic",
                "class": "label",
                "default_variant": "lenient",
            }
        }

    def prepare(self, resolver: SourceResolver) -> Prepared:
        source, annotations = resolver.resolve_with(HUMAN_ACCURACY_JSON, read_human_accuracy)
        sources = {"human_accuracy_json": source}
        data = {"annotations": annotations}
        if self.config.name == "labels" or resolver.inputs:
            labels, label_sources, where = original_labels(resolver)
            sources.update(label_sources)
            data["labels"] = labels
            if self.config.name == "images":  # rows and images of the built imagenet_val
                folder, _ = resolver.input_dataset("imagenet_val", None, build_hint=VAL_BUILD_HINT)
                config = "default" if "default" in folder.configs else folder.configs[0]
                data["input"] = (folder.path, config)
        else:
            val = self._val().prepare(resolver)
            sources.update(val.sources)
            data["val"] = val
            labels, where = val.data["layout"].labels, str(val.data["layout"].archive.path)
        _check_in_val(annotations, labels, source.path, where)
        return Prepared(sources, data)

    def split_keys(self, prepared: Prepared) -> dict[str, list[str]]:
        annotations: Annotations = prepared.data["annotations"]
        return {"validation": sorted(annotations.labels), "imagenet_m": list(annotations.imagenet_m)}

    def _annotation_columns(self, annotations: Annotations, image_id: str) -> dict:
        sets = annotations.labels[image_id]
        row = {column: sets[key] for key, column in LABEL_COLUMNS.items()}
        row["is_problematic"] = image_id in annotations.problematic
        return row

    def generate(self, prepared: Prepared, shard: Shard) -> Iterator[dict]:
        annotations: Annotations = prepared.data["annotations"]
        if self.config.name == "labels":
            labels = prepared.data["labels"]
            for image_id in shard.keys:
                yield {
                    "id": image_id,
                    "file_name": f"{image_id}.JPEG",
                    "label": labels[image_id],
                    **self._annotation_columns(annotations, image_id),
                }
            return
        if "input" in prepared.data:
            yield from self._rows_of_built_val(prepared, shard, annotations)
            return
        for row in self._val().generate(prepared.data["val"], shard):
            row.update(self._annotation_columns(annotations, row["id"]))
            yield row

    def _rows_of_built_val(self, prepared: Prepared, shard: Shard, annotations: Annotations) -> Iterator[dict]:
        from imagenet_suite.dataset.folder import DatasetFolder
        from imagenet_suite.images import inspect_image

        path, config = prepared.data["input"]
        columns = list(self._val().features())
        table = DatasetFolder(path).take(list(shard.keys), config, "validation", columns).to_pylist()
        for row in table:
            image = row["image"]
            inspect_image(image["bytes"], f"{path}: {config}/validation row {row['id']}")
            row["image"] = {"bytes": image["bytes"], "path": image["path"]}
            row.update(self._annotation_columns(annotations, row["id"]))
            yield row

    def card_context(self, prepared: Prepared) -> dict:
        annotations: Annotations = prepared.data["annotations"]
        return {
            "num_annotated": f"{len(annotations.labels):,}",
            "num_problematic": f"{sum(1 for i in annotations.labels if i in annotations.problematic):,}",
            "num_imagenet_m": f"{len(annotations.imagenet_m):,}",
            "num_skipped": f"{annotations.skipped:,}",
        }
