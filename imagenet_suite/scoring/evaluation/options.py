"""The evaluator's knobs: one frozen options type per metric family, gathered in :class:`ScoreOptions`.

Defaults follow the anchors. A family declares which type it reads (``MetricFamily.options``) and
the evaluator hands it that instance (:meth:`ScoreOptions.of`); a family never sees the others'.

* :class:`TopkOptions` (``ks``) — topk_accuracy, real_accuracy, mapped_topk_accuracy; the largest k
  also sets how many ranks the shared row statistics keep;
* :class:`CalibrationOptions` (``ece_conventions``, ``ace_bins``, ``class_wise_ace``) — calibration;
* :class:`ClassBalanceOptions` (``conventions``) — class_balance;
* :class:`LcaOptions` (``distances``, ``elca_variant``, ``hierarchy``) — lca;
* :class:`OodOptions` (ID outputs, features, statistics, ``detectors``, ``tpr``, ``fail_threshold``)
  — ood_detection, ood_detection_datasets, ood_unit_tests.

The other families (per-class accuracy, shape bias, 16-class accuracy, multi-label, robustness)
have no knobs. Only the CLI layer (``imagenet_suite.commands.score``) turns flags into these objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, TypeVar

from ...errors import ConfigError
from ..metrics.calibration import ACE_BINS, ECE_CONVENTIONS
from ..metrics.class_balance import CLASS_BALANCE_CONVENTIONS
from ..metrics.lca_scoring import DEFAULT_ELCA_VARIANT
from ..metrics.ood import FAIL_THRESHOLD, TPR

if TYPE_CHECKING:
    from ..metrics.ood_detector_stats import DetectorStats, Embeddings
    from ..outputs import ModelOutputs

LCA_DISTANCES = ("info", "depth_two_sided", "depth_one_sided")

Options = TypeVar("Options")


@dataclass(frozen=True)
class TopkOptions:
    """The k of every top-k family (each reported as ``top<k>_accuracy``)."""

    ks: tuple[int, ...] = (1, 5)


@dataclass(frozen=True)
class CalibrationOptions:
    """ECE conventions to report, ACE's bins, and whether to compute class-wise ACE (and CE).

    ``class_wise_ace`` sorts every class's N probabilities: the costliest metric of a report.
    """

    ece_conventions: tuple[str, ...] = tuple(ECE_CONVENTIONS)
    ace_bins: int = ACE_BINS
    class_wise_ace: bool = True


@dataclass(frozen=True)
class ClassBalanceOptions:
    """QUBA class-balance conventions to report."""

    conventions: tuple[str, ...] = CLASS_BALANCE_CONVENTIONS


@dataclass(frozen=True)
class LcaOptions:
    """LCA distances (each reported by name), the ELCA variant, and the hierarchy.

    ``hierarchy``: a built ``wordnet_hierarchy`` / ``kmeans_hierarchy`` folder whose
    ``distance_*.npy`` are used; None: the ImageNet-1k WordNet tree shipped with the package.
    """

    distances: tuple[str, ...] = LCA_DISTANCES
    elca_variant: str = DEFAULT_ELCA_VARIANT
    hierarchy: str | None = None


@dataclass(frozen=True)
class OodOptions:
    """What the OOD families need beside the OOD outputs ``score`` joins.

    ``id_outputs``: the same model's outputs on the ID set (ImageNet val), same kind and class count;
    without them the OOD families refuse to run. ``id_features`` / ``ood_features`` + ``stats``: for
    the feature-based detectors. ``detectors``: which to run (None: every one the inputs allow).
    ``tpr``: the TPR of FPR@TPR. ``fail_threshold``: a unit test fails when its FPR@95 is above it
    (None: the dataset protocol's, else :data:`~imagenet_suite.scoring.metrics.ood.FAIL_THRESHOLD`).
    ``cache`` holds the ID detector scores, computed once per options object and reused when the same
    options score several OOD datasets; it takes no part in comparisons.
    """

    id_outputs: ModelOutputs | None = None
    id_features: Embeddings | None = None
    ood_features: Embeddings | None = None
    stats: DetectorStats | None = None
    detectors: tuple[str, ...] | None = None
    tpr: float = TPR
    fail_threshold: float | None = None
    cache: dict = field(default_factory=dict, compare=False, repr=False)

    def verdict_threshold(self, protocol_ood: dict) -> float:
        """The unit-test failure threshold in force: this option, else the protocol's, else 0.10."""
        if self.fail_threshold is not None:
            return self.fail_threshold
        return float(protocol_ood.get("fail_threshold", FAIL_THRESHOLD))


@dataclass(frozen=True)
class ScoreOptions:
    """One options instance per family type; ``ScoreOptions()`` is every default.

    Replace one family's options with e.g. ``ScoreOptions(lca=LcaOptions(distances=("info",)))``.
    """

    topk: TopkOptions = field(default_factory=TopkOptions)
    calibration: CalibrationOptions = field(default_factory=CalibrationOptions)
    class_balance: ClassBalanceOptions = field(default_factory=ClassBalanceOptions)
    lca: LcaOptions = field(default_factory=LcaOptions)
    ood: OodOptions = field(default_factory=OodOptions)

    def __post_init__(self) -> None:
        for slot in fields(self):
            expected = slot.default_factory
            if type(getattr(self, slot.name)) is not expected:
                raise ConfigError(
                    f"ScoreOptions.{slot.name} must be a {expected.__name__}, "
                    f"got {type(getattr(self, slot.name)).__name__}"
                )

    def of(self, kind: type[Options]) -> Options:
        """The instance of options type ``kind`` (ConfigError if ScoreOptions holds none)."""
        for slot in fields(self):
            if slot.default_factory is kind:
                return getattr(self, slot.name)
        raise ConfigError(
            f"ScoreOptions holds no {kind.__name__}; its types are "
            f"{[slot.default_factory.__name__ for slot in fields(self)]}"
        )


__all__ = [
    "LCA_DISTANCES",
    "CalibrationOptions",
    "ClassBalanceOptions",
    "LcaOptions",
    "OodOptions",
    "ScoreOptions",
    "TopkOptions",
]
