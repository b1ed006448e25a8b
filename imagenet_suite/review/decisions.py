"""Decisions: sample tags in the App, their reviewer/timestamp, export to and import from a decision table.

A reviewer decides with the App's own tagging (the fastest path it offers): select samples in the
grid (the checkbox at a tile's top left) or open one, click the tag icon,
type ``id`` / ``ood`` / ``unsure`` (after the first use, tick it in the list) and press *Apply*.
The App server writes the tag to MongoDB when *Apply* is clicked (write concern
``journal=true``, see :mod:`.database`): that tag **is** the decision, durable from then on.

:func:`sync` then records who and when: for each sample whose decision tag differs from its
``review_decision`` field it sets ``review_decision``, ``review_reviewer`` (the dataset's reviewer)
and ``review_timestamp`` (the sample's ``last_modified_at``, i.e. when the tag was applied);
removing the tag in the App withdraws the decision. ``review open`` syncs every
:data:`SYNC_SECONDS`, and export/status sync first, so nothing depends on the open process
surviving. A sample with two decision tags is a conflict: left as is and refused by export.

The contamination taxonomy of a decided sample (the NINCO paper's, see :mod:`.decision_table`) is
recorded the same way, with tags applied in the App beside the decision tag:

* ``contamination:categorical`` / ``contamination:incidental`` / ``contamination:none``;
* ``incidental:background`` / ``incidental:prominent_part`` / ``incidental:both_classes`` (the
  incidental sub-mode; on its own it implies ``contamination:incidental``);
* ``in1k:<wnid>`` for each ImageNet-1k class seen (e.g. ``in1k:n07579787``).

:func:`sync` records them in ``review_contamination``, ``review_incidental_mode`` and
``review_imagenet_classes`` (wnids joined by ``;``). Two contamination or two sub-mode tags, a
sub-mode with another contamination, an unknown value or a wnid not among the 1000 make a
*taxonomy conflict*: left as is, listed by ``review status`` and refused by export. Taxonomy tags on
an undecided sample are not recorded.

:func:`export_decisions` writes the decision table (:mod:`.decision_table`); its version is bumped
only when the decisions changed since the last export or import, so export → import → export gives
byte-identical files. :func:`import_decisions` sets tags and fields exactly as the table says.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .decision_table import (
    DECISIONS,
    Decision,
    DecisionTable,
    format_timestamp,
    join_classes,
    parse_timestamp,
    split_classes,
    taxonomy_problem,
    write_decision_table,
)
from .documents import declare
from .errors import DecisionTableError, ReviewError
from .views import decision_tag_count

TAXONOMY_FIELDS = ("review_contamination", "review_incidental_mode", "review_imagenet_classes")
REVIEW_FIELDS = ("review_decision", "review_reviewer", "review_timestamp", "review_note", *TAXONOMY_FIELDS)
CONTAMINATION_TAG = "contamination:"  # + one of decision_table.CONTAMINATIONS
MODE_TAG = "incidental:"  # + one of decision_table.INCIDENTAL_MODES
CLASS_TAG = "in1k:"  # + an ImageNet-1k wnid
TAXONOMY_TAG_PREFIXES = (CONTAMINATION_TAG, MODE_TAG, CLASS_TAG)
Taxonomy = tuple[str, str, str]  # (contamination, incidental_mode, imagenet_classes cell); "" = none
SYNC_SECONDS = 2.0
TABLE_KEY = "decision_table"  # dataset.info["imagenet_suite"][TABLE_KEY] = {"version", "body_sha256"}
SHOWN = 3


@dataclass
class SyncResult:
    """What :func:`sync` changed: decisions recorded or withdrawn, and samples left in conflict."""

    recorded: int = 0
    withdrawn: int = 0
    conflicts: list[str] = field(default_factory=list)  # row ids with two decision tags
    taxonomy_conflicts: dict[str, str] = field(default_factory=dict)  # row id -> what is wrong with its tags


def decision_from_tags(tags: list[str]) -> str | tuple[str, ...] | None:
    """The decision a sample's tags say: one value, None (undecided) or a tuple (conflict)."""
    found = tuple(d for d in DECISIONS if d in (tags or ()))
    return None if not found else found[0] if len(found) == 1 else found


def is_taxonomy_tag(tag: str) -> bool:
    return tag.startswith(TAXONOMY_TAG_PREFIXES)


def taxonomy_from_tags(tags: list[str]) -> Taxonomy | str:
    """``(contamination, incidental_mode, imagenet_classes)`` from a sample's tags, or what is wrong with them."""
    tags = tags or ()
    contaminations = sorted({t[len(CONTAMINATION_TAG) :] for t in tags if t.startswith(CONTAMINATION_TAG)})
    modes = sorted({t[len(MODE_TAG) :] for t in tags if t.startswith(MODE_TAG)})
    wnids = sorted({t[len(CLASS_TAG) :] for t in tags if t.startswith(CLASS_TAG)})
    if len(contaminations) > 1:
        return f"two contamination tags ({', '.join(CONTAMINATION_TAG + c for c in contaminations)}); keep one"
    if len(modes) > 1:
        return f"two incidental sub-mode tags ({', '.join(MODE_TAG + m for m in modes)}); keep one"
    contamination = contaminations[0] if contaminations else ("incidental" if modes else "")
    mode = modes[0] if modes else ""
    problem = taxonomy_problem(contamination, mode, wnids)
    if problem:
        return f"tags {sorted(t for t in tags if is_taxonomy_tag(t))}: {problem}"
    return contamination, mode, join_classes(wnids)


