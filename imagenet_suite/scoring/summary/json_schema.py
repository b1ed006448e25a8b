"""A small declarative JSON schema check for the run folder's files (suite.json, adversarial.json,
run.json, sweep.json, ...): :class:`Fields`, :class:`MapOf`, :class:`ListOf`, :class:`Number`,
:class:`Text`, :class:`Boolean`, :class:`Maybe`, and the common leaves :data:`NUMBER`, :data:`COUNT`,
:data:`FRACTION`, :data:`NON_NEGATIVE`, :data:`TEXT`, :data:`SHA256`.

A number is checked for its range too (:class:`Number`'s ``minimum`` and ``maximum``: an accuracy is a
fraction in [0, 1], a count is 0 or more), not only for being finite. :func:`check_json` raises one
:class:`~imagenet_suite.errors.RunFolderError` line naming the file, the JSON path of the first value that
does not fit (``datasets["imagenet_val"].metrics[0].value``) and what was expected; :func:`read_json` reads
a file, with one such line when it cannot be read or parsed. :func:`schema_at` finds the check of one path
(:func:`parse_json_path` reads a path back).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from ...errors import RunFolderError


class Check:
    """One node of a declarative JSON schema: :meth:`check` raises :class:`Mismatch` at the first
    value that does not fit, with its JSON path."""

    expected = "a value"

    def check(self, value: Any, path: str) -> None:
        raise NotImplementedError


class Mismatch(Exception):
    """Where a JSON value does not fit its schema: ``path``, what was expected, what was found."""

    def __init__(self, path: str, expected: str, found: str | None):
        self.path, self.expected, self.found = path, expected, found
        where = path or "the top level"
        super().__init__(
            f"{where}: missing; expected {expected}"
            if found is None
            else f"{where}: expected {expected}, found {found}"
        )


ROUNDING = 1e-9
"""How far a float may lie outside its range (floating-point rounding of a computed fraction), never more."""


@dataclass(frozen=True)
class Number(Check):
    """A JSON number (never a boolean or a string), finite; ``integer``: without a fraction part; from
    ``minimum`` to ``maximum`` where given (a float within :data:`ROUNDING` of a bound passes)."""

    integer: bool = False
    minimum: float | None = None
    maximum: float | None = None

    @property
    def expected(self) -> str:  # type: ignore[override]
        kind = "an integer" if self.integer else "a finite number"
        if self.minimum is not None and self.maximum is not None:
            return f"{'an integer' if self.integer else 'a number'} in [{self.minimum:g}, {self.maximum:g}]"
        if self.maximum is not None:
            return f"{kind} <= {self.maximum:g}"
        return kind + (f" >= {self.minimum:g}" if self.minimum is not None else "")

    def accepts(self, value: Any) -> bool:
        """Whether :meth:`check` passes ``value`` (no path built: the fast test of many rows)."""
        if type(value) is float:  # most numbers of a JSON file: the type tests below, at once
            if self.integer or not math.isfinite(value):
                return False
            slack = ROUNDING
        else:
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if not number or (self.integer and not isinstance(value, int)):
                return False
            if isinstance(value, float) and not math.isfinite(value):  # an int is finite (and may be beyond a float)
                return False
            slack = 0 if isinstance(value, int) else ROUNDING
        return not (
            (self.minimum is not None and value < self.minimum - slack)
            or (self.maximum is not None and value > self.maximum + slack)
        )

    def check(self, value: Any, path: str) -> None:
        if not self.accepts(value):
            raise Mismatch(path, self.expected, describe_json(value))


@dataclass(frozen=True)
class Text(Check):
    """A JSON string; ``pattern`` (a regular expression it must match in full) or ``choices``."""

    pattern: str | None = None
    choices: tuple[str, ...] | None = None
    what: str = "a string"

    @property
    def expected(self) -> str:  # type: ignore[override]
        return f"one of {list(self.choices)}" if self.choices is not None else self.what

    def check(self, value: Any, path: str) -> None:
        if (
            not isinstance(value, str)
            or (self.pattern is not None and re.fullmatch(self.pattern, value) is None)
            or (self.choices is not None and value not in self.choices)
        ):
            raise Mismatch(path, self.expected, describe_json(value))


@dataclass(frozen=True)
class Boolean(Check):
    """A JSON boolean (never a number or a string)."""

    @property
    def expected(self) -> str:  # type: ignore[override]
        return "true or false"

    def check(self, value: Any, path: str) -> None:
        if not isinstance(value, bool):
            raise Mismatch(path, self.expected, describe_json(value))


@dataclass(frozen=True)
class Maybe(Check):
    """``inner`` or null."""

    inner: Check

    @property
    def expected(self) -> str:  # type: ignore[override]
        return f"{self.inner.expected} or null"

    def check(self, value: Any, path: str) -> None:
        if value is None:
            return
        try:
            self.inner.check(value, path)
        except Mismatch as mismatch:
            if mismatch.path != path:
                raise
            raise Mismatch(path, self.expected, mismatch.found) from mismatch


@dataclass(frozen=True)
class ListOf(Check):
    """A JSON list of ``item`` (of ``length`` items when given)."""

    item: Check
    length: int | None = None

    @property
    def expected(self) -> str:  # type: ignore[override]
        return "a list" if self.length is None else f"a list of {self.length}"

    def check(self, value: Any, path: str) -> None:
        if not isinstance(value, list) or (self.length is not None and len(value) != self.length):
            raise Mismatch(path, f"{self.expected} of {self.item.expected}", describe_json(value))
        accepts = getattr(self.item, "accepts", None)  # a leaf's test without a path: paths built for a failure only
        for index, item in enumerate(value):
            if accepts is None or not accepts(item):
                self.item.check(item, f"{path}[{index}]")


@dataclass(frozen=True)
class MapOf(Check):
    """A JSON object with any keys (only ``keys`` when given), each value a ``value`` — or, where ``by_key``
    gives one for its key (``by_key(key)``, None: ``value``), that check."""

    value: Check
    keys: tuple[str, ...] | None = None
    by_key: Callable[[str], Check | None] | None = None

    @property
    def expected(self) -> str:  # type: ignore[override]
        return "an object"

    def value_check(self, key: str) -> Check:
        """The check of the value at ``key``."""
        found = self.by_key(key) if self.by_key is not None else None
        return self.value if found is None else found

    def check(self, value: Any, path: str) -> None:
        if not isinstance(value, dict):
            raise Mismatch(path, "an object", describe_json(value))
        for key, item in value.items():
            if self.keys is not None and key not in self.keys:
                raise Mismatch(json_path(path, key, bracket=True), f"a key among {list(self.keys)}", "another key")
            self.value_check(key).check(item, json_path(path, key, bracket=True))


@dataclass(frozen=True)
class Fields(Check):
    """A JSON object with the ``required`` keys and perhaps the ``optional`` ones (other keys are ignored)."""

    required: Mapping[str, Check]
    optional: Mapping[str, Check] = field(default_factory=dict)

    @property
    def expected(self) -> str:  # type: ignore[override]
        return "an object"

    def check(self, value: Any, path: str) -> None:
        if not isinstance(value, dict):
            raise Mismatch(path, f"an object with keys {list(self.required)}", describe_json(value))
        for key, check in self.required.items():
            if key not in value:
                raise Mismatch(json_path(path, key), check.expected, None)
            check.check(value[key], json_path(path, key))
        for key, check in self.optional.items():
            if key in value:
                check.check(value[key], json_path(path, key))

    def extended(self, **fields: Check) -> Fields:
        """This schema with ``fields`` required on top (replacing same-named ones)."""
        return Fields({**self.required, **fields}, self.optional)


def json_path(path: str, key: str, bracket: bool = False) -> str:
    """``path.key`` for a key that is an identifier (and ``not bracket``), else ``path["key"]``."""
    if not bracket and key.isidentifier():
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


_PATH_KEY = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)|\[("(?:[^"\\]|\\.)*")\]')


def parse_json_path(path: str) -> tuple[str, ...] | None:
    """The keys of a path :func:`json_path` wrote, or None when ``path`` is not one.

    Example:
        >>> parse_json_path('accuracies["imagenet_c/fog_2"].value')
        ('accuracies', 'imagenet_c/fog_2', 'value')
        >>> parse_json_path("quba..score") is None, parse_json_path('a["b"]c') is None
        (True, True)
    """
    keys, at = [], 0
    while at < len(path):
        dotted = at > 0 and path.startswith(".", at)
        found = _PATH_KEY.match(path, at + dotted)
        if found is None or (found[1] is not None and at > 0 and not dotted) or (found[2] is not None and dotted):
            return None
        keys.append(found[1] if found[1] is not None else json.loads(found[2]))
        at = found.end()
    return tuple(keys) if keys else None


def schema_at(schema: Check, keys: tuple[str, ...]) -> Check | None:
    """The check of the value at ``keys`` under ``schema`` (through :class:`Fields`, :class:`MapOf` and
    :class:`Maybe`), or None where the schema says nothing of it.

    Example:
        >>> schema = Fields({"scores": MapOf(FRACTION)})
        >>> schema_at(schema, ("scores", "top1")).expected, schema_at(schema, ("other",))
        ('a number in [0, 1]', None)
    """
    check: Check | None = schema
    for key in keys:
        while isinstance(check, Maybe):
            check = check.inner
        if isinstance(check, Fields):
            check = check.required.get(key, check.optional.get(key))
        elif isinstance(check, MapOf) and (check.keys is None or key in check.keys):
            check = check.value_check(key)
        else:
            return None
    return check


def describe_json(value: Any) -> str:
    """A JSON value for an error message: ``the string "0.5"``, ``true (a boolean)``, ``NaN``, ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, str):
        return f"the string {json.dumps(value if len(value) <= 40 else value[:40] + '...')}"
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def check_json(value: Any, schema: Check, where: str | Path, path: str = "") -> None:
    """RunFolderError naming ``where`` (the file), the JSON path (from ``path``, the value's own) and what was
    expected, on a mismatch."""
    try:
        schema.check(value, path)
    except Mismatch as mismatch:
        raise RunFolderError(f"{where}: {mismatch}") from mismatch


