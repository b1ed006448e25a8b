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

import json
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
import torch

from ...errors import ConfigError, OutputsError, param
from ...files import atomic_write_bytes
from ..batching import map_chunks, row_chunks
from ..outputs import Expected, load_torch_file, read_npz_entries, read_pt_entries
from ..threads import chunk_parallel_cpu
from .ood_fit import (
    QUERY_ELEMENTS,
    ClassMoments,
    FitChunks,
    FitSet,
    PassStatistic,
    PredictedSoftmax,
    RadixQuantile,
    RowSample,
    VimSpace,
    l2_normalize,
    numpy_lerp,
    run_passes,
    sample_positions,
)

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
    provenance: dict = field(default_factory=dict)  # model, weights, dataset, rows, seed (format 2 only)

    def missing(self, detector: str) -> list[str]:
        """The statistics ``detector`` needs that were not fitted."""
        return [name for name in STATS_FIELDS.get(detector, ()) if getattr(self, name) is None]

    def to(self, device: str | torch.device) -> DetectorStats:
        moved = {
            f.name: (v.to(device) if isinstance(v := getattr(self, f.name), torch.Tensor) else v) for f in fields(self)
        }
        return DetectorStats(**moved)

    def save(self, path: str | Path) -> Path:
        """Write the statistics: a ``.safetensors`` path in format 2 (:data:`STATS_FORMAT_V2`: the tensors,
        and the format, the other fields and :attr:`provenance` as one JSON object in the metadata key
        :data:`STATS_METADATA_KEY`), any other in format 1
        (:data:`STATS_FORMAT`: every field but the provenance, with ``torch.save``). Tensors on the CPU;
        the same statistics give the same bytes."""
        path = Path(path)
        if path.suffix == ".safetensors":
            atomic_write_bytes(path, self._safetensors_bytes())
            return path
        if self.provenance:
            raise ConfigError(
                f"{path}: statistics with a provenance (model, weights, dataset) are saved in the "
                f"{STATS_FORMAT_V2} format only: give a .safetensors path"
            )
        entries = {name: (v.cpu() if isinstance(v := getattr(self, name), torch.Tensor) else v) for name in V1_FIELDS}
        torch.save({"format": STATS_FORMAT, **entries}, path)
        return path

    def _safetensors_bytes(self) -> bytes:
        from safetensors.torch import save

        tensors = {
            name: getattr(self, name).detach().cpu().contiguous()
            for name in STATS_SHAPES
            if getattr(self, name) is not None
        }
        scalars = {name: getattr(self, name) for name in V1_FIELDS if name not in STATS_SHAPES}
        header = {"format": STATS_FORMAT_V2, "fields": scalars, "provenance": self.provenance}
        metadata = {
            STATS_METADATA_KEY: json.dumps(header, sort_keys=True)
        }  # one key: safetensors orders keys at random
        return save(tensors, metadata)

    @classmethod
    def load(cls, path: str | Path, device: str | torch.device = "cpu") -> DetectorStats:
        """Read a file of :meth:`save` (by its suffix: ``.safetensors`` format 2, else format 1), every entry
        checked (:func:`check_stats_entries`); one line naming the file and what was expected otherwise.
        Format-1 files without a ``format`` entry (written before it was added) are read when they hold
        exactly every field, each checked as well."""
        path = Path(path)
        if not path.is_file():
            raise OutputsError(f"detector statistics file {path} does not exist")
        data = (
            _read_safetensors(path)
            if path.suffix == ".safetensors"
            else load_torch_file(path, OutputsError, STATS_CONTRACT)
        )
        return cls(**check_stats_entries(path, data)).to(device)

    def refuse_other_model(self, model: str, weights_sha256: str, where: str | Path) -> None:
        """ConfigError when :attr:`provenance` names another model spec or other weights (sha256 as
        :func:`~imagenet_suite.inference.models.weights_digest` gives it) than the model they are used with;
        statistics without a provenance (format 1, or fitted in Python) are taken as they are.

        Example:
            >>> stats = DetectorStats("ninco", provenance={"model": "timm:resnet50", "weights_sha256": "ab" * 32})
            >>> stats.refuse_other_model("timm:resnet50", "ab" * 32, "stats.safetensors")
            >>> stats.refuse_other_model("timm:resnet50", "cd" * 32, "stats.safetensors")
            Traceback (most recent call last):
            ...
            imagenet_suite.errors.ConfigError: detector_stats stats.safetensors: fitted for timm:resnet50 with weights abababababab…, not timm:resnet50 with weights cdcdcdcdcdcd…; fit statistics for this model (ood fit-stats)
        """
        fitted = (self.provenance.get("model"), self.provenance.get("weights_sha256"))
        if not self.provenance or fitted == (model, weights_sha256):
            return
        raise ConfigError(
            f"{_stats_named(where)}: fitted for {fitted[0]} with weights {str(fitted[1])[:12]}…, not "
            f"{model} with weights {weights_sha256[:12]}…; fit statistics for this model (ood fit-stats)"
        )

    def refuse_other_outputs(
        self, logits: torch.Tensor | None, features: torch.Tensor | None, where: str | Path = ""
    ) -> None:
        """ConfigError when these statistics cannot belong to the model whose ``features`` [N, d] (and raw
        ``logits`` [N, C]) are given: another feature dimension or class count, or logits that are not the
        fitted last layer's ``W h + b`` (on the first :data:`CHECKED_ROWS` rows, to within
        :data:`LAST_LAYER_TOLERANCE` of the row's largest logit: autocast's rounding passes, another
        model's head does not). What is not given is not checked.

        Example:
            >>> weight, bias = torch.eye(2, dtype=torch.float64), torch.zeros(2, dtype=torch.float64)
            >>> stats = DetectorStats("ninco", weight=weight, bias=bias)
            >>> h = torch.tensor([[1.0, 2.0]])
            >>> stats.refuse_other_outputs(h, h, "stats.safetensors")

            Logits (2, 4) where W h + b is (1, 2): off by 2, relative to 1 + 4:

            >>> stats.refuse_other_outputs(2 * h, h, "stats.safetensors")
            Traceback (most recent call last):
            ...
            imagenet_suite.errors.ConfigError: detector_stats stats.safetensors: the logits are not the fitted last layer's W h + b (off by up to 0.4 of the largest logit): the statistics are another model's
        """
        fitted = self._sizes()
        checks = (("d", features, "feature dimensions"), ("C", logits, "classes"))
        for symbol, given, what in checks:
            if given is not None and symbol in fitted and given.shape[1] != fitted[symbol]:
                raise ConfigError(
                    f"{_stats_named(where)}: fitted on {fitted[symbol]} {what}, these outputs have "
                    f"{given.shape[1]}: the statistics are another model's"
                )
        if self.weight is None or logits is None or features is None:
            return
        rows = slice(0, CHECKED_ROWS)
        h, given = features[rows].double().cpu(), logits[rows].double().cpu()
        expected = h @ self.weight.cpu().T + self.bias.cpu()
        off = ((given - expected).abs().amax(dim=1) / (1 + given.abs().amax(dim=1))).max()
        if float(off) > LAST_LAYER_TOLERANCE:
            raise ConfigError(
                f"{_stats_named(where)}: the logits are not the fitted last layer's W h + b (off by up "
                f"to {float(off):.2g} of the largest logit): the statistics are another model's"
            )

    def _sizes(self) -> dict[str, int]:
        """C and d as the fitted tensors give them."""
        sizes = {}
        for name, symbols in STATS_SHAPES.items():
            value = getattr(self, name)
            if value is not None:
                sizes.update({s: n for s, n in zip(symbols, value.shape) if s in ("C", "d")})
        return sizes


