"""The NINCO authors' per-image review logs (``data/cleaning_annotations`` of j-cb/NINCO), parsed.

NINCO (Bitterwolf, Müller & Hein, ICML 2023): before releasing NINCO, the authors reviewed every
candidate image and logged one code per image. Both the ``ninco`` builder (its ``review_logs``
config) and the contamination review (:mod:`imagenet_suite.review.ninco_logs`, which imports the
logs as decisions) read them through this module.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from ..errors import InvalidSourceData
from ..files import decode_text
from .archives import Archive, open_archive

ANNOTATIONS = "cleaning_annotations"  # the logs' folder in the repository's data/
# Review-log folders and what their logs are about.
LOG_KINDS = {
    "annotations_potential_OOD_classes": "potential_ood_class",
    "annotations_subsampled_datasets": "subsampled_dataset",
}
# Subsampled-dataset log -> the popular_subsamples class holding its kept ("o") images.
SUBSAMPLED_LOGS = {
    "OOD_Places_MOS": "Places",
    "OOD_iNaturalist_MOS": "iNaturalist_OOD_Plants",
    "all_species": "Species",
    "imagenet_o": "ImageNet_O",
    "openimage_o": "OpenImage_O",
    "textures": "Textures",
}
REVIEW_CODES = {
    "i": "contains an ImageNet-1k object (removed)",
    "o": "OOD, no ImageNet-1k object (kept)",
    "u": "unclear (removed)",
    "q": "undocumented by the authors (removed)",
}


def read_review_logs(cleaning_annotations_dir: str | Path) -> list[dict]:
    """Every row of the NINCO authors' per-image review logs, decisions exactly as written.

    ``cleaning_annotations_dir`` is the repository's ``data/cleaning_annotations`` folder, holding
    ``annotations_potential_OOD_classes/<class folder>.csv`` (46 candidate NINCO classes) and
    ``annotations_subsampled_datasets/<dataset>.csv`` (400-image subsamples of 6 popular OOD sets),
    each with the header ``index,image_location,decision``.

    Returns one dict per CSV row, ordered by folder, file name and row, with keys:

    * ``log`` (str): the CSV file name without ``.csv`` (e.g. ``"donuts"``, ``"OOD_Places_MOS"``);
    * ``log_kind`` (str): ``"potential_ood_class"`` or ``"subsampled_dataset"``;
    * ``released_class`` (str): the class of the released data the log's kept images went to — the
      NINCO class folder (same as ``log``) or the ``popular_subsamples`` dataset (``"Places"``);
    * ``row`` (int): 0-based position of the row in its CSV (stable id: ``f"{log}/{row:04d}"``);
    * ``index`` (int): the ``index`` column (the image's position in the authors' source listing);
    * ``image_location`` (str): the path as written, relative to the authors' source data;
    * ``decision`` (str): the code as written. ``i`` = contains an ImageNet-1k object, ``o`` = truly
      OOD (kept), ``u`` = unclear, ``q`` = undocumented (frequent in iNaturalist classes; most likely
      "no OOD object visible"). A few rows hold other codes (``""``, ``"I"``, ``"oo"``, ``"lo"``,
      ``"d"``, ``"b"``); they are kept as written and count as none of the four codes;
    * ``superseded`` (bool): a later row of the same log names the same ``image_location`` (the
      Places log lists 5 images twice, one with ``i`` then ``o``); the last row is the decision.

    Raises ``InvalidSourceData`` naming the file and line of a malformed row, or a folder without logs.
    """
    with open_archive(Path(cleaning_annotations_dir)) as archive:
        rows = review_logs_from_archive(archive, "")
    if not rows:
        raise InvalidSourceData(
            f"{cleaning_annotations_dir}: no review logs found (expected "
            f"{' and '.join(f'{d}/*.csv' for d in LOG_KINDS)})"
        )
    return rows


def review_logs_from_archive(archive: Archive, prefix: str) -> list[dict]:
    """:func:`read_review_logs` on the members under ``prefix`` (``""`` or ``".../cleaning_annotations/"``)."""
    wanted = sorted(name for name in archive.names() if is_log_member(name, prefix))
    texts = dict(archive.iter_members(wanted))
    rows: list[dict] = []
    for name in wanted:
        folder, file_name = name[len(prefix) :].split("/")
        where = f"{archive.path}:{name}"
        text = decode_text(texts[name], where, "a review log (CSV: index,image_location,decision)")
        rows += parse_review_log(text, file_name[:-4], LOG_KINDS[folder], where)
    return rows


def is_log_member(name: str, prefix: str) -> bool:
    if not name.startswith(prefix) or not name.endswith(".csv"):
        return False
    parts = name[len(prefix) :].split("/")
    return len(parts) == 2 and parts[0] in LOG_KINDS


def parse_review_log(text: str, log: str, log_kind: str, where: str) -> list[dict]:
    """Rows of one decision log (``index,image_location,decision``); see :func:`read_review_logs`."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header != ["index", "image_location", "decision"]:
        raise InvalidSourceData(f"{where}: expected the header index,image_location,decision, got {header}")
    released_class = SUBSAMPLED_LOGS.get(log, log) if log_kind == "subsampled_dataset" else log
    rows = []
    for line_no, record in enumerate(reader, start=2):
        if len(record) != 3 or not record[0].isdigit() or not record[1]:
            raise InvalidSourceData(
                f"{where}: line {line_no}: expected '<index>,<image_location>,<decision>', got {record}"
            )
        rows.append(
            {
                "log": log,
                "log_kind": log_kind,
                "released_class": released_class,
                "row": len(rows),
                "index": int(record[0]),
                "image_location": record[1],
                "decision": record[2],
                "superseded": False,
            }
        )
    last = {row["image_location"]: row["row"] for row in rows}
    for row in rows:
        row["superseded"] = last[row["image_location"]] != row["row"]
    return rows