def taxonomy_tags(contamination: str, incidental_mode: str, imagenet_classes) -> list[str]:
    """The tags that record a taxonomy (the inverse of :func:`taxonomy_from_tags`)."""
    tags = [CONTAMINATION_TAG + contamination] if contamination else []
    tags += [MODE_TAG + incidental_mode] if incidental_mode else []
    return tags + [CLASS_TAG + w for w in sorted(set(imagenet_classes))]


def sync(dataset, reviewer: str | None = None) -> SyncResult:
    """Record reviewer and timestamp of decisions made (or withdrawn) by tagging since the last sync."""
    from fiftyone import ViewField as F

    reviewer = reviewer or dataset.info.get("imagenet_suite", {}).get("reviewer", "")
    _declare_fields(dataset)
    view = dataset.match((decision_tag_count() > 0) | (F("review_decision") != None))  # noqa: E711
    result = SyncResult()
    updates: dict[str, dict[str, Any]] = {}
    for row_id, tags, recorded, note, modified, *recorded_taxonomy in zip(
        *view.values(["row_id", "tags", "review_decision", "review_note", "last_modified_at", *TAXONOMY_FIELDS])
    ):
        decision = decision_from_tags(tags)
        taxonomy = taxonomy_from_tags(tags) if isinstance(decision, str) else None
        if isinstance(decision, tuple):
            result.conflicts.append(row_id)
        elif decision is None:
            updates[row_id] = dict.fromkeys(REVIEW_FIELDS)
            result.withdrawn += 1
        elif isinstance(taxonomy, str):
            result.taxonomy_conflicts[row_id] = taxonomy
        elif decision != recorded or taxonomy != tuple(v or "" for v in recorded_taxonomy):
            updates[row_id] = {
                "review_decision": decision,
                "review_reviewer": reviewer,
                "review_timestamp": _to_millis(modified),
                "review_note": note,
                **{name: value or None for name, value in zip(TAXONOMY_FIELDS, taxonomy)},
            }
            result.recorded += 1
    _set_fields(dataset, updates)
    return result


def current_table(dataset) -> DecisionTable:
    """Every decision of ``dataset`` as a table (after :func:`sync`); ReviewError on conflicts."""
    result = sync(dataset)
    if result.conflicts:
        raise ReviewError(
            f"{len(result.conflicts)} sample(s) of {dataset.name!r} carry two decision tags, e.g. "
            f"{', '.join(repr(i) for i in sorted(result.conflicts)[:SHOWN])}; remove one tag in the "
            "App (saved view `conflicting_decisions`) and export again"
        )
    if result.taxonomy_conflicts:
        row_id, problem = sorted(result.taxonomy_conflicts.items())[0]
        raise ReviewError(
            f"{len(result.taxonomy_conflicts)} sample(s) of {dataset.name!r} carry conflicting contamination "
            f"tags, e.g. {row_id!r}: {problem}; fix the tags in the App and export again"
        )
    from fiftyone import ViewField as F

    view = dataset.match((F("review_decision") != None) & (F("is_reference") != True))  # noqa: E711, E712
    rows = [
        Decision(i, d, r or "", format_timestamp(t) if t else "", n or "", c or "", m or "", split_classes(w or ""))
        for i, d, r, t, n, c, m, w in zip(*view.values(["row_id", *REVIEW_FIELDS]))
    ]
    table = DecisionTable(tuple(rows), dataset=dataset.name)
    known = _table_record(dataset)
    unchanged = known.get("body_sha256") in (table.body_sha256(), table.legacy_body_sha256())
    version = known.get("version", 1) if unchanged else known.get("version", 0) + 1
    return DecisionTable(table.decisions, version=version, dataset=dataset.name)


def export_decisions(dataset, path: str | Path) -> tuple[DecisionTable, str]:
    """Write the decision table of ``dataset`` to ``path``; return it and the file's sha256."""
    table = current_table(dataset)
    sha256 = write_decision_table(table, path)
    _remember_table(dataset, table)
    return table, sha256


