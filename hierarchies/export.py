"""Hierarchy computation + export as files: the parts a dataset builder (or a script) calls.

Two entry points compute a hierarchy and write it into a folder:

* :func:`export_wordnet_hierarchy` — Bertinetto WordNet tree for a set of synsets (ImageNet-1k by
  default) → ``nodes.parquet`` + ``distance_<metric>.npy`` + ``hierarchy.json``;
* :func:`export_kmeans_hierarchy` — K-means hierarchy from per-sample vectors and labels →
  ``assignments.parquet`` + ``lca_level.npy`` + ``distance_<metric>.npy`` + ``hierarchy.json``.

For a builder that writes its own Parquet shards, the pieces are separate:
:func:`nodes_features` / :meth:`Tree.node_rows <.tree.Tree.node_rows>` (rows keyed by ``wnid``),
:func:`assignment_features` / :func:`assignment_rows`, and :func:`matrix_files`
(``{file name: .npy bytes}``, for ``Builder.extra_files``). Matrices are float64 C×C, rows =
ground-truth class in class-index order; see :mod:`.distances`.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .distances import METRICS, tree_distance_matrix
from .kmeans import KMeansClustering, KMeansHierarchy
from .tree import Tree


def nodes_features():
    """``datasets.Features`` of the nodes table (see :mod:`.tree`)."""
    from datasets import Features, Value

    return Features(
        {
            "wnid": Value("string"),
            "name": Value("string"),
            "parent": Value("string"),
            "depth": Value("int32"),
            "num_leaves": Value("int32"),
            "class_index": Value("int32"),
        }
    )


def assignment_features(num_levels: int):
    """``datasets.Features`` of a K-means assignments table with ``num_levels`` level columns."""
    from datasets import Features, Value

    return Features(
        {
            "wnid": Value("string"),
            "class_index": Value("int32"),
            **{f"level_{i}": Value("int32") for i in range(num_levels)},
        }
    )


def assignment_rows(hierarchy: KMeansHierarchy) -> list[dict[str, Any]]:
    """One row per class: ``wnid``, ``class_index``, ``level_0`` … cluster ids (class-index order)."""
    return [
        {"wnid": w, "class_index": c, **{f"level_{i}": int(v) for i, v in enumerate(hierarchy.assignments[c])}}
        for c, w in enumerate(hierarchy.class_wnids)
    ]


def distance_matrices(hierarchy: Tree | KMeansHierarchy, metrics: Sequence[str] = METRICS) -> dict[str, np.ndarray]:
    """{metric: C×C float64 matrix} for a tree or a K-means hierarchy."""
    if isinstance(hierarchy, Tree):
        return {m: tree_distance_matrix(hierarchy, m) for m in metrics}
    return {m: hierarchy.distance_matrix(m) for m in metrics}


def matrix_files(hierarchy: Tree | KMeansHierarchy, metrics: Sequence[str] = METRICS) -> dict[str, bytes]:
    """``{"distance_<metric>.npy": bytes}`` (plus ``lca_level.npy`` for K-means), deterministic bytes."""
    arrays = {f"distance_{m}.npy": a for m, a in distance_matrices(hierarchy, metrics).items()}
    if isinstance(hierarchy, KMeansHierarchy):
        arrays["lca_level.npy"] = hierarchy.level_matrix().astype(np.int16)
    return {name: _npy_bytes(array) for name, array in arrays.items()}


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
    return buffer.getvalue()


def write_hierarchy(
    hierarchy: Tree | KMeansHierarchy, out_dir: str | Path, info: dict[str, Any] | None = None
) -> list[Path]:
    """Write the table (Parquet), the matrices (.npy) and ``hierarchy.json`` into ``out_dir``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if isinstance(hierarchy, Tree):
        table_name, table = "nodes.parquet", hierarchy.nodes_table()
    else:
        table_name, table = "assignments.parquet", pa.Table.from_pylist(assignment_rows(hierarchy))
    written = [out / table_name]
    pq.write_table(table, written[0])
    for name, data in matrix_files(hierarchy).items():
        (out / name).write_bytes(data)
        written.append(out / name)
    summary = {
        "kind": "wordnet_tree" if isinstance(hierarchy, Tree) else "kmeans",
        "num_classes": len(hierarchy.class_wnids),
        "class_wnids": list(hierarchy.class_wnids),
        "matrix_rows": "ground-truth class",
        **(info or {}),
    }
    (out / "hierarchy.json").write_text(json.dumps(summary, indent=1) + "\n")
    return [*written, out / "hierarchy.json"]


def export_wordnet_hierarchy(out_dir: str | Path, wnids: Sequence[str] | None = None, *, wordnet=None) -> list[Path]:
    """Build the WordNet tree for ``wnids`` (default ImageNet-1k; needs WordNet 3.0) and write it."""
    from .wordnet import build_wordnet_tree

    tree = build_wordnet_tree(wnids, wordnet=wordnet)
    return write_hierarchy(
        tree,
        out_dir,
        {
            "num_nodes": tree.num_nodes,
            "root": tree.root,
            "construction": "Bertinetto et al. 2020, as used by LCA-on-the-Line (Shi et al. 2024)",
        },
    )


def export_kmeans_hierarchy(
    out_dir: str | Path,
    vectors: Any,
    labels: Any,
    num_classes: int,
    *,
    clustering: KMeansClustering | None = None,
    class_wnids: Sequence[str] | None = None,
) -> list[Path]:
    """Fit a :class:`KMeansHierarchy` on ``vectors`` [N, D] / ``labels`` [N] (class indices
    0..``num_classes`` - 1) with ``clustering`` (None: ``KMeansClustering()``, the paper's) and write it, the
    clustering recorded in ``hierarchy.json``."""
    clustering = clustering if clustering is not None else KMeansClustering()
    hierarchy = KMeansHierarchy.fit(
        vectors,
        labels,
        num_classes,
        seed=clustering.seed,
        n_init=clustering.n_init,
        nested=clustering.nested,
        class_wnids=class_wnids,
    )
    return write_hierarchy(
        hierarchy,
        out_dir,
        {
            "seed": clustering.seed,
            "n_init": clustering.n_init,
            "nested": clustering.nested,
            "levels": hierarchy.top_level,
            "ultrametric_violation_rate": hierarchy.ultrametric_violation_rate(),
        },
    )
