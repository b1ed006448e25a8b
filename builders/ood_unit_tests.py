"""``ood_unit_tests``: NINCO's 17 synthetic OOD unit tests, regenerated deterministically from a seed.

NINCO (Bitterwolf et al. 2023), Appendix H. Upstream (j-cb/NINCO ``create_unit_test_data.ipynb`` + ``noise_functions.py``)
picks 400 ImageNet-val images per test with a seeded rule, but draws every per-image parameter
(σ, colours, orientation, stripe count, the noise itself) from numpy's *unseeded* global RNG, so its
files cannot be regenerated. This builder keeps everything that upstream fixes and seeds the rest:

* **Source images**: the built ``imagenet_val`` dataset (``--input DIR``) in torchvision ImageFolder
  order (sorted wnid, then file name), or any folder of images (``--option source=image_folder
  --manual-dir DIR``, same order rule) to make the same tests for another ID set.
* **Index selection** (upstream, verified): ``seed = int("".join(str(ord(c)) for c in name))``;
  ``RandomState(MT19937(SeedSequence(seed))).choice(N, n, replace=False)``, sorted. With N = 50,000 and
  n = 400 these are exactly the indices of the released files; since ``choice`` without replacement is
  a prefix of one permutation, any other n gives a subset (n < 400) or superset (n > 400) of them.
* **Per-image parameters**: ``example_rng(seed, test, index)`` (the builder's ``--seed``).
* **Output**: same height x width as the source image; the recipe's float image in [0, 1] is clipped,
  multiplied by 255 and *truncated* to uint8 (upstream's ``astype('uint8')``); PNG for even and JPEG
  (PIL defaults: quality 75, 4:2:0) for odd source indices.
* The Gaussian filter is ``skimage.filters.gaussian(x, σ, channel_axis=2, mode='wrap')`` upstream,
  identical to ``scipy.ndimage.gaussian_filter(x, (σ, σ, 0), mode='wrap', truncate=4)``; for σ ≥ 6 it
  is computed as the same circular convolution by FFT (equal to 1e-15, much faster for large σ).

The smooth-colour test (``low_freq_colorrange``) exists in two variants (option ``smooth_color``):
``code`` (default, matches the released files: the 2.5th percentile of each channel maps to c and the
97.5th to c + 2δ) and ``paper`` (the paper's text: c − δ and c + δ).
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from imagenet_suite.core.builder import Builder, BuilderConfig, Option, Prepared, Shard, example_rng
from imagenet_suite.core.sources import ResolvedSource, SourceResolver
from imagenet_suite.errors import ConfigError, InvalidSourceData, ManualFileMissing, param
from imagenet_suite.files import list_folder, read_text
from imagenet_suite.images import inspect_image
from imagenet_suite.images.codec import Encoding, decode_rgb, encode, rgb_floats

from ._citations import ILSVRC, NINCO, cite

if TYPE_CHECKING:
    import numpy as np

    Recipe = Callable[[int, int, np.ndarray | None, np.random.Generator, dict], tuple[np.ndarray, dict]]

# NumPy, Pillow and the picture grid are imported in the functions that use them: ``imagenet-suite list``/``info``
# import this module for the builder's metadata only

NUM_IMAGENET_VAL = 50_000
RELEASED_PER_TEST = 400
FFT_MIN_SIGMA = 6.0  # Gaussian filters with σ >= this run as an FFT circular convolution
GRID_FILE = "ood_unit_tests_grid.png"
IMAGE_FOLDER_SUFFIXES = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")  # torchvision's


# -- the index selection ---------------------------------------------------------------------------


def index_seed(name: str) -> int:
    """Upstream's seed of a test: the decimal character codes of its name, concatenated."""
    return int("".join(str(ord(c)) for c in name))


