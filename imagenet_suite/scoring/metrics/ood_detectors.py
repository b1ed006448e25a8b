"""OOD detectors on torch tensors: every score is larger for "more in-distribution".

The detectors of NINCO (Bitterwolf et al. 2023) and OpenOOD v1.5, computed on the device of the tensors given,
in row chunks, in float64 (MSP and KNN: float32, see below):

=====================  =====================================================  ====================
detector               score (larger = ID)                                    needs
=====================  =====================================================  ====================
msp                    max softmax probability, float32 (below)               outputs (any kind)
maxlogit               max logit                                              logits
energy                 logsumexp(logits) (T = 1)                              logits
kl_matching            −min_c KL(p ‖ d_c), d_c = mean softmax of the fit      outputs + stats
                       samples *predicted* as c (one-hot if none)
vim                    logsumexp(o) − α‖(h − u)·NS‖ (ViM; strictly monotone   features + stats
                       in the paper's form, same FPR/AUROC)
mahalanobis            −min_c (h−μ_c)ᵀ P (h−μ_c), shared class-centred cov    features + stats
relative_mahalanobis   mahalanobis + (h−μ_g)ᵀ P_g (h−μ_g)                     features + stats
knn                    −(squared L2 distance to the K-th nearest normalized   features + stats
                       train feature)
cosine                 max_c cos(h, μ_c) (a true cosine: h is normalized too)  features + stats
rcos                   max_c softmax_c(cos(h, μ_c) / T), T = 1 (MCM/RCos)     features + stats
react_energy           logsumexp(W·min(h, r) + b)                             features + stats
=====================  =====================================================  ====================

``h`` are penultimate ("pre-logit") features, ``W``/``b`` the last linear layer (``o = W h + b``).

MSP is the float32 softmax of the float32 outputs, as both authors' code computes it: OpenOOD v1.5's
``BasePostprocessor.postprocess`` (``torch.softmax(net(data), dim=1)`` of the float32 logits, then
``torch.max``) and NINCO's ``evaluate.py`` (``scipy.special.softmax`` of the float32 logits its
``extract_features`` saved, which keeps float32; ``detection_methods.evaluate_MSP`` takes the max). A confident
model's top probability rounds to 1.0 (or 0.99999994, ...) in float32 for many images, and those ties are part of
the published AUROC/AUPR/FPR@95; a float64 softmax would break them. The float32 values are returned as float64
(exactly), like every other score. KNN is float32 like faiss.
The detectors that need statistics take them as a :class:`~.ood_detector_stats.DetectorStats` (saveable;
:data:`~.ood_detector_stats.PRESETS` holds the hyper-parameters of the two anchors, ``ninco`` and
``openood_v15``), which :func:`~.ood_detector_fit.fit_detector_stats` computes once from a
:class:`~.ood_fit.FitSet` of train tensors (:mod:`.ood_fit`: the estimators, pass by pass over row chunks).
"""

from __future__ import annotations

from contextlib import nullcontext

import torch

from ...errors import ConfigError
from ..batching import map_chunks, row_chunks
from ..threads import chunk_parallel_cpu
from .ood_detector_stats import PRESETS, STATS_FIELDS, DetectorStats
from .ood_fit import QUERY_ELEMENTS, l2_normalize

DETECTORS = (
    "msp",
    "maxlogit",
    "energy",
    "kl_matching",
    "vim",
    "mahalanobis",
    "relative_mahalanobis",
    "knn",
    "cosine",
    "rcos",
    "react_energy",
)
NEEDS_LOGITS = {"maxlogit", "energy"}  # raw logits, not probabilities
NEEDS_FEATURES = {"vim", "mahalanobis", "relative_mahalanobis", "knn", "cosine", "rcos", "react_energy"}
KNN_QUERY_ROWS = 1024  # queries per KNN block (each meets the bank in KNN_BANK_ROWS slices)
KNN_BANK_ROWS = 1 << 14


def available_detectors(kind: str, has_features: bool, stats: DetectorStats | None) -> list[str]:
    """The detectors these inputs allow, in :data:`DETECTORS` order.

    Example:
        >>> available_detectors("logits", has_features=False, stats=None)
        ['msp', 'maxlogit', 'energy']
        >>> available_detectors("probs", has_features=False, stats=None)
        ['msp']
    """
    out = []
    for name in DETECTORS:
        if name in NEEDS_LOGITS and kind != "logits":
            continue
        if name in NEEDS_FEATURES and not has_features:
            continue
        if name in STATS_FIELDS and (stats is None or stats.missing(name)):
            continue
        if name == "knn" and stats.knn_k > len(stats.knn_bank):
            continue
        if name == "vim" and kind != "logits" and stats.weight is None:
            continue
        out.append(name)
    return out


