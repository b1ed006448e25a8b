"""NINCO, Bitterwolf et al. 2023 ("In or Out? Fixing ImageNet Out-of-Distribution Detection Evaluation"):
models × OOD detectors, as the paper's tables lay them out.

* Table 3 — mean FPR@95 on NINCO and Table 4 — mean AUROC on NINCO: per model and detector, the mean over
  the 64 NINCO classes (uniform over classes, ImageNet val the positive ID set), from ``summary.ninco``
  of each run (the ``ninco`` report's ``<detector>:macro`` rows).
* OOD unit tests (Tables 10–13): per model and detector, how many of the unit tests failed (FPR@95 above
  the threshold the run used, 10 % by default), from ``summary.ninco[...].unit_tests_failed``.
* Table 14 — mean FPR@95 over the cleaned subsamples of the 11 popular OOD datasets (the ``ninco`` build's
  ``popular_subsamples`` config, ``<detector>:macro`` rows), with every dataset's own FPR@95 and AUROC in
  the CSV (the "-c" columns of Tables 15–18).
* Tables 15–18 — full vs cleaned: per model, detector and full popular OOD set (a ``popular_ood`` build),
  FPR@95 and AUROC on the full set, on the images NINCO's authors inspected ("-f": their random sample of the
  set) and on the part they kept ("-c"), and the differences full − cleaned and sample − cleaned, from
  ``summary.ninco_cleaning`` of each run.
* Tables 19–20 — mean FPR@95 (and AUROC in the CSV) over the NINCO classes without / with ImageNet-21k overlap
  (Appendix L; :func:`overlap_frame`): per model and detector, the mean over the classes of each part of the
  run's per-class rows (the ``ninco`` report's ``<detector>`` rows, subgroup the class), the parts from the same
  report's ``in21k_overlap`` rows (0: Table 9 says "0", 9 classes; 1: an IN-21k class or unclear, 55 classes).

The Markdown prints percentages with one decimal, as the paper; the CSVs hold fractions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...report_names import IN21K_OVERLAP, SUBSET_COLUMNS
from ..reports import reports_of
from ._shared import percent, weights_mismatch, with_weights, write_csv

NINCO, POPULAR = "ninco", "popular_subsamples"  # the ninco builder's configs
PAPER_COLUMNS: dict[str, str] = {  # detector -> the paper's column name, in the paper's column order
    "msp": "MSP",
    "maxlogit": "MaxL",
    "energy": "Ener",
    "kl_matching": "KL-M",
    "mahalanobis": "Maha",
    "relative_mahalanobis": "RMaha",
    "vim": "ViM",
    "react_energy": "E+R",
    "knn": "KNN",
    "cosine": "Cos",
    "rcos": "RCos",
}


@dataclass
class NincoTables:
    """Model × detector tables (fractions; index: model, columns: detectors in the paper's order)."""

    accuracy: pd.Series  # ImageNet val top-1 per model (the paper's "acc" column)
    fpr95: pd.DataFrame  # Table 3
    auroc: pd.DataFrame  # Table 4
    unit_tests_failed: pd.DataFrame  # failed tests per model and detector
    unit_tests_of: pd.DataFrame  # how many tests each count is out of
    unit_test_rules: list[str]  # the failure rules the runs used (e.g. "fpr95>0.1")
    popular_fpr95: pd.DataFrame  # Table 14
    popular: pd.DataFrame  # long: model, detector, dataset ("mean" or a source dataset), fpr95, auroc
    cleaning: pd.DataFrame  # long: model, dataset, detector, metric, full, sample, cleaned, differences, rows
    overlap: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=OVERLAP_COLUMNS))  # Tables 19–20
    overlap_missing: list[str] = field(default_factory=list)  # models with per-class rows but no in21k_overlap rows


