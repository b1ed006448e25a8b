"""Tree structure, LCA queries, nodes-table round trips, and the shipped ImageNet-1k tree (LCA-on-the-Line's)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from imagenet_suite.classes import imagenet_wnids
from imagenet_suite.errors import HierarchyError, ImagenetSuiteError, UnknownClass
from imagenet_suite.hierarchies.imagenet1k import imagenet1k_tree
from imagenet_suite.hierarchies.tree import Tree

#      r
#    /   \
#   x     y
#  / \   / \
# c2 c0 c1  z
#          / \
#         c3  c4
EDGES = [("r", "x"), ("r", "y"), ("x", "c2"), ("x", "c0"), ("y", "c1"), ("y", "z"), ("z", "c3"), ("z", "c4")]
CLASSES = ["c0", "c1", "c2", "c3", "c4"]


@pytest.fixture()
def small() -> Tree:
    return Tree.from_edges(EDGES, CLASSES, {"r": "root", "x": "ex"})


def test_small_tree_structure(small):
    assert small.num_nodes == 9 and small.num_classes == 5 and small.root == "r"
    assert small.node("x").children == ("c0", "c2")  # children ordered by smallest class index
    assert [small.wnids[n] for n in small.class_nodes] == CLASSES
    assert small.node("z").depth == 2 and small.node("c3").depth == 3
    assert small.node("y").num_leaves == 3 and small.node("r").num_leaves == 5
    assert small.node(2) == small.node("c2") and small.node("c2").class_index == 2
    assert small.node("x").name == "ex" and small.node("c0").name == "c0"
    assert small.ancestors("c4") == ("c4", "z", "y", "r")
    assert small.classes_under("y") == (1, 3, 4)
    assert small.leaf_depth_histogram() == {2: 3, 3: 2}


def test_small_tree_lca(small):
    assert small.lca(0, 2) == "x"
    assert small.lca("c3", "c1") == "y"
    assert small.lca(3, 4) == "z"
    assert small.lca(0, 4) == "r"
    assert small.lca(1, 1) == "c1"
    a, b = np.meshgrid(np.arange(5), np.arange(5), indexing="ij")
    nodes = small.lca_nodes(a, b)
    expected = [[small.node_index(small.lca(i, j)) for j in range(5)] for i in range(5)]
    assert nodes.tolist() == expected


def test_node_order_is_canonical_whatever_the_edge_order(small):
    shuffled = Tree.from_edges(list(reversed(EDGES)), CLASSES, {"r": "root", "x": "ex"})
    assert shuffled == small
    assert shuffled.wnids == small.wnids


@pytest.mark.parametrize(
    "edges, classes, message",
    [
        ([("a", "b"), ("c", "b")], ["b"], "two parents"),
        ([("r", "a"), ("s", "b")], ["a", "b"], "exactly one root"),
        ([("r", "a"), ("a", "b")], ["a", "b"], "classes must be leaves"),
        ([("r", "a"), ("r", "b")], ["a"], "every leaf must be a class"),
        ([("r", "a"), ("r", "b")], ["a", "a"], "unique"),
    ],
)
def test_invalid_trees_are_clear_errors(edges, classes, message):
    with pytest.raises(HierarchyError, match=message):
        Tree.from_edges(edges, classes)


def test_unknown_classes_and_nodes(small):
    with pytest.raises(UnknownClass, match="'nope' is not a node"):
        small.node("nope")
    with pytest.raises(UnknownClass, match="out of range"):
        small.class_index(5)
    with pytest.raises(UnknownClass, match="internal node"):
        small.class_index("y")
    with pytest.raises(UnknownClass, match="class indices must lie in 0..4"):
        small.lca_nodes(np.array([0]), np.array([7]))
    assert issubclass(UnknownClass, ImagenetSuiteError)


def test_nodes_table_round_trips(small, tmp_path):
    table = small.nodes_table()
    assert table.column_names == ["wnid", "name", "parent", "depth", "num_leaves", "class_index"]
    assert table.column("parent").null_count == 1 and table.column("class_index").null_count == 4
    assert Tree.from_nodes_table(table) == small
    assert Tree.from_nodes_table(table.to_pandas()) == small
    assert Tree.read_csv(small.write_csv(tmp_path / "nodes.csv")) == small


def test_nodes_table_with_inconsistent_counts_is_rejected(small):
    rows = small.node_rows()
    rows[0]["num_leaves"] = 4
    with pytest.raises(HierarchyError, match="num_leaves=4"):
        Tree.from_nodes_table(rows)
    rows = small.node_rows()
    rows[-1]["class_index"] = 9
    with pytest.raises(HierarchyError, match="class_index must run 0..C-1"):
        Tree.from_nodes_table(rows)


def test_nodes_table_missing_columns():
    with pytest.raises(HierarchyError, match="missing column"):
        Tree.from_nodes_table(pd.DataFrame({"wnid": ["a"], "name": ["a"]}))


# -- the shipped ImageNet-1k tree: imagenet_fiveai.csv of LCA-on-the-Line-------------------------------
def test_shipped_tree_size_and_leaf_order():
    tree = imagenet1k_tree()
    assert tree.num_nodes == 1372
    assert len(tree.edges()) == 1371
    assert tree.class_wnids == imagenet_wnids()  # leaves in class-index order
    leaves = [i for i in range(tree.num_nodes) if not tree.node(tree.wnids[i]).children]
    assert len(leaves) == 1000 and sorted(leaves) == sorted(tree.class_nodes.tolist())


def test_shipped_tree_statistics():
    tree = imagenet1k_tree()
    assert tree.root == "n00001930" and tree.node(tree.root).name == "physical_entity.n.01"
    root_children = [(tree.node(c).name, tree.node(c).num_leaves) for c in tree.children(tree.root)]
    assert sorted(root_children) == [("matter.n.03", 39), ("object.n.01", 961)]
    child_counts = [len(tree.children(w)) for w in tree.wnids if tree.children(w)]
    assert len(child_counts) == 372  # internal nodes
    assert min(child_counts) >= 2  # no unary internal node
    assert max(child_counts) == 26
    expected_histogram = {
        3: 12,
        4: 15,
        5: 53,
        6: 91,
        7: 163,
        8: 183,
        9: 176,
        10: 106,
        11: 78,
        12: 36,
        13: 52,
        14: 33,
        15: 2,
    }
    assert tree.leaf_depth_histogram() == expected_histogram
    assert tree.depths[tree.class_nodes].mean() == pytest.approx(8.614, abs=5e-4)
