"""Beyond Accuracy (Hesse et al. 2025): Spearman correlations of the nine quality dimensions — over all models
(Table 10 / Fig. 4), per subgroup of models (Fig. 13) and with AutoAttack as the adversarial dimension (Fig. 14).

Every matrix is :func:`dimension_correlations`: Spearman's ρ and its two-sided p-value for every two dimensions
over the models having both (the paper's code: ``scipy.stats.spearmanr(..., nan_policy="omit")``); the figures
cross out entries with p > 0.05 ("Crossed-out entries indicate a p-value above 0.05", Figs. 4, 13, 14).

* Fig. 13 — "all CNNs, all CNNs trained on ImageNet-1k, ... on ImageNet-21k, all Transformers, ... on
  ImageNet-1k, ... on ImageNet-21k": :func:`published_subgroups` draws those six from the published zoo
  (:mod:`imagenet_suite.reference`: Table 12's architecture and training data of its 326 models, the project
  page's dimensions), :func:`group_correlations` one matrix per group of ``leaderboard --groups`` over the runs.
* Fig. 14 — "our adversarial robustness metric (left) and AutoAttack (right)" over the full zoo:
  :func:`autoattack_correlations`, the runs' matrix with each run's AutoAttack robustness
  (``summary.quba_autoattack``) in place of the adversarial dimension. The published zoo's AutoAttack values
  are not released, so this figure is drawn from runs only.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from ...metrics.quba import DIMENSIONS
from ..groups import ModelGroups
from ._shared import write_csv

CORRELATION_ALPHA = 0.05  # Figs. 4, 13 and 14 cross out entries with p above it
MIN_CORRELATION_MODELS = 3
AUTOATTACK = "autoattack_robustness"  # the QUBA table's column of each run's AutoAttack robustness (Table 7/8)
LONG_COLUMNS = ["dimension_a", "dimension_b", "rho", "p_value", "models"]
PUBLISHED_SUBGROUPS: dict[str, tuple[str, str | None]] = {  # Fig. 13's panels: (architecture, training data)
    "all CNNs": ("CNN", None),
    "CNNs trained on ImageNet-1k": ("CNN", "IN1k"),
    "CNNs trained on ImageNet-21k": ("CNN", "IN21k"),
    "all Transformers": ("Transformer", None),
    "Transformers trained on ImageNet-1k": ("Transformer", "IN1k"),
    "Transformers trained on ImageNet-21k": ("Transformer", "IN21k"),
}

Matrices = tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]  # (rho, p, models), 9 x 9


def dimension_correlations(dimensions: pd.DataFrame) -> Matrices:
    """``(rho, p, models)``: Spearman's ρ, its two-sided p-value and the number of models, for every two
    dimensions (9 x 9, :data:`DIMENSIONS` order) over the models having both; NaN over fewer than three
    models or a constant column.

    Example:
        Ranks (1, 2, 3, 4) against (4, 3, 1, 2): ρ = 1 − 6 · (9 + 1 + 4 + 4) / (4 · 15) = −0.8:

        >>> dims = pd.DataFrame({d: [1.0, 2.0, 3.0, 4.0] for d in DIMENSIONS})
        >>> dims["shape_bias"] = [4.0, 3.0, 1.0, 2.0]
        >>> rho, p, n = dimension_correlations(dims)
        >>> round(float(rho.loc["accuracy", "shape_bias"]), 6), int(n.loc["accuracy", "params_millions"])
        (-0.8, 4)
    """
    from scipy import stats

    names = list(DIMENSIONS)
    values = dimensions[names].to_numpy(dtype=np.float64)
    rho, p, n = (np.full((len(names), len(names)), np.nan) for _ in range(3))
    for i in range(len(names)):
        for j in range(i, len(names)):
            both = ~np.isnan(values[:, i]) & ~np.isnan(values[:, j])  # the models having both
            a, b = values[both, i], values[both, j]
            n[i, j] = n[j, i] = len(a)
            if len(a) < MIN_CORRELATION_MODELS or np.ptp(a) == 0 or np.ptp(b) == 0:
                continue
            result = stats.spearmanr(a, b)
            rho[i, j] = rho[j, i] = float(result.statistic)
            p[i, j] = p[j, i] = float(result.pvalue)
    frames = (pd.DataFrame(m, index=names, columns=names) for m in (rho, p, n))
    rho_frame, p_frame, n_frame = frames
    return rho_frame, p_frame, n_frame.astype(int)


def defined(matrices: Matrices) -> bool:
    """Whether a matrix has any defined entry (else no figure is drawn)."""
    return bool(matrices[0].notna().to_numpy().any())


def long_table(panels: Mapping[tuple[str, ...], Matrices], keys: tuple[str, ...]) -> pd.DataFrame:
    """The matrices of ``panels`` (``{key tuple: (rho, p, models)}``) as one long table: the ``keys`` columns,
    then dimension_a, dimension_b, rho, p_value, models (every ordered pair, as ``leaderboard_quba_correlations.csv``)."""
    rows = []
    for key, (rho, p, n) in panels.items():
        for a in DIMENSIONS:
            for b in DIMENSIONS:
                values = (a, b, rho.loc[a, b], p.loc[a, b], int(n.loc[a, b]))
                rows.append({**dict(zip(keys, key, strict=True)), **dict(zip(LONG_COLUMNS, values, strict=True))})
    return pd.DataFrame(rows, columns=[*keys, *LONG_COLUMNS])


def group_correlations(dimensions: pd.DataFrame, groups: ModelGroups | None) -> dict[tuple[str, str], Matrices]:
    """Fig. 13 over the runs: ``{(setup, group): matrices}`` for every group of ``groups`` (file order) with at
    least three distinct models; ``dimensions``: the nine columns per model (index)."""
    found: dict[tuple[str, str], Matrices] = {}
    for setup, members in (groups.setups() if groups is not None else {}).items():
        for group, models in members.items():
            unique = list(dict.fromkeys(models))  # a model listed twice (Table 9's matching) counts once here
            if len(unique) >= MIN_CORRELATION_MODELS:
                found[(setup, group)] = dimension_correlations(dimensions.loc[unique])
    return found


@functools.cache
def published_subgroups() -> dict[tuple[str], Matrices]:
    """Fig. 13 over the published zoo: the six subgroups of :data:`PUBLISHED_SUBGROUPS` of Table 12's 326 models
    (architecture and training data as Table 12 prints them; the dimensions as the project page gives them).
    Computed once per process from the package data (the same object each call: read it, never modify it).

    Example:
        140 of the zoo's CNNs were trained on ImageNet-1k, 19 of its Transformers on ImageNet-21k:

        >>> panels = published_subgroups()
        >>> [int(panels[(name,)][2].loc["accuracy", "accuracy"]) for name in ("CNNs trained on ImageNet-1k",
        ...                                                                  "Transformers trained on ImageNet-21k")]
        [140, 19]
    """
    from ....reference import load

    zoo = load("hesse2025_table12")
    found: dict[tuple[str], Matrices] = {}
    for name, (architecture, data) in PUBLISHED_SUBGROUPS.items():
        rows = zoo[(zoo["architecture"] == architecture) & ((zoo["train_data"] == data) if data else True)]
        found[(name,)] = dimension_correlations(rows[list(DIMENSIONS)].astype(float))
    return found


def autoattack_correlations(quba: pd.DataFrame) -> Matrices | None:
    """Fig. 14's right-hand matrix over the runs: :func:`dimension_correlations` with each run's AutoAttack
    robustness (column :data:`AUTOATTACK` of the QUBA table) as ``adversarial_robustness``; None when no run
    attacked with AutoAttack."""
    if AUTOATTACK not in quba.columns or not quba[AUTOATTACK].notna().any():
        return None
    dimensions = quba[list(DIMENSIONS)].astype(float).assign(adversarial_robustness=quba[AUTOATTACK].astype(float))
    return dimension_correlations(dimensions)


GROUPS_FILE, PUBLISHED_FILE, AUTOATTACK_FILE = (
    "quba_group_correlations",
    "quba_published_subgroup_correlations",
    ("quba_autoattack_correlations"),
)


def markdown(
    groups: Mapping[tuple[str, str], Matrices],
    published: Mapping[tuple[str], Matrices],
    autoattack: Matrices | None,
) -> list[str]:
    """The Fig. 13 and Fig. 14 parts of the paper's section: what was drawn, where, or what is missing."""
    lines = ["### Spearman correlations per subgroup of models (Fig. 13)", ""]
    drawn_groups = {key: m for key, m in groups.items() if defined(m)}
    if drawn_groups:
        named = ", ".join(f"{setup}: {group}" if setup else group for setup, group in drawn_groups)
        lines += [
            f"Per group of `--groups` with at least {MIN_CORRELATION_MODELS} models ({named}): ρ and p over the "
            f"group's models, crossed out p > {CORRELATION_ALPHA:g}; `leaderboard_{GROUPS_FILE}.csv`.",
            "",
            f"![Spearman correlations per group (Fig. 13)](leaderboard_{GROUPS_FILE}.png)",
            "",
        ]
    else:
        lines += [
            f"No group of `--groups FILE` with at least {MIN_CORRELATION_MODELS} models having the dimensions.",
            "",
        ]
    if published:
        counts = ", ".join(f"{name} ({int(m[2].loc['accuracy', 'accuracy'])})" for (name,), m in published.items())
        lines += [
            "The published zoo (Table 12's 326 models; architecture and training data as it prints them), the "
            f"paper's six panels: {counts}; `leaderboard_{PUBLISHED_FILE}.csv`.",
            "",
            f"![Spearman correlations per subgroup of the published zoo (Fig. 13)](leaderboard_{PUBLISHED_FILE}.png)",
            "",
        ]
    else:
        lines += ["The paper's six panels over the published zoo: `leaderboard ... --reference hesse2025`.", ""]
    lines += ["### Spearman correlations with AutoAttack as the adversarial dimension (Fig. 14)", ""]
    if autoattack is not None and defined(autoattack):
        lines += [
            "Left: the runs' matrix (Fig. 4); right: each run's AutoAttack robustness in place of the adversarial "
            f"dimension, over the runs attacked with AutoAttack; `leaderboard_{AUTOATTACK_FILE}.csv`.",
            "",
            f"![Spearman correlations with AutoAttack (Fig. 14)](leaderboard_{AUTOATTACK_FILE}.png)",
            "",
        ]
    else:
        lines += [
            f"Needs at least {MIN_CORRELATION_MODELS} runs attacked with AutoAttack (`imagenet-suite evaluate ... "
            "--adversarial N --attack fgsm,pgd,autoattack-linf`).",
            "",
        ]
    return lines


