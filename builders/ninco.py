"""``ninco``: the NINCO OOD dataset, its 17 OOD unit tests, the cleaned popular OOD sets and the review logs.

NINCO (Bitterwolf, Müller & Hein, ICML 2023). Two sources:

* ``NINCO_all.tar.gz`` (Zenodo record 8013288): the images, in three top-level folders
  ``NINCO_OOD_classes/<class>/``, ``NINCO_OOD_unit_tests/<test>/`` and
  ``NINCO_popular_datasets_subsamples/<dataset>/``. Read in place through its member index
  (:func:`imagenet_suite.core.archives.index_tar`: one header scan, then each shard is one forward
  pass over the decompressed stream), never extracted. No public sha256 exists; the first build
  records it in build_info.json.
* the authors' repository j-cb/NINCO at commit ``8f42ce7``: ``data/*.csv`` (the released file lists
  and readable class names) and ``data/cleaning_annotations/`` (per-image review decisions). Either
  the GitHub archive of that commit or a clone put in ``--manual-dir`` as the folder ``NINCO/``.

Configs: ``ninco`` (64 OOD classes, 5,879 images), ``unit_tests`` (17 tests x 400 released files),
``popular_subsamples`` (2,715 cleaned samples of 11 popular OOD sets) and ``review_logs`` (every
row of the authors' decision logs, codes kept as written, joinable on the released file name).

The review logs are parsed by :mod:`imagenet_suite.core.ninco_review_logs`.
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from imagenet_suite.core.archives import Archive, TarIndex, index_tar, open_archive
from imagenet_suite.core.builder import Builder, BuilderConfig, Prepared, Shard
from imagenet_suite.core.ninco_review_logs import (
    ANNOTATIONS,
    REVIEW_CODES,
    SUBSAMPLED_LOGS,
    attach_released_files,
    is_log_member,
    review_log_summary,
    review_logs_from_archive,
)
from imagenet_suite.core.sources import ResolvedSource, Source, SourceResolver
from imagenet_suite.errors import InvalidSourceData
from imagenet_suite.files import decode_text
from imagenet_suite.images import inspect_image

from ._citations import NINCO, cite

ZENODO_RECORD = 8013288
REPO_COMMIT = "8f42ce7b7cccf4304421e551dcbbfe64ce090a9a"
REPO_FOLDER = "NINCO"  # a clone of j-cb/NINCO in --manual-dir

NINCO_ALL = Source(
    "ninco_all",
    "NINCO_all.tar.gz",
    url=f"https://zenodo.org/record/{ZENODO_RECORD}/files/NINCO_all.tar.gz?download=1",
    instructions=f"NINCO_all.tar.gz from https://zenodo.org/record/{ZENODO_RECORD} (no published sha256: "
    "the first build records it in build_info.json; pin it with --pins checksums.tsv).",
)
NINCO_REPO = Source(
    "ninco_repo",
    f"NINCO-{REPO_COMMIT}.tar.gz",
    url=f"https://github.com/j-cb/NINCO/archive/{REPO_COMMIT}.tar.gz",
    instructions=f"the j-cb/NINCO repository at commit {REPO_COMMIT}: its GitHub archive, or a clone "
    f"(`git clone https://github.com/j-cb/NINCO && git -C NINCO checkout {REPO_COMMIT[:7]}`) "
    f"put in --manual-dir as the folder {REPO_FOLDER}/.",
)

# config -> (top-level folder in NINCO_all.tar.gz, released file list in the repo's data/)
RELEASES = {
    "ninco": ("NINCO_OOD_classes", "NINCO_OOD_classes.csv"),
    "unit_tests": ("NINCO_OOD_unit_tests", "NINCO_OOD_unit_tests.csv"),
    "popular_subsamples": ("NINCO_popular_datasets_subsamples", "NINCO_popular_datasets_subsamples.csv"),
}
EXPECTED_COUNTS = {"ninco": (5_879, 64), "unit_tests": (6_800, 17), "popular_subsamples": (2_715, 11)}
CLASS_NAMES_CSV = "NINCO_class_names.csv"
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".gif", ".bmp", ".webp", ".tif", ".tiff")

# The 11 popular OOD sets: readable name and the paper's Table 1 "% ID" of 400 random samples
# (None: not in Table 1 under this name).
POPULAR_DATASETS = {
    "360OpenSet": ("360OpenSetClasses (Bendale & Boult 2016)", 26.9),
    "COOD": ("COOD (Galil et al. 2023)", 38.2),
    "ImageNet_1k_OOD_400_ood": ("ImageNet-1K-OOD (Wang et al. 2022b)", 32.1),
    "ImageNet_O": ("ImageNet-O (Hendrycks et al. 2021)", 20.2),
    "OpenImage_O": ("OpenImage-O (Wang et al. 2022a)", 4.9),
    "Places": ("Places (MOS subset of Places365)", 59.5),
    "SSB_easy": ("SSB-easy (Vaze et al. 2022)", 53.4),
    "SSB_hard": ("SSB-hard (Vaze et al. 2022)", 41.6),
    "Species": ("Species (Hendrycks et al. 2022)", 57.0),
    "Textures": ("Textures / DTD (Cimpoi et al. 2014)", 25.6),
    "iNaturalist_OOD_Plants": ("iNaturalist OOD plants (MOS)", 2.5),
}
# Released NINCO classes that do not have all their log's "o" rows: bluestriped grunt (99 o, 96 released).
KNOWN_LOG_SURPLUS = {"haemulon_sciurus": 3}


# -- released file lists and class names ---------------------------------------------------------


@dataclass(frozen=True)
class ReleasedFile:
    """One released image: where it is in NINCO_all.tar.gz and what its name says."""

    location: str  # "<top folder>/<class>/<file name>"
    class_name: str  # the class folder (HF label)
    position: int  # k in "<class>_<k:03d>_<original>"
    original: str  # the original file name part
    file_name: str  # "<class>_<k:03d>_<original>"
    id: str  # the file name without its extension


def parse_file_list(text: str, top_folder: str, where: str) -> list[ReleasedFile]:
    """A released file list (``image_location,class``), validated row by row."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header != ["image_location", "class"]:
        raise InvalidSourceData(f"{where}: expected the header image_location,class, got {header}")
    files, seen = [], set()
    names: dict[str, re.Pattern] = {}  # class -> its file-name pattern, compiled once (15,394 rows, ~100 classes)
    for line_no, record in enumerate(reader, start=2):
        if len(record) != 2:
            raise InvalidSourceData(f"{where}: line {line_no}: expected '<image_location>,<class>', got {record}")
        location, class_name = record
        parts = location.split("/")
        name = names.get(class_name)
        if name is None:
            name = names[class_name] = re.compile(re.escape(class_name) + r"_(\d{3})_(.+)")
        match = name.fullmatch(parts[-1]) if len(parts) == 3 else None
        if match is None or parts[:2] != [top_folder, class_name]:
            raise InvalidSourceData(
                f"{where}: line {line_no}: {location!r} is not '{top_folder}/{class_name}/{class_name}_<k:03d>_<name>'"
            )
        if location in seen:
            raise InvalidSourceData(f"{where}: line {line_no}: {location!r} is listed twice")
        seen.add(location)
        files.append(
            ReleasedFile(
                location, class_name, int(match.group(1)), match.group(2), parts[-1], parts[-1].rsplit(".", 1)[0]
            )
        )
    return files


