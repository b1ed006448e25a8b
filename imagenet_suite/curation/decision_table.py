"""The decision table: reviewers' per-row decisions as a versioned, checksummed CSV label table.

File layout (UTF-8, ``\\n`` line ends, rows sorted by ``id``)::

    # imagenet-suite-decisions/1 {"dataset": "ninco-1.0.0-ninco-test", "version": 3}
    id,decision,reviewer,timestamp,note
    donuts_000_2842,ood,alice,2025-11-21T06:12:00.123Z,
    donuts_001_520733,id,alice,2025-11-21T06:12:04.500Z,"plate in the background"

* ``id``: the dataset row's stable ``id`` (decisions join on it); unique within a table.
* ``decision``: ``id`` (contains an ImageNet-1k object), ``ood`` (no ImageNet-1k object),
  ``unsure``, or ``q`` (the NINCO authors' undocumented code, kept as its own value).
* ``reviewer``, ``note``: free text (may be empty); ``timestamp``: UTC ISO 8601 with
  milliseconds and ``Z`` (may be empty for hand-made tables).

The first line carries the format, the FiftyOne dataset it came from and the table's **version**
(an integer that ``review export`` bumps whenever the decisions change). The file's **sha256**
identifies it exactly (builders record it); :func:`write_decision_table` also writes
``<file>.sha256`` in ``sha256sum`` format. The same decisions always serialise to the same bytes.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..files import atomic_write_bytes
from .errors import DecisionTableError

FORMAT = "imagenet-suite-decisions/1"
COLUMNS = ("id", "decision", "reviewer", "timestamp", "note")
DECISIONS = ("id", "ood", "unsure", "q")
MEANINGS = {
    "id": "contains an ImageNet-1k object",
    "ood": "no ImageNet-1k object (truly OOD)",
    "unsure": "unclear / ambiguous",
    "q": "the NINCO authors' undocumented code 'q'",
}
TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
_FIRST_LINE = re.compile(r"^# " + re.escape(FORMAT) + r" (\{.*\})$")


@dataclass(frozen=True)
class Decision:
    """One reviewer decision about the dataset row ``id``."""

    id: str
    decision: str
    reviewer: str = ""
    timestamp: str = ""  # UTC ISO 8601 with milliseconds ("...T06:12:00.123Z"), or ""
    note: str = ""


@dataclass(frozen=True)
class DecisionTable:
    """Decisions sorted by id, the table's version and the dataset it was exported from."""

    decisions: tuple[Decision, ...]
    version: int = 1
    dataset: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "decisions", tuple(sorted(self.decisions, key=lambda d: d.id)))
        for a, b in zip(self.decisions, self.decisions[1:]):
            if a.id == b.id:
                raise DecisionTableError(f"decision table: id {a.id!r} appears twice")

    def by_id(self) -> dict[str, Decision]:
        return {d.id: d for d in self.decisions}

    def counts(self) -> dict[str, int]:
        """Number of rows per decision value, every value listed (0 if absent)."""
        counts = Counter(d.decision for d in self.decisions)
        return {value: counts[value] for value in DECISIONS}

    def body(self) -> bytes:
        """The CSV header and rows (everything after the first line)."""
        buffer = io.StringIO(newline="")
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(COLUMNS)
        for d in self.decisions:
            writer.writerow([d.id, d.decision, d.reviewer, d.timestamp, d.note])
        return buffer.getvalue().encode("utf-8")

    def body_sha256(self) -> str:
        """sha256 of the rows alone: equal for equal decisions, whatever the version."""
        return hashlib.sha256(self.body()).hexdigest()

    def to_bytes(self) -> bytes:
        meta = json.dumps({"dataset": self.dataset, "version": self.version}, sort_keys=True, ensure_ascii=False)
        return f"# {FORMAT} {meta}\n".encode() + self.body()


