"""The corruption library: agreement with the upstream-style reference and with the published
constants, output shape/dtype, per-(seed, id) determinism, Heuillet et al. 2025's portfolio, bad input."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image
from skimage.color import rgb2hsv

from imagenet_suite.perturbations import corruptions as C
from imagenet_suite.seeding import example_rng
from tests.fixtures.naive_corruptions import naive_corrupt

ALL = C.IMAGENET_C + C.IMAGENET_C_EXTRA
TOLERANCE = (1, 0.01)  # grey levels, and the fraction of values allowed to differ at all


def smooth_image(height: int, width: int, seed: int = 0) -> np.ndarray:
    """A natural-ish uint8 RGB image: bicubic-upsampled noise plus fine texture."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, (height // 8 + 2, width // 8 + 2, 3), dtype=np.uint8)
    image = np.asarray(Image.fromarray(base).resize((width, height), Image.BICUBIC)).astype(np.int16)
    return np.clip(image + rng.integers(-16, 16, image.shape), 0, 255).astype(np.uint8)


@pytest.fixture(scope="module")
def frost():
    return tuple(smooth_image(70 + 9 * i, 90 + 7 * i, seed=10 + i) for i in range(6))


@pytest.fixture(scope="module")
def real224(test_data) -> np.ndarray:
    """A real 224x224 stimulus (texture-vs-shape, CC-BY-4.0)."""
    path = test_data / "texture-vs-shape/stimuli/cue-conflict-sample/car/car1-car2.png"
    return np.asarray(Image.open(path).convert("RGB"))


def assert_close(ours: np.ndarray, reference: np.ndarray, where: str) -> None:
    assert ours.shape == reference.shape and ours.dtype == reference.dtype == np.uint8, where
    diff = np.abs(ours.astype(int) - reference.astype(int))
    assert diff.max() <= TOLERANCE[0] and (diff > 0).mean() <= TOLERANCE[1], (
        f"{where}: max {diff.max()}, {(diff > 0).mean():.4f} differ"
    )


@pytest.mark.parametrize("flavor", C.FLAVORS)
@pytest.mark.parametrize("name", ALL)
def test_matches_the_reference_implementation_at_every_severity(name, flavor, frost):
    image = smooth_image(40, 52, seed=3)
    for severity in C.SEVERITIES:
        ours = C.corrupt(image, name, severity, example_rng(5, name, "img"), flavor, frost)
        reference = naive_corrupt(image, name, severity, example_rng(5, name, "img"), flavor, frost)
        assert_close(ours, reference, f"{name} severity {severity} ({flavor})")


@pytest.mark.parametrize("name", C.HEUILLET_COMMON + ("glass_blur", "fog", "gaussian_noise"))
def test_matches_the_reference_on_a_real_224_image_at_severity_3(name, real224):
    for flavor in C.FLAVORS:
        ours = C.corrupt(real224, name, 3, example_rng(0, name, "car"), flavor)
        assert_close(ours, naive_corrupt(real224, name, 3, example_rng(0, name, "car"), flavor), f"{name} ({flavor})")


def test_heuillet_severity3_constants_are_the_published_ones():
    """The severity-3 column of Heuillet et al. 2025's vendored corruptions (identical to upstream imagecorruptions)."""
    published = {
        "shot_noise": 12,
        "impulse_noise": 0.09,
        "defocus_blur": (6, 0.5),
        "motion_blur": (15, 8),
        "snow": (0.55, 0.3, 4, 0.9, 12, 8, 0.7),
        "brightness": 0.3,
        "contrast": 0.2,
        "elastic_transform": 250 * 0.085,
        "pixelate": 0.4,
        "jpeg_compression": 15,
        "gaussian_noise": 0.18,
    }
    for name, value in published.items():
        assert C.constant(name, 3) == value, name
    zooms = np.arange(*C.constant("zoom_blur", 3))
    assert len(zooms) == 11 and zooms[0] == 1.0 and zooms[-1] == pytest.approx(1.20)
    assert C.constant("elastic_transform", 3, "imagenet_c") == (244 * 0.05, 244 * 0.01, 244 * 0.02)


