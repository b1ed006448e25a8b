"""The train statistics of the OOD detectors (:mod:`.ood_detectors`) and the files that hold them.

* :class:`Preset`, :data:`PRESETS`: the hyper-parameters of the two anchors (``ninco``, ``openood_v15``);
* :data:`STATS_FIELDS`: the statistics each detector needs;
* :class:`DetectorStats`: the fitted statistics (:func:`~.ood_detector_fit.fit_detector_stats` fits them),
  saved in format 3 (:data:`STATS_FORMAT_V3`: safetensors and JSON metadata with a content hash) or 1
  (:data:`STATS_FORMAT`, ``torch.save``, with a content hash entry), every entry checked when read back
  (:func:`check_stats_entries`: the content hash first, :func:`stats_content_sha256`), and checked against
  the model they are used with (:meth:`DetectorStats.refuse_other_model`,
  :meth:`DetectorStats.refuse_other_outputs`);
* :class:`Embeddings`: penultimate features with the dataset id of each row (a ``.pt``/``.npz`` file).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
import torch

from ...errors import ConfigError, OutputsError, param
from ...files import atomic_write_bytes
from ..outputs import Expected, load_torch_file, read_npz_entries, read_pt_entries

_LOG = logging.getLogger(__name__)

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
        """Write the statistics: a ``.safetensors`` path in format 3 (:data:`STATS_FORMAT_V3`: the tensors,
        and the format, the other fields, :attr:`provenance` and ``content_sha256`` as one JSON object in the
        metadata key :data:`STATS_METADATA_KEY`), any other in format 1 (:data:`STATS_FORMAT`: every field
        but the provenance, and ``content_sha256``, with ``torch.save``). ``content_sha256`` is
        :func:`stats_content_sha256` of everything else, checked by :meth:`load`. Tensors on the CPU; the
        same statistics give the same bytes."""
        path = Path(path)
        if path.suffix == ".safetensors":
            atomic_write_bytes(path, self._safetensors_bytes())
            return path
        if self.provenance:
            raise ConfigError(
                f"{path}: statistics with a provenance (model, weights, dataset) are saved in the "
                f"{STATS_FORMAT_V3} format only: give a .safetensors path"
            )
        entries = {name: (v.cpu() if isinstance(v := getattr(self, name), torch.Tensor) else v) for name in V1_FIELDS}
        entries = {"format": STATS_FORMAT, **entries}
        torch.save({**entries, CONTENT_SHA256: stats_content_sha256(entries)}, path)
        return path

    def _safetensors_bytes(self) -> bytes:
        from safetensors.torch import save

        tensors = {
            name: getattr(self, name).detach().cpu().contiguous()
            for name in STATS_SHAPES
            if getattr(self, name) is not None
        }
        scalars = {name: getattr(self, name) for name in V1_FIELDS if name not in STATS_SHAPES}
        entries = {"format": STATS_FORMAT_V3, **tensors, **scalars, "provenance": self.provenance}
        entries.update({name: None for name in STATS_SHAPES if name not in tensors})
        header = {
            "format": STATS_FORMAT_V3,
            "fields": scalars,
            "provenance": self.provenance,
            CONTENT_SHA256: stats_content_sha256(entries),
        }
        metadata = {
            STATS_METADATA_KEY: json.dumps(header, sort_keys=True)
        }  # one key: safetensors orders keys at random
        return save(tensors, metadata)

    @classmethod
    def load(cls, path: str | Path, device: str | torch.device = "cpu") -> DetectorStats:
        """Read a file of :meth:`save` (by its suffix: ``.safetensors`` format 3 or 2, else format 1), every
        entry checked (:func:`check_stats_entries`: first the content hash); one line naming the file and what
        was expected otherwise. A file without a content hash (format 2, or format 1 written before
        imagenet-suite wrote one) is read with a one-line warning that a change to it cannot be detected.
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

    def refuse_other_model(
        self, model: str, weights_sha256: str, where: str | Path, code_sha256: str | None = None
    ) -> None:
        """ConfigError when :attr:`provenance` names another model spec or other weights (sha256 as
        :func:`~imagenet_suite.inference.models.weights_digest` gives it) than the model they are used with,
        or (where it records one) another ``code_sha256``, a user model's source file; statistics without a
        provenance (format 1, or fitted in Python) are taken as they are.

        Example:
            >>> stats = DetectorStats("ninco", provenance={"model": "timm:resnet50", "weights_sha256": "ab" * 32})
            >>> stats.refuse_other_model("timm:resnet50", "ab" * 32, "stats.safetensors")
            >>> stats.refuse_other_model("timm:resnet50", "cd" * 32, "stats.safetensors")
            Traceback (most recent call last):
            ...
            imagenet_suite.errors.ConfigError: detector_stats stats.safetensors: fitted for timm:resnet50 with weights abababababab…, not timm:resnet50 with weights cdcdcdcdcdcd…; fit statistics for this model (ood fit-stats)
        """
        fitted = (self.provenance.get("model"), self.provenance.get("weights_sha256"))
        recorded_code = self.provenance.get("code_sha256")
        if recorded_code is not None and fitted == (model, weights_sha256) and recorded_code != code_sha256:
            raise ConfigError(
                f"{_stats_named(where)}: fitted for {model} with model code sha256 {str(recorded_code)[:12]}…, but "
                f"its code is now {str(code_sha256)[:12]}…; fit statistics for this model (ood fit-stats)"
            )
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
    if found not in (STATS_FORMAT_V2, STATS_FORMAT_V3):
        raise OutputsError(
            f"{path}: format {found!r}; a .safetensors statistics file is {STATS_FORMAT_V3} (or {STATS_FORMAT_V2})"
        )
    scalars, provenance = header.get("fields"), header.get("provenance")
    if not isinstance(scalars, dict):
        raise OutputsError(f"{path}: its 'fields' must be a JSON object, got {scalars!r:.80}")
    tensors.update({name: None for name in STATS_SHAPES if name not in tensors})
    clashing = sorted(set(scalars) & set(tensors))
    if clashing:
        raise OutputsError(f"{path}: {clashing} are both tensors and fields")
    hashed = {CONTENT_SHA256: header[CONTENT_SHA256]} if CONTENT_SHA256 in header else {}
    return {"format": found, **tensors, **scalars, "provenance": provenance, **hashed}


