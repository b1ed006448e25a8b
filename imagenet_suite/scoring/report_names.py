"""Names the scorers write into reports and that the summaries, the pages and the leaderboard read back: NINCO's
subset and overlap columns, the OOD unit tests' threshold artifact, the multi-label score variants, the clean
images of the corruption benchmarks, the default ECE binning.

Here, without torch, so that reading runs (``leaderboard``, ``report``) imports none of the scorers: torch takes
about 3 s of CPU to import. The scorer modules that use them re-export them (``families.ood.SUBSET_COLUMNS``,
``metrics.multilabel.DEFAULT_VARIANT``, ``metrics.robustness.CLEAN``, ``metrics.calibration.DEFAULT_ECE_CONVENTION``).
"""

from __future__ import annotations

FAIL_THRESHOLD_ARTIFACT = "ood_fail_threshold"
"""The artifact of a unit-test set's OOD report holding the FPR@95 threshold its verdicts used (written by
:mod:`~imagenet_suite.scoring.families.ood`, marked by :func:`~imagenet_suite.scoring.presentation.plots.write_ood_plots`)."""

SUBSET_COLUMNS = ("ninco_sample", "ninco_cleaned")
"""Boolean columns of a whole OOD set whose true rows ``ood_detection_set`` also scores, each against every ID
row (NINCO's convention), reported under the subgroup of its name: ``ninco_sample``, the images NINCO's authors
inspected (a random ~400 of the set; the paper's "-f"), and ``ninco_cleaned``, those of them kept as free of
ImageNet-1k objects (their released cleaned subsample; "-c"). A subset with no row gives no rows."""

IN21K_OVERLAP = "in21k_overlap"
"""The ``ninco`` build's column naming, per OOD class, the ImageNet-21k class its images overlap with (Bitterwolf et
al. 2023, Table 9: "0" none, "?" unclear). ``ood_detection`` records it per class as a row ``in21k_overlap`` (variant
empty, subgroup the class): 0 where Table 9 says "0", else 1 — Appendix L's split, whose "9 vs. 55 classes" counts
the unclear ones with the overlapping; a class whose column is empty gets no row."""

MULTILABEL_VARIANTS = ("exact", "jaccard", "recall", "hamming")
"""The per-sample scores of Anzaku et al. 2024's variable top-k (:mod:`~imagenet_suite.scoring.metrics.multilabel`)."""
DEFAULT_MULTILABEL_VARIANT = "exact"
"""Subset accuracy: the variant that fits the paper's numbers best."""

CLEAN = "clean"
"""The corruption name of the uncorrupted images (:mod:`~imagenet_suite.scoring.metrics.robustness`)."""

ECE_CONVENTIONS = {"torchmetrics": 15, "guo": 15, "netcal": 10}
"""ECE's binning conventions and their bin counts (:mod:`~imagenet_suite.scoring.metrics.calibration`)."""
DEFAULT_ECE_CONVENTION = "torchmetrics"
"""The binning of the headline ECE and of the reliability diagrams."""


__all__ = [
    "CLEAN",
    "DEFAULT_ECE_CONVENTION",
    "DEFAULT_MULTILABEL_VARIANT",
    "ECE_CONVENTIONS",
    "FAIL_THRESHOLD_ARTIFACT",
    "IN21K_OVERLAP",
    "MULTILABEL_VARIANTS",
    "SUBSET_COLUMNS",
]
