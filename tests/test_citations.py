"""Papers are cited by authors and year, never by a name of our own, and every dataset card ends with
BibTeX for its sources: the dataset's own paper first, then the papers whose protocol uses it."""

from __future__ import annotations

import re
import subprocess

import pytest

from imagenet_suite.core import card, registry
from tests.helpers import REPO_ROOT

# The internal names of the five papers and of the digests of them and of upstream projects: none of
# these exist for a user. Built from pieces so that this file, which is scanned too, does not match.
_DIGEST = "se" + "ed"
_ANCHORS = "anch" + "ors"
INTERNAL_NAMES = re.compile(
    rf"{_DIGEST}[ _]?00[0-4]|{_DIGEST}_00[0-4]\.md|{_ANCHORS}_[a-z]+\.md",
    re.IGNORECASE,
)
# Upstream provenance of tests/data names the digests the paper tables were transcribed from.
PROVENANCE = {"tests/data/README.md", "tests/data/SHA256SUMS"}


def _repository_files() -> list[str]:
    """Tracked files plus new ones not ignored, relative to the repository root."""
    listed = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout.decode()
    return sorted({name for name in listed.split("\0") if name and (REPO_ROOT / name).is_file()})


def test_the_pattern_finds_internal_names():
    for text in (
        _DIGEST + " 000",
        _DIGEST.upper() + "003_COMMON",
        _DIGEST + "_004 §2",
        _DIGEST + "_001.md §2.4",
        _ANCHORS + "_scoring.md section 4.4",
        "## QUBA (" + _DIGEST.title() + " 000)",
    ):
        assert INTERNAL_NAMES.search(text), text
    for text in ("--seed 0", "seed 4", "seeds 0-4", "Beyond Accuracy (Hesse et al. 2025)", "seed=1000"):
        assert not INTERNAL_NAMES.search(text), text