def parse_class_names(text: str, where: str) -> dict[str, dict]:
    """``NINCO_class_names.csv``: folder -> readable name, abbreviation, source, status, IN-21k overlap."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if not header or header[0] != "filename" or len(header) < 9:
        raise InvalidSourceData(
            f"{where}: expected the NINCO class-name table (header 'filename,,printname,...'), got {header}"
        )
    names = {}
    for line_no, record in enumerate(reader, start=2):
        if not record or not record[0]:
            continue  # blank separator rows
        if len(record) < 9:
            raise InvalidSourceData(f"{where}: line {line_no}: expected at least 9 columns, got {record}")
        add_on = record[3].strip()
        names[record[0]] = {
            "print_name": record[2] + (f" ({add_on})" if add_on else ""),
            "short_name": record[4],
            "source_dataset": record[5],
            "benchmark_status": record[6],
            "in21k_overlap": record[8],
        }
    return names


# -- the repository source ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RepoData:
    """What the builder reads from the j-cb/NINCO repository."""

    source: ResolvedSource
    file_lists: dict[str, list[ReleasedFile]]  # config -> released files
    class_names: dict[str, dict]
    review_logs: list[dict]


def read_repo(resolver: SourceResolver) -> RepoData:
    """The repository's data/ files, from the clone ``NINCO/`` in --manual-dir or the commit's archive."""
    clone = resolver.find_manual(REPO_FOLDER)
    resolved = None if clone is not None and clone.is_dir() else resolver.resolve(NINCO_REPO)
    archive_path = clone if resolved is None else resolved.path
    with open_archive(archive_path) as archive:
        prefix = _data_prefix(archive)
        wanted = [prefix + lst for _, lst in RELEASES.values()] + [prefix + CLASS_NAMES_CSV]
        texts = {name[len(prefix) :]: data for name, data in archive.iter_members(wanted)}
        missing = [w for w in wanted if w[len(prefix) :] not in texts]
        if missing:
            raise InvalidSourceData(f"{archive_path}: {missing[0]!r} is missing (not the j-cb/NINCO repository?)")
        logs = review_logs_from_archive(archive, f"{prefix}{ANNOTATIONS}/")
        source = resolved or resolver.resolve_folder("ninco_repo", clone, _data_files(archive, prefix, texts))
    file_lists = {
        config: parse_file_list(
            decode_text(texts[lst], f"{archive_path}:{prefix}{lst}", "a CSV file list (image_location,class)"),
            top,
            f"{archive_path}:{prefix}{lst}",
        )
        for config, (top, lst) in RELEASES.items()
    }
    where = f"{archive_path}:{prefix}{CLASS_NAMES_CSV}"
    class_names = parse_class_names(decode_text(texts[CLASS_NAMES_CSV], where, "NINCO's class-name table (CSV)"), where)
    for config, files in file_lists.items():
        check_counts(config, files, f"{archive_path}:{prefix}{RELEASES[config][1]}")
    return RepoData(source, file_lists, class_names, logs)


def _data_prefix(archive: Archive) -> str:
    """``"<root>/data/"`` where the repository's data folder is inside ``archive``."""
    marker = "data/" + RELEASES["ninco"][1]
    for name in archive.names():
        if name == marker or name.endswith("/" + marker):
            return name[: -len(RELEASES["ninco"][1])]
    raise InvalidSourceData(
        f"{archive.path}: no {marker} inside; expected the j-cb/NINCO repository "
        f"at commit {REPO_COMMIT[:7]} (a clone or its GitHub archive)"
    )


