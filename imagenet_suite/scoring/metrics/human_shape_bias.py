"""Human observers' shape bias on cue-conflict images, from model-vs-human's raw trial files.

model-vs-human (Geirhos et al. 2021) releases the responses of the 10 observers of Geirhos et al. 2019's
cue-conflict experiment as one CSV per observer (``raw-data/cue-conflict/cue-conflict_subject-NN_session_1.csv``,
columns ``subj, session, trial, rt, object_response, category, condition, imagename``; 1,280 trials each).
Its shape-bias analysis (``modelvshuman/plotting/analyses.py`` ``ShapeBias``) takes the shape from ``category``
and the texture from the image name's last ``-`` token without digits, drops trials whose shape equals their
texture, and divides shape hits by shape + texture hits; its matrix plot pools the ten observers ("humans")
per shape category. :func:`counts_per_category` gives one observer's hits per category with this package's
:func:`~imagenet_suite.scoring.metrics.shape.shape_bias_per_category` (responses that match no category,
``na``, count as neither cue), so the human points and the models' points come from one formula.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import torch

from ...errors import InvalidSourceData
from .shape import CATEGORIES16, shape_bias_per_category
from .shape_bias_counts import ShapeBias, pooled

COLUMNS = ("subj", "object_response", "category", "imagename")
"""The columns of a model-vs-human raw trial file this module reads."""


def texture_of(imagename: str) -> str:
    """The texture category of a model-vs-human trial's ``imagename`` (its analysis' ``get_texture_category``).

    Example:
        >>> texture_of("0002_s5n_s01_0_bird_00_bird2-clock3.png")
        'clock'
    """
    stem = imagename.rsplit(".", 1)[0]
    return "".join(ch for ch in stem.split("-")[-1] if not ch.isdigit())


def counts_per_category(rows: Iterable[Mapping[str, str]], *, source: str) -> dict[str, ShapeBias]:
    """Shape and texture hits per shape category of the trials ``rows`` (dicts with :data:`COLUMNS`), in
    :data:`~imagenet_suite.scoring.metrics.shape.CATEGORIES16` order. ``source`` names the file in errors:
    a category or texture outside the 16 is InvalidSourceData naming the file and its line.

    Example:
        >>> rows = [
        ...     {"subj": "subject-01", "object_response": "cat", "category": "cat", "imagename": "0001_s_cat_00_cat1-dog2.png"},
        ...     {"subj": "subject-01", "object_response": "dog", "category": "cat", "imagename": "0002_s_cat_00_cat2-dog3.png"},
        ...     {"subj": "subject-01", "object_response": "na", "category": "dog", "imagename": "0003_s_dog_00_dog1-cat1.png"},
        ... ]
        >>> counts = counts_per_category(rows, source="example.csv")
        >>> counts["cat"], counts["dog"].value
        (ShapeBias(shape_hits=1, texture_hits=1, conflict_images=2, excluded_images=0), nan)
    """
    index = {name: i for i, name in enumerate(CATEGORIES16)}
    decisions, shapes, textures = [], [], []
    for line, row in enumerate(rows, start=2):
        try:
            shape, texture = index[row["category"]], index[texture_of(row["imagename"])]
        except KeyError as err:
            raise InvalidSourceData(
                f"{source}:{line}: {err.args[0]!r} is not one of the 16 categories (or a missing column; expected "
                f"{', '.join(COLUMNS)})"
            ) from err
        decisions.append(index.get(row["object_response"], -1))
        shapes.append(shape)
        textures.append(texture)
    as_tensor = lambda values: torch.tensor(values, dtype=torch.int64)  # noqa: E731
    return shape_bias_per_category(as_tensor(decisions), as_tensor(shapes), as_tensor(textures))


__all__ = ["COLUMNS", "counts_per_category", "pooled", "texture_of"]
