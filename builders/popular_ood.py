"""``popular_ood``: the popular ImageNet OOD test sets in full (iNaturalist, SUN, Places, Textures, OpenImage-O, ImageNet-O, SSB-hard, Species), joined to NINCO's review and OpenOOD v1.5's lists.

Configs (one split, ``test``; rows sorted by ``id``; each image stored as its original bytes):

* ``inaturalist``, ``sun``, ``places``: the MOS sets (Huang & Li 2021), 10,000 images each, from
  ``iNaturalist.tar.gz`` / ``SUN.tar.gz`` / ``Places.tar.gz`` (or their extracted folders);
  iNaturalist also from OpenOOD v1.5's ``images_largescale/inaturalist/``;
* ``textures``: DTD (Cimpoi et al. 2014), 5,640 images of ``dtd-r1.0.1.tar.gz``, or OpenOOD v1.5's
  5,160-image "Textures43" (``images_classic/texture/``, 4 categories removed);
* ``openimage_o``: OpenImage-O (Wang et al. 2022), the 17,632 OpenImages test images of ViM's list,
  or OpenOOD v1.5's ``images_largescale/openimage_o/``;
* ``imagenet_o``: ImageNet-O (Hendrycks et al. 2021), 2,000 images of ``imagenet-o.tar`` (the
  ``imagenet_o`` builder's source, or its extracted folder) or OpenOOD v1.5's
  ``images_largescale/imagenet_o/``; ``filtered_against``: the ImageNet-1k class of the image's
  folder, as in the ``imagenet_o`` builder (metadata, not a label);
* ``ssb_hard``: SSB-hard (Vaze et al. 2022) as OpenOOD v1.5 ships it (49,000 images);
* ``species``: Species (Hendrycks et al. 2022), every image of a ``species/<superclass>/<species>/<file>``
  folder in --manual-dir (its only release is a Google Drive folder: no archive to pin; the first build
  records a sha256 over every file's sha256);
* ``openood_id_split``: no images: OpenOOD v1.5's test/val split of the 50,000 ImageNet-val ids.

``id`` is the image's path relative to the set's root, the same in both layouts. The NINCO columns
(Bitterwolf et al. 2023) say whether the image was among the authors' inspected random samples, its
last review decision and its file in NINCO's released cleaned subsample (joins the ``ninco``
builder's ``popular_subsamples`` config by file name); the OpenOOD columns say which OpenOOD v1.5
ImageNet list holds the image (known only when the lists are given).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from imagenet_suite import classes
from imagenet_suite.core.archives import open_archive
from imagenet_suite.core.builder import Builder, BuilderConfig, Option, Prepared, Shard
from imagenet_suite.core.ninco_review_logs import ANNOTATIONS, attach_released_files
from imagenet_suite.core.sources import ResolvedSource, Source, SourceResolver
from imagenet_suite.errors import ConfigError, InvalidSourceData, ManualFileMissing, param
from imagenet_suite.files import decode_text, read_text

from ._citations import DTD, MOS, NATURAL_ADVERSARIAL_EXAMPLES, NINCO, OPENOOD_V15, SCALING_OOD, SSB, VIM, cite
from ._image_columns import image_features
from ._species import SPECIES_INSTRUCTIONS, SPECIES_ROOT, check_superclasses, species_images
from ._variants import (
    STRICT_COUNTS,
    Images,
    check_count,
    list_members,
    locate,
    read_in_order,
    scan_class_folders,
    wnid_class,
)
from .imagenet_o import IMAGENET_O_TAR
from .imagenet_val import val_id_of
from .ninco import NINCO_REPO, RepoData, read_repo, released_originals

SPLIT = "test"
MOS_URL = "http://pages.cs.wisc.edu/~huangrui/imagenet_ood_dataset/"
VIM_COMMIT = "dabf9e5b242dbd31c15e09ff12af3d11f009f79c"
OPENOOD_LISTS = "benchmark_imglist"  # OpenOOD v1.5's list folder (or .zip) in --manual-dir
OPENOOD_LIST_FOLDER = "imagenet/"
IMGLIST_FORMAT = "an OpenOOD image list ('<folder>/<path> <int label>' lines)"


def _mos(root: str) -> Source:
    return Source(
        f"{root.lower()}_tar",
        f"{root}.tar.gz",
        url=f"{MOS_URL}{root}.tar.gz",
        instructions=f"{MOS_URL}{root}.tar.gz (MOS, Huang & Li 2021), or its extracted {root}/ folder, in "
        "--manual-dir (no published sha256: the first build records it in build_info.json).",
    )


INATURALIST_TAR = _mos("iNaturalist")
SUN_TAR = _mos("SUN")
PLACES_TAR = _mos("Places")
# sha256 as pinned by torchvision's prototype DTD dataset and anomalib (DTD_DOWNLOAD_INFO); the VGG
# page publishes none (torchvision's DTD pins md5 fff73e5086ae6bdbea199a49dfb8a4c1).
DTD_TAR = Source(
    "dtd_tar",
    "dtd-r1.0.1.tar.gz",
    url="https://www.robots.ox.ac.uk/~vgg/data/dtd/download/dtd-r1.0.1.tar.gz",
    sha256="e42855a52a4950a3b59612834602aa253914755c95b0cff9ead6d07395f8e205",
    instructions="dtd-r1.0.1.tar.gz from https://www.robots.ox.ac.uk/~vgg/data/dtd/, or its extracted dtd/ folder.",
)
# Size and sha256 of datalists/openimage_o.txt at haoqiwang/vim@dabf9e5 (computed from that commit).
VIM_LIST = Source(
    "openimage_o_list",
    "openimage_o.txt",
    url=f"https://raw.githubusercontent.com/haoqiwang/vim/{VIM_COMMIT}/datalists/openimage_o.txt",
    size=370_272,
    sha256="f1ef7273bb91063c87b11f04afdc609cbc04621129abe9966dc2e513a2a86935",
    instructions=f"datalists/openimage_o.txt of haoqiwang/vim at {VIM_COMMIT[:7]}.",
)
OPENIMAGES_TEST = Source(
    "openimages_test",
    "test.tar.gz",
    instructions="the OpenImages test images (https://storage.googleapis.com/openimages/web/download.html) as "
    "test.tar.gz or its extracted test/ folder (test/<16 hex>.jpg) in --manual-dir; only the images of "
    "ViM's openimage_o.txt are read.",
)
OPENOOD_LISTS_ZIP = Source(
    "openood_imglist",
    f"{OPENOOD_LISTS}.zip",
    instructions=f"OpenOOD v1.5's {OPENOOD_LISTS}.zip (Google Drive, linked from github.com/Jingkang50/OpenOOD; no "
    f"published sha256: the first build records it) or its extracted {OPENOOD_LISTS}/ folder in --manual-dir.",
)

LAYOUT = Option(
    "auto",
    ("auto", "original", "openood"),
    help="which release to read: 'original' (MOS tars, DTD, ViM's list + OpenImages), 'openood' (OpenOOD v1.5's "
    "images_largescale/ or images_classic/ folders) or 'auto' (the one in --manual-dir; the original's URL if neither)",
)


@dataclass(frozen=True)
class PopularSet:
    """How one config's images are released, listed and joined.

    ``pattern`` matches an ``id``; ``openood``: (root folder, set folder, {list file: "test"/"val"}) of
    the OpenOOD v1.5 layout; ``log``: NINCO's review log of the set and how its ``image_location``
    becomes an ``id`` (None: not a path of this set); ``index_in_sample``: the log's ``index`` is the
    image's position among the logged images themselves (Species: 0–399), not in the whole release.
    """

    pattern: str
    counts: dict[str, int | None]  # layout -> published number of images (None: none published)
    original: Source | None
    root: str = ""  # the original release's root folder
    openood: tuple[str, str, dict[str, str]] | None = None
    log: str | None = None
    log_id: Callable[[str], str | None] | None = None
    index_in_sample: bool = False


def _strip(prefix: str) -> Callable[[str], str | None]:
    return lambda location: location[len(prefix) :] if location.startswith(prefix) else None


def _places_log_id(location: str) -> str | None:
    """``datasets/OOD_Places_MOS/<cat>/<n>.jpg`` -> ``images/<cat>_<n>.jpg`` (MOS's flat name)."""
    parts = location.split("/")
    if len(parts) != 4 or parts[:2] != ["datasets", "OOD_Places_MOS"]:
        return None
    return f"images/{parts[2]}_{parts[3]}"


SETS = {
    "inaturalist": PopularSet(
        r"images/[0-9a-f]{32}\.jpg",
        {"original": 10_000, "openood": 10_000},
        INATURALIST_TAR,
        "iNaturalist",
        ("images_largescale", "inaturalist", {"test_inaturalist.txt": "test"}),
        "OOD_iNaturalist_MOS",
        _strip("datasets/OOD_iNaturalist_MOS/"),
    ),
    "sun": PopularSet(r"images/sun_[a-z]{16}\.jpg", {"original": 10_000}, SUN_TAR, "SUN"),
    "places": PopularSet(
        r"images/([a-z]_[a-z_]+_\d{8}|Places365_val_\d{8})\.jpg",
        {"original": 10_000},
        PLACES_TAR,
        "Places",
        log="OOD_Places_MOS",
        log_id=_places_log_id,
    ),
    "textures": PopularSet(
        r"([a-z-]+)/\1_\d{4}\.jpg",
        {"original": 5_640, "openood": 5_160},
        DTD_TAR,
        "dtd",
        ("images_classic", "texture", {"test_textures.txt": "test"}),
        "textures",
        _strip("textures/images/"),
    ),
    "openimage_o": PopularSet(
        r"[0-9a-f]{16}\.jpg",
        {"original": 17_632, "openood": 17_632},
        OPENIMAGES_TEST,
        "test",
        ("images_largescale", "openimage_o", {"test_openimage_o.txt": "test", "val_openimage_o.txt": "val"}),
        "openimage_o",
        _strip("openimages/v4_512/test/"),
    ),
    # NINCO's index = position among the 2,000 ``<wnid>/<file>`` sorted by code point: checked offline on
    # all 400 rows of the real imagenet_o.csv against OpenOOD v1.5's test_imagenet_o.txt (2,000 lines,
    # sha256 38daf628…, the copy in facebookresearch/UnifiedUncertaintyCalibration@6718913).
    "imagenet_o": PopularSet(
        r"n\d{8}/[^/]+\.JPEG",
        {"original": 2_000, "openood": 2_000},
        IMAGENET_O_TAR,
        "imagenet-o",
        ("images_largescale", "imagenet_o", {"test_imagenet_o.txt": "test"}),
        "imagenet_o",
        _strip("datasets/imagenet-o/"),
    ),
    "ssb_hard": PopularSet(
        r"n\d{8}/n\d{8}_\d+\.JPEG",
        {"openood": 49_000},
        None,
        openood=("images_largescale", "ssb_hard", {"test_ssb_hard.txt": "test"}),
    ),
    # No image count is published ("700 000 images"); all_species.csv's index runs 0–399 over its own
    # sorted image_location column, so the index is checked against the logged images, not the release.
    "species": PopularSet(
        r"[a-z]+/[^/]+/[^/]+\.(?i:jpe?g|png|gif)",
        {"original": None},
        None,
        SPECIES_ROOT,
        log="all_species",
        log_id=_strip(f"{SPECIES_ROOT}/"),
        index_in_sample=True,
    ),
}
ID_SPLIT_LISTS = {"test_imagenet.txt": "test", "val_imagenet.txt": "val"}
ID_SPLIT_COUNTS = {"test": 45_000, "val": 5_000}
# DTD categories OpenOOD v1.5 removed from Textures ("Textures43"): they overlap ImageNet-1k classes.
TEXTURES43_REMOVED = ("bubbly", "cobwebbed", "honeycombed", "spiralled")
NINCO_COLUMNS = ("ninco_decision", "ninco_file_name", "ninco_sample", "ninco_cleaned")
EMPTY = {"ninco_decision": "", "ninco_file_name": "", "ninco_sample": False, "ninco_cleaned": False}


# -- OpenOOD v1.5 image lists ---------------------------------------------------------------------------


def parse_imglist(text: str, folder: str, where: str) -> list[tuple[str, int]]:
    """An OpenOOD image list: ``[(path below folder/, label)]`` from lines ``<folder>/<path> <int label>``.

    The format of OpenOOD's ``imglist_dataset.py`` (``line.split(' ', 1)``). A malformed line, a path
    outside ``folder/`` or listed twice raises InvalidSourceData naming ``where`` and the line.
    """
    entries, seen = [], set()
    for line_no, line in enumerate(text.splitlines(), start=1):
        path, _, label = line.partition(" ")
        if not re.fullmatch(r"-?\d+", label) or not path.startswith(f"{folder}/") or path in seen:
            problem = "is listed twice" if path in seen else f"expected '{folder}/<path> <int label>'"
            raise InvalidSourceData(f"{where}:{line_no}: {line[:120]!r} {problem}")
        seen.add(path)
        entries.append((path[len(folder) + 1 :], int(label)))
    return entries


def find_openood_lists(resolver: SourceResolver) -> tuple[Path, str, ResolvedSource | None] | None:
    """Where OpenOOD's ``imagenet/*.txt`` lists are: (folder or zip, member prefix, the zip resolved), or None."""
    folder = resolver.find_manual(OPENOOD_LISTS)
    if folder is not None and folder.is_dir():
        return folder, OPENOOD_LIST_FOLDER, None
    if resolver.find_manual(OPENOOD_LISTS_ZIP.filename) is None:
        return None
    resolved = resolver.resolve(OPENOOD_LISTS_ZIP)
    with open_archive(resolved.path) as archive:
        names = archive.names()
    prefix = next((n[: -len("test_imagenet.txt")] for n in names if n.endswith("imagenet/test_imagenet.txt")), None)
    if prefix is None:
        raise InvalidSourceData(f"{resolved.path}: no {OPENOOD_LISTS}/imagenet/test_imagenet.txt inside")
    return resolved.path, prefix, resolved


def read_openood_lists(
    resolver: SourceResolver, files: dict[str, str], folder: str, required: bool
) -> tuple[dict[str, list[tuple[str, int]]], ResolvedSource | None]:
    """The lists ``files`` ({file name: split}) of paths under ``folder/``; ({}, None) when absent and not ``required``."""
    found = find_openood_lists(resolver)
    if found is None:
        if required:
            raise ManualFileMissing(
                f"{', '.join(files)}: OpenOOD v1.5's lists are needed; {OPENOOD_LISTS_ZIP.instructions}"
            )
        return {}, None
    path, prefix, resolved = found
    wanted = [prefix + name for name in files]
    with open_archive(path) as archive:
        texts = dict(archive.iter_members([w for w in wanted if w in set(archive.names())]))
    missing = [w for w in wanted if w not in texts]
    if missing:
        raise ManualFileMissing(f"{path}: {missing[0]!r} is missing (OpenOOD v1.5's {OPENOOD_LISTS}/imagenet/)")
    lists = {}
    for name in files:
        where = f"{path}:{prefix + name}"
        lists[name] = parse_imglist(decode_text(texts[prefix + name], where, IMGLIST_FORMAT), folder, where)
    return lists, resolved or resolver.resolve_folder(OPENOOD_LISTS_ZIP.name, path, wanted)


# -- releases -------------------------------------------------------------------------------------------


def choose_layout(resolver: SourceResolver, config: str, wanted: str) -> str:
    """``"original"`` or ``"openood"``: the ``layout`` option, or (auto) the one found in --manual-dir."""
    spec = SETS[config]
    has_openood = spec.openood is not None and _openood_folder(resolver, spec) is not None
    has_original = spec.original is not None and any(
        resolver.find_manual(name) is not None for name in (spec.original.filename, spec.root)
    )
    if wanted == "auto":
        if has_openood and has_original:
            raise ConfigError(
                f"{config}: {param('manual_dir')} holds both the original release and OpenOOD v1.5's "
                f"{'/'.join(spec.openood[:2])}/; pass {param('builder_options')} layout=original or layout=openood"
            )
        wanted = "openood" if has_openood or "original" not in spec.counts else "original"
    if wanted not in spec.counts:
        raise ConfigError(f"{config}: layout={wanted} is not a release of this set (known: {sorted(spec.counts)})")
    return wanted


def _openood_folder(resolver: SourceResolver, spec: PopularSet) -> Path | None:
    folder = resolver.find_manual(f"{spec.openood[0]}/{spec.openood[1]}")
    return folder if folder is not None and folder.is_dir() else None


def original_images(resolver: SourceResolver, config: str) -> tuple[Images, ResolvedSource]:
    """The images of the original release (MOS tar, DTD tar, ViM list + OpenImages test, ImageNet-O tar),
    every id checked."""
    spec = SETS[config]
    if config == "openimage_o":
        return vim_images(resolver, spec)
    if config == "species":
        return species_images(resolver, spec.pattern)
    located = locate(resolver, spec.original, spec.root)
    names, index = list_members(located)
    where = str(located.source.path)
    if config == "imagenet_o":  # wnid class folders, as the imagenet_o builder reads them (README skipped)
        scanned = scan_class_folders(names, located.member_prefix, where, wnid_class())
        members = {image_id: member for image_id, (member, _) in scanned.items()}
        inside = located.member_prefix
    else:
        inside = located.member_prefix + ("images/" if config == "textures" else "")
        members = {
            name[len(inside) :]: name
            for name in names
            if name.startswith(inside) and not PurePosixPath(name).name.startswith(".")
        }  # not dtd/labels, dtd/imdb, hidden files
    bad = next((i for i in members if not re.fullmatch(spec.pattern, i)), None)
    if bad is not None:
        raise InvalidSourceData(f"{where}: unexpected member {members[bad]!r} (expected {inside}{spec.pattern})")
    images = Images(
        located.source.path, located.file_prefix, members, {}, index.subset(members.values()) if index else None
    )
    return images, located.source


def vim_images(resolver: SourceResolver, spec: PopularSet) -> tuple[Images, ResolvedSource]:
    """OpenImage-O: ViM's list, read from the OpenImages test images (``test/`` folder or ``test.tar.gz``)."""
    listed = resolver.resolve(VIM_LIST)
    ids = []
    text = read_text(listed.path, "ViM's OpenImage-O list (one '<16 hex>.jpg' a line)")
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not re.fullmatch(spec.pattern, line):
            raise InvalidSourceData(f"{listed.path}:{line_no}: {line[:80]!r} is not '<16 hex>.jpg'")
        ids.append(line)
    folder = resolver.find_manual(spec.root)
    if folder is not None and folder.is_dir():
        source, prefix = resolver.resolve_folder(OPENIMAGES_TEST.name, folder, _existing(folder, ids)), ""
    else:
        source, prefix = resolver.resolve(OPENIMAGES_TEST), f"{spec.root}/"
    with open_archive(source.path) as archive:
        present, index = set(archive.names()), archive.index()
    members = {image_id: prefix + image_id for image_id in ids}
    _check_present(members, present, source.path, listed.path)
    tar_index = index.subset(members.values()) if index is not None else None
    return Images(source.path, "" if prefix else f"{spec.root}/", members, {}, tar_index), source


def _existing(folder: Path, names: list[str]) -> list[str]:
    missing = next((n for n in names if not (folder / n).is_file()), None)
    if missing is not None:
        raise InvalidSourceData(f"{folder}: {missing!r} is listed but missing from the release")
    return names


def _check_present(members: dict[str, str], present: set[str], where: Path, listed: Path) -> None:
    missing = next((m for m in members.values() if m not in present), None)
    if missing is not None:
        raise InvalidSourceData(f"{where}: {missing!r} is listed in {listed} but missing from the release")


def openood_images(resolver: SourceResolver, config: str, lists: dict[str, list]) -> tuple[Images, ResolvedSource]:
    """The images OpenOOD v1.5's lists name, read from its ``images_largescale/<set>/`` (or classic) folder."""
    spec = SETS[config]
    folder = _openood_folder(resolver, spec)
    root, set_folder, _ = spec.openood
    if folder is None:
        raise ManualFileMissing(
            f"{root}/{set_folder}/ is not in {param('manual_dir')} (OpenOOD v1.5's images of {config})"
        )
    members = {}
    for file_name, entries in lists.items():
        for line_no, (path, _) in enumerate(entries, start=1):
            image_id = path[len("images/") :] if config == "openimage_o" else path
            if not re.fullmatch(spec.pattern, image_id):
                raise InvalidSourceData(
                    f"{file_name}:{line_no}: {set_folder}/{path} is not {set_folder}/{spec.pattern}"
                )
            members[image_id] = path
    source = resolver.resolve_folder(f"openood_{set_folder}", folder, _existing(folder, sorted(members.values())))
    return Images(folder, f"{root}/{set_folder}/", members, {}, None), source


def openood_splits(config: str, lists: dict[str, list]) -> dict[str, str]:
    """id -> "test"/"val" from OpenOOD's lists of ``config``."""
    files = SETS[config].openood[2]
    out = {}
    for file_name, entries in lists.items():
        for path, _ in entries:
            out[path[len("images/") :] if config == "openimage_o" else path] = files[file_name]
    return out


# -- the NINCO join ---------------------------------------------------------------------------------------


def ninco_columns(repo: RepoData, config: str, listing: list[str], exact: bool, absent_ok: Callable[[str], bool]):
    """id -> NINCO columns for the images of the set's review log, and how many logged images were absent.

    ``listing``: the release's ids sorted as NINCO listed them (the log's ``index`` is a position in
    it; with ``index_in_sample``, Species, in the logged images among them); ``exact``: every index must
    equal its position (the complete release), else only their order must agree. A logged image missing from ``listing`` raises InvalidSourceData unless
    ``absent_ok(id)`` (OpenOOD's Textures43 lacks 4 categories; ``strict_counts=false``: a partial copy).
    """
    spec = SETS[config]
    rows = attach_released_files([dict(r) for r in repo.review_logs if r["log"] == spec.log], released_originals(repo))
    where = f"{repo.source.path}:{ANNOTATIONS}/annotations_subsampled_datasets/{spec.log}.csv"
    if not rows:
        raise InvalidSourceData(f"{where}: the review log is missing or empty")
    if spec.index_in_sample:
        logged = {spec.log_id(row["image_location"]) for row in rows}
        listing = [image_id for image_id in listing if image_id in logged]
    order = sorted(listing, key=_ninco_sort_key(config))
    position = {image_id: k for k, image_id in enumerate(order)}
    columns, absent, last = {}, 0, -1
    for row in sorted((r for r in rows if not r["superseded"]), key=lambda r: r["index"]):
        image_id = spec.log_id(row["image_location"])
        line = f"{where}:{row['row'] + 2}"
        if image_id is None:
            raise InvalidSourceData(f"{line}: {row['image_location']!r} is not an image of {config}")
        if image_id not in position:
            if absent_ok(image_id):
                absent += 1
                continue
            raise InvalidSourceData(
                f"{line}: {row['image_location']!r} is not in this release (not the release NINCO inspected)"
            )
        found = position[image_id]
        if (exact and found != row["index"]) or found <= last:
            listed = "logged images" if spec.index_in_sample else "release"
            raise InvalidSourceData(
                f"{line}: index {row['index']} but {image_id!r} is at position {found} of the sorted {listed} "
                "(not the release NINCO inspected)"
            )
        last = found
        columns[image_id] = {
            "ninco_decision": row["decision"],
            "ninco_file_name": row["file_name"] or "",
            "ninco_sample": True,
            "ninco_cleaned": row["file_name"] is not None,
        }
    return columns, absent


def _ninco_sort_key(config: str) -> Callable[[str], str]:
    """NINCO's listing order: Places re-foldered ``<cat>/<n>.jpg`` (split at the last ``_``), else the id."""
    if config == "places":
        return lambda image_id: "/".join(image_id[len("images/") :].rsplit("_", 1))
    return lambda image_id: image_id


def filtered_against(ids: list[str], where: str) -> dict[str, int]:
    """ImageNet-O: id -> the ImageNet-1k class index of its ``<wnid>/`` folder (what the image was
    adversarially filtered against; metadata, not a label). An unknown wnid raises InvalidSourceData."""
    return {i: classes.index_of(i.split("/")[0], f"{where}:{i}", "class folder") for i in ids}


def ninco_listing(config: str, ids: list[str]) -> list[str]:
    """The ids NINCO listed: Places without its 178 ``Places365_val_*`` files."""
    return [i for i in ids if not i.startswith("images/Places365_val_")] if config == "places" else ids


# -- the builder ---------------------------------------------------------------------------------------------


class PopularOod(Builder):
    NAME = "popular_ood"
    VERSION = "1.1.0"
    RELEASE_NOTES = {
        "1.0.0": "Initial release: iNaturalist, SUN, Places (MOS), Textures (DTD / OpenOOD's Textures43), "
        "OpenImage-O, ImageNet-O, SSB-hard (OpenOOD v1.5) in full, with NINCO's review decisions and OpenOOD v1.5's "
        "test/val membership; OpenOOD v1.5's ImageNet-val split.",
        "1.1.0": "New config species: Species (Hendrycks et al. 2022) from a species/ folder in --manual-dir, joined to "
        "NINCO's review log all_species.csv (the paper's Tables 15–18 'Spc-f' / 'Spc-c').",
    }
    CONFIGS = (
        BuilderConfig("inaturalist", "10,000 iNaturalist plant images (MOS)", shard_size=2000),
        BuilderConfig("sun", "10,000 SUN scene images (MOS)", shard_size=2000),
        BuilderConfig("places", "10,000 Places365 scene images (MOS)", shard_size=2000),
        BuilderConfig("textures", "DTD's 5,640 texture images (OpenOOD: Textures43, 5,160)", shard_size=2000),
        BuilderConfig("openimage_o", "17,632 OpenImages test images (ViM's OpenImage-O)", shard_size=2000),
        BuilderConfig("imagenet_o", "ImageNet-O's 2,000 images (Hendrycks et al. 2021)", shard_size=2000),
        BuilderConfig("ssb_hard", "49,000 ImageNet-21k images of SSB-hard (OpenOOD v1.5)", shard_size=2000),
        BuilderConfig("species", "Species: iNaturalist images of species outside ImageNet-21k", shard_size=2000),
        BuilderConfig(
            "openood_id_split",
            "OpenOOD v1.5's test/val split of ImageNet val, no images",
            shard_size=50_000,
            row_group_rows=50_000,
        ),
    )
    SOURCES = (
        INATURALIST_TAR,
        SUN_TAR,
        PLACES_TAR,
        DTD_TAR,
        VIM_LIST,
        OPENIMAGES_TEST,
        IMAGENET_O_TAR,
        OPENOOD_LISTS_ZIP,
        NINCO_REPO,
    )
    OPTIONS = {"strict_counts": STRICT_COUNTS, "layout": LAYOUT}
    MANUAL_DOWNLOAD_INSTRUCTIONS = (
        "The MOS tars, DTD, ViM's list, imagenet-o.tar and the NINCO repository download by themselves. Put in "
        "--manual-dir: the OpenImages test images (test/ or test.tar.gz) for openimage_o; for OpenOOD v1.5's "
        f"layout its images_largescale/ and images_classic/ folders and {OPENOOD_LISTS}/ (or {OPENOOD_LISTS}.zip), needed by "
        "ssb_hard and openood_id_split. Offline: the tars (or extracted folders) and a NINCO/ clone there too. "
        f"For species: {SPECIES_INSTRUCTIONS}"
    )
    HOMEPAGE = "https://github.com/deeplearning-wisc/large_scale_ood"
    LICENSE = "other"
    CITATION = cite(MOS, DTD, VIM, NATURAL_ADVERSARIAL_EXAMPLES, SSB, SCALING_OOD, OPENOOD_V15, NINCO)

    def features(self):
        from datasets import Features, Value

        if self.config.name == "openood_id_split":
            return Features({"id": Value("string"), "openood_v15": Value("string")})
        extra = {"filtered_against": classes.imagenet_class_label()} if self.config.name == "imagenet_o" else {}
        return image_features(
            {
                "ninco_decision": Value("string"),
                "ninco_file_name": Value("string"),
                "ninco_sample": Value("bool"),
                "ninco_cleaned": Value("bool"),
                "openood_v15": Value("string"),
                "openood_v15_test": Value("bool"),
                **extra,
            }
        )

    def protocol(self) -> dict:
        if self.config.name == "openood_id_split":
            return {}
        subsets = {name: name for name in ("ninco_sample", "ninco_cleaned")}
        return {"ood": {"in_distribution": "imagenet_1k", "subsets": subsets}}

    def prepare(self, resolver: SourceResolver) -> Prepared:
        if self.config.name == "openood_id_split":
            return self._prepare_id_split(resolver)
        config, strict = self.config.name, self.options["strict_counts"]
        spec = SETS[config]
        layout = choose_layout(resolver, config, self.options["layout"])
        lists, lists_source = {}, None
        if spec.openood is not None:
            lists, lists_source = read_openood_lists(resolver, spec.openood[2], spec.openood[1], layout == "openood")
        if layout == "openood":
            images, source = openood_images(resolver, config, lists)
        else:
            images, source = original_images(resolver, config)
        where = str(source.path)
        if spec.counts[layout] is not None:
            check_count(len(images.members), spec.counts[layout], strict, where, f"{config} images")
        else:  # Species: no published image count; its 10 superclass folders are checked instead
            check_superclasses(list(images.members), strict, where)
        ids = sorted(images.members)
        sources = {source.name: source, **({lists_source.name: lists_source} if lists_source else {})}
        splits = openood_splits(config, lists) if lists else {}
        if lists and layout == "original":
            _check_present({k: k for k in splits}, set(ids), source.path, lists_source.path)
        ninco, absent = {}, 0
        if spec.log is not None:
            repo = read_repo(resolver)
            sources[repo.source.name] = repo.source
            textures43 = config == "textures" and layout == "openood"
            ninco, absent = ninco_columns(
                repo,
                config,
                ninco_listing(config, ids),
                exact=strict and not textures43,
                absent_ok=lambda i: not strict or (textures43 and i.split("/")[0] in TEXTURES43_REMOVED),
            )
        data = {"images": images, "ninco": ninco, "openood": splits, "layout": layout, "lists": bool(lists)}
        data["absent_logged"] = absent
        if config == "imagenet_o":
            data["filtered_against"] = filtered_against(ids, where)
        return Prepared(sources, data)

    def _prepare_id_split(self, resolver: SourceResolver) -> Prepared:
        lists, source = read_openood_lists(resolver, ID_SPLIT_LISTS, "imagenet_1k", True)
        splits: dict[str, str] = {}
        for file_name, entries in lists.items():
            split = ID_SPLIT_LISTS[file_name]
            for line_no, (path, _) in enumerate(entries, start=1):
                image_id = val_id_of(path)
                if image_id is None or not path.startswith("val/") or image_id in splits:
                    problem = "is listed twice" if image_id in splits else "is not val/ILSVRC2012_val_<8 digits>.JPEG"
                    raise InvalidSourceData(f"{source.path}:{file_name}:{line_no}: imagenet_1k/{path} {problem}")
                splits[image_id] = split
            found = sum(1 for s in splits.values() if s == split)
            check_count(found, ID_SPLIT_COUNTS[split], self.options["strict_counts"], file_name, "ImageNet-val ids")
        return Prepared({source.name: source}, {"openood": splits, "layout": "openood", "absent_logged": 0})

    def split_keys(self, prepared: Prepared) -> dict[str, list[str]]:
        if self.config.name == "openood_id_split":
            return {SPLIT: sorted(prepared.data["openood"])}
        return {SPLIT: sorted(prepared.data["images"].members)}

    def generate(self, prepared: Prepared, shard: Shard) -> Iterator[dict]:
        splits = prepared.data["openood"]
        if self.config.name == "openood_id_split":
            for image_id in shard.keys:
                yield {"id": image_id, "openood_v15": splits[image_id]}
            return
        images: Images = prepared.data["images"]
        against = prepared.data.get("filtered_against")
        for image_id, data in read_in_order(images, shard.keys):
            split = splits.get(image_id, "")
            yield {
                **images.row(image_id, data),
                **prepared.data["ninco"].get(image_id, EMPTY),
                "openood_v15": split,
                "openood_v15_test": split == "test",
                **({"filtered_against": against[image_id]} if against is not None else {}),
            }

    def card_context(self, prepared: Prepared) -> dict[str, Any]:
        """Per config (recorded in build_info.json): the layout read, whether OpenOOD's lists were given,
        and how many images of NINCO's review log the release lacks (Textures43: the 4 removed categories)."""
        name, data = self.config.name, prepared.data
        return {
            f"{name}_layout": "OpenOOD v1.5 folders" if data["layout"] == "openood" else "original release",
            f"{name}_openood_lists": bool(data.get("lists")) or data["layout"] == "openood",
            f"{name}_ninco_logged_absent": data["absent_logged"],
        }
