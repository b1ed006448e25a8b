"""Pure metric functions on tensors: usable alone, registering nothing, no argparse, no plotting.

classification (top-k, ReaL, per-class, class subsets), row_statistics, calibration (ECE
conventions, class-wise ACE, CE), class_balance, shape (16-class decisions, shape bias), multilabel
(variable top-k, ASMA, averaging over seeds), multilabel_accuracy (Shankar et al.'s class-averaged
multi-label accuracy, ImageNet-M mistakes), protocols (class mappings of ObjectNet and IN-9, border
crop), object_focus (IN-9), robustness, lca_scoring + lca_distances (LCA, top-5 LCA, ELCA),
lca_on_the_line, ood (AUROC, FPR@95, AUPR) + ood_detectors (the detectors' scores), ood_detector_stats
(their train statistics and files), ood_detector_fit (fitting them), ood_fit (its pass statistics), quba,
aggregates (Sum, Borda, MAC), uncertainty (the seeded paired bootstrap over images, exact McNemar, the
paired bootstrap test).
"""
