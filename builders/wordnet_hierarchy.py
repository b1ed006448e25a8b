"""``wordnet_hierarchy``: the WordNet class tree (Bertinetto construction) as an HF dataset.

One row per node (``wnid``, ``name``, ``parent`` (null for the root), ``depth``, ``num_leaves``,
``class_index`` for leaves) in split ``nodes``, plus the C×C distance matrices
(``distance_info.npy``, ``distance_depth_two_sided.npy``, ``distance_depth_one_sided.npy``;
float64, rows = ground-truth class) beside the shards. The class set is ImageNet-1k by default,
or any list of WordNet 3.0 noun synsets given with ``--option wnids_file=FILE`` (one wnid per line,
in class-index order). WordNet 3.0 comes from nltk_data or Debian's ``wordnet-base``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from imagenet_suite import classes
from imagenet_suite.core.builder import Builder, BuilderConfig, Option, Prepared, Shard
from imagenet_suite.core.sources import ResolvedSource, SourceResolver, sha256_file
from imagenet_suite.errors import InvalidSourceData
from imagenet_suite.files import read_text

from ._citations import LCA_ON_THE_LINE, cite

NODES_SPLIT = "nodes"


def read_wnids_file(path: Path) -> list[str]:
    """Wnids of a class list file: one per line (``n01440764`` or ``n01440764 tench``), order kept."""
    if not path.is_file():
        raise InvalidSourceData(f"{path}: no such wnids file")
    text = read_text(path, "a class list, one wnid a line")
    wnids = [line.split()[0] for line in text.splitlines() if line.strip() and not line.startswith("#")]
    bad = [w for w in wnids if not (len(w) == 9 and w[0] == "n" and w[1:].isdigit())]
    if bad:
        raise InvalidSourceData(f"{path}: {bad[0]!r} is not a wnid (expected n + 8 digits, one per line)")
    if len(set(wnids)) != len(wnids) or not wnids:
        raise InvalidSourceData(f"{path}: expected a non-empty list of distinct wnids")
    return wnids


class WordnetHierarchy(Builder):
    NAME = "wordnet_hierarchy"
    VERSION = "1.0.0"
    RELEASE_NOTES = {
        "1.0.0": "Initial release: Bertinetto WordNet tree (3 edge fixes, root physical_entity.n.01, "
        "longest path with 28 recorded tie resolutions, unary pruning) and LCA distance matrices."
    }
    CONFIGS = (
        BuilderConfig(
            "default", "nodes of the class tree + distance matrices", shard_size=1_000_000, row_group_rows=100_000
        ),
    )
    OPTIONS = {"wnids_file": Option("", help="file with one wnid per line (default: the 1000 ImageNet-1k classes)")}
    KEY_COLUMN = "wnid"
    HOMEPAGE = "https://wordnet.princeton.edu/"
    LICENSE = "other"
    CITATION = cite(
        """@inproceedings{bertinetto2020making,
  title = {Making Better Mistakes: Leveraging Class Hierarchies with Deep Networks},
  author = {Bertinetto, Luca and Mueller, Romain and Tertikas, Konstantinos and Samangooei, Sina and Lord, Nicholas A.},
  booktitle = {Conference on Computer Vision and Pattern Recognition (CVPR)}, year = {2020},
  eprint = {1912.09393}, archivePrefix = {arXiv}}""",
        """@article{miller1995wordnet,
  title = {{WordNet}: A Lexical Database for {English}},
  author = {George A. Miller},
  journal = {Communications of the ACM},
  volume = {38}, number = {11}, pages = {39--41}, year = {1995}}""",
        LCA_ON_THE_LINE,
    )

    # the hierarchies (NumPy) are imported where they are used: ``imagenet-suite list``/``info`` import this
    # module for the builder's metadata only
    def features(self):
        from imagenet_suite.hierarchies import export

        return export.nodes_features()

    def prepare(self, resolver: SourceResolver) -> Prepared:
        from imagenet_suite.hierarchies.wordnet import build_wordnet_tree, load_wordnet

        sources = {}
        if self.options["wnids_file"]:
            path = Path(self.options["wnids_file"])
            wnids = read_wnids_file(path)
            sources["wnids_file"] = ResolvedSource("wnids_file", path, path.stat().st_size, sha256_file(path))
        else:
            wnids = list(classes.imagenet_wnids())
        wordnet = load_wordnet()
        data_noun = Path(wordnet.root.path) / "data.noun"
        sources["wordnet_data_noun"] = ResolvedSource(
            "wordnet_data_noun", data_noun, data_noun.stat().st_size, sha256_file(data_noun)
        )
        tree = build_wordnet_tree(wnids, wordnet=wordnet)
        return Prepared(sources, {"tree": tree})

    def split_keys(self, prepared: Prepared) -> dict[str, list[str]]:
        return {NODES_SPLIT: list(prepared.data["tree"].wnids)}

    def generate(self, prepared: Prepared, shard: Shard) -> Iterator[dict]:
        rows = {row["wnid"]: row for row in prepared.data["tree"].node_rows()}
        for wnid in shard.keys:
            yield rows[wnid]

    def extra_files(self, prepared: Prepared) -> dict[str, bytes]:
        from imagenet_suite.hierarchies import export

        return export.matrix_files(prepared.data["tree"])

    def card_context(self, prepared: Prepared) -> dict:
        tree = prepared.data["tree"]
        return {"num_nodes": f"{tree.num_nodes:,}", "num_classes": f"{tree.num_classes:,}", "root": tree.root}
