"""A zero-shot model under each paper's convention (:mod:`~imagenet_suite.inference.zero_shot` makes the model):

* **Beyond Accuracy** (Hesse et al. 2025): its wrappers (``helper/models/model_wrappers.py``) return
  ``softmax(100·cos)`` (SigLIP: ``sigmoid(s·cos + b)``) and every metric softmaxes that output again.
  :func:`wrapper_output` computes the wrapper's output from a ``softmax`` head's stored logits, so ``evaluate``
  scores the probability-dependent QUBA inputs again on it (:data:`~imagenet_suite.scoring.summary.reports.WRAPPER_PROBABILITIES_KEY`)
  without predicting again.
* **LCA-on-the-Line** (Shi et al. 2024): its zero-shot models classify ObjectNet among ObjectNet's 113 class
  names, ``100·cos`` over "a photo of a {name}" of each (``prepare_logit/extract_*_feature.py``:
  ``build_objectnet_dataset`` gives the names, ``classname_map[c].lower()`` of the sorted class folders),
  not among the 1000 ImageNet classes mapped to them. :func:`objectnet_model` gives the model that head
  (:class:`MappedHead`), with the run's own templates.

Example:
    >>> objectnet_class_name("alarm_clock"), objectnet_class_name("full_sized_towel")
    ('alarm clock', 'bath towel')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import torch
from torch import nn

from ..errors import ConfigError
from ..scoring.evaluation.preprocessing import HESSE2025
from ..scoring.metrics.protocols import mapping_in_label_order
from ..scoring.summary.reports import WRAPPER_PROBABILITY_SETS
from .models import LoadedModel
from .suite_targets import SuiteTarget
from .zero_shot import (
    ZeroShotClassifier,
    ZeroShotHead,
    cached_text_embeddings,
    head_record,
    prompt_texts,
    tokenizer_of,
)

OBJECTNET_HEAD = "objectnet113"
"""The head LCA-on-the-Line classifies ObjectNet with: ObjectNet's 113 class names."""
OBJECTNET_BUILDER = "objectnet"
OBJECTNET_RENAMED = {
    "binder_closed": "binder (closed)",
    "butchers_knife": "butcher's knife",
    "coffee_french_press": "coffee/french press",
    "dress_shoe_men": "dress shoe (men)",
    "drying_rack_for_dishes": "drying rack for plates",
    "full_sized_towel": "bath towel",
    "hand_towel_or_rag": "dishrag or hand towel",
    "iron_for_clothes": "iron (for clothes)",
    "laptop_open": "laptop (open)",
    "mixing_salad_bowl": "mixing / salad bowl",
    "nail_fastener": "nail (fastener)",
    "weight_exercise": "weight (exercise)",
}
"""The ObjectNet class folders whose label (``mappings/folder_to_objectnet_label.json``, lowercased as
LCA-on-the-Line does) is not the folder name with spaces; the other 101 are (LCA-on-the-Line's
``datasets_resources/objectnet_dataset/text_name.pt`` holds all 113 in folder order)."""


def objectnet_class_name(folder: str) -> str:
    """The name LCA-on-the-Line prompts an ObjectNet class folder with (its label, lowercased)."""
    return OBJECTNET_RENAMED.get(folder, folder.replace("_", " "))


def wrapper_output(logits: torch.Tensor, record: Mapping[str, Any]) -> torch.Tensor:
    """What Beyond Accuracy's wrapper of a zero-shot model returns, from the logits ``s·cos (+ b)`` of a head
    made as ``record`` says (:func:`~imagenet_suite.inference.zero_shot.head_record`): ``softmax`` of them, or
    ``sigmoid`` with a logit bias (SigLIP); as :class:`~imagenet_suite.inference.zero_shot.ZeroShotHead` with
    ``--probabilities hesse2025``.

    Example:
        >>> wrapper_output(torch.tensor([[0.0, 0.0]]), {"logit_bias": None})
        tensor([[0.5000, 0.5000]])
        >>> wrapper_output(torch.tensor([[0.0, 0.0]]), {"logit_bias": -10.0})
        tensor([[0.5000, 0.5000]])
    """
    return torch.sigmoid(logits) if record.get("logit_bias") is not None else logits.softmax(dim=-1)