def _data_files(archive: Archive, prefix: str, texts: dict[str, bytes]) -> list[str]:
    """The files of a clone the builder reads (file lists, class names, review logs): its fingerprint."""
    return sorted(
        n
        for n in archive.names()
        if n.startswith(prefix) and (n[len(prefix) :] in texts or is_log_member(n, f"{prefix}{ANNOTATIONS}/"))
    )


def check_counts(config: str, files: list[ReleasedFile], where: str) -> None:
    """The released list has the paper's number of images and classes."""
    rows, classes = EXPECTED_COUNTS[config]
    found = len({f.class_name for f in files})
    if len(files) != rows or found != classes:
        raise InvalidSourceData(
            f"{where}: {len(files)} images in {found} classes; the NINCO release has "
            f"{rows:,} images in {classes} classes"
        )


def released_originals(repo: RepoData) -> dict[str, dict[str, str]]:
    """class -> {original name: released file name}, over the ninco and popular_subsamples lists."""
    out: dict[str, dict[str, str]] = {}
    for config in ("ninco", "popular_subsamples"):
        for f in repo.file_lists[config]:
            out.setdefault(f.class_name, {})[f.original] = f.file_name
    return out


def check_logs_cover_release(rows: list[dict], repo: RepoData, where: str) -> None:
    """Every released image of a logged class has a log row whose last decision is ``o``, and a class
    has as many such images as released (bluestriped grunt: 3 more ``o`` than released)."""
    logged = {row["released_class"] for row in rows}
    kept = Counter()
    matched: dict[str, set] = {}
    for row in rows:
        if not row["superseded"] and row["decision"] == "o":
            kept[row["released_class"]] += 1
        if row["file_name"] is not None and not row["superseded"]:
            matched.setdefault(row["released_class"], set()).add(row["file_name"])
    for config in ("ninco", "popular_subsamples"):
        by_class: dict[str, list[str]] = {}
        for f in repo.file_lists[config]:
            by_class.setdefault(f.class_name, []).append(f.file_name)
        for class_name, names in by_class.items():
            if class_name not in logged:
                continue
            unmatched = sorted(set(names) - matched.get(class_name, set()))
            surplus = kept[class_name] - len(names)
            if unmatched or surplus != KNOWN_LOG_SURPLUS.get(class_name, 0):
                raise InvalidSourceData(
                    f"{where}: the review log of {class_name!r} keeps {kept[class_name]} images but {len(names)} are "
                    f"released ({len(unmatched)} released files without a log row, e.g. {unmatched[:1]})"
                )


