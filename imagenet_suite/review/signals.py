"""Review fields from every signal the scorer has: OOD detector scores, unit-test verdicts, the WordNet pre-check.

Computed once per load, before the database is touched (:func:`compute_signals`, its inputs and
switches one :class:`SignalOptions`), with the scorer's
own functions — :func:`imagenet_suite.scoring.metrics.ood_detectors.detector_scores` for every detector
:func:`~imagenet_suite.scoring.metrics.ood_detectors.available_detectors` allows, and
:func:`imagenet_suite.scoring.metrics.ood.grouped_ood_metrics` / :func:`~imagenet_suite.scoring.metrics.ood.unit_test_verdict`
against the ID outputs — and :func:`imagenet_suite.hierarchies.ood_precheck.precheck_summary` per
OOD class. Per sample (OOD samples with model outputs):

* ``ood_<detector>`` — the detector's score, **larger = more ID-like** (the scorer's convention);
* ``ood_id_like_for`` — the detectors that *accept the sample as ID*: with ID outputs, its score is
  at least the detector's τ95 (the ID scores' 5 % quantile, NINCO's FPR@95 threshold: these samples
  are exactly the FPR@95 false positives); without ID outputs, it is among the
  :data:`TOP_FRACTION` most ID-like OOD samples of that detector;
* ``ood_failed_detectors`` — the detectors for which the sample's class fails its unit test
  (per-class FPR@95 > the fail threshold, the scorer's verdict); ``ood_class_fpr95`` is not stored per
  sample, it is in ``dataset.info["imagenet_suite"]["unit_tests"]``;
* ``precheck_verdict`` / ``precheck_classes`` — the WordNet pre-check of the sample's class name
  (``categorical suspect`` / ``close relative`` / ``no match``) and the ImageNet-1k wnids it matched.

``dataset.info["imagenet_suite"]``: ``detectors`` (``ran``, ``skipped`` with the reason of each
detector that could not run, ``accept_rule``, ``tau95`` per detector), ``unit_tests``
(``threshold``, ``fpr95[detector][class]``, ``failed[detector]``) and ``precheck`` per class.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..errors import ConfigError, ImagenetSuiteError, OutputsError, param
from ..scoring.metrics.ood import (
    FAIL_THRESHOLD,
    TPR,
    SortedScores,
    grouped_ood_metrics,
    numpy_quantile,
    unit_test_verdict,
)
from ..scoring.metrics.ood_detector_stats import DetectorStats, Embeddings
from ..scoring.metrics.ood_detectors import (
    DETECTORS,
    NEEDS_FEATURES,
    available_detectors,
    detector_scores,
    why_unavailable,
)
from ..scoring.outputs import ModelOutputs

PREFIX = "ood_"
TOP_FRACTION = 0.05  # without ID outputs: a detector "accepts" its 5 % most ID-like OOD samples
LIST_FIELDS = ("ood_id_like_for", "ood_failed_detectors", "precheck_classes")
WHOLE_SET = "(all samples)"  # the one unit-test group of a dataset without OOD classes


def score_field(detector: str) -> str:
    """The sample field holding ``detector``'s score (``ood_<detector>``)."""
    return PREFIX + detector


@dataclass(frozen=True)
class ReviewSignals:
    """Per row id the signal fields, and the dataset-level record (JSON-ready)."""

    fields: dict[str, dict[str, Any]]
    record: dict[str, Any]
    detectors: tuple[str, ...] = ()
    field_names: tuple[str, ...] = field(default=())

    def of(self, row_id: str) -> dict[str, Any]:
        """The signal fields of one row (None where it has none)."""
        found = self.fields.get(row_id, {})
        return {name: found.get(name) for name in self.field_names}