def format_timestamp(value: datetime) -> str:
    """A datetime as the table's timestamp (naive values are taken as UTC, as MongoDB returns them)."""
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def parse_timestamp(text: str) -> datetime:
    """The table's timestamp as a naive UTC datetime (millisecond precision)."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")


def write_decision_table(table: DecisionTable, path: str | Path) -> str:
    """Write ``table`` to ``path`` (atomically) and ``<path>.sha256``; return the file's sha256."""
    path = Path(path)
    data = table.to_bytes()
    digest = hashlib.sha256(data).hexdigest()
    atomic_write_bytes(path, data)  # fsync + rename + fsync of the folder: a crash leaves the old or the new table
    atomic_write_bytes(path.with_name(path.name + ".sha256"), f"{digest}  {path.name}\n".encode())
    return digest


def read_decision_table(path: str | Path) -> DecisionTable:
    """Read and validate a decision table; DecisionTableError names the file, line and value at fault."""
    path = Path(path)
    if not path.is_file():
        raise DecisionTableError(f"decision table {path} does not exist")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise DecisionTableError(f"{path}: not UTF-8 text ({err})") from None
    first, _, rest = text.partition("\n")
    meta = _read_first_line(path, first)
    reader = csv.reader(io.StringIO(rest, newline=""))
    header = next(reader, None)
    if tuple(header or ()) != COLUMNS:
        raise DecisionTableError(f"{path}: line 2: expected the header {','.join(COLUMNS)}, got {header}")
    decisions, seen = [], {}
    for record in reader:
        line = reader.line_num + 1
        decision = _read_row(path, line, record)
        if decision.id in seen:
            raise DecisionTableError(
                f"{path}: line {line}: id {decision.id!r} already decided on line {seen[decision.id]}"
            )
        seen[decision.id] = line
        decisions.append(decision)
    return DecisionTable(tuple(decisions), version=meta["version"], dataset=meta["dataset"])


def _read_first_line(path: Path, line: str) -> dict:
    match = _FIRST_LINE.match(line)
    if match is None:
        hint = (
            " (this looks like a NINCO authors' log: import it with `imagenet-suite review import NAME FILE`)"
            if line.strip() == "index,image_location,decision"
            else ""
        )
        raise DecisionTableError(
            f"{path}: line 1: not an imagenet-suite decision table; expected "
            f'\'# {FORMAT} {{"dataset": ..., "version": N}}\', got {line[:80]!r}{hint}'
        )
    try:
        meta = json.loads(match.group(1))
    except json.JSONDecodeError as err:
        raise DecisionTableError(f"{path}: line 1: metadata is not valid JSON ({err})") from None
    if not isinstance(meta.get("version"), int) or meta["version"] < 1 or not isinstance(meta.get("dataset"), str):
        raise DecisionTableError(
            f"{path}: line 1: expected a positive integer 'version' and a 'dataset' name, got {meta}"
        )
    return meta


def _read_row(path: Path, line: int, record: list[str]) -> Decision:
    if len(record) != len(COLUMNS):
        raise DecisionTableError(
            f"{path}: line {line}: expected {len(COLUMNS)} fields ({','.join(COLUMNS)}), got {len(record)}: {record}"
        )
    row_id, decision, reviewer, timestamp, note = record
    if not row_id:
        raise DecisionTableError(f"{path}: line {line}: empty id")
    if decision not in DECISIONS:
        raise DecisionTableError(
            f"{path}: line {line}: unknown decision {decision!r} for id {row_id!r}; "
            f"expected one of {', '.join(DECISIONS)}"
        )
    if timestamp and not _valid_timestamp(timestamp):
        raise DecisionTableError(
            f"{path}: line {line}: timestamp {timestamp!r} is not UTC ISO 8601 with "
            "milliseconds (e.g. 2025-11-21T06:12:00.123Z)"
        )
    return Decision(row_id, decision, reviewer, timestamp, note)


def _valid_timestamp(text: str) -> bool:
    if not TIMESTAMP.match(text):
        return False
    try:
        parse_timestamp(text)
    except ValueError:
        return False
    return True
