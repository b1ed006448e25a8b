"""Common image corruptions (ImageNet-C and ``imagecorruptions``), seeded per image.

One entry point, :func:`corrupt`, applies a named corruption at a severity 1..5 to an RGB image::

    corrupt(image, "motion_blur", 3, rng, flavor="imagecorruptions") -> uint8 [H, W, 3]

* ``image``: ``uint8`` array ``[H, W]``, ``[H, W, 1]`` or ``[H, W, 3]`` (gray is repeated to RGB),
  or a PIL image of any mode (``L``, ``CMYK``, ``P``, ``RGBA``... converted with ``convert("RGB")``,
  as torchvision's and ImageNet-C's loaders do). Height and width must be ≥ 32 px.
* ``rng``: a ``numpy.random.Generator``; every random draw of every corruption comes from it (the
  upstream code draws from NumPy's global state or, for impulse noise, from a fresh unseeded
  generator, so its images cannot be regenerated). Builders pass ``example_rng(seed, corruption,
  image_id)``. The draws each corruption makes are listed in its docstring.
* ``flavor``: ``"imagenet_c"`` follows Hendrycks & Dietterich's ``make_imagenet_c.py`` (written
  for 224x224 center crops); ``"imagecorruptions"`` follows Michaelis et al.'s size-agnostic
  package (Heuillet et al. 2025's vendored copy has the same constants). They differ only where the upstream
  code does: ``elastic_transform`` (ImageNet-C adds a random affine warp and uses other constants),
  ``pixelate`` (BOX vs NEAREST upsampling), ``frost`` (crop vs rescale of the frost picture),
  ``fog`` (256 vs next-power-of-two fractal), ``zoom_blur``/``snow`` (centered vs top-left trim
  of a zoomed layer) and ``snow`` (layer quantized before its blur).

Outputs are computed in floating point and converted like upstream, ``np.uint8(np.clip(...))``
(truncation, not rounding). Severity constants are the upstream ones (:data:`SEVERITY_CONSTANTS`).
The implementation is vectorised where upstream loops (glass-blur swaps, motion-blur shifts,
zoom layers, elastic resampling), with identical arithmetic up to float rounding; known small
differences from the reference code are listed in :data:`KNOWN_DIFFERENCES`.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import cv2
import numpy as np
from PIL import Image
from scipy.ndimage import gaussian_filter

from ..errors import ImagenetSuiteError
from .names import (
    FAMILIES,
    FLAVORS,
    FROST_FILES,
    HEUILLET_COMMON,
    IMAGENET_C,
    IMAGENET_C_EXTRA,
    SEVERITIES,
)

MIN_SIDE = 32  # px, as imagecorruptions requires

# Severity 1..5 constants, verbatim from the upstream code (both flavors share all but elastic).
SEVERITY_CONSTANTS: dict[str, tuple] = {
    "gaussian_noise": (0.08, 0.12, 0.18, 0.26, 0.38),  # noise std on [0, 1]
    "shot_noise": (60, 25, 12, 5, 3),  # Poisson rate per unit intensity
    "impulse_noise": (0.03, 0.06, 0.09, 0.17, 0.27),  # fraction of values set to 0 or 1
    "speckle_noise": (0.15, 0.2, 0.35, 0.45, 0.6),  # multiplicative noise std
    "gaussian_blur": (1, 2, 3, 4, 6),  # sigma, px
    "glass_blur": ((0.7, 1, 2), (0.9, 2, 1), (1, 2, 3), (1.1, 3, 2), (1.5, 4, 2)),  # sigma, max shift px, passes
    "defocus_blur": ((3, 0.1), (4, 0.5), (6, 0.5), (8, 0.5), (10, 0.5)),  # disk radius px, anti-alias sigma
    "motion_blur": ((10, 3), (15, 5), (15, 8), (15, 12), (20, 15)),  # radius px, sigma px
    "zoom_blur": (
        (1, 1.11, 0.01),
        (1, 1.16, 0.01),
        (1, 1.21, 0.02),
        (1, 1.26, 0.02),
        (1, 1.31, 0.03),
    ),  # np.arange args
    "snow": (
        (0.1, 0.3, 3, 0.5, 10, 4, 0.8),
        (0.2, 0.3, 2, 0.5, 12, 4, 0.7),
        (0.55, 0.3, 4, 0.9, 12, 8, 0.7),
        (0.55, 0.3, 4.5, 0.85, 12, 8, 0.65),
        (0.55, 0.3, 2.5, 0.85, 12, 12, 0.55),
    ),
    "frost": ((1, 0.4), (0.8, 0.6), (0.7, 0.7), (0.65, 0.7), (0.6, 0.75)),  # image weight, frost weight
    "fog": ((1.5, 2), (2.0, 2), (2.5, 1.7), (2.5, 1.5), (3.0, 1.4)),  # fog strength, fractal wibble decay
    "brightness": (0.1, 0.2, 0.3, 0.4, 0.5),  # added to HSV value
    "contrast": (0.4, 0.3, 0.2, 0.1, 0.05),  # factor around the per-channel mean
    "elastic_transform": (250 * 0.05, 250 * 0.065, 250 * 0.085, 250 * 0.1, 250 * 0.12),  # alpha (imagecorruptions)
    "pixelate": (0.6, 0.5, 0.4, 0.3, 0.25),  # downscale factor
    "jpeg_compression": (25, 18, 15, 10, 7),  # JPEG quality
    "spatter": (
        (0.65, 0.3, 4, 0.69, 0.6, 0),
        (0.65, 0.3, 3, 0.68, 0.6, 0),
        (0.65, 0.3, 2, 0.68, 0.5, 0),
        (0.65, 0.3, 1, 0.65, 1.5, 1),
        (0.67, 0.4, 1, 0.65, 1.5, 1),
    ),
    "saturate": ((0.3, 0), (0.1, 0), (2, 0), (5, 0.1), (20, 0.2)),  # saturation factor, offset
}
# ImageNet-C's elastic_transform: (alpha, sigma, affine jitter) in px; "244 should have been 224" upstream.
IMAGENET_C_ELASTIC = (
    (244 * 2, 244 * 0.7, 244 * 0.1),
    (244 * 2, 244 * 0.08, 244 * 0.2),
    (244 * 0.05, 244 * 0.01, 244 * 0.02),
    (244 * 0.07, 244 * 0.01, 244 * 0.02),
    (244 * 0.12, 244 * 0.01, 244 * 0.02),
)

KNOWN_DIFFERENCES: dict[str, str] = {
    "motion_blur": "ImageNet-C used ImageMagick's MotionBlurImage (Wand); both flavors use imagecorruptions' "
    "NumPy shift-and-add kernel (same radius/sigma/angle), computed as one filter with "
    "replicated borders; Heuillet et al.'s vendored copy also skips the final clip (no effect: the "
    "blur is a convex combination).",
    "snow": "the snow layer's motion blur is the NumPy kernel above, not ImageMagick (ImageNet-C).",
    "glass_blur": "upstream draws one (dx, dy) pair per pixel inside its loop; here all pairs of a pass are "
    "drawn at once (same distribution, U{-d..d-1} as upstream's randint) and applied in the same "
    "order, as the copy upstream's view-'swap' really performs.",
    "impulse_noise": "skimage's random_noise s&p with the given Generator (upstream calls it unseeded).",
    "frost": "frost pictures are read once per process; upstream draws the picture with randint(5), so "
    "frost6.jpg is never used; kept.",
    "defocus_blur": "the 3 channels are filtered in one OpenCV call (upstream: one per channel); Heuillet et al. "
    "anti-aliases the disk with skimage instead of cv2 (not followed).",
    "zoom_blur": "zoom layers by separable linear interpolation in float32 (scipy.ndimage.zoom order=1 "
    "grid, same coordinates).",
    "elastic_transform": "fields smoothed with OpenCV (same taps and 'reflect' border as skimage), bilinear "
    "resampling with scipy's 'reflect' boundary by index arithmetic in float32 "
    "(map_coordinates order=1).",
    "brightness": "V += c in HSV computed as an RGB scaling (identical HSV round trip up to float rounding).",
    "all": "float32 vs float64 arithmetic and truncation to uint8 give rare ±1 level differences.",
}


class CorruptionError(ImagenetSuiteError, ValueError):
    """An unknown corruption or flavor, a severity outside 1..5, or an image that cannot be corrupted."""


@dataclass(frozen=True)
class Corruption:
    """A corruption: its family, whether it draws random numbers, and its implementation.

    ``function(x, constant, rng, context)`` gets ``x`` as uint8 ``[H, W, 3]`` and returns an array
    on the 0..255 scale (float, converted by :func:`corrupt`) or uint8.
    """

    name: str
    family: str
    stochastic: bool
    function: Callable[..., np.ndarray]


@dataclass(frozen=True)
class Context:
    """What a corruption may need beyond the image: the flavor and the frost pictures (RGB uint8)."""

    flavor: str = "imagecorruptions"
    frost: tuple[np.ndarray, ...] = ()


# ----------------------------------------------------------------------------- input handling


def to_rgb_array(image) -> np.ndarray:
    """``uint8 [H, W, 3]`` from a PIL image (any mode, via ``convert("RGB")``) or a uint8 array
    ``[H, W]``, ``[H, W, 1]`` or ``[H, W, 3]``; CorruptionError for anything else."""
    if isinstance(image, Image.Image):
        return np.asarray(image if image.mode == "RGB" else image.convert("RGB"))
    array = np.asarray(image)
    if array.dtype != np.uint8:
        raise CorruptionError(f"image dtype is {array.dtype}; expected uint8 (0..255)")
    if array.ndim == 3 and array.shape[2] == 1:
        array = array[..., 0]
    if array.ndim == 2:
        return np.repeat(array[..., None], 3, axis=2)
    if array.ndim != 3 or array.shape[2] != 3:
        raise CorruptionError(
            f"image shape is {array.shape}; expected [H, W], [H, W, 1] or [H, W, 3] "
            "(convert CMYK/RGBA images with PIL's convert('RGB') first)"
        )
    return array


def check_request(name: str, severity: int, flavor: str = "imagecorruptions") -> Corruption:
    """The registered corruption ``name``; CorruptionError naming the bad argument otherwise."""
    if name not in CORRUPTIONS:
        raise CorruptionError(f"unknown corruption {name!r}; known: {sorted(CORRUPTIONS)}")
    if isinstance(severity, bool) or not isinstance(severity, (int, np.integer)) or severity not in SEVERITIES:
        raise CorruptionError(f"severity {severity!r} of {name}: expected an integer in 1..5")
    if flavor not in FLAVORS:
        raise CorruptionError(f"flavor {flavor!r}: expected one of {FLAVORS}")
    return CORRUPTIONS[name]


def constant(name: str, severity: int, flavor: str = "imagecorruptions"):
    """The upstream constant(s) of ``name`` at ``severity`` for ``flavor``."""
    check_request(name, severity, flavor)
    if name == "elastic_transform" and flavor == "imagenet_c":
        return IMAGENET_C_ELASTIC[severity - 1]
    return SEVERITY_CONSTANTS[name][severity - 1]


def corrupt(
    image,
    name: str,
    severity: int,
    rng: np.random.Generator,
    flavor: str = "imagecorruptions",
    frost: Sequence[np.ndarray] = (),
) -> np.ndarray:
    """``name`` at ``severity`` (1..5) applied to ``image``; uint8 ``[H, W, 3]``, same H and W.

    ``frost`` (only for ``frost``): the frost pictures as RGB uint8 arrays, in upstream order
    (``frost1.png`` ... ``frost6.jpg``; see :func:`load_frost_pictures`).
    """
    spec = check_request(name, severity, flavor)
    x = to_rgb_array(image)
    if min(x.shape[:2]) < MIN_SIDE:
        raise CorruptionError(f"image is {x.shape[1]}x{x.shape[0]} px; corruptions need width and height ≥ {MIN_SIDE}")
    if name == "frost" and len(frost) < 5:
        raise CorruptionError(
            "frost needs the 6 frost pictures of imagecorruptions/ImageNet-C (frost1.png ... "
            f"frost6.jpg), got {len(frost)}"
        )
    out = spec.function(x, constant(name, severity, flavor), rng, Context(flavor, tuple(frost)))
    return out if out.dtype == np.uint8 else np.uint8(np.clip(out, 0, 255))


def block_assignment(count: int, corruptions: Sequence[str]) -> list[str]:
    """Heuillet et al. 2025's portfolio: image ``i`` of ``count`` gets ``corruptions[(i // step) % K]`` with
    ``step = max(1, count // K)`` (contiguous blocks; with 1,000 images and 11 corruptions the
    first gets 100 images, the others 90)."""
    if not corruptions:
        raise CorruptionError("the portfolio needs at least one corruption")
    step = max(1, count // len(corruptions))
    return [corruptions[(i // step) % len(corruptions)] for i in range(count)]


def resize_short_center_crop(image: Image.Image, short: int = 256, crop: int = 224) -> Image.Image:
    """torchvision ``Resize(short)`` + ``CenterCrop(crop)`` on a PIL image (bilinear): the 224x224
    crops ImageNet-C corrupts."""
    width, height = image.size
    if width <= height:
        size = (short, int(short * height / width))
    else:
        size = (int(short * width / height), short)
    image = image.resize(size, Image.BILINEAR)
    top, left = int(round((size[1] - crop) / 2.0)), int(round((size[0] - crop) / 2.0))
    return image.crop((left, top, left + crop, top + crop))


@lru_cache(maxsize=16)
def _read_picture(path: str) -> np.ndarray:
    picture = cv2.imread(path, cv2.IMREAD_COLOR)
    if picture is None:
        raise CorruptionError(f"{path}: not a readable image (expected a frost picture)")
    return np.ascontiguousarray(picture[..., ::-1])


def load_frost_pictures(paths: Sequence[str | Path]) -> tuple[np.ndarray, ...]:
    """The frost pictures as RGB uint8 arrays (read with OpenCV like upstream, cached per process)."""
    return tuple(_read_picture(str(path)) for path in paths)


# ----------------------------------------------------------------------------- shared helpers


def _unit(x: np.ndarray, dtype=np.float64) -> np.ndarray:
    return x.astype(dtype) / dtype(255.0)


def _gaussian_rgb(x: np.ndarray, sigma: float) -> np.ndarray:
    """skimage ``gaussian(x, sigma, channel_axis=-1)``: mode 'nearest', truncate 4, per channel."""
    taps = _gaussian_taps(sigma, 4.0)
    return cv2.sepFilter2D(x, cv2.CV_64F, taps, taps, borderType=cv2.BORDER_REPLICATE)


def _zoom_indices(n_in: int, factor: float, start: int, keep: int, centered: bool):
    """Rows of ``scipy.ndimage.zoom(order=1)`` of the ``n_in`` samples at ``start`` by ``factor``,
    trimmed to ``keep`` outputs (top-left, or centered for ImageNet-C): ``(i0, i1, t)``."""
    n_out = int(round(n_in * factor))
    scale = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    trim = (n_out - keep) // 2 if centered else 0
    coord = np.arange(trim, trim + min(keep, n_out)) * scale
    i0 = np.minimum(np.floor(coord).astype(np.intp), n_in - 1)
    t = (coord - i0).astype(np.float32)
    return start + i0, start + np.minimum(i0 + 1, n_in - 1), t


def clipped_zoom(x: np.ndarray, factor: float, centered: bool) -> np.ndarray:
    """Zoom into the center of ``x`` (``[H, W]`` or ``[H, W, C]``) by ``factor`` and crop back to
    ``H x W`` (upstream ``clipped_zoom``: crop ``ceil(H / factor)`` rows, zoom, trim)."""
    height, width = x.shape[:2]
    crop_h, crop_w = int(np.ceil(height / factor)), int(np.ceil(width / factor))
    r0, r1, rt = _zoom_indices(crop_h, factor, (height - crop_h) // 2, height, centered)
    c0, c1, ct = _zoom_indices(crop_w, factor, (width - crop_w) // 2, width, centered)
    shape = (-1, 1) + (1,) * (x.ndim - 2)
    rows = x[r0] * (1 - rt).reshape(shape) + x[r1] * rt.reshape(shape)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return rows[:, c0] * (1 - ct).reshape(shape) + rows[:, c1] * ct.reshape(shape)


def motion_kernel(radius: int, sigma: float, angle: float, shape: tuple[int, int]) -> np.ndarray:
    """The correlation kernel equal to upstream ``_motion_blur``'s shift-and-add: weight
    ``exp(-i²/2σ²)`` (normalized over ``2·radius+1`` taps) at offset ``-round(i·(sin, cos)(angle))``,
    stopping at the first offset that leaves an image of ``shape``."""
    width = 2 * radius + 1
    weights = np.exp(-(np.arange(width) ** 2) / (2 * sigma**2))
    weights /= weights.sum()
    point = (width * np.sin(np.deg2rad(angle)), width * np.cos(np.deg2rad(angle)))
    hypot = math.hypot(*point)
    taps = []
    for i in range(width):
        dy, dx = -math.ceil(i * point[0] / hypot - 0.5), -math.ceil(i * point[1] / hypot - 0.5)
        if abs(dy) >= shape[0] or abs(dx) >= shape[1]:
            break
        taps.append((dy, dx, weights[i]))
    reach = max(max(abs(dy), abs(dx)) for dy, dx, _ in taps)
    kernel = np.zeros((2 * reach + 1, 2 * reach + 1), np.float32)
    for dy, dx, weight in taps:
        kernel[reach - dy, reach - dx] += weight
    return kernel


def _motion_blur(x: np.ndarray, radius: int, sigma: float, angle: float) -> np.ndarray:
    kernel = motion_kernel(radius, sigma, angle, x.shape[:2])
    return cv2.filter2D(x.astype(np.float32), -1, kernel, borderType=cv2.BORDER_REPLICATE)


def _reflect_index(index: np.ndarray, size: int) -> np.ndarray:
    """scipy's 'reflect' (half-sample symmetric) extension of integer indices."""
    index = np.mod(index, 2 * size)
    return np.where(index >= size, 2 * size - 1 - index, index)


