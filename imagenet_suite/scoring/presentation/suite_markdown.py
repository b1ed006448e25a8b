"""``suite.md``: one model's suite evaluation (``suite.json``) as Markdown tables and plots.

The heading names the model and its weights: the weights tag the spec resolved to, where the weights
came from and their sha256 (:func:`~imagenet_suite.scoring.summary.suite_json.weights_label`). Sections: the
QUBA dimensions (value, signed z-score, weight, source reports; missing dimensions with what they need)
and score; QUBA with AutoAttack (Table 8) when the run has it; the attacks (their convention, accuracies and
ratios to the clean accuracy) when the run has them; the headline accuracy per dataset; ImageNet-C
mCE; NINCO; ReaL, ASMA, LCA; the 95 % intervals (how they were computed, and which numbers have none and
why); skipped datasets; the hierarchy of the LCA distances; the dataset builds each report read. A number
with a bootstrap interval (``summary.uncertainty.ci95``) is shown as ``value [low, high]``. Its two charts,
``quba_dimensions.svg`` and ``accuracies.svg``, sit beside it: the same SVG as ``report.html`` shows, drawn once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...files import atomic_write_bytes
from ..metrics.quba import ATTACK_CONVENTIONS, DIMENSIONS, QUBA_ATTACK_CONVENTION, QUBA_SIGNS, quba_z_scores
from ..summary.number_paths import number_path
from ..summary.quba import attack_convention_of, geometric_mean
from ..summary.suite_json import weights_label
from .figure_files import svg_file
from .html import figure_svg
from .plots import accuracy_bars_plot, quba_dimensions_plot

SUITE_MD = "suite.md"
MISSING = "—"  # every missing value of suite.md and leaderboard.md; the reason is said beside the table


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    """A Markdown table (floats with 4 significant digits; None, NaN and NA as —, never ``nan``).

    Example:
        >>> table(("model", "value"), [("a", 0.123456), ("b", float("nan")), ("c", None)])[2:5]
        ['| a | 0.1235 |', '| b | — |', '| c | — |']
    """
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(value) for value in row) + " |" for row in rows]
    return [*lines, ""]


def _cell(value: Any) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if isinstance(value, float | WithInterval):
        return f"{value:.4g}"
    return str(value).replace("|", "\\|")


@dataclass(frozen=True)
class WithInterval:
    """A number and its 95 % interval, formatted ``value [low, high]`` (each with the format given)."""

    value: float
    interval: Sequence[float]

    def __format__(self, spec: str) -> str:
        low, high = self.interval
        return f"{self.value:{spec}} [{low:{spec}}, {high:{spec}}]"


class Intervals:
    """The intervals of ``summary.uncertainty``: ``intervals(value, *keys)`` is the number at ``keys`` of the
    summary with its interval when it has one (:class:`WithInterval`), else ``value`` itself."""

    def __init__(self, summary: Mapping[str, Any]):
        self.ci = (summary.get("uncertainty") or {}).get("ci95", {})

    def __call__(self, value: Any, *keys: str) -> Any:
        interval = self.ci.get(number_path(*keys))
        return value if interval is None or value is None else WithInterval(value, interval)


def quba_section(quba: Mapping[str, Any], ci: Intervals | None = None) -> list[str]:
    ci = ci or Intervals({})
    present = quba["dimensions"]
    full = np.array([present[name]["value"] if name in present else np.nan for name in DIMENSIONS], dtype=float)
    z = dict(zip(DIMENSIONS, quba_z_scores(full), strict=True))
    rows = [
        (
            name,
            ci(entry["value"], "quba", "dimensions", name, "value"),
            "↑" if QUBA_SIGNS[DIMENSIONS.index(name)] > 0 else "↓",
            float(z[name]),
            quba["weights"][name],
            ", ".join(entry["sources"]),
            entry["note"],
        )
        for name, entry in present.items()
    ]
    score = ci(quba["score"], "quba", "score")
    lines = ["## QUBA (Beyond Accuracy, Hesse et al. 2025)", ""]
    if quba.get("probabilities"):
        lines += [
            f"A zero-shot model: probabilities {quba['probabilities']} (Beyond Accuracy's wrappers return "
            "softmax(100·cos), SigLIP's sigmoid(s·cos + b), which every metric softmaxes again).",
            "",
        ]
    lines += table(("dimension", "value", "better", "z ↑", "weight", "from", "note"), rows)
    partial = quba.get("partial") or {}
    if quba["score"] is not None and partial:
        lines += [
            f"**QUBA score: {score:.3f} — partial** (Eq. 1, the paper's constants and weights; "
            "from partial inputs, not comparable with the paper's scores):",
            "",
        ]
        lines += [f"- `{name}`: {note}" for name, note in partial.items()]
        lines += [""]
    elif quba["score"] is not None:
        lines += [f"**QUBA score: {score:.3f}** (Eq. 1, the paper's constants and weights)", ""]
    else:
        lines += ["**QUBA score: not computed** — these dimensions are missing:", ""]
    lines += [f"- `{name}`: {reason}" for name, reason in quba["missing"].items()]
    return [*lines, "", f"![QUBA dimensions]({CHART_FILES['quba']})", ""]


def quba_autoattack_section(variant: Mapping[str, Any] | None) -> list[str]:
    """Beyond Accuracy's Table 8 QUBA (AutoAttack as the adversarial dimension), when the run has it."""
    if variant is None:
        return []
    lines = ["## QUBA with AutoAttack (Beyond Accuracy, Table 8)", "", variant["note"], ""]
    if variant["score"] is not None:
        partial = " — partial" if variant.get("partial") else ""
        return lines + [f"**QUBA score (AutoAttack): {variant['score']:.3f}{partial}**", ""]
    return lines + ["No score; missing:", ""] + [f"- `{n}`: {why}" for n, why in variant["missing"].items()] + [""]