def test_gaussian_shot_and_speckle_noise_have_the_published_spread():
    gray = np.full((224, 224, 3), 128, np.uint8)
    x = 128 / 255
    for severity in (1, 2, 3):
        c = C.constant("gaussian_noise", severity)
        noise = (C.corrupt(gray, "gaussian_noise", severity, example_rng(0, "g", severity)) + 0.5) / 255 - x
        assert noise.std() == pytest.approx(c, rel=0.03) and abs(noise.mean()) < 0.01
        c = C.constant("shot_noise", severity)
        shot = C.corrupt(gray, "shot_noise", severity, example_rng(0, "s", severity)) / 255
        assert shot.std() == pytest.approx(np.sqrt(x / c), rel=0.05)
        c = C.constant("speckle_noise", severity)
        speckle = (C.corrupt(gray, "speckle_noise", severity, example_rng(0, "p", severity)) + 0.5) / 255 / x - 1
        assert speckle.std() == pytest.approx(c, rel=0.05)


def test_impulse_noise_flips_the_published_fraction_to_salt_or_pepper():
    gray = np.full((224, 224, 3), 128, np.uint8)
    for severity in C.SEVERITIES:
        out = C.corrupt(gray, "impulse_noise", severity, example_rng(0, "i", severity))
        salt, pepper = (out == 255).mean(), (out == 0).mean()
        assert salt + pepper == pytest.approx(C.constant("impulse_noise", severity), rel=0.05)
        assert salt == pytest.approx(pepper, rel=0.15)
        assert ((out == 128) | (out == 255) | (out == 0)).all()


def test_impulse_noise_equals_skimage_random_noise_with_the_same_generator():
    from skimage.util import random_noise

    image = smooth_image(48, 48)
    expected = np.uint8(
        np.clip(random_noise(image / 255.0, mode="s&p", amount=0.09, rng=example_rng(1, "x")), 0, 1) * 255
    )
    assert np.array_equal(C.corrupt(image, "impulse_noise", 3, example_rng(1, "x")), expected)


def test_defocus_impulse_response_is_the_antialiased_disk():
    delta = np.zeros((64, 64, 3), np.uint8)
    delta[32, 32] = 255
    for severity in C.SEVERITIES:
        radius, alias = C.constant("defocus_blur", severity)
        kernel = C.disk_kernel(radius, alias)
        # radius 8 and 10 touch the support's edge, where upstream's anti-aliasing blur reflects mass back
        assert kernel.sum() == pytest.approx(1.0, abs=1e-5 if radius < 8 else 0.02) and np.allclose(kernel, kernel.T)
        half = kernel.shape[0] // 2
        assert (kernel[half, half + int(radius) + 2 :] < 1e-3).all()  # nothing beyond the radius
        out = C.corrupt(delta, "defocus_blur", severity, example_rng(0, "d"))[..., 0]
        window = out[32 - half : 32 + half + 1, 32 - half : 32 + half + 1]
        assert np.abs(window - np.floor(kernel[::-1, ::-1] * 255)).max() <= 1


