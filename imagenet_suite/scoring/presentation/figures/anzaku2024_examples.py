"""Anzaku et al. 2024, Fig. 8: "Examples of PatchML predictions for sample images with nine ground truth labels.
Red bars indicate predicted labels that are not part of the ground truth set."

From a PatchML build (its ``images`` config) and a model's outputs on it (``predict``'s file, or a run folder's
``outputs/patchml*.pt``): the first ``examples`` composites with ``labels`` ground-truth labels, in the build's
order, each beside a bar chart of the model's ``top`` most probable classes (softmax of the stored logits;
``top`` defaults to ``labels``: a model that got every label right shows no red bar). ``imagenet-suite patchml
predictions DIR --outputs FILE --out PNG`` draws it.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import torch
from matplotlib.figure import Figure as MplFigure
from PIL import Image

from ....classes import imagenet_wnids, lemma
from ....dataset.folder import DatasetFolder
from ....errors import ConfigError, OutputsError, param
from ....limits import check_limit
from ...batching import probabilities
from ...outputs import ModelOutputs

PAPER_LABELS = 9  # Fig. 8's images have nine ground-truth labels
EXAMPLES = 4


@dataclass(frozen=True)
class Example:
    """One composite: its id, image bytes, ground-truth labels and the model's top classes with probabilities."""

    image_id: str
    image: bytes
    labels: tuple[int, ...]
    top: tuple[tuple[int, float], ...]  # (class, softmax probability), most probable first

    @property
    def wrong(self) -> tuple[int, ...]:
        """The top classes that are not ground-truth labels (Fig. 8's red bars)."""
        return tuple(label for label, _ in self.top if label not in self.labels)


def prediction_examples(
    folder: str | Path,
    outputs: str | Path,
    *,
    labels: int = PAPER_LABELS,
    examples: int = EXAMPLES,
    top: int | None = None,
) -> list[Example]:
    """The first ``examples`` composites (1 to 100, :data:`imagenet_suite.limits.LIMITS`) of ``folder`` (a
    patchml build with the ``images`` config) with ``labels`` ground-truth labels, with the ``top`` (default
    ``labels``) classes of ``outputs`` for them. ConfigError for a folder that is not such a build or a build
    without such composites; OutputsError when ``outputs`` lacks one of their ids."""
    check_limit("examples", examples)
    built = DatasetFolder(folder)
    if built.name != "patchml" or "images" not in built.configs:
        raise ConfigError(f"{folder} is not a patchml folder with the images config")
    index = built.read_table("images", None, ["id", "labels"])
    chosen = [i for i, found in zip(index.column("id").to_pylist(), index.column("labels").to_pylist())
              if len(found) == labels][:examples]  # fmt: skip
    if not chosen:
        raise ConfigError(f"{param('labels')}: {folder} has no composite with {labels} labels")
    rows = built.take(chosen, "images", None, ["id", "image", "labels"]).to_pylist()
    scored = ModelOutputs.load(outputs)
    position = {image_id: i for i, image_id in enumerate(scored.ids)}
    missing = [image_id for image_id in chosen if image_id not in position]
    if missing:
        raise OutputsError(f"{outputs}: no row for {missing[0]!r} of {folder} (outputs of another split?)")
    values = scored.values[[position[image_id] for image_id in chosen]].float()
    shown = probabilities(values, scored.kind)
    best = torch.topk(shown, k=min(top or labels, shown.shape[1]), dim=1)
    return [
        Example(row["id"], row["image"]["bytes"], tuple(row["labels"]), tuple(zip(classes.tolist(), p.tolist())))
        for row, p, classes in zip(rows, best.values, best.indices)
    ]


def examples_plot(found: list[Example]) -> MplFigure:
    """Fig. 8: a row per composite, the image left and the top classes right (red: not a ground-truth label)."""
    wnids = imagenet_wnids()
    figure = MplFigure(figsize=(8, 2.6 * len(found)))
    grid = figure.subplots(len(found), 2, squeeze=False, gridspec_kw={"width_ratios": [1, 1.4]})
    for (picture, bars), example in zip(grid, found):
        picture.imshow(Image.open(io.BytesIO(example.image)).convert("RGB"))
        picture.set_axis_off()
        picture.set_title(f"{example.image_id} ({len(example.labels)} labels)", fontsize=7)
        names = [lemma(wnids[label]).split(",")[0] for label, _ in example.top]
        colours = ["tab:red" if label not in example.labels else "tab:blue" for label, _ in example.top]
        bars.barh(range(len(names)), [p for _, p in example.top], color=colours)
        bars.set_yticks(range(len(names)), names, fontsize=6)
        bars.invert_yaxis()
        bars.set_xlim(0, 1)
        bars.set_xlabel("softmax probability (red: not a ground-truth label)", fontsize=6)
    figure.suptitle("Anzaku et al. 2024, Fig. 8: PatchML predictions", fontsize=9)
    figure.tight_layout()
    return figure


__all__ = ["EXAMPLES", "PAPER_LABELS", "Example", "examples_plot", "prediction_examples"]