def tables(suites: Mapping[str, Mapping[str, Any]]) -> NincoTables | None:
    """The NINCO tables of the runs; None when no run has a NINCO report."""
    names = list(suites)
    fpr, auroc, failed, of, rules, popular = {}, {}, {}, {}, set(), []
    for name, suite in suites.items():
        for detector, entry in (suite["summary"].get("ninco") or {}).items():
            if entry.get("mean_fpr95") is not None:
                fpr.setdefault(name, {})[detector] = entry["mean_fpr95"]
            if entry.get("mean_auroc") is not None:
                auroc.setdefault(name, {})[detector] = entry["mean_auroc"]
            tests = entry.get("unit_tests_failed")
            if tests:
                failed.setdefault(name, {})[detector] = tests["failed"]
                of.setdefault(name, {})[detector] = tests["of"]
                rules.add(tests["rule"])
        popular += _popular_rows(name, suite["datasets"])
    popular_frame = pd.DataFrame(popular, columns=["model", "detector", "dataset", "fpr95", "auroc"])
    cleaning = cleaning_frame(suites)
    overlap, overlap_missing = overlap_frame(suites)
    if not (fpr or auroc or failed or len(popular_frame) or len(cleaning) or len(overlap)):
        return None
    means = popular_frame[popular_frame["dataset"] == "mean"]
    popular_fpr = {
        model: dict(zip(part["detector"], part["fpr95"], strict=True)) for model, part in means.groupby("model")
    }
    accuracy = {
        name: suite["summary"]["quba"]["dimensions"].get("accuracy", {}).get("value") for name, suite in suites.items()
    }
    return NincoTables(
        accuracy=pd.Series(accuracy, dtype=float).reindex(names),
        fpr95=_wide(fpr, names),
        auroc=_wide(auroc, names),
        unit_tests_failed=_wide(failed, names),
        unit_tests_of=_wide(of, names),
        unit_test_rules=sorted(rules),
        popular_fpr95=_wide(popular_fpr, names),
        popular=popular_frame,
        cleaning=cleaning,
        overlap=overlap,
        overlap_missing=overlap_missing,
    )


OVERLAP_PARTS = {"without": 0.0, "with": 1.0}
"""Appendix L's parts of the NINCO classes (Table 19: without ImageNet-21k overlap, Table 20: with) -> the value
of their ``in21k_overlap`` rows."""
OVERLAP_COLUMNS = ["model", "part", "detector", "classes", "fpr95", "auroc"]


def overlap_frame(suites: Mapping[str, Mapping[str, Any]]) -> tuple[pd.DataFrame, list[str]]:
    """Tables 19–20 long (:data:`OVERLAP_COLUMNS`): per model, part (:data:`OVERLAP_PARTS`) and detector, the
    number of classes in the part and the mean FPR@95 and AUROC over them (uniform over classes, as the paper's
    means; NaN when a class of the part has no value), from the first ``ninco`` report of each run; and the models
    whose report has per-class rows but no ``in21k_overlap`` rows (scored before they were recorded).

    Example:
        Classes a and b overlap an IN-21k class, c does not: "with" is the mean of a's and b's FPR@95,
        (0.25 + 0.75) / 2; no AUROC rows, so no AUROC means.

        >>> def row(metric, value, variant, subgroup):
        ...     return {"metric": metric, "value": value, "variant": variant, "subgroup": subgroup}
        >>> rows = [row("in21k_overlap", f, "", c) for c, f in (("a", 1.0), ("b", 1.0), ("c", 0.0))]
        >>> rows += [row("fpr95", v, "msp", c) for c, v in (("a", 0.25), ("b", 0.75), ("c", 0.9))]
        >>> report = {"meta": {"dataset": "ninco", "config": "ninco"}, "metrics": rows}
        >>> frame, missing = overlap_frame({"m": {"datasets": {"ninco/ninco": report}}})
        >>> frame[["part", "detector", "classes", "fpr95"]].values.tolist(), missing
        ([['without', 'msp', 1, 0.9], ['with', 'msp', 2, 0.5]], [])
        >>> bool(frame["auroc"].isna().all())
        True
    """
    rows, missing = [], []
    for model, suite in suites.items():
        for _, report in reports_of(suite.get("datasets", {}), NINCO, NINCO):
            flags, values = _class_rows(report)
            if values and not flags:
                missing.append(model)
            parts = {
                part: [name for name, value in flags.items() if value == flag] for part, flag in OVERLAP_PARTS.items()
            }
            for detector in sorted(values, key=_order) if flags else ():
                for part, classes in parts.items():
                    means = [_class_mean(values[detector].get(metric, {}), classes) for metric in ("fpr95", "auroc")]
                    rows.append((model, part, detector, len(classes), *means))
            break
    return pd.DataFrame(rows, columns=OVERLAP_COLUMNS), missing