def bilinear_reflect(image: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``map_coordinates(image[..., c], (rows, cols), order=1, mode='reflect')`` for every channel
    (``image`` [H, W, C]; ``rows``/``cols`` [H', W'] float coordinates; result in ``image``'s dtype)."""
    height, width, channels = image.shape
    r0, c0 = np.floor(rows), np.floor(cols)
    tr = (rows - r0).astype(image.dtype).reshape(-1, 1)
    tc = (cols - c0).astype(image.dtype).reshape(-1, 1)
    r0, c0 = r0.astype(np.intp).ravel(), c0.astype(np.intp).ravel()
    ra, rb = _reflect_index(r0, height) * width, _reflect_index(r0 + 1, height) * width
    ca, cb = _reflect_index(c0, width), _reflect_index(c0 + 1, width)
    flat = image.reshape(-1, channels)
    top = flat.take(ra + ca, axis=0) * (1 - tc) + flat.take(ra + cb, axis=0) * tc
    bottom = flat.take(rb + ca, axis=0) * (1 - tc) + flat.take(rb + cb, axis=0) * tc
    return (top * (1 - tr) + bottom * tr).reshape(*rows.shape, channels)


def plasma_fractal(size: int, decay: float, rng: np.random.Generator) -> np.ndarray:
    """Diamond-square height map in [0, 1], ``size`` a power of two (upstream ``plasma_fractal``).

    Draws: per step, ``uniform(-w, w)`` for the square centers, then the two diamond sets."""
    grid = np.zeros((size, size))
    step, wibble = size, 100.0

    def wibbled(values):
        return values / 4 + wibble * rng.uniform(-wibble, wibble, values.shape)

    while step >= 2:
        half = step // 2
        corners = grid[0:size:step, 0:size:step]
        squares = corners + np.roll(corners, -1, axis=0)
        squares += np.roll(squares, -1, axis=1)
        grid[half:size:step, half:size:step] = wibbled(squares)
        centers = grid[half:size:step, half:size:step]
        corners = grid[0:size:step, 0:size:step]
        grid[0:size:step, half:size:step] = wibbled(
            (centers + np.roll(centers, 1, axis=0)) + (corners + np.roll(corners, -1, axis=1))
        )
        grid[half:size:step, 0:size:step] = wibbled(
            (centers + np.roll(centers, 1, axis=1)) + (corners + np.roll(corners, -1, axis=0))
        )
        step //= 2
        wibble /= decay
    grid -= grid.min()
    return grid / grid.max()


def _next_power_of_2(value: int) -> int:
    return 1 if value == 0 else 2 ** (value - 1).bit_length()


# ----------------------------------------------------------------------------- noise


def gaussian_noise(x, c, rng, ctx):
    """``clip(x + N(0, c²))``. Draws: ``normal(scale=c, size=x.shape)``."""
    return np.clip(_unit(x) + rng.normal(size=x.shape, scale=c), 0, 1) * 255


def shot_noise(x, c, rng, ctx):
    """``clip(Poisson(x·c) / c)``. Draws: ``poisson(x·c)``."""
    return np.clip(rng.poisson(_unit(x) * c) / float(c), 0, 1) * 255


def impulse_noise(x, c, rng, ctx):
    """skimage ``random_noise(mode='s&p', amount=c)``: a fraction ``c`` of the values (per channel)
    become 0 or 1 with equal odds. Draws: ``random(x.shape)`` (flipped), ``random(x.shape)`` (salt)."""
    flipped = rng.random(x.shape) <= c
    salted = rng.random(x.shape) <= 0.5
    out = _unit(x)
    out[flipped & salted] = 1.0
    out[flipped & ~salted] = 0.0
    return out * 255


def speckle_noise(x, c, rng, ctx):
    """``clip(x + x·N(0, c²))``. Draws: ``normal(scale=c, size=x.shape)``."""
    unit = _unit(x)
    return np.clip(unit + unit * rng.normal(size=x.shape, scale=c), 0, 1) * 255


# ----------------------------------------------------------------------------- blur


def gaussian_blur(x, c, rng, ctx):
    """Gaussian blur, sigma ``c`` px (skimage: nearest border, truncate 4). No draws."""
    return np.clip(_gaussian_rgb(_unit(x), c), 0, 1) * 255


def glass_blur(x, c, rng, ctx):
    """Blur, locally shuffle pixels ``c[2]`` times, blur again (sigma ``c[0]``, shift < ``c[1]``).

    Each pass visits rows ``H-d .. d+1`` and columns ``W-d .. d+1`` (descending) and copies into the
    pixel the current value of the one at ``(dy, dx)``, both in ``-d .. d-1`` (upstream
    ``randint(-d, d)``). Upstream writes a swap, ``x[h, w], x[h', w'] = x[h', w'], x[h, w]``, but on
    NumPy pixel views that copies ``x[h', w']`` into ``x[h, w]`` and leaves ``x[h', w']`` as it was;
    that behaviour is what ImageNet-C and imagecorruptions images have, so it is reproduced.
    Draws: per pass, ``integers(-d, d, size=(n, 2))`` = (dx, dy) per visited pixel."""
    sigma, delta, passes = c
    height, width = x.shape[:2]
    blurred = np.uint8(_gaussian_rgb(_unit(x), sigma) * 255)
    rows = np.arange(height - delta, delta, -1)
    cols = np.arange(width - delta, delta, -1)
    here = (rows[:, None] * width + cols[None, :]).ravel()
    source = list(range(height * width))
    for _ in range(passes):
        moves = rng.integers(-delta, delta, size=(len(here), 2))
        there = (here + moves[:, 1] * width + moves[:, 0]).tolist()
        for p, q in zip(here.tolist(), there, strict=True):
            source[p] = source[q]
    shuffled = blurred.reshape(-1, 3)[np.asarray(source)].reshape(x.shape)
    return np.clip(_gaussian_rgb(_unit(shuffled), sigma), 0, 1) * 255


def disk_kernel(radius: float, alias_blur: float) -> np.ndarray:
    """Upstream ``disk``: a normalized disk on a 17x17 grid (or 2r+1 when r > 8), anti-aliased by a
    3x3 (5x5) Gaussian of sigma ``alias_blur``."""
    support = np.arange(-8, 9) if radius <= 8 else np.arange(-radius, radius + 1)
    size = (3, 3) if radius <= 8 else (5, 5)
    xx, yy = np.meshgrid(support, support)
    disk = np.array(xx**2 + yy**2 <= radius**2, dtype=np.float32)
    disk /= disk.sum()
    return cv2.GaussianBlur(disk, ksize=size, sigmaX=alias_blur)


def defocus_blur(x, c, rng, ctx):
    """Convolution with an anti-aliased disk of radius ``c[0]`` px (border reflect-101). No draws."""
    out = cv2.filter2D(_unit(x), -1, disk_kernel(*c))
    return np.clip(out, 0, 1) * 255


def motion_blur(x, c, rng, ctx):
    """Linear motion blur, radius ``c[0]`` px, sigma ``c[1]`` px. Draws: ``uniform(-45, 45)`` (angle, deg)."""
    angle = rng.uniform(-45, 45)
    return np.clip(_motion_blur(x, c[0], c[1], angle), 0, 255)


def zoom_blur(x, c, rng, ctx):
    """Mean of ``x`` and its center zooms by ``np.arange(*c)`` (e.g. 1.00..1.20 step .02). No draws."""
    unit = _unit(x, np.float32)
    factors = np.arange(*c)
    layers = np.zeros_like(unit)
    for factor in factors:
        layers += clipped_zoom(unit, factor, centered=ctx.flavor == "imagenet_c")
    return np.clip((unit + layers) / (len(factors) + 1), 0, 1) * 255


# ----------------------------------------------------------------------------- weather


def snow(x, c, rng, ctx):
    """Snow flakes: a zoomed, thresholded normal layer, motion-blurred, added twice (and rotated
    180°) onto a brightened image. Draws: ``normal(c[0], c[1], (H, W))``, ``uniform(-135, -45)``."""
    unit = _unit(x, np.float32)
    layer = rng.normal(size=x.shape[:2], loc=c[0], scale=c[1])
    layer = clipped_zoom(layer, c[2], centered=ctx.flavor == "imagenet_c")
    layer[layer < c[3]] = 0
    layer = np.clip(layer, 0, 1)
    if ctx.flavor == "imagenet_c":  # ImageNet-C blurs a uint8 PNG of the layer
        layer = (layer * 255).astype(np.uint8).astype(np.float32) / 255
    layer = _motion_blur(layer, c[4], c[5], rng.uniform(-135, -45))
    layer = (np.round(layer * 255).astype(np.uint8) / 255.0)[..., None]
    gray = cv2.cvtColor(unit, cv2.COLOR_RGB2GRAY)[..., None]
    unit = c[6] * unit + (1 - c[6]) * np.maximum(unit, gray * 1.5 + 0.5)
    return np.clip(unit + layer + np.rot90(layer, k=2), 0, 1) * 255


def frost(x, c, rng, ctx):
    """``c[0]·x + c[1]·frost`` with a random crop of a frost picture (ImageNet-C: crop as is;
    imagecorruptions: rescaled to cover the image, x1.1). Draws: ``integers(5)`` (picture; upstream
    never picks the 6th), then ``integers(0, h - H)``, ``integers(0, w - W)`` (crop corner)."""
    picture = ctx.frost[int(rng.integers(5))]
    height, width = x.shape[:2]
    if ctx.flavor == "imagecorruptions" or picture.shape[0] <= height or picture.shape[1] <= width:
        picture = _rescaled_frost(picture, height, width)
    top = int(rng.integers(0, picture.shape[0] - height))
    left = int(rng.integers(0, picture.shape[1] - width))
    crop = picture[top : top + height, left : left + width]
    return np.clip(c[0] * x + c[1] * crop.astype(np.float64), 0, 255)


def _rescaled_frost(picture: np.ndarray, height: int, width: int) -> np.ndarray:
    """imagecorruptions: scale the picture up to cover the image (larger factor), times 1.1, bicubic."""
    scale = max(1.0, height / picture.shape[0], width / picture.shape[1]) * 1.1
    size = (int(np.ceil(picture.shape[1] * scale)), int(np.ceil(picture.shape[0] * scale)))
    return cv2.resize(picture, dsize=size, interpolation=cv2.INTER_CUBIC)


def fog(x, c, rng, ctx):
    """``x + c[0]·fractal``, renormalized by the image maximum. Draws: see :func:`plasma_fractal`
    (size 256 for ImageNet-C, else the next power of two of the longest side)."""
    height, width = x.shape[:2]
    size = _next_power_of_2(max(height, width, 3))
    if ctx.flavor == "imagenet_c":
        size = max(256, size)
    unit = _unit(x)
    top = unit.max()
    unit += c[0] * plasma_fractal(size, c[1], rng)[:height, :width][..., None]
    return np.clip(unit * top / (top + c[0]), 0, 1) * 255


def brightness(x, c, rng, ctx):
    """HSV value + ``c`` (clipped to 1), hue and saturation kept. No draws.

    With V = max(R, G, B) the HSV round trip is a scaling of RGB by ``V' / V`` (gray ``V'`` for black)."""
    unit = _unit(x)
    value = unit.max(axis=2, keepdims=True)
    new_value = np.minimum(value + c, 1.0)
    scale = np.divide(new_value, value, out=np.zeros_like(value), where=value > 0)
    out = np.where((value > 0) & (unit < value), unit * scale, new_value)  # the max channel is V' exactly
    return np.clip(out, 0, 1) * 255


def spatter(x, c, rng, ctx):
    """Water (c[5] = 0) or mud (c[5] = 1) spatter (upstream ``spatter``). Draws: ``normal(c[0], c[1], (H, W))``."""
    unit = _unit(x, np.float32)
    liquid = gaussian_filter(rng.normal(size=x.shape[:2], loc=c[0], scale=c[1]), c[2], mode="nearest", truncate=4.0)
    liquid[liquid < c[3]] = 0
    if c[5] == 0:
        return _water(unit, liquid, c[4])
    mask = gaussian_filter(np.where(liquid > c[3], 1.0, 0.0).astype(np.float32), c[4], mode="nearest", truncate=4.0)
    mask[mask < 0.8] = 0
    mud = np.array([63, 42, 20], np.float32) / 255 * mask[..., None]
    return np.clip(unit * (1 - mask[..., None]) + mud, 0, 1) * 255


def _water(unit: np.ndarray, liquid: np.ndarray, strength: float) -> np.ndarray:
    layer = (liquid * 255).astype(np.uint8)
    dist = cv2.distanceTransform(255 - cv2.Canny(layer, 50, 150), cv2.DIST_L2, 5)
    _, dist = cv2.threshold(dist, 20, 20, cv2.THRESH_TRUNC)
    dist = cv2.equalizeHist(cv2.blur(dist, (3, 3)).astype(np.uint8))
    dist = cv2.filter2D(dist, cv2.CV_8U, np.array([[-2, -1, 0], [-1, 1, 1], [0, 1, 2]]))
    dist = cv2.blur(dist, (3, 3)).astype(np.float32)
    mask = cv2.cvtColor(layer * dist, cv2.COLOR_GRAY2BGRA)
    mask /= np.max(mask, axis=(0, 1))
    mask *= strength
    color = np.concatenate([np.full_like(mask[..., :1], v / 255.0) for v in (175, 238, 238)], axis=2)
    color = cv2.cvtColor(color, cv2.COLOR_BGR2BGRA)
    out = cv2.cvtColor(np.clip(cv2.cvtColor(unit, cv2.COLOR_BGR2BGRA) + mask * color, 0, 1), cv2.COLOR_BGRA2BGR)
    return out * 255


# ----------------------------------------------------------------------------- digital


def contrast(x, c, rng, ctx):
    """``(x - mean) · c + mean`` with per-channel means. No draws."""
    unit = _unit(x)
    means = unit.mean(axis=(0, 1), keepdims=True)
    return np.clip((unit - means) * c + means, 0, 1) * 255


def saturate(x, c, rng, ctx):
    """HSV saturation ``· c[0] + c[1]`` (skimage HSV). No draws."""
    from skimage.color import hsv2rgb, rgb2hsv

    hsv = rgb2hsv(_unit(x))
    hsv[..., 1] = np.clip(hsv[..., 1] * c[0] + c[1], 0, 1)
    return np.clip(hsv2rgb(hsv), 0, 1) * 255


def elastic_transform(x, c, rng, ctx):
    """Elastic warp: smoothed uniform displacement fields, bilinear resampling with reflection.

    imagecorruptions: alpha ``c``, sigma 1 % of (H, W), fields U(±0.5 % of H). ImageNet-C: first a
    random affine warp (corners jittered by U(±c[2]) px), then fields U(±1) smoothed by sigma ``c[1]``
    px and scaled by ``c[0]``. Draws: [ImageNet-C: ``uniform(-c2, c2, (3, 2))``], field dx, field dy."""
    unit = _unit(x, np.float32)
    height, width = x.shape[:2]
    if ctx.flavor == "imagenet_c":
        unit = _random_affine(unit, c[2], rng)
        alpha, sigma, limit = c[0], c[1], 1.0
    else:
        alpha, sigma, limit = c, np.array([height, width]) * 0.01, height * 0.005
    dx = (_smooth_field(rng.uniform(-limit, limit, (height, width)), sigma) * alpha).astype(np.float32)
    dy = (_smooth_field(rng.uniform(-limit, limit, (height, width)), sigma) * alpha).astype(np.float32)
    grid_y, grid_x = np.meshgrid(np.arange(height, dtype=np.float64), np.arange(width, dtype=np.float64), indexing="ij")
    out = bilinear_reflect(unit, grid_y + dy, grid_x + dx)
    return np.clip(out, 0, 1) * 255


def _smooth_field(field: np.ndarray, sigma) -> np.ndarray:
    """skimage ``gaussian(field, sigma, mode='reflect', truncate=3)`` (scipy's half-sample 'reflect'
    is OpenCV's BORDER_REFLECT; same taps), any kernel size."""
    sigma_y, sigma_x = (sigma, sigma) if np.isscalar(sigma) else sigma
    taps = [_gaussian_taps(float(s), 3.0) for s in (sigma_x, sigma_y)]
    return cv2.sepFilter2D(field, cv2.CV_64F, taps[0], taps[1], borderType=cv2.BORDER_REFLECT)


def _gaussian_taps(sigma: float, truncate: float) -> np.ndarray:
    radius = int(truncate * sigma + 0.5)
    taps = np.exp(-0.5 * (np.arange(-radius, radius + 1) / sigma) ** 2)
    return taps / taps.sum()


def _random_affine(unit: np.ndarray, jitter: float, rng: np.random.Generator) -> np.ndarray:
    shape = np.float32(unit.shape[:2])
    center, square = shape // 2, min(unit.shape[:2]) // 3
    source = np.float32([center + square, [center[0] + square, center[1] - square], center - square])
    target = source + rng.uniform(-jitter, jitter, size=source.shape).astype(np.float32)
    matrix = cv2.getAffineTransform(source, target)
    return cv2.warpAffine(unit, matrix, unit.shape[1::-1], borderMode=cv2.BORDER_REFLECT_101)


def pixelate(x, c, rng, ctx):
    """Downscale by ``c`` with a box filter, upscale back (NEAREST; BOX for ImageNet-C). No draws."""
    image = Image.fromarray(x)
    height, width = x.shape[:2]
    small = image.resize((int(width * c), int(height * c)), Image.BOX)
    upsample = Image.BOX if ctx.flavor == "imagenet_c" else Image.NEAREST
    return np.asarray(small.resize((width, height), upsample))


def jpeg_compression(x, c, rng, ctx):
    """JPEG round trip at quality ``c`` (PIL). No draws."""
    buffer = io.BytesIO()
    Image.fromarray(x).save(buffer, "JPEG", quality=c)
    with Image.open(buffer) as image:
        return np.asarray(image.convert("RGB"))


def _family(name: str) -> str:
    return next(family for family, names in FAMILIES.items() if name in names)


_STOCHASTIC = {
    "gaussian_noise",
    "shot_noise",
    "impulse_noise",
    "speckle_noise",
    "glass_blur",
    "motion_blur",
    "snow",
    "frost",
    "fog",
    "elastic_transform",
    "spatter",
}
CORRUPTIONS: dict[str, Corruption] = {
    name: Corruption(name, _family(name), name in _STOCHASTIC, globals()[name])
    for name in IMAGENET_C + IMAGENET_C_EXTRA
}


__all__ = [
    "CORRUPTIONS",
    "FAMILIES",
    "FLAVORS",
    "FROST_FILES",
    "HEUILLET_COMMON",
    "IMAGENET_C",
    "IMAGENET_C_EXTRA",
    "KNOWN_DIFFERENCES",
    "SEVERITIES",
    "SEVERITY_CONSTANTS",
    "Corruption",
    "CorruptionError",
    "block_assignment",
    "clipped_zoom",
    "constant",
    "corrupt",
    "disk_kernel",
    "load_frost_pictures",
    "motion_kernel",
    "plasma_fractal",
    "resize_short_center_crop",
    "to_rgb_array",
]
