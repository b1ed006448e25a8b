"""Benchmark: OOD unit-test regeneration rate, imagenet-suite vs the NINCO authors' way, same run, same images.

    uv run --frozen python benchmarks/bench_ood_unit_tests.py              # 20 images per test (340 each way)
    uv run --frozen python benchmarks/bench_ood_unit_tests.py --per-test 3 # quick

Source images are synthetic photo-like JPEGs of typical ImageNet-val sizes (500 x 375, 375 x 500,
500 x 333, 500 x 500), encoded once; both sides turn the same encoded source into the same kind of
output file (PNG for even, JPEG for odd indices) for every one of the 17 tests.

* **authors' way** (j-cb/NINCO ``create_unit_test_data.ipynb`` + ``noise_functions.py``, re-implemented
  here faithfully): the torchvision dataset decodes the source image (``Image.open().convert('RGB')``)
  for every test, ``np.array(img) / 255``, the recipe with numpy's global RNG and
  ``skimage.filters.gaussian(..., channel_axis=2, mode='wrap')``, ``clip``, ``Image.fromarray((x * 255)
  .astype('uint8'))`` and ``save`` with PIL's defaults (PNG zlib level 6, JPEG quality 75).
* **imagenet-suite**: :func:`imagenet_suite.builders.ood_unit_tests.generate_image` — per-image seeded
  RNG, the source decoded only for the two pixel-permutation tests (the others need only its size,
  which the built imagenet_val dataset stores), FFT Gaussian for σ ≥ 6, PNG zlib level 1.

Rates are images per second of one process (the builder adds ``--num-proc`` workers on top); the
two sides alternate image by image so both see the same machine load. Both sides are checked to
produce images of the source size in the right format.
"""

from __future__ import annotations

import argparse
import io
import json
import time

import numpy as np
from PIL import Image

from imagenet_suite.builders import ood_unit_tests as out
from imagenet_suite.images.codec import decode_rgb, rgb_floats

SIZES = [(375, 500), (500, 375), (333, 500), (500, 500)]


def sources(count: int) -> list[bytes]:
    """Photo-like JPEG sources (quality 90) of ImageNet-val sizes."""
    photo = out.synthetic_photo(500, 500)
    rng = np.random.default_rng(0)
    encoded = []
    for k in range(count):
        height, width = SIZES[k % len(SIZES)]
        pixels = np.clip(photo[:height, :width] + rng.normal(0, 0.03, (height, width, 3)), 0, 1)
        buffer = io.BytesIO()
        Image.fromarray(out.to_uint8(pixels)).save(buffer, format="JPEG", quality=90)
        encoded.append(buffer.getvalue())
    return encoded


# -- the authors' way ------------------------------------------------------------------------------------


def upstream_image(test: str, source: bytes, index: int) -> bytes:
    """One unit-test file exactly as create_unit_test_data.ipynb makes it (global np.random, skimage)."""
    import skimage.filters

    image = np.array(Image.open(io.BytesIO(source)).convert("RGB")) / 255  # torchvision loader + noise_functions
    shape = image.shape

    def gauss(x, sigma):
        sigma = sigma + np.random.random_sample() * 0  # filter_gauss draws random_sample() even for a fixed sigma
        return skimage.filters.gaussian(x, sigma=sigma, channel_axis=2, mode="wrap")

    def stripes(orientation, colours):
        img = image * 0
        n = len(colours)
        size = (shape[0] if orientation == "horizontal" else shape[1]) // n
        for i, c in enumerate(colours):
            if orientation == "horizontal":
                img[i * size : (i + 1) * size] += c
            else:
                img[:, i * size : (i + 1) * size] += c
        if orientation == "horizontal":
            img[(i + 1) * size :] += c
        else:
            img[:, (i + 1) * size :] += c
        return img

    def permuted():
        flat = image.reshape((-1, shape[-1])).copy()
        np.random.shuffle(flat)
        return flat.reshape(shape)

    if test == "uni":
        x = np.random.uniform(0.0, 1.0, size=shape)
    elif test == "Gaussian":
        x = np.random.choice([0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5]) * np.random.randn(*shape) + 0.5
    elif test == "Rademacher":
        x = np.random.random(shape) > 0.5
    elif test == "pixel_perm":
        x = permuted()
    elif test in ("black", "white"):
        x = image * 0 + (0.0 if test == "black" else 1.0)
    elif test == "grey":
        x = image * 0 + np.random.uniform(0, 1, size=(1,))
    elif test == "monochrome":
        x = image * 0 + np.random.uniform(0, 1, size=(3,))
    elif test in ("tricolour", "tricolour_primary"):
        orientation = ["horizontal", "vertical"][np.random.choice([0, 1])]
        colours = np.random.binomial(1, 0.5, (3, 3)) if test == "tricolour_primary" else np.random.uniform(0, 1, (3, 3))
        x = stripes(orientation, colours)
    elif test in ("horizontal_stripes", "vertical_stripes"):
        n = np.random.choice([4, 5, 7, 10, 15, 20])
        x = stripes(test.split("_")[0], np.random.uniform(0, 1, (n, 3)))
    elif test in ("low_freq", "low_freq_channelfullscale", "low_freq_colorrange"):
        sigma = np.random.choice([10, 15, 25, 40, 60, 85])
        if test == "low_freq_colorrange":
            centre, deviation = np.random.uniform(0, 1, (3,)), np.random.uniform(0.1, 0.3)
        g = gauss(np.random.uniform(0.0, 1.0, size=shape), sigma)
        if test == "low_freq":
            g0 = g - g.min()
            x = g0 / g0.max()
        elif test == "low_freq_channelfullscale":
            g0 = g - np.amin(g, axis=(0, 1))
            x = g0 / np.amax(g0, axis=(0, 1))
        else:
            g0 = g - np.quantile(g, 0.025, axis=(0, 1))
            x = np.clip(2 * (g0 / np.quantile(g0, 0.975, axis=(0, 1))) * deviation + centre, 0, 1)
    elif test == "low_freq_pixel_perm":
        sigma = np.random.choice([1, 1.5, 2, 3, 4, 6, 8])
        x = gauss(permuted(), sigma)
    elif test == "blobs":
        sigma = np.random.choice([1.5, 2, 2.5, 3, 3.5, 4])
        g = gauss(np.float32(np.random.binomial(n=1, p=0.7, size=shape)), sigma)
        g[g < 0.75] = 0.0
        g[g > 1.0] = 1.0
        x = g
    else:
        raise KeyError(test)
    x = x.clip(0, 1)
    buffer = io.BytesIO()
    Image.fromarray((x * 255).astype("uint8"), mode="RGB").save(buffer, format="PNG" if index % 2 == 0 else "JPEG")
    return buffer.getvalue()