def test_motion_kernel_is_a_gaussian_weighted_line_of_2r_plus_1_taps():
    for severity in C.SEVERITIES:
        radius, sigma = C.constant("motion_blur", severity)
        kernel = C.motion_kernel(radius, sigma, 0.0, (224, 224))
        weights = np.exp(-(np.arange(2 * radius + 1) ** 2) / (2 * sigma**2))
        row = kernel[kernel.shape[0] // 2]
        assert np.count_nonzero(kernel) == 2 * radius + 1 == np.count_nonzero(row)
        assert np.allclose(row[radius * 2 : radius * 4 + 1], weights / weights.sum(), atol=1e-6)
    diagonal = C.motion_kernel(10, 3, 45.0, (224, 224))
    assert np.count_nonzero(diagonal) == np.count_nonzero(np.diag(diagonal)) > 1
    assert C.motion_kernel(10, 3, 0.0, (32, 6)).shape == (11, 11)  # taps past a 6 px wide image are dropped


def test_contrast_brightness_pixelate_jpeg_follow_their_definitions(real224):
    for severity in C.SEVERITIES:
        c = C.constant("contrast", severity)
        out = C.corrupt(real224, "contrast", severity, example_rng(0, "c")).astype(float)
        mean = real224.mean(axis=(0, 1))
        assert np.abs(out - ((real224 - mean) * c + mean)).max() <= 1
        c = C.constant("brightness", severity)
        hsv_in, hsv_out = rgb2hsv(real224), rgb2hsv(C.corrupt(real224, "brightness", severity, example_rng(0, "b")))
        assert np.abs(hsv_out[..., 2] - np.minimum(hsv_in[..., 2] + c, 1)).max() <= 1.5 / 255
        c = C.constant("pixelate", severity)
        out = C.corrupt(real224, "pixelate", severity, example_rng(0, "p"))
        assert len(np.unique(out.reshape(224, -1), axis=0)) <= int(224 * c)
        buffer = io.BytesIO()
        Image.fromarray(real224).save(buffer, "JPEG", quality=C.constant("jpeg_compression", severity))
        jpeg = np.asarray(Image.open(buffer))
        assert np.array_equal(C.corrupt(real224, "jpeg_compression", severity, example_rng(0, "j")), jpeg)


def test_zoom_and_blurs_keep_a_constant_image_constant():
    flat = np.full((40, 48, 3), 90, np.uint8)
    for name in ("zoom_blur", "defocus_blur", "gaussian_blur", "glass_blur", "motion_blur", "elastic_transform"):
        out = C.corrupt(flat, name, 5, example_rng(0, name))
        assert np.abs(out.astype(int) - 90).max() <= 1, name


@pytest.mark.parametrize("name", ALL)
def test_output_shape_dtype_and_determinism_per_seed_and_id(name, frost):
    image = smooth_image(37, 45, seed=1)
    first = C.corrupt(image, name, 2, example_rng(0, name, "a"), frost=frost)
    assert first.shape == (37, 45, 3) and first.dtype == np.uint8
    np.random.seed(123)  # global NumPy state must not matter
    assert np.array_equal(first, C.corrupt(image, name, 2, example_rng(0, name, "a"), frost=frost))
    other_id = C.corrupt(image, name, 2, example_rng(0, name, "b"), frost=frost)
    other_seed = C.corrupt(image, name, 2, example_rng(1, name, "a"), frost=frost)
    stochastic = C.CORRUPTIONS[name].stochastic
    assert (not np.array_equal(first, other_id)) == stochastic
    assert (not np.array_equal(first, other_seed)) == stochastic


def test_grayscale_and_cmyk_sources_become_rgb():
    rgb = smooth_image(40, 40)
    gray = np.asarray(Image.fromarray(rgb).convert("L"))
    cmyk = Image.fromarray(rgb).convert("CMYK")
    for source in (gray, gray[..., None], Image.fromarray(gray), cmyk):
        out = C.corrupt(source, "contrast", 3, example_rng(0, "c"))
        assert out.shape == (40, 40, 3) and out.dtype == np.uint8
    assert np.array_equal(C.to_rgb_array(gray)[..., 0], C.to_rgb_array(gray)[..., 2])
    assert np.array_equal(C.to_rgb_array(cmyk), np.asarray(cmyk.convert("RGB")))


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda x: C.corrupt(x, "fish_eye", 3, example_rng(0)),
            r"unknown corruption 'fish_eye'; known: \['brightness'",
        ),
        (lambda x: C.corrupt(x, "snow", 0, example_rng(0)), r"severity 0 of snow: expected an integer in 1..5"),
        (lambda x: C.corrupt(x, "snow", 6, example_rng(0)), r"severity 6 of snow"),
        (lambda x: C.corrupt(x, "snow", 2.0, example_rng(0)), r"severity 2.0 of snow"),
        (lambda x: C.corrupt(x, "snow", True, example_rng(0)), r"severity True of snow"),
        (lambda x: C.corrupt(x, "snow", 3, example_rng(0), flavor="imagenet-c"), r"flavor 'imagenet-c'"),
        (
            lambda x: C.corrupt(x[:31], "snow", 3, example_rng(0)),
            r"image is 40x31 px; corruptions need width and height ≥ 32",
        ),
        (lambda x: C.corrupt(x / 255.0, "snow", 3, example_rng(0)), r"image dtype is float64; expected uint8"),
        (lambda x: C.corrupt(np.dstack([x, x[..., :1]]), "snow", 3, example_rng(0)), r"image shape is \(40, 40, 4\)"),
        (lambda x: C.corrupt(x, "frost", 3, example_rng(0)), r"frost needs the 6 frost pictures"),
    ],
)
def test_bad_requests_are_named(call, message):
    with pytest.raises(C.CorruptionError, match=message):
        call(smooth_image(40, 40))


