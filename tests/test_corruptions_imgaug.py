"""imgaug 0.4.0 on NumPy 2 through the compatibility shim: import, seeded augmenters, safe specs."""

from __future__ import annotations

import numpy as np
import pytest

from imagenet_suite.core.builder import example_rng
from imagenet_suite.perturbations import imgaug_compat
from imagenet_suite.perturbations.corruptions import CorruptionError
from tests.test_corruptions import smooth_image

needs_imgaug = pytest.mark.skipif(
    not imgaug_compat.imgaug_available(), reason="imgaug is not installed (the augment extra)"
)


def test_shims_restore_only_missing_numpy_names():
    imgaug_compat.apply_numpy2_shims()
    assert np.float64 in np.sctypes["float"] and np.uint8 in np.sctypes["uint"]
    assert imgaug_compat.apply_numpy2_shims() == []  # idempotent: nothing is missing any more


@needs_imgaug
def test_imgaug_imports_and_augments_deterministically_on_numpy_2():
    assert int(np.__version__.split(".")[0]) >= 2
    iaa = imgaug_compat.import_imgaug()
    pipeline = iaa.Sequential(
        [
            iaa.Fliplr(0.5),
            iaa.GaussianBlur(sigma=(0.5, 2.0)),
            iaa.AdditiveGaussianNoise(scale=(5, 20)),
            iaa.Affine(rotate=(-20, 20)),
            iaa.pillike.Autocontrast(),
        ]
    )
    perturb = imgaug_compat.ImgaugPerturbation(pipeline, "pipeline")
    image = smooth_image(48, 64)
    first = perturb(image, example_rng(0, "pipeline", "a"))
    other = perturb(image, example_rng(0, "pipeline", "b"))
    again = perturb(image, example_rng(0, "pipeline", "a"))  # after another image: same result
    assert first.shape == (48, 64, 3) and first.dtype == np.uint8
    assert np.array_equal(first, again) and not np.array_equal(first, other)
    assert not np.array_equal(first, image)


@needs_imgaug
def test_a_real_augmenter_matches_its_own_seeded_run():
    iaa = imgaug_compat.import_imgaug()
    image = smooth_image(40, 40)
    rng = example_rng(3, "noise", "x")
    seed = int(example_rng(3, "noise", "x").integers(0, 2**63 - 1))
    reference = iaa.AdditiveGaussianNoise(scale=20)
    reference.seed_(seed)
    assert np.array_equal(
        imgaug_compat.ImgaugPerturbation(iaa.AdditiveGaussianNoise(scale=20))(image, rng), reference(image=image)
    )


@needs_imgaug
def test_specs_build_augmenters_and_refuse_code():
    augmenter = imgaug_compat.parse_augmenter(
        "iaa.Sequential([Fliplr(1.0), imgaug.augmenters.GaussianBlur(sigma=(0.5, 1.0))])"
    )
    assert [type(a).__name__ for a in augmenter] == ["Fliplr", "GaussianBlur"]
    for bad, message in [
        ("__import__('os').system('true')", "is not a name in imgaug.augmenters"),
        ("meta.ia.np.zeros(3)", "is not an augmenter class"),
        ("Fliplr(**{'p': 1})", r"\*\*kwargs are not allowed"),
        ("GaussianBlur(sigma=lambda: 1)", "is not allowed"),
        ("GaussianBlur(", "is not a Python expression"),
    ]:
        with pytest.raises(CorruptionError, match=message):
            imgaug_compat.parse_augmenter(bad)


@needs_imgaug
def test_gray_input_and_bad_output_are_handled():
    iaa = imgaug_compat.import_imgaug()
    gray = smooth_image(40, 40)[..., 0]
    assert imgaug_compat.ImgaugPerturbation(iaa.Fliplr(1.0))(gray, example_rng(0)).shape == (40, 40, 3)
    one_channel = iaa.Lambda(func_images=lambda images, *_: [image[..., :1] for image in images])
    with pytest.raises(CorruptionError, match="returned uint8 \\(40, 40, 1\\)"):
        imgaug_compat.ImgaugPerturbation(one_channel)(smooth_image(40, 40), example_rng(0))
    with pytest.raises(CorruptionError, match="expected an imgaug Augmenter"):
        imgaug_compat.ImgaugPerturbation("GaussianBlur(1.0)")


def test_missing_imgaug_names_the_fix(monkeypatch):
    monkeypatch.setattr(imgaug_compat, "imgaug_available", lambda: False)  # as on an install without the extra
    with pytest.raises(ImportError, match=r"imagenet-suite\[augment\]"):
        imgaug_compat.import_imgaug()
