"""The GPU decode path of :func:`~imagenet_suite.inference.predict.predict`: JPEG bytes decoded on the
device with ``torchvision.io.decode_jpeg(device="cuda")`` (nvJPEG) and preprocessed there with tensor
operations that mirror the model's PIL transform step by step.

* Which images go to the device (:func:`device_decodable`): baseline or progressive 8-bit JPEGs whose
  three components libjpeg reads as YCbCr, with 4:4:4, 4:2:2, 4:4:0 or 4:2:0 chroma sampling (read
  from the headers only, :func:`imagenet_suite.images.jpeg_frame`). Everything else — CMYK/YCCK,
  grayscale, RGB-coded JPEGs, PNG, other formats — is decoded by Pillow exactly as on the CPU path.
* The preprocessing (:func:`tensor_transform`): built from the model's own eval transform (timm's
  ``create_transform`` of its data config, PatchML's squash variant, a torchvision weights preset, or
  open_clip's ``Resize``/``CenterCrop`` eval transform, whose conversion to RGB is a no-op here),
  each step turned into its tensor equivalent with the same arithmetic — timm's resize of the shorter
  side to ``floor(size / crop_pct)`` (or its keep-ratio / squash variants), the same interpolation
  (bilinear or bicubic, antialiased like PIL's), rounded to whole levels as PIL's 8-bit resize is,
  centre crop (or crop-or-pad), ``/255``, normalize — preceded by the protocol's border crop. A step
  it does not know (a ``--transform`` override, nearest/lanczos interpolation, ...) makes it refuse
  (:class:`UnsupportedTransform`), and predict keeps the CPU path.

Agreement with the CPU path (Pillow decode + PIL transform), measured on the CPU with
``decode_jpeg(device="cpu")``: the decoded pixels are identical (both are libjpeg-turbo) and the
preprocessed inputs differ by at most 1/255 per pixel (PIL's fixed-point resize versus torch's
float resize, both rounded). nvJPEG's IDCT and chroma upsampling are not libjpeg's, so on CUDA the
decoded pixels differ too (expected: a few levels, more at sharp colour edges; not yet measured here,
``tests/test_predict.py`` bounds the mean difference at 2 levels on CUDA machines).
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import torch
from PIL import Image

from ..images import jpeg_frame
from ..scoring.metrics.protocols import crop_box

DEVICE_FRAMES = frozenset({0xC0, 0xC2})  # baseline and progressive Huffman-coded frames
LUMA_SAMPLING = frozenset({(1, 1), (2, 1), (1, 2), (2, 2)})  # 4:4:4, 4:2:2, 4:4:0, 4:2:0 (chroma 1x1)


class UnsupportedTransform(ValueError):
    """The preprocessing has a step with no exact tensor counterpart here (the message names it)."""


def device_decodable(data: bytes) -> bool:
    """Whether ``data`` goes to the device decoder: a baseline/progressive 8-bit YCbCr JPEG with usual
    chroma sampling and its size in the frame header (the kind nvJPEG and libjpeg decode alike), of at
    most Pillow's ``Image.MAX_IMAGE_PIXELS`` pixels: a larger one takes the CPU path, whose Pillow
    decode refuses a decompression bomb (the device decoders have no such bound). Reads the headers only."""
    frame = jpeg_frame(data)
    if frame is None or frame.marker not in DEVICE_FRAMES or frame.precision != 8 or frame.color_space != "YCbCr":
        return False
    if not frame.width or not frame.height:  # height 0: given later by a DNL marker
        return False
    if Image.MAX_IMAGE_PIXELS is not None and frame.width * frame.height > Image.MAX_IMAGE_PIXELS:
        return False
    luma, *chroma = ((h, v) for _, h, v in frame.components)
    return luma in LUMA_SAMPLING and all(sampling == (1, 1) for sampling in chroma)


def decode_jpegs(data: Sequence[torch.Tensor], device: torch.device) -> list[torch.Tensor]:
    """``torchvision.io.decode_jpeg`` of 1-D uint8 CPU tensors to RGB ``[3, h, w]`` uint8 on ``device``,
    in one batched call (nvJPEG on CUDA, libjpeg-turbo on the CPU)."""
    from torchvision.io import ImageReadMode, decode_jpeg

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torchvision 0.29 points to TorchCodec
        return decode_jpeg(list(data), mode=ImageReadMode.RGB, device=device)


Step = Callable[[torch.Tensor], torch.Tensor]


class TensorTransform:
    """The tensor counterpart of a PIL eval transform: a list of RGB ``[3, h, w]`` uint8 images (any
    device, any sizes) -> a ``[n, 3, H, W]`` float32 batch on their device.

    Images of one size are processed together; ``border_px`` is the protocol's border crop, first.
    """

    def __init__(self, geometry: list[Step], mean: Sequence[float], std: Sequence[float], border_px: int = 0):
        self.geometry = geometry
        self.mean = [float(v) for v in mean]
        self.std = [float(v) for v in std]
        self.border_px = border_px

    def __call__(self, images: Sequence[torch.Tensor]) -> torch.Tensor:
        from torchvision.transforms.v2 import functional as F

        groups: dict[tuple[int, ...], list[int]] = defaultdict(list)
        for position, image in enumerate(images):
            groups[tuple(image.shape)].append(position)
        batch = None
        for shape, positions in groups.items():
            pixels = torch.stack([images[i] for i in positions]).float()
            if self.border_px:
                left, top, right, bottom = crop_box(shape[-1], shape[-2], self.border_px)
                pixels = pixels[..., top:bottom, left:right]
            for step in self.geometry:
                pixels = step(pixels)
            if batch is None:
                batch = torch.empty((len(images), *pixels.shape[1:]), dtype=torch.float32, device=pixels.device)
            batch[torch.tensor(positions, device=pixels.device)] = pixels
        if batch is None:
            raise ValueError("TensorTransform needs at least one image")
        return F.normalize(batch.div_(255), self.mean, self.std, inplace=True)


def tensor_transform(transform: Any, border_px: int = 0) -> TensorTransform:
    """The :class:`TensorTransform` doing what ``transform`` (a PIL eval transform) does, after a
    border crop of ``border_px``; :class:`UnsupportedTransform` naming the first step it cannot mirror."""
    from torchvision import transforms
    from torchvision.transforms._presets import ImageClassification

    if isinstance(transform, ImageClassification):
        steps = [
            transforms.Resize(transform.resize_size, interpolation=transform.interpolation),
            transforms.CenterCrop(transform.crop_size),
            transforms.ToTensor(),
            transforms.Normalize(transform.mean, transform.std),
        ]
    elif isinstance(transform, transforms.Compose):
        steps = list(transform.transforms)
    else:
        raise UnsupportedTransform(f"{type(transform).__name__} is not a torchvision Compose of known eval steps")
    geometry: list[Step] = []
    rest = iter(steps)
    for step in rest:
        if isinstance(step, transforms.ToTensor):  # timm's MaybeToTensor too: PIL -> float / 255
            break
        geometry.append(_geometry_step(step))
    else:
        raise UnsupportedTransform("the transform does not end in ToTensor (+ Normalize)")
    after = list(rest)
    if len(after) > 1 or (after and not isinstance(after[0], transforms.Normalize)):
        raise UnsupportedTransform(f"steps {after!r} after ToTensor (only one Normalize is mirrored)")
    mean, std = ([0.0] * 3, [1.0] * 3) if not after else (after[0].mean, after[0].std)
    mean, std = torch.as_tensor(mean).flatten().tolist(), torch.as_tensor(std).flatten().tolist()
    return TensorTransform(geometry, mean, std, border_px)


def _geometry_step(step: Any) -> Step:
    """One PIL step before ToTensor as a function of a ``[k, 3, h, w]`` float batch (levels 0..255)."""
    from timm.data.transforms import CenterCropOrPad, ResizeKeepRatio, TrimBorder
    from torchvision import transforms
    from torchvision.transforms.v2 import functional as F

    if isinstance(step, transforms.Resize):
        interpolation = _interpolation(step.interpolation, step)
        return lambda x: _rounded(F.resize(x, step.size, interpolation, step.max_size, antialias=True))
    if isinstance(step, ResizeKeepRatio):
        if step.random_scale_prob > 0 or step.random_aspect_prob > 0:
            raise UnsupportedTransform(f"step {step!r} is random")
        interpolation = _interpolation(step.interpolation, step)

        def keep_ratio(x: torch.Tensor) -> torch.Tensor:
            size = ResizeKeepRatio.get_params(x, step.size, step.longest)  # timm's own arithmetic
            return _rounded(F.resize(x, size, interpolation, antialias=True))

        return keep_ratio
    if isinstance(step, transforms.CenterCrop):
        return lambda x: F.center_crop(x, list(step.size))  # pads with 0 where the image is smaller, as on PIL
    if isinstance(step, CenterCropOrPad):
        return lambda x: _center_crop_or_pad(x, step.size, step.fill)
    if isinstance(step, TrimBorder):
        return step  # F.crop on tensors, same arithmetic
    if _converts_to_rgb(step):
        return lambda x: x  # the decoded images are RGB already
    raise UnsupportedTransform(f"step {step!r} has no tensor counterpart here")


def _converts_to_rgb(step: Any) -> bool:
    """open_clip's ``MaybeConvertMode("RGB")`` (its eval transforms convert PIL images to RGB)."""
    try:
        from open_clip.transform import MaybeConvertMode
    except ImportError:
        return False
    return isinstance(step, MaybeConvertMode) and step.mode == "RGB"


