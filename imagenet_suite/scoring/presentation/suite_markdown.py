"""``suite.md``: one model's suite evaluation (``suite.json``) as Markdown tables and plots.

The heading names the model and its weights: the weights tag the spec resolved to, where the weights
came from and their sha256 (:func:`~imagenet_suite.scoring.summary.suite.weights_label`). Sections: the
QUBA dimensions (value, signed z-score, weight, source reports; missing dimensions with what they need)
and score; the headline accuracy per dataset; ImageNet-C mCE; NINCO; ReaL, ASMA, LCA; skipped datasets;
the hierarchy of the LCA distances; the dataset builds each report read. Plots ``quba_dimensions.png`` and ``accuracies.png`` sit beside it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...files import atomic_write_bytes
from ..metrics.quba import DIMENSIONS, quba_z_scores
from ..summary.suite import weights_label
from .plots import accuracy_bars_plot, quba_dimensions_plot

SUITE_MD = "suite.md"


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    """A Markdown table (floats with 4 significant digits, None as —)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(value) for value in row) + " |" for row in rows]
    return [*lines, ""]


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value).replace("|", "\\|")


def quba_section(quba: Mapping[str, Any]) -> list[str]:
    present = quba["dimensions"]
    full = np.array([present[name]["value"] if name in present else np.nan for name in DIMENSIONS], dtype=float)
    z = dict(zip(DIMENSIONS, quba_z_scores(full), strict=True))
    rows = [
        (name, entry["value"], float(z[name]), quba["weights"][name], ", ".join(entry["sources"]), entry["note"])
        for name, entry in present.items()
    ]
    lines = ["## QUBA (Beyond Accuracy, Hesse et al. 2025)", ""]
    lines += table(("dimension", "value", "z", "weight", "from", "note"), rows)
    partial = quba.get("partial") or {}
    if quba["score"] is not None and partial:
        lines += [
            f"**QUBA score: {quba['score']:.3f} — partial** (Eq. 1, the paper's constants and weights; "
            "from partial inputs, not comparable with the paper's scores):",
            "",
        ]
        lines += [f"- `{name}`: {note}" for name, note in partial.items()]
        lines += [""]
    elif quba["score"] is not None:
        lines += [f"**QUBA score: {quba['score']:.3f}** (Eq. 1, the paper's constants and weights)", ""]
    else:
        lines += ["**QUBA score: not computed** — these dimensions are missing:", ""]
    lines += [f"- `{name}`: {reason}" for name, reason in quba["missing"].items()]
    return [*lines, "", "![QUBA dimensions](quba_dimensions.png)", ""]


def quba_autoattack_section(variant: Mapping[str, Any] | None) -> list[str]:
    """Beyond Accuracy's Table 8 QUBA (AutoAttack as the adversarial dimension), when the run has it."""
    if variant is None:
        return []
    lines = ["## QUBA with AutoAttack (Beyond Accuracy, Table 8)", "", variant["note"], ""]
    if variant["score"] is not None:
        partial = " — partial" if variant.get("partial") else ""
        return lines + [f"**QUBA score (AutoAttack): {variant['score']:.3f}{partial}**", ""]
    return lines + ["No score; missing:", ""] + [f"- `{n}`: {why}" for n, why in variant["missing"].items()] + [""]