def adversarial_section(adversarial: Mapping[str, Any] | None) -> list[str]:
    """The attacks of ``summary.adversarial``: where FGSM and PGD perturbed (the attack convention), each
    attack's accuracy and its ratio to the clean accuracy of the same images, and Beyond Accuracy's AR,
    said to be QUBA's adversarial dimension only under its convention."""
    if not adversarial:
        return []
    convention = attack_convention_of(adversarial)
    clean = adversarial["clean_accuracy"]
    lines = [
        "## Adversarial attacks",
        "",
        f"{adversarial['rows']} ImageNet-val images (seed {adversarial['seed']}, batches of "
        f"{adversarial['batch_size']}); FGSM/PGD attack convention `{convention}`: {ATTACK_CONVENTIONS[convention]}"
        + ("" if "attack_convention" in adversarial else " (not recorded: an older imagenet-suite's file)")
        + ". AutoAttack runs in [0,1] pixels.",
        "",
    ]
    accuracies = {name: adversarial.get(f"{name}_accuracy") for name in ("fgsm", "pgd")}
    accuracies |= {label: entry["accuracy"] for label, entry in (adversarial.get("autoattack") or {}).items()}
    rows = [("clean", clean, None)]
    rows += [(name, value, value / clean if clean else None) for name, value in accuracies.items() if value is not None]
    lines += table(("attack", "accuracy ↑", "/ clean accuracy ↑"), rows)
    if accuracies["fgsm"] is None or accuracies["pgd"] is None or not clean:
        return lines
    robustness = geometric_mean([accuracies["fgsm"] / clean, accuracies["pgd"] / clean])
    role = (
        "QUBA's adversarial robustness"
        if convention == QUBA_ATTACK_CONVENTION
        else f"not a QUBA dimension: QUBA's mu/sigma are of the `{QUBA_ATTACK_CONVENTION}` convention"
    )
    return [*lines, f"AR = GM(FGSM-A / A, PGD-A / A) = {robustness:.4g} ({role})", ""]