def _stats_named(where: str | Path) -> str:
    return f"{param('detector_stats')} {where}" if str(where) else param("detector_stats")


def _read_safetensors(path: Path) -> dict:
    """The entries of a format-2 file: its tensors, its JSON fields and provenance, its format."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(path, framework="pt", device="cpu") as handle:
            metadata = handle.metadata() or {}
            tensors = {name: handle.get_tensor(name) for name in handle.keys()}  # noqa: SIM118 -- not a dict
    except (SafetensorError, OSError, ValueError) as err:
        raise OutputsError(f"{path}: not a readable safetensors file ({err})") from err
    try:
        header = json.loads(metadata.get(STATS_METADATA_KEY, "{}"))
    except json.JSONDecodeError as err:
        raise OutputsError(f"{path}: its {STATS_METADATA_KEY!r} metadata is not JSON ({err})") from err
    found = header.get("format") if isinstance(header, dict) else None
    if found != STATS_FORMAT_V2:
        raise OutputsError(f"{path}: format {found!r}; a .safetensors statistics file is {STATS_FORMAT_V2}")
    scalars, provenance = header.get("fields"), header.get("provenance")
    if not isinstance(scalars, dict):
        raise OutputsError(f"{path}: its 'fields' must be a JSON object, got {scalars!r:.80}")
    tensors.update({name: None for name in STATS_SHAPES if name not in tensors})
    clashing = sorted(set(scalars) & set(tensors))
    if clashing:
        raise OutputsError(f"{path}: {clashing} are both tensors and fields")
    return {"format": STATS_FORMAT_V2, **tensors, **scalars, "provenance": provenance}


STATS_FORMAT = "imagenet-suite-detector-stats/1"  # torch.save of a dict of the fields
STATS_FORMAT_V2 = "imagenet-suite-detector-stats/2"  # safetensors: tensors + JSON fields and provenance
STATS_METADATA_KEY = "imagenet_suite"  # format 2: {"format", "fields", "provenance"} as JSON under this key
V1_FIELDS = tuple(f.name for f in fields(DetectorStats) if f.name != "provenance")
CHECKED_ROWS = 256  # rows of a review's outputs checked against the fitted last layer
LAST_LAYER_TOLERANCE = 0.05  # |logits − (W h + b)| relative to 1 + the row's largest |logit|
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
    preset, each tensor's dtype (float), rank, finiteness and its sizes against the others (C, d), the
    scalars, and (format 2) the provenance. OutputsError naming ``path`` and what was expected.

    Example:
        >>> from pathlib import Path
        >>> stats = DetectorStats("ninco", class_means=torch.zeros(3, 2, dtype=torch.float64))
        >>> v1 = {name: getattr(stats, name) for name in V1_FIELDS}
        >>> entries = check_stats_entries(Path("stats.pt"), {"format": STATS_FORMAT, **v1})
        >>> entries["class_means"].shape, entries["provenance"]
        (torch.Size([3, 2]), {})
        >>> check_stats_entries(Path("stats.pt"), {"format": "other/1"})
        Traceback (most recent call last):
        ...
        imagenet_suite.errors.OutputsError: stats.pt: format 'other/1'; this version of imagenet-suite reads ...
    """
    if not isinstance(data, dict):
        raise OutputsError(f"{path}: expected {STATS_CONTRACT}, got a {type(data).__name__}")
    data = dict(data)
    found = data.pop("format", None)
    known = list(V1_FIELDS) + (["provenance"] if found == STATS_FORMAT_V2 else [])
    if found is None and set(data) != set(known):
        raise OutputsError(
            f"{path}: no 'format' entry and not every field of a DetectorStats file ({STATS_FORMAT}, "
            f"fields {known}); found {sorted(map(str, data))}"
        )
    if found is not None and found not in (STATS_FORMAT, STATS_FORMAT_V2):
        raise OutputsError(
            f"{path}: format {found!r}; this version of imagenet-suite reads {STATS_FORMAT} and {STATS_FORMAT_V2}"
        )
    format_name = found or STATS_FORMAT
    missing = [name for name in known if name not in data]
    unknown = sorted(str(name) for name in data if name not in known)
    if missing:
        raise OutputsError(f"{path}: missing entries {missing}; a {format_name} file holds every field {known}")
    if unknown:
        raise OutputsError(f"{path}: unknown entries {unknown}; a {format_name} file holds the fields {known}")
    if not isinstance(data["preset"], str) or data["preset"] not in PRESETS:
        raise OutputsError(f"{path}: 'preset' is {data['preset']!r}, expected one of {list(PRESETS)}")
    _check_stats_scalars(path, data)
    _check_stats_tensors(path, data)
    provenance = data.setdefault("provenance", {})
    if not isinstance(provenance, dict) or not all(isinstance(key, str) for key in provenance):
        raise OutputsError(f"{path}: 'provenance' must be a JSON object (name -> value), got {provenance!r:.100}")
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
        preset_name: the hyper-parameters of one anchor (:data:`PRESETS`: ``ninco``, ``openood_v15``).
        knn_dtype: dtype of the KNN bank and distances (float32 like faiss; float64 for exact checks).
        knn_rows: rows of the KNN bank: None, every train row (NINCO); else at most this many, a seeded
            uniform sample (:func:`~.ood_fit.sample_positions` with ``seed``).
        progress: a progress bar per pass over ``train`` (stderr).

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