# -- imagenet-suite ----------------------------------------------------------------------------------------


def suite_image(test: str, source: bytes, index: int, size: tuple[int, int]) -> bytes:
    """What the builder does per row: pixels only for the permutation tests, else the stored size."""
    pixels = rgb_floats(decode_rgb(source, test).image) if out.UNIT_TESTS[test].needs_pixels else None
    return out.generate_image(test, index, size[0], size[1], pixels, seed=0)[0]


def run(per_test: int) -> dict:
    encoded = sources(per_test)
    sizes = [Image.open(io.BytesIO(data)).size[::-1] for data in encoded]
    work = [(test, k) for test in out.UNIT_TESTS for k in range(per_test)]
    np.random.seed(None)  # upstream: the global RNG, unseeded
    warm = io.BytesIO()
    Image.fromarray(np.zeros((16, 16, 3), dtype=np.uint8)).save(warm, format="JPEG")
    for test in out.UNIT_TESTS:  # imports (skimage, scipy.fft) and caches outside the timed loop, both sides
        upstream_image(test, warm.getvalue(), 0)
        suite_image(test, warm.getvalue(), 0, (16, 16))
    makers = {
        "authors": lambda t, k: upstream_image(t, encoded[k], 1000 + k),
        "imagenet_suite": lambda t, k: suite_image(t, encoded[k], 1000 + k, sizes[k]),
    }
    seconds = {name: {} for name in makers}
    for test, k in work:  # interleaved, so both sides see the same machine load
        for name, make in makers.items():
            begin = time.perf_counter()
            data = make(test, k)
            seconds[name][test] = seconds[name].get(test, 0.0) + time.perf_counter() - begin
            with Image.open(io.BytesIO(data)) as image:
                assert image.size[::-1] == sizes[k] and image.format == ("PNG" if (1000 + k) % 2 == 0 else "JPEG")
    results = {}
    for name, by_test in seconds.items():
        total = sum(by_test.values())
        results[name] = {
            "images": len(work),
            "seconds": round(total, 2),
            "images_per_s": round(len(work) / total, 2),
            "ms_per_image_by_test": {t: round(1000 * s / per_test, 1) for t, s in by_test.items()},
        }
    results["speedup"] = round(results["imagenet_suite"]["images_per_s"] / results["authors"]["images_per_s"], 2)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-test", type=int, default=20, help="images per test on each side (default 20)")
    args = parser.parse_args()
    results = run(args.per_test)
    print(json.dumps(results, indent=1))
    print(
        f"\nimagenet-suite {results['imagenet_suite']['images_per_s']} images/s vs authors' way "
        f"{results['authors']['images_per_s']} images/s: {results['speedup']}x (goal >= 3x)"
    )


if __name__ == "__main__":
    main()
