"""WordNet pre-check of OOD candidates (NINCO, Bitterwolf et al. 2023) on real WordNet 3.0, with the paper's examples."""

from __future__ import annotations

import pytest

from imagenet_suite.classes import index_of
from imagenet_suite.errors import HierarchyError, UnknownClass
from imagenet_suite.hierarchies.imagenet1k import imagenet1k_tree
from imagenet_suite.hierarchies.ood_precheck import PreChecker, precheck


@pytest.fixture(scope="module")
def checker() -> PreChecker:
    return PreChecker()


def by_class(frame) -> dict[int, str]:
    return dict(zip(frame.class_index, frame.relation))


def test_police_dog_is_close_to_german_shepherd_but_not_its_relative(checker):
    """The paper's example: police dog is neither parent nor child of German shepherd."""
    found = precheck(["police_dog.n.01"], checker=checker)
    shepherd = found[found.class_wnid == "n02106662"].iloc[0]
    assert (shepherd.relation, shepherd.via) == ("close_ancestor", "working_dog.n.01")
    assert (shepherd.candidate_steps, shepherd.class_steps) == (1, 2)
    assert set(found.relation) == {"close_ancestor"}


def test_alley_cat_flags_the_domestic_cats(checker):
    found = precheck(["alley_cat"], checker=checker)
    cats = {index_of(w) for w in ("n02123045", "n02123159", "n02123394", "n02123597", "n02124075")}
    assert set(found.class_index) == cats and set(found.via) == {"domestic_cat.n.01"}


def test_quesadilla_is_a_kind_of_burrito(checker):
    """Categorical contamination: WordNet puts quesadilla under the IN-1K class burrito."""
    found = precheck(["quesadilla"], checker=checker)
    assert by_class(found) == {index_of("n07880968"): "hyponym"}


def test_dog_is_a_hypernym_of_every_dog_class(checker):
    found = precheck(["n02084071"], checker=checker)
    hypernym_of = set(found[found.relation == "hypernym"].class_index)
    dog_subtree = set(imagenet1k_tree().classes_under("n02084071"))
    assert dog_subtree <= hypernym_of and len(dog_subtree) == 118
    assert found.candidate_synset.unique().tolist() == ["dog.n.01"]


def test_lemma_match_finds_both_cranes(checker):
    found = precheck(["crane"], checker=checker)
    cranes = {index_of("n02012849"), index_of("n03126707")}  # the bird and the machine
    assert cranes <= set(found.class_index)
    assert set(found[found.class_index.isin(cranes)].relation) <= {"same", "lemma"}
    assert (found.relation == "same").sum() == 2  # two noun senses of "crane" are the IN-1K synsets themselves


def test_unrelated_candidates_and_unknown_words(checker):
    assert precheck(["hayfield.n.01", "sky.n.01", "not_a_wordnet_word"], checker=checker).empty
    with pytest.raises(UnknownClass, match="n99999999"):
        precheck(["n99999999"], checker=checker)
    with pytest.raises(HierarchyError, match="max_steps must be >= 0"):
        checker.check("dog", max_steps=-1)


def test_max_steps_widens_the_close_ancestor_net(checker):
    narrow = precheck(["police_dog.n.01"], checker=checker, max_steps=1)
    wide = precheck(["police_dog.n.01"], checker=checker, max_steps=2)
    assert set(narrow.class_index) < set(wide.class_index)
    assert set(imagenet1k_tree().classes_under("n02084071")) <= set(wide.class_index)  # via dog.n.01