def why_unavailable(name: str, kind: str, has_features: bool, stats: DetectorStats | None) -> str:
    """What a detector lacks, for an error message ('' if it can run).

    Example:
        >>> why_unavailable("energy", "probs", has_features=False, stats=None)
        "needs raw logits, the outputs are 'probs'"
        >>> why_unavailable("msp", "probs", has_features=False, stats=None)
        ''
    """
    if name not in DETECTORS:
        return f"unknown detector (known: {list(DETECTORS)})"
    if name in NEEDS_LOGITS and kind != "logits":
        return f"needs raw logits, the outputs are {kind!r}"
    if name in NEEDS_FEATURES and not has_features:
        return "needs penultimate features of the ID and OOD images"
    if name in STATS_FIELDS and stats is None:
        return "needs fitted train statistics (fit_detector_stats / --detector-stats)"
    if name in STATS_FIELDS and stats.missing(name):
        return f"the detector statistics lack {stats.missing(name)}"
    if name == "knn" and stats.knn_k > len(stats.knn_bank):
        return f"needs K={stats.knn_k} ≤ the {len(stats.knn_bank)} fitted train features"
    return ""


def detector_scores(
    name: str,
    outputs: torch.Tensor,
    kind: str = "logits",
    features: torch.Tensor | None = None,
    stats: DetectorStats | None = None,
) -> torch.Tensor:
    """Scores [N] (float64, larger = more ID) of detector ``name`` on ``outputs`` [N, C] of ``kind``
    (``logits``/``probs``/``log_probs``) and, for feature-based detectors, ``features`` [N, d].

    Example:
        Logits (2, 0, 0) and (0, 0, 0): MSP is e² / (e² + 2) and 1/3, energy log(e² + 2) and log 3:

        >>> import torch
        >>> logits = torch.tensor([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
        >>> detector_scores("msp", logits).round(decimals=6)
        tensor([0.7870, 0.3333], dtype=torch.float64)
        >>> detector_scores("energy", logits).round(decimals=6)
        tensor([2.2395, 1.0986], dtype=torch.float64)
        >>> detector_scores("maxlogit", logits)
        tensor([2., 0.], dtype=torch.float64)

        Feature-based detectors need statistics fitted on the train set
        (:func:`~.ood_detector_fit.fit_detector_stats`); the cosine detector scores the largest cosine to
        a class mean, (1, 0) and (0, 1) here:

        >>> from imagenet_suite.scoring.metrics.ood_detector_fit import fit_detector_stats
        >>> from imagenet_suite.scoring.metrics.ood_fit import FitSet
        >>> train = torch.tensor([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]])
        >>> stats = fit_detector_stats(FitSet(train, torch.tensor([0, 0, 1, 1])), detectors=["cosine"])
        >>> features = torch.tensor([[2.0, 0.0], [1.0, 1.0]])
        >>> detector_scores("cosine", torch.zeros(2, 2), features=features, stats=stats).round(decimals=6)
        tensor([1.0000, 0.7071], dtype=torch.float64)
    """
    reason = why_unavailable(name, kind, features is not None, stats)
    if reason:
        raise ConfigError(f"OOD detector {name!r}: {reason}")
    if stats is not None:
        stats = stats.to(outputs.device)
    n = outputs.shape[0]
    width = max(outputs.shape[1], features.shape[1] if features is not None else 1)
    chunks = (
        [slice(i, min(n, i + KNN_QUERY_ROWS)) for i in range(0, n, KNN_QUERY_ROWS)]
        if name == "knn"
        else list(row_chunks(n, width, QUERY_ELEMENTS))
    )
    with chunk_parallel_cpu() if outputs.device.type == "cpu" else nullcontext():
        parts = map_chunks(
            lambda rows: _score_chunk(name, outputs[rows], kind, None if features is None else features[rows], stats),
            chunks,
            outputs.device,
        )
    return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.float64, device=outputs.device)


