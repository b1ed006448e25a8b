"""WordNet 3.0 access and the Bertinetto et al. (2020) class-tree construction.

**Reading WordNet** (:func:`load_wordnet`). Sources, in this order:

1. an explicit ``source`` folder (an nltk ``corpora/wordnet`` folder, or WordNet's own
   ``dict`` folder such as Debian's ``/usr/share/wordnet``);
2. an installed nltk_data WordNet (``python -m nltk.downloader wordnet``), found on
   ``nltk.data.path``;
3. Debian/Ubuntu's ``wordnet-base`` package (``apt-get install wordnet-base``), files in
   ``/usr/share/wordnet``.

nltk 3.10 cannot read Debian's files in place; it takes three workarounds, all
applied here: (1) the files are *copied* (not symlinked: nltk's path check refuses links that
leave its data roots) into ``<cache>/nltk_data/corpora/wordnet`` and that root is put on
``nltk.data.path``; (2) the missing ``lexnames`` file is written (the 45 standard lexicographer
files); (3) ``map_wn`` is overridden so nltk does not look for ``index.sense`` (absent from
Debian). The version must be 3.0; anything else is an error.

**The tree** (:func:`build_wordnet_tree`), Bertinetto et al. 2020's construction
(``compute_imagenet_hierarchy.py``) that LCA-on-the-Line (Shi et al. 2024) uses, for any set of noun synsets:

1. is-a edges are WordNet hypernyms plus instance hypernyms, with 3 edge fixes
   (:data:`EDGE_FIXES`: street sign and traffic light under signboard, bubble under the
   artifact sphere);
2. the root is ``n00001930`` physical_entity.n.01;
3. each class keeps its **longest** path(s) to the root; ties are resolved by
   :data:`TIE_RESOLUTIONS` (the 28 chosen paths that reproduce Bertinetto's ``path_choices``
   for ImageNet-1k). A tie not covered by the table (other class sets) takes, at each node, the
   parent the table prefers there if any, else the parent with the smallest wnid; choices are
   made per node, so the union of paths is always a tree;
4. every non-root internal node with exactly one child is removed (its child moves up).

Classes must be leaves: a class that is a hypernym of another class on its chosen path is an
error naming both (ImageNet-21k-style sets with internal classes are not supported).
"""

from __future__ import annotations

import functools
import itertools
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

import platformdirs

from imagenet_suite.errors import HierarchyError, UnknownClass, WordNetMissing
from imagenet_suite.files import atomic_write_bytes

from .tree import Tree

ROOT = "n00001930"  # physical_entity.n.01
DEBIAN_WORDNET_DIR = Path("/usr/share/wordnet")
WORDNET_VERSION = "3.0"

#: (WordNet parent, child, parent used instead) — Bertinetto's three edge fixes.
EDGE_FIXES: tuple[tuple[str, str, str], ...] = (
    ("n06793231", "n06794110", "n04217882"),  # sign → street sign      becomes signboard → street sign
    ("n06874019", "n06874185", "n04217882"),  # light → traffic light   becomes signboard → traffic light
    ("n13899200", "n13899404", "n04274530"),  # sphere → bubble         becomes sphere (artifact) → bubble
)

