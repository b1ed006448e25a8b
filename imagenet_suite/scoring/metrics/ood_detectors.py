"""OOD detectors on torch tensors: every score is larger for "more in-distribution".

The detectors of NINCO (Bitterwolf et al. 2023) and OpenOOD v1.5, computed on the device of the tensors given,
in row chunks, in float64 (KNN: float32 like faiss):

=====================  =====================================================  ====================
detector               score (larger = ID)                                    needs
=====================  =====================================================  ====================
msp                    max softmax probability                                outputs (any kind)
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
:func:`fit_detector_stats` computes the train statistics once (:class:`DetectorStats`, saveable) from a
:class:`FitSet` of train tensors;
:data:`PRESETS` holds the hyper-parameters of the two anchors (``ninco``, ``openood_v15``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
import torch

from ...errors import ConfigError, OutputsError, param
from ..batching import map_chunks, row_chunks
from ..outputs import Expected, load_torch_file, read_npz_entries, read_pt_entries
from ..threads import chunk_parallel_cpu

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
STATS_FIELDS = {
    "kl_matching": ("klm_templates",),
    "vim": ("vim_origin", "vim_null_space", "vim_alpha"),
    "mahalanobis": ("class_means", "precision"),
    "relative_mahalanobis": ("class_means", "precision", "global_mean", "global_precision"),
    "knn": ("knn_bank",),
    "cosine": ("class_means",),
    "rcos": ("class_means",),
    "react_energy": ("react_threshold", "weight", "bias"),
}
QUERY_ELEMENTS = 1 << 22  # elements of a [rows, C] or [rows, d] block scored at once
KNN_QUERY_ROWS = 1024  # queries per KNN block (each meets the bank in KNN_BANK_ROWS slices)
KNN_BANK_ROWS = 1 << 14


@dataclass(frozen=True)
class Preset:
    """Hyper-parameters that make a detector one anchor's rather than the other's."""

    name: str
    knn_k: int  # neighbours (NINCO 1000; OpenOOD 50, its APS default)
    vim_dim: int | None  # principal-space dimension D; None = NINCO's rule on the feature dimension
    vim_logits: str  # "given": the model's logits (NINCO); "recomputed": W h + b (OpenOOD)
    react_quantile: float  # ReAct clip = this quantile of all fit activations
    react_fit: str  # "train" (NINCO: train features) or "val" (OpenOOD: ID validation features)
    klm_fit: str  # KL-matching templates from "train" (NINCO) or "val" (OpenOOD) softmax


PRESETS = {
    "ninco": Preset(
        "ninco", knn_k=1000, vim_dim=None, vim_logits="given", react_quantile=0.99, react_fit="train", klm_fit="train"
    ),
    "openood_v15": Preset(
        "openood_v15",
        knn_k=50,
        vim_dim=256,
        vim_logits="recomputed",
        react_quantile=0.90,
        react_fit="val",
        klm_fit="val",
    ),
}


def preset(name: str) -> Preset:
    """The hyper-parameters of anchor ``name`` (:data:`PRESETS`); ConfigError for an unknown name.

    Example:
        >>> preset("ninco").knn_k, preset("openood_v15").knn_k
        (1000, 50)
    """
    if name not in PRESETS:
        raise ConfigError(f"unknown OOD preset {name!r}; expected one of {list(PRESETS)}")
    return PRESETS[name]


def vim_dimension(feature_dim: int, chosen: int | None) -> int:
    """ViM's principal dimension D: NINCO's rule (1000 if d ≥ 2048, 512 if d ≥ 768, else d // 2) or ``chosen``.

    Example:
        >>> vim_dimension(2048, None), vim_dimension(768, None), vim_dimension(384, None), vim_dimension(2048, 256)
        (1000, 512, 192, 256)
    """
    if chosen is None:
        return 1000 if feature_dim >= 2048 else 512 if feature_dim >= 768 else feature_dim // 2
    if not 0 < chosen < feature_dim:
        raise ConfigError(f"ViM dimension D={chosen} must be in 1..{feature_dim - 1} for {feature_dim}-d features")
    return chosen


# -- features with ids ---------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Embeddings:
    """Penultimate features ``values[i]`` [N, d] of the dataset row ``ids[i]`` (a ``.pt``/``.npz`` file
    with ``ids`` and ``features``, like an outputs file)."""

    values: torch.Tensor
    ids: tuple[str, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.values, torch.Tensor) or self.values.ndim != 2 or not self.values.is_floating_point():
            raise OutputsError(
                f"features must be a 2-D float tensor [N, d], got {getattr(self.values, 'shape', self.values)!r}"
            )
        object.__setattr__(self, "ids", tuple(self.ids))
        if len(self.ids) != self.values.shape[0] or len(set(self.ids)) != len(self.ids):
            raise OutputsError(
                f"features have {self.values.shape[0]} rows and {len(self.ids)} ids "
                f"({len(set(self.ids))} distinct): one distinct id per row is required"
            )
        if not bool(torch.isfinite(self.values).all()):
            row = int((~torch.isfinite(self.values)).any(dim=1).nonzero()[0, 0])
            raise OutputsError(f"features row {row} (id {self.ids[row]!r}) contains NaN or inf")

    def aligned(self, ids: Sequence[str], what: str) -> torch.Tensor:
        """The feature rows of ``ids``, in that order; OutputsError names ids without features."""
        position = {value: row for row, value in enumerate(self.ids)}
        missing = [i for i in ids if i not in position]
        if missing:
            raise OutputsError(f"{what}: {len(missing)} ids have no features, e.g. {missing[:3]}")
        index = torch.as_tensor([position[i] for i in ids], device=self.values.device)
        return self.values.index_select(0, index)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        if path.suffix == ".pt":
            torch.save({"ids": list(self.ids), "features": self.values.detach().cpu()}, path)
        else:
            np.savez(path, ids=np.asarray(self.ids, dtype=str), features=self.values.detach().cpu().float().numpy())
        return path

    @classmethod
    def load(cls, path: str | Path, device: str | torch.device = "cpu") -> Embeddings:
        """Read ``ids`` + ``features`` (``.pt`` or ``.npz``): shapes and dtypes are checked from the headers /
        tensor metadata before the array is read; a pickle of other objects is refused unread."""
        path = Path(path)
        if not path.is_file():
            raise OutputsError(f"features file {path} does not exist")
        expect = Expected(layout="[N, d]", per_row="features per row", column_word="feature dimensions")
        if path.suffix == ".pt":
            ids, _, values = read_pt_entries(path, ("features",), FEATURES_CONTRACT, expect)
        elif path.suffix == ".npz":
            ids, _, values = read_npz_entries(path, ("features",), FEATURES_CONTRACT, expect)
        else:
            raise OutputsError(f"features file {path} must end in .pt or .npz")
        try:
            return cls(values.to(device), ids)
        except OutputsError as err:
            raise OutputsError(f"{path}: {err}") from err


# -- fitted statistics ---------------------------------------------------------------------------------


@dataclass
class DetectorStats:
    """Train-set statistics of the feature-based detectors and KL-matching (float64 unless noted)."""

    preset: str
    weight: torch.Tensor | None = None  # [C, d]
    bias: torch.Tensor | None = None  # [C]
    class_means: torch.Tensor | None = None  # [C, d], by true label
    precision: torch.Tensor | None = None  # [d, d], pinv of the shared class-centred covariance
    global_mean: torch.Tensor | None = None  # [d]
    global_precision: torch.Tensor | None = None  # [d, d]
    klm_templates: torch.Tensor | None = None  # [C, C], row c = mean softmax of samples predicted c
    knn_bank: torch.Tensor | None = None  # [M, d] L2-normalized fit features (float32, as faiss)
    knn_k: int = 1000
    react_threshold: float | None = None
    vim_origin: torch.Tensor | None = None  # u = -pinv(W) b
    vim_null_space: torch.Tensor | None = None  # [d, d - D]
    vim_alpha: float | None = None
    vim_dim: int | None = None
    extra: dict = field(default_factory=dict)  # what each statistic was fitted on

    def missing(self, detector: str) -> list[str]:
        """The statistics ``detector`` needs that were not fitted."""
        return [name for name in STATS_FIELDS.get(detector, ()) if getattr(self, name) is None]

    def to(self, device: str | torch.device) -> DetectorStats:
        moved = {
            f.name: (v.to(device) if isinstance(v := getattr(self, f.name), torch.Tensor) else v) for f in fields(self)
        }
        return DetectorStats(**moved)

    def save(self, path: str | Path) -> Path:
        """Write every field and the format (:data:`STATS_FORMAT`) with ``torch.save`` (tensors on the CPU)."""
        entries = {
            f.name: (v.cpu() if isinstance(v := getattr(self, f.name), torch.Tensor) else v) for f in fields(self)
        }
        torch.save({"format": STATS_FORMAT, **entries}, path)
        return Path(path)

    @classmethod
    def load(cls, path: str | Path, device: str | torch.device = "cpu") -> DetectorStats:
        """Read a file of :meth:`save`, every entry checked (:func:`check_stats_entries`); one line naming
        the file and what was expected otherwise. Files without a ``format`` entry (written before it was
        added) are read when they hold exactly every field, each checked as well."""
        path = Path(path)
        if not path.is_file():
            raise OutputsError(f"detector statistics file {path} does not exist")
        data = load_torch_file(path, OutputsError, STATS_CONTRACT)
        return cls(**check_stats_entries(path, data)).to(device)


STATS_FORMAT = "imagenet-suite-detector-stats/1"
STATS_CONTRACT = "a DetectorStats file (DetectorStats.save: a dict of its fields)"
FEATURES_CONTRACT = "a dict of 'ids' (N strings) and 'features' ([N, d] floats)"
# The shape of each tensor field, by symbol: C classes, d feature dimensions, M KNN bank rows, K = d - vim_dim.
STATS_SHAPES = {
    "weight": ("C", "d"),
    "bias": ("C",),
    "class_means": ("C", "d"),
    "precision": ("d", "d"),
    "global_mean": ("d",),
    "global_precision": ("d", "d"),
    "klm_templates": ("C", "C"),
    "knn_bank": ("M", "d"),
    "vim_origin": ("d",),
    "vim_null_space": ("d", "K"),
}
_SYMBOLS = {"C": "classes", "d": "feature dimensions", "M": "bank rows", "K": "columns"}


def check_stats_entries(path: Path, data) -> dict:
    """The fields of a DetectorStats file, every one checked: the format, exactly the known fields, the
    preset, each tensor's dtype (float), rank, finiteness and its sizes against the others (C, d), and
    the scalars. OutputsError naming ``path`` and what was expected.

    Example:
        >>> from pathlib import Path
        >>> stats = DetectorStats("ninco", class_means=torch.zeros(3, 2, dtype=torch.float64))
        >>> entries = check_stats_entries(Path("stats.pt"), {"format": STATS_FORMAT, **vars(stats)})
        >>> entries["class_means"].shape
        torch.Size([3, 2])
        >>> check_stats_entries(Path("stats.pt"), {"format": "other/1"})
        Traceback (most recent call last):
        ...
        imagenet_suite.errors.OutputsError: stats.pt: format 'other/1'; this version of imagenet-suite reads ...
    """
    known = [f.name for f in fields(DetectorStats)]
    if not isinstance(data, dict):
        raise OutputsError(f"{path}: expected {STATS_CONTRACT}, got a {type(data).__name__}")
    data = dict(data)
    found = data.pop("format", None)
    if found is None and set(data) != set(known):
        raise OutputsError(
            f"{path}: no 'format' entry and not every field of a DetectorStats file ({STATS_FORMAT}, "
            f"fields {known}); found {sorted(map(str, data))}"
        )
    if found is not None and found != STATS_FORMAT:
        raise OutputsError(f"{path}: format {found!r}; this version of imagenet-suite reads {STATS_FORMAT}")
    missing = [name for name in known if name not in data]
    unknown = sorted(str(name) for name in data if name not in known)
    if missing:
        raise OutputsError(f"{path}: missing entries {missing}; a {STATS_FORMAT} file holds every field {known}")
    if unknown:
        raise OutputsError(f"{path}: unknown entries {unknown}; a {STATS_FORMAT} file holds the fields {known}")
    if not isinstance(data["preset"], str) or data["preset"] not in PRESETS:
        raise OutputsError(f"{path}: 'preset' is {data['preset']!r}, expected one of {list(PRESETS)}")
    _check_stats_scalars(path, data)
    _check_stats_tensors(path, data)
    return data


def _check_stats_scalars(path: Path, data: dict) -> None:
    for name in ("knn_k", "vim_dim"):
        value = data[name]
        if value is None and name == "vim_dim":
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            allowed = "a positive int" + (" or None" if name == "vim_dim" else "")
            raise OutputsError(f"{path}: {name!r} must be {allowed}, got {value!r}")
    for name in ("react_threshold", "vim_alpha"):
        value = data[name]
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value)
        ):
            raise OutputsError(f"{path}: {name!r} must be a finite number or None, got {value!r}")
    extra = data["extra"]
    if not isinstance(extra, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in extra.items()):
        raise OutputsError(f"{path}: 'extra' must map names to descriptions (str -> str), got {extra!r:.100}")


def _check_stats_tensors(path: Path, data: dict) -> None:
    sizes: dict[str, tuple[int, str]] = {}  # symbol -> (size, the field it was first seen in)
    for name, symbols in STATS_SHAPES.items():
        value = data[name]
        if value is None:
            continue
        if not isinstance(value, torch.Tensor):
            raise OutputsError(f"{path}: {name!r} must be a tensor or None, got {type(value).__name__}")
        if not value.is_floating_point():
            raise OutputsError(f"{path}: {name!r} must be a float tensor, got {value.dtype}")
        layout = f"[{', '.join(symbols)}]"
        shape = tuple(value.shape)
        if len(shape) != len(symbols) or any(
            shape[i] != shape[j] for i in range(len(symbols)) for j in range(i) if symbols[i] == symbols[j]
        ):
            raise OutputsError(f"{path}: {name!r} has shape {shape}, expected {layout}")
        for size, symbol in zip(shape, symbols):
            seen, where = sizes.setdefault(symbol, (size, name))
            if seen != size:
                raise OutputsError(f"{path}: {name!r} {layout} has {size} {_SYMBOLS[symbol]} but {where!r} has {seen}")
        if not bool(torch.isfinite(value).all()):
            raise OutputsError(f"{path}: {name!r} holds NaN or inf")
    if "K" in sizes and data["vim_dim"] is not None and sizes["K"][0] != sizes["d"][0] - data["vim_dim"]:
        raise OutputsError(
            f"{path}: 'vim_null_space' has {sizes['K'][0]} columns, expected d - vim_dim = "
            f"{sizes['d'][0] - data['vim_dim']} (d = {sizes['d'][0]}, vim_dim = {data['vim_dim']})"
        )


@dataclass(frozen=True, eq=False)
class FitSet:
    """Tensors of one set of ID images :func:`fit_detector_stats` fits on, row ``i`` the same image in each.

    Attributes:
        features: ``[N, d]`` penultimate features (any float dtype), or None.
        labels: ``[N]`` true class indices (integers), or None. The train set needs them (class means).
        logits: ``[N, C]`` raw logits, or None.

    Checked when made (OutputsError naming the field and both shapes).

    Example:
        >>> import torch
        >>> from imagenet_suite.scoring.metrics.ood_detectors import FitSet
        >>> train = FitSet(torch.randn(100, 16), labels=torch.arange(100) % 4)
        >>> train.rows
        100
        >>> FitSet(torch.randn(100, 16), labels=torch.zeros(99, dtype=torch.long))
        Traceback (most recent call last):
        ...
        imagenet_suite.errors.OutputsError: labels must be [N] = [100] (one per features row), got (99,)
    """

    features: torch.Tensor | None = None
    labels: torch.Tensor | None = None
    logits: torch.Tensor | None = None

    def __post_init__(self) -> None:
        for name in ("features", "labels", "logits"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, torch.Tensor):
                raise OutputsError(f"{param(name)} must be a torch tensor or None, got {type(value).__name__}")
        for name, layout in (("features", "[N, d]"), ("logits", "[N, C]")):
            value = getattr(self, name)
            if value is not None and value.ndim != 2:
                raise OutputsError(f"{param(name)} must be {layout}, got {tuple(value.shape)}")
        if self.features is not None and self.logits is not None and len(self.logits) != len(self.features):
            raise OutputsError(
                f"{param('logits')} have {len(self.logits)} rows for {len(self.features)} {param('features')} rows"
            )
        if self.labels is not None and self.labels.shape != (self.rows,):
            raise OutputsError(
                f"{param('labels')} must be [N] = [{self.rows}] (one per {self._rows_of} row), "
                f"got {tuple(self.labels.shape)}"
            )

    @property
    def _rows_of(self) -> str:
        return "features" if self.features is not None else "logits" if self.logits is not None else "labels"

    @property
    def rows(self) -> int | None:
        """N (None when the set holds no tensor)."""
        first = next((t for t in (self.features, self.logits, self.labels) if t is not None), None)
        return None if first is None else len(first)


def fit_detector_stats(
    train: FitSet,
    *,
    val: FitSet | None = None,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    preset_name: str = "ninco",
    detectors: Sequence[str] | None = None,
    knn_dtype: torch.dtype = torch.float32,
) -> DetectorStats:
    """Fit the statistics of ``detectors`` (default: every one the inputs allow) on the tensors' device.

    Args:
        train: the ID training set (:class:`FitSet`): ``features`` [N, d] and true ``labels`` [N]
            (Mahalanobis, cosine and rcos class means), and optionally raw ``logits`` [N, C] (NINCO:
            ViM's α, KL-matching templates).
        val: an ID validation set (:class:`FitSet` of ``features`` and/or ``logits``; OpenOOD preset:
            ReAct clip, KL-matching templates).
        weight, bias: the last layer, [C, d] and [C] (ViM, ReAct; OpenOOD's ViM logits).
        preset_name: the hyper-parameters of one anchor (:data:`PRESETS`: ``ninco``, ``openood_v15``).
        knn_dtype: dtype of the KNN bank and distances (float32 like faiss; float64 for exact checks).

    Example:
        Class means of 2-d train features, for the cosine detector (see :func:`detector_scores`):

        >>> import torch
        >>> features = torch.tensor([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]])
        >>> from imagenet_suite.scoring.metrics.ood_detectors import FitSet
        >>> stats = fit_detector_stats(FitSet(features, torch.tensor([0, 0, 1, 1])), detectors=["cosine"])
        >>> stats.class_means
        tensor([[2., 0.],
                [0., 2.]], dtype=torch.float64)
    """
    settings = preset(preset_name)
    _check_fit_inputs(train, weight, bias)
    train_features, train_labels, train_logits = train.features, train.labels, train.logits
    val = FitSet() if val is None else val
    wanted = list(detectors) if detectors is not None else list(DETECTORS)
    stats = DetectorStats(preset_name, knn_k=settings.knn_k)
    device = train_features.device
    if weight is not None:
        stats.weight, stats.bias = weight.to(device, torch.float64), bias.to(device, torch.float64)
    if {"mahalanobis", "relative_mahalanobis", "cosine", "rcos"} & set(wanted):
        stats.class_means, stats.precision = class_statistics(
            train_features, train_labels, _num_classes(weight, train_logits, train_labels)
        )
        stats.extra["class_statistics"] = "train features, true labels"
    if "relative_mahalanobis" in wanted:
        stats.global_mean, stats.global_precision = global_statistics(train_features)
    if "knn" in wanted:
        stats.knn_bank = torch.cat(
            [
                _normalize(train_features[rows].to(knn_dtype))
                for rows in row_chunks(len(train_features), train_features.shape[1], QUERY_ELEMENTS)
            ]
        )
    fit_logits, fit_features = _fit_set(settings.klm_fit, train_logits, val.logits, "kl_matching"), None
    if "kl_matching" in wanted and fit_logits is not None:
        stats.klm_templates = klm_templates(fit_logits)
        stats.extra["kl_matching"] = f"{settings.klm_fit} softmax, grouped by predicted class"
    if "react_energy" in wanted and weight is not None:
        fit_features = (
            train_features if settings.react_fit == "train" else _fit_set("val", None, val.features, "react_energy")
        )
        if fit_features is not None:
            stats.react_threshold = exact_quantile(fit_features, settings.react_quantile)
            stats.extra["react_energy"] = f"quantile {settings.react_quantile} of all {settings.react_fit} activations"
    if "vim" in wanted and weight is not None and (train_logits is not None or settings.vim_logits == "recomputed"):
        _fit_vim(stats, train_features, train_logits, settings)
    return stats


def _check_fit_inputs(train: FitSet, weight: torch.Tensor | None, bias: torch.Tensor | None) -> None:
    if not isinstance(train, FitSet):
        raise OutputsError(f"{param('train')} must be a FitSet, got {type(train).__name__}")
    if train.features is None or train.labels is None:
        raise OutputsError(f"{param('train')} needs features [N, d] and their true labels [N]")
    if (weight is None) != (bias is None):
        raise OutputsError(f"give both {param('weight')} and {param('bias')} of the last layer, or neither")
    features = train.features
    if weight is not None and (weight.shape[1] != features.shape[1] or bias.shape != (weight.shape[0],)):
        raise OutputsError(
            f"last layer {param('weight')} {tuple(weight.shape)} / {param('bias')} {tuple(bias.shape)} do not fit "
            f"{features.shape[1]}-d features"
        )


def _num_classes(weight, logits, labels) -> int:
    if weight is not None:
        return weight.shape[0]
    if logits is not None:
        return logits.shape[1]
    return int(labels.max()) + 1


def _fit_set(which: str, train, val, detector: str):
    if which == "train":
        return train
    if val is None:
        raise ConfigError(
            f"the openood_v15 preset fits {detector} on the ID validation set: pass {param('val')} "
            "(a FitSet of its features and logits)"
        )
    return val


def class_statistics(
    features: torch.Tensor, labels: torch.Tensor, num_classes: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Class means [C, d] (float64) and the pseudo-inverse of the shared covariance of class-centred
    features, ``(1/N) Σ (h − μ_y)(h − μ_y)ᵀ`` (sklearn ``EmpiricalCovariance(assume_centered=True)``), two passes.

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
    d = features.shape[1]
    sums = torch.zeros(num_classes, d, dtype=torch.float64, device=features.device)
    counts = torch.bincount(labels, minlength=num_classes).to(torch.float64)
    for rows in row_chunks(len(features), d, QUERY_ELEMENTS):
        sums.index_add_(0, labels[rows], features[rows].double())
    empty = (counts == 0).nonzero().flatten()
    if len(empty):
        raise OutputsError(
            f"class {int(empty[0])} has no train features ({len(empty)} empty classes): every class needs a mean"
        )
    means = sums / counts[:, None]
    covariance = _scatter_sum(features, lambda rows: features[rows].double() - means[labels[rows]])
    return means, torch.linalg.pinv(covariance / len(features), hermitian=True)


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
    d = features.shape[1]
    total = torch.zeros(d, dtype=torch.float64, device=features.device)
    for rows in row_chunks(len(features), d, QUERY_ELEMENTS):
        total += features[rows].double().sum(dim=0)
    mean = total / len(features)
    covariance = _scatter_sum(features, lambda rows: features[rows].double() - mean)
    return mean, torch.linalg.pinv(covariance / len(features), hermitian=True)


def _scatter_sum(features: torch.Tensor, centred: Callable[[slice], torch.Tensor]) -> torch.Tensor:
    """Σ xᵀx over row chunks of ``centred(rows)`` (float64), chunks spread over CPU workers, summed in order."""
    chunks = list(row_chunks(len(features), features.shape[1], QUERY_ELEMENTS))
    with chunk_parallel_cpu() if features.device.type == "cpu" else nullcontext():
        parts = map_chunks(lambda rows: (x := centred(rows)).T @ x, chunks, features.device)
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return total


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
    num_classes = logits.shape[1]
    sums = torch.zeros(num_classes, num_classes, dtype=torch.float64, device=logits.device)
    counts = torch.zeros(num_classes, dtype=torch.float64, device=logits.device)
    for rows in row_chunks(len(logits), num_classes, QUERY_ELEMENTS):
        probs = torch.softmax(logits[rows].double(), dim=1)
        predicted = probs.argmax(dim=1)
        sums.index_add_(0, predicted, probs)
        counts += torch.bincount(predicted, minlength=num_classes)
    templates = torch.eye(num_classes, dtype=torch.float64, device=logits.device)
    seen = counts > 0
    templates[seen] = sums[seen] / counts[seen, None]
    return templates


def _fit_vim(stats: DetectorStats, features: torch.Tensor, logits: torch.Tensor | None, settings: Preset) -> None:
    """ViM: origin u = −pinv(W) b, null space of the top-D principal space of (h − u), α on train."""
    d = features.shape[1]
    dim = vim_dimension(d, settings.vim_dim)
    origin = -(torch.linalg.pinv(stats.weight) @ stats.bias)
    covariance = _scatter_sum(features, lambda rows: features[rows].double() - origin)
    eigenvalues, eigenvectors = torch.linalg.eigh(covariance / len(features))
    order = torch.argsort(eigenvalues, descending=True, stable=True)
    null_space = eigenvectors[:, order[dim:]].contiguous()
    norms, max_logits = [], []
    for rows in row_chunks(len(features), d, QUERY_ELEMENTS):
        chunk = features[rows].double()
        norms.append(torch.linalg.vector_norm((chunk - origin) @ null_space, dim=1))
        given = logits is not None and settings.vim_logits == "given"
        max_logits.append((logits[rows].double() if given else chunk @ stats.weight.T + stats.bias).max(dim=1).values)
    stats.vim_origin, stats.vim_null_space, stats.vim_dim = origin, null_space, dim
    stats.vim_alpha = float(torch.cat(max_logits).mean() / torch.cat(norms).mean())
    stats.extra["vim"] = f"D={dim}, alpha from train {'logits' if settings.vim_logits == 'given' else 'W h + b'}"


def exact_quantile(values: torch.Tensor, q: float, sort_limit: int = 1 << 24) -> float:
    """``numpy.quantile(values, q)`` (linear interpolation) over all elements, exactly, in bounded memory.

    Up to ``sort_limit`` elements the values are sorted; beyond, the two order statistics needed are
    found by a chunked radix select on order-preserving integer keys (16 bits per pass), so a
    1.28M x 2048 train-feature tensor never needs a second copy. Computed on the values in float64.

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
    position = (n - 1) * q
    low = int(np.floor(position))
    gamma = position - low
    if n <= sort_limit:
        ordered = torch.sort(flat.double()).values
        below, above = float(ordered[low]), float(ordered[min(low + 1, n - 1)])
    else:
        below = _select(flat, low)
        above = _select(flat, min(low + 1, n - 1))
    return numpy_lerp(below, above, gamma)


def numpy_lerp(below: float, above: float, gamma: float) -> float:
    """numpy's quantile interpolation, bit for bit (it switches formula at gamma = 0.5).

    Example:
        >>> numpy_lerp(1.0, 3.0, 0.25), numpy_lerp(1.0, 3.0, 0.75)
        (1.5, 2.5)
    """
    diff = above - below
    return above - diff * (1 - gamma) if gamma >= 0.5 else below + diff * gamma


def _order_keys(chunk: torch.Tensor) -> torch.Tensor:
    """Signed integers ordered like the floats (IEEE bits; negatives have their magnitude bits flipped)."""
    if chunk.dtype == torch.float64:
        bits = chunk.contiguous().view(torch.int64)
        return torch.where(bits < 0, bits ^ 0x7FFFFFFFFFFFFFFF, bits)
    bits = chunk.float().contiguous().view(torch.int32).to(torch.int64)
    return torch.where(bits < 0, bits ^ 0x7FFFFFFF, bits)


def _select(flat: torch.Tensor, k: int, chunk: int = 1 << 24) -> float:
    """The k-th smallest element (0-based) of ``flat`` by radix select over 16-bit digits."""
    width = 64 if flat.dtype == torch.float64 else 32
    prefix, remaining = None, k
    for shift in range(width - 16, -1, -16):
        histogram = torch.zeros(1 << 16, dtype=torch.int64, device=flat.device)
        for start in range(0, flat.numel(), chunk):
            keys = _order_keys(flat[start : start + chunk])
            if prefix is not None:
                keys = keys[(keys >> (shift + 16)) == prefix]
            digits = (keys >> shift) & 0xFFFF
            if shift == width - 16:
                digits = (keys >> shift) + (1 << 15)  # the top digit is signed
            histogram += torch.bincount(digits, minlength=1 << 16)
        cumulative = torch.cumsum(histogram, 0)
        digit = int(torch.searchsorted(cumulative, torch.tensor(remaining + 1, device=flat.device)))
        remaining -= int(cumulative[digit - 1]) if digit > 0 else 0
        value = digit - (1 << 15) if shift == width - 16 else digit
        prefix = value if prefix is None else (prefix << 16) | value
    bits = torch.tensor([prefix], dtype=torch.int64)
    if width == 64:
        return float(torch.where(bits < 0, bits ^ 0x7FFFFFFFFFFFFFFF, bits).view(torch.float64)[0])
    return float(torch.where(bits < 0, bits ^ 0x7FFFFFFF, bits).to(torch.int32).view(torch.float32)[0])


# -- scoring ---------------------------------------------------------------------------------------------


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

        Feature-based detectors need statistics fitted on the train set (:func:`fit_detector_stats`);
        the cosine detector scores the largest cosine to a class mean, (1, 0) and (0, 1) here:

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
        return _probabilities(outputs, kind).max(dim=1).values
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
        cosines = _normalize(h) @ _normalize(stats.class_means).T
        return cosines.max(dim=1).values if name == "cosine" else torch.softmax(cosines, dim=1).max(dim=1).values
    if name == "knn":
        return -_kth_squared_distance(
            _normalize(features.to(stats.knn_bank.dtype)), stats.knn_bank, stats.knn_k
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
        impossible = (probs > 0).double() @ (templates[with_zeros] == 0).double().T > 0
        divergence[:, with_zeros] = torch.where(impossible, float("inf"), divergence[:, with_zeros])
    return divergence.min(dim=1).values


def _mahalanobis(h: torch.Tensor, means: torch.Tensor, precision: torch.Tensor) -> torch.Tensor:
    """[N, C] squared Mahalanobis distances (h − μ_c)ᵀ P (h − μ_c), expanded (float64)."""
    projected = h @ precision
    own = (projected * h).sum(dim=1)
    cross = projected @ means.T
    means_term = ((means @ precision) * means).sum(dim=1)
    return own[:, None] - 2 * cross + means_term[None, :]


def _normalize(x: torch.Tensor) -> torch.Tensor:
    return x / torch.linalg.vector_norm(x, dim=1, keepdim=True)


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
