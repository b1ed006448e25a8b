"""The 17 OOD unit-test recipes: upstream index selection, the recipes' invariants (NINCO, Appendix H), the filter.

Pure functions, no build: ``tests/test_ood_unit_tests_build.py`` runs the builder end to end.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from PIL import Image
from scipy import ndimage

from imagenet_suite.builders import ood_unit_tests as out
from imagenet_suite.errors import ConfigError
from imagenet_suite.seeding import example_rng

H, W = 37, 53  # odd sizes: stripe remainders, FFT of odd lengths


@pytest.fixture(scope="module")
def source():
    """A float RGB source image in [0, 1] with values on the uint8 grid (as decoded images are)."""
    return np.random.default_rng(3).integers(0, 256, size=(H, W, 3)).astype(np.float64) / 255


def rendered(test, source, index=1, seed=0, smooth_color="code", shape=(H, W)):
    image, params = out.render(test, *shape, source, example_rng(seed, test, index), smooth_color)
    return image, params


# -- index selection -----------------------------------------------------------------------------------

SPEC_VECTORS = {  # from j-cb/NINCO's released index CSVs: first four indices and the sum of the 400
    "Gaussian": ((217, 262, 348, 418), 9_902_745),
    "Rademacher": ((101, 439, 591, 757), 10_372_533),
    "black": ((48, 55, 105, 469), 9_625_552),
    "blobs": ((55, 131, 243, 376), 10_071_300),
    "grey": ((4, 163, 287, 352), 10_227_541),
    "horizontal_stripes": ((389, 431, 468, 583), 10_141_548),
    "low_freq": ((75, 90, 92, 215), 10_540_728),
    "low_freq_channelfullscale": ((54, 75, 84, 212), 10_330_133),
    "low_freq_colorrange": ((228, 346, 552, 658), 9_910_280),
    "low_freq_pixel_perm": ((86, 93, 198, 434), 10_349_539),
    "monochrome": ((204, 399, 484, 1008), 10_094_596),
    "pixel_perm": ((76, 118, 140, 177), 9_701_750),
    "tricolour": ((39, 226, 361, 525), 10_453_674),
    "tricolour_primary": ((163, 220, 449, 513), 10_198_305),
    "uni": ((112, 208, 237, 371), 9_780_369),
    "vertical_stripes": ((655, 809, 1028, 1055), 10_139_895),
    "white": ((20, 164, 241, 262), 10_030_031),
}


def test_index_selection_equals_the_released_files_for_all_17_tests(test_data):
    released = out.released_indices(test_data / "ninco/data/NINCO_OOD_unit_tests.csv")
    assert sorted(released) == sorted(out.UNIT_TESTS) and len(out.UNIT_TESTS) == 17
    for test, indices in released.items():
        chosen = out.source_indices(test)
        assert chosen.tolist() == sorted(indices), test
        first, total = SPEC_VECTORS[test]
        assert tuple(chosen[:4].tolist()) == first and int(chosen.sum()) == total, test
    assert out.index_seed("uni") == 117110105


def test_other_counts_are_subsets_and_supersets_of_the_release():
    for test in ("uni", "pixel_perm", "white"):
        released = set(out.source_indices(test).tolist())
        assert set(out.source_indices(test, count=37).tolist()) < released
        assert released < set(out.source_indices(test, count=1000).tolist())
    with pytest.raises(ConfigError, match="images_per_test=401: expected 1..400"):
        out.source_indices("uni", num_source=400, count=401)


def test_selected_tests_option():
    assert out.selected_tests("all") == tuple(out.UNIT_TESTS)
    assert out.selected_tests("white, black") == ("black", "white")  # label order
    with pytest.raises(ConfigError, match=r"unknown test\(s\) \['whte'\].*'Gaussian'"):
        out.selected_tests("white,whte")


# -- the Gaussian filter -----------------------------------------------------------------------------------


@pytest.mark.parametrize("sigma", [1, 1.5, 4, 5.9, 6, 10, 40, 85])
@pytest.mark.parametrize("shape", [(6, 9, 3), (37, 53, 3), (120, 90, 3)])
def test_gaussian_wrap_equals_scipy_and_skimage(sigma, shape):
    image = np.random.default_rng(int(sigma * 10)).random(shape)
    expected = ndimage.gaussian_filter(image, (sigma, sigma, 0), mode="wrap", truncate=4.0)
    np.testing.assert_allclose(out.gaussian_wrap(image, sigma), expected, rtol=0, atol=1e-13)
    if shape == (37, 53, 3):
        import skimage.filters

        upstream = skimage.filters.gaussian(image, sigma=sigma, channel_axis=2, mode="wrap")
        np.testing.assert_allclose(out.gaussian_wrap(image, sigma), upstream, rtol=0, atol=1e-13)


# -- recipe invariants (NINCO, Appendix H) -----------------------------------------------------------------


@pytest.mark.parametrize("test", list(out.UNIT_TESTS))
def test_every_recipe_keeps_the_source_size_and_range(test, source):
    image, params = rendered(test, source)
    assert image.shape == (H, W, 3) and image.dtype == np.float64
    assert image.min() >= 0 and image.max() <= 1
    json.dumps(params)  # recorded per row


def test_black_white_grey_monochrome(source):
    assert (out.to_uint8(rendered("black", source)[0]) == 0).all()
    assert (out.to_uint8(rendered("white", source)[0]) == 255).all()
    grey, params = rendered("grey", source)
    assert np.unique(grey).tolist() == [params["grey"]]
    mono, params = rendered("monochrome", source)
    assert np.unique(mono.reshape(-1, 3), axis=0).tolist() == [params["colour"]]
    greys = [rendered("grey", source, index=i)[1]["grey"] for i in range(200)]
    assert 0.4 < np.mean(greys) < 0.6 and min(greys) < 0.05 and max(greys) > 0.95  # U(0, 1)


@pytest.mark.parametrize("test", ["tricolour", "tricolour_primary", "horizontal_stripes", "vertical_stripes"])
def test_stripes_follow_the_upstream_layout(test, source):
    orientations = set()
    for index in range(40):
        image, params = rendered(test, source, index=index)
        colours = np.array(params["colours"])
        orientation = params.get("orientation", test.split("_")[0])
        orientations.add(orientation)
        n = len(colours)
        assert n == (3 if test.startswith("tri") else params["n_stripes"])
        assert n in ((3,) if test.startswith("tri") else (4, 5, 7, 10, 15, 20))
        lines = image if orientation == "horizontal" else image.transpose(1, 0, 2)
        size = lines.shape[0] // n
        for k in range(lines.shape[0]):
            expected = colours[min(k // size, n - 1)]
            assert (lines[k] == expected).all(), (test, index, k)  # remainder rows take the last colour
        assert len(np.unique(image.reshape(-1, 3), axis=0)) <= n
        if test == "tricolour_primary":
            assert set(np.unique(colours).tolist()) <= {0.0, 1.0}
    assert orientations == ({"horizontal", "vertical"} if test.startswith("tri") else {test.split("_")[0]})


def test_noise_distributions(source):
    big = (200, 200)
    rademacher = rendered("Rademacher", None, shape=big)[0]
    assert set(np.unique(rademacher).tolist()) == {0.0, 1.0} and abs(rademacher.mean() - 0.5) < 0.01
    uniform = rendered("uni", None, shape=big)[0]
    assert abs(uniform.mean() - 0.5) < 0.01 and abs(uniform.var() - 1 / 12) < 0.002
    for index in range(20):
        gaussian, params = rendered("Gaussian", None, index=index, shape=big)
        assert params["sigma"] in (0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5)
        if params["sigma"] <= 0.15:  # no clipping to speak of: N(0.5, σ²)
            assert abs(gaussian.mean() - 0.5) < 0.005 and abs(gaussian.std() - params["sigma"]) < 0.005


@pytest.mark.parametrize("test", ["pixel_perm", "low_freq_pixel_perm"])
def test_pixel_permutations_move_whole_pixels(test, source):
    image, params = rendered(test, source)
    if test == "pixel_perm":
        before = np.sort(out.to_uint8(source).reshape(-1, 3).view("u1,u1,u1"), axis=0)
        after = np.sort(out.to_uint8(image).reshape(-1, 3).view("u1,u1,u1"), axis=0)
        assert (before == after).all()  # the multiset of RGB triplets
        assert not (out.to_uint8(image) == out.to_uint8(source)).all()
    else:
        assert params["sigma"] in (1, 1.5, 2, 3, 4, 6, 8)
        # a periodic blur of a permutation keeps every channel's sum: no rescaling happened
        np.testing.assert_allclose(image.reshape(-1, 3).mean(axis=0), source.reshape(-1, 3).mean(axis=0), atol=1e-12)


def test_smooth_noise_rescaling(source):
    for index in range(6):
        smooth, params = rendered("low_freq", None, index=index)
        assert params["sigma"] in (10, 15, 25, 40, 60, 85)
        assert smooth.min() == 0.0 and smooth.max() == pytest.approx(1.0, abs=1e-15)
        assert any((smooth[..., c].min(), smooth[..., c].max()) != (0.0, 1.0) for c in range(3))  # global scaling
        plus, _ = rendered("low_freq_channelfullscale", None, index=index)
        for c in range(3):
            assert plus[..., c].min() == 0.0 and plus[..., c].max() == pytest.approx(1.0, abs=1e-15)


@pytest.mark.parametrize("variant", ["code", "paper"])
def test_smooth_colour_quantiles(variant, source):
    checked = 0
    for index in range(30):
        image, params = rendered("low_freq_colorrange", None, index=index, smooth_color=variant, shape=(64, 80))
        centre, deviation = np.array(params["colour"]), params["deviation"]
        assert params["variant"] == variant and 0.1 <= deviation <= 0.3
        low, high = (centre, centre + 2 * deviation) if variant == "code" else (centre - deviation, centre + deviation)
        flat = image.reshape(-1, 3)
        for c in range(3):
            if low[c] > 0 and high[c] < 1:  # no clipping at either quantile
                assert np.quantile(flat[:, c], 0.025) == pytest.approx(low[c], abs=1e-9)
                assert np.quantile(flat[:, c], 0.975) == pytest.approx(high[c], abs=1e-9)
                checked += 1
    assert checked > 20


def test_code_and_paper_smooth_colour_differ_by_delta(source):
    code, params = rendered("low_freq_colorrange", None, smooth_color="code", shape=(64, 80))
    paper, _ = rendered("low_freq_colorrange", None, smooth_color="paper", shape=(64, 80))
    inside = (code > 0) & (code < 1) & (paper > 0) & (paper < 1)
    np.testing.assert_allclose((code - paper)[inside], params["deviation"], atol=1e-12)


def test_blobs_are_zero_or_at_least_three_quarters(source):
    for index in range(5):
        image, params = rendered("blobs", None, index=index, shape=(80, 90))
        assert params["sigma"] in (1.5, 2, 2.5, 3, 3.5, 4)
        values = image[image > 0]
        assert values.min() >= 0.75 and 0.05 < (image == 0).mean() < 0.95


# -- encoding and determinism ------------------------------------------------------------------------------


def test_png_for_even_jpeg_for_odd_and_truncation(source):
    for index in (10, 11):
        data, extension, _ = out.generate_image("uni", index, H, W, None, seed=5)
        with Image.open(io.BytesIO(data)) as image:
            assert (image.format, image.size, image.mode) == (
                ("PNG", (W, H), "RGB") if index % 2 == 0 else ("JPEG", (W, H), "RGB")
            )
            if index % 2 == 0:
                expected = (rendered("uni", None, index=index, seed=5)[0] * 255).astype(np.uint8)
                assert (np.asarray(image) == expected).all()  # lossless, truncated not rounded
    assert extension == "jpg"
    assert out.to_uint8(np.array([[[0.999, 0.5, 1.2]]])).tolist() == [[[254, 127, 255]]]


def test_images_are_a_pure_function_of_seed_test_and_index(source):
    first = out.generate_image("low_freq", 12, H, W, None, seed=1)
    assert out.generate_image("low_freq", 12, H, W, None, seed=1) == first
    assert out.generate_image("low_freq", 12, H, W, None, seed=2)[0] != first[0]
    assert out.generate_image("low_freq", 14, H, W, None, seed=1)[0] != first[0]


def test_pixel_tests_need_the_source(source):
    with pytest.raises(ValueError, match="pixel_perm needs the source pixels as a 37x53x3 array"):
        out.render("pixel_perm", H, W, None, example_rng(0, "x"))
