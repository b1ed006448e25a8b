"""Dependencies point down: every import inside imagenet-suite goes to a lower layer (or within its own
package), and no modules import each other in a cycle.

The layers, lowest first (DEVELOPERS.md draws the same map). A module may import any module of a
lower layer and of its own package; packages that share a layer are independent of each other.

  0  imagenet_suite (the package root: its version), errors, cards (templates)
  1  files, classes, seeding, reference,    hashing and durable writes, the ImageNet-1k label space, per-key RNGs;
     limits, cpus                            the papers' published per-model results (package data + loader); the
                                             bounds of the numbers that scale a run; the CPUs the process may use,
                                             the OpenMP environment
  2  images | forked                         image checks, decoding, encoding; work in forked processes
  3  dataset | perturbations | hierarchies   reading a built dataset folder (checked); corruptions; trees and distances
  4  core                                    the dataset-building framework; parsers of release files builders and review share
  5  scoring | testing                       metrics (LCA ones included), families, evaluation, summary, presentation;
                                             tiny datasets for examples
  6  review | inference                      FiftyOne review; running models over built datasets
  7  builders                                one module per dataset family
  8  commands                                one module per CLI command
  9  cli                                     the ``imagenet-suite`` entry point

The graph is read from the source (every ``import`` statement, also inside functions), not by
importing anything. Importing by name at run time (the builder registry's plugin discovery) is not
an edge.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import REPO_ROOT

PACKAGE_DIRS = {
    "imagenet_suite": REPO_ROOT / "imagenet_suite",
    "imagenet_suite.builders": REPO_ROOT / "builders",
    "imagenet_suite.hierarchies": REPO_ROOT / "hierarchies",
    "imagenet_suite.cards": REPO_ROOT / "cards",
}
LAYERS: dict[str, int] = {
    "imagenet_suite": 0,
    "imagenet_suite.errors": 0,
    "imagenet_suite.cards": 0,
    "imagenet_suite.files": 1,
    "imagenet_suite.classes": 1,
    "imagenet_suite.seeding": 1,
    "imagenet_suite.limits": 1,
    "imagenet_suite.reference": 1,
    "imagenet_suite.cpus": 1,
    "imagenet_suite.images": 2,
    "imagenet_suite.forked": 2,
    "imagenet_suite.dataset": 3,
    "imagenet_suite.perturbations": 3,
    "imagenet_suite.hierarchies": 3,
    "imagenet_suite.core": 4,
    "imagenet_suite.scoring": 5,
    "imagenet_suite.testing": 5,
    "imagenet_suite.review": 6,
    "imagenet_suite.inference": 6,
    "imagenet_suite.builders": 7,
    "imagenet_suite.commands": 8,
    "imagenet_suite.cli": 9,
}


def component(module: str) -> str:
    """The entry of :data:`LAYERS` a module belongs to (its longest matching prefix)."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in LAYERS:
            return ".".join(parts[:end])
    raise AssertionError(f"{module} is in no layer: add its package to LAYERS (and to DEVELOPERS.md)")


def modules() -> dict[str, Path]:
    """Every module of the project: dotted name -> file."""
    found = {}
    for package, folder in PACKAGE_DIRS.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def import_graph() -> dict[str, set[str]]:
    """module -> the project modules (or packages) it imports."""
    known = modules()
    graph: dict[str, set[str]] = {}
    for module, path in known.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                for alias in node.names:  # `from pkg import module` imports the module
                    targets.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
        graph[module] = {t for t in targets if t.startswith("imagenet_suite") and t != module}
    return graph


def wrong_way(graph: dict[str, set[str]]) -> list[str]:
    """Imports that go up a layer, or across to another package of the same layer."""
    found = []
    for module, targets in sorted(graph.items()):
        source = component(module)
        for target in sorted(targets):
            destination = component(target)
            up = LAYERS[destination] > LAYERS[source]
            across = LAYERS[destination] == LAYERS[source] and destination != source and LAYERS[source] > 0
            if up or across:
                found.append(f"{module} (layer {LAYERS[source]}) imports {target} (layer {LAYERS[destination]})")
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in graph:
                continue
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_every_import_points_down_or_within_its_package():
    assert wrong_way(import_graph()) == []


def test_no_import_cycles():
    graph = {m: {t for t in targets if t != m.rpartition(".")[0]} for m, targets in import_graph().items()}
    assert cycles(graph) == []


def test_the_checks_catch_a_reverse_import_and_a_cycle():
    graph = import_graph()
    graph["imagenet_suite.files"] = graph["imagenet_suite.files"] | {"imagenet_suite.scoring.evaluation.report"}
    graph["imagenet_suite.core.runner"] = graph["imagenet_suite.core.runner"] | {"imagenet_suite.review.rebuild"}
    graph["imagenet_suite.hierarchies.tree"] = graph["imagenet_suite.hierarchies.tree"] | {
        "imagenet_suite.dataset.folder"
    }
    assert wrong_way(graph) == [
        "imagenet_suite.core.runner (layer 4) imports imagenet_suite.review.rebuild (layer 6)",
        "imagenet_suite.files (layer 1) imports imagenet_suite.scoring.evaluation.report (layer 5)",
        "imagenet_suite.hierarchies.tree (layer 3) imports imagenet_suite.dataset.folder (layer 3)",
    ]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_module_is_in_a_layer():
    for module in modules():
        component(module)
