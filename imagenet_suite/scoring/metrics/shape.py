"""The model-vs-human 16-class decision mapping, shape bias on cue-conflict images, 16-class accuracy.

Decision mapping (model-vs-human ``ImageNetProbabilitiesTo16ClassesMapping``, default aggregation):
softmax over all 1000 ImageNet classes, then for each of the 16 categories (sorted alphabetically)
the **mean** of the probabilities of its hard-coded ImageNet indices (207 indices in all, the other
793 classes are ignored, nothing is renormalized); the decision is the category with the largest
mean, ties broken by the lowest category index (model-vs-human leaves tie order unspecified).

Shape bias (Geirhos et al. 2019; Beyond Accuracy, Hesse et al. 2025, Eq. 13): on cue-conflict images, drop those whose shape
category equals their texture category, then shape hits / (shape hits + texture hits), pooled over
images; decisions matching neither cue are ignored. The shape is the image's folder, the texture
the last ``-``-separated token of the file name with digits stripped (``airplane/airplane1-bicycle2.png``
-> shape airplane, texture bicycle).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath

import torch

from ...errors import OutputsError
from ..batching import as_float32, chunk_elements, probabilities, row_chunks
from .classification import Fraction
from .row_statistics import SoftmaxNormalizer
from .shape_bias_counts import ShapeBias

_DOG = (
    list(range(152, 192))
    + list(range(193, 204))
    + list(range(205, 227))
    + list(range(228, 242))
    + list(range(243, 251))
    + list(range(252, 258))
    + [259, 261, 262, 263, 265, 266, 267, 268]
)
_BIRD = (
    [8, 10, 11, 12, 13, 14, 15, 16, 18, 19, 20, 22, 23, 24]
    + list(range(80, 84))
    + list(range(87, 97))
    + [98, 99, 100, 127, 128, 129, 130, 131, 132, 133, 135, 136, 137, 138, 139, 140, 141, 142, 143, 144, 145]
)

# model-vs-human helper/human_categories.py ``*_indices`` (as Beyond Accuracy's code uses them), categories sorted.
CATEGORY_INDICES: dict[str, tuple[int, ...]] = {
    "airplane": (404,),
    "bear": (294, 295, 296, 297),
    "bicycle": (444, 671),
    "bird": tuple(_BIRD),
    "boat": (472, 554, 625, 814, 914),
    "bottle": (440, 720, 737, 898, 899, 901, 907),
    "car": (436, 511, 817),
    "cat": (281, 282, 283, 284, 285, 286),
    "chair": (423, 559, 765, 857),
    "clock": (409, 530, 892),
    "dog": tuple(_DOG),
    "elephant": (385, 386),
    "keyboard": (508, 878),
    "knife": (499,),
    "oven": (766,),
    "truck": (555, 569, 656, 675, 717, 734, 864, 867),
}
CATEGORIES16: tuple[str, ...] = tuple(sorted(CATEGORY_INDICES))
IMAGENET_16_MAPPING = "imagenet_16"


def mapped_columns(device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(columns, category_of_column, category_sizes)``: the 207 ImageNet indices, their category
    index (0..15, sorted category order) and the number of indices per category.

    Example:
        >>> columns, category_of_column, sizes = mapped_columns()
        >>> len(columns), int(sizes.sum()), int(sizes[CATEGORIES16.index("dog")])
        (207, 207, 109)
        >>> int(columns[0]), CATEGORIES16[int(category_of_column[0])]
        (404, 'airplane')
    """
    columns, owner = [], []
    for position, category in enumerate(CATEGORIES16):
        columns += CATEGORY_INDICES[category]
        owner += [position] * len(CATEGORY_INDICES[category])
    sizes = [len(CATEGORY_INDICES[c]) for c in CATEGORIES16]
    as_long = lambda values: torch.tensor(values, dtype=torch.int64, device=device)  # noqa: E731
    return as_long(columns), as_long(owner), torch.tensor(sizes, dtype=torch.float64, device=device)


def category_probabilities(
    scores: torch.Tensor, kind: str = "logits", normalizer: SoftmaxNormalizer | None = None
) -> torch.Tensor:
    """``[N, 16]`` float64 mean softmax probability of each category (1000-way softmax first).

    With a ``normalizer`` from :func:`row_statistics` only the 207 mapped columns are read.

    Example:
        Half the probability on class 499 (the only "knife" class), half on class 152 (one of the
        109 "dog" classes): a category gets the **mean** over its classes, not the sum:

        >>> probs = torch.zeros(1, 1000)
        >>> probs[0, 499] = probs[0, 152] = 0.5
        >>> mean = category_probabilities(probs, kind="probs")[0]
        >>> float(mean[CATEGORIES16.index("knife")]), round(float(mean[CATEGORIES16.index("dog")]), 6)
        (0.5, 0.004587)
    """
    if scores.shape[1] != 1000:
        raise OutputsError(f"the 16-class mapping needs 1000-way ImageNet scores, got C={scores.shape[1]}")
    columns, owner, sizes = mapped_columns(scores.device)
    out = torch.empty(scores.shape[0], len(CATEGORIES16), dtype=torch.float64, device=scores.device)
    width = len(columns) if normalizer is not None else scores.shape[1]
    for rows in row_chunks(scores.shape[0], width, chunk_elements(scores.device)):
        if normalizer is not None:
            mapped = normalizer.probabilities(as_float32(scores[rows].index_select(1, columns)), rows)
        else:
            mapped = probabilities(as_float32(scores[rows]), kind).index_select(1, columns)
        sums = torch.zeros(mapped.shape[0], len(CATEGORIES16), dtype=torch.float64, device=scores.device)
        out[rows] = sums.index_add_(1, owner, mapped.double()) / sizes
    return out