def test_no_internal_paper_names_in_code_docs_cards_or_tests():
    """Code, README, docs, cards, tests: a paper is named by its authors, short title and year."""
    files = _repository_files()
    assert "builders/_citations.py" in files and "tests/test_citations.py" in files
    found = []
    for name in files:
        if name in PROVENANCE:
            continue
        data = (REPO_ROOT / name).read_bytes()
        if b"\0" in data:
            continue  # binary
        text = data.decode("utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if INTERNAL_NAMES.search(line):
                found.append(f"{name}:{number}: {line.strip()[:160]}")
    assert not found, (
        "internal names of papers or of spec digests (cite the paper: 'Beyond Accuracy (Hesse et al. "
        "2025)', 'Anzaku et al. 2024', 'NINCO (Bitterwolf et al. 2023)', 'Heuillet et al. 2025', "
        "'LCA-on-the-Line (Shi et al. 2024)'; for a digest section, the paper's section or the upstream "
        "file it describes):\n" + "\n".join(found)
    )


# -- the cards' BibTeX ---------------------------------------------------------------------------------

# Each card's BibTeX keys, in order: the dataset's own paper(s) first, then the protocol papers.
BEYOND_ACCURACY, ANZAKU, NINCO, HEUILLET, LCA = (
    "hesse2025beyond",
    "anzaku2024reassessing",
    "bitterwolf2023ninco",
    "heuillet2025guide",
    "shi2024lca",
)
ILSVRC = "ILSVRC15"
EXPECTED_KEYS = {
    "backgrounds_challenge": ["xiao2021noise", BEYOND_ACCURACY],
    "imagenet_a": ["hendrycks2021nae", LCA],
    "imagenet_c": ["hendrycks2019benchmarking", BEYOND_ACCURACY],
    "imagenet_multilabel": ["shankar2020evaluating", "vasudevan2022does", ILSVRC],
    "imagenet_o": ["hendrycks2021nae", NINCO],
    "imagenet_r": ["hendrycks2021many", BEYOND_ACCURACY, LCA],
    "imagenet_real": ["beyer2020imagenet", ILSVRC, ANZAKU],
    "imagenet_sketch": ["wang2019learning", LCA],
    "imagenet_train": [ILSVRC, NINCO],
    "imagenet_v2": ["recht2019imagenet", ANZAKU, LCA],
    "imagenet_val": [ILSVRC, BEYOND_ACCURACY, ANZAKU, NINCO, LCA],
    "kmeans_hierarchy": [LCA],
    "ninco": [NINCO],
    "objectnet": ["barbu2019objectnet", LCA],
    "ood_unit_tests": [NINCO, ILSVRC],
    "patchml": [ANZAKU, ILSVRC],
    "popular_ood": [
        "huang2021mos",
        "cimpoi2014describing",
        "wang2022vim",
        "hendrycks2021nae",
        "vaze2022openset",
        "hendrycks2022scaling",
        "zhang2023openood",
        NINCO,
    ],
    "perturbations": ["hendrycks2019benchmarking", "michaelis2019dragon", BEYOND_ACCURACY, HEUILLET],
    "shape_bias_sets": ["geirhos2019imagenettrained", "geirhos2021partial", "wang2019learning", BEYOND_ACCURACY],
    "wordnet_hierarchy": ["bertinetto2020making", "miller1995wordnet", LCA],
}
ENTRY_START = re.compile(r"^@(\w+)\{([^,\s{}]+),", re.MULTILINE)
BIBTEX_BLOCK = re.compile(r"\n## Citation\n\n```bibtex\n(?P<body>.*?)\n```\n\Z", re.DOTALL)


def _rendered_card(cls) -> str:
    """``cls``'s full card (README.md) for a build of one example per config, as the runner writes it."""
    configs = {
        config.name: {
            "features": {"id": {"dtype": "string", "_type": "Value"}},
            "splits": {"test": {"num_examples": 1, "num_bytes": 1}},
            "files": {},
            "sources": {},
        }
        for config in cls.CONFIGS
    }
    info = {
        "builder": cls.NAME,
        "version": cls.VERSION,
        "package_version": "0",
        "folder": cls.NAME,
        "seed": 0,
        "license": cls.LICENSE,
        "configs": configs,
    }
    default = cls.CONFIGS[0].name
    template = card.load_template(cls.CARD_TEMPLATE or cls.NAME)
    return card.render_card(info, default, template, {}, card.generated_sections(cls, info, default))


def parse_bibtex(body: str) -> list[tuple[str, str, dict[str, str]]]:
    """``[(entry type, key, {field: value})]``; raises ValueError on text that is not BibTeX entries."""
    starts = list(ENTRY_START.finditer(body))
    if not starts or body[: starts[0].start()].strip():
        raise ValueError("does not start with an entry '@type{key,'")
    entries = []
    for match, following in zip(starts, [*starts[1:], None], strict=True):
        text = body[match.start() : following.start() if following else len(body)].strip()
        depth = 0
        for position, char in enumerate(text):
            depth += {"{": 1, "}": -1}.get(char, 0)
            if depth < 0 or (depth == 0 and char == "}" and position != len(text) - 1):
                raise ValueError(f"unbalanced braces in entry {match.group(2)!r}")
        if depth != 0 or not text.endswith("}"):
            raise ValueError(f"entry {match.group(2)!r} is not closed")
        fields = {
            name.lower(): value
            for name, value in re.findall(r"(\w+)\s*=\s*\{((?:[^{}]|\{(?:[^{}]|\{[^{}]*\})*\})*)\}", text)
        }
        entries.append((match.group(1).lower(), match.group(2), fields))
    return entries


def test_parse_bibtex_refuses_what_is_not_bibtex():
    good = "@article{a2020x,\n  title = {{X}: y},\n  year = {2020}}\n\n@misc{b,\n  title = {Z}, year = {2021}}"
    assert [(t, k, f["year"]) for t, k, f in parse_bibtex(good)] == [
        ("article", "a2020x", "2020"),
        ("misc", "b", "2021"),
    ]
    for bad in ("title = {X}", "@article{a,\n  title = {X}, year = {2020}", "@article{a,\n  title = {X}}, year = {1}}"):
        with pytest.raises(ValueError):
            parse_bibtex(bad)


def test_every_builder_has_a_row_here():
    shipped = [  # builders that tests register for themselves (a tiny review set) are not the package's
        name
        for name, cls in registry.all_builders().items()
        if cls.__module__.startswith(registry.BUILDERS_PACKAGE + ".")
    ]
    assert sorted(shipped) == sorted(EXPECTED_KEYS), (
        "a builder was added or removed: list its card's BibTeX keys in EXPECTED_KEYS"
    )


@pytest.mark.parametrize("name", sorted(EXPECTED_KEYS))
def test_every_card_ends_with_bibtex_of_its_sources(name):
    block = BIBTEX_BLOCK.search(_rendered_card(registry.get(name)))
    assert block, f"the card of {name} does not end with a ```bibtex block under '## Citation'"
    try:
        entries = parse_bibtex(block.group("body"))
    except ValueError as err:
        pytest.fail(f"the card of {name}: its BibTeX does not parse: {err}")
    keys = [key for _, key, _ in entries]
    assert keys == EXPECTED_KEYS[name], f"the card of {name} cites {keys}"
    for entry_type, key, fields in entries:
        assert entry_type in {"article", "inproceedings", "misc", "book"}, f"{name}: {key} is @{entry_type}"
        assert fields.get("title"), f"the card of {name}: {key} has no title"
        assert re.fullmatch(r"\d{4}", fields.get("year", "")), f"the card of {name}: {key} has no year"
        assert fields.get("author"), f"the card of {name}: {key} has no author"
        assert fields.get("journal") or fields.get("booktitle"), f"the card of {name}: {key} has no venue"
        if "eprint" in fields:
            assert re.fullmatch(r"\d{4}\.\d{4,5}", fields["eprint"]), f"{name}: {key} eprint {fields['eprint']}"
            assert fields.get("archiveprefix") == "arXiv", f"{name}: {key}"
