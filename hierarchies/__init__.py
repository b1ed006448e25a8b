"""Class hierarchies for ImageNet: the WordNet tree, K-means hierarchies and their distance matrices.

Modules (import them directly; this package imports nothing heavy on its own):

* :mod:`.tree` — :class:`~.tree.Tree`: nodes, LCA queries, nodes-table import/export;
* :mod:`.wordnet` — WordNet 3.0 loading and the Bertinetto tree construction;
* :mod:`.imagenet1k` — the shipped ImageNet-1k tree (:func:`~.imagenet1k.imagenet1k_tree`);
* :mod:`.distances` — C×C ``info`` / ``depth_two_sided`` / ``depth_one_sided`` matrices;
* :mod:`.kmeans` — K-means latent hierarchy from per-class mean vectors;
* :mod:`.ood_precheck` — WordNet pre-check of candidate OOD classes;
* :mod:`.export` — write a hierarchy (table + .npy matrices) into a folder.

Scores computed *with* a hierarchy (LCA, top-k LCA, ELCA, LCA-on-the-line) are metrics and live in
:mod:`imagenet_suite.scoring` (``lca_scoring``, ``lca_on_the_line``).
"""
