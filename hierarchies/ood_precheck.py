"""WordNet pre-check of candidate OOD classes against ImageNet-1k (NINCO, Bitterwolf et al. 2023, Sec. 3.1).

Before their manual review, the NINCO authors checked each candidate OOD class against the
IN-1K synsets: a candidate is suspect when its name matches a lemma of an IN-1K class, when its
synset is a hypernym or hyponym of an IN-1K synset, or when the two share a close ancestor (the
paper's *police dog* vs *German shepherd*: neither is an ancestor of the other). The flags only
prioritise review — the paper shows automatic WordNet filtering is not enough.

:func:`precheck` returns one :class:`Finding` per (candidate synset, IN-1K class) pair that is
flagged, with ``relation`` one of:

* ``same`` — the candidate synset *is* the IN-1K class;
* ``lemma`` — a lemma of the candidate equals a lemma of the class (case/underscore-insensitive),
  or, for a plain-word candidate, the word does;
* ``hypernym`` — the candidate is an ancestor of the class (the class is a kind of candidate);
* ``hyponym`` — the candidate is a descendant of the class (a candidate is a kind of the class:
  categorical contamination);
* ``close_ancestor`` — neither is an ancestor of the other, but they share an ancestor at most
  ``max_steps`` is-a edges above the candidate (default 1: the candidate's parent, so every IN-1K
  class below a sibling of the candidate is flagged — *police dog* → all 118 dog classes).

Ancestry uses WordNet's full is-a DAG (hypernyms + instance hypernyms), all paths, no tree pruning.

:func:`precheck_summary` gives each candidate a **verdict** (``imagenet-suite review precheck``):
``categorical suspect`` (a ``same``, ``lemma``, ``hypernym`` or ``hyponym`` finding: the candidate may
be categorically ID), ``close relative`` (only ``close_ancestor`` findings: watch for look-alikes) or
``no match``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from imagenet_suite.errors import HierarchyError

from .wordnet import load_wordnet, synset_of, wnid_of

RELATIONS = ("same", "lemma", "hypernym", "hyponym", "close_ancestor")
DEFAULT_MAX_STEPS = 1
CATEGORICAL_RELATIONS = ("same", "lemma", "hypernym", "hyponym")
VERDICTS = ("categorical suspect", "close relative", "no match")


@dataclass(frozen=True)
class Finding:
    candidate: str  # the candidate as given
    candidate_synset: str  # its synset name ("police_dog.n.01"); "" for an unknown word
    class_index: int  # ImageNet-1k class index
    class_wnid: str
    class_name: str  # the class synset's first lemma
    relation: str  # one of RELATIONS
    via: str  # shared ancestor (close_ancestor) or matching lemma (lemma); "" otherwise
    candidate_steps: int  # is-a edges from the candidate up to where the two meet
    class_steps: int  # is-a edges from the class up to where the two meet


def _normalize(word: str) -> str:
    return word.strip().lower().replace(" ", "_").replace("-", "_")


def _ancestor_steps(synset) -> dict[str, int]:
    """{ancestor wnid: fewest is-a edges up to it}, including the synset itself at 0."""
    steps, frontier, depth = {wnid_of(synset): 0}, [synset], 0
    while frontier:
        depth += 1
        parents = [p for s in frontier for p in s.hypernyms() + s.instance_hypernyms()]
        frontier = []
        for parent in parents:
            if wnid_of(parent) not in steps:
                steps[wnid_of(parent)] = depth
                frontier.append(parent)
    return steps


class PreChecker:
    """Holds the IN-1K synsets and their ancestors; :meth:`check` one candidate at a time."""

    def __init__(self, wordnet=None, class_wnids: Sequence[str] | None = None):
        from imagenet_suite.classes import imagenet_wnids

        self.wordnet = wordnet if wordnet is not None else load_wordnet()
        self.class_wnids = tuple(class_wnids) if class_wnids is not None else imagenet_wnids()
        synsets = [synset_of(self.wordnet, w) for w in self.class_wnids]
        self.class_names = tuple(s.lemma_names()[0] for s in synsets)
        self.ancestors = [_ancestor_steps(s) for s in synsets]
        self.lemmas: dict[str, list[int]] = {}
        for index, synset in enumerate(synsets):
            for lemma in synset.lemma_names():
                self.lemmas.setdefault(_normalize(lemma), []).append(index)

    def candidate_synsets(self, candidate: str) -> list:
        """A wnid or synset name → that synset; a plain word → all its noun senses (maybe none)."""
        if "." in candidate or (len(candidate) == 9 and candidate[0] == "n" and candidate[1:].isdigit()):
            return [synset_of(self.wordnet, candidate)]
        return self.wordnet.synsets(_normalize(candidate), pos="n")

    def check(self, candidate: str, max_steps: int = DEFAULT_MAX_STEPS) -> list[Finding]:
        """Findings for one candidate (see the module docstring), strongest relation per class."""
        if max_steps < 0:
            raise HierarchyError(f"max_steps must be >= 0, got {max_steps}")
        synsets = self.candidate_synsets(candidate)
        findings = [] if synsets else self._lemma_findings(candidate, "", [_normalize(candidate)])
        for synset in synsets:
            findings += self._synset_findings(candidate, synset, max_steps)
        return findings

    def _lemma_findings(self, candidate: str, synset_name: str, lemmas: Iterable[str]) -> list[Finding]:
        hits: dict[int, str] = {}
        for lemma in lemmas:
            for index in self.lemmas.get(_normalize(lemma), []):
                hits.setdefault(index, _normalize(lemma))
        return [self._finding(candidate, synset_name, i, "lemma", lemma, 0, 0) for i, lemma in sorted(hits.items())]

    def _synset_findings(self, candidate: str, synset, max_steps: int) -> list[Finding]:
        own = _ancestor_steps(synset)
        wnid, name = wnid_of(synset), synset.name()
        lemma_hits = {f.class_index: f for f in self._lemma_findings(candidate, name, synset.lemma_names())}
        findings = []
        for index, class_ancestors in enumerate(self.ancestors):
            finding = self._relation(candidate, name, wnid, index, own, class_ancestors, max_steps) or lemma_hits.get(
                index
            )
            if finding is not None:
                findings.append(finding)
        return findings

    def _relation(self, candidate, name, wnid, index, own, class_ancestors, max_steps) -> Finding | None:
        class_wnid = self.class_wnids[index]
        if wnid == class_wnid:
            return self._finding(candidate, name, index, "same", "", 0, 0)
        if wnid in class_ancestors:
            return self._finding(candidate, name, index, "hypernym", "", 0, class_ancestors[wnid])
        if class_wnid in own:
            return self._finding(candidate, name, index, "hyponym", "", own[class_wnid], 0)
        shared = [(own[a], class_ancestors[a], a) for a in own.keys() & class_ancestors.keys()]
        close = min(shared, default=None)  # lowest meeting point seen from the candidate
        if close is not None and close[0] <= max_steps:
            via = synset_of(self.wordnet, close[2]).name()
            return self._finding(candidate, name, index, "close_ancestor", via, close[0], close[1])
        return None

    def _finding(self, candidate, name, index, relation, via, candidate_steps, class_steps) -> Finding:
        return Finding(
            candidate=candidate,
            candidate_synset=name,
            class_index=index,
            class_wnid=self.class_wnids[index],
            class_name=self.class_names[index],
            relation=relation,
            via=via,
            candidate_steps=int(candidate_steps),
            class_steps=int(class_steps),
        )


@functools.cache
def _default_checker() -> PreChecker:
    return PreChecker()


def precheck(candidates: Iterable[str], *, max_steps: int = DEFAULT_MAX_STEPS, checker: PreChecker | None = None):
    """A pandas DataFrame of :class:`Finding` rows for every candidate (wnid, synset name or word).

    Candidates with no finding do not appear; an unknown wnid/synset name raises
    :class:`~imagenet_suite.errors.UnknownClass`.
    """
    import pandas as pd

    checker = checker or _default_checker()
    rows = [f.__dict__ for candidate in candidates for f in checker.check(candidate, max_steps)]
    return pd.DataFrame(rows, columns=list(Finding.__dataclass_fields__))


def verdict(findings: Sequence[Finding]) -> str:
    """One of :data:`VERDICTS` for a candidate's findings."""
    relations = {f.relation for f in findings}
    if relations & set(CATEGORICAL_RELATIONS):
        return VERDICTS[0]
    return VERDICTS[1] if relations else VERDICTS[2]


