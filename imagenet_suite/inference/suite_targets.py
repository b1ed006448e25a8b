"""The dataset splits a suite run (:func:`~imagenet_suite.inference.evaluate.run_suite`) evaluates: every
(config, split) of every built dataset folder under each evaluation protocol that applies to it, the key it is
reported under, and the build it reads.

``<key>`` is ``<dataset>[/<config>][/<split>]`` (config and split only when the folder has several; the
folder's directory name instead of the dataset when two folders hold the same dataset), plus
``@<protocol>`` for a split evaluated under another protocol than ``hesse2025``, ``@<head>`` for a split predicted
with a zero-shot model's other head (``objectnet113``); in file names ``/`` becomes ``__``.

A *build* (:func:`dataset_build`) is ``{"folder", "builder", "version", "config", "split",
"build_info_sha256"}`` (the sha256 of the folder's build_info.json, which pins every file of the build): what
every report of a run names in its ``provenance``, and what the run folder records beside each outputs file
(:mod:`~imagenet_suite.inference.run_folder`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..dataset.folder import DatasetFolder
from ..errors import ConfigError, DatasetFolderError, param
from ..scoring.evaluation.preprocessing import (
    ANZAKU2024,
    DEFAULT_PROTOCOLS,
    HESSE2025,
    KEY_SEPARATOR,
    check_protocols,
    is_multilabel_set,
    no_center_crop,
    protocol_key,
)
from ..scoring.summary.reports import ID_DATASET


@dataclass(frozen=True)
class SuiteTarget:
    """One dataset split of the suite under one evaluation protocol, and the key it is reported under
    (``<key>`` under ``hesse2025``, ``<key>@<protocol>`` otherwise; a PatchML build keeps its key)."""

    key: str
    folder: DatasetFolder
    config: str
    split: str
    protocol: str = HESSE2025
    head: str = ""  # a zero-shot model's other head for this split (``objectnet113``); "": the model's own

    @property
    def has_images(self) -> bool:
        return "image" in self.folder.column_names(self.config)

    @property
    def file_stem(self) -> str:
        return self.key.replace("/", "__")

    @property
    def build_says_no_crop(self) -> bool:
        """The build's protocol says resize-only (PatchML): predicted so whatever the protocol."""
        return no_center_crop(self.folder.protocol(self.config))

    @property
    def resize_only(self) -> bool:
        """Whether predict is asked to resize without a centre crop (PredictOptions.resize_only)."""
        return self.protocol == ANZAKU2024 and not self.build_says_no_crop

    @property
    def multilabel(self) -> bool:
        """Whether Anzaku et al.'s multi-label metrics (ASMA) apply to it."""
        return is_multilabel_set(self.folder.config_info(self.config)["features"], self.folder.protocol(self.config))

    def with_head(self, head: str) -> SuiteTarget:
        """This target predicted with a zero-shot model's head ``head``, reported under ``<key>@<head>``."""
        return replace(self, key=f"{self.key}{KEY_SEPARATOR}{head}", head=head)

    def under(self, protocol: str) -> SuiteTarget:
        """This ``hesse2025`` target under ``protocol`` (its key suffixed by :func:`protocol_key`)."""
        if protocol == self.protocol:
            return self
        return replace(self, key=protocol_key(self.key, protocol), protocol=protocol)


def suite_targets(datasets: Sequence[str | Path], protocols: Sequence[str] = DEFAULT_PROTOCOLS) -> list[SuiteTarget]:
    """Every (config, split) of every dataset folder under each of ``protocols`` that applies to it,
    ImageNet val first (:func:`dataset_targets`, :func:`protocol_targets`)."""
    return protocol_targets(dataset_targets(datasets), protocols)


def protocol_targets(targets: Sequence[SuiteTarget], protocols: Sequence[str]) -> list[SuiteTarget]:
    """The ``hesse2025`` ``targets`` under ``protocols``, in order: a PatchML build once, resize-only
    (``anzaku2024``, its own key); a multi-label set under each protocol; any other split under
    ``hesse2025`` only (none when it is not among ``protocols``)."""
    protocols = check_protocols(protocols)
    expanded: list[SuiteTarget] = []
    for target in targets:
        if target.build_says_no_crop:
            expanded.append(replace(target, protocol=ANZAKU2024))
        elif target.multilabel:
            expanded += [target.under(protocol) for protocol in protocols]
        elif HESSE2025 in protocols:
            expanded.append(target)
    return expanded


def dataset_targets(datasets: Sequence[str | Path]) -> list[SuiteTarget]:
    """Every (config, split) of every dataset folder, ImageNet val first, under ``hesse2025``.

    A folder is named by its dataset (``imagenet_r``), or by its directory name when two folders hold
    the same dataset; ConfigError on a folder that is not a built dataset or a repeated directory name.
    """
    folders = []
    for path in datasets:
        try:
            folders.append((Path(path), DatasetFolder(path)))
        except DatasetFolderError as err:
            raise ConfigError(f"{param('datasets')} {path}: not a built dataset folder ({err})") from err
    names = [folder.name for _, folder in folders]
    targets: list[SuiteTarget] = []
    for path, folder in folders:
        name = folder.name if names.count(folder.name) == 1 else path.resolve().name
        configs = folder.configs
        for config in configs:
            splits = folder.splits(config)
            for split in splits:
                key = name + (f"/{config}" if len(configs) > 1 else "") + (f"/{split}" if len(splits) > 1 else "")
                targets.append(SuiteTarget(key, folder, config, split))
    keys = [target.key for target in targets]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise ConfigError(f"{param('datasets')}: two folders give the same report key(s) {repeated}; rename one folder")
    return sorted(targets, key=lambda target: (target.folder.name != ID_DATASET, keys.index(target.key)))


def dataset_build(target: SuiteTarget) -> dict[str, str]:
    """The build a target reads: its folder and the build's identity (``BUILD`` of suite.json)."""
    folder = target.folder
    return {
        "folder": str(folder.path.resolve()),
        "builder": folder.name,
        "version": folder.version,
        "config": target.config,
        "split": target.split,
        "build_info_sha256": folder.build_info_sha256,
    }


def same_build(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two builds are one (wherever their folders are now)."""
    return all(a.get(key) == b.get(key) for key in ("builder", "version", "config", "split", "build_info_sha256"))


def describe_build(build: dict[str, Any]) -> str:
    return (
        f"{build['builder']} {build['version']} config {build['config']} split {build['split']} "
        f"(build_info.json sha256 {build['build_info_sha256'][:12]}, {build['folder']})"
    )


__all__ = [
    "SuiteTarget",
    "dataset_build",
    "dataset_targets",
    "describe_build",
    "protocol_targets",
    "same_build",
    "suite_targets",
]
