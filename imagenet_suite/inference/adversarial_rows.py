"""Which rows of a split the attacks of :mod:`~imagenet_suite.inference.adversarial` attack: the split's ids
and 1000-way labels, checked (:func:`ids_and_labels`), and a seeded, class-stratified subset of them
(:func:`stratified_subset`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from ..dataset.folder import DatasetFolder
from ..errors import ConfigError

NUM_CLASSES = 1000
# Protocol keys that evaluate a dataset in another label space than 1000-way argmax (ImageNet-A/R,
# ObjectNet, the 16-class sets): the attacks here are defined on 1000-way argmax and CE only.
OTHER_LABEL_SPACES = ("class_subset", "class_mapping", "decision_mapping")


def stratified_subset(labels: Sequence[int], n: int, seed: int) -> list[int]:
    """Sorted row positions of a seeded, class-stratified subset of ``n`` rows.

    Per-class counts are as equal as ``n`` and the class sizes allow (a class smaller than its share
    gives all its rows; the rest is spread over the others). Which classes get the rows that do not
    divide evenly, and which rows of a class are taken, are drawn from ``np.random.default_rng(seed)``
    (the same on every platform). ``n`` at least the number of rows gives every row.
    """
    if n < 1:
        raise ConfigError(f"the adversarial subset needs at least 1 row, got {n}")
    labels = np.asarray(labels, dtype=np.int64)
    if n >= len(labels):
        return list(range(len(labels)))
    _, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    rng = np.random.default_rng(seed)
    preference = rng.permutation(len(counts))  # classes early in it get the rows that do not divide evenly
    quota = _quotas(counts, n, preference)
    by_class = np.argsort(inverse, kind="stable")  # row positions grouped by class, dataset order within
    starts = np.concatenate([[0], np.cumsum(counts)])
    chosen = [rng.permutation(by_class[starts[c] : starts[c + 1]])[: quota[c]] for c in range(len(counts))]
    return sorted(int(position) for position in np.concatenate(chosen))


def _quotas(counts: np.ndarray, n: int, preference: np.ndarray) -> np.ndarray:
    """Rows per class summing to ``n`` (< counts.sum()): the highest level every class fills up to,
    plus one more row for the first classes in ``preference`` that still have rows."""
    low, high = 0, int(counts.max())
    while low < high:
        middle = (low + high + 1) // 2
        if int(np.minimum(counts, middle).sum()) <= n:
            low = middle
        else:
            high = middle - 1
    quota = np.minimum(counts, low)
    left = n - int(quota.sum())
    quota[[c for c in preference if counts[c] > low][:left]] += 1
    return quota


def ids_and_labels(folder: DatasetFolder, config: str, split: str) -> tuple[list[str], torch.Tensor]:
    """The split's ids and 1000-way labels (ConfigError naming the dataset when it has none)."""
    where = f"{folder.name} ({folder.path}) config {config!r}"
    label = folder.config_info(config)["features"].get("label")
    if not isinstance(label, dict) or label.get("_type") != "ClassLabel":
        raise ConfigError(f"{where} has no 'label' column: the adversarial attacks need the 1000-way ImageNet label")
    if len(label.get("names") or []) != NUM_CLASSES:
        raise ConfigError(f"{where}: its 'label' has {len(label.get('names') or [])} classes, not ImageNet's 1000")
    other = [key for key in OTHER_LABEL_SPACES if folder.protocol(config).get(key)]
    if other:
        raise ConfigError(
            f"{where} is scored in another label space (protocol {other[0]!r}); the adversarial attacks "
            "are defined on 1000-way argmax (Beyond Accuracy, Hesse et al. 2025: ImageNet val)"
        )
    if "image" not in folder.column_names(config):
        raise ConfigError(f"{where} has no 'image' column to attack")
    table = folder.read_table(config, split, ["id", "label"])
    labels = torch.tensor(table.column("label").to_pylist(), dtype=torch.int64)
    if len(labels) == 0:
        raise ConfigError(f"{where} split {split!r} has no rows to attack")
    outside = ((labels < 0) | (labels >= NUM_CLASSES)).nonzero()
    if len(outside):
        row = int(outside[0, 0])
        raise ConfigError(f"{where} split {split!r}: row {row} has label {int(labels[row])}, outside 0..999")
    return table.column("id").to_pylist(), labels


__all__ = ["NUM_CLASSES", "OTHER_LABEL_SPACES", "ids_and_labels", "stratified_subset"]