def _class_rows(report: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, dict[str, dict[str, float]]]]:
    """``({class: in21k_overlap}, {detector: {metric: {class: value}}})`` of a ``ninco`` report's per-class rows."""
    flags: dict[str, float] = {}
    values: dict[str, dict[str, dict[str, float]]] = {}
    for row in report.get("metrics", ()):
        group, variant, value = row.get("subgroup") or "", row.get("variant") or "", row.get("value")
        if not group or group in SUBSET_COLUMNS or value is None:
            continue
        if row["metric"] == IN21K_OVERLAP:
            flags[group] = float(value)
        elif row["metric"] in ("fpr95", "auroc") and variant and ":" not in variant:
            values.setdefault(variant, {}).setdefault(row["metric"], {})[group] = float(value)
    return flags, values


def _class_mean(per_class: Mapping[str, float], classes: list[str]) -> float:
    if not classes or any(name not in per_class for name in classes):
        return np.nan
    return float(np.mean([per_class[name] for name in classes]))


def overlap_wide(overlap: pd.DataFrame, part: str, names: list[str], metric: str = "fpr95") -> pd.DataFrame:
    """Model × detector of ``metric`` for one part of :func:`overlap_frame` (Table 19: ``without``, 20: ``with``)."""
    chosen = overlap[overlap["part"] == part]
    values: dict[str, dict[str, float]] = {}
    for model, detector, value in zip(*(chosen[name].tolist() for name in ("model", "detector", metric)), strict=True):
        values.setdefault(model, {})[detector] = value  # no frame per model (a groupby): 300 runs, 600 frames
    return _wide(values, [n for n in names if n in values])


CLEANING_COLUMNS = [
    "model",
    "dataset",
    "detector",
    "metric",
    "full",
    "sample",
    "cleaned",
    "full_minus_cleaned",
    "sample_minus_cleaned",
    "rows_full",
    "rows_sample",
    "rows_cleaned",
]