STATS_FORMAT = "imagenet-suite-detector-stats/1"  # torch.save of a dict of the fields
STATS_FORMAT_V2 = "imagenet-suite-detector-stats/2"  # safetensors: tensors + JSON fields and provenance
STATS_FORMAT_V3 = "imagenet-suite-detector-stats/3"  # format 2 + content_sha256 in the JSON
STATS_METADATA_KEY = "imagenet_suite"  # formats 2, 3: {"format", "fields", "provenance"[, "content_sha256"]} as JSON
CONTENT_SHA256 = "content_sha256"  # format 3's JSON key, format 1's entry: stats_content_sha256 of the rest
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


def stats_content_sha256(entries: dict) -> str:
    """The content hash of a statistics file: sha256 over every tensor entry (in name order: a line
    ``name dtype [shape]``, then its bytes, little-endian as safetensors stores them) and then the JSON of
    every other entry — format, scalars, provenance; ``content_sha256`` itself left out — with sorted keys.
    It does not depend on the container (safetensors or ``torch.save``), only on what is read back.

    Example:
        Changing one value changes it; the same content gives the same hash:

        >>> a = {"format": "f", "x": torch.zeros(2, dtype=torch.float64), "knn_k": 5}
        >>> b = {**a, "x": torch.tensor([0.0, 1.0], dtype=torch.float64)}
        >>> stats_content_sha256(a) == stats_content_sha256(dict(a)), stats_content_sha256(a) == stats_content_sha256(b)
        (True, False)
    """
    digest = hashlib.sha256()
    plain = {}
    for name in sorted(entries):
        value = entries[name]
        if name == CONTENT_SHA256:
            continue
        if isinstance(value, torch.Tensor):
            flat = value.detach().cpu().contiguous().reshape(-1)
            digest.update(f"{name} {flat.dtype} {list(value.shape)}\n".encode())
            digest.update(flat.view(torch.uint8).numpy().tobytes())
        else:
            plain[name] = value
    digest.update(json.dumps(plain, sort_keys=True, default=repr).encode())
    return digest.hexdigest()


def _check_content_hash(path: Path, data: dict, format_name: str) -> None:
    """OutputsError when the file's ``content_sha256`` is not :func:`stats_content_sha256` of its entries; a
    one-line warning when it has none (format 2, or format 1 written before the hash)."""
    recorded = data.get(CONTENT_SHA256)
    if recorded is None:
        if format_name == STATS_FORMAT_V3:
            raise OutputsError(f"{path}: a {STATS_FORMAT_V3} file holds {CONTENT_SHA256!r}; this one has none")
        _LOG.warning(
            "detector statistics %s: %s without a content hash (written by an older imagenet-suite): a change to "
            "it since cannot be detected; fit it again (ood fit-stats) for a file checked on every read",
            path,
            format_name,
        )
        return
    actual = stats_content_sha256(data)
    if actual != recorded:
        raise OutputsError(
            f"{path}: content sha256 {actual}, but the file records {recorded}: it changed since it was written; "
            "fit the statistics again (ood fit-stats)"
        )


def check_stats_entries(path: Path, data) -> dict:
    """The fields of a DetectorStats file, every one checked: the format, exactly the known fields, the
    content hash (:func:`stats_content_sha256`; OutputsError when it differs, a warning when the file has
    none), the preset, each tensor's dtype (float), rank, finiteness and its sizes against the others (C,
    d), the scalars, and (formats 2, 3) the provenance. OutputsError naming ``path`` and what was expected.

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
    hashed = {CONTENT_SHA256: data.pop(CONTENT_SHA256)} if CONTENT_SHA256 in data and data.get("format") else {}
    found = data.pop("format", None)
    known = list(V1_FIELDS) + (["provenance"] if found in (STATS_FORMAT_V2, STATS_FORMAT_V3) else [])
    if found is None and set(data) != set(known):
        raise OutputsError(
            f"{path}: no 'format' entry and not every field of a DetectorStats file ({STATS_FORMAT}, "
            f"fields {known}); found {sorted(map(str, data))}"
        )
    if found is not None and found not in (STATS_FORMAT, STATS_FORMAT_V2, STATS_FORMAT_V3):
        raise OutputsError(
            f"{path}: format {found!r}; this version of imagenet-suite reads {STATS_FORMAT}, {STATS_FORMAT_V2} and "
            f"{STATS_FORMAT_V3}"
        )
    format_name = found or STATS_FORMAT
    missing = [name for name in known if name not in data]
    unknown = sorted(str(name) for name in data if name not in known)
    if missing:
        raise OutputsError(f"{path}: missing entries {missing}; a {format_name} file holds every field {known}")
    if unknown:
        raise OutputsError(f"{path}: unknown entries {unknown}; a {format_name} file holds the fields {known}")
    _check_content_hash(path, {"format": found, **data, **hashed} if found else data, format_name)
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
