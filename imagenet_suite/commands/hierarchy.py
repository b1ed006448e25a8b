"""``imagenet-suite hierarchy distance|regenerate-imagenet1k``: class-hierarchy lookups and the shipped tree.

``hierarchy distance A B`` prints the LCA of two classes (wnids or class indices) and their
distances in the ImageNet-1k WordNet tree shipped with the package (or in a nodes table given
with ``--nodes``). ``A`` is taken as the ground truth for the one-sided depth distance.

``hierarchy regenerate-imagenet1k [--out FILE]`` rebuilds the shipped tree
(``hierarchies/data/imagenet1k_wordnet_nodes.csv``) from WordNet 3.0 and prints the path it wrote.

Hierarchy *datasets* (nodes + distance matrices) are built by the builders:
``imagenet-suite build wordnet_hierarchy [--option wnids_file=FILE]`` and
``imagenet-suite build kmeans_hierarchy --option outputs=FILE --input DIR [--seed N]``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..errors import HierarchyError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "hierarchy",
        help="class hierarchies: LCA distances, the shipped ImageNet-1k tree",
        description="Class hierarchies: LCA distances between classes, and the regeneration "
        "of the shipped ImageNet-1k WordNet tree. Hierarchy datasets are built "
        "with `imagenet-suite build wordnet_hierarchy|kmeans_hierarchy`.",
    )
    commands = parser.add_subparsers(dest="hierarchy_command", required=True, metavar="SUBCOMMAND")
    _register_distance(commands)
    _register_regenerate(commands)


def _register_regenerate(commands) -> None:
    parser = commands.add_parser(
        "regenerate-imagenet1k",
        help="rebuild the shipped ImageNet-1k tree from WordNet 3.0 (prints the CSV's path)",
        description="Rebuild the ImageNet-1k WordNet tree (Bertinetto construction) from "
        "WordNet 3.0 and write its nodes table as CSV: by default the copy shipped "
        "with the package, which it reproduces byte for byte. Needs WordNet 3.0 "
        "(nltk_data, or Debian's wordnet-base). To build a tree for another class "
        "list as a dataset, use `imagenet-suite build wordnet_hierarchy --option "
        "wnids_file=FILE`.",
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help="CSV to write (default: the shipped hierarchies/data/imagenet1k_wordnet_nodes.csv)",
    )
    parser.add_argument(
        "--wordnet",
        type=Path,
        metavar="DIR",
        help="folder with WordNet 3.0's data.noun/index.noun (default: nltk_data, then /usr/share/wordnet)",
    )
    parser.set_defaults(func=run_regenerate)


def run_regenerate(args: argparse.Namespace) -> int:
    from imagenet_suite.hierarchies.imagenet1k import SHIPPED_NODES_CSV, regenerate
    from imagenet_suite.hierarchies.wordnet import load_wordnet

    if args.out is not None and args.out.is_dir():  # checked before the tree is built (seconds of work)
        raise HierarchyError(f"--out {args.out}: is a folder; expected the path of the CSV to write")
    print(regenerate(args.out or SHIPPED_NODES_CSV, wordnet=load_wordnet(args.wordnet)))
    return 0


def _register_distance(commands) -> None:
    parser = commands.add_parser(
        "distance",
        help="LCA and distances between two classes",
        description="LCA and info / depth distances between two classes of a tree. "
        "A is the ground truth for depth_one_sided.",
    )
    parser.add_argument("a", metavar="A", help="class wnid (n02110341) or class index (251)")
    parser.add_argument("b", metavar="B", help="class wnid or class index")
    parser.add_argument(
        "--nodes",
        type=Path,
        default=None,
        help="nodes table (.csv/.parquet, a folder with nodes.parquet, or a wordnet_hierarchy dataset folder); "
        "default: the shipped ImageNet-1k tree",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.set_defaults(func=run_distance)


def load_tree(nodes: Path | None):
    """The shipped ImageNet-1k tree, or the tree in a nodes table file/folder."""
    from imagenet_suite.hierarchies.imagenet1k import imagenet1k_tree
    from imagenet_suite.hierarchies.tree import Tree

    if nodes is None:
        return imagenet1k_tree()
    if (nodes / "build_info.json").is_file():  # a wordnet_hierarchy dataset folder
        from imagenet_suite.dataset.folder import DatasetFolder

        return Tree.from_nodes_table(DatasetFolder(nodes).read_table(None, "nodes"))
    path = nodes / "nodes.parquet" if nodes.is_dir() else nodes
    if not path.is_file():
        raise HierarchyError(
            f"--nodes {nodes}: no such file (expected a .csv/.parquet nodes table or a folder with nodes.parquet)"
        )
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return Tree.from_nodes_table(pq.read_table(path))
    return Tree.read_csv(path)


def describe(tree, a: str, b: str) -> dict:
    """LCA and the three distances between classes ``a`` (ground truth) and ``b``."""
    import math

    ia, ib = tree.class_index(a), tree.class_index(b)
    lca = tree.node(tree.lca(ia, ib))
    da, db = (tree.node(ia), tree.node(ib))
    return {
        "a": {"class_index": ia, "wnid": da.wnid, "name": da.name, "depth": da.depth},
        "b": {"class_index": ib, "wnid": db.wnid, "name": db.name, "depth": db.depth},
        "lca": {"wnid": lca.wnid, "name": lca.name, "depth": lca.depth, "num_leaves": lca.num_leaves},
        "info": math.log2(lca.num_leaves),
        "depth_two_sided": da.depth + db.depth - 2 * lca.depth,
        "depth_one_sided": da.depth - lca.depth,
    }


def run_distance(args: argparse.Namespace) -> int:
    result = describe(load_tree(args.nodes), args.a, args.b)
    if args.json:
        print(json.dumps(result))
        return 0
    for key in ("a", "b"):
        node = result[key]
        print(f"{key.upper()}: {node['wnid']} {node['name']} (class {node['class_index']}, depth {node['depth']})")
    lca = result["lca"]
    print(f"LCA: {lca['wnid']} {lca['name']} ({lca['num_leaves']} leaves, depth {lca['depth']})")
    print(f"info: {result['info']:.4f}")
    print(f"depth_two_sided: {result['depth_two_sided']}")
    print(f"depth_one_sided (A = ground truth): {result['depth_one_sided']}")
    return 0