def cleaning_frame(suites: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Tables 15–18 long (:data:`CLEANING_COLUMNS`): per model, dataset (report key), detector and metric
    (``fpr95``, ``auroc``) the value on the full set, NINCO's inspected sample and its cleaned part (NaN where
    the set has no such part), and the differences full − cleaned and sample − cleaned."""
    rows = []
    for model, suite in suites.items():
        for dataset, detectors in (suite["summary"].get("ninco_cleaning") or {}).items():
            for detector in sorted(detectors, key=_order):
                parts = detectors[detector]
                full, sample, cleaned = (parts.get(p, {}) for p in ("full", "ninco_sample", "ninco_cleaned"))
                for metric in ("fpr95", "auroc"):
                    values = [_number(part.get(metric)) for part in (full, sample, cleaned)]
                    counts = [_number(part.get("rows")) for part in (full, sample, cleaned)]
                    differences = [values[0] - values[2], values[1] - values[2]]
                    rows.append((model, dataset, detector, metric, *values, *differences, *counts))
    return pd.DataFrame(rows, columns=CLEANING_COLUMNS)


def _number(value: Any) -> float:
    return np.nan if value is None else float(value)


def _popular_rows(model: str, reports: Mapping[str, Any]) -> list[tuple]:
    """Rows (model, detector, dataset, fpr95, auroc) of the first ``popular_subsamples`` report: ``mean``
    from the ``<detector>:macro`` rows, then each source dataset."""
    for _, report in reports_of(reports, NINCO, POPULAR):
        values: dict[tuple[str, str], dict[str, float]] = {}
        for row in report.get("metrics", ()):
            if row["metric"] not in ("fpr95", "auroc") or row.get("value") is None:
                continue
            variant, subgroup = row.get("variant", ""), row.get("subgroup", "")
            if variant.endswith(":macro") and not subgroup:
                key = (variant.removesuffix(":macro"), "mean")
            elif ":" not in variant and subgroup:
                key = (variant, subgroup)
            else:
                continue
            values.setdefault(key, {})[row["metric"]] = float(row["value"])
        ordered = sorted(values, key=lambda k: (_order(k[0]), k[1] != "mean", k[1]))
        return [
            (model, d, s, values[(d, s)].get("fpr95", np.nan), values[(d, s)].get("auroc", np.nan)) for d, s in ordered
        ]
    return []


def _order(detector: str) -> tuple[int, str]:
    order = list(PAPER_COLUMNS)
    return (order.index(detector), "") if detector in order else (len(order), detector)


def _wide(values: Mapping[str, Mapping[str, Any]], names: list[str]) -> pd.DataFrame:
    detectors = sorted({d for row in values.values() for d in row}, key=_order)
    frame = pd.DataFrame.from_dict(dict(values), orient="index", columns=detectors).reindex(names)
    return frame.astype(float).rename_axis("model")


def markdown(result: NincoTables | None, models: pd.DataFrame) -> list[str]:
    """The paper's section of ``leaderboard.md``."""
    from ...presentation.suite_markdown import table

    lines = ["## NINCO, Bitterwolf et al. 2023", ""]
    if result is None:
        return lines + ["No run has a NINCO report (`ninco` configs `ninco`, `unit_tests`, `popular_subsamples`).", ""]
    legend = ", ".join(f"{PAPER_COLUMNS.get(d, d)} = `{d}`" for d in _all_detectors(result))
    lines += [f"Percent; detectors as the paper's columns: {legend}.", ""]
    sections = (
        ("Mean FPR@95 on NINCO (%, ↓ lower is better; Table 3)", result.fpr95),
        ("Mean AUROC on NINCO (%, ↑ higher is better; Table 4)", result.auroc),
        ("Cleaned popular OOD datasets: mean FPR@95 over the 11 subsamples (%, ↓; Table 14)", result.popular_fpr95),
    )
    for title, frame in sections:
        lines += [f"### {title}", ""]
        lines += (
            _table(frame, result.accuracy, models, table, percent) if frame.shape[1] else ["No run reports it.", ""]
        )
        if frame is result.auroc:
            lines += _unit_tests(result, models, table)
    return lines + _cleaning(result.cleaning, table) + _overlap(result, models, table)


def _overlap(result: NincoTables, models: pd.DataFrame, table) -> list[str]:
    """Tables 19 and 20: mean FPR@95 over the NINCO classes without / with ImageNet-21k overlap."""
    lines = []
    names = list(result.accuracy.index)
    for part, number in (("without", 19), ("with", 20)):
        lines += [f"### Mean FPR@95 on the NINCO classes {part} ImageNet-21k overlap (%, ↓; Table {number})", ""]
        frame = overlap_wide(result.overlap, part, names)
        if not frame.shape[1]:
            lines += [OVERLAP_MISSING, ""]
            continue
        counts = sorted(set(result.overlap.loc[result.overlap["part"] == part, "classes"]))
        lines += [
            f"Mean over the {' or '.join(map(str, counts))} classes whose ImageNet-21k overlap (NINCO's Table 9, the "
            f"build's `in21k_overlap`) is {'none (`0`)' if part == 'without' else 'an IN-21k class or unclear (`?`)'}"
            " (Appendix L: 9 vs. 55 classes).",
            "",
        ]
        lines += _table(frame, result.accuracy, models, table, percent)
    if result.overlap_missing:
        lines += [
            "Without Tables 19–20 (their NINCO report records no class's ImageNet-21k overlap: evaluate again with a "
            "`ninco` build): " + ", ".join(f"`{m}`" for m in result.overlap_missing) + ".",
            "",
        ]
    return lines


