"""Synthetic stand-ins of every release the suite reads, at the papers' image counts times a scale, for
``bench_suite_scale.py``.

Each release is laid out as it is downloaded, by the fixture writers of ``tests/fixtures/`` (the exact names,
folders, archives and list formats the builders' tests use), here given as many images as the release has
times ``scale``. The images are small (8 to 64 pixels a side): the benchmark measures the pipeline, not the
decoder. JPEGs come from a pool of 64 encoded pictures made distinct by a JPEG comment segment holding the
image's number (so no two images share bytes and the prediction store predicts each one; decoding is the
same as the pool picture's); PNGs (ObjectNet) and the NINCO / popular-OOD images are encoded one by one, as
the fixtures do.

:data:`REAL_COUNTS` lists the counts at scale 1. NINCO (its three released file lists, 15,394 images) and
ReaL's labels (real.json's 50,000 label sets, ``tests/data``) are always at their real count: their builders
read the released lists whole.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image

from imagenet_suite import classes
from tests.fixtures import imagenet_layouts as val_fx
from tests.fixtures import imagenet_train as train_fx
from tests.fixtures import ninco_archive as ninco_fx
from tests.fixtures import popular_ood as popular_fx
from tests.fixtures import variants as fx
from tests.fixtures.human_accuracy import write_human_accuracy
from tests.helpers import REPO_ROOT

TEST_DATA = REPO_ROOT / "tests" / "data"

REAL_COUNTS = {
    "imagenet_val": 50_000,
    "imagenet_multilabel": 20_000,  # val images with expert labels (Shankar et al. 2020)
    "imagenet_m": 68,
    "imagenet_v2": 10_000,  # per set, three sets
    "imagenet_a": 7_500,
    "imagenet_r": 30_000,
    "imagenet_sketch": 50_889,
    "imagenet_o": 2_000,
    "objectnet": 18_574,  # the 113 ImageNet-overlap classes
    "imagenet_c": 50_000,  # per corruption and severity
    "imagenet_train": 1_281_167,
    "train_subset": 100,  # imagenet_train --option subset=N: images per class
    "inaturalist": 10_000,
    "sun": 10_000,
    "places": 10_000,
    "textures": 5_160,  # OpenOOD v1.5's Textures43
    "openimage_o": 17_632,  # 15,869 in OpenOOD's test list, the rest in its val list
    "ssb_hard": 49_000,
}
TINY_MODEL = """
from torch import nn


