"""Batched torch path (GPU when present) for the heavy corruptions of :mod:`imagenet_suite.perturbations.corruptions`.

:func:`corrupt_batch` corrupts N same-sized images with one per-image ``numpy.random.Generator``
each. The random draws are made on the CPU from those generators, in the same order as the NumPy
path, so a (seed, image) pair gives the same corruption on either path; the pixel work (resampling,
convolutions) runs batched on ``device``. Results agree with :func:`corruptions.corrupt` up to
float rounding: ±1 level after the uint8 truncation, on the pixels whose blurred value sits at a
whole level (2.2% of a smooth image's pixels for defocus_blur at severity 1, on the CPU and on an
H200 alike). The pixel work runs in IEEE float32 on every device: TF32 is turned off for the call,
also in a process that allows it (timm's validate.py sets ``torch.backends.cuda.matmul.allow_tf32``).

Batched here (:data:`TORCH_CORRUPTIONS`): ``zoom_blur``, ``motion_blur``, ``defocus_blur``,
``gaussian_blur`` and ``elastic_transform`` (imagecorruptions flavor). Everything else, and the
ImageNet-C elastic transform (its affine warp is OpenCV), goes through the NumPy path image by image.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import torch
import torch.nn.functional as F

from . import corruptions as C

TORCH_CORRUPTIONS = ("zoom_blur", "motion_blur", "defocus_blur", "gaussian_blur", "elastic_transform")


def default_device() -> torch.device:
    """``cuda`` when a GPU is visible, else ``cpu``."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def batched(name: str, flavor: str) -> bool:
    """Whether :func:`corrupt_batch` runs ``name`` batched in torch (else per image in NumPy)."""
    return name in TORCH_CORRUPTIONS and not (name == "elastic_transform" and flavor == "imagenet_c")


def corrupt_batch(
    images: np.ndarray | Sequence[np.ndarray],
    name: str,
    severity: int,
    rngs: Sequence[np.random.Generator],
    flavor: str = "imagecorruptions",
    device: torch.device | str | None = None,
    frost: Sequence[np.ndarray] = (),
) -> np.ndarray:
    """uint8 ``[N, H, W, 3]``: ``name`` at ``severity`` applied to each of N uint8 RGB images
    ``[H, W, 3]`` (same size) with ``rngs[i]`` for image i."""
    C.check_request(name, severity, flavor)
    if len(images) != len(rngs):
        raise C.CorruptionError(f"{len(images)} images but {len(rngs)} generators: one generator per image is required")
    if not batched(name, flavor):
        return np.stack(
            [C.corrupt(image, name, severity, rng, flavor, frost) for image, rng in zip(images, rngs, strict=True)]
        )
    batch = np.stack([C.to_rgb_array(image) for image in images])
    if min(batch.shape[1:3]) < C.MIN_SIDE:
        raise C.CorruptionError(f"images are {batch.shape[2]}x{batch.shape[1]} px; corruptions need ≥ {C.MIN_SIDE}")
    device = torch.device(device) if device is not None else default_device()
    x = torch.from_numpy(batch).to(device).permute(0, 3, 1, 2).float() / 255  # N, 3, H, W
    with ieee_float32():
        out = _BATCHED[name](x, C.constant(name, severity, flavor), rngs, flavor)
    return torch.clamp(out * 255, 0, 255).to(torch.uint8).permute(0, 2, 3, 1).cpu().numpy()


@contextmanager
def ieee_float32() -> Iterator[None]:
    """Run the body with TF32 off for cuDNN convolutions and CUDA matmuls; restore both flags after."""
    cudnn, matmul = torch.backends.cudnn, torch.backends.cuda.matmul
    saved = cudnn.allow_tf32, matmul.allow_tf32
    cudnn.allow_tf32 = matmul.allow_tf32 = False
    try:
        yield
    finally:
        cudnn.allow_tf32, matmul.allow_tf32 = saved


def _axis_weights(n_in: int, factor: float, start: int, full: int, centered: bool, device) -> torch.Tensor:
    """``[full, full]`` linear-interpolation matrix of one axis of ``clipped_zoom`` (output x input)."""
    i0, i1, t = C._zoom_indices(n_in, factor, start, full, centered)
    matrix = torch.zeros(len(i0), full, dtype=torch.float32)
    rows = torch.arange(len(i0))
    matrix.index_put_((rows, torch.from_numpy(i0)), torch.from_numpy(1 - t), accumulate=True)
    matrix.index_put_((rows, torch.from_numpy(i1)), torch.from_numpy(t), accumulate=True)
    return matrix.to(device)


