"""The figures of ``leaderboard.html``, one module per paper, drawn from our numbers.

Each figure function takes a :class:`~imagenet_suite.scoring.summary.leaderboard.Leaderboard` (or the runs) and
returns an :class:`~imagenet_suite.scoring.presentation.html.Figure`: its inline SVG, or — when the runs lack what it
needs — ``missing``: what is missing and which command adds it (an empty figure is never drawn). A matrix of
numbers (NINCO's FPR@95, ImageNet-C's CE) is not drawn: the page shows it as a table whose cells are shaded by
value (:mod:`~imagenet_suite.scoring.presentation.shading`); these modules give its frame.

* :mod:`.hesse2025` — Beyond Accuracy's radar of the nine QUBA dimensions (Fig. 1);
* :mod:`.bitterwolf2023` — NINCO's per-class FPR@95 (the frames of the shaded tables, Fig. 4's CDF), Fig. 5 (FPR
  vs accuracy) and Fig. 7 (NINCO vs the full popular OOD sets);
* :mod:`.heuillet2025` — Heuillet et al.'s Borda and Sum per model, with the MAC;
* :mod:`.anzaku2024` — Anzaku et al.'s ΔRank: top-1 rank against PatchML ASMA rank, and Figs. 4–7 (label counts,
  top-1/ReaL/ASMA per model — the runs and the published models —, subgroup accuracy per label count, PatchML);
* :mod:`.anzaku2024_examples` — Anzaku et al.'s Fig. 8 (PatchML composites and a model's top classes), drawn
  from a build and an outputs file by ``imagenet-suite patchml predictions``, not on the leaderboard;
* :mod:`.geirhos2019` — the shape bias per shape category on cue-conflict images, with the human observers;
* :mod:`.hendrycks2019` — ImageNet-C's CE per corruption and model (the mCE's terms; a shaded table);
* :mod:`.shi2024` — LCA-on-the-Line's lines (LCA and top-1 baseline against OOD top-1) and Fig. 11 (top-1 vs LCA
  within a dataset).

The Spearman matrix and the QUBA ranking stay in :mod:`~imagenet_suite.scoring.presentation.plots` (drawn for
leaderboard.md too); a run's figures of ``report.html`` are drawn by
:mod:`~imagenet_suite.scoring.presentation.html_run` (NINCO's per-class table from :mod:`.bitterwolf2023`).
"""

LEADERBOARD = "`imagenet-suite leaderboard RUN_DIR... --out DIR`"
MOST_ROWS = 40  # models in a heatmap or bar chart beyond this are unreadable (and weigh on a 300-run page)
MOST_COLUMNS = 20  # models as the columns of a shaded table