def make():
    model = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(8, 1000))
    model.pretrained_cfg = {"input_size": (3, 32, 32), "crop_pct": 0.875, "interpolation": "bilinear",
                            "mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225)}
    return model
"""
"""A nearly free user model (``FILE.py:make``): one 3x3 convolution, pooling and a linear head to 1000
classes, 32x32 inputs (timm's eval transform reads ``pretrained_cfg``), 8 features."""
C_CORRUPTION = ("noise", "gaussian_noise")  # family tar, corruption: the one written at all five severities
C_SEVERITIES = (1, 2, 3, 4, 5)
POOL = 64


def scaled(name: str, scale: float, least: int = 1) -> int:
    return max(least, round(REAL_COUNTS[name] * scale))


@dataclass
class Release:
    """One builder's sources: its manual dir, the configs to build and builder options; ``images``: how many
    images the release holds (for the report)."""

    builder: str
    manual: Path
    configs: list[str]
    options: dict[str, str] = field(default_factory=dict)
    images: int = 0
    pins: bool = True  # pass manual/checksums.tsv as --pins


# -- image bytes --------------------------------------------------------------------------------------------


class Jpegs:
    """Distinct JPEGs: a pool picture with a comment segment naming the image (``jpeg(i)``)."""

    def __init__(self, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.pool, self.sizes = [], []
        for k in range(POOL):
            width, height = int(rng.integers(24, 64)), int(rng.integers(24, 64))
            pixels = rng.integers(0, 256, size=(height, width, 3), dtype=np.uint8)
            image = Image.fromarray(pixels).convert("L" if k == 1 else "RGB")
            buffer = io.BytesIO()
            image.save(buffer, format="JPEG", quality=90)
            self.pool.append(buffer.getvalue())
            self.sizes.append((width, height))

    def __call__(self, number: int, tag: str = "") -> bytes:
        data = self.pool[number % POOL]
        comment = f"{tag}#{number}".encode()
        return data[:2] + b"\xff\xfe" + (len(comment) + 2).to_bytes(2, "big") + comment + data[2:]

    def size(self, number: int) -> tuple[int, int]:
        return self.sizes[number % POOL]


# -- ImageNet val and what reads its tar (ReaL, the multi-labels) ----------------------------------------------


def write_val(root: Path, scale: float, jpegs: Jpegs) -> list[Release]:
    """ILSVRC2012 val in the tar layout (with boxes), real.json and a human_accuracy_v3.0.0.json over the first
    20,000 x scale images, in one manual dir: imagenet_val, imagenet_real and imagenet_multilabel."""
    count = scaled("imagenet_val", scale)
    rng = np.random.default_rng(1)
    images = []
    for i in range(count):
        width, height = jpegs.size(i)
        x0, y0 = int(rng.integers(0, width // 2)), int(rng.integers(0, height // 2))
        box = (x0, y0, int(rng.integers(x0 + 1, width)), int(rng.integers(y0 + 1, height)))
        images.append(
            val_fx.ValImage(f"ILSVRC2012_val_{i + 1:08d}", jpegs(i, "val"), int(rng.integers(0, 1000)), [box])
        )
    manual = root / "val"
    val_fx.write_tar_layout(manual, images)
    shutil.copy(TEST_DATA / "reassessed-imagenet" / "real.json", manual / "real.json")
    write_human_accuracy(manual, human_accuracy(images[: scaled("imagenet_multilabel", scale)], scale))
    val_fx.write_checksums(manual)
    return [
        Release("imagenet_val", manual, ["default", "boxes"], images=count),
        Release("imagenet_real", manual, ["labels", "images"], images=count),
        Release("imagenet_multilabel", manual, ["labels", "images"], images=count),
    ]


def human_accuracy(images: list[val_fx.ValImage], scale: float) -> dict:
    """Expert labels in the release's layout: the image's class correct, every third with a wrong class too,
    every tenth also unclear; every 50th problematic; ImageNet-M: 68 x scale of them."""
    wnids = classes.imagenet_wnids()
    annots, problematic = {}, {}
    for k, image in enumerate(images):
        entry = {"correct": [image.wnid]}
        if k % 3 == 0:
            entry["wrong"] = [wnids[(image.label + 1) % 1000]]
        if k % 10 == 0:
            entry["unclear"] = [wnids[(image.label + 2) % 1000]]
        annots[image.file_name] = entry
        if k % 50 == 49:
            problematic[image.file_name] = {"reason": "marked as problematic", "reviewer": "bench"}
    m = min(len(images), scaled("imagenet_m", scale, least=2))
    return {"initial_annots": annots, "problematic_images": problematic, "imagenet_m": list(annots)[:m]}


# -- the variants ------------------------------------------------------------------------------------------


def write_variants(root: Path, scale: float, jpegs: Jpegs) -> list[Release]:
    """ImageNetV2 (three sets), ImageNet-A/-R/-O, ImageNet-Sketch and ObjectNet."""
    releases = []
    v2 = root / "v2"
    per_set = scaled("imagenet_v2", scale)
    for s, config in enumerate(fx.V2_STEMS):
        images = []
        for i in range(per_set):
            data = jpegs(s * 10_000_000 + i, f"v2-{config}")
            images.append(fx.Img(str(i % 1000), f"{hashlib.sha1(data).hexdigest()}.jpeg", data))
        fx.write_v2(v2, config, images)
    releases.append(Release("imagenet_v2", v2, list(fx.V2_STEMS), {"strict_counts": "false"}, 3 * per_set))
    for name, root_name, subset in (
        ("imagenet_a", "imagenet-a", "imagenet_a"),
        ("imagenet_r", "imagenet-r", "imagenet_r"),
        ("imagenet_o", "imagenet-o", None),
    ):
        indices = classes.subset_indices(subset) if subset else tuple(range(0, 1000, 5))
        count = scaled(name, scale)
        images = [
            fx.Img(fx.wnid(indices[i % len(indices)]), _variant_file(name, i), jpegs(i, name)) for i in range(count)
        ]
        fx.write_hendrycks_tar(root / name, root_name, images)
        releases.append(Release(name, root / name, ["default"], {"strict_counts": "false"}, count))
    count = scaled("imagenet_sketch", scale)
    sketches = [fx.Img(fx.wnid(i % 1000), f"sketch_{i}.JPEG", jpegs(i, "sketch")) for i in range(count)]
    fx.write_sketch_zip(root / "sketch", sketches)
    releases.append(Release("imagenet_sketch", root / "sketch", ["default"], {"strict_counts": "false"}, count))
    releases.append(write_objectnet(root / "objectnet", scale))
    return releases


def _variant_file(name: str, i: int) -> str:
    if name == "imagenet_a":
        return f"0.{i:06d}_object _ object_0.{865662 - i % 1000}.jpg"
    if name == "imagenet_r":
        return f"{('art', 'cartoon', 'sketch', 'origami', 'videogame')[i % 5]}_{i}.jpg"
    return f"o_{i}.jpg"


def write_objectnet(manual: Path, scale: float) -> Release:
    """``objectnet-1.0/`` with its mapping files (the fixture's) and 18,574 x scale PNGs over the 113 overlap
    folders (with the release's 1 px border)."""
    from imagenet_suite.builders.objectnet import OVERLAP

    folders = sorted(OVERLAP)
    count = scaled("objectnet", scale)
    images = []
    for i in range(count):
        data = fx.encode(1_000_000 + i, fmt="PNG", size=(24 + i % 17, 24 + i % 13), border=True)
        images.append(fx.Img(folders[i % len(folders)], f"{hashlib.sha1(data).hexdigest()[:16]}.png", data))
    fx.write_objectnet(manual, images)
    return Release("objectnet", manual, ["imagenet_overlap"], {"strict_counts": "false"}, count, pins=False)


# -- ImageNet-C: one corruption at five severities -----------------------------------------------------------


def write_imagenet_c(manual: Path, scale: float, jpegs: Jpegs) -> Release:
    """``noise.tar`` with ``gaussian_noise/<1..5>/<wnid>/ILSVRC2012_val_<n>.JPEG``, 50,000 x scale per severity,
    streamed (the fixture's member layout, written member by member)."""
    family, corruption = C_CORRUPTION
    count = scaled("imagenet_c", scale)
    manual.mkdir(parents=True, exist_ok=True)
    with tarfile.open(manual / f"{family}.tar", "w", format=tarfile.GNU_FORMAT) as tar:
        for severity in C_SEVERITIES:
            for i in range(count):
                name = f"{corruption}/{severity}/{fx.wnid(i % 1000)}/ILSVRC2012_val_{i + 1:08d}.JPEG"
                fx.add_member(tar, name, jpegs(severity * 10_000_000 + i, "c"))
    val_fx.write_checksums(manual)
    configs = [f"{corruption}_{severity}" for severity in C_SEVERITIES]
    return Release("imagenet_c", manual, configs, {"strict_counts": "false"}, count * len(C_SEVERITIES))


# -- ImageNet train (for ood fit-stats) --------------------------------------------------------------------


def write_train(manual: Path, scale: float, jpegs: Jpegs) -> Release:
    """ILSVRC2012_img_train.tar (a tar of class tars, the fixture's ``release_class_tar``), 1,281,167 x scale
    images over the 1000 classes, streamed class by class; built with ``subset`` = 100 x scale per class."""
    count = scaled("imagenet_train", scale, least=1000)
    manual.mkdir(parents=True, exist_ok=True)
    wnids = classes.imagenet_wnids()
    with tarfile.open(manual / "ILSVRC2012_img_train.tar", "w", format=tarfile.GNU_FORMAT) as outer:
        for label, wnid in enumerate(wnids):
            members = [
                train_fx.TrainImage(f"{wnid}_{k}", jpegs(label * 10_000 + k, "train"), label)
                for k in range(count // 1000 + (label < count % 1000))
            ]
            val_fx._add(outer, *train_fx.release_class_tar(wnid, members))
    val_fx.write_checksums(manual)
    subset = scaled("train_subset", scale)
    return Release("imagenet_train", manual, ["default"], {"subset": str(subset)}, count)


# -- NINCO and the popular OOD sets ------------------------------------------------------------------------


def write_ninco(manual: Path) -> Release:
    """The fixture's NINCO_all.tar.gz (every released file, tiny images) and NINCO clone: all four configs."""
    contents = ninco_fx.fixture_contents(TEST_DATA / "ninco" / "data")
    ninco_fx.write_ninco_manual_dir(manual, TEST_DATA / "ninco", contents)
    configs = ["ninco", "unit_tests", "popular_subsamples", "review_logs"]
    return Release("ninco", manual, configs, images=len(contents))


def popular_ids(config: str, count: int) -> list[str]:
    """``count`` ids of a popular OOD set in its naming: the images NINCO's review log names first (the
    fixture's :func:`~tests.fixtures.popular_ood.logged_ids`), then made-up ones of the set's pattern."""
    from imagenet_suite.builders.popular_ood import SETS

    logged = popular_fx.logged_ids(config)[:count] if SETS[config].log else []
    if config == "textures":
        logged = popular_fx.textures43(logged)
    found = set(logged)
    return sorted(found | set(_made_up(config, count - len(found), found)))


def _made_up(config: str, count: int, taken: set[str]) -> Iterator[str]:
    categories = sorted({i.split("/")[0] for i in popular_fx.textures43(popular_fx.logged_ids("textures"))})
    k = 0
    while count > 0:
        name = {
            "inaturalist": f"images/{hashlib.md5(str(k).encode()).hexdigest()}.jpg",
            "sun": "images/sun_" + "".join(chr(97 + (k // 26**p) % 26) for p in range(16)) + ".jpg",
            "places": f"images/b_bamboo_forest_{k:08d}.jpg",
            "textures": f"{categories[k % len(categories)]}/{categories[k % len(categories)]}_{5000 + k // len(categories):04d}.jpg",
            "openimage_o": f"{hashlib.md5(str(k).encode()).hexdigest()[:16]}.jpg",
            "imagenet_o": f"{fx.wnid(k * 5 % 1000)}/made_up_{k}.JPEG",
            "ssb_hard": f"n{19_000_000 + k % 980:08d}/n{19_000_000 + k % 980:08d}_{k}.JPEG",
        }[config]
        k += 1
        if name not in taken:
            count -= 1
            yield name


def write_popular(manual: Path, scale: float, val_count: int) -> Release:
    """OpenOOD v1.5's layout (images_largescale/, images_classic/, benchmark_imglist/) for iNaturalist, Textures43,
    OpenImage-O, ImageNet-O and SSB-hard, MOS's SUN and Places tars, OpenOOD's ImageNet split of the val ids
    (every tenth in val) and a NINCO clone: every config of popular_ood."""
    manual.mkdir(parents=True, exist_ok=True)
    total = 0
    for config in ("inaturalist", "textures", "openimage_o", "imagenet_o", "ssb_hard"):
        ids = popular_ids(config, scaled(config if config != "imagenet_o" else "imagenet_o", scale))
        total += len(ids)
        root, folder, lists = popular_fx.OPENOOD_FOLDERS[config]
        for image_id in ids:
            path = manual / root / folder / popular_fx.openood_path(config, image_id)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(popular_fx.image_bytes(image_id))
        chunks = {name: ids for name in lists}
        if config == "openimage_o":
            cut = round(len(ids) * 15_869 / 17_632)
            chunks = {"test_openimage_o.txt": ids[:cut], "val_openimage_o.txt": ids[cut:]}
        for name, chunk in chunks.items():
            lines = "".join(f"{folder}/{popular_fx.openood_path(config, i)} -1\n" for i in chunk)
            popular_fx.write_list(manual, name, lines)
    for config in ("sun", "places"):
        ids = popular_ids(config, scaled(config, scale))
        total += len(ids)
        popular_fx.write_mos(manual, config, ids)
    lines = {"test_imagenet.txt": "", "val_imagenet.txt": ""}
    for k in range(val_count):
        lines["val_imagenet.txt" if k % 10 == 9 else "test_imagenet.txt"] += (
            f"imagenet_1k/val/ILSVRC2012_val_{k + 1:08d}.JPEG 0\n"
        )
    for name, text in lines.items():
        popular_fx.write_list(manual, name, text)
    popular_fx.copy_ninco_repository(popular_fx.NINCO_DATA, manual / "NINCO")
    configs = ["inaturalist", "sun", "places", "textures", "openimage_o", "imagenet_o", "ssb_hard", "openood_id_split"]
    return Release("popular_ood", manual, configs, {"strict_counts": "false"}, total, pins=False)


# -- all of them ---------------------------------------------------------------------------------------------


def write_releases(root: Path, scale: float) -> list[Release]:
    """Every release at ``scale`` under ``root``, in build order (imagenet_train last)."""
    jpegs = Jpegs()
    releases = write_val(root, scale, jpegs)
    releases += write_variants(root, scale, jpegs)
    releases.append(write_imagenet_c(root / "imagenet_c", scale, jpegs))
    releases.append(write_ninco(root / "ninco"))
    releases.append(write_popular(root / "popular_ood", scale, releases[0].images))
    releases.append(write_train(root / "train", scale, jpegs))
    return releases


__all__ = ["REAL_COUNTS", "TINY_MODEL", "Release", "scaled", "write_releases"]