def other_sections(summary: Mapping[str, Any]) -> list[str]:
    lines = ["## Accuracy per dataset", ""]
    lines += table(
        ("dataset", "metric", "value", "clean rows"),
        ((key, v["metric"], v["value"], v.get("clean_accuracy")) for key, v in summary["accuracies"].items()),
    )
    lines += ["![accuracy per dataset](accuracies.png)", ""]
    corrupted = summary.get("imagenet_c")
    if corrupted:
        lines += [
            "## ImageNet-C",
            "",
            f"mCE {corrupted['mce']:.4f}, relative mCE {_cell(corrupted['relative_mce'])} (1.0 = AlexNet), "
            f"over {corrupted['sets']} corruption × severity sets.",
            "",
        ]
        lines += table(
            ("corruption", "accuracy", "CE", "relative CE"),
            ((name, e["accuracy"], e["ce"], e.get("relative_ce")) for name, e in corrupted["corruptions"].items()),
        )
    if summary.get("ninco"):
        lines += ["## NINCO (Bitterwolf et al. 2023): means over the OOD classes", ""]
        lines += table(
            ("detector", "mean AUROC", "mean FPR@95", "unit tests failed"),
            (
                (name, e.get("mean_auroc"), e.get("mean_fpr95"), _failed(e.get("unit_tests_failed")))
                for name, e in summary["ninco"].items()
            ),
        )
    if summary.get("expert_labels"):
        lines += ["## Expert multi-labels (Shankar et al. 2020; ImageNet-M)", ""]
        lines += table(("dataset", "metric", "value"), _flatten(summary["expert_labels"]))
    if summary.get("real"):
        lines += [
            "## ReaL (Beyer et al. 2020; the model's own preprocessing, centre crop)",
            "",
            f"ReaL top-1 {summary['real']['real_top1_accuracy']:.4f}",
            "",
        ]
    if summary.get("anzaku2024"):
        lines += ["## Multi-label sets resized without centre crop (Anzaku et al. 2024, App. B)", ""]
        lines += table(
            ("dataset", "top-1", "ReaL accuracy", "ASMA (exact)"),
            (
                (key, e.get("top1_accuracy"), e.get("real_accuracy"), e.get("asma"))
                for key, e in summary["anzaku2024"].items()
            ),
        )
    for title, key in (
        ("ASMA (Anzaku et al. 2024; resized to the input size, no centre crop)", "asma"),
        ("LCA on mistakes (LCA-on-the-Line, Shi et al. 2024)", "lca"),
    ):
        if summary.get(key):
            lines += [f"## {title}", ""]
            lines += table(("dataset", "variant", "value"), _flatten(summary[key]))
    if summary.get("protocols"):
        lines += ["## Evaluation protocols", ""]
        lines += table(("protocol", "preprocessing"), summary["protocols"].items())
    return lines


def _failed(entry: Mapping[str, Any] | None) -> str | None:
    return None if not entry else f"{entry['failed']} of {entry['of']} ({entry['rule']})"


def _flatten(nested: Mapping[str, Mapping[str, float]]) -> list[tuple[str, str, float]]:
    return [(key, variant, value) for key, values in nested.items() for variant, value in values.items()]


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
        f"with a {record['kind']} hierarchy.",
        "",
    ]
    options = record.get("options") or {}
    lines += [f"- option `{name}`: {_cell(value)}" for name, value in options.items()]
    sources = record.get("sources") or {}
    lines += [f"- built from `{name}`: {s.get('file')} (sha256 {s.get('sha256')})" for name, s in sources.items()]
    return [*lines, ""] if options or sources else lines


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
    lines += quba_section(summary["quba"])
    lines += quba_autoattack_section(summary.get("quba_autoattack"))
    lines += other_sections(summary)
    if suite.get("skipped"):
        lines += ["## Skipped", ""]
        lines += [f"- `{key}`: {reason}" for key, reason in suite["skipped"].items()]
        lines += [""]
    lines += hierarchy_section(suite.get("hierarchy"))
    lines += builds_section(suite["datasets"])
    return "\n".join(lines).rstrip() + "\n"


def write_suite_markdown(suite: Mapping[str, Any], folder: str | Path) -> Path:
    """Write ``suite.md`` and its two plots into ``folder``; return the Markdown file."""
    folder = Path(folder)
    summary = suite["summary"]
    values = {name: entry["value"] for name, entry in summary["quba"]["dimensions"].items()}
    quba_dimensions_plot(values, folder / "quba_dimensions.png", title=f"QUBA dimensions: {suite['model']}")
    accuracies = {key: entry["value"] for key, entry in summary["accuracies"].items()}
    accuracy_bars_plot(accuracies, folder / "accuracies.png", title=f"accuracy per dataset: {suite['model']}")
    path = folder / SUITE_MD
    atomic_write_bytes(path, suite_markdown(suite).encode())
    return path


__all__ = ["builds_section", "hierarchy_section", "suite_markdown", "write_suite_markdown"]
