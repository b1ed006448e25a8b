"""``imagenet_c``: ImageNet-C (Hendrycks & Dietterich, 2019), the released corrupted validation images.

Release: Zenodo record 2235448, five tars by corruption family, each holding
``<corruption>/<severity>/<wnid>/ILSVRC2012_val_NNNNNNNN.JPEG`` (224x224 JPEGs, 50,000 per
corruption and severity):

==============  ===============================================================
``noise.tar``   gaussian_noise, shot_noise, impulse_noise
``blur.tar``    defocus_blur, glass_blur, motion_blur, zoom_blur
``weather.tar`` snow, frost, fog, brightness
``digital.tar`` contrast, elastic_transform, pixelate, jpeg_compression
``extra.tar``   speckle_noise, gaussian_blur, spatter, saturate (the 4 held-out corruptions)
==============  ===============================================================

One config per corruption and severity, ``<corruption>_<severity>`` (``gaussian_noise_3``), 95 in
all, declared from these tables, so a user builds and loads only what they need. The released
bytes are stored as they are (TFDS's ``imagenet2012_corrupted`` regenerates the corruptions
instead, so its images differ from these). An extracted copy (``<corruption>/<severity>/<wnid>/``
in --manual-dir, the layout RobustBench reads) is accepted too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from imagenet_suite import classes
from imagenet_suite.core.builder import Builder, BuilderConfig, Prepared, Shard
from imagenet_suite.core.sources import Source, SourceResolver
from imagenet_suite.errors import ConfigError, InvalidSourceData

from ._citations import BEYOND_ACCURACY, IMAGENET_C, cite
from ._image_columns import image_features
from ._variants import (
    SPLIT,
    STRICT_COUNTS,
    Images,
    check_count,
    list_members,
    locate,
    read_in_order,
    scan_class_folders,
    wnid_class,
)

ZENODO = "https://zenodo.org/records/2235448/files/"
FAMILIES = {
    "noise": ("gaussian_noise", "shot_noise", "impulse_noise"),
    "blur": ("defocus_blur", "glass_blur", "motion_blur", "zoom_blur"),
    "weather": ("snow", "frost", "fog", "brightness"),
    "digital": ("contrast", "elastic_transform", "pixelate", "jpeg_compression"),
    "extra": ("speckle_noise", "gaussian_blur", "spatter", "saturate"),
}
BENCHMARK_FAMILIES = ("noise", "blur", "weather", "digital")
CORRUPTIONS = tuple(c for family in FAMILIES.values() for c in family)  # 15 benchmark + 4 extra
FAMILY_OF = {c: family for family, members in FAMILIES.items() for c in members}
SEVERITIES = (1, 2, 3, 4, 5)
IMAGES_PER_CONFIG = 50_000
VAL_FILE = re.compile(r"^(ILSVRC2012_val_\d{8})\.JPEG$")

TARS = {
    family: Source(
        f"{family}_tar",
        f"{family}.tar",
        url=f"{ZENODO}{family}.tar?download=1",
        instructions=f"Download {ZENODO}{family}.tar (Zenodo record 2235448) and put it in --manual-dir, "
        f"or put its extracted {'/, '.join(FAMILIES[family])}/ folders there.",
    )
    for family in FAMILIES
}


def config_name(corruption: str, severity: int) -> str:
    return f"{corruption}_{severity}"


def parse_config(name: str) -> tuple[str, int]:
    """``"gaussian_noise_3"`` -> ``("gaussian_noise", 3)``."""
    corruption, _, severity = name.rpartition("_")
    if corruption not in FAMILY_OF or not severity.isdigit() or int(severity) not in SEVERITIES:
        raise ConfigError(
            f"{name!r} is not <corruption>_<severity> with a corruption of {list(CORRUPTIONS)} and a "
            f"severity in {list(SEVERITIES)}"
        )
    return corruption, int(severity)


def _configs() -> tuple[BuilderConfig, ...]:
    configs = []
    for corruption in CORRUPTIONS:
        kind = "benchmark" if FAMILY_OF[corruption] in BENCHMARK_FAMILIES else "extra (held-out)"
        for severity in SEVERITIES:
            configs.append(
                BuilderConfig(
                    config_name(corruption, severity),
                    f"{corruption}, severity {severity} ({kind} corruption, {FAMILY_OF[corruption]}.tar)",
                    shard_size=5000,
                )
            )
    return tuple(configs)


class ImagenetC(Builder):
    NAME = "imagenet_c"
    VERSION = "1.0.0"
    RELEASE_NOTES = {
        "1.0.0": "Initial release: the released ImageNet-C JPEGs (Zenodo 2235448) as original bytes, "
        "one config per corruption and severity (15 benchmark + 4 extra corruptions x 5)."
    }
    CONFIGS = _configs()
    SOURCES = tuple(TARS.values())
    OPTIONS = {"strict_counts": STRICT_COUNTS}
    MANUAL_DOWNLOAD_INSTRUCTIONS = (
        "Downloaded automatically from Zenodo (only the family tar a config needs). Offline: "
        "put noise.tar / blur.tar / weather.tar / digital.tar / extra.tar, or their "
        "extracted <corruption>/<severity>/<wnid>/ folders, in --manual-dir."
    )
    HOMEPAGE = "https://github.com/hendrycks/robustness"
    LICENSE = "other"
    CITATION = cite(IMAGENET_C, BEYOND_ACCURACY)

    @property
    def corruption(self) -> str:
        return parse_config(self.config.name)[0]

    @property
    def severity(self) -> int:
        return parse_config(self.config.name)[1]

    def features(self):
        from datasets import Value

        return image_features(
            {
                "label": classes.imagenet_class_label(),
                "val_id": Value("string"),
                "corruption": Value("string"),
                "severity": Value("int8"),
            }
        )

    def prepare(self, resolver: SourceResolver) -> Prepared:
        corruption, severity = self.corruption, self.severity
        family = FAMILY_OF[corruption]
        relative = f"{corruption}/{severity}"
        located = locate(resolver, TARS[family], relative, extracted=relative)
        names, index = list_members(located)
        where = str(located.source.path)
        prefix = located.member_prefix  # "<corruption>/<severity>/" in the tar, "" in an extracted folder
        if located.layout == "archive" and not any(n.startswith(prefix) for n in names):
            present = sorted({"/".join(n.split("/")[:2]) for n in names if n.count("/") >= 2})
            raise InvalidSourceData(
                f"{where}: no {prefix}<wnid>/*.JPEG members: {corruption} severity {severity} is "
                f"missing from this {family}.tar (it holds {present[:20]})"
            )
        scanned = scan_class_folders(names, prefix, where, wnid_class(), skip_outside=True)
        members, labels = {}, {}
        for key, (member, label) in scanned.items():
            image_id = self._row_id(key, member, where)
            members[image_id], labels[image_id] = member, label
        check_count(len(members), IMAGES_PER_CONFIG, self.options["strict_counts"], f"{where}: {relative}", "images")
        tar_index = index.subset(members.values()) if index is not None else None  # this config's members only
        images = Images(located.source.path, located.file_prefix, members, labels, tar_index)
        return Prepared({TARS[family].name: located.source}, {"images": images, "layout": located.layout})

    def _row_id(self, key: str, member: str, where: str) -> str:
        """Row id ``<corruption>/<severity>/<wnid>/<file>``; the file must keep its ImageNet-val name."""
        if not VAL_FILE.match(key.split("/", 1)[1]):
            raise InvalidSourceData(
                f"{where}: member {member!r} is not named ILSVRC2012_val_NNNNNNNN.JPEG "
                "(ImageNet-C keeps the validation file names)"
            )
        return f"{self.corruption}/{self.severity}/{key}"

    def split_keys(self, prepared: Prepared) -> dict[str, list[str]]:
        members = prepared.data["images"].members
        by_val_id: dict[str, str] = {}
        for image_id in members:
            val_id = val_id_of(image_id)
            if by_val_id.setdefault(val_id, image_id) != image_id:
                raise InvalidSourceData(
                    f"{prepared.data['images'].path}: {val_id} appears twice ({by_val_id[val_id]} and {image_id})"
                )
        return {SPLIT: [by_val_id[v] for v in sorted(by_val_id)]}  # ImageNet-val order

    def generate(self, prepared: Prepared, shard: Shard) -> Iterator[dict]:
        images: Images = prepared.data["images"]
        for image_id, data in read_in_order(images, shard.keys):
            yield {
                **images.row(image_id, data),
                "label": images.labels[image_id],
                "val_id": val_id_of(image_id),
                "corruption": self.corruption,
                "severity": self.severity,
            }

    def protocol(self) -> dict:
        return {
            "corruption": self.corruption,
            "severity": self.severity,
            "family": FAMILY_OF[self.corruption],
            "benchmark_corruption": FAMILY_OF[self.corruption] in BENCHMARK_FAMILIES,
            "num_classes": classes.NUM_CLASSES,
        }

    def card_context(self, prepared: Prepared) -> dict:
        return {"layout": prepared.data["layout"]}


def val_id_of(image_id: str) -> str:
    """``"gaussian_noise/3/n01440764/ILSVRC2012_val_00000293.JPEG"`` -> ``"ILSVRC2012_val_00000293"``."""
    return image_id.rsplit("/", 1)[-1].rsplit(".", 1)[0]
