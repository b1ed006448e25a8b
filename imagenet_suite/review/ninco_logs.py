"""The NINCO authors' review logs, mapped onto our decisions and onto the samples they are about.

The logs (``data/cleaning_annotations`` of j-cb/NINCO, parsed by
:func:`imagenet_suite.core.ninco_review_logs.read_review_logs`) hold one code per reviewed image:
``i`` -> ``id`` (contains an ImageNet-1k object), ``o`` -> ``ood``, ``u`` -> ``unsure``, ``q`` -> ``q``
(undocumented, kept as its own value); codes are read case-insensitively (one ``I``); the few
other codes (blank, ``oo``, ``lo``, ``d``, ``b``) map to ``other`` with the raw code kept. An image
listed twice in a log takes its last decision (the Places log re-decides 5 images).

Only the kept (``o``) images were released, renamed ``<class>_<k:03d>_<original name>``: a log row
finds its sample through the dataset's ``original_file`` and class (the ninco builder's ``ninco``
and ``popular_subsamples`` configs). The other rows are about images that were never released; they
still count in the per-log summary, whose ``p_id = id / (id + ood)`` is the paper's "% ID" (Table 1).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from .errors import DecisionTableError

CODES = {"i": "id", "o": "ood", "u": "unsure", "q": "q"}
AUTHORS = "NINCO authors"
LOG_HEADER = "index,image_location,decision"


@dataclass(frozen=True)
class AuthorsDecision:
    """The authors' final decision about one image of one log."""

    log: str
    released_class: str  # the class its kept images were released under
    image_location: str  # path in the authors' source data
    code: str  # as written
    decision: str  # id / ood / unsure / q / other


def is_authors_log(path: str | Path) -> bool:
    """True for a ``cleaning_annotations`` folder or a single log CSV (``index,image_location,decision``)."""
    path = Path(path)
    if path.is_dir():
        return True
    with open(path, encoding="utf-8-sig", errors="replace") as handle:
        return handle.readline().strip() == LOG_HEADER


def read_authors_decisions(path: str | Path) -> list[AuthorsDecision]:
    """Final decision per (log, image) from a ``cleaning_annotations`` folder or one of its CSVs."""
    from ..core import ninco_review_logs as ninco
    from ..errors import InvalidSourceData

    path = Path(path)
    try:
        if path.is_dir():
            rows = ninco.read_review_logs(path)
        else:
            kind = ninco.LOG_KINDS.get(path.parent.name, "potential_ood_class")
            rows = ninco.parse_review_log(path.read_text(encoding="utf-8-sig"), path.stem, kind, str(path))
    except InvalidSourceData as err:
        raise DecisionTableError(str(err)) from err
    final = {(r["log"], r["image_location"]): r for r in rows if not r["superseded"]}
    return [
        AuthorsDecision(
            r["log"],
            r["released_class"],
            r["image_location"],
            r["decision"],
            CODES.get(r["decision"].strip().lower(), "other"),
        )
        for r in final.values()
    ]


def match_samples(decisions: list[AuthorsDecision], released: dict[str, dict[str, str]]) -> dict[int, str]:
    """Position in ``decisions`` -> row id of the released sample it is about.

    ``released`` maps a released class to ``{original file name: row id}``; a log's
    ``image_location`` names its image by base name (``donuts/2842.jpg`` -> ``2842.jpg``) or, for
    logs of class folders, by ``<folder>_<base name>`` (``b_badlands/00000792.jpg``).
    """
    from ..core import ninco_review_logs as ninco

    rows = [{"released_class": d.released_class, "image_location": d.image_location} for d in decisions]
    ninco.attach_released_files(rows, released)
    return {i: row["file_name"] for i, row in enumerate(rows) if row["file_name"] is not None}


def summary(decisions: list[AuthorsDecision], matched: dict[int, str]) -> dict[str, dict]:
    """Per log: images per decision, samples matched, and ``p_id = id / (id + ood)`` (NaN-free: None)."""
    out: dict[str, dict] = {}
    counts: dict[str, Counter] = {}
    for i, d in enumerate(decisions):
        counts.setdefault(d.log, Counter())[d.decision] += 1
        counts[d.log]["matched"] += i in matched
    for log, c in sorted(counts.items()):
        images = sum(c[v] for v in (*CODES.values(), "other"))
        decided = c["id"] + c["ood"]
        out[log] = {
            "images": images,
            **{v: c[v] for v in (*CODES.values(), "other")},
            "matched": c["matched"],
            "p_id": c["id"] / decided if decided else None,
            "unsure_fraction": c["unsure"] / images,
        }
    return out


def import_authors_logs(dataset, path: str | Path) -> dict[str, dict]:
    """Attach the authors' decisions to the samples they are about; return the per-log summary.

    Sets ``authors_decision`` / ``authors_code`` / ``authors_log`` on matched samples (our own
    decisions are untouched: the ``disagreements`` view compares the two) and keeps the summary of
    every imported log in ``dataset.info["imagenet_suite"]["authors_logs"]``. Raises
    DecisionTableError (nothing written) for a malformed log, a dataset without the release's
    ``original_file`` column, or logs none of whose images is a sample of the dataset.
    """
    decisions = read_authors_decisions(path)
    if "original_file" not in dataset.get_field_schema():
        raise DecisionTableError(
            f"FiftyOne dataset {dataset.name!r} has no `original_file` field: the NINCO logs "
            "map onto the ninco builder's `ninco` and `popular_subsamples` configs"
        )
    released: dict[str, dict[str, str]] = {}
    for raw, original, row_id in zip(*dataset.values(["ground_truth.raw_label", "original_file", "row_id"])):
        if raw is not None and original:
            released.setdefault(raw, {})[original] = row_id
    matched = match_samples(decisions, released)
    if not matched:
        logs = sorted({d.log for d in decisions})
        raise DecisionTableError(
            f"{path}: none of the {len(decisions)} logged images is a sample of FiftyOne dataset "
            f"{dataset.name!r} (logs {logs[:3]}{'...' if len(logs) > 3 else ''}); nothing was imported"
        )
    for name, value in (
        ("authors_decision", lambda d: d.decision),
        ("authors_code", lambda d: d.code),
        ("authors_log", lambda d: d.log),
    ):
        dataset.set_values(name, {row_id: value(decisions[i]) for i, row_id in matched.items()}, key_field="row_id")
    result = summary(decisions, matched)
    dataset.reload()
    info = dict(dataset.info.get("imagenet_suite", {}))
    info["authors_logs"] = {**info.get("authors_logs", {}), **result}
    dataset.info["imagenet_suite"] = info
    dataset.save()
    from .views import save_views

    save_views(dataset)  # adds `disagreements`
    return result
