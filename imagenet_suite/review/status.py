"""``review status``: how far a review is — decisions per value and per class, conflicts, the authors' logs,
and with ``--compare`` the agreement between two reviewers (:mod:`.agreement`).

Counts come from the decision and taxonomy tags (what the App shows), after a :func:`.decisions.sync`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import param
from .agreement import compare_labels, format_agreement
from .decision_table import CONTAMINATIONS, DECISIONS, read_decision_table
from .decisions import SHOWN, decision_from_tags, sync, taxonomy_from_tags
from .errors import DecisionTableError

UNDECIDED = "undecided"
UNCLASSIFIED = "unclassified"


def review_status(dataset, compare: Sequence[str | Path] = ()) -> dict[str, Any]:
    """``{"dataset", "samples", "decisions", "conflicts", "taxonomy_conflicts", "contamination", "per_class",
    "authors_per_class", "authors_logs"}`` (+ ``"agreement"`` with ``compare``).

    ``decisions``/``per_class[class]``: samples per decision value plus ``undecided`` (conflicting
    samples count under ``conflicts`` only); ``contamination``: decided samples per contamination
    value plus ``unclassified``; ``authors_per_class``: the NINCO authors' decisions on
    this dataset's samples; ``authors_logs``: per imported log, images per decision and ``p_id``.

    ``compare``: one decision table (another reviewer's), compared with this dataset's decisions, or
    two tables compared with each other; the dataset gives the samples' classes (see
    :func:`compare_reviews`).
    """
    result = sync(dataset)
    fields = ["row_id", "ground_truth.label", "tags"]
    has_authors = "authors_decision" in dataset.get_field_schema()
    reviewed = _without_references(dataset)
    columns = reviewed.values(fields + (["authors_decision"] if has_authors else []))
    total: Counter = Counter()
    contamination: Counter = Counter()
    per_class: dict[str, Counter] = {}
    authors: dict[str, Counter] = {}
    classes: dict[str, str] = {}
    ours: dict[str, dict[str, str]] = {}
    for row_id, label, tags, *rest in zip(*columns):
        decision = decision_from_tags(tags)
        key = UNDECIDED if decision is None else "conflicts" if isinstance(decision, tuple) else decision
        total[key] += 1
        classes[row_id] = label or "(no label)"
        per_class.setdefault(classes[row_id], Counter())[key] += 1
        if isinstance(decision, str):
            taxonomy = taxonomy_from_tags(tags)
            if isinstance(taxonomy, tuple):
                contamination[taxonomy[0] or UNCLASSIFIED] += 1
                ours[row_id] = {"decision": decision, "contamination": taxonomy[0]}
        if rest and rest[0] is not None:
            authors.setdefault(classes[row_id], Counter())[rest[0]] += 1
    keys = (*DECISIONS, UNDECIDED)
    status = {
        "dataset": dataset.name,
        "samples": sum(total.values()),
        "decisions": {k: total[k] for k in keys},
        "conflicts": sorted(result.conflicts),
        "taxonomy_conflicts": dict(sorted(result.taxonomy_conflicts.items())),
        "contamination": {k: contamination[k] for k in (*CONTAMINATIONS, UNCLASSIFIED)},
        "per_class": {c: {k: n[k] for k in keys} for c, n in sorted(per_class.items())},
        "authors_per_class": {c: dict(sorted(n.items())) for c, n in sorted(authors.items())},
        "authors_logs": dataset.info.get("imagenet_suite", {}).get("authors_logs", {}),
    }
    if compare:
        status["agreement"] = compare_reviews(dataset.name, ours, classes, compare)
    return status


def _without_references(dataset):
    """The reviewed samples: the look-alike reference images (``is_reference``) left out."""
    from fiftyone import ViewField as F

    if "is_reference" not in dataset.get_field_schema():
        return dataset
    return dataset.match(F("is_reference") != True)  # noqa: E712


def compare_reviews(
    name: str, ours: dict[str, dict[str, str]], classes: dict[str, str], tables: Sequence[str | Path]
) -> dict[str, Any]:
    """Agreement of the dataset's decisions (``ours``) with one table, or of two tables with each other.

    DecisionTableError if more than two tables are given or a table names ids that are not rows of
    the dataset (it was exported from another dataset).
    """
    if len(tables) not in (1, 2):
        raise DecisionTableError(f"{param('tables')} takes one or two decision tables, got {len(tables)}")
    labelled = []
    for path in tables:
        table = read_decision_table(path)
        unknown = sorted(d.id for d in table.decisions if d.id not in classes)
        if unknown:
            raise DecisionTableError(
                f"{path}: {len(unknown)} id(s) are not rows of FiftyOne dataset {name!r}, "
                f"e.g. {', '.join(repr(i) for i in unknown[:SHOWN])}; was it exported from another dataset?"
            )
        labelled.append(
            (str(path), {d.id: {"decision": d.decision, "contamination": d.contamination} for d in table.decisions})
        )
    first, second = labelled if len(labelled) == 2 else [(f"FiftyOne dataset {name!r}", ours), labelled[0]]
    return {
        "first": first[0],
        "other": second[0],
        "only_ours": len(first[1].keys() - second[1].keys()),
        "only_theirs": len(second[1].keys() - first[1].keys()),
        "labels": compare_labels(first[1], second[1], classes),
    }


def format_status(status: dict[str, Any]) -> str:
    """The status as plain-text tables."""
    keys = (*DECISIONS, UNDECIDED)
    lines = [
        f"{status['dataset']}: {status['samples']} samples; "
        + ", ".join(f"{k} {status['decisions'][k]}" for k in keys)
        + (f"; {len(status['conflicts'])} with two decision tags" if status["conflicts"] else "")
        + (
            f"; {len(status['taxonomy_conflicts'])} with conflicting contamination tags"
            if status["taxonomy_conflicts"]
            else ""
        ),
        "contamination of decided samples: " + ", ".join(f"{k} {n}" for k, n in status["contamination"].items()),
        "",
    ]
    width = max([len(c) for c in status["per_class"]] + [5])
    lines.append(f"{'class':<{width}}  " + "  ".join(f"{k:>9}" for k in keys))
    for name, counts in status["per_class"].items():
        lines.append(f"{name:<{width}}  " + "  ".join(f"{counts[k]:>9}" for k in keys))
    if status["authors_logs"]:
        lines += [
            "",
            "NINCO authors' logs (images per decision; % ID = id / (id + ood), as in the paper's Table 1):",
            f"{'log':<28} {'images':>7} {'id':>5} {'ood':>5} {'unsure':>6} {'q':>4} {'other':>5} "
            f"{'% ID':>6} {'samples':>8}",
        ]
        for log, s in status["authors_logs"].items():
            p_id = f"{100 * s['p_id']:.1f}" if s["p_id"] is not None else "-"
            lines.append(
                f"{log:<28} {s['images']:>7} {s['id']:>5} {s['ood']:>5} {s['unsure']:>6} {s['q']:>4} "
                f"{s['other']:>5} {p_id:>6} {s['matched']:>8}"
            )
    if "agreement" in status:
        lines += ["", *format_agreement(status["agreement"])]
    return "\n".join(lines) + "\n"