def source_indices(name: str, num_source: int = NUM_IMAGENET_VAL, count: int = RELEASED_PER_TEST) -> np.ndarray:
    """The sorted source-image indices of test ``name`` (upstream rule; int64, ``count`` of them)."""
    if not 0 < count <= num_source:
        raise ConfigError(f"images_per_test={count}: expected 1..{num_source} (the number of source images)")
    import numpy as np

    state = np.random.RandomState(np.random.MT19937(np.random.SeedSequence(index_seed(name))))
    return np.sort(state.choice(num_source, count, replace=False))


def released_indices(unit_tests_csv: str | Path) -> dict[str, list[int]]:
    """Source indices of the released files, per test, from ``NINCO_OOD_unit_tests.csv`` (file order)."""
    out: dict[str, list[int]] = {}
    text = read_text(unit_tests_csv, "NINCO's CSV of unit-test files (image_location,class)")
    reader = csv.reader(io.StringIO(text, newline=""))
    next(reader, None)
    for line_no, record in enumerate(reader, start=2):
        location, test = record if len(record) == 2 else ("", "")
        match = re.fullmatch(
            rf"NINCO_OOD_unit_tests/{re.escape(test)}/{re.escape(test)}_\d{{3}}_"
            rf"{re.escape(test)}_(\d{{5}})\.(png|jpg)",
            location,
        )
        if match is None:
            raise InvalidSourceData(f"{unit_tests_csv}: line {line_no}: unexpected unit-test row {record!r}")
        out.setdefault(test, []).append(int(match.group(1)))
    return out


# -- the Gaussian filter -------------------------------------------------------------------------------


def gaussian_kernel(sigma: float, truncate: float = 4.0) -> tuple[np.ndarray, np.ndarray]:
    """Offsets and weights of scipy's 1-D Gaussian kernel (radius ``int(truncate*σ + 0.5)``, sum 1)."""
    import numpy as np

    radius = int(truncate * float(sigma) + 0.5)
    offsets = np.arange(-radius, radius + 1)
    weights = np.exp(-0.5 / (float(sigma) ** 2) * offsets.astype(np.float64) ** 2)
    return offsets, weights / weights.sum()


def _folded_spectrum(sigma: float, length: int, real: bool) -> np.ndarray:
    import numpy as np

    offsets, weights = gaussian_kernel(sigma)
    folded = np.zeros(length)
    np.add.at(folded, offsets % length, weights)  # kernels longer than the image wrap around repeatedly
    spectrum = np.fft.rfft(folded) if real else np.fft.fft(folded)
    return spectrum.real  # the folded kernel is symmetric: its spectrum is real


def gaussian_wrap(image: np.ndarray, sigma: float) -> np.ndarray:
    """Blur each channel of a float H x W x 3 image with a Gaussian of std ``sigma`` px, periodic boundary.

    Equal (to ~1e-15) to ``scipy.ndimage.gaussian_filter(image, (σ, σ, 0), mode='wrap', truncate=4)``
    and to upstream's ``skimage.filters.gaussian(image, σ, channel_axis=2, mode='wrap')``.
    """
    import numpy as np
    from scipy import ndimage

    if sigma < FFT_MIN_SIGMA:
        return ndimage.gaussian_filter(image, (sigma, sigma, 0), mode="wrap", truncate=4.0)
    height, width = image.shape[:2]
    spectrum = np.fft.rfft2(image, axes=(0, 1))
    spectrum *= _folded_spectrum(sigma, height, real=False)[:, None, None]
    spectrum *= _folded_spectrum(sigma, width, real=True)[None, :, None]
    return np.fft.irfft2(spectrum, s=(height, width), axes=(0, 1))


# -- the 17 recipes ------------------------------------------------------------------------------------
# Each takes (height, width, source pixels or None, rng, options) and returns (float image, params).
# Draw order follows upstream (parameters first, then the noise) so the recipes read alike.


def _uniform(h, w, src, rng, opts):
    return rng.random((h, w, 3)), {}


def _gaussian(h, w, src, rng, opts):
    sigma = float(rng.choice([0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5]))
    return sigma * rng.standard_normal((h, w, 3)) + 0.5, {"sigma": sigma}