def read_json(path: str | Path, what: str) -> Any:
    """A JSON file's value, as :func:`json.loads` of its UTF-8 text gives it; RunFolderError naming it as ``what``
    when it cannot be read or parsed.

    Parsed by msgspec (2 to 3 times faster than :mod:`json`: a leaderboard reads hundreds of 2 MiB suite.json), and
    by :mod:`json` where msgspec refuses the bytes: what :mod:`json` reads beyond strict JSON (``NaN``,
    ``Infinity``, ``1e400`` read as infinity, a lone surrogate ``"\\ud800"``) and its error message for the rest.
    Where msgspec parses, its value is :mod:`json`'s (integers of any size exact, floats correctly rounded, the
    last of duplicate keys: ``tests/test_read_json.py`` compares them).

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = Path(folder, "a.json")
        ...     _ = path.write_bytes(b'{"n": 18446744073709551617, "x": NaN, "x": 0.1}')
        ...     read_json(path, "example")
        {'n': 18446744073709551617, 'x': 0.1}
    """
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise RunFolderError(f"{path}: not a readable {what} ({' '.join(str(err).split())})") from err
    try:
        return msgspec.json.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError):
        pass  # json's extensions or json's own error message (below)
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RunFolderError(f"{path}: not a readable {what} ({' '.join(str(err).split())})") from err


NUMBER, COUNT, TEXT = Number(), Number(integer=True, minimum=0), Text()
FRACTION = Number(minimum=0, maximum=1)
"""A share (an accuracy, an error rate, AUROC, ECE): a number in [0, 1]."""
NON_NEGATIVE = Number(minimum=0)
"""A number 0 or more (a ratio of accuracies, a distance, an error relative to AlexNet's)."""
SHA256 = Text(pattern="[0-9a-f]{64}", what="a sha256 (64 lowercase hex digits)")


__all__ = [
    "COUNT",
    "FRACTION",
    "NON_NEGATIVE",
    "NUMBER",
    "ROUNDING",
    "SHA256",
    "TEXT",
    "Boolean",
    "Check",
    "Fields",
    "ListOf",
    "MapOf",
    "Maybe",
    "Mismatch",
    "Number",
    "Text",
    "check_json",
    "describe_json",
    "json_path",
    "parse_json_path",
    "read_json",
    "schema_at",
]
