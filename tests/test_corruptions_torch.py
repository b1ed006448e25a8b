"""The batched torch path agrees with the NumPy path (same draws), on CPU here and on a GPU when present."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from imagenet_suite.core.builder import example_rng
from imagenet_suite.perturbations import corruptions as C
from imagenet_suite.perturbations import corruptions_torch as T
from tests.test_corruptions import smooth_image


def _compare(device: str, severities=(1, 3, 5)) -> None:
    images = np.stack([smooth_image(36, 50, seed=s) for s in range(3)])
    for name in T.TORCH_CORRUPTIONS:
        for severity in severities:
            rngs = [example_rng(0, name, i) for i in range(3)]
            batched = T.corrupt_batch(images, name, severity, rngs, device=device)
            single = np.stack(
                [C.corrupt(image, name, severity, example_rng(0, name, i)) for i, image in enumerate(images)]
            )
            assert batched.shape == single.shape and batched.dtype == np.uint8
            diff = np.abs(batched.astype(int) - single.astype(int))
            # float rounding moves a pixel whose blurred value sits at a whole level; on these smooth
            # images that is 2.2% of defocus_blur's pixels at severity 1 (CPU and H200), else < 0.03%
            moved = float((diff > 0).mean())
            assert diff.max() <= 1 and moved < 0.05, f"{name} severity {severity} on {device}: {moved:.2%} moved"


def test_torch_path_matches_numpy_on_cpu():
    torch.set_num_threads(2)
    _compare("cpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_torch_path_matches_numpy_on_gpu():
    _compare("cuda")


def test_the_pixel_work_runs_without_tf32_and_leaves_the_flags_as_found(monkeypatch):
    cudnn, matmul = torch.backends.cudnn, torch.backends.cuda.matmul
    seen = []

    def record(x, c, rngs, flavor):
        seen.append((cudnn.allow_tf32, matmul.allow_tf32))
        raise RuntimeError("the body raised")

    monkeypatch.setitem(T._BATCHED, "defocus_blur", record)
    images = np.stack([smooth_image(36, 50, seed=0)])
    saved = cudnn.allow_tf32, matmul.allow_tf32
    cudnn.allow_tf32 = matmul.allow_tf32 = True
    try:
        with pytest.raises(RuntimeError, match="the body raised"):
            T.corrupt_batch(images, "defocus_blur", 1, [example_rng(0, "defocus_blur", 0)], device="cpu")
        assert seen == [(False, False)] and cudnn.allow_tf32 and matmul.allow_tf32
    finally:
        cudnn.allow_tf32, matmul.allow_tf32 = saved


def test_other_corruptions_fall_back_to_numpy_per_image():
    images = np.stack([smooth_image(34, 34, seed=s) for s in range(2)])
    assert not T.batched("snow", "imagecorruptions") and not T.batched("elastic_transform", "imagenet_c")
    out = T.corrupt_batch(images, "snow", 2, [example_rng(0, "snow", i) for i in range(2)], device="cpu")
    for i in range(2):
        assert np.array_equal(out[i], C.corrupt(images[i], "snow", 2, example_rng(0, "snow", i)))


def test_batch_arguments_are_checked():
    images = np.stack([smooth_image(34, 34)] * 2)
    with pytest.raises(C.CorruptionError, match="2 images but 1 generators"):
        T.corrupt_batch(images, "zoom_blur", 1, [example_rng(0)], device="cpu")
    with pytest.raises(C.CorruptionError, match="severity 9"):
        T.corrupt_batch(images, "zoom_blur", 9, [example_rng(0)] * 2, device="cpu")
    with pytest.raises(C.CorruptionError, match="corruptions need ≥ 32"):
        T.corrupt_batch(images[:, :20], "zoom_blur", 1, [example_rng(0)] * 2, device="cpu")
