"""The ImageNet-1k WordNet tree shipped with the package, and how to regenerate it.

``data/imagenet1k_wordnet_nodes.csv`` is the nodes table (see :mod:`.tree`) of
:func:`build_imagenet1k_tree` — the Bertinetto construction over the 1000 ImageNet-1k classes
from WordNet 3.0: 1,372 nodes, 1,000 leaves in class-index order. Scoring reads the shipped copy,
so WordNet is not needed at run time. Regenerate it (requires WordNet 3.0) with::

    imagenet-suite hierarchy regenerate-imagenet1k [--out FILE]

which calls :func:`regenerate` (argument parsing lives in ``imagenet_suite.commands.hierarchy``).
"""

from __future__ import annotations

import functools
from pathlib import Path

from imagenet_suite.classes import imagenet_wnids
from imagenet_suite.errors import HierarchyError

from .tree import Tree

SHIPPED_NODES_CSV = Path(__file__).resolve().parent / "data" / "imagenet1k_wordnet_nodes.csv"


@functools.cache
def imagenet1k_tree() -> Tree:
    """The shipped ImageNet-1k WordNet tree (no WordNet needed); leaves = class indices 0..999."""
    if not SHIPPED_NODES_CSV.is_file():
        raise HierarchyError(
            f"{SHIPPED_NODES_CSV} is missing from the installed package; reinstall imagenet-suite "
            "or regenerate it with `imagenet-suite hierarchy regenerate-imagenet1k`"
        )
    tree = Tree.read_csv(SHIPPED_NODES_CSV)
    if tree.class_wnids != imagenet_wnids():
        raise HierarchyError(f"{SHIPPED_NODES_CSV}: leaves are not the 1000 ImageNet-1k wnids in class-index order")
    return tree


@functools.cache
def imagenet1k_distance_matrix(metric: str):
    """1000×1000 float64 distance matrix of the shipped tree for ``metric`` (``info``,
    ``depth_two_sided``, ``depth_one_sided``; rows = ground truth), cached and read-only."""
    from .distances import tree_distance_matrix

    matrix = tree_distance_matrix(imagenet1k_tree(), metric)
    matrix.setflags(write=False)
    return matrix


def build_imagenet1k_tree(wordnet=None) -> Tree:
    """Rebuild the ImageNet-1k tree from WordNet 3.0 (``wordnet``: a reader from ``load_wordnet``)."""
    from .wordnet import build_wordnet_tree

    return build_wordnet_tree(imagenet_wnids(), wordnet=wordnet)


def regenerate(path: str | Path = SHIPPED_NODES_CSV, wordnet=None) -> Path:
    """Rebuild from WordNet and write the nodes CSV to ``path`` (default: the shipped file)."""
    path = build_imagenet1k_tree(wordnet).write_csv(path)
    imagenet1k_tree.cache_clear()
    return path