@dataclass(frozen=True)
class SignalOptions:
    """What :func:`compute_signals` compares an OOD dataset's outputs with, and its switches.

    Checked when made (ConfigError naming the field).

    Attributes:
        id_outputs: the same model's outputs on the ID set (ImageNet val): each detector's τ95 and the
            unit-test verdicts; None: a detector "accepts" its :data:`TOP_FRACTION` most ID-like samples.
        features: penultimate features of the OOD rows (the feature-based detectors).
        id_features: penultimate features of the ID rows; with ``id_outputs`` the feature detectors run
            only when both sides have features.
        stats: fitted train statistics (``DetectorStats``) of the detectors that need them.
        fail_threshold: a class fails a detector's unit test when its FPR@95 is above this, in [0, 1]
            (default 0.10).
        precheck: run the WordNet pre-check of every OOD class name.

    Example:
        >>> from imagenet_suite.review.signals import SignalOptions
        >>> SignalOptions(fail_threshold=0.05, precheck=False).fail_threshold
        0.05
        >>> SignalOptions(fail_threshold=5)
        Traceback (most recent call last):
        ...
        imagenet_suite.errors.ConfigError: fail_threshold 5: expected an FPR between 0 and 1
    """

    id_outputs: ModelOutputs | None = None
    features: Embeddings | None = None
    id_features: Embeddings | None = None
    stats: DetectorStats | None = None
    fail_threshold: float = FAIL_THRESHOLD
    precheck: bool = True

    def __post_init__(self) -> None:
        for name, kind in (
            ("id_outputs", ModelOutputs),
            ("features", Embeddings),
            ("id_features", Embeddings),
            ("stats", DetectorStats),
        ):
            value = getattr(self, name)
            if value is not None and not isinstance(value, kind):
                raise ConfigError(f"{param(name)} must be a {kind.__name__} or None, got {type(value).__name__}")
        check_fail_threshold(self.fail_threshold)


