"""``shape_bias_sets``: the model-vs-human 16-class test sets (Geirhos et al. 2019, 2021).

Configs: ``cue_conflict`` (1,280 style-transfer images with a shape and a texture class), ``edge``
(160), ``silhouette`` (160), ``sketch`` (800) and ``stylized`` (800); original bytes, labels in the
16 categories (``airplane`` ... ``truck``, sorted) as a ClassLabel, and the 1000→16 decision mapping
published in ``protocol()`` so ``imagenet-suite score`` applies it with no arguments.

Sources, detected in this order in ``--manual-dir`` (then the pinned download):

1. ``<name>.tar.gz``, the model-vs-human v0.1 release archive (members ``<name>/<class>/<file>``;
   sketch and stylized ``<name>/dnn/session-1/<a>_<b>_<c>_<condition>_<class>_<file>``);
2. ``<name>/``, the same archive extracted (``$MODELVSHUMANDIR/datasets``);
3. ``stimuli/<folder>/<class>/<file>``, a texture-vs-shape checkout (``edges``,
   ``filled-silhouettes``, ``style-transfer-preprocessed-512``; no sketch or stylized there).

Cue-conflict file names are ``<shape><i>-<texture><j>.png`` in the ``<shape>`` folder; the texture is
the last ``-`` token with digits removed (model-vs-human ``_get_texture_category``). 80 of the 1,280
images have shape == texture (5 per class); they are kept and flagged ``shape_eq_texture`` (shape bias
excludes them). With ``strict_counts=true`` (default) the released counts are required.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from imagenet_suite.core.archives import open_archive
from imagenet_suite.core.builder import Builder, BuilderConfig, Option, Prepared, Shard
from imagenet_suite.core.sources import ResolvedSource, Source, SourceResolver
from imagenet_suite.errors import InvalidSourceData, SourceError, param

from ._citations import BEYOND_ACCURACY, IMAGENET_SKETCH, cite
from ._image_columns import image_features, image_row

# The 16 categories, sorted (= imagenet_suite.scoring.metrics.shape.CATEGORIES16, kept here so that listing or
# running this builder does not import torch; a test checks they agree). The 1000->16 index lists are
# read from the scoring module when the protocol is published.
CATEGORIES16 = (
    "airplane",
    "bear",
    "bicycle",
    "bird",
    "boat",
    "bottle",
    "car",
    "cat",
    "chair",
    "clock",
    "dog",
    "elephant",
    "keyboard",
    "knife",
    "oven",
    "truck",
)
RELEASE_URL = "https://github.com/bethgelab/model-vs-human/releases/download/v0.1/{NAME}.tar.gz"
RELEASE_NAMES = {
    "cue_conflict": "cue-conflict",
    "edge": "edge",
    "silhouette": "silhouette",
    "sketch": "sketch",
    "stylized": "stylized",
}
TEXTURE_VS_SHAPE_FOLDERS = {
    "cue_conflict": "stimuli/style-transfer-preprocessed-512",
    "edge": "stimuli/edges",
    "silhouette": "stimuli/filled-silhouettes",
}
WITH_SESSIONS = ("sketch", "stylized")  # model-vs-human "contains_sessions": dnn/session-N/ + info in the name
# Released counts (model-vs-human's v0.1 release and its human-trial files; texture-vs-shape's stimuli folders):
# total and per class (None: not fixed).
COUNTS = {
    "cue_conflict": (1280, 80),
    "edge": (160, 10),
    "silhouette": (160, 10),
    "sketch": (800, None),
    "stylized": (800, None),
}
SHAPE_EQ_TEXTURE = (80, 5)  # cue-conflict images whose texture class is their shape class: total, per class
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
CUE_CONFLICT_NAME = re.compile(r"^(?P<shape>[a-z]+)\d+-(?P<texture>[a-z]+)\d+\.png$")

SOURCES = tuple(
    Source(
        f"{config}_tar",
        f"{name}.tar.gz",
        url=RELEASE_URL.format(NAME=name),
        instructions=f"{name}.tar.gz from {RELEASE_URL.format(NAME=name)} (model-vs-human v0.1 release)",
    )
    for config, name in RELEASE_NAMES.items()
)


def _layouts(config: str) -> str:
    name = RELEASE_NAMES[config]
    lines = [f"  1. {name}.tar.gz (model-vs-human v0.1 release archive)", f"  2. {name}/ (that archive extracted)"]
    if config in TEXTURE_VS_SHAPE_FOLDERS:
        lines.append(f"  3. {TEXTURE_VS_SHAPE_FOLDERS[config]}/<class>/*.png (texture-vs-shape repository)")
    return "\n".join(lines)


@dataclass(frozen=True)
class Stimulus:
    """One image: its id (= file_name), archive member and 16-class label(s)."""

    id: str
    member: str
    label: str  # class folder (shape class for cue-conflict)
    texture: str | None = None


@dataclass(frozen=True)
class Layout:
    name: str  # "mvh_tar", "mvh_folder" or "texture_vs_shape"
    source: ResolvedSource
    prefix: str  # folder inside the archive/folder that holds the class folders ("" or "<name>/")


# -- finding and reading the source ------------------------------------------------------------------


def find_layout(config: str, resolver: SourceResolver) -> Layout:
    """The first layout present in the manual dir, else the release archive (cache or download)."""
    name = RELEASE_NAMES[config]
    source = next(s for s in SOURCES if s.name == f"{config}_tar")
    if resolver.find_manual(source.filename):
        return Layout("mvh_tar", resolver.resolve(source), f"{name}/")
    if resolver.find_manual(name):
        return Layout("mvh_folder", resolver.resolve_folder(f"{config}_folder", resolver.manual_dir / name), "")
    if config in TEXTURE_VS_SHAPE_FOLDERS and resolver.find_manual(TEXTURE_VS_SHAPE_FOLDERS[config]):
        path = resolver.manual_dir / TEXTURE_VS_SHAPE_FOLDERS[config]
        return Layout("texture_vs_shape", resolver.resolve_folder(f"{config}_folder", path), "")
    try:
        return Layout("mvh_tar", resolver.resolve(source), f"{name}/")
    except SourceError as err:
        raise type(err)(f"{err}\nAccepted layouts of {param('manual_dir')} for {config}:\n{_layouts(config)}") from err


def list_stimuli(config: str, layout: Layout) -> list[Stimulus]:
    """Every image of the layout with its label(s), validated; sorted by id."""
    with open_archive(layout.source.path) as archive:
        names = archive.names()
    stimuli = []
    for member in names:
        relative = _relative(member, layout, config)
        if relative is not None:
            stimuli.append(_stimulus(config, member, relative, f"{layout.source.path}:{member}"))
    stimuli.sort(key=lambda s: s.id)
    for first, second in itertools.pairwise(stimuli):
        if first.id == second.id:
            raise InvalidSourceData(
                f"{layout.source.path}: {first.member} and {second.member} both give id {first.id!r}"
            )
    return stimuli


def _relative(member: str, layout: Layout, config: str) -> PurePosixPath | None:
    """The member's path below the class folders' parent, or None for files that are not images."""
    path = PurePosixPath(member.removeprefix("./"))
    if any(part.startswith(".") or part == "__MACOSX" for part in path.parts):
        return None
    if layout.prefix and not member.removeprefix("./").startswith(layout.prefix):
        raise InvalidSourceData(f"{layout.source.path}: unexpected member {member!r} (expected {layout.prefix}...)")
    path = PurePosixPath(member.removeprefix("./").removeprefix(layout.prefix))
    if path.suffix.lower() not in IMAGE_SUFFIXES:
        if path.name.lower().startswith(("readme", "license", "dataset_license")):
            return None
        raise InvalidSourceData(
            f"{layout.source.path}: member {member!r} is not an image (expected "
            f"{'/'.join(IMAGE_SUFFIXES)}); accepted layouts for {config}:\n{_layouts(config)}"
        )
    return path


def _stimulus(config: str, member: str, path: PurePosixPath, where: str) -> Stimulus:
    if config in WITH_SESSIONS:
        return _session_stimulus(member, path, where)
    if len(path.parts) != 2:
        raise InvalidSourceData(f"{where}: expected <class>/<file>, got {path.as_posix()!r}")
    label = _category(path.parent.name, where, "class folder")
    if config != "cue_conflict":
        return Stimulus(path.as_posix(), member, label)
    return Stimulus(path.as_posix(), member, label, _texture(path, label, where))


def _session_stimulus(member: str, path: PurePosixPath, where: str) -> Stimulus:
    """model-vs-human ``InfoMappingWithSessions``: ``dnn/session-N/<a>_<b>_<c>_<condition>_<class>_...``."""
    fields = path.name.split("_")
    if len(path.parts) != 3 or path.parts[0] != "dnn" or not path.parts[1].startswith("session-") or len(fields) < 6:
        raise InvalidSourceData(
            f"{where}: expected dnn/session-N/<a>_<b>_<c>_<condition>_<class>_<name>, got {path.as_posix()!r}"
        )
    return Stimulus(
        path.relative_to("dnn").as_posix(), member, _category(fields[4], where, "class field (5th '_' field)")
    )


def _texture(path: PurePosixPath, shape: str, where: str) -> str:
    """Texture class of ``<shape><i>-<texture><j>.png``; its shape prefix must be the folder."""
    match = CUE_CONFLICT_NAME.match(path.name)
    if match is None:
        raise InvalidSourceData(f"{where}: cue-conflict file name {path.name!r} is not <shape><i>-<texture><j>.png")
    if match["shape"] != shape:
        raise InvalidSourceData(f"{where}: shape prefix {match['shape']!r} differs from its folder {shape!r}")
    texture = "".join(ch for ch in path.stem.split("-")[-1] if not ch.isdigit())
    return _category(texture, where, "texture")


def _category(name: str, where: str, what: str) -> str:
    if name not in CATEGORIES16:
        raise InvalidSourceData(f"{where}: {what} {name!r} is not one of the 16 categories {list(CATEGORIES16)}")
    return name


def check_counts(config: str, stimuli: list[Stimulus], where: Path) -> None:
    """The released counts: total, per class, every class present; cue-conflict shape==texture 80 (5/class)."""
    total, per_class = COUNTS[config]
    counts = Counter(s.label for s in stimuli)
    if len(stimuli) != total:
        raise InvalidSourceData(
            f"{where}: {len(stimuli)} images for {config}; the release has {total} "
            f"(pass {param('builder_options')} strict_counts=false to build a subset)"
        )
    for category in CATEGORIES16:
        if counts[category] == 0 or (per_class is not None and counts[category] != per_class):
            raise InvalidSourceData(
                f"{where}: class {category!r} has {counts[category]} images; expected {per_class or 'at least 1'}"
            )
    if config == "cue_conflict":
        same = Counter(s.label for s in stimuli if s.label == s.texture)
        if sum(same.values()) != SHAPE_EQ_TEXTURE[0] or any(same[c] != SHAPE_EQ_TEXTURE[1] for c in CATEGORIES16):
            raise InvalidSourceData(
                f"{where}: {sum(same.values())} cue-conflict images have shape == texture "
                f"({dict(same)}); the release has {SHAPE_EQ_TEXTURE[0]}, {SHAPE_EQ_TEXTURE[1]} per class"
            )


# -- the builder ---------------------------------------------------------------------------------------


class ShapeBiasSets(Builder):
    NAME = "shape_bias_sets"
    VERSION = "1.0.0"
    RELEASE_NOTES = {
        "1.0.0": "Initial release: model-vs-human cue-conflict (1,280), edge (160), silhouette (160), "
        "sketch (800) and stylized (800) with 16-class labels and the 1000->16 decision mapping."
    }
    CONFIGS = (
        BuilderConfig("cue_conflict", "style-transfer cue-conflict images: shape and texture class", shard_size=640),
        BuilderConfig("edge", "edge maps of 160 objects (16 classes x 10)", shard_size=500),
        BuilderConfig("silhouette", "filled silhouettes of 160 objects (16 classes x 10)", shard_size=500),
        BuilderConfig("sketch", "16-class ImageNet-Sketch subset of model-vs-human", shard_size=800),
        BuilderConfig("stylized", "16-class Stylized-ImageNet subset of model-vs-human", shard_size=800),
    )
    SOURCES = SOURCES
    OPTIONS = {
        "strict_counts": Option(
            True,
            (True, False),
            "require the released image counts (false: build a subset, e.g. a sample of the stimuli)",
        )
    }
    MANUAL_DOWNLOAD_INSTRUCTIONS = "None needed (downloaded). Offline, put in --manual-dir per config:\n" + "\n".join(
        f"{config}:\n{_layouts(config)}" for config in RELEASE_NAMES
    )
    HOMEPAGE = "https://github.com/bethgelab/model-vs-human"
    LICENSE = "cc-by-4.0"
    CITATION = cite(
        """@inproceedings{geirhos2019imagenettrained,
  title = {ImageNet-trained {CNNs} are biased towards texture; increasing shape bias improves accuracy and robustness},
  author = {Robert Geirhos and Patricia Rubisch and Claudio Michaelis and Matthias Bethge and Felix A. Wichmann and Wieland Brendel},
  booktitle = {International Conference on Learning Representations (ICLR)}, year = {2019},
  eprint = {1811.12231}, archivePrefix = {arXiv}}""",
        """@inproceedings{geirhos2021partial,
  title = {Partial success in closing the gap between human and machine vision},
  author = {Robert Geirhos and Kantharaju Narayanappa and Benjamin Mitzkus and Tizian Thieringer and Matthias Bethge
            and Felix A. Wichmann and Wieland Brendel},
  booktitle = {Advances in Neural Information Processing Systems (NeurIPS)}, year = {2021},
  eprint = {2106.07411}, archivePrefix = {arXiv}}""",
        IMAGENET_SKETCH,
        BEYOND_ACCURACY,
    )

    def features(self):
        from datasets import ClassLabel, Value

        category = ClassLabel(names=list(CATEGORIES16))
        if self.config.name == "cue_conflict":
            return image_features(
                {"shape_label16": category, "texture_label16": category, "shape_eq_texture": Value("bool")}
            )
        return image_features({"label16": category})

    def protocol(self) -> dict:
        from imagenet_suite.scoring.metrics.shape import CATEGORY_INDICES, IMAGENET_16_MAPPING

        mapping = {
            "decision_mapping": IMAGENET_16_MAPPING,
            "aggregation": "mean of the 1000-way softmax probabilities "
            "of each category's ImageNet classes; decision = argmax over the 16 categories",
            "num_classes": 1000,
            "categories": list(CATEGORIES16),
            "category_indices": {c: list(CATEGORY_INDICES[c]) for c in CATEGORIES16},
        }
        if self.config.name == "cue_conflict":
            mapping["shape_bias"] = {
                "excluded_rows": "shape_eq_texture",
                "formula": "shape hits / (shape hits + texture hits), pooled over images",
            }
        else:
            mapping["metric"] = "accuracy16: decision == label16 (OOD robustness divides it by clean ImageNet accuracy)"
        return mapping

    def prepare(self, resolver: SourceResolver) -> Prepared:
        layout = find_layout(self.config.name, resolver)
        stimuli = list_stimuli(self.config.name, layout)
        if not stimuli:
            raise InvalidSourceData(
                f"{layout.source.path}: no images for {self.config.name}; accepted layouts:\n"
                f"{_layouts(self.config.name)}"
            )
        if self.options["strict_counts"]:
            check_counts(self.config.name, stimuli, layout.source.path)
        return Prepared({layout.source.name: layout.source}, {"layout": layout, "stimuli": {s.id: s for s in stimuli}})

    def split_keys(self, prepared: Prepared) -> dict[str, list[str]]:
        return {"test": list(prepared.data["stimuli"])}

    def generate(self, prepared: Prepared, shard: Shard) -> Iterator[dict]:
        layout: Layout = prepared.data["layout"]
        stimuli = [prepared.data["stimuli"][key] for key in shard.keys]
        with open_archive(layout.source.path) as archive:
            read = archive.read_members([s.member for s in stimuli])
            for stimulus, (member, data) in zip(stimuli, read, strict=True):
                yield self._row(stimulus, data, f"{layout.source.path}:{member}")

    def _row(self, stimulus: Stimulus, data: bytes, where: str) -> dict:
        row = image_row(stimulus.id, data, stimulus.id, where)
        if self.config.name == "cue_conflict":
            row.update(
                shape_label16=CATEGORIES16.index(stimulus.label),
                texture_label16=CATEGORIES16.index(stimulus.texture),
                shape_eq_texture=stimulus.label == stimulus.texture,
            )
        else:
            row["label16"] = CATEGORIES16.index(stimulus.label)
        return row

    def card_context(self, prepared: Prepared) -> dict:
        stimuli = list(prepared.data["stimuli"].values())
        context = {
            f"{self.config.name}_layout": prepared.data["layout"].name,
            f"{self.config.name}_count": f"{len(stimuli):,}",
        }
        if self.config.name == "cue_conflict":
            context["cue_conflict_same"] = str(sum(s.label == s.texture for s in stimuli))
        return context