# -- the images archive ------------------------------------------------------------------------------


def locate_members(index: TarIndex, files: list[ReleasedFile], top_folder: str) -> dict[str, str]:
    """id -> member name of every released file; InvalidSourceData names missing or extra images."""
    names = index.names()
    prefix = _archive_prefix(names, files[0].location, index.path)
    members = {f.id: prefix + f.location for f in files}
    missing = [m for m in members.values() if m not in index.members]
    if missing:
        raise InvalidSourceData(f"{index.path}: {len(missing)} released file(s) are missing, e.g. {missing[0]!r}")
    expected = set(members.values())
    folder = f"{prefix}{top_folder}/"
    extra = [n for n in names if n.startswith(folder) and n not in expected and _is_image(n)]
    if extra:
        raise InvalidSourceData(
            f"{index.path}: {len(extra)} image(s) in {folder} are not in the released "
            f"file list, e.g. {extra[0]!r} (a different NINCO release?)"
        )
    return members


def _archive_prefix(names: list[str], location: str, where: Path) -> str:
    for name in names:
        if name == location or name.endswith("/" + location):
            return name[: -len(location)]
    raise InvalidSourceData(
        f"{where}: {location!r} not found; expected NINCO_all.tar.gz from Zenodo record "
        f"{ZENODO_RECORD} (folders NINCO_OOD_classes/, NINCO_OOD_unit_tests/, "
        "NINCO_popular_datasets_subsamples/)"
    )


def _is_image(name: str) -> bool:
    base = PurePosixPath(name).name
    return not base.startswith(".") and base.lower().endswith(IMAGE_SUFFIXES)


# -- the builder -------------------------------------------------------------------------------------


