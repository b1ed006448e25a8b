"""Look-alikes: an OOD sample's nearest ImageNet-val images in the model's feature space.

With ``--reference DIR`` (a built ``imagenet_val`` folder) and ``--id-features`` covering its rows,
:func:`.load.apply_load` adds the reference images to the review dataset as samples with
``is_reference`` True, ``is_ood`` False, ``row_id`` ``reference/<id>`` and their ImageNet class as
``ground_truth`` (every review view, ``review status`` and ``review export`` leave them out), then
:func:`build_index` indexes every sample that has features — the model's precomputed penultimate
features (``--features`` for the OOD rows, ``--id-features`` for the references; no model runs in
the review) — with a FiftyOne Brain similarity index (``sklearn`` backend, cosine distance,
brain key :data:`BRAIN_KEY`) and a 2-D embeddings plot of OOD vs ID samples
(``compute_visualization``, PCA by default; brain key :data:`PLOT_KEY`).

Each OOD sample with features gets ``lookalikes`` (``Classifications``: its :data:`K` nearest
reference images, label = their readable ImageNet class, ``confidence`` = cosine similarity,
``row_id`` / ``raw_label`` = the reference id / wnid) and ``lookalike_similarity`` (that of the
nearest). In the App: the saved view ``lookalike_suspects`` lists OOD samples most similar to an
ImageNet image first; ``lookalikes: <row id>`` (for the :data:`VIEWS` most similar ones) shows the
OOD sample followed by its nearest ImageNet images (a ``sort_by_similarity`` stage on the index);
for any other sample, select it and use the grid's *sort by similarity* button (brain key
``lookalikes``), then filter ``is_reference``. In Python: :func:`nearest_id_images`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..errors import param
from .errors import ReviewError

BRAIN_KEY = "lookalikes"
PLOT_KEY = "lookalikes_plot"
REFERENCE_PREFIX = "reference/"
K = 5  # nearest reference images stored per OOD sample
VIEWS = 5  # saved `lookalikes: <row id>` views, for the OOD samples most similar to a reference
QUERY_ROWS = 4096


def reference_row_id(row_id: str) -> str:
    return REFERENCE_PREFIX + row_id


def nearest_references(queries: torch.Tensor, bank: torch.Tensor, k: int = K) -> tuple[torch.Tensor, torch.Tensor]:
    """``(indices [N, k], cosine similarities [N, k])`` of each query's ``k`` nearest bank rows, most similar first."""
    bank = torch.nn.functional.normalize(bank.double(), dim=1)
    k = min(k, len(bank))
    found, sims = [], []
    for start in range(0, len(queries), QUERY_ROWS):
        block = torch.nn.functional.normalize(queries[start : start + QUERY_ROWS].double(), dim=1) @ bank.T
        top = torch.topk(block, k, dim=1)
        found.append(top.indices)
        sims.append(top.values)
    if not found:
        return torch.zeros(0, k, dtype=torch.long), torch.zeros(0, k, dtype=torch.float64)
    return torch.cat(found), torch.cat(sims)


def lookalike_fields(
    ood_ids: Sequence[str],
    ood_features: torch.Tensor,
    reference_ids: Sequence[str],
    reference_features: torch.Tensor,
    reference_classes: Sequence[tuple[str, str]],
    k: int = K,
) -> dict[str, dict[str, Any]]:
    """``{row id: {"lookalikes": Classifications document, "lookalike_similarity": float}}`` of the OOD rows.

    ``reference_classes[j]``: (readable class, wnid) of reference row ``j``.
    """
    from .documents import classification

    indices, sims = nearest_references(ood_features, reference_features, k)
    result = {}
    for row_id, found, sim in zip(ood_ids, indices.tolist(), sims.tolist()):
        near = [
            classification(
                reference_classes[j][0], s, raw_label=reference_classes[j][1], row_id=reference_ids[j], distance=1 - s
            )
            for j, s in zip(found, sim)
        ]
        result[row_id] = {
            "lookalikes": {"_cls": "Classifications", "classifications": near},
            "lookalike_similarity": sim[0] if sim else None,
        }
    return result


