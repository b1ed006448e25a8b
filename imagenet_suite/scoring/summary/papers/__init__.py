"""One module per paper: the tables ``imagenet-suite leaderboard`` reproduces from many runs' suite.json.

=====================  ==============================================================================
module                 paper and what it computes (each module: the tables, ``markdown``, ``write``)
=====================  ==============================================================================
``hesse2025``          Beyond Accuracy (QUBA), Hesse et al. 2025: QUBA table with custom weights,
                       group comparisons with t-tests (Table 2), Spearman matrix of the nine dimensions
                       (Table 10, Fig. 4), top five under other weightings (Fig. 5)
``heuillet2025``       Heuillet et al. 2025: Sum, Borda and MAC over its five perturbation types on
                       ImageNet val, MAC per group (Table 4), the groups' effects on Borda (Figs. 4, 3)
                       (and over every (dataset, perturbation type) of the runs)
``bitterwolf2023``     NINCO, Bitterwolf et al. 2023: models × detectors (Tables 3, 4, 14), unit tests failed
``shi2024``            LCA-on-the-Line, Shi et al. 2024: ImageNet LCA / top-1 vs OOD top-1 / top-5 lines
                       with R², Pearson, Kendall τ-b, Spearman, MAE, per group (Tables 2, 3, 9)
``anzaku2024``         Anzaku et al. 2024: top-1 / ReaL / ASMA per model (Tables 4–10) and ΔRank
``zhang2023``          OpenOOD v1.5, Zhang et al. 2023: near/far-OOD AUROC, FPR@95 and ID accuracy per model
                       and detector (runs with ``evaluate --benchmark openood-v1.5-imagenet``)
=====================  ==============================================================================

:mod:`imagenet_suite.scoring.summary.leaderboard` calls them in this order and writes one section of
``leaderboard.md`` per paper; the docs have one page per paper (``docs/papers/``).
"""