OVERLAP_MISSING = (
    "No run's NINCO report records each class's ImageNet-21k overlap (`in21k_overlap` rows): evaluate with the "
    "`ninco` config of the ninco builder (`imagenet-suite evaluate MODEL --datasets ... ninco-1.0.0`)."
)


def _cleaning(frame: pd.DataFrame, table) -> list[str]:
    """One table per full popular OOD set: model × detector rows, FPR@95 and AUROC on the full set, the
    inspected sample ("-f"), the cleaned part ("-c") and the differences (Tables 15–18)."""
    lines = ["### Full vs cleaned popular OOD sets (%, Tables 15–18)", ""]
    if not len(frame):
        return lines + ["No run reports a full popular OOD set with NINCO subsets (`popular_ood` builds).", ""]
    lines += [
        '"-f": the images NINCO\'s authors inspected (their random sample of the set); "-c": those they kept as '
        "free of ImageNet-1k objects; Δ: full − cleaned and -f − -c. FPR@95 with ImageNet val positive (NINCO).",
        "",
    ]
    for dataset, part in frame.groupby("dataset", sort=True):
        fpr = part[part["metric"] == "fpr95"].set_index(["model", "detector"])
        auc = part[part["metric"] == "auroc"].set_index(["model", "detector"])
        columns = ["full", "sample", "cleaned", "full_minus_cleaned"]
        aucs = dict(zip(auc.index, auc[columns].itertuples(index=False, name=None), strict=True))  # no .loc per row
        rows = []
        for (model, detector), f in zip(
            fpr.index, fpr[[*columns, "sample_minus_cleaned"]].itertuples(index=False, name=None), strict=True
        ):
            rows.append(
                (model, PAPER_COLUMNS.get(detector, detector))
                + tuple(map(percent, f))
                + tuple(map(percent, aucs[(model, detector)]))
            )
        first = fpr.iloc[0]
        sizes = ", ".join(f"{name} {_count(first[f'rows_{name}'])}" for name in ("full", "sample", "cleaned"))
        lines += [f"#### {dataset} (OOD images: {sizes})", ""]
        header = ["model", "method", "FPR full", "FPR -f", "FPR -c", "Δ full−c", "Δ -f−c", "AUROC full", "AUROC -f",
                  "AUROC -c", "Δ full−c"]  # fmt: skip
        lines += table(header, rows)
    return lines


def _count(value: float) -> str:
    return "—" if np.isnan(value) else f"{int(value):,}"


def _unit_tests(result: NincoTables, models: pd.DataFrame, table) -> list[str]:
    rules = ", ".join(f"`{rule}`" for rule in result.unit_test_rules) or "—"
    lines = [
        "### OOD unit tests failed, ↓ (Tables 10–13)",
        "",
        f"Failed / run tests per model and detector; a unit test counts as failed under the rule {rules} (e.g. "
        "`fpr95>0.1`: the detector's FPR@95 on that test set is above 10 %).",
        "",
    ]
    if not result.unit_tests_failed.shape[1]:
        return lines + ["No run reports the unit tests.", ""]
    failed = result.unit_tests_failed
    counts = failed.to_numpy(dtype=float)
    totals = result.unit_tests_of.loc[failed.index, failed.columns].to_numpy(dtype=float)  # no .loc per cell
    cells = [
        ["—" if np.isnan(count) else f"{int(count)}/{int(total)}" for count, total in zip(row, of, strict=True)]
        for row, of in zip(counts.tolist(), totals.tolist(), strict=True)
    ]
    frame = pd.DataFrame(cells, index=failed.index, columns=failed.columns, dtype=object)
    return lines + _table(frame, result.accuracy, models, table, str)


