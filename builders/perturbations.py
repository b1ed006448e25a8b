"""``perturbations``: seeded corrupted copies of any built imagenet-suite dataset (``--input DIR``).

Configs (each a default *plan*; options override its parts):

* ``imagenet_c_regenerated`` — the 15 ImageNet-C corruptions x severities 1..5, regenerated like
  ``make_imagenet_c.py``: Resize(256) + CenterCrop(224), corrupt, JPEG quality 85. Not the released
  ImageNet-C files: those are the ``imagenet_c`` builder (named ``imagenet_c`` here before 2.0.0);
* ``common`` — Heuillet et al. 2025's portfolio: its 11 common corruptions at severity 3, one per image in
  contiguous blocks (``(i // max(1, N // 11)) % 11`` over the input order), applied at native
  resolution and then resized to 224x224 (bilinear), PNG;
* ``imgaug`` — one imgaug augmenter or pipeline (``--option augmenter="GaussianBlur(sigma=2.0)"``)
  per image at native resolution, PNG.

Every random draw of image ``i`` under corruption ``c`` comes from ``example_rng(seed, c, id_i)`` (all
severities of ``(c, i)`` share that stream), including corruptions whose upstream code ignores seeds.
Rows carry the input's label columns (``label``, ``label16``, ...) and its evaluation protocol, plus
``source_id``, ``corruption``, ``severity`` and the source image's PIL mode (grayscale and CMYK
sources are converted to RGB before corrupting, as ImageNet-C's loader does). The carried columns
are those the input's builder declares for its config (options ``input`` and ``input_config``), so
:meth:`Perturbations.features` is a function of config and options; ``prepare`` checks that the input
folder has exactly those columns. With ``clean=true`` each
source image also appears once unmodified (``corruption="clean"``, ``severity=0``, original bytes) so
that one scoring run gives C-robustness (corrupted accuracy relative to clean accuracy).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from imagenet_suite.core import registry
from imagenet_suite.core.builder import Builder, BuilderConfig, Option, Prepared, Shard, example_rng
from imagenet_suite.core.sources import Source, SourceResolver
from imagenet_suite.errors import ConfigError, InvalidSourceData, param
from imagenet_suite.images.codec import Encoding, decode_rgb, encode
from imagenet_suite.perturbations import names as N

from ._citations import BEYOND_ACCURACY, HEUILLET_2025, IMAGENET_C, cite

if TYPE_CHECKING:
    import numpy as np
    from PIL import Image

    from imagenet_suite.dataset.folder import DatasetFolder

# The corruptions (NumPy, SciPy, OpenCV), Pillow and Parquet are imported in the functions that use them:
# ``imagenet-suite list``/``info`` import this module for the builder's metadata, which needs only the names

CLEAN = "clean"
IMGAUG = "imgaug"
FROST_COMMIT = "568283ede9d9a053a395005471d26a1828c4dd2d"  # bethgelab/imagecorruptions: last change to frost/
FROST_URL = f"https://raw.githubusercontent.com/bethgelab/imagecorruptions/{FROST_COMMIT}/imagecorruptions/frost/{{}}"
FROST_PINS = {  # file -> (size, sha256) at FROST_COMMIT
    "frost1.png": (1_199_930, "ff9f907860bd7a835d459e32f9d588062b7f61ee267343cc7222b56753a14755"),
    "frost2.png": (299_002, "fe211a89b336999c207a852ce05818d4545d0b57c5beadd824b4cc9d9a9b6137"),
    "frost3.png": (299_002, "2d0d50b4a9bb213f38b024ef7768731bb83cc08d2f26b5766bbc167cdfa0e504"),
    "frost4.jpg": (36_734, "3f8b91ca1a9fa7167b09e773da53f5ae60d0a1fd88f02a783f6e328a72887f6e"),
    "frost5.jpg": (155_150, "5fc6a19df4a429ba68abdcc8f8a4278d4c9f81c9ccafd2c92ab0c8cf8992ebd2"),
    "frost6.jpg": (90_185, "1f92b2f48408748085b68dd81d816ef239f42cef3029c25d041fcb6760fb4f25"),
}
FROST_SOURCES = tuple(
    Source(
        f"frost{i + 1}",
        name,
        url=FROST_URL.format(name),
        size=FROST_PINS[name][0],
        sha256=FROST_PINS[name][1],
        instructions=f"{name} from the imagecorruptions package (imagecorruptions/frost/) or "
        "ImageNet-C's create_c folder; put it in --manual-dir",
    )
    for i, name in enumerate(N.FROST_FILES)
)
# Resizing relative to corruption: where the corruption is applied and what is stored.
APPLY_AT = {
    "crop224": "Resize(256) + CenterCrop(224) (torchvision, bilinear), then corrupt (ImageNet-C)",
    "native_then_resize224": "corrupt at the source resolution, then Resize((224, 224)) bilinear (Heuillet et al. 2025)",
    "resize224": "Resize((224, 224)) bilinear, then corrupt",
    "native": "corrupt at the source resolution, stored at that resolution",
}
ENCODINGS = {"jpeg85": "JPEG quality 85, optimize (as ImageNet-C's files)", "png": "PNG (lossless)"}
ENCODERS = {"jpeg85": Encoding.jpeg(quality=85, optimize=True), "png": Encoding.png()}  # what ENCODINGS says
DROPPED_COLUMNS = ("id", "file_name", "image", "image_mode", "width", "height", "objects")  # stale after corruption


@dataclass(frozen=True)
class Plan:
    """What a config does (resolved from its defaults and the options)."""

    flavor: str
    corruptions: tuple[str, ...]
    severities: tuple[int, ...]
    assignment: str  # "all": every image x corruption x severity; "block": Heuillet et al.'s one corruption per image
    apply_at: str
    encoding: str
    clean: bool
    augmenter: str = ""


IMAGENET_C_REGENERATED = "imagenet_c_regenerated"  # config; not the released ImageNet-C (builder imagenet_c)
DEFAULT_PLANS = {
    IMAGENET_C_REGENERATED: Plan("imagenet_c", N.IMAGENET_C, N.SEVERITIES, "all", "crop224", "jpeg85", True),
    "common": Plan("imagecorruptions", N.HEUILLET_COMMON, (3,), "block", "native_then_resize224", "png", True),
    "imgaug": Plan("imagecorruptions", (IMGAUG,), (0,), "all", "native", "png", True),
}


def resolve_plan(config: str, options: dict) -> Plan:
    """The config's default plan with the options applied; ConfigError names a bad option value."""
    plan = asdict(DEFAULT_PLANS[config])
    if options["corruptions"]:
        if config == "imgaug":
            raise ConfigError("option corruptions does not apply to the imgaug config (use augmenter=...)")
        names = tuple(n.strip() for n in options["corruptions"].split(",") if n.strip())
        names = N.CORRUPTION_NAMES if names == ("all",) else names
        for name in names:
            if name not in N.CORRUPTION_NAMES:
                raise ConfigError(
                    f"option corruptions: unknown corruption {name!r}; known: {sorted(N.CORRUPTION_NAMES)}"
                )
        plan["corruptions"] = names
    if options["severities"]:
        plan["severities"] = _severities(options["severities"], config)
    for key in ("assignment", "apply_at", "flavor"):
        if options[key]:
            plan[key] = options[key]
    plan["clean"] = options["clean"]
    plan["augmenter"] = options["augmenter"]
    return Plan(**{**plan, "corruptions": tuple(plan["corruptions"]), "severities": tuple(plan["severities"])})