def _score_chunk(name, outputs, kind, features, stats) -> torch.Tensor:
    if name == "msp":
        return msp_float32(outputs, kind)
    if name == "maxlogit":
        return outputs.double().max(dim=1).values
    if name == "energy":
        return torch.logsumexp(outputs.double(), dim=1)
    if name == "kl_matching":
        return -_min_kl(_probabilities(outputs, kind), stats.klm_templates)
    h = features.double()
    if name == "mahalanobis":
        return -_mahalanobis(h, stats.class_means, stats.precision).min(dim=1).values
    if name == "relative_mahalanobis":
        global_term = _mahalanobis(h, stats.global_mean[None, :], stats.global_precision)[:, 0]
        return -_mahalanobis(h, stats.class_means, stats.precision).min(dim=1).values + global_term
    if name in ("cosine", "rcos"):
        cosines = l2_normalize(h) @ l2_normalize(stats.class_means).T
        return cosines.max(dim=1).values if name == "cosine" else torch.softmax(cosines, dim=1).max(dim=1).values
    if name == "knn":
        return -_kth_squared_distance(
            l2_normalize(features.to(stats.knn_bank.dtype)), stats.knn_bank, stats.knn_k
        ).double()
    if name == "react_energy":
        clipped = torch.clamp(h, max=stats.react_threshold)
        return torch.logsumexp(clipped @ stats.weight.T + stats.bias, dim=1)
    # vim
    logits = (
        outputs.double()
        if kind == "logits" and PRESETS[stats.preset].vim_logits == "given"
        else h @ stats.weight.T + stats.bias
    )
    residual = torch.linalg.vector_norm((h - stats.vim_origin) @ stats.vim_null_space, dim=1)
    return torch.logsumexp(logits, dim=1) - stats.vim_alpha * residual


def msp_float32(outputs: torch.Tensor, kind: str = "logits") -> torch.Tensor:
    """Max softmax probability [N] as OpenOOD v1.5 and NINCO compute it: in float32 (module docstring), returned
    as float64. ``kind``: ``logits`` (softmax), ``probs`` (as given) or ``log_probs`` (exp).

    Example:
        Logits (20, 0, 0): the float32 softmax is exactly 1.0 (e⁻²⁰ is below half an ulp of 1), where float64
        gives 1 − 2e⁻²⁰ ≈ 1 − 4.1e-9:

        >>> import torch
        >>> logits = torch.tensor([[20.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
        >>> msp_float32(logits).tolist()[0], torch.softmax(logits.double(), dim=1).max(dim=1).values[0].item() < 1
        (1.0, True)
        >>> float(msp_float32(logits)[1]) == float(torch.tensor(1 / 3, dtype=torch.float32))
        True
    """
    values = outputs.float()
    if kind == "logits":
        values = torch.softmax(values, dim=1)
    elif kind == "log_probs":
        values = values.exp()
    return values.max(dim=1).values.double()


def _probabilities(outputs: torch.Tensor, kind: str) -> torch.Tensor:
    values = outputs.double()
    if kind == "logits":
        return torch.softmax(values, dim=1)
    return values.exp() if kind == "log_probs" else values


def _min_kl(probs: torch.Tensor, templates: torch.Tensor) -> torch.Tensor:
    """min_c KL(p ‖ d_c) with KL = Σ_{p>0} p log(p / q) (scipy ``entropy``; inf where p > 0 = q)."""
    negentropy = torch.special.xlogy(probs, probs).sum(dim=1)
    log_templates = torch.where(templates > 0, templates.log(), torch.zeros_like(templates))
    divergence = negentropy[:, None] - probs @ log_templates.T
    with_zeros = (templates == 0).any(dim=1).nonzero().flatten()  # e.g. the one-hot templates of unseen classes
    if len(with_zeros):
        positive = probs > 0
        impossible = torch.ones(len(probs), len(with_zeros), dtype=torch.bool, device=probs.device)
        # a row with no zero probability meets a zero of every such template; only the others need the count
        some_zero = (~positive.all(dim=1)).nonzero().flatten()
        if len(some_zero):
            zeros = (templates[with_zeros] == 0).double()
            impossible[some_zero] = positive[some_zero].double() @ zeros.T > 0
        divergence[:, with_zeros] = torch.where(impossible, float("inf"), divergence[:, with_zeros])
    return divergence.min(dim=1).values


def _mahalanobis(h: torch.Tensor, means: torch.Tensor, precision: torch.Tensor) -> torch.Tensor:
    """[N, C] squared Mahalanobis distances (h − μ_c)ᵀ P (h − μ_c), expanded (float64)."""
    projected = h @ precision
    own = (projected * h).sum(dim=1)
    cross = projected @ means.T
    means_term = ((means @ precision) * means).sum(dim=1)
    return own[:, None] - 2 * cross + means_term[None, :]


def _kth_squared_distance(
    queries: torch.Tensor, bank: torch.Tensor, k: int, bank_chunk: int = KNN_BANK_ROWS
) -> torch.Tensor:
    """Squared L2 distance of each query to its k-th nearest bank row (faiss IndexFlatL2's ``D[:, k-1]``)."""
    best = None
    query_norms = (queries * queries).sum(dim=1, keepdim=True)
    for start in range(0, len(bank), bank_chunk):
        block = bank[start : start + bank_chunk]
        distances = query_norms - 2 * queries @ block.T + (block * block).sum(dim=1)[None, :]
        merged = distances if best is None else torch.cat([best, distances], dim=1)
        best = torch.topk(merged, min(k, merged.shape[1]), dim=1, largest=False).values
    return best[:, k - 1].clamp_min(0)