def import_decisions(dataset, table: DecisionTable, source: str = "decision table") -> int:
    """Make ``dataset``'s decisions of the table's rows exactly the table's; return the rows imported.

    Rows of the dataset that the table does not mention keep their decisions. Raises
    DecisionTableError (nothing written) if the table names ids that are not rows of the dataset.
    """
    bad = [d for d in table.decisions if d.decision not in DECISIONS]
    if bad:
        raise DecisionTableError(
            f"{source}: unknown decision {bad[0].decision!r} for id {bad[0].id!r}; expected one "
            f"of {', '.join(DECISIONS)}; nothing was imported"
        )
    for d in table.decisions:
        problem = taxonomy_problem(d.contamination, d.incidental_mode, d.imagenet_classes)
        if problem:
            raise DecisionTableError(f"{source}: id {d.id!r}: {problem}; nothing was imported")
    present = set(dataset.distinct("row_id"))
    unknown = sorted(d.id for d in table.decisions if d.id not in present)
    if unknown:
        raise DecisionTableError(
            f"{source}: {len(unknown)} id(s) are not rows of FiftyOne dataset {dataset.name!r}, "
            f"e.g. {', '.join(repr(i) for i in unknown[:SHOWN])}; nothing was imported"
        )
    from fiftyone import ViewField as F

    for value in DECISIONS:
        ids = [d.id for d in table.decisions if d.decision == value]
        if ids:
            chosen = dataset.match(F("row_id").is_in(ids))
            chosen.untag_samples([d for d in DECISIONS if d != value])
            chosen.tag_samples(value)
    _retag_taxonomy(
        dataset, {d.id: taxonomy_tags(d.contamination, d.incidental_mode, d.imagenet_classes) for d in table.decisions}
    )
    _set_fields(
        dataset,
        {
            d.id: {
                "review_decision": d.decision,
                "review_reviewer": d.reviewer or None,
                "review_timestamp": parse_timestamp(d.timestamp) if d.timestamp else None,
                "review_note": d.note or None,
                **{name: value or None for name, value in zip(TAXONOMY_FIELDS, d.taxonomy_values())},
            }
            for d in table.decisions
        },
    )
    _remember_table(dataset, table)
    return len(table.decisions)


def set_decision(dataset, row_id: str, decision: str | None, note: str | None = None) -> None:
    """Decide one row from Python (as tagging in the App does); None withdraws its decision."""
    from fiftyone import ViewField as F

    if decision is not None and decision not in DECISIONS:
        raise ReviewError(f"decision {decision!r}: expected one of {', '.join(DECISIONS)}")
    view = dataset.match(F("row_id") == row_id)
    if not view.count():
        raise ReviewError(f"{row_id!r} is not a row of FiftyOne dataset {dataset.name!r}")
    view.untag_samples([d for d in DECISIONS if d != decision])
    if decision is not None:
        view.tag_samples(decision)
    if note is not None:
        view.set_values("review_note", [note])


def set_taxonomy(dataset, row_id: str, contamination: str = "", incidental_mode: str = "", imagenet_classes=()) -> None:
    """Set one row's contamination taxonomy from Python (as tagging in the App does); "" / () clear it."""
    problem = taxonomy_problem(contamination, incidental_mode, tuple(imagenet_classes))
    if problem:
        raise ReviewError(f"{row_id!r}: {problem}")
    from fiftyone import ViewField as F

    if not dataset.match(F("row_id") == row_id).count():
        raise ReviewError(f"{row_id!r} is not a row of FiftyOne dataset {dataset.name!r}")
    _retag_taxonomy(dataset, {row_id: taxonomy_tags(contamination, incidental_mode, imagenet_classes)})


def _retag_taxonomy(dataset, wanted: dict[str, list[str]]) -> None:
    """Make the taxonomy tags of the rows in ``wanted`` exactly the given ones."""
    from fiftyone import ViewField as F

    if not wanted:
        return
    rows = dataset.match(F("row_id").is_in(list(wanted)))
    stale = [t for t in rows.distinct("tags") if is_taxonomy_tag(t)]
    if stale:
        rows.untag_samples(stale)
    by_tag: dict[str, list[str]] = {}
    for row_id, tags in wanted.items():
        for tag in tags:
            by_tag.setdefault(tag, []).append(row_id)
    for tag, ids in sorted(by_tag.items()):
        dataset.match(F("row_id").is_in(ids)).tag_samples(tag)


def _declare_fields(dataset) -> None:
    """Declare the taxonomy fields on datasets loaded before they existed."""
    import fiftyone as fo

    declare(dataset, {name: fo.StringField() for name in TAXONOMY_FIELDS})


def _set_fields(dataset, updates: dict[str, dict[str, Any]]) -> None:
    if not updates:
        return
    for name in REVIEW_FIELDS:
        dataset.set_values(name, {row_id: values[name] for row_id, values in updates.items()}, key_field="row_id")


def _to_millis(value):
    """MongoDB keeps milliseconds; truncate so the table's timestamps round-trip exactly."""
    return value.replace(microsecond=value.microsecond // 1000 * 1000) if value is not None else None


def _table_record(dataset) -> dict[str, Any]:
    return dict(dataset.info.get("imagenet_suite", {}).get(TABLE_KEY) or {})


def _remember_table(dataset, table: DecisionTable) -> None:
    dataset.reload()
    info = dict(dataset.info.get("imagenet_suite", {}))
    info[TABLE_KEY] = {"version": table.version, "body_sha256": table.body_sha256()}
    dataset.info["imagenet_suite"] = info
    dataset.save()