def build_index(dataset, features: dict[str, np.ndarray], plot_method: str = "pca") -> None:
    """The similarity index (:data:`BRAIN_KEY`) and the embeddings plot (:data:`PLOT_KEY`) over the samples
    whose ``row_id`` has ``features`` (replacing earlier ones)."""
    import fiftyone.brain as fob

    row_ids, sample_ids = dataset.values(["row_id", "id"])
    chosen = [(s, features[r]) for r, s in zip(row_ids, sample_ids) if r in features]
    if len(chosen) < 2:
        raise ReviewError(f"look-alikes need features of at least 2 samples, got {len(chosen)}")
    view = dataset.select([s for s, _ in chosen], ordered=True)
    embeddings = np.stack([e for _, e in chosen]).astype(np.float32)
    for key in (BRAIN_KEY, PLOT_KEY):
        if key in dataset.list_brain_runs():
            dataset.delete_brain_run(key)
    fob.compute_similarity(
        view, embeddings=embeddings, backend="sklearn", metric="cosine", brain_key=BRAIN_KEY, progress=False
    )
    fob.compute_visualization(
        view, embeddings=embeddings, method=plot_method, num_dims=2, brain_key=PLOT_KEY, seed=0, progress=False
    )


def nearest_id_images(dataset, row_id: str, k: int = K) -> list[tuple[str, str, float]]:
    """``[(reference row id, readable ImageNet class, cosine distance)]`` of the ``k`` reference images nearest
    to the sample ``row_id``, nearest first, queried through the FiftyOne Brain index."""
    from fiftyone import ViewField as F

    if BRAIN_KEY not in dataset.list_brain_runs():
        raise ReviewError(
            f"FiftyOne dataset {dataset.name!r} has no look-alike index: load it with {param('reference')} DIR "
            f"{param('features')} FILE {param('id_features')} FILE"
        )
    found = dataset.match(F("row_id") == row_id).values("id")
    if not found:
        raise ReviewError(f"no sample with row id {row_id!r} in {dataset.name!r}")
    view = dataset.match(F("is_reference") == True).sort_by_similarity(  # noqa: E712
        found[0], k=k, brain_key=BRAIN_KEY, dist_field="lookalike_distance"
    )
    ids, labels, dists = view.values(["row_id", "ground_truth.label", "lookalike_distance"])
    return [(i.removeprefix(REFERENCE_PREFIX), label, float(d)) for i, label, d in zip(ids, labels, dists)]


def lookalike_view(dataset, row_id: str, k: int = K):
    """The sample ``row_id`` followed by its ``k`` nearest reference images (a ``sort_by_similarity`` view)."""
    from fiftyone import ViewField as F

    sample_id = dataset.match(F("row_id") == row_id).values("id")[0]
    return dataset.match((F("is_reference") == True) | (F("row_id") == row_id)).sort_by_similarity(  # noqa: E712
        sample_id, k=k + 1, brain_key=BRAIN_KEY
    )


def write_embeddings_plot(dataset, path: str | Path) -> Path:
    """A PNG of the 2-D embeddings plot (:data:`PLOT_KEY`): OOD samples vs ImageNet reference images."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = dataset.load_brain_results(PLOT_KEY)
    points = np.asarray(results.points)
    view = results.view if hasattr(results, "view") else dataset.select(results.current_sample_ids)
    reference = np.asarray([bool(v) for v in view.values("is_reference")])
    figure, axis = plt.subplots(figsize=(6, 6))
    axis.scatter(*points[~reference].T, s=6, c="tab:red", label="OOD samples")
    axis.scatter(*points[reference].T, s=6, c="tab:blue", label="ImageNet reference (ID)")
    axis.legend()
    axis.set_title(f"{dataset.name}: model features ({results.config.method})")
    path = Path(path)
    figure.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(figure)
    return path
