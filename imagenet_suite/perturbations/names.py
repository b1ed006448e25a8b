"""The corruptions by name: the ImageNet-C set, the extra four, Heuillet et al. 2025's eleven, their families,
severities and flavours — what a config or an option names, without NumPy, SciPy or OpenCV.

:mod:`.corruptions` (the implementations) re-exports every name; the ``perturbations`` builder reads its
configs and options from here, so that ``imagenet-suite list``/``info`` need none of the image libraries.
"""

from __future__ import annotations

FLAVORS = ("imagenet_c", "imagecorruptions")
SEVERITIES = (1, 2, 3, 4, 5)
FROST_FILES = ("frost1.png", "frost2.png", "frost3.png", "frost4.jpg", "frost5.jpg", "frost6.jpg")  # upstream order

IMAGENET_C = (
    "gaussian_noise",
    "shot_noise",
    "impulse_noise",
    "defocus_blur",
    "glass_blur",
    "motion_blur",
    "zoom_blur",
    "snow",
    "frost",
    "fog",
    "brightness",
    "contrast",
    "elastic_transform",
    "pixelate",
    "jpeg_compression",
)
IMAGENET_C_EXTRA = ("speckle_noise", "gaussian_blur", "spatter", "saturate")
# Heuillet et al. 2025 (MaxHeuillet/robust_training, corruptions/common.py): 11 corruptions,
# gaussian_noise/glass_blur/frost/fog commented out.
HEUILLET_COMMON = (
    "shot_noise",
    "impulse_noise",
    "defocus_blur",
    "motion_blur",
    "zoom_blur",
    "snow",
    "brightness",
    "contrast",
    "elastic_transform",
    "pixelate",
    "jpeg_compression",
)
FAMILIES = {
    "noise": ("gaussian_noise", "shot_noise", "impulse_noise", "speckle_noise"),
    "blur": ("defocus_blur", "glass_blur", "motion_blur", "zoom_blur", "gaussian_blur"),
    "weather": ("snow", "frost", "fog", "brightness", "spatter"),
    "digital": ("contrast", "elastic_transform", "pixelate", "jpeg_compression", "saturate"),
}

CORRUPTION_NAMES = IMAGENET_C + IMAGENET_C_EXTRA  # every corruption :func:`.corruptions.corrupt` applies

__all__ = [
    "CORRUPTION_NAMES",
    "FAMILIES",
    "FLAVORS",
    "FROST_FILES",
    "HEUILLET_COMMON",
    "IMAGENET_C",
    "IMAGENET_C_EXTRA",
    "SEVERITIES",
]
