"""A rooted class tree: nodes with wnid, name, parent, children, depth and leaf count.

Contract of :class:`Tree`:

* node 0 is the root; every other node has exactly one parent; nodes are numbered in a
  canonical order (pre-order, children sorted by the smallest class index below them), so two
  trees with the same edges and classes are equal node for node;
* every leaf is a class and every class is a leaf; class ``i`` (the ``i``-th entry of
  ``class_wnids``, i.e. ImageNet class-index order for ImageNet-1k) is leaf node
  ``class_nodes[i]``;
* depth counts edges from the root (root depth 0); ``num_leaves`` of a leaf is 1.

The nodes table (:meth:`Tree.nodes_table`) has one row per node, in node order, with columns
``wnid`` (string), ``name`` (string), ``parent`` (wnid of the parent, null for the root),
``depth`` (int32), ``num_leaves`` (int32) and ``class_index`` (int32, null for internal nodes).
:meth:`Tree.from_nodes_table` reads it back (from pyarrow, pandas, or a list of row dicts);
``depth`` and ``num_leaves`` are recomputed and, when present, checked.
"""

from __future__ import annotations

import csv
import functools
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from imagenet_suite.errors import HierarchyError, UnknownClass
from imagenet_suite.files import read_text

NODE_COLUMNS = ("wnid", "name", "parent", "depth", "num_leaves", "class_index")


@dataclass(frozen=True)
class Node:
    """One node of a :class:`Tree` (a read-only view)."""

    index: int  # position in the tree's node order (root = 0)
    wnid: str
    name: str
    parent: str | None  # wnid of the parent, None for the root
    children: tuple[str, ...]  # wnids, in node order
    depth: int  # edges from the root
    num_leaves: int  # classes in the subtree (1 for a leaf)
    class_index: int | None  # None for internal nodes