def _interpolation(mode: Any, step: Any):
    from torchvision.transforms import InterpolationMode

    if isinstance(mode, tuple) or mode not in (InterpolationMode.BILINEAR, InterpolationMode.BICUBIC):
        raise UnsupportedTransform(f"step {step!r}: only bilinear and bicubic resizing are mirrored")
    return mode


def _rounded(x: torch.Tensor) -> torch.Tensor:
    """PIL resizes 8-bit images to 8-bit results: round and clip (bicubic overshoots)."""
    return x.round_().clamp_(0, 255)


def _center_crop_or_pad(x: torch.Tensor, size: Sequence[int], fill: Any) -> torch.Tensor:
    """timm's ``center_crop_or_pad`` (pad with ``fill`` per channel, then centre crop) on a batch."""
    from torchvision.transforms.v2 import functional as F

    height, width = size
    image_height, image_width = x.shape[-2:]
    if width > image_width or height > image_height:
        fill = [float(v) for v in fill] if isinstance(fill, (list, tuple)) else float(fill)
        padding = [
            (width - image_width) // 2 if width > image_width else 0,
            (height - image_height) // 2 if height > image_height else 0,
            (width - image_width + 1) // 2 if width > image_width else 0,
            (height - image_height + 1) // 2 if height > image_height else 0,
        ]
        x = F.pad(x, padding, fill=fill)
        image_height, image_width = x.shape[-2:]
    top = int(round((image_height - height) / 2.0))
    left = int(round((image_width - width) / 2.0))
    return x[..., top : top + height, left : left + width]


__all__ = [
    "TensorTransform",
    "UnsupportedTransform",
    "decode_jpegs",
    "device_decodable",
    "tensor_transform",
]
