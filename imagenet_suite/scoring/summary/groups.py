"""Model groups for the papers' group analyses (``leaderboard --groups FILE``).

Beyond Accuracy (Hesse et al. 2025) compares configurations of models within a *setup* (Table 2: e.g.
setup (i) "Standard models" vs "B-cos models"); LCA-on-the-Line (Shi et al. 2024) reports its
statistics for all models and for vision-only and vision-language models apart. Neither grouping can be
read from a run (suite.json records no architecture family or training recipe), so the user gives it.

The file is a CSV (UTF-8, comma-separated) with a header row naming the columns ``model`` and ``group``
and, optionally, ``setup``; every other row assigns one leaderboard model (its name as ``leaderboard``
shows it: the model spec, plus the run folder when two runs share one) to one group::

    setup,group,model
    (i),Standard,torchvision:resnet50.IMAGENET1K_V1
    (i),B-cos,file-bcos-resnet50
    vision,VM,torchvision:resnet50.IMAGENET1K_V1

Without a ``--groups`` file, :func:`metadata_groups` reads the groups off what the runs' suite.json record of
each model's library (``weights_source.family`` and ``.pretraining``, see
:mod:`imagenet_suite.inference.library_tags`); a ``--groups`` file overrides them.

Without a ``setup`` column every row is in one setup, ``all``. Within a setup, the first group named is
the reference the others are compared with (Table 2 (g) compares A1, A2 and A3 each with the
supervised models). A model may appear in several setups and twice in one group (the paper counts a
backbone once per counterpart, Table 9), but not in two groups of one setup.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import ConfigError, param

DEFAULT_SETUP = "all"
COLUMNS = ("model", "group")  # required; "setup" is optional


@dataclass(frozen=True)
class Membership:
    """One row of a groups file: ``model`` belongs to ``group`` in ``setup`` (``row``: its line, 1 = header)."""

    setup: str
    group: str
    model: str
    row: int = 0


@dataclass(frozen=True)
class ModelGroups:
    """Memberships in file order; ``source`` names where they came from (a file, for error messages).

    Example:
        >>> groups = ModelGroups.from_mapping({"a": "CNN", "b": "ViT", "c": "CNN"})
        >>> groups.setups()
        {'all': {'CNN': ['a', 'c'], 'ViT': ['b']}}
        >>> groups.group_members()
        {'CNN': ['a', 'c'], 'ViT': ['b']}
    """

    memberships: tuple[Membership, ...]
    source: str = "groups"

    @classmethod
    def from_mapping(cls, groups: Mapping[str, str], setup: str = DEFAULT_SETUP) -> ModelGroups:
        """One setup: ``{model: group}``."""
        rows = tuple(Membership(setup, group, model, row) for row, (model, group) in enumerate(groups.items(), 2))
        return cls(rows, "groups")

    def setups(self) -> dict[str, dict[str, list[str]]]:
        """``{setup: {group: [model, ...]}}`` in file order (a model listed twice in a group is there twice)."""
        found: dict[str, dict[str, list[str]]] = {}
        for entry in self.memberships:
            found.setdefault(entry.setup, {}).setdefault(entry.group, []).append(entry.model)
        return found

    def group_members(self) -> dict[str, list[str]]:
        """``{group: [model, ...]}`` over all setups, each model once per group (first appearance order)."""
        found: dict[str, list[str]] = {}
        for entry in self.memberships:
            members = found.setdefault(entry.group, [])
            if entry.model not in members:
                members.append(entry.model)
        return found

    def check_models(self, models: Iterable[str]) -> None:
        """ConfigError naming the first row whose model is not among ``models`` (the leaderboard's names)."""
        known = list(models)
        for entry in self.memberships:
            if entry.model not in known:
                shown = ", ".join(map(repr, known[:8])) + (f", ... ({len(known)} in all)" if len(known) > 8 else "")
                raise ConfigError(
                    f"{param('groups')} {self.source}: row {entry.row}: model {entry.model!r} is not one of the "
                    f"leaderboard's models ({shown})"
                )


METADATA_SOURCE = "the models' metadata (suite.json weights_source)"
METADATA_SETUPS = ("family", "pretraining", "VM vs VLM")
"""The setups :func:`metadata_groups` makes, in order."""
MODALITY = {"timm": "VM", "torchvision": "VM", "open_clip": "VLM"}
"""Vision-only (VM) and vision-language (VLM) models by library, LCA-on-the-Line's (Shi et al. 2024) split."""


def metadata_groups(suites: Mapping[str, Mapping[str, Any]]) -> ModelGroups | None:
    """The models' groups from what their suite.json records of the model's library (``weights_source``),
    in three setups (:data:`METADATA_SETUPS`), groups in order of the models' first appearance:

    * ``family`` — the architecture family the library states (``resnet``, ``vision_transformer``, an
      open_clip architecture);
    * ``pretraining`` — the pretraining data the weights tag states, when the tag's weights are the ones
      loaded; a random init is in group ``random init`` and a weights file in ``weights file`` (the tag then
      chose the configuration only, and says nothing of the data);
    * ``VM vs VLM`` — ``VM`` for timm and torchvision models, ``VLM`` for open_clip ones (:data:`MODALITY`).

    A model whose suite.json records none of these (a user model, a suite.json written before they were
    recorded) is in no group; None when no model is in any (``source``: :data:`METADATA_SOURCE`).

    Example:
        >>> def run(library, family, pretraining, kind):
        ...     return {"weights_source": {"library": library, "family": family, "pretraining": pretraining,
        ...                                "kind": kind, "loaded": kind == library}}
        >>> groups = metadata_groups({
        ...     "a": run("timm", "resnet", "in1k", "timm"), "b": run("timm", "convnext", "in22k", "none"),
        ...     "c": run("open_clip", "ViT-B-32", "laion2b", "open_clip"), "d": {"weights_source": None}})
        >>> groups.setups()["family"], groups.setups()["VM vs VLM"]
        ({'resnet': ['a'], 'convnext': ['b'], 'ViT-B-32': ['c']}, {'VM': ['a', 'b'], 'VLM': ['c']})
        >>> groups.setups()["pretraining"]
        {'in1k': ['a'], 'random init': ['b'], 'laion2b': ['c']}
        >>> metadata_groups({"d": {"model": "x"}}) is None
        True
    """
    rows: list[Membership] = []
    for setup in METADATA_SETUPS:
        for model, suite in suites.items():
            group = _metadata_group(setup, suite.get("weights_source") or {})
            if group:
                rows.append(Membership(setup, group, model, 0))
    return ModelGroups(tuple(rows), METADATA_SOURCE) if rows else None


def _metadata_group(setup: str, source: Mapping[str, Any]) -> str | None:
    if setup == "family":
        return source.get("family")
    if setup == "pretraining":
        if source.get("kind") == "none":
            return "random init" if source.get("family") else None
        if source.get("kind") == "file":
            return "weights file" if source.get("family") else None
        return source.get("pretraining") if source.get("loaded") else None
    return MODALITY.get(source.get("library") or "") if source.get("family") else None


def read_groups(path: str | Path) -> ModelGroups:
    """The memberships of a groups CSV (module docstring); ConfigError (one line: the file, the row, what
    was expected) when it cannot be read or a row does not fit."""
    path = Path(path)
    where = f"{param('groups')} {path}"
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{where}: not a readable UTF-8 CSV file ({' '.join(str(err).split())})") from err
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error as err:
        raise ConfigError(f"{where}: not a CSV file ({err})") from err
    rows = [(number, row) for number, row in enumerate(rows, 1) if any(cell.strip() for cell in row)]
    if not rows:
        raise ConfigError(f"{where}: empty; expected a header row with the columns model and group (and setup)")
    header = [cell.strip() for cell in rows[0][1]]
    columns = _columns(header, where)
    memberships = [_membership(number, row, columns, len(header), where) for number, row in rows[1:]]
    if not memberships:
        raise ConfigError(f"{where}: no rows under the header; expected one row per model")
    _check_one_group_per_setup(memberships, where)
    return ModelGroups(tuple(memberships), str(path))


def _columns(header: Sequence[str], where: str) -> dict[str, int]:
    missing = [name for name in COLUMNS if name not in header]
    if missing:
        raise ConfigError(
            f"{where}: row 1: the header {header} lacks the column(s) {missing}; expected model, group and "
            "optionally setup"
        )
    duplicated = sorted({name for name in header if header.count(name) > 1 and name in (*COLUMNS, "setup")})
    if duplicated:
        raise ConfigError(f"{where}: row 1: the column(s) {duplicated} appear twice in the header")
    return {name: header.index(name) for name in (*COLUMNS, "setup") if name in header}


def _membership(number: int, row: list[str], columns: Mapping[str, int], width: int, where: str) -> Membership:
    if len(row) != width:
        raise ConfigError(f"{where}: row {number}: {len(row)} cells, but the header has {width}")
    cells = {name: row[index].strip() for name, index in columns.items()}
    for name in ("model", "group", "setup"):
        if name in cells and not cells[name]:
            raise ConfigError(f"{where}: row {number}: the {name} cell is empty")
    return Membership(cells.get("setup", DEFAULT_SETUP), cells["group"], cells["model"], number)


def _check_one_group_per_setup(memberships: Sequence[Membership], where: str) -> None:
    seen: dict[tuple[str, str], Membership] = {}
    for entry in memberships:
        first = seen.setdefault((entry.setup, entry.model), entry)
        if first.group != entry.group:
            raise ConfigError(
                f"{where}: row {entry.row}: model {entry.model!r} is in group {entry.group!r}, but row {first.row} "
                f"put it in group {first.group!r} of the same setup {entry.setup!r}"
            )


__all__ = [
    "DEFAULT_SETUP",
    "METADATA_SETUPS",
    "METADATA_SOURCE",
    "MODALITY",
    "Membership",
    "ModelGroups",
    "metadata_groups",
    "read_groups",
]