class Ninco(Builder):
    NAME = "ninco"
    VERSION = "1.0.0"
    RELEASE_NOTES = {
        "1.0.0": "Initial release: NINCO (64 OOD classes, 5,879 images), the 17 released OOD unit tests "
        "(6,800 files), the 2,715 cleaned popular OOD samples and the authors' review logs, "
        "from Zenodo record 8013288 and j-cb/NINCO@8f42ce7."
    }
    CONFIGS = (
        BuilderConfig(
            "ninco", "64 NINCO OOD classes, 5,879 images checked to contain no ImageNet-1k object", shard_size=2000
        ),
        BuilderConfig("unit_tests", "the 17 released synthetic OOD unit tests x 400 images", shard_size=1000),
        BuilderConfig("popular_subsamples", "2,715 cleaned samples of 11 popular OOD test sets", shard_size=1000),
        BuilderConfig(
            "review_logs",
            "the authors' per-image review decisions (i/o/u/q), no images",
            shard_size=20_000,
            row_group_rows=20_000,
        ),
    )
    SOURCES = (NINCO_ALL, NINCO_REPO)
    MANUAL_DOWNLOAD_INSTRUCTIONS = (
        f"Both sources download by themselves. Offline, put in --manual-dir: NINCO_all.tar.gz (Zenodo record "
        f"{ZENODO_RECORD}) and either {NINCO_REPO.filename} or a clone of https://github.com/j-cb/NINCO at "
        f"{REPO_COMMIT[:7]} as the folder {REPO_FOLDER}/. review_logs needs only the repository."
    )
    HOMEPAGE = "https://github.com/j-cb/NINCO"
    LICENSE = "other"
    CITATION = cite(NINCO)

    # -- features --------------------------------------------------------------------------------
    def features(self):
        from datasets import ClassLabel, Features, Image, Value

        name = self.config.name
        if name == "review_logs":
            return Features(
                {
                    "id": Value("string"),
                    "log": Value("string"),
                    "log_kind": Value("string"),
                    "released_class": Value("string"),
                    "row": Value("int32"),
                    "index": Value("int32"),
                    "image_location": Value("string"),
                    "decision": Value("string"),
                    "superseded": Value("bool"),
                    "file_name": Value("string"),
                    "in_release": Value("bool"),
                }
            )
        common = {"id": Value("string"), "file_name": Value("string"), "image": Image()}
        sizes = {"image_format": Value("string"), "width": Value("int32"), "height": Value("int32")}
        if name == "ninco":
            return Features(
                {
                    **common,
                    "ood_class": ClassLabel(names=self.class_names()),
                    "class_name": Value("string"),
                    "short_name": Value("string"),
                    "source_dataset": Value("string"),
                    "benchmark_status": Value("int8"),
                    "in21k_overlap": Value("string"),
                    "original_file": Value("string"),
                    **sizes,
                }
            )
        if name == "unit_tests":
            return Features(
                {
                    **common,
                    "test": ClassLabel(names=self.class_names()),
                    "test_name": Value("string"),
                    "short_name": Value("string"),
                    "source_index": Value("int32"),
                    "file_format": Value("string"),
                    **sizes,
                }
            )
        return Features(
            {
                **common,
                "source_dataset": ClassLabel(names=self.class_names()),
                "dataset_name": Value("string"),
                "original_file": Value("string"),
                **sizes,
            }
        )

    def class_names(self) -> list[str]:
        """Label names of the config (sorted folder names, the ImageFolder order NINCO evaluates in)."""
        return sorted(CLASS_LISTS[self.config.name])

    def protocol(self) -> dict:
        name = self.config.name
        if name == "review_logs":
            return {"decision_codes": REVIEW_CODES}
        column = {"ninco": "ood_class", "unit_tests": "test", "popular_subsamples": "source_dataset"}[name]
        ood = {
            "group_column": column,
            "groups": self.class_names(),
            "id_dataset": "imagenet_val",
            "aggregation": "mean over groups (each group against all ID images), and pooled",
            "fpr_tpr": 0.95,
        }
        if name == "unit_tests":
            ood["unit_tests"] = True
            ood["fail_threshold"] = 0.10
        protocol = {"ood": ood}
        if name == "popular_subsamples":
            protocol["table1_percent_id"] = {k: v[1] for k, v in POPULAR_DATASETS.items()}
        return protocol

    # -- prepare / plan / generate -------------------------------------------------------------------
    def prepare(self, resolver: SourceResolver) -> Prepared:
        repo = read_repo(resolver)
        name = self.config.name
        if name == "review_logs":
            rows = attach_released_files([dict(r) for r in repo.review_logs], released_originals(repo))
            check_logs_cover_release(rows, repo, f"{repo.source.path}:{ANNOTATIONS}")
            return Prepared(
                {"ninco_repo": repo.source},
                {"logs": {f"{r['log']}/{r['row']:04d}": r for r in rows}, "summary": review_log_summary(rows)},
            )
        files = repo.file_lists[name]
        _check_label_names(name, files, repo.source.path)
        tar = resolver.resolve(NINCO_ALL)
        index = index_tar(tar.path)
        members = locate_members(index, files, RELEASES[name][0])
        index = index.subset(members.values())  # workers get this config's members only
        return Prepared(
            {"ninco_all": tar, "ninco_repo": repo.source},
            {
                "files": {f.id: f for f in files},
                "members": members,
                "index": index,
                "class_names": repo.class_names,
                "summary": review_log_summary(repo.review_logs),
            },
        )

    def split_keys(self, prepared: Prepared) -> dict[str, list[str]]:
        if self.config.name == "review_logs":
            return {"test": list(prepared.data["logs"])}  # read_review_logs order: folder, file, row
        order = {c: i for i, c in enumerate(self.class_names())}
        files = sorted(prepared.data["files"].values(), key=lambda f: (order[f.class_name], f.position, f.id))
        return {"test": [f.id for f in files]}

    def generate(self, prepared: Prepared, shard: Shard) -> Iterator[dict]:
        if self.config.name == "review_logs":
            for key in shard.keys:
                row = prepared.data["logs"][key]
                yield {
                    "id": key,
                    **{
                        k: row[k]
                        for k in (
                            "log",
                            "log_kind",
                            "released_class",
                            "row",
                            "index",
                            "image_location",
                            "decision",
                            "superseded",
                            "file_name",
                            "in_release",
                        )
                    },
                }
            return
        tar = prepared.sources["ninco_all"].path
        members = prepared.data["members"]
        with open_archive(tar, prepared.data["index"]) as archive:
            read = archive.read_members(members[image_id] for image_id in shard.keys)
            for image_id, (member, data) in zip(shard.keys, read, strict=True):
                yield self._row(image_id, data, f"{tar}:{member}", prepared.data)

    def _row(self, image_id: str, data: bytes, where: str, prepared_data: dict) -> dict:
        """One image row: the released file, its header facts and the config's label columns."""
        released: ReleasedFile = prepared_data["files"][image_id]
        header = inspect_image(data, where)
        row = {
            "id": image_id,
            "file_name": released.file_name,
            "image": {"bytes": data, "path": released.file_name},
            "image_format": header.format,
            "width": header.width,
            "height": header.height,
        }
        row.update(self._label_columns(released, prepared_data["class_names"]))
        return row

    def _label_columns(self, released: ReleasedFile, names: dict[str, dict]) -> dict:
        meta = names.get(released.class_name, {})
        if self.config.name == "ninco":
            status = meta.get("benchmark_status", "")
            return {
                "ood_class": released.class_name,
                "class_name": meta.get("print_name", released.class_name),
                "short_name": meta.get("short_name", ""),
                "source_dataset": meta.get("source_dataset", ""),
                "benchmark_status": int(status) if status.isdigit() else None,
                "in21k_overlap": meta.get("in21k_overlap", ""),
                "original_file": released.original,
            }
        if self.config.name == "unit_tests":
            return {
                "test": released.class_name,
                "test_name": meta.get("print_name", released.class_name),
                "short_name": meta.get("short_name", ""),
                "source_index": unit_test_source_index(released),
                "file_format": PurePosixPath(released.file_name).suffix[1:].lower(),
            }
        return {
            "source_dataset": released.class_name,
            "dataset_name": POPULAR_DATASETS[released.class_name][0],
            "original_file": released.original,
        }

    def card_context(self, prepared: Prepared) -> dict:
        summary = prepared.data["summary"]
        lines = [
            f"| {log} | {s['images']} | {s['i']} | {s['o']} | {s['u']} | {s['q']} | {s['other']} | "
            f"{100 * s['p_id']:.1f} |"
            for log, s in summary.items()
            if log in SUBSAMPLED_LOGS
        ]
        return {"contamination_table": "\n".join(lines)}


