"""The decision table: reviewers' per-row decisions as a versioned, checksummed CSV label table.

File layout (UTF-8, ``\\n`` line ends, rows sorted by ``id``), format 2::

    # imagenet-suite-decisions/2 {"dataset": "ninco-1.0.0-ninco-test", "version": 3}
    id,decision,reviewer,timestamp,note,contamination,incidental_mode,imagenet_classes
    donuts_000_2842,ood,alice,2025-11-21T06:12:00.123Z,,none,,
    donuts_001_520733,id,alice,2025-11-21T06:12:04.500Z,"plate in the background",incidental,background,n07579787

* ``id``: the dataset row's stable ``id`` (decisions join on it); unique within a table.
* ``decision``: ``id`` (contains an ImageNet-1k object), ``ood`` (no ImageNet-1k object),
  ``unsure``, or ``q`` (the NINCO authors' undocumented code, kept as its own value).
* ``reviewer``, ``note``: free text (may be empty); ``timestamp``: UTC ISO 8601 with
  milliseconds and ``Z`` (may be empty for hand-made tables).
* ``contamination`` (the taxonomy of the NINCO paper, Bitterwolf et al. 2023): ``categorical`` (the sample's class
  is, or is a kind of, an ImageNet-1k class), ``incidental`` (an ImageNet-1k object appears in an
  image of an OOD class), ``none``, or empty (not classified).
* ``incidental_mode``: for ``incidental`` only, how the ImageNet-1k object appears: ``background``,
  ``prominent_part`` (a prominent part of the scene or of the main object) or ``both_classes`` (the
  image realises both its own class and the ImageNet-1k class); or empty.
* ``imagenet_classes``: the ImageNet-1k classes seen, as wnids, sorted, unique, joined by ``;``
  (a wnid not among the 1000 is refused); or empty.

Format 1 (``imagenet-suite-decisions/1``, the first five columns only) is still read: its rows get
an empty taxonomy. Tables are always written in format 2.

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

FORMAT_NAME = "imagenet-suite-decisions"
FORMAT_VERSION = 2
FORMAT = f"{FORMAT_NAME}/{FORMAT_VERSION}"
LEGACY_COLUMNS = ("id", "decision", "reviewer", "timestamp", "note")  # format 1
TAXONOMY_COLUMNS = ("contamination", "incidental_mode", "imagenet_classes")
COLUMNS = (*LEGACY_COLUMNS, *TAXONOMY_COLUMNS)  # format 2
COLUMNS_OF_FORMAT = {1: LEGACY_COLUMNS, 2: COLUMNS}
CONTAMINATIONS = ("categorical", "incidental", "none")
INCIDENTAL_MODES = ("background", "prominent_part", "both_classes")
CLASS_SEPARATOR = ";"
DECISIONS = ("id", "ood", "unsure", "q")
MEANINGS = {
    "id": "contains an ImageNet-1k object",
    "ood": "no ImageNet-1k object (truly OOD)",
    "unsure": "unclear / ambiguous",
    "q": "the NINCO authors' undocumented code 'q'",
}
TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
_FIRST_LINE = re.compile(r"^# " + re.escape(FORMAT_NAME) + r"/(\d+) (\{.*\})$")


@dataclass(frozen=True)
class Decision:
    """One reviewer decision about the dataset row ``id``."""

    id: str
    decision: str
    reviewer: str = ""
    timestamp: str = ""  # UTC ISO 8601 with milliseconds ("...T06:12:00.123Z"), or ""
    note: str = ""
    contamination: str = ""  # one of CONTAMINATIONS, or "" (not classified)
    incidental_mode: str = ""  # one of INCIDENTAL_MODES (contamination "incidental" only), or ""
    imagenet_classes: tuple[str, ...] = ()  # ImageNet-1k wnids seen, sorted and unique

    def __post_init__(self) -> None:
        object.__setattr__(self, "imagenet_classes", tuple(sorted(set(self.imagenet_classes))))

    @property
    def has_taxonomy(self) -> bool:
        return bool(self.contamination or self.incidental_mode or self.imagenet_classes)

    def taxonomy_values(self) -> tuple[str, str, str]:
        """The three taxonomy columns as written in the table."""
        return self.contamination, self.incidental_mode, join_classes(self.imagenet_classes)


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

    def body(self, format_version: int = FORMAT_VERSION) -> bytes:
        """The CSV header and rows (everything after the first line), in the current format by default."""
        buffer = io.StringIO(newline="")
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(COLUMNS_OF_FORMAT[format_version])
        for d in self.decisions:
            legacy = [d.id, d.decision, d.reviewer, d.timestamp, d.note]
            writer.writerow(legacy if format_version == 1 else [*legacy, *d.taxonomy_values()])
        return buffer.getvalue().encode("utf-8")

    def body_sha256(self) -> str:
        """sha256 of the rows alone: equal for equal decisions, whatever the version."""
        return hashlib.sha256(self.body()).hexdigest()

    def legacy_body_sha256(self) -> str | None:
        """sha256 of the format-1 rows when no row has a taxonomy (what format-1 exports recorded), else None."""
        if any(d.has_taxonomy for d in self.decisions):
            return None
        return hashlib.sha256(self.body(1)).hexdigest()

    def to_bytes(self) -> bytes:
        meta = json.dumps({"dataset": self.dataset, "version": self.version}, sort_keys=True, ensure_ascii=False)
        return f"# {FORMAT} {meta}\n".encode() + self.body()


def join_classes(wnids) -> str:
    """The ``imagenet_classes`` cell: wnids sorted, unique, joined by ``;``."""
    return CLASS_SEPARATOR.join(sorted(set(wnids)))


def split_classes(text: str) -> tuple[str, ...]:
    """The wnids of an ``imagenet_classes`` cell (empty → ())."""
    return tuple(part.strip() for part in text.split(CLASS_SEPARATOR)) if text else ()


def taxonomy_problem(contamination: str, incidental_mode: str, imagenet_classes) -> str | None:
    """What is wrong with a taxonomy (a message naming the accepted values), or None."""
    if contamination not in ("", *CONTAMINATIONS):
        return f"unknown contamination {contamination!r}; expected one of {', '.join(CONTAMINATIONS)} or empty"
    if incidental_mode not in ("", *INCIDENTAL_MODES):
        return f"unknown incidental_mode {incidental_mode!r}; expected one of {', '.join(INCIDENTAL_MODES)} or empty"
    if incidental_mode and contamination != "incidental":
        return f"incidental_mode {incidental_mode!r} needs contamination 'incidental', got {contamination!r}"
    from ..classes import wnid_to_index

    known = wnid_to_index()
    unknown = [w for w in imagenet_classes if w not in known]
    if unknown:
        return (
            f"imagenet_classes: {unknown[0]!r} is not an ImageNet-1k wnid; expected ImageNet-1k wnids "
            f"(e.g. n01440764) joined by {CLASS_SEPARATOR!r}, or empty"
        )
    return None


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
        raise DecisionTableError(f"{path}: not UTF-8 text ({err})") from err
    first, _, rest = text.partition("\n")
    meta = _read_first_line(path, first)
    columns = COLUMNS_OF_FORMAT[meta["format"]]
    reader = csv.reader(io.StringIO(rest, newline=""), strict=True)  # strict: a quote left open is an error
    header = _next_record(path, reader)
    if tuple(header or ()) != columns:
        raise DecisionTableError(
            f"{path}: line 2: expected the header {','.join(columns)} (format {meta['format']}), "
            f"got {header if header is not None else 'no header'}"
        )
    decisions, seen = [], {}
    while (record := _next_record(path, reader)) is not None:
        line = reader.line_num + 1
        decision = _read_row(path, line, record, columns)
        if decision.id in seen:
            raise DecisionTableError(
                f"{path}: line {line}: id {decision.id!r} already decided on line {seen[decision.id]}"
            )
        seen[decision.id] = line
        decisions.append(decision)
    return DecisionTable(tuple(decisions), version=meta["version"], dataset=meta["dataset"])


def _next_record(path: Path, reader) -> list[str] | None:
    """The next CSV record, None at the end; DecisionTableError naming the line a malformed record starts on
    (an unterminated quote, text after a closing quote, a field over csv's size limit)."""
    start = reader.line_num + 2  # the file's line number: line 1 is the format line
    try:
        return next(reader, None)
    except csv.Error as err:
        raise DecisionTableError(f"{path}: line {start}: not a CSV row ({err})") from err


def _read_first_line(path: Path, line: str) -> dict:
    match = _FIRST_LINE.match(line)
    if match is None:
        hint = (
            " (this looks like a NINCO authors' log: import it with `imagenet-suite review import NAME FILE`)"
            if line.strip() == "index,image_location,decision"
            else ""
        )
        if line.endswith("\r") and _FIRST_LINE.match(line[:-1]):
            raise DecisionTableError(
                f"{path}: line 1: the table ends its lines in '\\r\\n' (Windows line ends); expected '\\n' line ends, as "
                "`imagenet-suite review export` writes them"
            )
        raise DecisionTableError(
            f"{path}: line 1: not an imagenet-suite decision table; expected "
            f'\'# {FORMAT} {{"dataset": ..., "version": N}}\', got {line[:80]!r}{hint}'
        )
    found = int(match.group(1))
    if found not in COLUMNS_OF_FORMAT:
        raise DecisionTableError(
            f"{path}: line 1: unknown table format {FORMAT_NAME}/{found}; this imagenet-suite reads "
            f"{', '.join(f'{FORMAT_NAME}/{v}' for v in COLUMNS_OF_FORMAT)}"
        )
    try:
        meta = json.loads(match.group(2))
    except json.JSONDecodeError as err:
        raise DecisionTableError(f"{path}: line 1: metadata is not valid JSON ({err})") from err
    version = meta.get("version")
    if (
        isinstance(version, bool)
        or not isinstance(version, int)
        or version < 1
        or not isinstance(meta.get("dataset"), str)
    ):
        raise DecisionTableError(
            f"{path}: line 1: expected a positive integer 'version' and a 'dataset' name, got {meta}"
        )
    return {**meta, "format": found}


def _read_row(path: Path, line: int, record: list[str], columns: tuple[str, ...] = COLUMNS) -> Decision:
    if len(record) != len(columns):
        raise DecisionTableError(
            f"{path}: line {line}: expected {len(columns)} fields ({','.join(columns)}), got {len(record)}: {record}"
        )
    row_id, decision, reviewer, timestamp, note = record[:5]
    contamination, incidental_mode, classes = record[5:] if len(record) > 5 else ("", "", "")
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
    wnids = split_classes(classes)
    problem = taxonomy_problem(contamination, incidental_mode, wnids)
    if problem:
        raise DecisionTableError(f"{path}: line {line}: {problem} (id {row_id!r})")
    return Decision(row_id, decision, reviewer, timestamp, note, contamination, incidental_mode, wnids)


def _valid_timestamp(text: str) -> bool:
    if not TIMESTAMP.match(text):
        return False
    try:
        parse_timestamp(text)
    except ValueError:
        return False
    return True
