"""Apply a decision table to a build: a new version of any dataset with contaminated rows dropped or flagged.

``build_dataset(..., BuildOptions(transform=ReviewApplication.from_file(PATH, "drop"|"flag")))`` (what
``imagenet-suite build --decisions PATH --decision-action drop|flag`` does) reads the table once; it is
a :class:`imagenet_suite.core.transform.RowTransform`, and the runner asks it to

* check that every decided ``id`` is a planned row of every config built (before anything is written);
* ``drop``: remove the rows decided ``id`` (they contain an ImageNet-1k object) from the plan, shard by
  shard (every builder's own sharding is kept; shards only get shorter);
* ``flag``: add a ``review_decision`` string column holding each row's decision (null where undecided);
* record the table (file name, sha256, version, counts, action) in ``build_info.json`` and the card.

The output folder gets the suffix ``-reviewed-<action>-<first 8 hex of the table's sha256>``, so it
never collides with the unreviewed build or a build with another table.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import param
from ..files import sha256_file
from .decision_table import DECISIONS, MEANINGS, read_decision_table
from .errors import DecisionTableError

ACTIONS = ("drop", "flag")
DROPPED = ("id",)  # decisions whose rows ``drop`` removes: they contain an ImageNet-1k object
FLAG_COLUMN = "review_decision"
SHOWN = 3  # ids quoted in an error message


@dataclass(frozen=True)
class ReviewApplication:
    """A decision table read for a build, and what to do with the decided rows (picklable)."""

    path: str
    sha256: str
    version: int
    action: str
    decisions: dict[str, str]  # row id -> decision

    @classmethod
    def from_file(cls, path: str | Path, action: str) -> ReviewApplication:
        """Read and validate the table (unknown decisions, duplicates, bad header are errors)."""
        if action not in ACTIONS:
            raise DecisionTableError(f"{param('action')} {action!r}: expected one of {', '.join(ACTIONS)}")
        table = read_decision_table(path)
        return cls(str(path), sha256_file(path), table.version, action, {d.id: d.decision for d in table.decisions})

    @property
    def folder_suffix(self) -> str:
        return f"-reviewed-{self.action}-{self.sha256[:8]}"

    record_key = "review"  # where build_info.json records it

    @property
    def rows_key(self) -> str:
        """Key of the per-config row counts in the build_info record."""
        return "rows_dropped" if self.action == "drop" else "rows_flagged"

    @property
    def fingerprint(self) -> str:
        """What the output bytes depend on beyond the plan: the table and the action."""
        return f"{self.sha256}:{self.action}"

    def plan(self, config: str, keys: list[str]) -> int:
        """Check that every decided id is a planned row of ``config``; the rows this build drops or flags."""
        self.check_ids(config, set(keys))
        return self.affected(keys)

    def keep(self, keys: tuple[str, ...]) -> tuple[str, ...]:
        """The keys that stay in the build (all of them when flagging)."""
        return self.filter_keys(keys)

    def check_ids(self, config: str, planned: set[str]) -> None:
        """DecisionTableError if a decided id is not a planned row of ``config``."""
        unknown = sorted(set(self.decisions) - planned)
        if unknown:
            raise DecisionTableError(
                f"{self.path}: {len(unknown)} decided id(s) are not rows of config {config!r} "
                f"({len(planned)} rows), e.g. {', '.join(repr(i) for i in unknown[:SHOWN])}; "
                "was the table exported from another dataset?"
            )

    def filter_keys(self, keys: tuple[str, ...]) -> tuple[str, ...]:
        """The keys that stay in the build (all of them when flagging)."""
        if self.action != "drop":
            return keys
        return tuple(k for k in keys if self.decisions.get(k) not in DROPPED)

    def features(self, features):
        """``features`` plus the flag column when flagging."""
        if self.action != "flag":
            return features
        from datasets import Features, Value

        return Features({**features, FLAG_COLUMN: Value("string")})

    def rows(self, rows: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """Rows with their decision added when flagging."""
        for row in rows:
            if self.action == "flag":
                row = {**row, FLAG_COLUMN: self.decisions.get(row["id"])}
            yield row

    def record(self, changed: dict[str, int], previous: dict[str, Any] | None = None) -> dict[str, Any]:
        """The ``review`` entry of build_info.json; ``changed``: rows dropped/flagged per config built
        now, merged with the counts of configs an earlier run built into the same folder."""
        affected = {**(previous or {}).get(self.rows_key, {}), **changed}
        counts = {d: sum(1 for v in self.decisions.values() if v == d) for d in DECISIONS}
        return {
            "decisions_file": Path(self.path).name,
            "decisions_sha256": self.sha256,
            "decisions_version": self.version,
            "action": self.action,
            "decisions": counts,
            self.rows_key: dict(sorted(affected.items())),
        }

    def affected(self, planned: list[str]) -> int:
        """Rows of a config this build drops (drop) or flags with a decision (flag)."""
        if self.action == "drop":
            return sum(1 for k in planned if self.decisions.get(k) in DROPPED)
        return sum(1 for k in planned if k in self.decisions)

    def card_section(self, record: dict[str, Any]) -> str:
        return card_section(record)


def card_section(record: dict[str, Any]) -> str:
    """Markdown section of the card saying which decision table made this version, by hash."""
    counts = ", ".join(f"{n} `{d}`" for d, n in record["decisions"].items() if n)
    lines = [
        "## Review decisions",
        "",
        f"This version applies the decision table `{record['decisions_file']}` "
        f"(sha256 `{record['decisions_sha256']}`, table version {record['decisions_version']}; "
        f"decisions: {counts or 'none'}).",
        "",
    ]
    if record["action"] == "drop":
        lines.append(
            f"Action **drop**: rows decided `id` ({MEANINGS['id']}) are removed; rows dropped per config: "
            f"`{json.dumps(record['rows_dropped'], sort_keys=True)}`."
        )
    else:
        lines.append(
            f"Action **flag**: every row is kept and the column `{FLAG_COLUMN}` holds its decision "
            f"({', '.join(f'`{d}` = {m}' for d, m in MEANINGS.items())}; null = not reviewed); rows "
            f"flagged per config: `{json.dumps(record['rows_flagged'], sort_keys=True)}`."
        )
    return "\n".join(lines) + "\n"