def attach_released_files(rows: list[dict], released: dict[str, dict[str, str]]) -> list[dict]:
    """Add ``file_name`` (the released file of the row's image, or None) and ``in_release`` to each row.

    ``released`` maps a released class to ``{original name: released file name}``, where the
    original name is what follows ``<class>_<k:03d>_`` in the released file name. A log row's image
    is found as its ``image_location`` base name (``donuts/2842.jpg`` -> ``donuts_000_2842.jpg``)
    or as ``<parent>_<base name>`` (``b_badlands/00000792.jpg`` -> ``Places_000_b_badlands_00000792.jpg``).
    """
    for row in rows:
        parts = PurePosixPath(row["image_location"]).parts
        candidates = [parts[-1]] + ([f"{parts[-2]}_{parts[-1]}"] if len(parts) > 1 else [])
        names = released.get(row["released_class"], {})
        row["file_name"] = next((names[c] for c in candidates if c in names), None)
        row["in_release"] = row["file_name"] is not None
    return rows


def review_log_summary(rows: Iterable[dict]) -> dict[str, dict]:
    """Per log: decision counts over distinct images (last decision wins) and the contamination rate.

    Returns ``{log: {"images", "i", "o", "u", "q", "other", "p_id", "unclear"}}`` with
    ``p_id = i / (i + o)`` (the paper's Table 1 "% ID" as a fraction: unclear images are ignored)
    and ``unclear = u / images``.
    """
    final: dict[str, dict[str, str]] = {}
    for row in rows:
        final.setdefault(row["log"], {})[row["image_location"]] = row["decision"]
    summary = {}
    for log, decisions in final.items():
        counts = Counter(code if code in REVIEW_CODES else "other" for code in decisions.values())
        kept, removed_id = counts["o"], counts["i"]
        summary[log] = {
            "images": len(decisions),
            **{c: counts[c] for c in (*REVIEW_CODES, "other")},
            "p_id": removed_id / (removed_id + kept) if removed_id + kept else float("nan"),
            "unclear": counts["u"] / len(decisions),
        }
    return summary


__all__ = [
    "ANNOTATIONS",
    "LOG_KINDS",
    "REVIEW_CODES",
    "SUBSAMPLED_LOGS",
    "attach_released_files",
    "is_log_member",
    "parse_review_log",
    "read_review_logs",
    "review_log_summary",
    "review_logs_from_archive",
]