def precheck_summary(
    candidates: Iterable[str], *, max_steps: int = DEFAULT_MAX_STEPS, checker: PreChecker | None = None
) -> list[dict]:
    """Per candidate: ``{"candidate", "synsets", "verdict", "classes", "findings"}`` (JSON-ready).

    ``synsets``: the WordNet noun synsets checked (none for a word WordNet does not know);
    ``classes``: the flagged ImageNet-1k wnids, sorted; ``findings``: the :class:`Finding` rows as
    dicts. Every candidate is checked before anything is returned, so an unknown wnid raises
    :class:`~imagenet_suite.errors.UnknownClass` for the whole call.
    """
    checker = checker or _default_checker()
    summary = []
    for candidate in candidates:
        findings = checker.check(candidate, max_steps)
        summary.append(
            {
                "candidate": candidate,
                "synsets": [s.name() for s in checker.candidate_synsets(candidate)],
                "verdict": verdict(findings),
                "classes": sorted({f.class_wnid for f in findings}),
                "findings": [f.__dict__ for f in findings],
            }
        )
    return summary


def format_precheck(summary: Sequence[dict]) -> str:
    """Plain text: a verdict line per candidate, then one line per flagged ImageNet-1k class."""
    lines = []
    for entry in summary:
        senses = ", ".join(entry["synsets"]) or "not a WordNet noun"
        count = len(entry["classes"])
        lines.append(
            f"{entry['candidate']}: {entry['verdict']} ({count} ImageNet-1k class{'es' if count != 1 else ''}; "
            f"checked: {senses})"
        )
        for f in entry["findings"]:
            via = f" via {f['via']}" if f["via"] else ""
            lines.append(
                f"  {f['class_wnid']} {f['class_name']}: {f['relation']}{via} [{f['candidate_synset'] or '-'}]"
            )
    return "\n".join(lines) + "\n"