def other_sections(summary: Mapping[str, Any]) -> list[str]:
    ci = Intervals(summary)
    lines = ["## Accuracy per dataset", ""]
    lines += table(
        ("dataset", "metric", "value ↑", "clean rows ↑"),
        (
            (
                key,
                v["metric"],
                ci(v["value"], "accuracies", key, "value"),
                ci(v.get("clean_accuracy"), "accuracies", key, "clean_accuracy"),
            )
            for key, v in summary["accuracies"].items()
        ),
    )
    lines += [f"![accuracy per dataset]({CHART_FILES['accuracy']})", ""]
    corrupted = summary.get("imagenet_c")
    if corrupted:
        lines += [
            "## ImageNet-C",
            "",
            f"mCE {ci(corrupted['mce'], 'imagenet_c', 'mce'):.4f}, relative mCE "
            f"{_cell(ci(corrupted['relative_mce'], 'imagenet_c', 'relative_mce'))} (1.0 = AlexNet), "
            f"over {corrupted['sets']} corruption × severity sets.",
            "",
        ]
        lines += table(
            ("corruption", "accuracy ↑", "CE ↓", "relative CE ↓"),
            (
                (name, *(ci(e.get(c), "imagenet_c", "corruptions", name, c) for c in ("accuracy", "ce", "relative_ce")))
                for name, e in corrupted["corruptions"].items()
            ),
        )
    if summary.get("ninco"):
        lines += ["## NINCO (Bitterwolf et al. 2023): means over the OOD classes", ""]
        lines += ["Percent, as the paper and `leaderboard.md` print them.", ""]
        lines += table(
            ("detector", "mean AUROC (%) ↑", "mean FPR@95 (%) ↓", "unit tests failed ↓"),
            (
                (
                    name,
                    _percent(ci(e.get("mean_auroc"), "ninco", name, "mean_auroc")),
                    _percent(ci(e.get("mean_fpr95"), "ninco", name, "mean_fpr95")),
                    _failed(e.get("unit_tests_failed")),
                )
                for name, e in summary["ninco"].items()
            ),
        )
    if summary.get("expert_labels"):
        lines += ["## Expert multi-labels (Shankar et al. 2020; ImageNet-M)", ""]
        lines += table(("dataset", "metric", "value"), _flatten(summary["expert_labels"], ci, "expert_labels"))
    if summary.get("real"):
        lines += [
            "## ReaL (Beyer et al. 2020; the model's own preprocessing, centre crop)",
            "",
            f"ReaL top-1 {ci(summary['real']['real_top1_accuracy'], 'real', 'real_top1_accuracy'):.4f}",
            "",
        ]
    if summary.get("anzaku2024"):
        lines += ["## Multi-label sets resized without centre crop (Anzaku et al. 2024, App. B)", ""]
        lines += table(
            ("dataset", "top-1", "ReaL accuracy", "ASMA (exact)"),
            (
                (key, *(ci(e.get(c), "anzaku2024", key, c) for c in ("top1_accuracy", "real_accuracy", "asma")))
                for key, e in summary["anzaku2024"].items()
            ),
        )
    for title, key in (
        ("ASMA (Anzaku et al. 2024; resized to the input size, no centre crop)", "asma"),
        ("LCA on mistakes (LCA-on-the-Line, Shi et al. 2024)", "lca"),
    ):
        if summary.get(key):
            lines += [f"## {title}", ""]
            lines += table(("dataset", "variant", "value"), _flatten(summary[key], ci, key))
    if summary.get("protocols"):
        lines += ["## Evaluation protocols", ""]
        lines += table(("protocol", "preprocessing"), summary["protocols"].items())
    return lines


def _percent(value: Any) -> str | None:
    """A fraction (or :class:`WithInterval` of one) in percent with one decimal, as NINCO prints it; None stays.

    Example:
        >>> _percent(0.51849), _percent(WithInterval(0.5, (0.4, 0.61))), _percent(None)
        ('51.8', '50.0 [40.0, 61.0]', None)
    """
    if value is None:
        return None
    if isinstance(value, WithInterval):
        return f"{WithInterval(100 * value.value, [100 * bound for bound in value.interval]):.1f}"
    return f"{100 * value:.1f}"


def _failed(entry: Mapping[str, Any] | None) -> str | None:
    return None if not entry else f"{entry['failed']} of {entry['of']} ({entry['rule']})"


def _flatten(nested: Mapping[str, Mapping[str, float]], ci: Intervals, section: str) -> list[tuple[str, str, Any]]:
    return [
        (key, variant, ci(value, section, key, variant))
        for key, values in nested.items()
        for variant, value in values.items()
    ]