def _rademacher(h, w, src, rng, opts):
    import numpy as np

    return (rng.random((h, w, 3)) > 0.5).astype(np.float64), {}


def _pixel_permutation(src: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The source's RGB triplets in a random order (colours are never remixed)."""
    flat = src.reshape(-1, 3)
    return flat[rng.permutation(flat.shape[0])].reshape(src.shape)


def _pixel_perm(h, w, src, rng, opts):
    return _pixel_permutation(src, rng), {}


def _constant(value):
    def recipe(h, w, src, rng, opts):
        import numpy as np

        return np.full((h, w, 3), float(value)), {}

    return recipe


def _grey(h, w, src, rng, opts):
    import numpy as np

    grey = float(rng.random())
    return np.full((h, w, 3), grey), {"grey": grey}


def _monochrome(h, w, src, rng, opts):
    import numpy as np

    colour = rng.random(3)
    return np.broadcast_to(colour, (h, w, 3)).copy(), {"colour": colour.tolist()}


def stripes(height: int, width: int, colours: np.ndarray, orientation: str) -> np.ndarray:
    """Upstream ``noise_stripes``: n equal stripes of ``height // n`` (or ``width // n``) pixels; the
    remainder takes the last colour."""
    import numpy as np

    image = np.zeros((height, width, 3))
    n = len(colours)
    if orientation == "horizontal":
        size = height // n
        for k, colour in enumerate(colours):
            image[k * size : (k + 1) * size] = colour
        image[n * size :] = colours[-1]
    else:
        size = width // n
        for k, colour in enumerate(colours):
            image[:, k * size : (k + 1) * size] = colour
        image[:, n * size :] = colours[-1]
    return image


def _tricolour(primary: bool):
    def recipe(h, w, src, rng, opts):
        import numpy as np

        orientation = ("horizontal", "vertical")[int(rng.integers(2))]
        colours = rng.integers(0, 2, size=(3, 3)).astype(np.float64) if primary else rng.random((3, 3))
        return stripes(h, w, colours, orientation), {"orientation": orientation, "colours": colours.tolist()}

    return recipe


def _stripes(orientation: str):
    def recipe(h, w, src, rng, opts):
        n = int(rng.choice([4, 5, 7, 10, 15, 20]))
        colours = rng.random((n, 3))
        return stripes(h, w, colours, orientation), {"n_stripes": n, "colours": colours.tolist()}

    return recipe


SMOOTH_SIGMAS = [10, 15, 25, 40, 60, 85]


def _per_channel(reduce, image: np.ndarray) -> np.ndarray:
    """``reduce`` of each channel of an H x W x 3 image (channel slices: ~20x faster than axis=(0, 1))."""
    import numpy as np

    return np.array([reduce(image[..., c]) for c in range(image.shape[-1])])


def _safe_divide(values: np.ndarray, scale: np.ndarray | float) -> np.ndarray:
    """``values / scale``; a zero scale (a constant image) gives 0 instead of NaN."""
    import numpy as np

    return values / np.where(np.asarray(scale) > 0, scale, 1.0)


def _scale_full(g: np.ndarray, per_channel: bool) -> np.ndarray:
    """Upstream ``scale_full_brightness_range`` (global) or ``..._per_channel``: min -> 0, max -> 1."""
    import numpy as np

    shifted = g - (_per_channel(np.min, g) if per_channel else g.min())
    return _safe_divide(shifted, _per_channel(np.max, shifted) if per_channel else shifted.max())


def _low_freq(per_channel: bool):
    def recipe(h, w, src, rng, opts):
        sigma = float(rng.choice(SMOOTH_SIGMAS))
        return _scale_full(gaussian_wrap(rng.random((h, w, 3)), sigma), per_channel), {"sigma": sigma}

    return recipe


def _low_freq_colorrange(h, w, src, rng, opts):
    import numpy as np

    sigma = float(rng.choice(SMOOTH_SIGMAS))
    centre = rng.random(3)
    deviation = float(rng.uniform(0.1, 0.3))
    g = gaussian_wrap(rng.random((h, w, 3)), sigma)
    g0 = g - _per_channel(lambda channel: np.quantile(channel, 0.025), g)
    normalized = _safe_divide(g0, _per_channel(lambda channel: np.quantile(channel, 0.975), g0))
    if opts["smooth_color"] == "code":
        x = 2 * normalized * deviation + centre  # q2.5 -> c, q97.5 -> c + 2δ (the released files)
    else:
        x = (2 * normalized - 1) * deviation + centre  # q2.5 -> c - δ, q97.5 -> c + δ (the paper)
    return x, {"sigma": sigma, "colour": centre.tolist(), "deviation": deviation, "variant": opts["smooth_color"]}


def _low_freq_pixel_perm(h, w, src, rng, opts):
    sigma = float(rng.choice([1, 1.5, 2, 3, 4, 6, 8]))
    return gaussian_wrap(_pixel_permutation(src, rng), sigma), {"sigma": sigma}


def _blobs(h, w, src, rng, opts):
    import numpy as np

    sigma = float(rng.choice([1.5, 2, 2.5, 3, 3.5, 4]))
    g = gaussian_wrap((rng.random((h, w, 3)) < 0.7).astype(np.float64), sigma)  # Bernoulli(0.7)
    g[g < 0.75] = 0.0
    g[g > 1.0] = 1.0
    return g, {"sigma": sigma}


@dataclass(frozen=True)
class UnitTest:
    name: str  # folder / label name of the release
    paper_name: str
    short_name: str  # the paper's table abbreviation
    recipe: Recipe
    needs_pixels: bool  # reads the source image's pixels (else only its size)


UNIT_TESTS = {
    t.name: t
    for t in sorted(
        (
            UnitTest("uni", "uniform noise", "Uni", _uniform, False),
            UnitTest("Gaussian", "Gaussian noise", "Gauss", _gaussian, False),
            UnitTest("Rademacher", "Rademacher noise", "Rade", _rademacher, False),
            UnitTest("pixel_perm", "IN pixel permutations", "PxPerm", _pixel_perm, True),
            UnitTest("black", "black", "Black", _constant(0.0), False),
            UnitTest("white", "white", "White", _constant(1.0), False),
            UnitTest("grey", "shades of grey", "Grey", _grey, False),
            UnitTest("monochrome", "monochrome", "Mono", _monochrome, False),
            UnitTest("tricolour", "tricolour", "Tri", _tricolour(False), False),
            UnitTest("tricolour_primary", "primary tricolour", "PrTri", _tricolour(True), False),
            UnitTest("horizontal_stripes", "horizontal stripes", "Hor", _stripes("horizontal"), False),
            UnitTest("vertical_stripes", "vertical stripes", "Ver", _stripes("vertical"), False),
            UnitTest("low_freq", "smooth noise", "SmN", _low_freq(False), False),
            UnitTest("low_freq_channelfullscale", "smooth noise+", "SmN+", _low_freq(True), False),
            UnitTest("low_freq_colorrange", "smooth color", "SmCol", _low_freq_colorrange, False),
            UnitTest("low_freq_pixel_perm", "smooth IN pixel permutations", "SmPxPerm", _low_freq_pixel_perm, True),
            UnitTest("blobs", "blobs", "Blob", _blobs, False),
        ),
        key=lambda t: t.name,
    )
}  # sorted names: the ImageFolder label order of the release


def render(
    test: str, height: int, width: int, source: np.ndarray | None, rng: np.random.Generator, smooth_color: str = "code"
) -> tuple[np.ndarray, dict]:
    """The float64 H x W x 3 image of ``test`` in [0, 1] (clipped) and its parameters.

    ``source`` is the source image as float64 RGB in [0, 1] (``np.asarray(rgb) / 255``), needed by
    the pixel-permutation tests only; the others use its size.
    """
    import numpy as np

    unit = UNIT_TESTS[test]
    if unit.needs_pixels and (source is None or source.shape != (height, width, 3)):
        raise ValueError(f"{test} needs the source pixels as a {height}x{width}x3 array")
    image, params = unit.recipe(height, width, source, rng, {"smooth_color": smooth_color})
    return np.clip(image, 0.0, 1.0), params


def to_uint8(image: np.ndarray) -> np.ndarray:
    """Upstream's conversion: ``(clip(x, 0, 1) * 255).astype(uint8)`` (truncates, does not round)."""
    import numpy as np

    return (np.clip(image, 0.0, 1.0) * 255).astype(np.uint8)


PNG_COMPRESS_LEVEL = 1  # lossless either way; level 1 encodes noise 2-4x faster than PIL's default 6
ENCODINGS = (Encoding.png(compress_level=PNG_COMPRESS_LEVEL), Encoding.jpeg())  # even, odd source index


def encoding_of(index: int) -> Encoding:
    """PNG (zlib level 1) for an even source index, JPEG (PIL defaults: quality 75, 4:2:0) for an odd
    one, as upstream. The PNG level changes the file size, never a pixel."""
    return ENCODINGS[index % 2]


def generate_image(
    test: str, index: int, height: int, width: int, source: np.ndarray | None, seed: int, smooth_color: str = "code"
) -> tuple[bytes, str, dict]:
    """One unit-test image: (encoded bytes, extension, parameters); a pure function of its arguments."""
    image, params = render(test, height, width, source, example_rng(seed, test, index), smooth_color)
    encoding = encoding_of(index)
    return encode(to_uint8(image), encoding), encoding.extension, params


# -- source images -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SourceImages:
    """The source images in ImageFolder order: their ids and where to read them."""

    kind: str  # "imagenet_val" or "image_folder"
    path: Path  # dataset folder or image folder
    ids: tuple[str, ...]  # ImageNet val ids, or file paths relative to the folder
    config: str | None = None  # imagenet_val config read
    sizes: dict[int, tuple[int, int]] | None = None  # index -> (height, width), when known without decoding


def imagenet_val_sources(resolver: SourceResolver) -> tuple[SourceImages, ResolvedSource]:
    """The built imagenet_val dataset (``--input``) in ImageFolder order, with every image's size."""
    hint = (
        "Build it first: `imagenet-suite build imagenet_val --manual-dir DIR --out datasets`, then pass "
        "--input datasets/imagenet_val-1.0.0 (or use --option source=image_folder --manual-dir DIR)."
    )
    folder, resolved = resolver.input_dataset("imagenet_val", None, build_hint=hint)
    config = "default" if "default" in folder.configs else folder.configs[0]
    table = folder.read_table(config, "validation", columns=["id", "label", "width", "height"]).to_pydict()
    order = sorted(range(len(table["id"])), key=lambda r: (table["label"][r], table["id"][r]))
    sizes = {i: (table["height"][r], table["width"][r]) for i, r in enumerate(order)}
    return SourceImages("imagenet_val", folder.path, tuple(table["id"][r] for r in order), config, sizes), resolved


def image_folder_sources(resolver: SourceResolver) -> tuple[SourceImages, ResolvedSource]:
    """Every image under --manual-dir in torchvision ImageFolder order.

    With class sub-folders: sorted class folders, then (as ImageFolder walks) sorted directory and
    file names; files directly in the root are ignored, as ImageFolder does. Without sub-folders the
    folder is one class. Only torchvision's image extensions count.
    """
    root = resolver.manual_dir
    if root is None or not root.is_dir():
        raise ManualFileMissing(
            f"source=image_folder needs {param('manual_dir')}: a folder of images "
            "(class sub-folders in torchvision ImageFolder layout, or a flat folder)"
        )
    images = [name for name in list_folder(root) if name.lower().endswith(IMAGE_FOLDER_SUFFIXES)]
    with_classes = [name for name in images if "/" in name]  # ImageFolder ignores files beside the class folders
    ids = image_folder_order(with_classes or images)
    if not ids:
        raise ManualFileMissing(f"{root}: no images ({', '.join(IMAGE_FOLDER_SUFFIXES)}) found for source=image_folder")
    return SourceImages("image_folder", root, tuple(ids)), resolver.resolve_folder("image_folder", root, ids)


def image_folder_order(names: list[str]) -> list[str]:
    """Relative paths in the order torchvision's ImageFolder visits them: by class folder, then as
    ``sorted(os.walk(...))`` walks each (folders by path, files sorted within a folder)."""

    def key(name: str) -> tuple[str, str, str]:
        top, _, rest = name.partition("/")
        folder, _, file = name.rpartition("/")
        return (top if rest else "", folder, file)

    return sorted(names, key=key)


def read_sources(
    sources: SourceImages, indices: list[int], with_pixels: set[int]
) -> dict[int, tuple[int, int, np.ndarray | None]]:
    """index -> (height, width, RGB float pixels or None); pixels only for ``with_pixels``, decoded as
    torchvision's loader sees them (``convert('RGB')``, float64 in [0, 1])."""
    encoded: dict[int, bytes] = {}
    if sources.kind == "imagenet_val" and with_pixels:
        from imagenet_suite.dataset.folder import DatasetFolder

        wanted = sorted(with_pixels)
        table = DatasetFolder(sources.path).take(
            [sources.ids[i] for i in wanted], sources.config, "validation", ["id", "image"]
        )
        encoded = {i: image["bytes"] for i, image in zip(wanted, table.column("image").to_pylist(), strict=True)}
    out = {}
    for index in indices:
        if sources.kind == "image_folder":
            path = sources.path / sources.ids[index]
            if index in with_pixels:
                encoded[index] = path.read_bytes()
                header = inspect_image(encoded[index], str(path))
            else:
                header = _header_of_file(path)
            height, width = header.height, header.width
        else:
            height, width = sources.sizes[index]
        pixels = rgb_floats(decode_rgb(encoded[index], _where(sources, index)).image) if index in with_pixels else None
        out[index] = (height, width, pixels)
    return out


def _where(sources: SourceImages, index: int) -> str:
    """Where source image ``index`` comes from, for error messages."""
    if sources.kind == "image_folder":
        return str(sources.path / sources.ids[index])
    return f"{sources.path} ({sources.config}) id {sources.ids[index]}"


def _header_of_file(path: Path):
    """Size and format of an image file; the whole file is read so a truncated one is caught."""
    return inspect_image(path.read_bytes(), str(path))


# -- the builder -----------------------------------------------------------------------------------------


class OodUnitTests(Builder):
    NAME = "ood_unit_tests"
    VERSION = "1.0.0"
    RELEASE_NOTES = {
        "1.0.0": "Initial release: the 17 NINCO OOD unit tests regenerated from ImageNet val (or any "
        "image folder) with the upstream index selection and per-image parameters seeded by "
        "(seed, test, index)."
    }
    CONFIGS = (
        BuilderConfig(
            "default", "the 17 synthetic OOD unit tests, regenerated from a seed", shard_size=400, row_group_rows=50
        ),
    )
    OPTIONS = {
        "tests": Option("all", help="'all' or a comma-separated subset of the 17 test names"),
        "images_per_test": Option(
            RELEASED_PER_TEST,
            help="source images per test (400 as released; any "
            "other n gives a subset/superset of the released indices)",
        ),
        "smooth_color": Option(
            "code",
            ("code", "paper"),
            help="low_freq_colorrange: 'code' (as the released files: q2.5 -> c, q97.5 -> c+2δ) "
            "or 'paper' (q2.5 -> c-δ, q97.5 -> c+δ)",
        ),
        "source": Option(
            "imagenet_val",
            ("imagenet_val", "image_folder"),
            help="imagenet_val (a built dataset given with --input) or image_folder (--manual-dir)",
        ),
    }
    SEEDED = True
    MANUAL_DOWNLOAD_INSTRUCTIONS = (
        "source=imagenet_val (default): a built imagenet_val dataset, passed with "
        "--input DIR. source=image_folder: any folder of images as --manual-dir."
    )
    HOMEPAGE = "https://github.com/j-cb/NINCO"
    LICENSE = "other"
    CITATION = cite(NINCO, ILSVRC)

    def __init__(self, config: str | None = None, **kwargs):
        super().__init__(config, **kwargs)
        self.tests = selected_tests(self.options["tests"])
        if self.options["images_per_test"] < 1:
            raise ConfigError(f"option images_per_test={self.options['images_per_test']}: expected ≥ 1")

    def features(self):
        from datasets import ClassLabel, Features, Image, Value

        return Features(
            {
                "id": Value("string"),
                "file_name": Value("string"),
                "image": Image(),
                "test": ClassLabel(names=list(UNIT_TESTS)),
                "test_name": Value("string"),
                "source_index": Value("int32"),
                "source_id": Value("string"),
                "width": Value("int32"),
                "height": Value("int32"),
                "file_format": Value("string"),
                "params": Value("string"),
            }
        )

    def protocol(self) -> dict:
        return {
            "ood": {
                "group_column": "test",
                "groups": list(self.tests),
                "unit_tests": True,
                "fail_threshold": 0.10,
                "id_dataset": self.options["source"],
                "fpr_tpr": 0.95,
            },
            "generator": {
                "index_rule": "sort(RandomState(MT19937(SeedSequence(int(''.join(str(ord(c)) for c in "
                "test))))).choice(N, n, replace=False))",
                "per_image_rng": "example_rng(seed, test, index)",
                "seed": self.seed,
                "smooth_color": self.options["smooth_color"],
                "source": self.options["source"],
            },
        }

    def prepare(self, resolver: SourceResolver) -> Prepared:
        if self.options["source"] == "imagenet_val":
            sources, resolved = imagenet_val_sources(resolver)
        else:
            sources, resolved = image_folder_sources(resolver)
        count = self.options["images_per_test"]
        if count > len(sources.ids):
            raise ConfigError(f"option images_per_test={count}: the source has only {len(sources.ids)} images")
        indices = {t: source_indices(t, len(sources.ids), count).tolist() for t in self.tests}
        return Prepared(
            {resolved.name: resolved},
            {"sources": sources, "indices": indices, "digits": max(5, len(str(len(sources.ids) - 1)))},
        )

    def split_keys(self, prepared: Prepared) -> dict[str, list[str]]:
        digits = prepared.data["digits"]
        return {"test": [f"{t}_{i:0{digits}d}" for t in self.tests for i in prepared.data["indices"][t]]}

    def generate(self, prepared: Prepared, shard: Shard) -> Iterator[dict]:
        sources: SourceImages = prepared.data["sources"]
        keys = [_split_key(key) for key in shard.keys]
        pixels_needed = {i for t, i in keys if UNIT_TESTS[t].needs_pixels}
        read = read_sources(sources, sorted({i for _, i in keys}), pixels_needed)
        for key, (test, index) in zip(shard.keys, keys, strict=True):
            height, width, pixels = read[index]
            data, extension, params = generate_image(
                test, index, height, width, pixels, self.seed, self.options["smooth_color"]
            )
            file_name = f"{key}.{extension}"
            yield {
                "id": key,
                "file_name": file_name,
                "image": {"bytes": data, "path": file_name},
                "test": test,
                "test_name": UNIT_TESTS[test].paper_name,
                "source_index": index,
                "source_id": sources.ids[index],
                "width": width,
                "height": height,
                "file_format": extension,
                "params": json.dumps(params, sort_keys=True),
            }

    def extra_files(self, prepared: Prepared) -> dict[str, bytes]:
        """``ood_unit_tests_grid.png``: the first image of every built test, labelled (shown in the card)."""
        first = {t: prepared.data["indices"][t][0] for t in self.tests}
        read = read_sources(
            prepared.data["sources"],
            sorted(set(first.values())),
            {i for t, i in first.items() if UNIT_TESTS[t].needs_pixels},
        )
        examples = []
        for test, index in first.items():
            height, width, pixels = read[index]
            image, _ = render(
                test, height, width, pixels, example_rng(self.seed, test, index), self.options["smooth_color"]
            )
            examples.append((test, to_uint8(image)))
        return {GRID_FILE: example_grid(examples)}

    def card_context(self, prepared: Prepared) -> dict:
        sources: SourceImages = prepared.data["sources"]
        matches = sources.kind == "imagenet_val" and len(sources.ids) == NUM_IMAGENET_VAL
        return {
            "source_description": (
                f"{len(sources.ids):,} {sources.kind} images"
                + (
                    " — the ImageNet-1k validation set, so the source indices are exactly those of the released files"
                    if matches and self.options["images_per_test"] == RELEASED_PER_TEST
                    else ""
                )
            ),
            "tests_built": ", ".join(self.tests),
            "images_per_test": self.options["images_per_test"],
            "smooth_color": self.options["smooth_color"],
        }


def example_grid(examples: list[tuple[str, np.ndarray]], tile: int = 128, columns: int = 6) -> bytes:
    """A PNG grid of example images (test name, uint8 H x W x 3), each fitted into a ``tile`` box with a
    grey frame, its test name and the paper's name underneath (:func:`imagenet_suite.images.grid.captioned_grid`)."""
    from PIL import Image

    from imagenet_suite.images.grid import Tile, captioned_grid

    tiles = [
        Tile(Image.fromarray(pixels), (name, UNIT_TESTS[name].paper_name if name in UNIT_TESTS else ""))
        for name, pixels in examples
    ]
    return captioned_grid(tiles, columns=columns, tile=tile)


def synthetic_photo(height: int = 300, width: int = 400) -> np.ndarray:
    """A deterministic photo-like RGB source (sky, hills, a red ball), float64 in [0, 1], for pictures."""
    import numpy as np

    rows, cols = np.mgrid[0:height, 0:width] / np.array([height, width])[:, None, None]
    image = np.empty((height, width, 3))
    image[...] = np.stack([0.45 + 0.3 * rows, 0.65 + 0.2 * rows, 0.95 - 0.1 * rows], axis=-1)  # sky
    ground = rows > 0.6 + 0.08 * np.sin(7 * cols)
    image[ground] = np.stack([0.2 + 0.1 * cols, 0.55 - 0.2 * rows, 0.15 + 0 * rows], axis=-1)[ground]
    ball = (rows - 0.55) ** 2 * (height / width) ** -2 + (cols - 0.35) ** 2 < 0.012
    image[ball] = [0.85, 0.12, 0.1]
    return image


def write_example_grid(path: str | Path, seed: int = 0, smooth_color: str = "code") -> Path:
    """The documentation picture (``docs/images/ood_unit_tests_grid.png``): every test's first image
    (its first released source index, drawn with ``example_rng(seed, test, index)`` as the builder
    does) made from :func:`synthetic_photo` (PNG)."""
    source = synthetic_photo()
    height, width = source.shape[:2]
    examples = []
    for name in UNIT_TESTS:
        rng = example_rng(seed, name, int(source_indices(name)[0]))
        examples.append((name, to_uint8(render(name, height, width, source, rng, smooth_color)[0])))
    path = Path(path)
    path.write_bytes(example_grid(examples))
    return path


def selected_tests(option: str) -> tuple[str, ...]:
    """The tests an option value names, in label order; ConfigError names unknown ones."""
    if option.strip() == "all":
        return tuple(UNIT_TESTS)
    names = [n.strip() for n in option.split(",") if n.strip()]
    unknown = [n for n in names if n not in UNIT_TESTS]
    if unknown or not names:
        raise ConfigError(
            f"option tests={option!r}: unknown test(s) {unknown}; expected 'all' or a comma-separated "
            f"subset of {list(UNIT_TESTS)}"
        )
    return tuple(t for t in UNIT_TESTS if t in names)


def _split_key(key: str) -> tuple[str, int]:
    test, index = key.rsplit("_", 1)
    return test, int(index)