def write(
    groups: Mapping[tuple[str, str], Matrices],
    published: Mapping[tuple[str], Matrices],
    autoattack: Matrices | None,
    standard: Matrices,
    folder: Path,
) -> list[Path]:
    """``leaderboard_quba_group_correlations.csv``/``.png`` (Fig. 13 over the runs' groups),
    ``leaderboard_quba_published_subgroup_correlations.csv``/``.png`` (Fig. 13 over the published zoo) and
    ``leaderboard_quba_autoattack_correlations.csv``/``.png`` (Fig. 14: ``standard``, the runs' Fig. 4 matrices,
    beside AutoAttack's), each where it has data; never an empty figure."""
    from ...presentation.figures.hesse2025 import correlation_panels_plot

    written: list[Path] = []
    figures = []
    if groups:
        write_csv(folder, GROUPS_FILE, long_table(groups, ("setup", "group")), written, index=False)
        panels = [(f"{s}: {g}" if s else g, m[0], m[1]) for (s, g), m in groups.items() if defined(m)]
        figures.append((GROUPS_FILE, panels))
    if published:
        write_csv(folder, PUBLISHED_FILE, long_table(published, ("subgroup",)), written, index=False)
        figures.append((PUBLISHED_FILE, [(name, m[0], m[1]) for (name,), m in published.items() if defined(m)]))
    if autoattack is not None and defined(autoattack) and defined(standard):
        both = {("adversarial_robustness",): standard, ("autoattack",): autoattack}
        write_csv(folder, AUTOATTACK_FILE, long_table(both, ("adversarial_dimension",)), written, index=False)
        figures.append((AUTOATTACK_FILE, [("the paper's protocol", *standard[:2]), ("AutoAttack", *autoattack[:2])]))
    for name, panels in figures:
        if panels:
            written.append(folder / f"leaderboard_{name}.png")
            if name == PUBLISHED_FILE and published is published_subgroups():  # the package data's: drawn once
                written[-1].write_bytes(_published_png())
            else:
                correlation_panels_plot(panels).savefig(written[-1], dpi=110)
    return written


@functools.cache
def _published_png() -> bytes:
    """The PNG of Fig. 13 over the published zoo, drawn once per process (it depends on package data only)."""
    import io

    from ...presentation.figures.hesse2025 import correlation_panels_plot

    buffer = io.BytesIO()
    panels = [(name, m[0], m[1]) for (name,), m in published_subgroups().items() if defined(m)]
    correlation_panels_plot(panels).savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()


__all__ = [
    "AUTOATTACK",
    "CORRELATION_ALPHA",
    "MIN_CORRELATION_MODELS",
    "PUBLISHED_SUBGROUPS",
    "autoattack_correlations",
    "defined",
    "dimension_correlations",
    "group_correlations",
    "long_table",
    "markdown",
    "published_subgroups",
    "write",
]
