"""``imagenet-suite hierarchy distance A B``."""

from __future__ import annotations

import json

import pytest

from imagenet_suite.cli import main
from imagenet_suite.hierarchies.export import write_hierarchy
from imagenet_suite.hierarchies.tree import Tree


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["hierarchy", "distance", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_distance_text_for_dalmatian_and_husky(capsys):
    code, out, _ = run(capsys, "251", "n02110185")
    assert code == 0
    assert out.splitlines() == [
        "A: n02110341 dalmatian.n.02 (class 251, depth 11)",
        "B: n02110185 siberian_husky.n.01 (class 250, depth 13)",
        "LCA: n02084071 dog.n.01 (118 leaves, depth 10)",
        "info: 6.8826",
        "depth_two_sided: 4",
        "depth_one_sided (A = ground truth): 1",
    ]


@pytest.mark.parametrize(
    "a, b, info, two, one",
    [("0", "999", 9.9658, 13, 10), ("999", "0", 9.9658, 13, 3), ("n01518878", "n02007558", 5.8826, 4, 1)],
)  # ostrich / flamingo
def test_distance_json(capsys, a, b, info, two, one):
    code, out, _ = run(capsys, a, b, "--json")
    result = json.loads(out)
    assert code == 0
    assert (round(result["info"], 4), result["depth_two_sided"], result["depth_one_sided"]) == (info, two, one)


def test_distance_with_an_exported_nodes_table(capsys, tmp_path):
    tree = Tree.from_edges([("r", "x"), ("r", "c2"), ("x", "c0"), ("x", "c1")], ["c0", "c1", "c2"])
    write_hierarchy(tree, tmp_path)
    code, out, _ = run(capsys, "c0", "2", "--nodes", str(tmp_path), "--json")
    assert code == 0 and json.loads(out)["lca"]["wnid"] == "r" and json.loads(out)["depth_one_sided"] == 2
    code, out, _ = run(capsys, "0", "1", "--nodes", str(tree.write_csv(tmp_path / "nodes.csv")), "--json")
    assert code == 0 and json.loads(out)["lca"]["wnid"] == "x"


@pytest.mark.parametrize(
    "argv, message",
    [
        (("n99999999", "3"), "'n99999999' is not a class of this hierarchy"),
        (("0", "1000"), "class index 1000 is out of range"),
        (("n02084071", "3"), "internal node, not a class"),
        (("0", "1", "--nodes", "/nonexistent/nodes.csv"), "no such file"),
    ],
)
def test_distance_errors_are_one_line_exit_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1
