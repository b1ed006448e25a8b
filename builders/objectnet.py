"""``objectnet``: ObjectNet 1.0 (Barbu et al., 2019), the 113 classes that overlap ImageNet-1k.

Release: ``objectnet-1.0.zip`` from objectnet.dev (gated: free registration and license; the zip is
password-protected, so it is read extracted). Layout of the extracted ``objectnet-1.0/`` folder::

    images/<class folder>/<hash>.png          313 class folders, 50,000 images
    mappings/folder_to_objectnet_label.json   {"alarm_clock": "Alarm clock", ...}         (313)
    mappings/objectnet_to_imagenet_1k.json    {"Alarm clock": "analog clock; digital clock", ...} (113)
    mappings/imagenet_to_label_2012_v2        1000 lines: ImageNet class names, in ILSVRC2012_ID order
    mappings/pytorch_to_imagenet_2012_id.json {"<sorted-wnid index>": <line of that class above>, ...}

The builder derives, from these four files, the ImageNet-1k classes of each ObjectNet class
(113 classes -> 125 ImageNet classes, 9 mapped to several) and refuses to build unless they equal
:data:`OVERLAP`, the mapping the LCA-on-the-Line code (Shi et al. 2024, ``datasets/objectnet.py``)
evaluates with. Rows are the 18,574 images of those 113 classes, original PNG bytes, **uncropped**.

Columns: ``objectnet_label`` (ClassLabel over the 113 sorted class folders: the true label) and
``imagenet_labels`` (the mapped 1000-way classes). There is no single 1000-way ``label``: a model's
ObjectNet prediction is the ObjectNet class whose mapped logits hold the maximum (``protocol()``:
``class_mapping`` + ``mapping_rule``), and the protocol's 2-pixel border crop is applied to the
images at inference time (``imagenet_suite.scoring.metrics.protocols.border_crop``), not to the stored bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from imagenet_suite import classes
from imagenet_suite.core.archives import open_archive
from imagenet_suite.core.builder import Builder, BuilderConfig, Prepared, Shard
from imagenet_suite.core.sources import Source, SourceResolver
from imagenet_suite.errors import InvalidSourceData, ManualFileMissing, param
from imagenet_suite.files import read_text

from ._citations import LCA_ON_THE_LINE, cite
from ._image_columns import image_features
from ._variants import SPLIT, STRICT_COUNTS, Images, check_count, read_in_order, scan_class_folders

ROOT = "objectnet-1.0"
FOLDER_TO_LABEL = "folder_to_objectnet_label.json"
OBJECTNET_TO_IMAGENET = "objectnet_to_imagenet_1k.json"
IMAGENET_NAMES = "imagenet_to_label_2012_v2"
PYTORCH_TO_LINE = "pytorch_to_imagenet_2012_id.json"
MAPPING_FILES = (FOLDER_TO_LABEL, OBJECTNET_TO_IMAGENET, IMAGENET_NAMES, PYTORCH_TO_LINE)
EXPECTED_IMAGES = 18_574
BORDER_CROP_PX = 2
MAPPING_RULE = "max_over_mapped_logits"

# ObjectNet class folder (sorted) -> its ImageNet-1k indices (sorted-wnid order), in the release's order.
OVERLAP: dict[str, tuple[int, ...]] = {
    "alarm_clock": (409, 530),
    "backpack": (414,),
    "banana": (954,),
    "band_aid": (419,),
    "basket": (790,),
    "beer_bottle": (440,),
    "bench": (703,),
    "bicycle": (671, 444),
    "binder_closed": (446,),
    "bottle_cap": (455,),
    "bread_loaf": (930,),
    "broom": (462,),
    "bucket": (463,),
    "butchers_knife": (499,),
    "can_opener": (473,),
    "candle": (470,),
    "cellphone": (487,),
    "chair": (423, 559, 765),
    "clothes_hamper": (588,),
    "coffee_french_press": (550,),
    "combination_lock": (507,),
    "computer_mouse": (673,),
    "desk_lamp": (846,),
    "doormat": (539,),
    "dress": (578,),
    "dress_shoe_men": (630,),
    "drill": (740,),
    "drinking_cup": (968,),
    "drying_rack_for_dishes": (729,),
    "envelope": (549,),
    "fan": (545,),
    "frying_pan": (567,),
    "full_sized_towel": (434,),
    "hair_dryer": (589,),
    "hammer": (587,),
    "hand_towel_or_rag": (533,),
    "helmet": (560, 518),
    "iron_for_clothes": (606,),
    "jeans": (608,),
    "keyboard": (508,),
    "ladle": (618,),
    "lampshade": (619,),
    "laptop_open": (620,),
    "lemon": (951,),
    "letter_opener": (623,),
    "lighter": (626,),
    "lipstick": (629,),
    "match": (644,),
    "measuring_cup": (647,),
    "microwave": (651,),
    "mixing_salad_bowl": (659,),
    "monitor": (664,),
    "mug": (504,),
    "nail_fastener": (677,),
    "necklace": (679,),
    "orange": (950,),
    "padlock": (695,),
    "paintbrush": (696,),
    "paper_towel": (700,),
    "pen": (418, 749, 563),
    "pill_bottle": (720,),
    "pillow": (721,),
    "pitcher": (725,),
    "plastic_bag": (728,),
    "plate": (923,),
    "plunger": (731,),
    "pop_can": (737,),
    "portable_heater": (811,),
    "printer": (742,),
    "remote_control": (761,),
    "ruler": (769,),
    "running_shoe": (770,),
    "safety_pin": (772,),
    "salt_shaker": (773,),
    "sandal": (774,),
    "screw": (783,),
    "shovel": (792,),
    "skirt": (601, 655, 689),
    "sleeping_bag": (797,),
    "soap_dispenser": (804,),
    "sock": (806,),
    "soup_bowl": (809,),
    "spatula": (813,),
    "speaker": (632,),
    "still_camera": (732, 759),
    "strainer": (828,),
    "stuffed_animal": (850,),
    "suit_jacket": (834,),
    "sunglasses": (837,),
    "sweater": (841,),
    "swimming_trunks": (842,),
    "t-shirt": (610,),
    "teapot": (849,),
    "tennis_racket": (752,),
    "tie": (457, 906),
    "toaster": (859,),
    "toilet_paper_roll": (999,),
    "trash_bin": (412,),
    "tray": (868,),
    "tv": (851,),
    "umbrella": (879,),
    "vacuum_cleaner": (882,),
    "vase": (883,),
    "wallet": (893,),
    "watch": (531,),
    "water_bottle": (898,),
    "weight_exercise": (543,),
    "weight_scale": (778,),
    "wheel": (479, 694),
    "whistle": (902,),
    "wine_bottle": (907,),
    "winter_glove": (658,),
    "wok": (909,),
}
OBJECTNET_CLASSES = tuple(sorted(OVERLAP))  # objectnet_label names; index = position

OBJECTNET_ZIP = Source(
    "objectnet",
    "objectnet-1.0.zip",
    instructions="Register at https://objectnet.dev/download.html, accept the ObjectNet license, download "
    "objectnet-1.0.zip, unzip it with the password given on that page (unzip -P <password> "
    "objectnet-1.0.zip) and put the extracted objectnet-1.0/ folder (images/ and mappings/) in --manual-dir.",
)


class Objectnet(Builder):
    NAME = "objectnet"
    VERSION = "1.0.0"
    RELEASE_NOTES = {
        "1.0.0": "Initial release: the 18,574 ObjectNet 1.0 images of the 113 ImageNet-overlap classes as "
        "original (uncropped) PNG bytes, the 113->125 class mapping and the 2 px border crop "
        "published as protocol data."
    }
    CONFIGS = (
        BuilderConfig(
            "imagenet_overlap",
            "18,574 images of the 113 classes mapped to 125 ImageNet-1k classes",
            shard_size=100,
            row_group_rows=10,
        ),
    )
    SOURCES = (OBJECTNET_ZIP,)
    OPTIONS = {"strict_counts": STRICT_COUNTS}
    MANUAL_DOWNLOAD_INSTRUCTIONS = OBJECTNET_ZIP.instructions
    HOMEPAGE = "https://objectnet.dev"
    LICENSE = "other"
    CITATION = cite(
        """@inproceedings{barbu2019objectnet,
  title = {ObjectNet: A large-scale bias-controlled dataset for pushing the limits of object recognition models},
  author = {Andrei Barbu and David Mayo and Julian Alverio and William Luo and Christopher Wang and Dan Gutfreund and
            Josh Tenenbaum and Boris Katz},
  booktitle = {Advances in Neural Information Processing Systems (NeurIPS)}, year = {2019}}""",
        LCA_ON_THE_LINE,
    )

    def features(self):
        from datasets import ClassLabel, List

        return image_features(
            {
                "objectnet_label": ClassLabel(names=list(OBJECTNET_CLASSES)),
                "imagenet_labels": List(classes.imagenet_class_label()),
            }
        )

    def prepare(self, resolver: SourceResolver) -> Prepared:
        root = find_release(resolver)
        check_mapping(read_mapping(root / "mappings"), root / "mappings")
        images_dir = root / "images"
        with open_archive(images_dir) as folder:
            names = folder.names()
        known = set(read_json(root / "mappings" / FOLDER_TO_LABEL))
        scanned = scan_class_folders(
            names, "", str(images_dir), _class_index(known), class_name=OBJECTNET_CLASSES.__getitem__
        )
        self._check_complete(scanned, images_dir)
        members = {k: v[0] for k, v in scanned.items()}
        images = Images(images_dir, f"{ROOT}/images/", members, {k: v[1] for k, v in scanned.items()})
        sources = {
            "images": resolver.resolve_folder("images", images_dir, files=members.values()),
            "mappings": resolver.resolve_folder("mappings", root / "mappings", files=MAPPING_FILES),
        }
        return Prepared(sources, {"images": images})

    def _check_complete(self, scanned: dict[str, tuple[str, int]], images_dir: Path) -> None:
        if not self.options["strict_counts"]:
            return
        present = {label for _, label in scanned.values()}
        missing = [name for i, name in enumerate(OBJECTNET_CLASSES) if i not in present]
        if missing:
            raise InvalidSourceData(
                f"{images_dir}: found {len(scanned):,} images, the release has {EXPECTED_IMAGES:,}: "
                f"class folder(s) {missing[:5]} of the 113 ImageNet-overlap classes are missing "
                f"({len(missing)} in all); pass {param('builder_options')} strict_counts=false to build it anyway"
            )
        check_count(len(scanned), EXPECTED_IMAGES, True, str(images_dir), "images of the 113 overlap classes")

    def split_keys(self, prepared: Prepared) -> dict[str, list[str]]:
        return {SPLIT: sorted(prepared.data["images"].members)}

    def generate(self, prepared: Prepared, shard: Shard) -> Iterator[dict]:
        images: Images = prepared.data["images"]
        for image_id, data in read_in_order(images, shard.keys):
            label = images.labels[image_id]
            yield {
                **images.row(image_id, data),
                "objectnet_label": label,
                "imagenet_labels": list(OVERLAP[OBJECTNET_CLASSES[label]]),
            }

    def protocol(self) -> dict:
        return {
            "label_column": "objectnet_label",
            "mapping_rule": MAPPING_RULE,
            "class_mapping": {name: list(OVERLAP[name]) for name in OBJECTNET_CLASSES},
            "num_classes": classes.NUM_CLASSES,
            "border_crop_px": BORDER_CROP_PX,
            "border_crop_note": "crop box (2, 2, W-2, H-2) of the decoded image at inference time, before the "
            "model's preprocessing (LCA-on-the-line, wise-ft, model-soups); some loaders crop "
            "3 px; the stored bytes are uncropped",
        }


def _class_index(known: set[str]):
    """ObjectNet folder -> index among the 113; None for the other 200 known folders; error otherwise."""
    position = {name: i for i, name in enumerate(OBJECTNET_CLASSES)}

    def class_index(folder: str, where: str) -> int | None:
        if folder in position:
            return position[folder]
        if folder in known:
            return None
        raise InvalidSourceData(
            f"{where}: class folder {folder!r} is not in mappings/{FOLDER_TO_LABEL} (renamed or foreign folder?)"
        )

    return class_index


def find_release(resolver: SourceResolver) -> Path:
    """The extracted ``objectnet-1.0/`` folder in --manual-dir; ManualFileMissing explains how to get it."""
    root = resolver.find_manual(ROOT)
    if root is None or not root.is_dir():
        zipped = resolver.find_manual(OBJECTNET_ZIP.filename)
        hint = f"{zipped} is there but must be extracted first (it is password-protected). " if zipped else ""
        where = resolver.manual_dir or f"(no {param('manual_dir')} given)"
        raise ManualFileMissing(f"ObjectNet: no {ROOT}/ folder in {where}. {hint}{OBJECTNET_ZIP.instructions}")
    for needed in ["images", *(f"mappings/{f}" for f in MAPPING_FILES)]:
        if resolver.find_manual(f"{ROOT}/{needed}") is None:  # refuses a symlink leading out of the manual folder
            raise ManualFileMissing(
                f"ObjectNet: {root / needed} is missing (an incomplete extraction of "
                f"{OBJECTNET_ZIP.filename}?); expected images/ and mappings/{{{', '.join(MAPPING_FILES)}}}"
            )
    return root


def read_json(path: Path):
    try:
        return json.loads(read_text(path, "an ObjectNet mapping file (JSON)"))
    except (OSError, ValueError) as err:
        raise InvalidSourceData(f"{path}: not readable JSON ({err})") from err


def read_mapping(mappings: Path) -> dict[str, tuple[int, ...]]:
    """ObjectNet class folder -> ImageNet-1k indices, derived from the release's four mapping files.

    Chain (as the ObjectNet and wise-ft code read it): ObjectNet label -> its folder
    (``folder_to_objectnet_label.json``); label -> ImageNet class names joined by ``"; "``
    (``objectnet_to_imagenet_1k.json``); name -> line of ``imagenet_to_label_2012_v2``; line ->
    sorted-wnid index (inverse of ``pytorch_to_imagenet_2012_id.json``).
    """
    folder_of = _invert(read_json(mappings / FOLDER_TO_LABEL), mappings / FOLDER_TO_LABEL)
    index_of_line = _index_of_line(read_json(mappings / PYTORCH_TO_LINE), mappings / PYTORCH_TO_LINE)
    lines_of: dict[str, list[int]] = {}
    names = read_text(mappings / IMAGENET_NAMES, "ImageNet class names, one line per class")
    for line, name in enumerate(names.splitlines()):
        lines_of.setdefault(name.strip(), []).append(line)
    mapping = {}
    for label, joined in read_json(mappings / OBJECTNET_TO_IMAGENET).items():
        if label not in folder_of:
            raise InvalidSourceData(
                f"{mappings / OBJECTNET_TO_IMAGENET}: ObjectNet class {label!r} has no folder in {FOLDER_TO_LABEL}"
            )
        indices = []
        for name in joined.split("; "):
            lines = lines_of.get(name, [])
            if len(lines) != 1:
                raise InvalidSourceData(
                    f"{mappings / OBJECTNET_TO_IMAGENET}: ImageNet class {name!r} (of ObjectNet "
                    f"{label!r}) is on {len(lines)} lines of {IMAGENET_NAMES}; expected exactly one"
                )
            indices.append(index_of_line[lines[0]])
        mapping[folder_of[label]] = tuple(indices)
    return mapping


def _invert(folder_to_label: dict, where: Path) -> dict[str, str]:
    label_to_folder: dict[str, str] = {}
    for folder, label in folder_to_label.items():
        if label_to_folder.setdefault(label, folder) != folder:
            raise InvalidSourceData(
                f"{where}: label {label!r} names two folders, {label_to_folder[label]!r} and {folder!r}"
            )
    return label_to_folder


def _index_of_line(pytorch_to_line: dict, where: Path) -> dict[int, int]:
    """Inverse of ``{sorted-wnid index: line}``; it must be a permutation of 0..999."""
    try:
        pairs = {int(index): int(line) for index, line in pytorch_to_line.items()}
    except (TypeError, ValueError) as err:
        raise InvalidSourceData(f'{where}: expected {{"<index>": <line>}} with integer values') from err
    if sorted(pairs) != list(range(classes.NUM_CLASSES)) or sorted(pairs.values()) != list(range(classes.NUM_CLASSES)):
        raise InvalidSourceData(f"{where}: expected a one-to-one map of the indices 0..999 to the lines 0..999")
    return {line: index for index, line in pairs.items()}


def check_mapping(derived: dict[str, tuple[int, ...]], where: Path) -> None:
    """The release's mapping must be :data:`OVERLAP` (else the published protocol would be wrong)."""
    for folder in sorted(set(derived) | set(OVERLAP)):
        if derived.get(folder) != OVERLAP.get(folder):
            raise InvalidSourceData(
                f"{where}: ObjectNet class {folder!r} maps to ImageNet-1k classes {derived.get(folder)} "
                f"in the release's mapping files, expected {OVERLAP.get(folder)} (113 classes -> 125)"
            )