def _zoom_blur(x, c, rngs, flavor):
    height, width = x.shape[-2:]
    factors = np.arange(*c)
    layers = torch.zeros_like(x)
    for factor in factors:
        crop_h, crop_w = int(np.ceil(height / factor)), int(np.ceil(width / factor))
        rows = _axis_weights(crop_h, factor, (height - crop_h) // 2, height, flavor == "imagenet_c", x.device)
        cols = _axis_weights(crop_w, factor, (width - crop_w) // 2, width, flavor == "imagenet_c", x.device)
        layers += rows @ x @ cols.T
    return torch.clamp((x + layers) / (len(factors) + 1), 0, 1)


def _motion_blur(x, c, rngs, flavor):
    kernels = [C.motion_kernel(c[0], c[1], rng.uniform(-45, 45), x.shape[-2:]) for rng in rngs]
    return torch.clamp(_per_image_filter(x, kernels, "replicate"), 0, 1)


def _per_image_filter(x: torch.Tensor, kernels: Sequence[np.ndarray], padding: str) -> torch.Tensor:
    """Correlate image i (all channels) with ``kernels[i]`` (odd, centered), borders by ``padding``."""
    size = max(k.shape[0] for k in kernels)
    stack = np.zeros((len(kernels), size, size), np.float32)
    for i, kernel in enumerate(kernels):
        offset = (size - kernel.shape[0]) // 2
        stack[i, offset : offset + kernel.shape[0], offset : offset + kernel.shape[1]] = kernel
    n, channels, height, width = x.shape
    weight = torch.from_numpy(stack).to(x.device).repeat_interleave(channels, dim=0)[:, None]
    reach = size // 2
    padded = F.pad(x.reshape(1, n * channels, height, width), (reach,) * 4, mode=padding)
    return F.conv2d(padded, weight, groups=n * channels).reshape(n, channels, height, width)


def _defocus_blur(x, c, rngs, flavor):
    kernel = C.disk_kernel(*c)
    return torch.clamp(_per_image_filter(x, [kernel] * x.shape[0], "reflect"), 0, 1)


def _gaussian_blur(x, c, rngs, flavor):
    return torch.clamp(_separable_gaussian(x, c, 4.0, "replicate"), 0, 1)


def _separable_gaussian(x: torch.Tensor, sigma, truncate: float, boundary: str) -> torch.Tensor:
    """Gaussian filter of the last two axes (sigma scalar or (rows, cols)); boundary 'replicate'
    (scipy 'nearest') or 'symmetric' (scipy 'reflect'), any kernel size."""
    sigmas = (sigma, sigma) if np.isscalar(sigma) else tuple(sigma)
    for axis, s in zip((-2, -1), sigmas, strict=True):
        taps = torch.from_numpy(C._gaussian_taps(float(s), truncate)).to(x.device, x.dtype)
        radius, n = len(taps) // 2, x.shape[axis]
        index = torch.arange(-radius, n + radius, device=x.device)
        if boundary == "replicate":
            index = index.clamp(0, n - 1)
        else:
            index = torch.from_numpy(C._reflect_index(index.cpu().numpy(), n)).to(x.device)
        padded = x.index_select(axis, index)
        windows = padded.unfold(axis if axis > 0 else x.ndim + axis, len(taps), 1)
        x = windows @ taps
    return x


def _elastic_transform(x, c, rngs, flavor):
    _n, _, height, width = x.shape
    limit, sigma = height * 0.005, (height * 0.01, width * 0.01)
    fields = torch.from_numpy(
        np.stack([np.stack([rng.uniform(-limit, limit, (height, width)) for _ in range(2)]) for rng in rngs])
    ).to(x.device)  # N, 2 (dx, dy), H, W; float64
    fields = (_separable_gaussian(fields, sigma, 3.0, "symmetric") * c).float().double()
    grid_y, grid_x = torch.meshgrid(
        torch.arange(height, device=x.device, dtype=torch.float64),
        torch.arange(width, device=x.device, dtype=torch.float64),
        indexing="ij",
    )
    return torch.clamp(_bilinear_reflect(x.double(), grid_y + fields[:, 1], grid_x + fields[:, 0]), 0, 1).float()


def _bilinear_reflect(x: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
    """Per-image bilinear sampling of ``x`` [N, C, H, W] at float coordinates [N, H, W], scipy 'reflect'."""
    n, channels, height, width = x.shape
    r0, c0 = torch.floor(rows), torch.floor(cols)
    tr, tc = (rows - r0)[:, None], (cols - c0)[:, None]
    r0, c0 = r0.long(), c0.long()

    def reflect(index, size):
        index = torch.remainder(index, 2 * size)
        return torch.where(index >= size, 2 * size - 1 - index, index)

    flat = x.reshape(n, channels, height * width)

    def gather(r, col):
        index = (reflect(r, height) * width + reflect(col, width)).reshape(n, 1, -1).expand(n, channels, -1)
        return flat.gather(2, index).reshape(n, channels, height, width)

    top = gather(r0, c0) * (1 - tc) + gather(r0, c0 + 1) * tc
    bottom = gather(r0 + 1, c0) * (1 - tc) + gather(r0 + 1, c0 + 1) * tc
    return top * (1 - tr) + bottom * tr


_BATCHED = {
    "zoom_blur": _zoom_blur,
    "motion_blur": _motion_blur,
    "defocus_blur": _defocus_blur,
    "gaussian_blur": _gaussian_blur,
    "elastic_transform": _elastic_transform,
}

__all__ = ["TORCH_CORRUPTIONS", "batched", "corrupt_batch", "default_device"]