class Tree:
    """A rooted tree whose leaves are exactly the classes; see the module docstring.

    Build one with :meth:`from_edges` (``(parent, child)`` wnid pairs) or
    :meth:`from_nodes_table`; :mod:`imagenet_suite.hierarchies.wordnet` builds WordNet trees.
    """

    def __init__(
        self, edges: Iterable[tuple[str, str]], class_wnids: Sequence[str], names: Mapping[str, str] | None = None
    ):
        """``edges``: (parent wnid, child wnid) pairs forming one rooted tree; ``class_wnids``:
        the leaves in class order; ``names``: wnid → readable name (default: the wnid)."""
        self.class_wnids: tuple[str, ...] = tuple(class_wnids)
        parent_of = _parent_map(edges)
        _check_classes(self.class_wnids, parent_of)
        order = _canonical_order(parent_of, self.class_wnids)
        self.wnids: tuple[str, ...] = tuple(order)
        self._index = {w: i for i, w in enumerate(order)}
        self.parents = np.array([self._index[parent_of[w]] if w in parent_of else -1 for w in order], dtype=np.int64)
        names = dict(names or {})
        self.names: tuple[str, ...] = tuple(str(names.get(w, w)) for w in order)
        self.class_nodes = np.array([self._index[w] for w in self.class_wnids], dtype=np.int64)
        self.depths = _depths(self.parents)
        self.num_leaves = _leaf_counts(self.parents, self.class_nodes)
        self._class_index = {w: i for i, w in enumerate(self.class_wnids)}

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def from_edges(
        cls, edges: Iterable[tuple[str, str]], class_wnids: Sequence[str], names: Mapping[str, str] | None = None
    ) -> Tree:
        return cls(edges, class_wnids, names)

    @classmethod
    def from_nodes_table(cls, table: Any) -> Tree:
        """Read a nodes table (pyarrow Table, pandas DataFrame or iterable of row dicts)."""
        rows = _rows_of(table)
        missing = [c for c in ("wnid", "name", "parent", "class_index") if rows and c not in rows[0]]
        if missing or not rows:
            raise HierarchyError(
                f"nodes table: missing column(s) {missing or list(NODE_COLUMNS)}; "
                f"expected at least wnid, name, parent, class_index"
            )
        edges = [(_text(r["parent"]), r["wnid"]) for r in rows if _text(r["parent"]) is not None]
        classes = _classes_from_rows(rows)
        tree = cls(edges, classes, {r["wnid"]: r["name"] for r in rows})
        tree._check_against_rows(rows)
        return tree

    @classmethod
    def read_csv(cls, path: str | Path) -> Tree:
        """Read a nodes table written by :meth:`write_csv`."""
        path = Path(path)
        if not path.is_file():
            raise HierarchyError(f"nodes table {path} does not exist")
        text = read_text(path, "a nodes table (CSV)", HierarchyError)
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
        if not rows or set(NODE_COLUMNS) - set(rows[0]):
            raise HierarchyError(f"{path}: expected a CSV with columns {list(NODE_COLUMNS)}")
        return cls.from_nodes_table(rows)

    # -- lookups ------------------------------------------------------------------------------
    @property
    def num_nodes(self) -> int:
        return len(self.wnids)

    @property
    def num_classes(self) -> int:
        return len(self.class_wnids)

    @property
    def root(self) -> str:
        return self.wnids[0]

    def class_index(self, key: str | int) -> int:
        """Class index of a class given as its index (int or digit string) or its wnid."""
        if isinstance(key, (int, np.integer)) or (isinstance(key, str) and key.strip().isdigit()):
            index = int(key)
            if not 0 <= index < self.num_classes:
                raise UnknownClass(
                    f"class index {index} is out of range: this hierarchy has {self.num_classes} classes (0..{self.num_classes - 1})"
                )
            return index
        try:
            return self._class_index[key]
        except KeyError as err:
            hint = " (it is an internal node, not a class)" if key in self._index else ""
            raise UnknownClass(
                f"{key!r} is not a class of this hierarchy{hint}; expected one of its {self.num_classes} class wnids or a class index"
            ) from err

    def node_index(self, key: str | int) -> int:
        """Node index of a node given by wnid, or of a class given by its class index."""
        if isinstance(key, str) and key in self._index:
            return self._index[key]
        if isinstance(key, str) and not key.strip().isdigit():
            raise UnknownClass(
                f"{key!r} is not a node of this hierarchy (expected a wnid such as {self.root!r} or a class index)"
            )
        return int(self.class_nodes[self.class_index(key)])

    def node(self, key: str | int) -> Node:
        """The :class:`Node` for a wnid (any node) or a class index."""
        i = self.node_index(key)
        parent = int(self.parents[i])
        class_index = np.flatnonzero(self.class_nodes == i)
        return Node(
            index=i,
            wnid=self.wnids[i],
            name=self.names[i],
            parent=self.wnids[parent] if parent >= 0 else None,
            children=tuple(self.wnids[c] for c in self._children[i]),
            depth=int(self.depths[i]),
            num_leaves=int(self.num_leaves[i]),
            class_index=int(class_index[0]) if class_index.size else None,
        )

    def children(self, key: str | int) -> tuple[str, ...]:
        return self.node(key).children

    def ancestors(self, key: str | int) -> tuple[str, ...]:
        """Wnids from the node itself up to the root (inclusive)."""
        i, path = self.node_index(key), []
        while i >= 0:
            path.append(self.wnids[i])
            i = int(self.parents[i])
        return tuple(path)

    def classes_under(self, key: str | int) -> tuple[int, ...]:
        """Class indices of the leaves in a node's subtree, ascending."""
        i = self.node_index(key)
        mask = (self.paths == i).any(axis=1)
        return tuple(int(c) for c in np.flatnonzero(mask))

    def lca(self, a: str | int, b: str | int) -> str:
        """Wnid of the lowest common ancestor of two nodes (wnids) or classes (indices)."""
        ia, ib = self.node_index(a), self.node_index(b)
        ancestors_a = set()
        while ia >= 0:
            ancestors_a.add(ia)
            ia = int(self.parents[ia])
        while ib not in ancestors_a:
            ib = int(self.parents[ib])
        return self.wnids[ib]

    def lca_nodes(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Vectorised LCA: node indices of lca(class a[i], class b[i]); a and b broadcast."""
        a = np.asarray(a, dtype=np.int64)
        return self.paths[a, self.lca_depths(a, b)]

    def lca_depths(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Vectorised depth of lca(class a[i], class b[i]) (root = 0); a and b broadcast."""
        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        self._check_class_array(a, "a")
        self._check_class_array(b, "b")
        common = np.zeros(np.broadcast_shapes(a.shape, b.shape), dtype=np.int64)
        for column in self.paths.T[1:]:  # depth-0 entries are all the root; matches form a prefix
            at_a = column[a]
            common += (at_a == column[b]) & (at_a >= 0)
        return common

    @functools.cached_property
    def paths(self) -> np.ndarray:
        """[C, max_depth + 1] node indices from the root down to each class leaf, padded with -1."""
        paths = np.full((self.num_classes, int(self.depths.max()) + 1), -1, dtype=np.int64)
        for c, node in enumerate(self.class_nodes):
            i = int(node)
            while i >= 0:
                paths[c, self.depths[i]] = i
                i = int(self.parents[i])
        return paths

    @functools.cached_property
    def _children(self) -> list[list[int]]:
        children: list[list[int]] = [[] for _ in self.wnids]
        for child, parent in enumerate(self.parents):
            if parent >= 0:
                children[parent].append(child)
        return children

    def edges(self) -> list[tuple[str, str]]:
        """(parent wnid, child wnid) pairs in node order of the child."""
        return [(self.wnids[p], self.wnids[c]) for c, p in enumerate(self.parents) if p >= 0]

    def leaf_depth_histogram(self) -> dict[int, int]:
        """{depth: number of classes at that depth}, ascending depth."""
        depths, counts = np.unique(self.depths[self.class_nodes], return_counts=True)
        return {int(d): int(n) for d, n in zip(depths, counts)}

    # -- export -------------------------------------------------------------------------------
    def node_rows(self) -> list[dict[str, Any]]:
        """One dict per node, in node order, with the columns of the nodes table."""
        class_of = {int(n): c for c, n in enumerate(self.class_nodes)}
        return [
            {
                "wnid": w,
                "name": self.names[i],
                "parent": self.wnids[self.parents[i]] if self.parents[i] >= 0 else None,
                "depth": int(self.depths[i]),
                "num_leaves": int(self.num_leaves[i]),
                "class_index": class_of.get(i),
            }
            for i, w in enumerate(self.wnids)
        ]

    def nodes_table(self):
        """The nodes table as a ``pyarrow.Table`` (schema: see the module docstring)."""
        import pyarrow as pa

        rows = self.node_rows()
        schema = pa.schema(
            [
                ("wnid", pa.string()),
                ("name", pa.string()),
                ("parent", pa.string()),
                ("depth", pa.int32()),
                ("num_leaves", pa.int32()),
                ("class_index", pa.int32()),
            ]
        )
        return pa.Table.from_pylist(rows, schema=schema)

    def write_csv(self, path: str | Path) -> Path:
        """Write the nodes table as UTF-8 CSV (null = empty field); returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=NODE_COLUMNS, lineterminator="\n")
            writer.writeheader()
            for row in self.node_rows():
                writer.writerow({k: "" if v is None else v for k, v in row.items()})
        return path

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tree) and self.node_rows() == other.node_rows()

    def __hash__(self) -> int:
        return hash((self.wnids, self.class_wnids))

    def __repr__(self) -> str:
        return f"Tree(root={self.root!r}, nodes={self.num_nodes}, classes={self.num_classes})"

    # -- internal -----------------------------------------------------------------------------
    def _check_class_array(self, values: np.ndarray, name: str) -> None:
        if values.size and (values.min() < 0 or values.max() >= self.num_classes):
            raise UnknownClass(
                f"{name}: class indices must lie in 0..{self.num_classes - 1}, got {values.min()}..{values.max()}"
            )

    def _check_against_rows(self, rows: list[dict]) -> None:
        by_wnid = {r["wnid"]: r for r in rows}
        for i, w in enumerate(self.wnids):
            for column, value in (("depth", self.depths[i]), ("num_leaves", self.num_leaves[i])):
                given = by_wnid[w].get(column)
                if _text(given) is not None and int(given) != int(value):
                    raise HierarchyError(f"nodes table: row {w!r} has {column}={given}, but the parents imply {value}")


def _parent_map(edges: Iterable[tuple[str, str]]) -> dict[str, str]:
    parent_of: dict[str, str] = {}
    for parent, child in edges:
        if parent == child:
            raise HierarchyError(f"not a tree: {child!r} is its own parent")
        if child in parent_of and parent_of[child] != parent:
            raise HierarchyError(f"not a tree: {child!r} has two parents, {parent_of[child]!r} and {parent!r}")
        parent_of[child] = parent
    roots = {p for p in parent_of.values() if p not in parent_of}
    if len(roots) != 1:
        raise HierarchyError(f"not a tree: expected exactly one root, found {sorted(roots)[:5]}")
    return parent_of


def _check_classes(classes: tuple[str, ...], parent_of: dict[str, str]) -> None:
    if not classes:
        raise HierarchyError("a hierarchy needs at least one class")
    if len(set(classes)) != len(classes):
        duplicates = sorted({w for w in classes if classes.count(w) > 1})
        raise HierarchyError(f"class wnids must be unique; repeated: {duplicates[:5]}")
    has_children = set(parent_of.values())
    internal = [w for w in classes if w in has_children]
    if internal:
        raise HierarchyError(f"classes must be leaves, but {internal[:5]} have children")
    nodes = set(parent_of) | has_children
    absent = [w for w in classes if w not in nodes]
    if absent:
        raise HierarchyError(f"classes {absent[:5]} are not in the tree's edges")
    leaves = sorted(set(parent_of) - has_children - set(classes))
    if leaves:
        raise HierarchyError(f"every leaf must be a class, but {leaves[:5]} are leaves that are not classes")


def _canonical_order(parent_of: dict[str, str], classes: tuple[str, ...]) -> list[str]:
    """Pre-order from the root, children sorted by the smallest class index in their subtree."""
    first_class: dict[str, int] = {}
    for c, wnid in enumerate(classes):
        node = wnid
        while node is not None and first_class.get(node, c + 1) > c:
            first_class[node] = c
            node = parent_of.get(node)
    children: dict[str, list[str]] = {}
    for child, parent in parent_of.items():
        children.setdefault(parent, []).append(child)
    root = next(p for p in parent_of.values() if p not in parent_of)
    order, stack = [], [root]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(sorted(children.get(node, []), key=lambda w: first_class[w], reverse=True))
    if len(order) != len(set(parent_of) | {root}):
        raise HierarchyError("not a tree: some nodes are not reachable from the root (a cycle?)")
    return order


def _depths(parents: np.ndarray) -> np.ndarray:
    depths = np.zeros(len(parents), dtype=np.int64)
    for i in range(1, len(parents)):  # canonical order: a parent precedes its children
        depths[i] = depths[parents[i]] + 1
    return depths


def _leaf_counts(parents: np.ndarray, class_nodes: np.ndarray) -> np.ndarray:
    counts = np.zeros(len(parents), dtype=np.int64)
    counts[class_nodes] = 1
    for i in range(len(parents) - 1, 0, -1):  # children after parents: accumulate bottom-up
        counts[parents[i]] += counts[i]
    return counts


def _rows_of(table: Any) -> list[dict]:
    if hasattr(table, "to_pylist"):
        return table.to_pylist()
    if hasattr(table, "to_dict") and hasattr(table, "columns"):
        return table.to_dict(orient="records")
    return [dict(r) for r in table]


def _text(value: Any) -> str | None:
    """Null-like values (None, NaN, empty string) → None; anything else → str."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    value = str(value)
    return value if value != "" else None


def _classes_from_rows(rows: list[dict]) -> list[str]:
    indexed = sorted(
        (int(float(_text(r["class_index"]))), r["wnid"]) for r in rows if _text(r["class_index"]) is not None
    )
    if [i for i, _ in indexed] != list(range(len(indexed))):
        raise HierarchyError("nodes table: class_index must run 0..C-1 without gaps or repeats")
    return [w for _, w in indexed]