def uncertainty_section(summary: Mapping[str, Any]) -> list[str]:
    """How the intervals were computed, and every number shown without one, with the reason."""
    lines = ["## 95 % intervals", ""]
    uncertainty = summary.get("uncertainty")
    if not uncertainty:
        return [*lines, "None computed (`evaluate --bootstrap 0`, or a suite.json written before intervals).", ""]
    lines += [
        f"`value [low, high]`: {uncertainty['method']} ({uncertainty['resamples']} resamples, seed "
        f"{uncertainty['seed']}): the 2.5 % and 97.5 % quantiles of the number recomputed on resamples of the "
        "images it is measured on (each dataset resampled on its own; numbers of the same images together). "
        "None of the papers reports uncertainty: they rank models on these point estimates.",
        "",
    ]
    if uncertainty["no_interval"]:
        lines += ["Without an interval:", ""]
        lines += [f"- `{path}`: {reason}" for path, reason in uncertainty["no_interval"].items()]
        lines += [""]
    return lines


def hierarchy_section(record: Mapping[str, Any] | None) -> list[str]:
    """The hierarchy the LCA distances came from (suite.json's ``hierarchy``): its build, seed, options and
    sources, and the distance LCA-on-the-Line reports with it."""
    if record is None:
        return []
    build = record["build"]
    if build is None:
        what = f"the ImageNet-1k WordNet tree shipped with imagenet-suite (nodes CSV sha256 {record['shipped_sha256']})"
    else:
        what = (
            f"{build['builder']} {build['version']}, build_info.json sha256 {build['build_info_sha256']}, "
            f"seed {record.get('seed')} ({build['folder']})"
        )
    lines = [
        "## LCA hierarchy",
        "",
        f"LCA distances from {what}. LCA-on-the-Line (Shi et al. 2024) reports `{record['paper_distance']}` "
        f"with a {record['kind']} hierarchy{_paper_distances(record.get('paper_distances'))}.",
        "",
    ]
    options = record.get("options") or {}
    lines += [f"- option `{name}`: {_cell(value)}" for name, value in options.items()]
    sources = record.get("sources") or {}
    lines += [f"- built from `{name}`: {s.get('file')} (sha256 {s.get('sha256')})" for name, s in sources.items()]
    return [*lines, ""] if options or sources else lines


def _paper_distances(exceptions: Mapping[str, str] | None) -> str:
    """The OOD sets LCA-on-the-Line predicts with the ImageNet LCA in another distance, as a clause."""
    if not exceptions:
        return ""
    by_distance: dict[str, list[str]] = {}
    for dataset, distance in exceptions.items():
        by_distance.setdefault(distance, []).append(f"`{dataset}`")
    sets = "; ".join(f"`{distance}` for {', '.join(names)}" for distance, names in by_distance.items())
    return (
        f" (its Table 1 on every set), and correlates OOD accuracy with the ImageNet-val LCA in that distance but "
        f"{sets} (App. E.2; the leaderboard's LCA-on-the-Line rows name theirs)"
    )