_TIE_PATHS = {  # class wnid: chosen unpruned path above it, parent first, ending at the root
    "n02504013": "n02503517 n02503127 n01886756 n01861778 n01471682 n01466257 n00015388 n00004475 n00004258 n00003553 n00002684 n00001930",  # Indian elephant
    "n02504458": "n02503517 n02503127 n01886756 n01861778 n01471682 n01466257 n00015388 n00004475 n00004258 n00003553 n00002684 n00001930",  # African elephant
    "n02799071": "n02778669 n03414162 n03294048 n03575240 n00021939 n00003553 n00002684 n00001930",  # baseball
    "n02802426": "n02778669 n03414162 n03294048 n03575240 n00021939 n00003553 n00002684 n00001930",  # basketball
    "n03000684": "n03996145 n03997484 n03699975 n03183080 n03575240 n00021939 n00003553 n00002684 n00001930",  # chain saw
    "n03134739": "n02778669 n03414162 n03294048 n03575240 n00021939 n00003553 n00002684 n00001930",  # croquet ball
    "n03445777": "n02778669 n03414162 n03294048 n03575240 n00021939 n00003553 n00002684 n00001930",  # golf ball
    "n03452741": "n03928116 n03614532 n03800933 n03183080 n03575240 n00021939 n00003553 n00002684 n00001930",  # grand piano
    "n03594734": "n04489008 n03419014 n03051540 n03093574 n03076708 n00021939 n00003553 n00002684 n00001930",  # jean
    "n03773504": "n04565375 n03574816 n03183080 n03575240 n00021939 n00003553 n00002684 n00001930",  # missile
    "n03814639": "n02887209 n04359589 n03183080 n03575240 n00021939 n00003553 n00002684 n00001930",  # neck brace
    "n03854065": "n03614532 n03800933 n03183080 n03575240 n00021939 n00003553 n00002684 n00001930",  # organ (instrument)
    "n03876231": "n02730265 n03183080 n03575240 n00021939 n00003553 n00002684 n00001930",  # paintbrush
    "n03995372": "n03997484 n03699975 n03183080 n03575240 n00021939 n00003553 n00002684 n00001930",  # power drill
    "n03998194": "n04118021 n03405265 n03575240 n00021939 n00003553 n00002684 n00001930",  # prayer rug
    "n04004767": "n04004475 n03699975 n03183080 n03575240 n00021939 n00003553 n00002684 n00001930",  # printer
    "n04149813": "n04217882 n04341686 n00021939 n00003553 n00002684 n00001930",  # scoreboard
    "n04389033": "n02740533 n04170037 n04576211 n04524313 n03100490 n03575240 n00021939 n00003553 n00002684 n00001930",  # tank
    "n04486054": "n02733524 n04341686 n00021939 n00003553 n00002684 n00001930",  # triumphal arch
    "n04515003": "n03928116 n03614532 n03800933 n03183080 n03575240 n00021939 n00003553 n00002684 n00001930",  # upright piano
    "n04579432": "n02676261 n03183080 n03575240 n00021939 n00003553 n00002684 n00001930",  # whistle
    "n06596364": "n06595351 n06589574 n04599396 n04007894 n03129123 n00021939 n00003553 n00002684 n00001930",  # comic book
    "n07711569": "n07710616 n07710283 n07707451 n07705711 n07555863 n15046900 n00020827 n00001930",  # mashed potato
    "n07742313": "n07739506 n07739125 n07705931 n13134947 n11675842 n13087625 n13086908 n00019128 n00003553 n00002684 n00001930",  # Granny Smith
    "n07892512": "n07891726 n07884567 n07881800 n14940386 n14939900 n00019613 n00020827 n00001930",  # red wine
    "n07930864": "n07930554 n07911371 n07884567 n07881800 n14940386 n14939900 n00019613 n00020827 n00001930",  # cup (punch)
    "n07932039": "n07930554 n07911371 n07884567 n07881800 n14940386 n14939900 n00019613 n00020827 n00001930",  # eggnog
    "n09835506": "n09820263 n09613191 n00007846 n00004475 n00004258 n00003553 n00002684 n00001930",  # ballplayer
}

#: class wnid → its chosen full path to the root (class first), for the 28 ImageNet-1k classes
#: whose longest WordNet paths tie (reproduces ``path_choices`` of Bertinetto et al.'s ``compute_imagenet_hierarchy.py``).
TIE_RESOLUTIONS: dict[str, tuple[str, ...]] = {leaf: (leaf, *path.split()) for leaf, path in _TIE_PATHS.items()}

#: The standard WordNet lexicographer files (``lexnames``), absent from Debian's wordnet-base.
LEXNAMES = [
    "adj.all",
    "adj.pert",
    "adv.all",
    "noun.Tops",
    "noun.act",
    "noun.animal",
    "noun.artifact",
    "noun.attribute",
    "noun.body",
    "noun.cognition",
    "noun.communication",
    "noun.event",
    "noun.feeling",
    "noun.food",
    "noun.group",
    "noun.location",
    "noun.motive",
    "noun.object",
    "noun.person",
    "noun.phenomenon",
    "noun.plant",
    "noun.possession",
    "noun.process",
    "noun.quantity",
    "noun.relation",
    "noun.shape",
    "noun.state",
    "noun.substance",
    "noun.time",
    "verb.body",
    "verb.change",
    "verb.cognition",
    "verb.communication",
    "verb.competition",
    "verb.consumption",
    "verb.contact",
    "verb.creation",
    "verb.emotion",
    "verb.motion",
    "verb.perception",
    "verb.possession",
    "verb.social",
    "verb.stative",
    "verb.weather",
    "adj.ppl",
]
_LEX_POS = {"adj": 3, "adv": 4, "noun": 1, "verb": 2}
_DATA_FILES = tuple(f"{kind}.{pos}" for kind in ("index", "data") for pos in ("noun", "verb", "adj", "adv")) + tuple(
    f"{pos}.exc" for pos in ("noun", "verb", "adj", "adv")
)

