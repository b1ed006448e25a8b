"""Reference zoos: the per-model results the five papers published, as versioned package data with their sources.

A researcher who evaluates one model can place it among the models a paper measured without running them.
Each table is a CSV in ``imagenet_suite/reference/data/`` (header row, the source's own decimals), described in
``data/manifest.json``: its paper, title, key, units, columns, sources (repository, commit, path and sha256, or
the paper's table), licence, precision and notes. :func:`load` checks the file against its sha256 and returns
a DataFrame; :data:`REFERENCE_VERSION` (SemVer) changes with any table.

=======================================  ===========  =====================================================
table                                    rows         what (units)
=======================================  ===========  =====================================================
``hesse2025_table12``                    326          Beyond Accuracy, Table 12: nine dimensions + QUBA
                                                      (fractions; the project page's four decimals)
``shi2024_results``                      75 x 5       LCA-on-the-Line: ImageNet top-1/5 and LCA, top-1/5 on
                                                      five shifted sets (fractions; LCA in bits)
``bitterwolf2023_table3_fpr95``          28           NINCO Table 3: mean FPR@95, 11 detectors (percent)
``bitterwolf2023_table4_auroc``          28           NINCO Table 4: mean AUROC (percent)
``bitterwolf2023_table14_popular_fpr95`` 28           NINCO Table 14: FPR@95 on the cleaned popular sets (%)
``heuillet2025_results``                 1,440        Heuillet et al.: five accuracies per protocol, backbone,
                                                      loss and dataset (fractions)
``anzaku2024_tables4_10``                315          Anzaku et al. Tables 4-10: top-1, ReaL, ASMA and ΔRank
                                                      (percent)
``geirhos2019_cue_conflict_humans``      160          Geirhos et al. 2019's ten human observers: shape and
                                                      texture decisions per cue-conflict category (counts)
=======================================  ===========  =====================================================

Column names follow the leaderboard's: ``hesse2025_table12`` has the nine QUBA dimensions under the names of
:data:`imagenet_suite.scoring.metrics.quba.DIMENSIONS` (:data:`QUBA_DIMENSIONS`); ``shi2024_results`` has the
columns of ``leaderboard_lca_inputs.csv`` (``model, group, ood_dataset, id_top1, id_lca, lca_distance,
ood_top1, ood_top5``; ``ood_dataset`` by builder name); the NINCO tables have one column per detector under the
leaderboard's detector keys (:data:`NINCO_DETECTORS`); ``heuillet2025_results`` has the accuracy columns of
:data:`imagenet_suite.scoring.metrics.aggregates.ROBUSTGEN_METRICS`. Tables in percent (the papers' unit) come
back in fractions, as the leaderboard holds them, with ``load(name, fractions=True)``.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

import pandas as pd

from ..errors import ConfigError, InvalidSourceData, param

PAPERS: dict[str, str] = {
    "hesse2025": "Beyond Accuracy (QUBA), Hesse et al. 2025",
    "shi2024": "LCA-on-the-Line, Shi et al. 2024",
    "bitterwolf2023": "NINCO, Bitterwolf et al. 2023",
    "heuillet2025": "Heuillet et al. 2025 (robust generalization)",
    "anzaku2024": "Anzaku et al. 2024 (ReaL, ASMA, ΔRank)",
}
"""The papers with a reference zoo, by the key ``leaderboard --reference`` takes."""
HUMAN_DATA: dict[str, str] = {
    "geirhos2019": "Texture vs shape, Geirhos et al. 2019 (human observers, as model-vs-human releases them)",
}
"""Sources of human reference data the figures draw beside the models (no ``--reference`` zoo)."""
QUBA_DIMENSIONS: tuple[str, ...] = (
    "accuracy",
    "adversarial_robustness",
    "c_robustness",
    "ood_robustness",
    "calibration_error",
    "class_balance",
    "object_focus",
    "shape_bias",
    "params_millions",
)
"""``hesse2025_table12``'s dimension columns (the names of the QUBA dimensions in suite.json)."""
NINCO_DETECTORS: tuple[str, ...] = (
    "msp",
    "maxlogit",
    "energy",
    "kl_matching",
    "mahalanobis",
    "relative_mahalanobis",
    "vim",
    "react_energy",
    "knn",
    "cosine",
    "rcos",
)
"""The NINCO tables' detector columns, in the paper's column order (the leaderboard's detector keys)."""
_DATA = "data"
_MANIFEST = "manifest.json"
_TEXT_COLUMNS = {  # columns read as text even where every value looks like a number
    "hesse2025_table12": ("id", "model", "source", "architecture", "train_data", "paradigm", "page_model"),
    "shi2024_results": ("model", "group", "ood_dataset", "lca_distance"),
}


@dataclass(frozen=True)
class ReferenceTable:
    """One table of the reference data, as ``manifest.json`` describes it."""

    name: str
    paper: str  # a key of PAPERS
    title: str
    file: str
    rows: int
    key: str | tuple[str, ...]  # the column(s) naming a row uniquely
    units: str
    percent_columns: tuple[str, ...]  # what ``load(..., fractions=True)`` divides by 100
    columns: dict[str, str]  # column -> what it holds, in file order
    sources: tuple[dict[str, str], ...]  # {what, repository, commit, path, sha256} or {what, document, sha256}
    licence: str
    precision: str
    notes: tuple[str, ...]
    sha256: str


