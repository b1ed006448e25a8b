"""``imagenet_real``: the ReaL ("Are we done with ImageNet?") multi-labels of the 50,000 val images.

Configs:
* ``labels`` — no images: ``id``, ``file_name``, ``real_labels`` (list of class indices, sorted-wnid
  order). The 3,163 images the ReaL raters left without a label keep an empty list, so rows align
  with the val images; evaluations skip them (the ReaL protocol).
* ``images`` — the ``imagenet_val`` rows (any of its manual layouts) joined with ``real_labels``.

``real.json`` comes from the google-research repository (pinned by size and sha256); the
identical copy timm ships is used when there is no network.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from imagenet_suite import classes
from imagenet_suite.core.builder import Builder, BuilderConfig, Prepared, Shard
from imagenet_suite.core.sources import Source, SourceResolver
from imagenet_suite.errors import InvalidSourceData
from imagenet_suite.files import read_text

from ._citations import ANZAKU_2024, ILSVRC, cite
from .imagenet_val import NUM_VAL_IMAGES, ImagenetVal

REAL_COMMIT = "25ae4854f875bbae6782fd9ea4a18654f6c89c6c"  # google-research/reassessed-imagenet, "Initial publication."
REAL_JSON = Source(
    "real_json",
    "real.json",
    url=f"https://raw.githubusercontent.com/google-research/reassessed-imagenet/{REAL_COMMIT}/real.json",
    size=388_478,
    sha256="d83e9bff374c631aae8439eb064c7019acc56e1b3bc3f56b8380c2a710b0220b",
    instructions="real.json from https://github.com/google-research/reassessed-imagenet",
    local_copies=(lambda: classes.timm_info_dir() / "imagenet_real_labels.json",),
)


def val_id(position: int) -> str:
    """Id of the val image at 0-based ``position`` (``ILSVRC2012_val_00000001`` for 0)."""
    return f"ILSVRC2012_val_{position + 1:08d}"


def read_real_json(path: Path) -> list[list[int]]:
    """The 50,000 label lists of ``real.json``, validated (class indices in 0..999)."""
    try:
        labels = json.loads(read_text(path, "ReaL's JSON list of label lists"))
    except json.JSONDecodeError as err:
        raise InvalidSourceData(f"{path}: not valid JSON ({err})") from err
    if not isinstance(labels, list) or len(labels) != NUM_VAL_IMAGES:
        raise InvalidSourceData(
            f"{path}: expected a JSON list of {NUM_VAL_IMAGES} label lists, "
            f"got {type(labels).__name__} of length {len(labels) if isinstance(labels, list) else '-'}"
        )
    for position, entry in enumerate(labels):
        if not isinstance(entry, list) or not all(isinstance(x, int) and 0 <= x < classes.NUM_CLASSES for x in entry):
            raise InvalidSourceData(
                f"{path}: entry {position} ({val_id(position)}) is {entry!r}; expected a list of class indices 0..999"
            )
    return labels


class ImagenetReal(Builder):
    NAME = "imagenet_real"
    VERSION = "1.0.0"
    RELEASE_NOTES = {
        "1.0.0": "Initial release: ReaL labels (labels config) and ReaL labels joined onto the "
        "imagenet_val images (images config)."
    }
    CONFIGS = (
        BuilderConfig(
            "labels",
            "ReaL label sets of the 50,000 val images, no images",
            shard_size=NUM_VAL_IMAGES,
            row_group_rows=10_000,
        ),
        BuilderConfig("images", "imagenet_val images and labels joined with the ReaL label sets", shard_size=2500),
    )
    SOURCES = (REAL_JSON, *ImagenetVal.SOURCES)
    MANUAL_DOWNLOAD_INSTRUCTIONS = (
        "labels: none (real.json is downloaded, or timm's copy is used). "
        "images: " + ImagenetVal.MANUAL_DOWNLOAD_INSTRUCTIONS
    )
    HOMEPAGE = "https://github.com/google-research/reassessed-imagenet"
    LICENSE = "apache-2.0"
    CITATION = cite(
        """@article{beyer2020imagenet,
  title = {Are we done with ImageNet?},
  author = {Lucas Beyer and Olivier J. H{\\'e}naff and Alexander Kolesnikov and Xiaohua Zhai and A{\\"a}ron van den Oord},
  journal = {arXiv preprint arXiv:2006.07159}, year = {2020},
  eprint = {2006.07159}, archivePrefix = {arXiv}}""",
        ILSVRC,
        ANZAKU_2024,
    )

    def _val(self) -> ImagenetVal:
        return ImagenetVal("default", seed=self.seed, shard_size=self.shard_size)

    def features(self):
        from datasets import Features, List, Value

        real = {"real_labels": List(classes.imagenet_class_label())}
        if self.config.name == "labels":
            return Features({"id": Value("string"), "file_name": Value("string"), **real})
        return Features({**self._val().features(), **real})

    def protocol(self) -> dict:
        return {
            "multi_label": "real_labels",
            "skip_empty_label_sets": True,
            "label_count_subgroups": [1, 2, 3, 4, 5],
        }  # ASMA subgroups of Anzaku et al. 2024 for ImageNet V1

    def prepare(self, resolver: SourceResolver) -> Prepared:
        real = resolver.resolve(REAL_JSON)
        labels = read_real_json(real.path)
        if self.config.name == "labels":
            return Prepared({"real_json": real}, {"real": labels})
        val = self._val().prepare(resolver)
        ids = set(self._val().split_keys(val)["validation"])
        outside = sorted(i for i in ids if int(i[-8:]) > NUM_VAL_IMAGES)
        if outside:
            raise InvalidSourceData(f"{outside[0]}: not one of the {NUM_VAL_IMAGES} images real.json labels")
        return Prepared({"real_json": real, **val.sources}, {"real": labels, "val": val})

    def split_keys(self, prepared: Prepared) -> dict[str, list[str]]:
        if self.config.name == "labels":
            return {"validation": [val_id(i) for i in range(NUM_VAL_IMAGES)]}
        return self._val().split_keys(prepared.data["val"])

    def generate(self, prepared: Prepared, shard: Shard) -> Iterator[dict]:
        real = prepared.data["real"]
        if self.config.name == "labels":
            for image_id in shard.keys:
                yield {"id": image_id, "file_name": f"{image_id}.JPEG", "real_labels": real[int(image_id[-8:]) - 1]}
            return
        for row in self._val().generate(prepared.data["val"], shard):
            row["real_labels"] = real[int(row["id"][-8:]) - 1]
            yield row

    def card_context(self, prepared: Prepared) -> dict:
        real = prepared.data["real"]
        return {"num_nonempty": f"{sum(1 for r in real if r):,}", "num_empty": f"{sum(1 for r in real if not r):,}"}