def _severities(text: str, config: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError as err:
        raise ConfigError(f"option severities={text!r}: expected comma-separated integers 1..5") from err
    if config == "imgaug" or not values or any(v not in N.SEVERITIES for v in values):
        raise ConfigError(f"option severities={text!r}: expected integers in 1..5 (not for the imgaug config)")
    return values


# -- the carried columns -------------------------------------------------------------------------


def input_config_of(input_builder: str, input_config: str) -> str:
    """The input config whose columns are carried: ``input_config``, or (``''``) the input builder's
    ``default`` config, or its only one; ConfigError if that leaves a choice."""
    configs = [config.name for config in registry.get(input_builder).CONFIGS]
    if input_config:
        return input_config
    if "default" in configs or len(configs) == 1:
        return "default" if "default" in configs else configs[0]
    raise ConfigError(
        f"option input_config: builder {input_builder!r} has configs {configs}; name the one to "
        f"perturb, e.g. {param('builder_options')} input_config={configs[0]}"
    )


def carried_features(input_builder: str, input_config: str) -> dict:
    """The input's columns every row carries: the features its builder declares for that config
    (default options), without the image and geometry columns (:data:`DROPPED_COLUMNS`)."""
    features = registry.get(input_builder)(input_config).features()
    return {name: feature for name, feature in features.items() if name not in DROPPED_COLUMNS}


def check_carried(folder: DatasetFolder, config: str, carried: dict) -> None:
    """InvalidSourceData unless the input folder's config has exactly the declared carried columns
    (another config of the same builder may, e.g. imagenet_val ``boxes`` for ``default``)."""
    from datasets import Features

    found = {k: v for k, v in folder.config_info(config)["features"].items() if k not in DROPPED_COLUMNS}
    if json.loads(json.dumps(found)) != json.loads(json.dumps(Features(carried).to_dict())):
        raise InvalidSourceData(
            f"{folder.path} ({config}): its columns {sorted(found)} are not those "
            f"{folder.name} {config} declares in this imagenet-suite ({sorted(carried)}, or "
            "their types differ); rebuild the input with this version"
        )


# -- images ----------------------------------------------------------------------------------------------


def before_corruption(image: Image.Image, apply_at: str) -> Image.Image:
    from PIL import Image

    from imagenet_suite.perturbations import corruptions as C

    if apply_at == "crop224":
        return C.resize_short_center_crop(image)
    if apply_at == "resize224":
        return image.resize((224, 224), Image.BILINEAR)
    return image


def after_corruption(pixels: np.ndarray, apply_at: str) -> Image.Image:
    from PIL import Image

    image = Image.fromarray(pixels)
    return image.resize((224, 224), Image.BILINEAR) if apply_at == "native_then_resize224" else image


# -- keys ---------------------------------------------------------------------------------------------


def variants(plan: Plan, position: int, count: int, assigned: list[str] | None) -> list[tuple[str, int]]:
    """``(corruption, severity)`` rows of the image at ``position`` (clean first)."""
    rows = [(CLEAN, 0)] if plan.clean else []
    names = plan.corruptions if plan.assignment == "all" else (assigned[position],)
    return rows + [(name, severity) for name in names for severity in plan.severities]


def row_key(source_id: str, corruption: str, severity: int) -> str:
    return f"{source_id}/{corruption}/{severity}"


def parse_key(key: str) -> tuple[str, str, int]:
    source_id, corruption, severity = key.rsplit("/", 2)
    return source_id, corruption, int(severity)


@lru_cache(maxsize=4)
def _open_folder(path: str) -> DatasetFolder:
    from imagenet_suite.dataset.folder import DatasetFolder

    return DatasetFolder(path)


@dataclass(frozen=True)
class _RowTools:
    """What every row of a shard is made with: the frost pictures (RGB arrays, empty without frost), the
    imgaug perturbation (None without an augmenter) and the input's columns carried into each row."""

    frost: tuple[np.ndarray, ...]
    perturb: Callable[[np.ndarray, np.random.Generator], np.ndarray] | None
    columns: tuple[str, ...]


# -- the builder ---------------------------------------------------------------------------------------


class Perturbations(Builder):
    NAME = "perturbations"
    VERSION = "2.0.0"
    RELEASE_NOTES = {
        "1.0.0": "Initial release: ImageNet-C regenerated (15 corruptions x 5 severities), Heuillet et al. 2025's "
        "common-corruption portfolio (11 at severity 3, block assignment) and imgaug "
        "perturbations of any built dataset, seeded per (seed, corruption, image id).",
        "2.0.0": "The config `imagenet_c` is renamed `imagenet_c_regenerated`: it shared its name with the "
        "`imagenet_c` builder (the released ImageNet-C files), for different data. Its rows and "
        "images are unchanged. The carried label columns now come from the input builder's "
        "declared features; with input_config='' an input builder without a `default` config "
        "and with several configs needs --option input_config.",
    }
    CONFIGS = (
        BuilderConfig(
            IMAGENET_C_REGENERATED,
            "ImageNet-C regenerated from a seed (not the released files: builder "
            "imagenet_c): 15 corruptions x severities 1-5 on 224 center crops, JPEG 85",
            shard_size=1000,
        ),
        BuilderConfig(
            "common",
            "Heuillet et al. 2025 portfolio: one of 11 corruptions per image (blocks), severity 3, native "
            "resolution then 224x224, PNG",
            shard_size=1000,
        ),
        BuilderConfig("imgaug", "an imgaug augmenter or pipeline per image (option augmenter), PNG", shard_size=1000),
    )
    SOURCES = FROST_SOURCES
    SEEDED = True
    OPTIONS = {
        "input": Option("imagenet_val", help="builder name of the --input dataset to perturb"),
        "input_config": Option("", help="its config ('' = the input builder's 'default' config, else its only one)"),
        "corruptions": Option("", help="comma-separated corruption names, or 'all' (19); '' = the config's set"),
        "severities": Option("", help="comma-separated severities 1..5; '' = the config's"),
        "assignment": Option(
            "",
            ("", "all", "block"),
            "all: every image under every corruption; block: Heuillet et al.'s one corruption per image; '' = the config's",
        ),
        "apply_at": Option(
            "", ("", *APPLY_AT), "where corruptions are applied relative to resizing; '' = the config's"
        ),
        "flavor": Option("", ("", *N.FLAVORS), "reference implementation to follow; '' = the config's"),
        "clean": Option(True, (True, False), "also store every source image unmodified (corruption 'clean')"),
        "augmenter": Option(
            "", help="imgaug config: an imgaug expression, e.g. Sequential([Fliplr(1.0), GaussianBlur(2.0)])"
        ),
    }
    MANUAL_DOWNLOAD_INSTRUCTIONS = (
        "--input DIR: a built dataset (imagenet_val by default: imagenet-suite build "
        "imagenet_val --manual-dir ...). frost (imagenet_c_regenerated) downloads the 6 frost pictures "
        "of imagecorruptions; offline, put " + ", ".join(N.FROST_FILES) + " in --manual-dir."
    )
    HOMEPAGE = "https://github.com/hendrycks/robustness"
    LICENSE = "other"
    CITATION = cite(
        IMAGENET_C,
        """@article{michaelis2019dragon,
  title = {Benchmarking Robustness in Object Detection: Autonomous Driving when Winter is Coming},
  author = {Claudio Michaelis and Benjamin Mitzkus and Robert Geirhos and Evgenia Rusak and Oliver Bringmann and
            Alexander S. Ecker and Matthias Bethge and Wieland Brendel},
  journal = {arXiv preprint arXiv:1907.07484}, year = {2019},
  eprint = {1907.07484}, archivePrefix = {arXiv}}""",
        BEYOND_ACCURACY,
        HEUILLET_2025,
    )

    def __init__(self, config=None, **kwargs):
        super().__init__(config, **kwargs)
        self.recipe = resolve_plan(self.config.name, self.options)
        self._input_protocol: dict = {}  # the input folder's protocol, carried into ours (set by prepare)

    @property
    def input_config(self) -> str:
        """The input config perturbed (options ``input`` and ``input_config``)."""
        return input_config_of(self.options["input"], self.options["input_config"])

    # -- schema and protocol ------------------------------------------------------------------------
    def features(self):
        from datasets import Features, Image, Value

        carried = carried_features(self.options["input"], self.input_config)
        return Features(
            {
                "id": Value("string"),
                "source_id": Value("string"),
                "image": Image(),
                "corruption": Value("string"),
                "severity": Value("int32"),
                **carried,
                "source_mode": Value("string"),
                "width": Value("int32"),
                "height": Value("int32"),
            }
        )

    def protocol(self) -> dict:
        from imagenet_suite.perturbations import corruptions as C

        plan = asdict(self.recipe)
        plan.update(
            apply_at_meaning=APPLY_AT[self.recipe.apply_at],
            encoding_meaning=ENCODINGS[self.recipe.encoding],
            seed=self.seed,
            rng="example_rng(seed, corruption, source_id); all severities share the stream",
            known_differences={
                k: v for k, v in C.KNOWN_DIFFERENCES.items() if k in self.recipe.corruptions or k == "all"
            },
        )
        robustness = {
            "corruption_column": "corruption",
            "severity_column": "severity",
            "clean": CLEAN if self.recipe.clean else None,
            "summary": "accuracy per (corruption, severity); mean over severities, then over corruptions; "
            "c_robustness = that mean / clean accuracy (Beyond Accuracy, Hesse et al. 2025, Eq. 6)",
        }
        return {**self._input_protocol, "perturbation": plan, "robustness": robustness}

    # -- sources ------------------------------------------------------------------------------------
    def prepare(self, resolver: SourceResolver) -> Prepared:
        if self.config.name == "imgaug" and not self.recipe.augmenter:
            raise ConfigError(
                f"the imgaug config needs {param('builder_options')} "
                'augmenter="<imgaug expression>", e.g. "GaussianBlur(sigma=2.0)"'
            )
        hint = (
            f"Build it first, e.g. `imagenet-suite build {self.options['input']} --manual-dir ... --out datasets`, "
            f"then pass --input datasets/<folder>."
        )
        carried = carried_features(self.options["input"], self.input_config)  # what features() declares
        folder, resolved = resolver.input_dataset(self.options["input"], self.options["input_config"] or None, hint)
        config = self._folder_config(folder)
        features = folder.config_info(config)["features"]
        if "image" not in features or "id" not in features:
            raise InvalidSourceData(
                f"{folder.path} ({config}): no 'id' and 'image' columns to perturb; it has {sorted(features)}"
            )
        check_carried(folder, config, carried)
        self._input_protocol = folder.protocol(config)
        splits = {
            split: folder.read_table(config, split, ["id"]).column("id").to_pylist() for split in folder.splits(config)
        }
        sources = {"input": resolved}
        if "frost" in self.recipe.corruptions:
            sources.update({s.name: resolver.resolve(s) for s in FROST_SOURCES})
        data = {
            "input": str(folder.path),
            "config": config,
            "splits": splits,
            "columns": list(carried),
            "frost": [str(sources[s.name].path) for s in FROST_SOURCES if s.name in sources],
        }
        if self.recipe.augmenter:
            from imagenet_suite.perturbations.imgaug_compat import parse_augmenter

            parse_augmenter(self.recipe.augmenter)  # fail before planning on a bad expression
        return Prepared(sources, data)

    def _folder_config(self, folder: DatasetFolder) -> str:
        """The config of the input folder read: ``input_config``, else ``default`` if built, else its only one."""
        if self.options["input_config"]:
            return folder.resolve_config(self.options["input_config"])
        return "default" if "default" in folder.configs else folder.resolve_config(None)

    def split_keys(self, prepared: Prepared) -> dict[str, list[str]]:
        from imagenet_suite.perturbations import corruptions as C

        out = {}
        for split, ids in prepared.data["splits"].items():
            assigned = (
                C.block_assignment(len(ids), self.recipe.corruptions) if self.recipe.assignment == "block" else None
            )
            out[split] = [
                row_key(source_id, name, severity)
                for position, source_id in enumerate(ids)
                for name, severity in variants(self.recipe, position, len(ids), assigned)
            ]
        return out

    # -- rows ---------------------------------------------------------------------------------------
    def generate(self, prepared: Prepared, shard: Shard) -> Iterator[dict]:
        from imagenet_suite.perturbations import corruptions as C

        folder = _open_folder(prepared.data["input"])
        keys = [parse_key(key) for key in shard.keys]
        source_ids = list(dict.fromkeys(source_id for source_id, _, _ in keys))
        table = folder.take(
            source_ids, prepared.data["config"], shard.split, ["id", "image", *prepared.data["columns"]]
        )
        rows = dict(zip(source_ids, table.to_pylist(), strict=True))
        tools = _RowTools(
            frost=C.load_frost_pictures(prepared.data["frost"]) if prepared.data["frost"] else (),
            perturb=self._imgaug() if self.recipe.augmenter else None,
            columns=tuple(prepared.data["columns"]),
        )
        current, prepared_image = None, None
        for source_id, corruption, severity in keys:
            source = rows[source_id]
            where = f"{folder.path} ({prepared.data['config']}/{shard.split}) id {source_id}"
            if source_id != current:
                current, prepared_image = source_id, decode_rgb(source["image"]["bytes"], where)
            yield self._row(source, source_id, corruption, severity, prepared_image, where, tools)

    def _imgaug(self):
        from imagenet_suite.perturbations.imgaug_compat import ImgaugPerturbation, parse_augmenter

        return ImgaugPerturbation(parse_augmenter(self.recipe.augmenter), IMGAUG)

    def _row(
        self,
        source: dict,
        source_id: str,
        corruption: str,
        severity: int,
        decoded,
        where: str,
        tools: _RowTools,
    ) -> dict:
        image, mode = decoded
        if corruption == CLEAN:
            data, path, size = source["image"]["bytes"], source["image"]["path"] or source_id, image.size
        else:
            pixels = self._perturb(image, corruption, severity, source_id, where, tools)
            stored = after_corruption(pixels, self.recipe.apply_at)
            encoding = ENCODERS[self.recipe.encoding]
            data, size = encode(stored, encoding), stored.size
            path = f"{row_key(source_id, corruption, severity)}.{encoding.extension}"
        return {
            "id": row_key(source_id, corruption, severity),
            "source_id": source_id,
            "image": {"bytes": data, "path": path},
            "corruption": corruption,
            "severity": severity,
            **{c: source[c] for c in tools.columns},
            "source_mode": mode,
            "width": size[0],
            "height": size[1],
        }

    def _perturb(
        self, image: Image.Image, corruption: str, severity: int, source_id: str, where: str, tools: _RowTools
    ) -> np.ndarray:
        import numpy as np

        from imagenet_suite.perturbations import corruptions as C

        rng = example_rng(self.seed, corruption, source_id)
        pixels = np.asarray(before_corruption(image, self.recipe.apply_at))
        try:
            if corruption == IMGAUG:
                return tools.perturb(pixels, rng)
            return C.corrupt(pixels, corruption, severity, rng, self.recipe.flavor, tools.frost)
        except C.CorruptionError as err:
            raise InvalidSourceData(f"{where}: {corruption} severity {severity}: {err}") from err

    def card_context(self, prepared: Prepared) -> dict:
        folder = _open_folder(prepared.data["input"])
        return {"input": f"{folder.name} {folder.version} ({prepared.data['config']})"}
