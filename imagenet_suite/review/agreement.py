"""Agreement between two reviewers: per-class agreement and Cohen's κ over the samples both labelled.

Two labellings are compared on each of :data:`LABELS`: ``decision`` (``id``/``ood``/``unsure``/``q``)
over the samples both decided, and ``contamination`` (``categorical``/``incidental``/``none``) over
the samples both classified. For every class (the dataset's ``ground_truth`` label) and overall:
``samples`` (labelled by both), ``agree`` (same label), ``agreement`` = agree / samples and Cohen's
κ = (p_o − p_e) / (1 − p_e), with p_e from each reviewer's own label frequencies (what
``sklearn.metrics.cohen_kappa_score`` computes, unweighted). κ is undefined (``None``, with the reason
in ``kappa_undefined``) when no sample was labelled by both or when both reviewers used one and the
same label throughout (p_e = 1; sklearn returns NaN there).

No FiftyOne here: :mod:`.status` feeds it the dataset's decisions and classes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

LABELS = ("decision", "contamination")
NO_CLASS = "(no label)"


def cohen_kappa(first: Sequence[str], second: Sequence[str]) -> float | None:
    """Unweighted Cohen's κ of two equally long label sequences; None where it is undefined."""
    if len(first) != len(second):
        raise ValueError(f"cohen_kappa: {len(first)} labels vs {len(second)}")
    n = len(first)
    if n == 0:
        return None
    observed = sum(a == b for a, b in zip(first, second)) / n
    counts_a, counts_b = Counter(first), Counter(second)
    expected = sum(counts_a[label] * counts_b[label] for label in counts_a) / (n * n)
    if expected == 1:
        return None
    return (observed - expected) / (1 - expected)


def _why_undefined(first: Sequence[str], second: Sequence[str]) -> str:
    if not first:
        return "no sample labelled by both"
    return f"both reviewers gave every sample the same label ({first[0]!r}): chance agreement is 1"


def _summary(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    first, second = [a for a, _ in pairs], [b for _, b in pairs]
    agree = sum(a == b for a, b in pairs)
    kappa = cohen_kappa(first, second)
    return {
        "samples": len(pairs),
        "agree": agree,
        "agreement": agree / len(pairs) if pairs else None,
        "kappa": kappa,
        "kappa_undefined": None if kappa is not None else _why_undefined(first, second),
    }


def compare_labels(
    ours: Mapping[str, Mapping[str, str]],
    theirs: Mapping[str, Mapping[str, str]],
    classes: Mapping[str, str],
) -> dict[str, Any]:
    """``{label: {"overall": summary, "per_class": {class: summary}}}`` for each of :data:`LABELS`.

    ``ours``/``theirs``: ``{row id: {"decision": ..., "contamination": ...}}`` ("" or missing = not
    labelled); ``classes``: ``{row id: class name}``. Rows are taken in sorted id order.
    """
    result: dict[str, Any] = {}
    for label in LABELS:
        by_class: dict[str, list[tuple[str, str]]] = {}
        everything: list[tuple[str, str]] = []
        for row_id in sorted(ours.keys() & theirs.keys()):
            a, b = ours[row_id].get(label) or "", theirs[row_id].get(label) or ""
            if a and b:
                by_class.setdefault(classes.get(row_id) or NO_CLASS, []).append((a, b))
                everything.append((a, b))
        result[label] = {
            "overall": _summary(everything),
            "per_class": {name: _summary(pairs) for name, pairs in sorted(by_class.items())},
        }
    return result


def format_agreement(comparison: dict[str, Any]) -> list[str]:
    """Plain-text lines: one table per label (class, samples, agree, agreement, κ)."""
    lines = [
        f"agreement of {comparison['first']} with {comparison['other']} ({comparison['only_ours']} decided "
        f"only in the first, {comparison['only_theirs']} only in the other):"
    ]
    for label in LABELS:
        found = comparison["labels"][label]
        rows = [*found["per_class"].items(), ("all classes", found["overall"])]
        width = max(len(name) for name, _ in rows)
        lines += ["", f"{label}:", f"{'class':<{width}}  {'samples':>7}  {'agree':>5}  {'agreement':>9}  {'kappa':>6}"]
        for name, s in rows:
            agreement = f"{s['agreement']:.3f}" if s["agreement"] is not None else "-"
            kappa = f"{s['kappa']:.3f}" if s["kappa"] is not None else "n/a"
            lines.append(f"{name:<{width}}  {s['samples']:>7}  {s['agree']:>5}  {agreement:>9}  {kappa:>6}")
        if found["overall"]["kappa"] is None:
            lines.append(f"kappa is undefined over all classes: {found['overall']['kappa_undefined']}")
    return lines
