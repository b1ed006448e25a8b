"""``report.html``: one run folder's suite evaluation (``suite.json``) as one self-contained page.

Sections: every headline number with its 95 % interval, its direction (↑ higher is better, ↓ lower) and
the paper it comes from (:func:`headline_rows`; a number without an interval says why, from
``summary.uncertainty.no_interval``); QUBA's dimensions (table and bars); accuracy per dataset (table and
bars); the attacks; ImageNet-C (CE per corruption); NINCO (percent, as the paper prints it; FPR@95 per OOD
class and detector as a shaded table); skipped
datasets; provenance: the weights, the builds each report read, the conventions (attack convention,
preprocessing protocols, LCA hierarchy) and the versions. Figures are drawn afresh as inline SVG
(:mod:`imagenet_suite.scoring.presentation.html`); a figure without data is not drawn: the page says what is
missing and which command adds it. ``evaluate`` writes it beside ``suite.md``; ``imagenet-suite report
RUN_DIR`` rewrites it from the run folder's suite.json.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from ...files import atomic_write_bytes
from ..evaluation.results import RELIABILITY
from ..metrics.quba import DIMENSIONS, QUBA_SIGNS
from ..report_names import DEFAULT_ECE_CONVENTION
from ..summary.number_paths import headline_numbers
from ..summary.quba import attack_convention_of
from ..summary.suite_json import SUITE_JSON, read_suite, weights_label, with_rows
from .figures import bitterwolf2023 as ninco_figures
from .html import DOWN, UP, Figure, Page, Section, Table, drawn, render, shaded_matrix
from .plots import accuracy_bars_plot, horizontal_bars, quba_dimensions_plot, reliability_diagram
from .suite_markdown import CHART_NAMES

REPORT_HTML = "report.html"
HEADLINE_COLUMNS = ["number", "paper", "value", "95 % low", "95 % high", "better", "no interval because"]
PAPERS = {
    "quba": "Hesse et al. 2025 (Beyond Accuracy)",
    "imagenet_c": "Hendrycks & Dietterich 2019 (ImageNet-C)",
    "ninco": "Bitterwolf et al. 2023 (NINCO)",
    "expert_labels": "Shankar et al. 2020",
    "anzaku2024": "Anzaku et al. 2024",
    "asma": "Anzaku et al. 2024",
    "lca": "Shi et al. 2024 (LCA-on-the-Line)",
    "real": "Beyer et al. 2020 (ReaL)",
    "accuracies": "",
}
LOWER_IS_BETTER = {"mce", "relative_mce", "ce", "relative_ce", "mean_fpr95"}
NO_INTERVALS = "none computed (evaluate --bootstrap 0, or a suite.json written before intervals)"
EVALUATE = "`imagenet-suite evaluate MODEL --datasets ...`"
RELIABILITY_MISSING = (
    "no report of this suite.json has calibration bins (written since reliability diagrams are drawn here): "
    f"{EVALUATE} with imagenet_val again, or `imagenet-suite score BUILD_DIR --outputs OUTPUTS --plots DIR`, which "
    "draws reliability_diagram.png of one split from the run's outputs"
)
RELIABILITY_SPLIT = "imagenet_val"  # Beyond Accuracy's calibration error is ImageNet val's


def direction(keys: tuple[str, ...]) -> str:
    """↑ or ↓: which way a headline number (its keys in ``summary``) is better.

    Example:
        >>> direction(("quba", "dimensions", "calibration_error", "value")), direction(("imagenet_c", "mce"))
        ('↓', '↓')
        >>> direction(("ninco", "msp", "mean_auroc")), direction(("lca", "objectnet", "top1"))
        ('↑', '↓')
    """
    if keys[:2] == ("quba", "dimensions"):
        return UP if QUBA_SIGNS[list(DIMENSIONS).index(keys[2])] > 0 else DOWN
    if keys[0] == "lca":
        return DOWN  # LCA distance of the mistakes: the nearer in the hierarchy, the better (Shi et al. 2024)
    return DOWN if keys[-1] in LOWER_IS_BETTER else UP


def headline_rows(summary: Mapping[str, Any]) -> pd.DataFrame:
    """Every headline number of a run's ``summary`` (those ``suite.md`` shows): :data:`HEADLINE_COLUMNS`, the
    interval from ``summary.uncertainty.ci95`` (empty where none, with the reason when the run gives one)."""
    uncertainty = summary.get("uncertainty") or {}
    ci, reasons = uncertainty.get("ci95", {}), uncertainty.get("no_interval", {})
    rows = []
    for path, keys in headline_numbers(summary).items():
        value: Any = summary
        for key in keys:
            value = value[key]
        low, high = ci.get(path, (None, None))
        why = reasons.get(path, "") if path not in ci else ""
        rows.append((path, PAPERS.get(keys[0], ""), value, low, high, direction(keys), why))
    return pd.DataFrame(rows, columns=HEADLINE_COLUMNS)


def _quba_section(suite: Mapping[str, Any], model: str, charts: Mapping[str, str]) -> Section:
    quba = suite["summary"]["quba"]
    present = quba["dimensions"]
    frame = pd.DataFrame(
        [(name, entry["value"], direction(("quba", "dimensions", name)), quba["weights"][name],
          ", ".join(entry["sources"]), entry["note"]) for name, entry in present.items()],
        columns=["dimension", "value", "better", "weight", "from", "note"],
    )  # fmt: skip
    notes = [
        f"QUBA score: {quba['score']:.4g}" + (" (partial inputs)" if quba.get("partial") else "")
        if quba["score"] is not None
        else "QUBA score: not computed (a dimension is missing)."
    ]
    notes += [f"Missing {name}: {reason}" for name, reason in quba["missing"].items()]
    values, title = {name: entry["value"] for name, entry in present.items()}, f"QUBA dimensions: {model}"
    figure = (
        _chart(CHART_NAMES["quba"], charts.get("quba"), quba_dimensions_plot, values, title=title)
        if values
        else Figure("QUBA dimensions", missing=f"no QUBA dimension: {EVALUATE} with imagenet_val")
    )
    return Section("QUBA", PAPERS["quba"], notes, [Table("The nine dimensions", frame)], [figure, _reliability(suite)])


def _reliability(suite: Mapping[str, Any]) -> Figure:
    """The reliability diagram (torchmetrics' 15 bins) of ImageNet val's report, else of the first report that
    has bins; what is missing when none has."""
    datasets = suite.get("datasets", {})
    with_bins = [key for key, report in datasets.items() if DEFAULT_ECE_CONVENTION in report.get(RELIABILITY, {})]
    if not with_bins:
        return Figure("Reliability diagram", missing=RELIABILITY_MISSING)
    key = next((k for k in with_bins if k.split("/")[0] == RELIABILITY_SPLIT), with_bins[0])
    from ..metrics.calibration import CalibrationBins  # torch: a run's page only, not the leaderboard's

    bins = CalibrationBins.from_json(DEFAULT_ECE_CONVENTION, datasets[key][RELIABILITY][DEFAULT_ECE_CONVENTION])
    title = f"{key} ({DEFAULT_ECE_CONVENTION} bins)"
    return drawn(f"Reliability diagram ({key})", reliability_diagram, bins, title=title)


def _accuracy_section(summary: Mapping[str, Any], model: str, charts: Mapping[str, str]) -> Section:
    accuracies = summary["accuracies"]
    frame = pd.DataFrame(
        [(key, entry["metric"], entry["value"], entry.get("clean_accuracy")) for key, entry in accuracies.items()],
        columns=["dataset", "metric", "value", "clean rows"],
    )
    if not accuracies:
        figure = Figure("Accuracy per dataset", missing=f"no dataset scored: {EVALUATE}")
    else:
        values = {key: entry["value"] for key, entry in accuracies.items()}
        title = f"accuracy per dataset: {model}"
        figure = _chart(CHART_NAMES["accuracy"], charts.get("accuracy"), accuracy_bars_plot, values, title=title)
    table = Table("Headline accuracy", frame, {"value": UP, "clean rows": UP}, percent=("value", "clean rows"))
    return Section("Accuracy per dataset", "", [], [table], [figure])


def _adversarial_section(adversarial: Mapping[str, Any] | None) -> Section | None:
    if not adversarial:
        return None
    clean = adversarial["clean_accuracy"]
    accuracies = {name: adversarial.get(f"{name}_accuracy") for name in ("fgsm", "pgd")}
    accuracies |= {label: entry["accuracy"] for label, entry in (adversarial.get("autoattack") or {}).items()}
    rows = [("clean", clean, None)] + [
        (name, value, value / clean if clean else None) for name, value in accuracies.items() if value is not None
    ]
    frame = pd.DataFrame(rows, columns=["attack", "accuracy", "/ clean accuracy"])
    note = (
        f"{adversarial['rows']} ImageNet-val images (seed {adversarial['seed']}); FGSM/PGD attack convention "
        f"{attack_convention_of(adversarial)}."
    )
    table = Table("Accuracy under attack", frame, {"accuracy": UP, "/ clean accuracy": UP}, ("accuracy",), note)
    return Section("Adversarial attacks", "", [], [table])


def _imagenet_c_section(corrupted: Mapping[str, Any] | None) -> Section | None:
    if not corrupted:
        return None
    frame = pd.DataFrame(
        [(name, e.get("accuracy"), e.get("ce"), e.get("relative_ce")) for name, e in corrupted["corruptions"].items()],
        columns=["corruption", "accuracy", "CE", "relative CE"],
    )
    notes = [f"mCE {corrupted['mce']:.4g} over {corrupted['sets']} corruption × severity sets (AlexNet = 1)."]
    ce = {name: e["ce"] for name, e in corrupted["corruptions"].items() if e.get("ce") is not None}
    figure = (
        drawn("CE per corruption", horizontal_bars, ce, None, title="CE per corruption (AlexNet = 1; lower is better)",
              xlabel="corruption error (CE)", signed=True)
        if ce
        else Figure("CE per corruption", missing="no corruption error: score ImageNet-C with AlexNet's errors")
    )  # fmt: skip
    table = Table("Per corruption", frame, {"accuracy": UP, "CE": DOWN, "relative CE": DOWN}, ("accuracy",))
    return Section("ImageNet-C", PAPERS["imagenet_c"], notes, [table], [figure])


def _ninco_section(ninco: Mapping[str, Any] | None, suite: Mapping[str, Any]) -> Section | None:
    if not ninco:
        return None
    frame = pd.DataFrame(
        [
            (
                name,
                e.get("mean_auroc"),
                e.get("mean_fpr95"),
                None if not e.get("unit_tests_failed") else e["unit_tests_failed"]["failed"],
                None if not e.get("unit_tests_failed") else e["unit_tests_failed"]["of"],
            )
            for name, e in ninco.items()
        ],
        columns=["detector", "mean AUROC", "mean FPR@95", "unit tests failed", "of"],
    )
    directions = {"mean AUROC": UP, "mean FPR@95": DOWN, "unit tests failed": DOWN}
    tables = [Table("Means over the OOD classes", frame, directions, ("mean AUROC", "mean FPR@95"))]
    per_class = ninco_figures.per_class_detectors(suite)
    if per_class.empty:
        missing = f"Not shown: FPR@95 per OOD class: {ninco_figures.NO_PER_CLASS_ROWS}."
        return Section("NINCO", PAPERS["ninco"], [missing], tables)
    note = (
        "ID positive; shaded from 0 (white) to 100 % (dark red); the class worst on average over the detectors first."
    )
    tables.append(shaded_matrix(ninco_figures.RUN_PER_CLASS, per_class, "OOD class", note))
    return Section("NINCO", PAPERS["ninco"], [], tables)


def _provenance_section(suite: Mapping[str, Any]) -> Section:
    from ... import __version__

    summary = suite["summary"]
    rows = [
        ("model", suite["model"]),
        ("weights", weights_label(suite, sha256_digits=None)),
        ("parameters", suite.get("params")),
        ("imagenet-suite of the run", suite.get("imagenet_suite")),
        ("imagenet-suite of this page", __version__),
    ]
    if summary.get("adversarial"):
        rows.append(("attack convention (FGSM/PGD)", attack_convention_of(summary["adversarial"])))
    if summary["quba"].get("probabilities"):
        rows.append(("zero-shot probabilities", summary["quba"]["probabilities"]))
    rows += [(f"protocol {name}", text) for name, text in (summary.get("protocols") or {}).items()]
    hierarchy = suite.get("hierarchy")
    if hierarchy:
        build = hierarchy.get("build")
        rows.append(("LCA hierarchy", "shipped WordNet tree" if build is None else f"{build['builder']} "
                     f"{build['version']} (build_info.json sha256 {build['build_info_sha256'][:12]})"))  # fmt: skip
    builds = []
    for key, report in suite["datasets"].items():
        provenance = report.get("provenance")
        if provenance is None:
            builds.append((key, report["meta"]["dataset"], None, None, "not recorded", None))
            continue
        build = provenance["dataset"]
        builds.append(
            (key, build["builder"], build["version"], f"{build['config']}/{build['split']}",
             build["build_info_sha256"][:12], build["folder"])
        )  # fmt: skip
    tables = [
        Table("Run", pd.DataFrame(rows, columns=["what", "value"])),
        Table(
            "Dataset builds",
            pd.DataFrame(builds, columns=["report", "builder", "version", "config/split", "build sha256", "folder"]),
            note="build sha256: the first 12 hex digits of the sha256 of the build's build_info.json.",
        ),
    ]
    if suite.get("skipped"):
        skipped = pd.DataFrame(list(suite["skipped"].items()), columns=["dataset", "why skipped"])
        tables.append(Table("Skipped datasets", skipped))
    return Section("Provenance", "", [], tables)


def _chart(name: str, chart: str | None, draw: Any, *args: Any, **kwargs: Any) -> Figure:
    """``drawn(name, draw, *args, **kwargs)``, or ``chart`` when given: the same chart's ``<svg>`` element, drawn
    for ``suite.md`` already under the same name (:data:`~.suite_markdown.CHART_NAMES`)."""
    return drawn(name, draw, *args, **kwargs) if chart is None else Figure(name, svg=chart)


def run_page(suite: Mapping[str, Any], charts: Mapping[str, str] | None = None) -> Page:
    """The page of one run (its suite.json content, its rows as
    :func:`~imagenet_suite.scoring.summary.suite_json.read_suite` gives them or as format 4 stores them).
    ``charts``: :func:`~imagenet_suite.scoring.presentation.suite_markdown.run_charts` of ``suite`` when the caller
    has drawn them for ``suite.md`` (default: drawn here)."""
    charts = charts or {}
    suite = with_rows(suite, suite.get("model", "suite.json"))
    summary = suite["summary"]
    model = suite["model"]
    headline = Table(
        "Every headline number",
        headline_rows(summary),
        note="Click a column header to sort. ↑: higher is better; ↓: lower is better. 95 % intervals: "
        + ((summary.get("uncertainty") or {}).get("method") or NO_INTERVALS)
        + "; none of the papers reports one.",
    )
    sections = [Section("Headline numbers", "", [], [headline])]
    sections += [_quba_section(suite, model, charts), _accuracy_section(summary, model, charts)]
    optional = (
        _adversarial_section(summary.get("adversarial")),
        _imagenet_c_section(summary.get("imagenet_c")),
        _ninco_section(summary.get("ninco"), suite),
    )
    sections += [section for section in optional if section is not None]
    sections.append(_provenance_section(suite))
    lead = f"Suite evaluation of {model}: {weights_label(suite)}."
    return Page(f"imagenet-suite report: {model}", lead, sections)


def write_run_report(suite: Mapping[str, Any], folder: str | Path, charts: Mapping[str, str] | None = None) -> Path:
    """Write ``report.html`` of ``suite`` (a suite.json's content) into run folder ``folder``; returns it.
    ``charts``: as :func:`run_page` takes them."""
    path = Path(folder) / REPORT_HTML
    atomic_write_bytes(path, render(run_page(suite, charts)).encode())
    return path


def rewrite_run_report(run_dir: str | Path) -> Path:
    """``report.html`` of a run folder, from its suite.json (read and checked: RunFolderError otherwise)."""
    run_dir = Path(run_dir)
    return write_run_report(read_suite(run_dir / SUITE_JSON), run_dir)


__all__ = [
    "HEADLINE_COLUMNS",
    "REPORT_HTML",
    "direction",
    "headline_rows",
    "rewrite_run_report",
    "run_page",
    "write_run_report",
]
