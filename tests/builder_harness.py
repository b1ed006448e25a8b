"""A declarative test harness for builders, in the spirit of TFDS's ``DatasetBuilderTestCase``.

A builder's test states *what* it expects in a :class:`BuilderCase`: how to lay out its fixture (the
release's exact layout, or the built datasets it reads), the configs to build, the rows each split
must have, and bad inputs with the error each must raise. ``tests/test_builders.py`` runs every
case through the same checks:

1. build (one process) → every config opens with ``datasets.load_dataset`` with the expected rows;
2. ``verify_folder`` passes, every stored image included;
3. a build with two worker processes is byte-identical;
4. a build that crashes while writing its second shard, run again, ends byte-identical, with no
   unfinished file left;
5. each bad input raises the stated error, naming what is wrong.

Fixtures are laid out once per case and session (:func:`sources_of`), and the first build is shared
by the checks that only read it (:func:`first_build`).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset


@dataclass(frozen=True)
class Sources:
    """Everything a build of the case reads, laid out by its fixture."""

    manual_dir: Path | None = None
    pins: dict[str, dict] | None = None
    inputs: tuple[Path, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)
    seed: int = 0


@dataclass(frozen=True)
class BadInput:
    """A damaged copy of the case's ``--manual-dir`` (``damage`` edits it in place) or other sources
    (``sources`` replaces them), and the error the build must raise."""

    name: str
    error: type[Exception]
    match: str  # regex the error's message must match (it names the file, row or argument)
    damage: Callable[[Path], None] | None = None
    sources: Callable[[Sources, Path], Sources] | None = None


@dataclass(frozen=True)
class BuilderCase:
    """What one builder's test expects. ``splits``: config -> split -> number of rows."""

    builder: str
    fixture: Callable[[Path], Sources]  # lays the sources out in the given (empty) folder
    splits: dict[str, dict[str, int]]
    shard_size: int  # small, so that every config has several shards (resume, two processes)
    bad_inputs: tuple[BadInput, ...] = ()

    @property
    def configs(self) -> list[str]:
        return list(self.splits)

    def __str__(self) -> str:
        return self.builder


_SOURCES: dict[str, Sources] = {}
_FIRST_BUILDS: dict[str, Path] = {}


def sources_of(case: BuilderCase, scratch: Callable[[str], Path]) -> Sources:
    """The case's sources, laid out once per session (``scratch(name)`` makes a fresh folder)."""
    if case.builder not in _SOURCES:
        _SOURCES[case.builder] = case.fixture(scratch(f"{case.builder}-sources"))
    return _SOURCES[case.builder]


def build(case: BuilderCase, sources: Sources, out: Path, num_proc: int = 1, executor: str = "local") -> Path:
    """Build every config of the case from ``sources`` into ``out`` (``executor``: see
    :func:`~imagenet_suite.core.runner.build_dataset`); the dataset folder."""
    return build_dataset(
        case.builder,
        out,
        case.configs,
        options=BuildOptions(
            seed=sources.seed,
            manual_dir=sources.manual_dir,
            pins=sources.pins,
            inputs=list(sources.inputs),
            builder_options=dict(sources.options),
            shard_size=case.shard_size,
            num_proc=num_proc,
            executor=executor,
            offline=True,
            progress=False,
        ),
    )


def first_build(case: BuilderCase, scratch: Callable[[str], Path]) -> Path:
    """The case built once with one process (shared by the checks that only read it)."""
    if case.builder not in _FIRST_BUILDS:
        _FIRST_BUILDS[case.builder] = build(case, sources_of(case, scratch), scratch(f"{case.builder}-first"))
    return _FIRST_BUILDS[case.builder]


def damaged(case: BuilderCase, bad: BadInput, scratch: Callable[[str], Path]) -> Sources:
    """The case's sources with ``bad`` applied (the manual dir copied first, never edited in place)."""
    good = sources_of(case, scratch)
    if bad.sources is not None:
        return bad.sources(good, scratch(f"{case.builder}-bad"))
    copy = scratch(f"{case.builder}-bad") / "manual"
    shutil.copytree(good.manual_dir, copy)
    bad.damage(copy)
    return Sources(copy, good.pins, good.inputs, good.options, good.seed)


__all__ = ["BadInput", "BuilderCase", "Sources", "build", "damaged", "first_build", "sources_of"]