class MappedHead(nn.Module):
    """A zero-shot head over a dataset's own K classes whose logit of class k is written into each of the
    ImageNet-1k columns class k maps to: the max over each class's mapped columns (ObjectNet's protocol,
    ``max_over_mapped_logits``) is then that class's logit, so the 1000-way outputs score exactly as the
    K-way head. The other columns, never read by that protocol, hold ``-(s + |b| + 1)``, below any logit
    ``s·cos + b`` (outputs must be finite). The mapping must be disjoint (a column of one class at most)."""

    def __init__(self, head: ZeroShotHead, mapping: Sequence[Sequence[int]], num_classes: int = 1000):
        super().__init__()
        owner = torch.full((num_classes,), -1, dtype=torch.int64)
        for index, columns in enumerate(mapping):
            for column in columns:
                if owner[column] >= 0:
                    raise ConfigError(f"ImageNet class {column} is mapped to two classes: no K-way head maps to it")
                owner[column] = index
        self.head = head
        self.register_buffer("columns", torch.nonzero(owner >= 0).flatten(), persistent=False)
        self.register_buffer("owner", owner[owner >= 0], persistent=False)
        self.num_classes = num_classes

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        logits = self.head(features)
        floor = -(self.head.scale + abs(self.head.bias or 0.0) + 1.0)
        out = logits.new_full((len(logits), self.num_classes), floor)
        out[:, self.columns] = logits[:, self.owner]
        return out


def objectnet_model(loaded: LoadedModel, folders: Sequence[str], mapping: Sequence[Sequence[int]]) -> LoadedModel:
    """``loaded`` (an ``open_clip:`` model) with LCA-on-the-Line's ObjectNet head: the class folders ``folders``
    (the build's label names, in label order) named as :func:`objectnet_class_name`, prompted with the model's
    templates, their text embeddings made as the model's (cached), ``s·cos (+ b)`` written to the ImageNet
    columns of ``mapping`` (:class:`MappedHead`; logits, whatever the model's probabilities). ConfigError for
    a model that is not zero-shot or whose prompts are taxonomy prompts (they name ImageNet ancestors)."""
    classifier = loaded.model
    options = getattr(classifier, "options", None)
    if not isinstance(classifier, ZeroShotClassifier) or options is None:
        raise ConfigError(f"model {loaded.spec!r} has no zero-shot head to prompt ObjectNet's class names with")
    if options.parsed.kind == "taxonomy":
        raise ConfigError("taxonomy prompts name ImageNet ancestors: ObjectNet's 113 names have none")
    options = replace(options, probabilities="softmax")
    prompts = prompt_texts(options.parsed, [objectnet_class_name(folder) for folder in folders])
    tokenizer = tokenizer_of(loaded.spec, classifier.key.architecture)
    text = cached_text_embeddings(classifier.clip, tokenizer, prompts, classifier.key, options)
    head = ZeroShotHead(text, classifier.head.scale, classifier.head.bias)
    record = {
        **head_record(options, prompts, head.scale, head.bias, text),
        "class_names": OBJECTNET_HEAD,
        "head": "ObjectNet's 113 class names (LCA-on-the-Line, Shi et al. 2024), each logit written to the "
        "ImageNet classes it maps to",
    }
    model = ZeroShotClassifier(classifier.clip, MappedHead(head, mapping), record).eval()
    return replace(loaded, model=model, zero_shot=record)


def paper_targets(loaded: LoadedModel, targets: Sequence[SuiteTarget]) -> list[SuiteTarget]:
    """``targets`` with, for a zero-shot model, each ``objectnet`` split under ``hesse2025`` followed by its twin
    under LCA-on-the-Line's head (``<key>@objectnet113``)."""
    if loaded.zero_shot is None:
        return list(targets)
    found = []
    for target in targets:
        found.append(target)
        if target.folder.name == OBJECTNET_BUILDER and target.protocol == HESSE2025 and not target.head:
            found.append(target.with_head(OBJECTNET_HEAD))
    return found


def rescored_on_wrapper_output(loaded: LoadedModel, target: SuiteTarget) -> bool:
    """Whether ``evaluate`` scores ``target`` again on Beyond Accuracy's wrapper output (:func:`wrapper_output`):
    a zero-shot model whose outputs are logits (``--probabilities softmax``), a split under ``hesse2025`` of a
    builder whose QUBA rows depend on the probabilities (:data:`~imagenet_suite.scoring.summary.reports.WRAPPER_PROBABILITY_SETS`)."""
    head = loaded.zero_shot
    return (
        head is not None
        and head.get("probabilities") == "softmax"
        and target.protocol == HESSE2025
        and not target.head
        and target.folder.name in WRAPPER_PROBABILITY_SETS
    )


def head_model(loaded: LoadedModel, target: SuiteTarget) -> LoadedModel:
    """The model that predicts ``target``: ``loaded``, or for a ``<key>@objectnet113`` target the model with
    LCA-on-the-Line's ObjectNet head (:func:`objectnet_model`; ConfigError when it has none)."""
    if not target.head:
        return loaded
    protocol = target.folder.protocol(target.config)
    folders = target.folder.config_info(target.config)["features"][protocol["label_column"]]["names"]
    mapping = mapping_in_label_order(protocol, folders, int(protocol["num_classes"]))
    return objectnet_model(loaded, folders, mapping)


__all__ = [
    "OBJECTNET_HEAD",
    "OBJECTNET_RENAMED",
    "MappedHead",
    "head_model",
    "objectnet_class_name",
    "objectnet_model",
    "paper_targets",
    "rescored_on_wrapper_output",
    "wrapper_output",
]