def _table(frame: pd.DataFrame, accuracy: pd.Series, models: pd.DataFrame, table, cell) -> list[str]:
    shown = frame.apply(lambda column: column.map(cell)) if cell is not str else frame
    shown = shown.rename(columns=lambda d: PAPER_COLUMNS.get(d, d))
    shown.insert(0, "ImageNet top-1 (%)", accuracy.reindex(frame.index).map(percent))
    rows = with_weights(shown, models)
    return table(list(rows.columns), rows.itertuples(index=False))


def _all_detectors(result: NincoTables) -> list[str]:
    frames = (result.fpr95, result.auroc, result.unit_tests_failed, result.popular_fpr95)
    return sorted({d for frame in frames for d in frame.columns}, key=_order)


def write(result: NincoTables | None, folder: Path) -> list[Path]:
    """``leaderboard_ninco_fpr95.csv``, ``_ninco_auroc.csv``, ``_ninco_unit_tests.csv`` (failed, of per
    model and detector), ``_ninco_popular.csv``, ``_ninco_cleaning.csv`` and ``_ninco_in21k_overlap.csv`` (Tables
    19–20, :data:`OVERLAP_COLUMNS`) (long), those with data."""
    written: list[Path] = []
    if result is None:
        return written
    for name, frame in (("ninco_fpr95", result.fpr95), ("ninco_auroc", result.auroc)):
        if frame.shape[1]:
            write_csv(folder, name, frame, written)
    if result.unit_tests_failed.shape[1]:
        long = pd.concat(
            {"failed": result.unit_tests_failed.stack(), "of": result.unit_tests_of.stack()}, axis=1
        ).rename_axis(["model", "detector"])
        long = long.dropna()  # a model without NINCO unit tests has no row (stack keeps its NaN)
        write_csv(folder, "ninco_unit_tests", long.astype(int).reset_index(), written, index=False)
    if len(result.popular):
        write_csv(folder, "ninco_popular", result.popular, written, index=False)
    if len(result.cleaning):
        write_csv(folder, "ninco_cleaning", result.cleaning, written, index=False)
    if len(result.overlap):
        write_csv(folder, "ninco_in21k_overlap", result.overlap, written, index=False)
    return written


def reference_mismatches(suite: Mapping[str, Any]) -> list[str]:
    """What keeps a run from being ranked among the 28 models of NINCO's Tables 3 and 4 (``leaderboard --reference
    bitterwolf2023``): the run must record its weights tag and have NINCO's mean FPR@95 or AUROC over the 64
    classes (a ``ninco`` report: ImageNet val the ID set) for at least one of the paper's detectors
    (:data:`PAPER_COLUMNS`). Empty when it matches.

    Example:
        >>> source = {"kind": "timm", "tag": "a1_in1k", "loaded": True}
        >>> reference_mismatches({"weights_source": source, "summary": {"ninco": {"gradnorm": {"mean_fpr95": 0.5}}}})
        ["no NINCO mean FPR@95 or AUROC of the paper's detectors (evaluate with a ninco folder)"]
    """
    found = weights_mismatch(suite)
    ninco = suite["summary"].get("ninco") or {}
    if not any(
        detector in PAPER_COLUMNS and (entry.get("mean_fpr95") is not None or entry.get("mean_auroc") is not None)
        for detector, entry in ninco.items()
    ):
        found.append("no NINCO mean FPR@95 or AUROC of the paper's detectors (evaluate with a ninco folder)")
    return found


__all__ = [
    "CLEANING_COLUMNS",
    "NINCO",
    "OVERLAP_COLUMNS",
    "OVERLAP_PARTS",
    "PAPER_COLUMNS",
    "POPULAR",
    "NincoTables",
    "cleaning_frame",
    "markdown",
    "overlap_frame",
    "overlap_wide",
    "reference_mismatches",
    "tables",
    "write",
]