HOW_TO_GET_WORDNET = (
    "install WordNet 3.0 with one of: `apt-get install wordnet-base` (Debian/Ubuntu, files in /usr/share/wordnet), "
    "or `python -m nltk.downloader wordnet` (nltk_data), or pass the folder holding data.noun/index.noun"
)


# -- reading WordNet ----------------------------------------------------------------------------
def load_wordnet(
    source: str | Path | None = None,
    *,
    search_nltk_data: bool = True,
    debian_dir: str | Path = DEBIAN_WORDNET_DIR,
    staging_dir: str | Path | None = None,
):
    """An nltk ``WordNetCorpusReader`` for WordNet 3.0 (cached per arguments).

    ``source``: a folder with WordNet's ``data.noun``/``index.noun`` files (nltk or Debian
    layout); None searches nltk_data, then ``debian_dir``. ``staging_dir``: where Debian's files
    are copied for nltk (default: the user cache, ``imagenet-suite/nltk_data``).
    Raises :class:`WordNetMissing` (saying how to install it) when nothing is found, and
    :class:`HierarchyError` for a WordNet that is not version 3.0.
    """
    staging = Path(staging_dir) if staging_dir else Path(platformdirs.user_cache_dir("imagenet-suite")) / "nltk_data"
    return _load_cached(str(source) if source is not None else None, search_nltk_data, str(debian_dir), str(staging))


@functools.cache
def _load_cached(source: str | None, search_nltk_data: bool, debian_dir: str, staging: str):
    if source is not None:
        folder = Path(source)
        if not (folder / "data.noun").is_file():
            raise WordNetMissing(f"WordNet folder {folder} has no data.noun; {HOW_TO_GET_WORDNET}")
        return _checked(_reader_for_folder(folder, Path(staging)), str(folder))
    if search_nltk_data:
        root = _installed_nltk_wordnet()
        if root is not None:
            return _checked(_nltk_reader(root), f"nltk_data ({root})")
    if (Path(debian_dir) / "data.noun").is_file():
        return _checked(_reader_for_folder(Path(debian_dir), Path(staging)), str(debian_dir))
    searched = "nltk_data on nltk.data.path, " if search_nltk_data else ""
    raise WordNetMissing(f"WordNet 3.0 not found (searched {searched}{debian_dir}); {HOW_TO_GET_WORDNET}")


def _installed_nltk_wordnet():
    import nltk.data

    try:
        return nltk.data.find("corpora/wordnet")
    except LookupError:
        return None


def _nltk_reader(root):
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class _Reader(WordNetCorpusReader):
        def map_wn(self, version="wordnet"):  # workaround 3: never look for index.sense
            return None

    with warnings.catch_warnings():  # "multilingual functions are not available": expected, no OMW
        warnings.simplefilter("ignore")
        return _Reader(root, None)


def _reader_for_folder(folder: Path, staging: Path):
    """nltk reader over a WordNet dict folder; copies it into an nltk data root if it lacks lexnames."""
    import nltk.data
    from nltk.data import FileSystemPathPointer

    if (folder / "lexnames").is_file():
        return _nltk_reader(FileSystemPathPointer(str(folder)))
    target = staging / "corpora" / "wordnet"
    _stage_copy(folder, target)
    if str(staging) not in map(str, nltk.data.path):
        nltk.data.path.append(str(staging))
    return _nltk_reader(FileSystemPathPointer(str(target)))


