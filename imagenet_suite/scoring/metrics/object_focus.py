"""Object focus (Beyond Accuracy, Hesse et al. 2025): how little a model's IN-9 accuracy depends on the
background's class.

Xiao et al. (2021, "Noise or Signal: The Role of Image Backgrounds in Object Recognition") measure
the **BG-gap** ``A_mixed_same − A_mixed_rand``: the accuracy lost when each image's foreground is
pasted on the background of a random class (``mixed_rand``) instead of one of its own class
(``mixed_same``, the control for editing artifacts). The QUBA benchmark reports its complement,
**object focus** ``OF = 1 − (A_mixed_same − A_mixed_rand)``, with both accuracies from the
IN-9-mapped 1000-way top-1 (the ``backgrounds_challenge`` builder's ``argmax_then_map`` protocol).

This is the paper's formula. QUBA's code divides the gap by clean ImageNet accuracy instead
(``1 − gap / A_imagenet``), but the published numbers match the paper: ResNet-50's README accuracies
86.2 % / 78.9 % give 0.927 (Table 12: 0.93), the code variant 0.904.

A cross-config summary: it takes two accuracies (fractions in [0, 1]), not model outputs.
"""

from __future__ import annotations

import math


def object_focus(mixed_same_accuracy: float, mixed_rand_accuracy: float) -> float:
    """``1 − (mixed_same_accuracy − mixed_rand_accuracy)``; accuracies are fractions in [0, 1].

    ValueError for a value outside [0, 1] (a percentage passed by mistake) or not finite.

    Example:
        ResNet-50's IN-9 accuracies in the Backgrounds Challenge README, 86.2 % (mixed_same) and
        78.9 % (mixed_rand): a BG-gap of 7.3 points (Beyond Accuracy's Table 12 prints 0.93):

        >>> round(object_focus(0.862, 0.789), 3)
        0.927
        >>> object_focus(0.5, 0.5)  # no accuracy lost to a foreign background
        1.0
    """
    for name, value in (("mixed_same_accuracy", mixed_same_accuracy), ("mixed_rand_accuracy", mixed_rand_accuracy)):
        if not math.isfinite(value) or not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be a fraction in [0, 1], got {value!r}")
    return 1.0 - (float(mixed_same_accuracy) - float(mixed_rand_accuracy))


__all__ = ["object_focus"]