def decisions16(
    scores: torch.Tensor, kind: str = "logits", normalizer: SoftmaxNormalizer | None = None
) -> torch.Tensor:
    """``[N]`` int64 category index (sorted order) of the 16-class decision; ties -> lowest index.

    Example:
        A high logit on ImageNet class 499 (cleaver, the only "knife" class) or 152 (a dog breed,
        one of the 109 "dog" classes) decides the row; all-equal logits give every category the same
        mean probability, and the tie goes to the first category, airplane:

        >>> import torch
        >>> logits = torch.zeros(3, 1000)
        >>> logits[0, 499] = logits[1, 152] = 10.0
        >>> [CATEGORIES16[i] for i in decisions16(logits)]
        ['knife', 'dog', 'airplane']
    """
    return argmax_lowest_index(category_probabilities(scores, kind, normalizer))


def argmax_lowest_index(values: torch.Tensor) -> torch.Tensor:
    """Row-wise argmax that returns the lowest column among equal maxima (explicitly, on any device).

    Example:
        >>> argmax_lowest_index(torch.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]))
        tensor([1, 0])
    """
    best = values.amax(dim=1, keepdim=True)
    column = torch.arange(values.shape[1], device=values.device).expand_as(values)
    return torch.where(values == best, column, values.shape[1]).amin(dim=1)


def shape_bias(decisions: torch.Tensor, shape_labels: torch.Tensor, texture_labels: torch.Tensor) -> ShapeBias:
    """Pooled shape bias of 16-class ``decisions`` given per-image shape and texture categories.

    Example:
        Image 3's shape and texture agree, so it is left out; of the other four, two decisions
        follow the shape (images 0 and 4), one the texture (image 1), one neither (image 2):

        >>> import torch
        >>> shape = torch.tensor([0, 0, 1, 2, 3])
        >>> texture = torch.tensor([1, 2, 0, 2, 0])
        >>> bias = shape_bias(torch.tensor([0, 2, 5, 2, 3]), shape, texture)
        >>> bias
        ShapeBias(shape_hits=2, texture_hits=1, conflict_images=4, excluded_images=1)
        >>> bias.value  # shape hits / (shape hits + texture hits)
        0.6666666666666666
    """
    conflict = shape_labels != texture_labels
    decided = decisions[conflict]
    return ShapeBias(
        shape_hits=int((decided == shape_labels[conflict]).sum()),
        texture_hits=int((decided == texture_labels[conflict]).sum()),
        conflict_images=int(conflict.sum()),
        excluded_images=int((~conflict).sum()),
    )


def shape_bias_per_category(decisions, shape_labels, texture_labels) -> dict[str, ShapeBias]:
    """Shape bias of the images of each shape category (model-vs-human's per-category plot).

    Example:
        The images of :func:`shape_bias`' example: the two airplane-shaped ones (category 0) get
        one shape and one texture decision; the bear-shaped one (1) matches neither cue:

        >>> shape, texture = torch.tensor([0, 0, 1, 2, 3]), torch.tensor([1, 2, 0, 2, 0])
        >>> per_category = shape_bias_per_category(torch.tensor([0, 2, 5, 2, 3]), shape, texture)
        >>> per_category["airplane"].value, per_category["bear"].value
        (0.5, nan)
    """
    return {
        category: shape_bias(
            decisions[shape_labels == index], shape_labels[shape_labels == index], texture_labels[shape_labels == index]
        )
        for index, category in enumerate(CATEGORIES16)
    }


def accuracy16(decisions: torch.Tensor, labels16: torch.Tensor) -> Fraction:
    """16-class accuracy (edge, silhouette, sketch, stylized sets): decision == category label.

    Example:
        >>> import torch
        >>> accuracy16(torch.tensor([3, 7, 7, 0]), torch.tensor([3, 7, 1, 0]))
        Fraction(numerator=3, denominator=4)
    """
    return Fraction(int((decisions == labels16).sum()), int(labels16.numel()))


def category_index(names: Sequence[str]) -> torch.Tensor:
    """Category names -> int64 indices in sorted category order; refuses unknown names.

    Example:
        >>> category_index(["dog", "airplane", "truck"])
        tensor([10,  0, 15])
    """
    lookup = {name: index for index, name in enumerate(CATEGORIES16)}
    unknown = sorted({name for name in names if name not in lookup})
    if unknown:
        raise OutputsError(f"unknown 16-class categories {unknown[:5]}; known: {list(CATEGORIES16)}")
    return torch.tensor([lookup[name] for name in names], dtype=torch.int64)


def cue_conflict_labels(file_name: str) -> tuple[str, str]:
    """``(shape, texture)`` of a cue-conflict file: shape = parent folder, texture = last ``-`` token
    of the stem with digits removed (model-vs-human ``_get_texture_category``).

    Example:
        >>> cue_conflict_labels("airplane/airplane1-bicycle2.png")
        ('airplane', 'bicycle')
    """
    path = PurePosixPath(file_name.replace("\\", "/"))
    if len(path.parts) < 2 or "-" not in path.stem:
        raise OutputsError(f"{file_name!r} is not a cue-conflict path '<shape>/<shape><i>-<texture><j>.png'")
    texture = "".join(ch for ch in path.stem.split("-")[-1] if not ch.isdigit())
    return path.parent.name, texture