def unit_test_source_index(released: ReleasedFile) -> int:
    """The ImageNet-val index (ImageFolder order) in ``<test>_<k>_<test>_<index:05d>.<ext>``."""
    match = re.fullmatch(re.escape(released.class_name) + r"_(\d{5})\.(png|jpg)", released.original)
    if match is None:
        raise InvalidSourceData(f"{released.location}: expected '<test>_<k:03d>_<test>_<index:05d>.png|jpg'")
    return int(match.group(1))


def _check_label_names(config: str, files: list[ReleasedFile], where: Path) -> None:
    found = {f.class_name for f in files}
    expected = set(CLASS_LISTS[config])
    if found != expected:
        raise InvalidSourceData(
            f"{where}: {RELEASES[config][1]} has classes {sorted(found ^ expected)[:3]} that differ "
            f"from the NINCO release's {len(expected)} {config} classes"
        )


NINCO_CLASSES = (
    "Caracal caracal caracal",
    "amphiuma_means",
    "aphanizomenon_flosaquae",
    "araneus_gemma",
    "arctocephalus_galapagoensis",
    "bagpipe",
    "batrachoseps_attenuatus",
    "cable",
    "chicken_quesadilla",
    "cirsium_pitcheri",
    "creme_brulee",
    "ctenolepisma_longicaudata",
    "cup_cakes",
    "darlingtonia_californica",
    "dendrolagus_lumholtzi",
    "donuts",
    "door",
    "empty_water_dispencer",
    "epithelantha_micromeris",
    "erysimum_franciscanum",
    "f_field_road",
    "f_forest_path",
    "ferocactus_pilosus",
    "fire_extinguisher",
    "fireworks",
    "french_fries",
    "glass_of_milk",
    "gramophone",
    "haemulon_sciurus",
    "high heels",
    "hindu_temple",
    "hippopus_hippopus",
    "lasionycteris_noctivagans",
    "lathyrus_odoratus",
    "lepomis_auritus",
    "leptoglossus_phyllopus",
    "mbira",
    "microcystis_wesenbergii",
    "octopus_bimaculoides",
    "octopus_rubescens",
    "ozotoceros_bezoarticus",
    "platycephalus_fuscus",
    "polistes_dominula",
    "pseudorca_crassidens",
    "pyramid",
    "s_sky",
    "sarpa_salpa",
    "sarracenia_alata",
    "scissors",
    "sepia_apama",
    "sepia_officinalis",
    "sepioteuthis_australis",
    "shuttlecock",
    "skipper_caterpillar",
    "spaghetti_bolognese",
    "stapler",
    "streptopus_lanceolatus",
    "tapirus_bairdii",
    "triturus_marmoratus",
    "tursiops_aduncus",
    "vaccinium_reticulatum",
    "waffles",
    "walker",
    "windsor_chair",
)
UNIT_TESTS = (
    "Gaussian",
    "Rademacher",
    "black",
    "blobs",
    "grey",
    "horizontal_stripes",
    "low_freq",
    "low_freq_channelfullscale",
    "low_freq_colorrange",
    "low_freq_pixel_perm",
    "monochrome",
    "pixel_perm",
    "tricolour",
    "tricolour_primary",
    "uni",
    "vertical_stripes",
    "white",
)
CLASS_LISTS = {"ninco": NINCO_CLASSES, "unit_tests": UNIT_TESTS, "popular_subsamples": tuple(POPULAR_DATASETS)}