def builds_section(reports: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Per report: the build it scored (and, where another, the build of the outputs and the ID outputs)."""
    rows = []
    for key, report in reports.items():
        provenance = report.get("provenance")
        if provenance is None:
            rows.append((key, report["meta"]["dataset"], None, None, "not recorded", None))
            continue
        build = provenance["dataset"]
        others = [
            f"{role} {other['builder']} {other['build_info_sha256'][:12]}"
            for role, other in (("outputs of", provenance["outputs"]), ("ID outputs of", provenance["id_outputs"]))
            if other is not None and other != build
        ]
        rows.append(
            (
                key,
                build["builder"],
                build["version"],
                f"{build['config']}/{build['split']}",
                build["build_info_sha256"][:12] + ("; " + "; ".join(others) if others else ""),
                build["folder"],
            )
        )
    lines = ["## Dataset builds", ""]
    return lines + table(("report", "builder", "version", "config/split", "build_info.json sha256", "folder"), rows)


def suite_markdown(suite: Mapping[str, Any]) -> str:
    """The whole ``suite.md`` text."""
    summary = suite["summary"]
    params = suite.get("params")
    source = suite.get("weights_source")
    lines = [
        f"# Suite evaluation: `{suite['model']}`",
        "",
        f"weights: {weights_label(suite, sha256_digits=None)}"
        + (f" from {source['location']}" if source and source["loaded"] else "")
        + (f"; {params / 1e6:.2f} M parameters" if params is not None else "")
        + f"; imagenet-suite {suite.get('imagenet_suite')}",
        "",
    ]
    lines += quba_section(summary["quba"], Intervals(summary))
    lines += quba_autoattack_section(summary.get("quba_autoattack"))
    lines += adversarial_section(summary.get("adversarial"))
    lines += other_sections(summary)
    lines += benchmark_sections(summary.get("benchmarks"))
    lines += uncertainty_section(summary)
    if suite.get("skipped"):
        lines += ["## Skipped", ""]
        lines += [f"- `{key}`: {reason}" for key, reason in suite["skipped"].items()]
        lines += [""]
    lines += hierarchy_section(suite.get("hierarchy"))
    lines += builds_section(suite["datasets"])
    return "\n".join(lines).rstrip() + "\n"


def benchmark_sections(benchmarks: Mapping[str, Any] | None) -> list[str]:
    """One section per benchmark of ``summary.benchmarks``: per detector the benchmark's own table (OpenOOD's rows
    and columns, percent with two decimals, NINCO's FPR@95 beside them)."""
    from ..benchmarks import header, openood_frame_rows

    lines: list[str] = []
    for name, record in (benchmarks or {}).items():
        sets = ", ".join(
            f"{set_name} ({entry['group']}, {entry['rows']:,})" for set_name, entry in record["sets"].items()
        )
        lines += [f"## Benchmark {name}", "", f"{record.get('citation', '')}. ID: {record['id']['rows']:,} ImageNet val "
                  f"images; OOD: {sets}. FPR@95 with OOD positive (OpenOOD v1.5); FPR@95 (ID+) with ID positive "
                  "(NINCO); percent.", ""]  # fmt: skip
        for detector in record["detectors"]:
            lines += [f"### {detector}", ""]
            lines += table(header(), openood_frame_rows(record["detectors"], detector))
    return lines


CHART_FILES = {"quba": "quba_dimensions.svg", "accuracy": "accuracies.svg"}
"""The files of :func:`run_charts`' charts beside ``suite.md``, by chart."""
PNG_CHART_FILES = ("quba_dimensions.png", "accuracies.png")
"""The same charts as an older release wrote them beside ``suite.md``; ``evaluate`` removes them from a run folder it
writes again, since their numbers are an earlier run's."""
CHART_NAMES = {"quba": "QUBA dimensions (signed z-scores)", "accuracy": "Accuracy per dataset"}
"""The charts' names on ``report.html``; each salts its chart's SVG ids, so a chart is the same SVG in both."""


def run_charts(suite: Mapping[str, Any]) -> dict[str, str]:
    """The two charts of ``suite.md`` as ``<svg>`` elements: ``"quba"``, its QUBA dimensions, and ``"accuracy"``,
    its accuracy per dataset. ``report.html`` shows the same two: drawn once, they are written to both
    (:func:`write_suite_markdown`, :func:`~imagenet_suite.scoring.presentation.html_run.write_run_report`)."""
    summary = suite["summary"]
    values = {name: entry["value"] for name, entry in summary["quba"]["dimensions"].items()}
    accuracies = {key: entry["value"] for key, entry in summary["accuracies"].items()}
    figures = {
        "quba": quba_dimensions_plot(values, title=f"QUBA dimensions: {suite['model']}"),
        "accuracy": accuracy_bars_plot(accuracies, title=f"accuracy per dataset: {suite['model']}"),
    }
    return {chart: figure_svg(figure, CHART_NAMES[chart]) for chart, figure in figures.items()}


def write_suite_markdown(suite: Mapping[str, Any], folder: str | Path, charts: Mapping[str, str] | None = None) -> Path:
    """Write ``suite.md`` and its two charts (:data:`CHART_FILES`, SVG) into ``folder``; return the Markdown file.
    ``charts``: :func:`run_charts` of ``suite`` when the caller has drawn them (default: drawn here)."""
    folder = Path(folder)
    charts = run_charts(suite) if charts is None else charts
    for chart, name in CHART_FILES.items():
        atomic_write_bytes(folder / name, svg_file(charts[chart]))
    path = folder / SUITE_MD
    atomic_write_bytes(path, suite_markdown(suite).encode())
    return path


__all__ = [
    "CHART_FILES",
    "CHART_NAMES",
    "PNG_CHART_FILES",
    "Intervals",
    "WithInterval",
    "benchmark_sections",
    "builds_section",
    "hierarchy_section",
    "run_charts",
    "suite_markdown",
    "uncertainty_section",
    "write_suite_markdown",
]
