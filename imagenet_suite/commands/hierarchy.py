"""``imagenet-suite hierarchy``: class-hierarchy lookups.

``hierarchy distance A B`` prints the LCA of two classes (wnids or class indices) and their
distances in the ImageNet-1k WordNet tree shipped with the package (or in a nodes table given
with ``--nodes``). ``A`` is taken as the ground truth for the one-sided depth distance.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..errors import HierarchyError


def register(subparsers) -> None:
    parser = subparsers.add_parser("hierarchy", help="class hierarchies: LCA distances between classes",
                                   description="Class hierarchies (WordNet tree, K-means) and LCA distances.")
    commands = parser.add_subparsers(dest="hierarchy_command", required=True, metavar="SUBCOMMAND")
    _register_distance(commands)
    _register_build(commands)


def _register_build(commands) -> None:
    parser = commands.add_parser("build", help="build a WordNet or K-means hierarchy dataset (prints its folder last)",
                                 description="Build a hierarchy as a versioned dataset (nodes/classes table + "
                                             "distance matrices as .npy) through the builder framework.")
    kinds = parser.add_subparsers(dest="kind", required=True, metavar="KIND")
    wordnet = kinds.add_parser("wordnet", help="Bertinetto WordNet tree (needs WordNet 3.0)")
    wordnet.add_argument("--wnids", type=Path, help="class list, one wnid per line (default: ImageNet-1k)")
    kmeans = kinds.add_parser("kmeans", help="K-means hierarchy from a model's outputs on a labelled dataset")
    kmeans.add_argument("--outputs", type=Path, required=True, help=".npz/.pt with 'ids' and 'features' or 'logits'")
    kmeans.add_argument("--input", type=Path, required=True, help="the built labelled dataset the outputs are for")
    kmeans.add_argument("--config", default="", help="config of --input (default: its only config)")
    kmeans.add_argument("--split", default="", help="split of --input (default: its only split)")
    kmeans.add_argument("--seed", type=int, default=0)
    kmeans.add_argument("--nested", action="store_true", help="strict tree: cluster each level inside the previous")
    kmeans.add_argument("--present-classes", action="store_true",
                        help="hierarchy over the classes that occur in the data (default: every class of the label space)")
    for sub in (wordnet, kmeans):
        sub.add_argument("--out", type=Path, required=True, help="parent folder of the dataset folder")
        sub.add_argument("--no-progress", action="store_true")
        sub.set_defaults(func=run_build)


def run_build(args: argparse.Namespace) -> int:
    from imagenet_suite.build.runner import build_dataset

    if args.kind == "wordnet":
        options = {"wnids_file": str(args.wnids.resolve())} if args.wnids else {}
        folder = build_dataset("wordnet_hierarchy", args.out, options=options, progress=not args.no_progress)
    else:
        options = {"outputs": str(args.outputs.resolve()), "config": args.config, "split": args.split,
                   "nested": args.nested, "classes": "present" if args.present_classes else "all"}
        folder = build_dataset("kmeans_hierarchy", args.out, seed=args.seed, options=options, inputs=[args.input],
                               progress=not args.no_progress)
    print(folder.resolve())
    return 0


def _register_distance(commands) -> None:
    parser = commands.add_parser("distance", help="LCA and distances between two classes",
                                 description="LCA and info / depth distances between two classes of a tree. "
                                             "A is the ground truth for depth_one_sided.")
    parser.add_argument("a", metavar="A", help="class wnid (n02110341) or class index (251)")
    parser.add_argument("b", metavar="B", help="class wnid or class index")
    parser.add_argument("--nodes", type=Path, default=None,
                        help="nodes table (.csv/.parquet, a folder with nodes.parquet, or a wordnet_hierarchy dataset folder); "
                             "default: the shipped ImageNet-1k tree")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.set_defaults(func=run_distance)


def load_tree(nodes: Path | None):
    """The shipped ImageNet-1k tree, or the tree in a nodes table file/folder."""
    from imagenet_suite.hierarchies.imagenet1k import imagenet1k_tree
    from imagenet_suite.hierarchies.tree import Tree

    if nodes is None:
        return imagenet1k_tree()
    if (nodes / "build_info.json").is_file():  # a wordnet_hierarchy dataset folder
        from imagenet_suite.build.dataset_folder import DatasetFolder

        return Tree.from_nodes_table(DatasetFolder(nodes).read_table(None, "nodes"))
    path = nodes / "nodes.parquet" if nodes.is_dir() else nodes
    if not path.is_file():
        raise HierarchyError(f"--nodes {nodes}: no such file (expected a .csv/.parquet nodes table or a folder with nodes.parquet)")
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
    return {"a": {"class_index": ia, "wnid": da.wnid, "name": da.name, "depth": da.depth},
            "b": {"class_index": ib, "wnid": db.wnid, "name": db.name, "depth": db.depth},
            "lca": {"wnid": lca.wnid, "name": lca.name, "depth": lca.depth, "num_leaves": lca.num_leaves},
            "info": math.log2(lca.num_leaves), "depth_two_sided": da.depth + db.depth - 2 * lca.depth,
            "depth_one_sided": da.depth - lca.depth}


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