def _stage_copy(folder: Path, target: Path) -> None:
    """Workarounds 1 and 2: copy the data files (when changed) and write ``lexnames``."""
    target.mkdir(parents=True, exist_ok=True)
    for name in (*_DATA_FILES, "cntlist.rev"):
        src, dst = folder / name, target / name
        if not src.is_file():
            if name in _DATA_FILES:
                raise WordNetMissing(f"WordNet folder {folder} lacks {name}; {HOW_TO_GET_WORDNET}")
            continue
        if not dst.is_file() or dst.stat().st_size != src.stat().st_size or dst.stat().st_mtime < src.stat().st_mtime:
            atomic_write_bytes(dst, src.read_bytes(), durable=False, shared=True)  # parallel stagers may race
    lines = "".join(f"{i:02d}\t{name}\t{_LEX_POS[name.split('.')[0]]}\n" for i, name in enumerate(LEXNAMES))
    lexnames = target / "lexnames"
    if not lexnames.is_file() or lexnames.read_text() != lines:
        atomic_write_bytes(lexnames, lines.encode(), durable=False, shared=True)


def _checked(reader, where: str):
    version = reader.get_version()
    if version != WORDNET_VERSION:
        raise HierarchyError(
            f"WordNet at {where} is version {version}; the ImageNet hierarchies need WordNet {WORDNET_VERSION}"
        )
    return reader


# -- synsets and edges --------------------------------------------------------------------------
def wnid_of(synset) -> str:
    """``'n02084071'`` for ``Synset('dog.n.01')``."""
    return f"{synset.pos()}{synset.offset():08d}"


def synset_of(wordnet, key: str):
    """The noun synset for a wnid (``n02084071``) or a synset name (``dog.n.01``)."""
    from nltk.corpus.reader.wordnet import WordNetError

    try:
        with warnings.catch_warnings():  # nltk warns (and returns None) for an unknown offset
            warnings.simplefilter("ignore")
            if len(key) == 9 and key[0] == "n" and key[1:].isdigit():
                synset = wordnet.synset_from_pos_and_offset("n", int(key[1:]))
            else:
                synset = wordnet.synset(key)
    except (WordNetError, ValueError, AttributeError):
        synset = None
    if synset is None:
        raise UnknownClass(
            f"{key!r} is not a WordNet 3.0 noun synset (expected a wnid like 'n02084071' or a name like 'dog.n.01')"
        )
    if synset.pos() != "n":
        raise UnknownClass(f"{key!r} is a {synset.pos()!r} synset; only nouns are supported")
    return synset


def hypernym_wnids(wordnet, wnid: str) -> tuple[str, ...]:
    """Parents of a noun synset: hypernyms + instance hypernyms, with :data:`EDGE_FIXES` applied."""
    synset = synset_of(wordnet, wnid)
    parents = [wnid_of(s) for s in synset.hypernyms() + synset.instance_hypernyms()]
    for old, child, new in EDGE_FIXES:
        if child == wnid:
            parents = [new if p == old else p for p in parents]
    return tuple(dict.fromkeys(parents))