def check_fail_threshold(value: float) -> None:
    """ConfigError naming ``fail_threshold`` unless it is an FPR in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ConfigError(f"{param('fail_threshold')} {value}: expected an FPR between 0 and 1")


def load_signal_inputs(
    id_outputs: str | Path | None,
    features: str | Path | None,
    id_features: str | Path | None,
    detector_stats: str | Path | None,
) -> SignalOptions:
    """The files, loaded (CPU), as :class:`SignalOptions` (with the default threshold and pre-check)."""
    return SignalOptions(
        id_outputs=ModelOutputs.load(id_outputs) if id_outputs is not None else None,
        features=Embeddings.load(features) if features is not None else None,
        id_features=Embeddings.load(id_features) if id_features is not None else None,
        stats=DetectorStats.load(detector_stats) if detector_stats is not None else None,
    )


def compute_signals(
    outputs: ModelOutputs | None,
    row_classes: dict[str, str],
    class_display: dict[str, str],
    options: SignalOptions | None = None,
) -> ReviewSignals:
    """The signal fields of an OOD dataset's rows.

    Args:
        outputs: the model's outputs on the OOD rows (None: pre-check only).
        row_classes: row id -> raw OOD class name (ClassLabel name) of every row.
        class_display: raw class name -> readable name (what the pre-check looks up).
        options: the ID side, features, statistics, unit-test threshold and pre-check
            (:class:`SignalOptions`; default: none of the inputs, threshold 0.10, pre-check on).
    """
    options = SignalOptions() if options is None else options
    fields: dict[str, dict[str, Any]] = {}
    record: dict[str, Any] = {}
    names: list[str] = []
    ran: tuple[str, ...] = ()
    if outputs is not None:
        ran = _detector_fields(outputs, row_classes, options, fields)
        record.update(fields.pop("__record__"))
        names += [score_field(d) for d in ran] + ["ood_id_like_for"]
        if options.id_outputs is not None:
            names.append("ood_failed_detectors")
    if options.precheck and class_display:
        record["precheck"] = _precheck(row_classes, class_display, fields)
        names += ["precheck_verdict", "precheck_classes"]
    return ReviewSignals(fields, record, ran, tuple(names))


def _detector_fields(outputs: ModelOutputs, row_classes: dict[str, str], options: SignalOptions, fields) -> tuple:
    id_outputs, features, id_features, stats = options.id_outputs, options.features, options.id_features, options.stats
    threshold = options.fail_threshold
    has_features = features is not None and (id_outputs is None or id_features is not None)
    ran = available_detectors(outputs.kind, has_features, stats)
    skipped = {d: why_unavailable(d, outputs.kind, has_features, stats) for d in DETECTORS if d not in ran}
    if id_outputs is not None:
        if id_outputs.num_classes != outputs.num_classes or id_outputs.kind != outputs.kind:
            raise OutputsError(
                f"ID outputs are {id_outputs.kind!r} with C={id_outputs.num_classes}, the OOD outputs "
                f"{outputs.kind!r} with C={outputs.num_classes}: both must come from the same model, saved the same way"
            )
        id_outputs.validate()
    ids = list(outputs.ids)
    ood_features = features.aligned(ids, param("outputs")) if features is not None else None
    if stats is not None:  # statistics of another model would score silently wrong
        stats.refuse_other_outputs(outputs.values if outputs.kind == "logits" else None, ood_features)
    id_feats = (
        id_features.aligned(id_outputs.ids, param("id_outputs"))
        if id_features is not None and id_outputs is not None
        else None
    )
    row_class = {i: row_classes.get(i, WHOLE_SET) for i in ids}
    classes = sorted(set(row_class.values()))
    groups = torch.as_tensor([classes.index(row_class[i]) for i in ids])
    accepted: dict[str, set[str]] = {i: set() for i in ids}
    failed_for: dict[str, list[str]] = {c: [] for c in classes}
    tau95, fpr95, failed_tests = {}, {}, {}
    for detector in ran:
        needs = detector in NEEDS_FEATURES
        scores = detector_scores(detector, outputs.values, outputs.kind, ood_features if needs else None, stats)
        for row_id, value in zip(ids, scores.tolist()):
            fields.setdefault(row_id, {})[score_field(detector)] = float(value) if math.isfinite(value) else None
        if id_outputs is not None:
            id_scores = detector_scores(
                detector, id_outputs.values, id_outputs.kind, id_feats if needs else None, stats
            )
            tau = numpy_quantile(SortedScores.of(id_scores.double()).values, 1 - TPR)
            grouped = grouped_ood_metrics(id_scores, scores, groups, classes, TPR)
            fpr95[detector] = grouped.fpr_per_group()
            failed_tests[detector] = unit_test_verdict(fpr95[detector], threshold)[0]
            for name in failed_tests[detector]:
                failed_for[name].append(detector)
        else:
            top = max(1, math.ceil(TOP_FRACTION * len(ids)))
            tau = float(torch.sort(scores.double(), descending=True).values[top - 1])
        tau95[detector] = tau
        for row_id, value in zip(ids, scores.tolist()):
            if value >= tau:
                accepted[row_id].add(detector)
    for row_id in ids:
        fields[row_id]["ood_id_like_for"] = [d for d in ran if d in accepted[row_id]]
        if id_outputs is not None:
            fields[row_id]["ood_failed_detectors"] = list(failed_for[row_class[row_id]])
    fields["__record__"] = {
        "detectors": {
            "ran": list(ran),
            "skipped": skipped,
            "accept_rule": "score >= tau95 (ID scores' 5% quantile)"
            if id_outputs is not None
            else f"among the {TOP_FRACTION:.0%} most ID-like OOD samples",
            "tau95": tau95,
        },
        **(
            {"unit_tests": {"threshold": threshold, "tpr": TPR, "fpr95": fpr95, "failed": failed_tests}}
            if id_outputs is not None
            else {}
        ),
    }
    return tuple(ran)


def _precheck(row_classes: dict[str, str], class_display: dict[str, str], fields) -> dict[str, Any]:
    from ..hierarchies.ood_precheck import precheck_summary

    found = {}
    for raw in sorted(set(row_classes.values())):
        name = class_display.get(raw, raw)
        try:
            entry = precheck_summary([name])[0]
            found[raw] = {"name": name, "verdict": entry["verdict"], "classes": entry["classes"]}
        except ImagenetSuiteError as err:  # e.g. WordNet is not installed: record why, load anyway
            found[raw] = {"name": name, "verdict": "", "classes": [], "error": str(err)}
    for row_id, raw in row_classes.items():
        fields.setdefault(row_id, {}).update(
            precheck_verdict=found[raw]["verdict"] or None, precheck_classes=found[raw]["classes"]
        )
    return found