@functools.cache
def manifest() -> dict[str, Any]:
    """The parsed ``manifest.json``: ``version``, ``tables`` (by name) and ``versions`` (every release of the
    data with its notes and the tables' sha256)."""
    return json.loads(resources.files(__package__).joinpath(_DATA, _MANIFEST).read_text(encoding="utf-8"))


REFERENCE_VERSION: str = manifest()["version"]
"""The version of the reference data (SemVer: MAJOR when a row or a published value changes, MINOR when a table
or column is added, PATCH for metadata)."""


def tables(paper: str | None = None) -> list[ReferenceTable]:
    """Every table (of ``paper``, a key of :data:`PAPERS`), in the manifest's order.

    Example:
        NINCO's three tables (the paper's Tables 3, 4 and 14):

        >>> [t.name for t in tables("bitterwolf2023")]
        ['bitterwolf2023_table3_fpr95', 'bitterwolf2023_table4_auroc', 'bitterwolf2023_table14_popular_fpr95']
    """
    if paper is not None:
        _check_paper(paper)
    found = [_table(entry) for entry in manifest()["tables"].values()]
    return [entry for entry in found if paper is None or entry.paper == paper]


def table(name: str) -> ReferenceTable:
    """The description of table ``name``; ConfigError naming ``table`` for an unknown one."""
    entries = manifest()["tables"]
    if name not in entries:
        raise ConfigError(f"{param('table')}: no reference table {name!r}; known: {', '.join(entries)}")
    return _table(entries[name])


def _table(entry: dict[str, Any]) -> ReferenceTable:
    key = entry["key"]
    return ReferenceTable(
        name=entry["name"],
        paper=entry["paper"],
        title=entry["title"],
        file=entry["file"],
        rows=int(entry["rows"]),
        key=tuple(key) if isinstance(key, list) else key,
        units=entry["units"],
        percent_columns=tuple(entry["percent_columns"]),
        columns=dict(entry["columns"]),
        sources=tuple(dict(source) for source in entry["sources"]),
        licence=entry["licence"],
        precision=entry["precision"],
        notes=tuple(entry["notes"]),
        sha256=entry["sha256"],
    )


def _check_paper(paper: str) -> None:
    if paper not in PAPERS and paper not in HUMAN_DATA:
        raise ConfigError(f"{param('reference')}: no reference zoo {paper!r}; known: {', '.join(PAPERS)}")


def read_bytes(name: str) -> bytes:
    """The bytes of table ``name``'s CSV, checked against the manifest's sha256 (InvalidSourceData naming the
    file otherwise: the package data was changed without a new manifest)."""
    entry = table(name)
    data = resources.files(__package__).joinpath(_DATA, entry.file).read_bytes()
    found = hashlib.sha256(data).hexdigest()
    if found != entry.sha256:
        raise InvalidSourceData(
            f"reference data {entry.file}: sha256 {found}, manifest.json (reference data {REFERENCE_VERSION}) "
            f"says {entry.sha256}"
        )
    return data


def load(name: str, *, fractions: bool = False) -> pd.DataFrame:
    """Table ``name`` as a DataFrame (one row per CSV row, the columns of :attr:`ReferenceTable.columns`), in the
    paper's units; ``fractions=True`` divides the table's percent columns by 100 (the leaderboard's units).
    Empty cells (a detector a zero-shot model has no score for) are NaN.

    Example:
        Beyond Accuracy's best model (Table 3: EVA02-B/14, QUBA 1.08) and its accuracy, 0.88 in Table 12 (the
        project page gives four decimals); NINCO's Table 3 in fractions, ViT-B-384-21k's MSP FPR@95 51.8 %:

        >>> zoo = load("hesse2025_table12").set_index("paper_rank")
        >>> len(zoo), zoo.loc[1, "model"], float(zoo.loc[1, "quba"]), round(float(zoo.loc[1, "accuracy"]), 2)
        (326, 'EVA02-b', 1.08, 0.88)
        >>> float(load("bitterwolf2023_table3_fpr95", fractions=True).set_index("model").loc["ViT-B-384-21k", "msp"])
        0.518
    """
    import io

    entry = table(name)
    text = dict.fromkeys(_TEXT_COLUMNS.get(name, ()), str)
    frame = pd.read_csv(io.BytesIO(read_bytes(name)), dtype=text, keep_default_na=False, na_values=[""])
    if list(frame.columns) != list(entry.columns) or len(frame) != entry.rows:
        raise InvalidSourceData(
            f"reference data {entry.file}: {len(frame)} rows, columns {list(frame.columns)}; manifest.json says "
            f"{entry.rows} rows, columns {list(entry.columns)}"
        )
    if fractions:
        for column in entry.percent_columns:
            frame[column] = frame[column] / 100
    return frame


def load_paper(reference: str, *, fractions: bool = False) -> dict[str, pd.DataFrame]:
    """Every table of paper ``reference`` (a key of :data:`PAPERS`; ConfigError naming ``reference`` otherwise),
    by name, as :func:`load` returns them."""
    return {entry.name: load(entry.name, fractions=fractions) for entry in tables(reference)}


__all__ = [
    "HUMAN_DATA",
    "NINCO_DETECTORS",
    "PAPERS",
    "QUBA_DIMENSIONS",
    "REFERENCE_VERSION",
    "ReferenceTable",
    "load",
    "load_paper",
    "manifest",
    "read_bytes",
    "table",
    "tables",
]
