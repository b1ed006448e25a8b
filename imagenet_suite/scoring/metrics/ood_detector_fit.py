"""Fitting the OOD detectors' train statistics: :func:`fit_detector_stats` gives a
:class:`~.ood_detector_stats.DetectorStats`.

What each detector and anchor (:data:`~.ood_detector_stats.PRESETS`) fits, and on which set (the train
set, or the ID validation set), composed of the pass statistics of :mod:`.ood_fit` (the estimators,
accumulated over row chunks in bounded memory); and the same estimators in one call on in-memory tensors:
:func:`class_statistics`, :func:`global_statistics`, :func:`klm_templates`, :func:`exact_quantile`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from ...errors import ConfigError, OutputsError, param
from .ood_detector_stats import DetectorStats, Preset, preset, vim_dimension
from .ood_detectors import DETECTORS
from .ood_fit import (
    ClassMoments,
    FitChunks,
    FitSet,
    PassStatistic,
    PredictedSoftmax,
    RadixQuantile,
    RowSample,
    VimSpace,
    numpy_lerp,
    run_passes,
    sample_positions,
)


def fit_detector_stats(
    train: FitSet | FitChunks,
    *,
    val: FitSet | None = None,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    preset_name: str = "ninco",
    detectors: Sequence[str] | None = None,
    knn_dtype: torch.dtype = torch.float32,
    knn_rows: int | None = None,
    seed: int = 0,
    progress: bool = False,
) -> DetectorStats:
    """Fit the statistics of ``detectors`` (default: every one the inputs allow) on the tensors' device.

    Args:
        train: the ID training set: features [N, d] and true labels [N] (Mahalanobis, cosine and rcos
            class means), and optionally raw logits [N, C] (NINCO: ViM's α, KL-matching templates); a
            :class:`FitSet` in memory, or a :class:`FitChunks` read chunk by chunk, pass after pass
            (:mod:`.ood_fit`: bounded memory, the same estimators).
        val: an ID validation set (:class:`FitSet` of ``features`` and/or ``logits``; OpenOOD preset:
            ReAct clip, KL-matching templates).
        weight, bias: the last layer, [C, d] and [C] (ViM, ReAct; OpenOOD's ViM logits).
        preset_name: the hyper-parameters of one anchor (:data:`~.ood_detector_stats.PRESETS`: ``ninco``, ``openood_v15``).
        knn_dtype: dtype of the KNN bank and distances (float32 like faiss; float64 for exact checks).
        knn_rows: rows of the KNN bank: None, every train row (NINCO); else at most this many, a seeded
            uniform sample (:func:`~.ood_fit.sample_positions` with ``seed``).
        progress: a progress bar per pass over ``train`` (stderr).

    Example:
        Class means of 2-d train features, for the cosine detector (see
        :func:`~.ood_detectors.detector_scores`):

        >>> import torch
        >>> features = torch.tensor([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]])
        >>> from imagenet_suite.scoring.metrics.ood_fit import FitSet
        >>> stats = fit_detector_stats(FitSet(features, torch.tensor([0, 0, 1, 1])), detectors=["cosine"])
        >>> stats.class_means
        tensor([[2., 0.],
                [0., 2.]], dtype=torch.float64)
    """
    settings = preset(preset_name)
    source = train if isinstance(train, FitChunks) else FitChunks.of(_checked_train(train))
    first = source.first()
    _check_fit_inputs(first, weight, bias)
    val = FitSet() if val is None else val
    wanted = set(DETECTORS if detectors is None else detectors)
    stats = DetectorStats(preset_name, knn_k=settings.knn_k)
    if weight is not None:
        device = first.features.device
        stats.weight, stats.bias = weight.to(device, torch.float64), bias.to(device, torch.float64)
    num_classes = _num_classes(weight, first.logits, train, source)
    steps: dict[str, PassStatistic] = {}
    if {"mahalanobis", "relative_mahalanobis", "cosine", "rcos"} & wanted:
        steps["class"] = ClassMoments(num_classes)
    if "relative_mahalanobis" in wanted:
        steps["global"] = ClassMoments(None)
    if "knn" in wanted:
        steps["knn"] = RowSample(sample_positions(source.rows, knn_rows, seed), knn_dtype)
    if "kl_matching" in wanted:
        _add_klm(steps, stats, settings, first, val, num_classes)
    if "react_energy" in wanted and weight is not None:
        _add_react(steps, stats, settings, val)
    if "vim" in wanted and weight is not None and (first.logits is not None or settings.vim_logits == "recomputed"):
        dim = vim_dimension(first.features.shape[1], settings.vim_dim)
        steps["vim"] = VimSpace(
            stats.weight, stats.bias, dim, first.logits is not None and settings.vim_logits == "given"
        )
    run_passes(source, list(steps.values()), progress)
    _store(stats, steps, settings, source.rows)
    return stats


def _checked_train(train) -> FitSet:
    if not isinstance(train, FitSet):
        raise OutputsError(f"{param('train')} must be a FitSet or FitChunks, got {type(train).__name__}")
    return train


def _add_klm(steps: dict, stats: DetectorStats, settings: Preset, first: FitSet, val: FitSet, num_classes: int) -> None:
    """KL-matching templates: on the train logits (a pass statistic) or the val logits (in memory)."""
    if settings.klm_fit == "val":
        stats.klm_templates = klm_templates(_fit_set("val", None, val.logits, "kl_matching"))
    elif first.logits is not None:
        steps["klm"] = PredictedSoftmax(num_classes)
    if settings.klm_fit == "val" or first.logits is not None:
        stats.extra["kl_matching"] = f"{settings.klm_fit} softmax, grouped by predicted class"


def _add_react(steps: dict, stats: DetectorStats, settings: Preset, val: FitSet) -> None:
    """The ReAct clip: a quantile of every train activation (a pass statistic) or of the val ones (in memory)."""
    if settings.react_fit == "train":
        steps["react"] = RadixQuantile(settings.react_quantile)
    else:
        stats.react_threshold = exact_quantile(
            _fit_set("val", None, val.features, "react_energy"), settings.react_quantile
        )
    stats.extra["react_energy"] = f"quantile {settings.react_quantile} of all {settings.react_fit} activations"


def _store(stats: DetectorStats, steps: dict[str, PassStatistic], settings: Preset, rows: int) -> None:
    """The fitted statistics into ``stats`` (and what each was fitted on into ``stats.extra``)."""
    if "class" in steps:
        stats.class_means, stats.precision = steps["class"].means, steps["class"].precision
        stats.extra["class_statistics"] = "train features, true labels"
    if "global" in steps:
        stats.global_mean, stats.global_precision = steps["global"].means[0], steps["global"].precision
    if "knn" in steps:
        stats.knn_bank = steps["knn"].bank
        if len(stats.knn_bank) < rows:
            stats.extra["knn"] = f"a seeded uniform sample of {len(stats.knn_bank)} of the {rows} train features"
    if "klm" in steps:
        stats.klm_templates = steps["klm"].templates
    if "react" in steps:
        stats.react_threshold = steps["react"].value
    if "vim" in steps:
        vim = steps["vim"]
        stats.vim_origin, stats.vim_null_space, stats.vim_dim, stats.vim_alpha = (
            vim.origin,
            vim.null_space,
            vim.dim,
            vim.alpha,
        )
        logits = "logits" if vim.given_logits else "W h + b"
        stats.extra["vim"] = f"D={vim.dim}, alpha from train {logits}"


def _check_fit_inputs(first: FitSet | None, weight: torch.Tensor | None, bias: torch.Tensor | None) -> None:
    if first is None or first.features is None or first.labels is None:
        raise OutputsError(f"{param('train')} needs features [N, d] and their true labels [N]")
    if (weight is None) != (bias is None):
        raise OutputsError(f"give both {param('weight')} and {param('bias')} of the last layer, or neither")
    features = first.features
    if weight is not None and (weight.shape[1] != features.shape[1] or bias.shape != (weight.shape[0],)):
        raise OutputsError(
            f"last layer {param('weight')} {tuple(weight.shape)} / {param('bias')} {tuple(bias.shape)} do not fit "
            f"{features.shape[1]}-d features"
        )


def _num_classes(weight, logits, train, source: FitChunks) -> int:
    if weight is not None:
        return weight.shape[0]
    if logits is not None:
        return logits.shape[1]
    if isinstance(train, FitSet):
        return int(train.labels.max()) + 1
    if source.num_classes is not None:
        return source.num_classes
    raise OutputsError(
        f"chunked {param('train')} needs logits, the last layer ({param('weight')}) or FitChunks.num_classes: "
        "how many classes?"
    )


def _fit_set(which: str, train, val, detector: str):
    if which == "train":
        return train
    if val is None:
        raise ConfigError(
            f"the openood_v15 preset fits {detector} on the ID validation set: pass {param('val')} "
            "(a FitSet of its features and logits)"
        )
    return val


def _fitted(statistic: PassStatistic, features: torch.Tensor, labels: torch.Tensor | None = None):
    """``statistic`` after its passes over in-memory tensors."""
    run_passes(FitChunks.of(FitSet(features, labels)), [statistic])
    return statistic


def class_statistics(
    features: torch.Tensor, labels: torch.Tensor, num_classes: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Class means [C, d] (float64) and the pseudo-inverse of the shared covariance of class-centred
    features, ``(1/N) Σ (h − μ_y)(h − μ_y)ᵀ`` (sklearn ``EmpiricalCovariance(assume_centered=True)``), two passes
    (:class:`~.ood_fit.ClassMoments`).

    Example:
        Class 0 at (0, 0) and (2, 0), class 1 at (0, 2) and (2, 2): means (1, 0) and (1, 2); the
        class-centred features (±1, 0) vary along the first axis only, with variance 1:

        >>> features = torch.tensor([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0]])
        >>> means, precision = class_statistics(features, torch.tensor([0, 0, 1, 1]), num_classes=2)
        >>> means
        tensor([[1., 0.],
                [1., 2.]], dtype=torch.float64)
        >>> precision
        tensor([[1., 0.],
                [0., 0.]], dtype=torch.float64)
    """
    moments = _fitted(ClassMoments(num_classes), features, labels)
    return moments.means, moments.precision


def global_statistics(features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The global mean and the pseudo-inverse of ``(1/N) Σ (h − μ)(h − μ)ᵀ`` (float64, two passes).

    Example:
        The corners of a square of side 2: mean (1, 1), covariance the identity:

        >>> mean, precision = global_statistics(torch.tensor([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0]]))
        >>> mean
        tensor([1., 1.], dtype=torch.float64)
        >>> precision
        tensor([[1., 0.],
                [0., 1.]], dtype=torch.float64)
    """
    moments = _fitted(ClassMoments(None), features)
    return moments.means[0], moments.precision


def klm_templates(logits: torch.Tensor) -> torch.Tensor:
    """[C, C]: row c is the mean softmax of the samples predicted as c; one-hot e_c if none is (OpenOOD).

    Example:
        Two samples predicted as class 0, one as class 1, none as class 2:

        >>> probs = torch.tensor([[0.75, 0.125, 0.125], [0.875, 0.0625, 0.0625], [0.25, 0.5, 0.25]])
        >>> klm_templates(probs.log()).round(decimals=6)
        tensor([[0.8125, 0.0938, 0.0938],
                [0.2500, 0.5000, 0.2500],
                [0.0000, 0.0000, 1.0000]], dtype=torch.float64)
    """
    step = PredictedSoftmax(logits.shape[1])
    run_passes(FitChunks.of(FitSet(logits=logits)), [step])
    return step.templates


def exact_quantile(values: torch.Tensor, q: float, sort_limit: int = 1 << 24) -> float:
    """``numpy.quantile(values, q)`` (linear interpolation) over all elements, exactly, in bounded memory.

    Up to ``sort_limit`` elements the values are sorted; beyond, the two order statistics needed are
    found by a radix select on order-preserving integer keys, 16 bits per pass over chunks of the values
    (:class:`~.ood_fit.RadixQuantile`), so a 1.28M x 2048 train-feature tensor never needs a second copy.
    Computed on the values in float64.

    Example:
        The 0.9-quantile of 0, 1, 2, 3, 4 lies 0.6 of the way from 3 to 4 (position 0.9 · 4 = 3.6),
        whether the values are sorted or found by radix select:

        >>> values = torch.arange(5.0)
        >>> round(exact_quantile(values, 0.9), 12), round(exact_quantile(values, 0.9, sort_limit=1), 12)
        (3.6, 3.6)
    """
    flat = values.reshape(-1)
    n = flat.numel()
    if n == 0:
        raise OutputsError("cannot take a quantile of an empty tensor")
    if n > sort_limit:
        step = RadixQuantile(q)
        run_passes(FitChunks.of(FitSet(flat[:, None]), max_elements=1 << 24), [step])
        return step.value
    position = (n - 1) * q
    low = int(np.floor(position))
    ordered = torch.sort(flat.double()).values
    return numpy_lerp(float(ordered[low]), float(ordered[min(low + 1, n - 1)]), position - low)