def hypernym_dag(wordnet, wnids: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """{synset: parents} for the given synsets and all their ancestors (edge fixes applied)."""
    dag: dict[str, tuple[str, ...]] = {}
    stack = list(wnids)
    while stack:
        node = stack.pop()
        if node not in dag:
            dag[node] = hypernym_wnids(wordnet, node)
            stack.extend(p for p in dag[node] if p not in dag)
    return dag


def _root_distances(dag: dict[str, tuple[str, ...]], root: str) -> dict[str, int]:
    """Longest number of edges from each node up to ``root``; nodes that cannot reach it are absent."""
    distance: dict[str, int] = {root: 0}
    unreachable: set[str] = set()

    def visit(node: str) -> int | None:
        stack = [node]
        while stack:
            top = stack[-1]
            if top in distance or top in unreachable:
                stack.pop()
                continue
            pending = [p for p in dag.get(top, ()) if p not in distance and p not in unreachable]
            if pending:
                stack.extend(pending)
                continue
            reach = [distance[p] for p in dag.get(top, ()) if p in distance]
            if reach:
                distance[top] = 1 + max(reach)
            else:
                unreachable.add(top)
            stack.pop()
        return distance.get(node)

    for node in dag:
        visit(node)
    return distance


def _longest_parents(node: str, dag: dict[str, tuple[str, ...]], distance: dict[str, int]) -> list[str]:
    return sorted(p for p in dag.get(node, ()) if distance.get(p) == distance[node] - 1)


def count_longest_paths(wordnet, wnids: Sequence[str], root: str = ROOT) -> dict[str, int]:
    """{class wnid: number of distinct longest paths to ``root``} (ties are counts > 1)."""
    dag = hypernym_dag(wordnet, wnids)
    distance = _root_distances(dag, root)
    counts: dict[str, int] = {root: 1}

    def count(node: str) -> int:
        if node not in counts:
            counts[node] = sum(count(p) for p in _longest_parents(node, dag, distance))
        return counts[node]

    _require_reachable(wnids, distance, root)
    return {w: count(w) for w in wnids}


def _preferred_parents(tie_resolutions: dict[str, Sequence[str]]) -> dict[str, str]:
    preferred: dict[str, str] = {}
    for leaf, path in tie_resolutions.items():
        for child, parent in itertools.pairwise(path):
            if preferred.setdefault(child, parent) != parent:
                raise HierarchyError(
                    f"tie resolutions disagree at {child!r}: {preferred[child]!r} vs {parent!r} (path of {leaf!r})"
                )
    return preferred


def _choose_parent(node: str, dag, distance, preferred: dict[str, str]) -> str:
    candidates = _longest_parents(node, dag, distance)
    if node in preferred:
        if preferred[node] not in candidates:
            raise HierarchyError(
                f"tie resolution puts {node!r} under {preferred[node]!r}, which is not on a longest "
                f"path in this WordNet (longest-path parents: {candidates}); is it WordNet 3.0?"
            )
        return preferred[node]
    return candidates[0]


def _require_reachable(wnids: Sequence[str], distance: dict[str, int], root: str) -> None:
    lost = [w for w in wnids if w not in distance]
    if lost:
        raise HierarchyError(
            f"{len(lost)} class(es) have no hypernym path to the root {root!r}: {lost[:5]}; pass another root"
        )


# -- the tree -----------------------------------------------------------------------------------
def build_wordnet_tree(
    wnids: Sequence[str] | None = None,
    *,
    wordnet=None,
    root: str = ROOT,
    tie_resolutions: dict[str, Sequence[str]] | None = None,
) -> Tree:
    """The Bertinetto tree (module docstring) whose leaves are ``wnids`` in the given order.

    ``wnids``: noun synsets as wnids (default: the 1000 ImageNet-1k classes in class-index
    order); ``wordnet``: a reader from :func:`load_wordnet` (default: found automatically);
    ``tie_resolutions``: class → chosen path (default :data:`TIE_RESOLUTIONS`).
    Node names are WordNet synset names (``dog.n.01``).
    """
    if wnids is None:
        from imagenet_suite.classes import imagenet_wnids

        wnids = imagenet_wnids()
    wnids = list(wnids)
    wordnet = wordnet if wordnet is not None else load_wordnet()
    dag = hypernym_dag(wordnet, wnids)
    distance = _root_distances(dag, root)
    _require_reachable(wnids, distance, root)
    preferred = _preferred_parents(TIE_RESOLUTIONS if tie_resolutions is None else tie_resolutions)
    parent_of: dict[str, str] = {}
    for wnid in wnids:
        node = wnid
        while node != root and node not in parent_of:
            parent_of[node] = _choose_parent(node, dag, distance, preferred)
            node = parent_of[node]
    _require_leaf_classes(wnids, parent_of)
    edges = _prune_unary(parent_of, root)
    names = {w: synset_of(wordnet, w).name() for w in {root, *parent_of}}
    return Tree.from_edges(edges, wnids, names)


def _require_leaf_classes(wnids: Sequence[str], parent_of: dict[str, str]) -> None:
    internal = set(parent_of.values()) & set(wnids)
    if internal:
        child = {c: p for c, p in parent_of.items() if p in internal}
        pairs = [f"{p} is a hypernym of {c}" for c, p in sorted(child.items())][:5]
        raise HierarchyError(
            f"classes must be leaves, but {len(internal)} class(es) are ancestors of other classes: {pairs}"
        )


def _prune_unary(parent_of: dict[str, str], root: str) -> list[tuple[str, str]]:
    """Remove every non-root node with exactly one child; returns the remaining (parent, child) edges."""
    num_children: dict[str, int] = {}
    for parent in parent_of.values():
        num_children[parent] = num_children.get(parent, 0) + 1
    unary = {n for n, k in num_children.items() if k == 1 and n != root}

    def kept_parent(node: str) -> str:
        parent = parent_of[node]
        while parent in unary:
            parent = parent_of[parent]
        return parent

    return [(kept_parent(child), child) for child in parent_of if child not in unary]