def test_heuillet_block_assignment():
    names = C.HEUILLET_COMMON
    assignment = C.block_assignment(1000, names)
    counts = {n: assignment.count(n) for n in names}
    assert counts == {n: 100 if n == "shot_noise" else 90 for n in names}
    assert (
        assignment[:90] == ["shot_noise"] * 90
        and assignment[90] == "impulse_noise"
        and assignment[990:] == ["shot_noise"] * 10
    )
    small = C.block_assignment(420, names)
    assert {n: small.count(n) for n in names} == {n: 40 if n == "shot_noise" else 38 for n in names}
    assert C.block_assignment(5, names) == list(names[:5])
    with pytest.raises(C.CorruptionError):
        C.block_assignment(5, ())


def test_resize_and_center_crop_match_torchvision():
    from torchvision import transforms

    reference = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224)])
    for size in ((500, 375), (333, 500), (256, 256), (90, 61)):
        image = Image.fromarray(smooth_image(size[1], size[0]))
        assert np.array_equal(np.asarray(C.resize_short_center_crop(image)), np.asarray(reference(image)))


def test_plasma_fractal_is_a_normalized_seeded_height_map():
    first = C.plasma_fractal(64, 2.0, example_rng(0, "fog"))
    assert first.shape == (64, 64) and first.min() == 0.0 and first.max() == 1.0
    assert np.array_equal(first, C.plasma_fractal(64, 2.0, example_rng(0, "fog")))
    assert not np.array_equal(first, C.plasma_fractal(64, 2.0, example_rng(1, "fog")))


def test_grid_picture_has_a_row_per_corruption_and_a_column_per_severity(real224, tmp_path):
    from imagenet_suite.perturbations.grid import HEADER, LABEL_WIDTH, corruption_grid, save_corruption_grid

    grid = corruption_grid(real224, ("contrast", "frost", "gaussian_noise"), cell=32)
    assert grid.size == (LABEL_WIDTH + 6 * 32, HEADER + 2 * 32)  # frost is skipped without its pictures
    clean = np.asarray(grid)[HEADER : HEADER + 32, LABEL_WIDTH : LABEL_WIDTH + 32]
    severity5 = np.asarray(grid)[HEADER : HEADER + 32, LABEL_WIDTH + 5 * 32 : LABEL_WIDTH + 6 * 32]
    assert severity5.std() < clean.std()  # contrast 0.05 flattens the image
    path = save_corruption_grid(real224, tmp_path / "grid.png", corruptions=("contrast",), cell=32)
    assert Image.open(path).format == "PNG" and path.stat().st_size < 400_000
