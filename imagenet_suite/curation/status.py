"""``review status``: how far a review is — decisions per value and per class, conflicts, the authors' logs.

Counts come from the decision tags (what the App shows), after a :func:`.decisions.sync`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .decision_table import DECISIONS
from .decisions import decision_from_tags, sync

UNDECIDED = "undecided"


def review_status(dataset) -> dict[str, Any]:
    """``{"dataset", "samples", "decisions", "conflicts", "per_class", "authors_per_class", "authors_logs"}``.

    ``decisions``/``per_class[class]``: samples per decision value plus ``undecided`` (conflicting
    samples count under ``conflicts`` only); ``authors_per_class``: the NINCO authors' decisions on
    this dataset's samples; ``authors_logs``: per imported log, images per decision and ``p_id``.
    """
    result = sync(dataset)
    fields = ["ground_truth.label", "tags"]
    has_authors = "authors_decision" in dataset.get_field_schema()
    columns = dataset.values(fields + (["authors_decision"] if has_authors else []))
    total: Counter = Counter()
    per_class: dict[str, Counter] = {}
    authors: dict[str, Counter] = {}
    for label, tags, *rest in zip(*columns):
        decision = decision_from_tags(tags)
        key = UNDECIDED if decision is None else "conflicts" if isinstance(decision, tuple) else decision
        total[key] += 1
        per_class.setdefault(label or "(no label)", Counter())[key] += 1
        if rest and rest[0] is not None:
            authors.setdefault(label or "(no label)", Counter())[rest[0]] += 1
    keys = (*DECISIONS, UNDECIDED)
    return {
        "dataset": dataset.name,
        "samples": sum(total.values()),
        "decisions": {k: total[k] for k in keys},
        "conflicts": sorted(result.conflicts),
        "per_class": {c: {k: n[k] for k in keys} for c, n in sorted(per_class.items())},
        "authors_per_class": {c: dict(sorted(n.items())) for c, n in sorted(authors.items())},
        "authors_logs": dataset.info.get("imagenet_suite", {}).get("authors_logs", {}),
    }


def format_status(status: dict[str, Any]) -> str:
    """The status as plain-text tables."""
    keys = (*DECISIONS, UNDECIDED)
    lines = [
        f"{status['dataset']}: {status['samples']} samples; "
        + ", ".join(f"{k} {status['decisions'][k]}" for k in keys)
        + (f"; {len(status['conflicts'])} with two decision tags" if status["conflicts"] else ""),
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
    return "\n".join(lines) + "\n"
