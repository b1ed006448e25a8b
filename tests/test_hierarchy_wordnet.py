"""The WordNet builder against real WordNet 3.0 (Debian wordnet-base or nltk_data), Bertinetto et al. 2020's construction."""

from __future__ import annotations

import pytest

from imagenet_suite.classes import imagenet_wnids
from imagenet_suite.errors import HierarchyError, UnknownClass, WordNetMissing
from imagenet_suite.hierarchies import wordnet as wordnet_module
from imagenet_suite.hierarchies.imagenet1k import SHIPPED_NODES_CSV, build_imagenet1k_tree, imagenet1k_tree
from imagenet_suite.hierarchies.tree import Tree
from imagenet_suite.hierarchies.wordnet import (
    EDGE_FIXES,
    TIE_RESOLUTIONS,
    build_wordnet_tree,
    count_longest_paths,
    hypernym_wnids,
    load_wordnet,
    synset_of,
)


@pytest.fixture(scope="module")
def wn():
    """Real WordNet 3.0; fails (with install instructions) when it is not installed."""
    return load_wordnet()


@pytest.fixture(scope="module")
def rebuilt(wn) -> Tree:
    return build_imagenet1k_tree(wn)


def test_wordnet_is_version_3_0(wn):
    assert wn.get_version() == "3.0"
    assert synset_of(wn, "n02084071").name() == "dog.n.01"
    assert synset_of(wn, "dog.n.01").offset() == 2084071


def test_shipped_tree_equals_a_fresh_rebuild(rebuilt, tmp_path):
    assert rebuilt == imagenet1k_tree()
    # byte-identical file: the shipped CSV is exactly what the regeneration writes
    assert rebuilt.write_csv(tmp_path / "nodes.csv").read_bytes() == SHIPPED_NODES_CSV.read_bytes()


def test_rebuilt_tree_has_the_reference_shape(rebuilt):
    assert rebuilt.num_nodes == 1372 and rebuilt.class_wnids == imagenet_wnids()
    assert rebuilt.leaf_depth_histogram() == {
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


def test_exactly_the_28_tabled_classes_have_tied_longest_paths(wn):
    counts = count_longest_paths(wn, imagenet_wnids())
    tied = {w for w, n in counts.items() if n > 1}
    assert len(TIE_RESOLUTIONS) == 28
    assert tied == set(TIE_RESOLUTIONS)


def test_tie_table_decides_the_tree(wn, rebuilt):
    """Without the table, the per-node smallest-wnid fallback builds a different tree."""
    untabled = build_wordnet_tree(imagenet_wnids(), wordnet=wn, tie_resolutions={})
    assert untabled.num_classes == 1000
    assert set(untabled.edges()) != set(rebuilt.edges())
    for leaf, path in TIE_RESOLUTIONS.items():  # every tabled path survives (up to pruned unary nodes)
        assert set(rebuilt.ancestors(leaf)) <= set(path)


def test_edge_fixes_are_applied(wn, rebuilt):
    for old_parent, child, new_parent in EDGE_FIXES:
        wordnet_parents = [f"n{s.offset():08d}" for s in synset_of(wn, child).hypernyms()]
        assert old_parent in wordnet_parents  # the edge WordNet has ...
        parents = hypernym_wnids(wn, child)
        assert new_parent in parents and old_parent not in parents  # ... is replaced
    assert rebuilt.node("n06794110").parent == "n04217882"  # street sign under signboard
    assert rebuilt.node("n06874185").parent == "n04217882"  # traffic light under signboard


def test_builder_on_another_synset_set(wn):
    """Any noun synsets (here not all ImageNet-1k), in the caller's order; unary chains are pruned."""
    wnids = [
        "n02110341",
        "n02106854",
        "n02123045",
        "n04335435",
        "n08570634",
    ]  # dalmatian, police dog, tabby, streetcar, hayfield
    tree = build_wordnet_tree(wnids, wordnet=wn)
    assert tree.class_wnids == tuple(wnids)
    assert all(len(tree.children(w)) >= 2 for w in tree.wnids if tree.children(w) and w != tree.root)
    assert tree.node(tree.lca("n02110341", "n02106854")).name == "dog.n.01"
    assert tree.node(tree.lca(0, 2)).name == "carnivore.n.01"
    assert tree.node(tree.lca(0, 3)).name == "whole.n.02"
    internal = {tree.node(w).name for w in tree.wnids if tree.children(w)}
    assert internal == {"physical_entity.n.01", "object.n.01", "whole.n.02", "carnivore.n.01", "dog.n.01"}
    assert tree.node("n08570634").parent == "n00002684"  # hayfield's unary chain up to object is pruned


def test_class_that_is_an_ancestor_of_another_is_an_error(wn):
    with pytest.raises(HierarchyError, match="n02084071 is a hypernym of"):
        build_wordnet_tree(["n02110341", "n02084071", "n01440764"], wordnet=wn)  # dalmatian, dog, tench


def test_unknown_synset_is_an_error(wn):
    with pytest.raises(UnknownClass, match="n99999999"):
        build_wordnet_tree(["n02110341", "n99999999"], wordnet=wn)
    with pytest.raises(UnknownClass, match="not_a_word.n.01"):
        synset_of(wn, "not_a_word.n.01")


def test_class_without_path_to_root_is_an_error(wn):
    with pytest.raises(HierarchyError, match="no hypernym path to the root"):
        build_wordnet_tree(["n02110341", "n05996646"], wordnet=wn)  # dalmatian, discipline (an abstraction)


def test_missing_wordnet_says_how_to_install(tmp_path):
    with pytest.raises(WordNetMissing, match="apt-get install wordnet-base") as error:
        load_wordnet(search_nltk_data=False, debian_dir=tmp_path / "nowhere", staging_dir=tmp_path / "stage")
    assert "nltk.downloader wordnet" in str(error.value)
    with pytest.raises(WordNetMissing, match="has no data.noun"):
        load_wordnet(tmp_path / "empty")


def test_debian_files_are_staged_with_the_three_workarounds(tmp_path):
    """Reading a Debian-layout folder copies it, writes lexnames, and skips index.sense."""
    source = wordnet_module.DEBIAN_WORDNET_DIR
    if not (source / "data.noun").is_file():
        pytest.fail(f"Debian wordnet-base is not installed at {source}: apt-get install wordnet-base")
    reader = load_wordnet(source, staging_dir=tmp_path / "nltk_data")
    staged = tmp_path / "nltk_data" / "corpora" / "wordnet"
    assert (staged / "data.noun").is_file() and not (staged / "data.noun").is_symlink()
    lexnames = (staged / "lexnames").read_text().splitlines()
    assert len(lexnames) == 45 and lexnames[5] == "05\tnoun.animal\t1"
    assert not (staged / "index.sense").exists()
    assert reader.get_version() == "3.0"
    assert synset_of(reader, "n02110341").lexname() == "noun.animal"
